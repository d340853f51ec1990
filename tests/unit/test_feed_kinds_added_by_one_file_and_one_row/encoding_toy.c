/* A test-only encoding, "toy-lines", added the way docs/contributing.md says: this one file
 * plus one row in the table (tables.c, the tests' copy of services/copy/encoding_table.c).
 * A batch is the messages' bodies, one a line. */
#include "encoding.h"

extern const encoding_t encoding_toy_lines; /* defined at the end */

static encoding_result_t toy_lines_begin(encoding_batch_t *b, buf_t *out, size_t max_count)
{
    encoding_batch_open(b, &encoding_toy_lines, out, max_count);
    return ENCODING_OK;
}

static encoding_result_t toy_lines_add(encoding_batch_t *b, const codec_msg_t *m)
{
    if (b->count >= b->max_count)
        return ENCODING_FULL;
    size_t at = b->out->len;
    if (buf_append(b->out, m->body.ptr, m->body.len) || buf_append_u8(b->out, '\n')) {
        b->out->len = at;
        return b->count ? ENCODING_FULL : ENCODING_TOO_BIG;
    }
    b->count++;
    return ENCODING_OK;
}

const encoding_t encoding_toy_lines = {
    .name = "toy-lines",
    .content_type = "text/plain",
    .max_batch = 100,
    .default_batch = 4,
    .form = ENCODING_FORM_JSON_LINES, /* not JSON, but lines: what a file would write as is */
    .begin_batch = toy_lines_begin,
    .add = toy_lines_add,
    .end_batch = encoding_batch_close,
};
