/* The pass-through encoding (docs/encodings.md): a batch is one record's value exactly as it
 * is in Kafka, for feeds whose source topic holds VES or HV-VES events written by ndd-ingress
 * (JSON or a protobuf VesEvent) rather than message copies. It is `raw`: the adapter does not
 * decode such records as copies, it hands on their key and value only. The key is not
 * re-emitted: ndd-ingress's keys are derived from the value (HV-VES: the serialised
 * CommonEventHeader inside the VesEvent; VES: the header's sourceName), so a receiver has it. */
#include "encoding.h"

static encoding_result_t pass_begin(encoding_batch_t *b, buf_t *out, size_t max_count)
{
    encoding_batch_open(b, &encoding_passthrough, out, max_count);
    return ENCODING_OK;
}

static encoding_result_t pass_add(encoding_batch_t *b, const codec_msg_t *m)
{
    if (!b->out)
        return ENCODING_ERROR;
    if (b->count >= b->max_count)
        return ENCODING_FULL;
    if (m->body.len && buf_append(b->out, m->body.ptr, m->body.len) != 0) {
        b->out->len = b->start;
        return ENCODING_TOO_BIG;
    }
    b->count++;
    return ENCODING_OK;
}

const encoding_t encoding_passthrough = {
    .name = "passthrough",
    .content_type = "application/octet-stream",
    .max_batch = 1, /* one value per request: values are not self-delimiting */
    .default_batch = 1,
    .raw = true,
    .begin_batch = pass_begin,
    .add = pass_add,
    .end_batch = encoding_batch_close,
};
