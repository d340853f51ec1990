/* The binary frame encoding: a batch is one DATA frame (services/copy/frame.h). The frame id is
 * left 0 and the ack-requested flag set: the transport stamps the per-connection id with
 * frame_set_id when it writes the frame, and may clear the flag (fire-and-forget). */
#include "encoding.h"

#include <string.h>

static encoding_result_t frame_begin(encoding_batch_t *b, buf_t *out, size_t max_count)
{
    memset(b, 0, sizeof *b);
    b->out = out;
    b->start = out->len;
    b->max_count = (max_count == 0 || max_count > encoding_frame.max_batch)
                       ? encoding_frame.max_batch
                       : max_count;
    if (frame_data_begin(&b->fb, out, 0, FRAME_FLAG_ACK_REQUESTED, 0) != 0) {
        b->out = NULL;
        return ENCODING_TOO_BIG;
    }
    return ENCODING_OK;
}

static encoding_result_t frame_add(encoding_batch_t *b, const codec_msg_t *m)
{
    if (!b->out)
        return ENCODING_ERROR;
    if (b->count >= b->max_count)
        return ENCODING_FULL;
    if (frame_data_add_msg(&b->fb, m) != 0)
        return b->count > 0 ? ENCODING_FULL : ENCODING_TOO_BIG;
    b->count++;
    return ENCODING_OK;
}

static encoding_result_t frame_end(encoding_batch_t *b)
{
    if (!b->out)
        return ENCODING_ERROR;
    if (b->count == 0) {
        frame_data_abort(&b->fb);
        return ENCODING_ERROR;
    }
    frame_data_end(&b->fb);
    return ENCODING_OK;
}

const encoding_t encoding_frame = {
    .name = "frame",
    .content_type = "application/vnd.ndd.frame",
    .max_batch = 10000,
    .begin_batch = frame_begin,
    .add = frame_add,
    .end_batch = frame_end,
};
