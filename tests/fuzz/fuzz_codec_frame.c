/* Fuzz target: a MAIN record value in the frame form (codec_decode_frame_limited). A value the
 * codec accepts is written again as one frame (frame_build_copy, what ndd-aggregation writes)
 * and must decode to the same copy; a refusal must name its field and say why. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "codec.h"
#include "codec_equal.h"
#include "frame.h"

static codec_msg_t g_a, g_b; /* large: off the stack */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    codec_error_t e;
    codec_reason_t r = codec_decode_frame_limited(&g_a, data, size, NULL, &e);
    if (r != CODEC_OK) {
        if (e.reason != r || e.field[0] == '\0' || e.detail[0] == '\0')
            abort();
        return 0;
    }
    buf_t out;
    if (buf_init(&out, 0, 1u << 26) != 0)
        abort();
    if (frame_build_copy(&out, &g_a) != 0 ||
        codec_decode_frame_limited(&g_b, out.data, out.len, NULL, &e) != CODEC_OK ||
        !codec_equal_msg(&g_a, &g_b))
        abort();
    buf_free(&out);
    return 0;
}
