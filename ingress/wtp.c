/* The WTP frame parser (wtp.h). */
#include "wtp.h"

wtp_result_t wtp_parse(const uint8_t *buf, size_t len, uint32_t max_payload, wtp_frame_t *f)
{
    if (len < 1)
        return WTP_NEED_MORE;
    if (buf[0] != WTP_MAGIC)
        return WTP_BAD_MAGIC;
    if (len < WTP_HEADER_SIZE)
        return WTP_NEED_MORE;
    f->major = buf[1];
    f->minor = buf[2];
    f->payload_type = (uint16_t)(buf[6] << 8 | buf[7]);
    f->payload_len =
        (uint32_t)buf[8] << 24 | (uint32_t)buf[9] << 16 | (uint32_t)buf[10] << 8 | buf[11];
    if (f->payload_len > max_payload)
        return WTP_TOO_BIG;
    f->size = WTP_HEADER_SIZE + (size_t)f->payload_len;
    if (len < f->size)
        return WTP_NEED_MORE;
    f->payload = buf + WTP_HEADER_SIZE;
    /* As HV-VES: only the major version is checked; minor versions are forward compatible. */
    if (f->major != 1)
        return WTP_SKIP_VERSION;
    if (f->payload_type != WTP_PAYLOAD_VES_EVENT)
        return WTP_SKIP_TYPE;
    return WTP_FRAME;
}

const char *wtp_result_name(wtp_result_t r)
{
    switch (r) {
    case WTP_FRAME:
        return "frame";
    case WTP_NEED_MORE:
        return "need-more";
    case WTP_SKIP_VERSION:
        return "unsupported-version";
    case WTP_SKIP_TYPE:
        return "unsupported-payload-type";
    case WTP_BAD_MAGIC:
        return "bad-magic";
    case WTP_TOO_BIG:
        return "oversized";
    }
    return "unknown";
}
