/* Looking up the encoding table (encoding.h) by name or position, and what every encoding's
 * batch shares. The rows are the encodings' own files
 * (encoding_table.h lists them). */
#include "encoding.h"

#include <stdio.h>
#include <string.h>

/* The rows: the built-in table (encoding_table.c, or a test's), NULL ended. */
static size_t encoding_rows(void)
{
    size_t n = 0;
    while (encoding_builtin[n])
        n++;
    return n;
}

static const encoding_t *encoding_row(size_t i)
{
    return encoding_builtin[i];
}

const encoding_t *encoding_find(const char *name)
{
    for (size_t i = 0; name && i < encoding_rows(); i++)
        if (!strcmp(encoding_row(i)->name, name))
            return encoding_row(i);
    return NULL;
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
