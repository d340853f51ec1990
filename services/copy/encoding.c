/* The encoding table (encoding.h): one row per encoding, looked up by name when a feed is
 * parsed. A new encoding is one file defining its encoding_t and one line below. */
#include "encoding.h"

#include <stdio.h>
#include <string.h>

static const encoding_t *encoding_table[ENCODING_MAX] = {
    &encoding_json,      &encoding_frame,     &encoding_passthrough,
    &encoding_synthetic, &encoding_xdr_jsonl,
};
/* Rows in use: the built-in ones above, then those registered, up to the first empty slot
 * (no count to keep in step with the list). */
static size_t encoding_rows(void)
{
    size_t n = 0;
    while (n < ENCODING_MAX && encoding_table[n])
        n++;
    return n;
}

const encoding_t *encoding_find(const char *name)
{
    for (size_t i = 0; name && i < encoding_rows(); i++)
        if (!strcmp(encoding_table[i]->name, name))
            return encoding_table[i];
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
    encoding_table[encoding_rows()] = e;
    return 0;
}

size_t encoding_count(void)
{
    return encoding_rows();
}

const encoding_t *encoding_at(size_t i)
{
    return i < encoding_rows() ? encoding_table[i] : NULL;
}

void encoding_names(char *out, size_t outlen)
{
    size_t n = 0;
    out[0] = 0;
    for (size_t i = 0; i < encoding_rows() && n + 1 < outlen; i++)
        n += (size_t)snprintf(out + n, outlen - n, "%s\"%s\"", i ? ", " : "",
                              encoding_table[i]->name);
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
