/* The binary frame encoding: a batch is one DATA frame (services/copy/frame.h). The frame id is
 * left 0 and the ack-requested flag set: the transport stamps the per-connection id with
 * frame_set_id when it writes the frame, and may clear the flag (fire-and-forget). Its batch
 * state is the frame builder. */
#include "encoding.h"
#include "frame.h"

#include <string.h>

_Static_assert(sizeof(frame_builder_t) <= ENCODING_STATE_MAX, "frame builder fits a batch");

static frame_builder_t *frame_state(encoding_batch_t *b)
{
    return (frame_builder_t *)(void *)b->state.bytes;
}

static encoding_result_t frame_begin(encoding_batch_t *b, buf_t *out, size_t max_count)
{
    encoding_batch_open(b, &encoding_frame, out, max_count);
    if (frame_data_begin(frame_state(b), out, 0, FRAME_FLAG_ACK_REQUESTED, 0) != 0) {
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
    if (frame_data_add_msg(frame_state(b), m) != 0)
        return b->count > 0 ? ENCODING_FULL : ENCODING_TOO_BIG;
    b->count++;
    return ENCODING_OK;
}

static encoding_result_t frame_end(encoding_batch_t *b)
{
    if (!b->out)
        return ENCODING_ERROR;
    if (b->count == 0) {
        frame_data_abort(frame_state(b));
        return ENCODING_ERROR;
    }
    frame_data_end(frame_state(b));
    return ENCODING_OK;
}

const encoding_t encoding_frame = {
    .name = "frame",
    .content_type = "application/vnd.ndd.frame",
    .form = ENCODING_FORM_FRAME,
    .max_batch = 10000,
    /* A frame carries any number of records by design (docs/encodings.md), so frames batch by
     * default: what one poll gave, up to 16 per frame, without waiting (batch_ms 0). */
    .default_batch = 16,
    .state_size = sizeof(frame_builder_t),
    .begin_batch = frame_begin,
    .add = frame_add,
    .end_batch = frame_end,
};
