/* Looking up the encoding table (encoding.h) by name or position, registering a row at run
 * time, and what every encoding's batch shares. The rows are the encodings' own files
 * (encoding_table.h lists them). */
#include "encoding.h"

#include <stdio.h>
#include <string.h>

/* The rows: the built-in table (encoding_table.c, or a test's), then those registered at run
 * time (up to the first empty slot: no count to keep in step with the lists). */
static const encoding_t *encoding_added[ENCODING_MAX];

static size_t encoding_builtin_rows(void)
{
    size_t n = 0;
    while (encoding_builtin[n])
        n++;
    return n;
}

static size_t encoding_rows(void)
{
    size_t n = encoding_builtin_rows(), k = 0;
    while (n + k < ENCODING_MAX && encoding_added[k])
        k++;
    return n + k;
}

static const encoding_t *encoding_row(size_t i)
{
    size_t n = encoding_builtin_rows();
    return i < n ? encoding_builtin[i] : encoding_added[i - n];
}

const encoding_t *encoding_find(const char *name)
{
    for (size_t i = 0; name && i < encoding_rows(); i++)
        if (!strcmp(encoding_row(i)->name, name))
            return encoding_row(i);
    return NULL;
}

int encoding_register(const encoding_t *e, char *err, size_t errlen)
{
    if (!e || !e->name || !e->content_type || !e->begin_batch || !e->add || !e->end_batch ||
        e->max_batch == 0) {
        snprintf(err, errlen,
                 "an encoding needs a name, a content type, max_batch and the "
                 "begin_batch, add and end_batch callbacks");
        return -1;
    }
    if (e->state_size > ENCODING_STATE_MAX) {
        snprintf(err, errlen, "encoding \"%s\": batch state of %zu bytes exceeds %d", e->name,
                 e->state_size, ENCODING_STATE_MAX);
        return -1;
    }
    if (encoding_find(e->name)) {
        snprintf(err, errlen, "encoding \"%s\" is already registered", e->name);
        return -1;
    }
    if (encoding_rows() == ENCODING_MAX) {
        snprintf(err, errlen, "encoding table full (%d rows)", ENCODING_MAX);
        return -1;
    }
    encoding_added[encoding_rows() - encoding_builtin_rows()] = e;
    return 0;
}

size_t encoding_count(void)
{
    return encoding_rows();
}

const encoding_t *encoding_at(size_t i)
{
    return i < encoding_rows() ? encoding_row(i) : NULL;
}

void encoding_names(char *out, size_t outlen)
{
    size_t n = 0;
    out[0] = 0;
    for (size_t i = 0; i < encoding_rows() && n + 1 < outlen; i++)
        n +=
            (size_t)snprintf(out + n, outlen - n, "%s\"%s\"", i ? ", " : "", encoding_row(i)->name);
}

void encoding_batch_open(encoding_batch_t *b, const encoding_t *e, buf_t *out, size_t max_count)
{
    memset(b, 0, sizeof *b);
    b->out = out;
    b->start = out->len;
    b->max_count = (max_count == 0 || max_count > e->max_batch) ? e->max_batch : max_count;
}

encoding_result_t encoding_batch_close(encoding_batch_t *b)
{
    if (!b->out)
        return ENCODING_ERROR;
    if (b->count == 0) {
        b->out->len = b->start;
        return ENCODING_ERROR;
    }
    return ENCODING_OK;
}
