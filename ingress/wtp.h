/* The HV-VES Wire Transfer Protocol frame (docs/ingress.md, "HV-VES"): a pure parser over a
 * buffer, so that it can be fuzzed and reused. A frame is a 12-byte header
 *   magic 0xAA | version major 1 | minor 0 | 3 reserved bytes | payload type u16 | length u32
 * (big endian) followed by length bytes of payload; payload type 0x0001 is a protobuf VesEvent. */
#ifndef NDD_WTP_H
#define NDD_WTP_H

#include <stddef.h>
#include <stdint.h>

#define WTP_HEADER_SIZE 12
#define WTP_MAGIC 0xAA
#define WTP_PAYLOAD_VES_EVENT 0x0001
#define WTP_DEFAULT_MAX_PAYLOAD (1u << 20)

typedef enum wtp_result {
    WTP_FRAME = 0,    /* a complete, well-formed frame of payload type VesEvent */
    WTP_NEED_MORE,    /* the buffer ends inside the frame: read more */
    WTP_SKIP_VERSION, /* complete frame of an unknown version: skip `size` bytes */
    WTP_SKIP_TYPE,    /* complete frame of an unknown payload type: skip `size` bytes */
    WTP_BAD_MAGIC,    /* not a WTP stream: close the connection */
    WTP_TOO_BIG,      /* payload length above the limit: close the connection */
} wtp_result_t;

typedef struct wtp_frame {
    uint8_t major, minor;
    uint16_t payload_type;
    uint32_t payload_len;
    const uint8_t *payload; /* into the buffer */
    size_t size;            /* header + payload: what to consume */
} wtp_frame_t;

/* Looks at buf[0..len) for one frame. The length check comes before waiting for the payload,
 * so an oversized frame is refused as soon as its header is in. */
wtp_result_t wtp_parse(const uint8_t *buf, size_t len, uint32_t max_payload, wtp_frame_t *f);
const char *wtp_result_name(wtp_result_t r);

#endif
