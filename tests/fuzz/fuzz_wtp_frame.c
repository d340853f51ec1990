/* Fuzz target: the HV-VES WTP frame parser over a byte stream, as ingress_hvves.c drives it:
 * parse, consume what a frame says, stop on need-more or a closing error. Every result must
 * stay inside the buffer and a complete frame must cover exactly header + payload. */
#include <stdint.h>
#include <stdlib.h>

#include "wtp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t off = 0;
    uint32_t max = size & 1 ? 64 : WTP_DEFAULT_MAX_PAYLOAD;
    while (off < size) {
        wtp_frame_t f;
        wtp_result_t r = wtp_parse(data + off, size - off, max, &f);
        if (r == WTP_NEED_MORE || r == WTP_BAD_MAGIC || r == WTP_TOO_BIG)
            break;
        if (f.size != WTP_HEADER_SIZE + (size_t)f.payload_len || f.size > size - off ||
            f.payload != data + off + WTP_HEADER_SIZE || f.payload_len > max)
            abort();
        off += f.size;
    }
    return 0;
}
