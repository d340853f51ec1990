/* The export's file formats (pcap.h). pcapng (draft-ietf-opsawg-pcapng): little-endian
 * blocks; one section, one Ethernet interface with the default microsecond resolution, so a
 * classic pcap record converts to an Enhanced Packet Block by its 64-bit timestamp and its
 * data padded to 32 bits. JSON lines: the JSON encoding's array is split at its top-level
 * commas by a scan that follows strings and nesting (the encoder wrote it: no reparse). */
#include "pcap.h"
#include "encoding.h"
#include "frame.h"

#include <stdbool.h>
#include <string.h>

static void le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t rd_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void pcapng_file_header(uint8_t out[PCAPNG_HEADER_LEN])
{
    uint8_t *s = out;
    le32(s, 0x0A0D0D0A);
    le32(s + 4, 28);
    le32(s + 8, 0x1A2B3C4D);
    s[12] = 1, s[13] = 0, s[14] = 0, s[15] = 0; /* version 1.0 */
    memset(s + 16, 0xff, 8);                    /* section length unknown */
    le32(s + 24, 28);
    uint8_t *i = out + 28;
    le32(i, 1);
    le32(i + 4, 20);
    i[8] = 1, i[9] = 0, i[10] = 0, i[11] = 0; /* LINKTYPE_ETHERNET, reserved */
    le32(i + 12, 0);                          /* no snap length limit */
    le32(i + 16, 20);
}

long pcapng_from_frame(buf_t *out, const uint8_t *frame, size_t len)
{
    frame_parser_t p;
    frame_t fr;
    size_t used;
    frame_parser_init(&p, 0, false);
    if (frame_parse(&p, frame, len, &fr, &used) != FRAME_OK || used != len ||
        fr.hdr.type != FRAME_TYPE_DATA)
        return -1;
    size_t start = out->len;
    frame_record_iter_t it;
    frame_record_t rec;
    long n = 0;
    frame_records(&fr, &it);
    while (frame_record_next(&it, &rec)) {
        const uint8_t *r = (const uint8_t *)rec.body.ptr, *end = r + rec.body.len;
        while (r + 16 <= end) {
            uint32_t sec = rd_le32(r), usec = rd_le32(r + 4), incl = rd_le32(r + 8);
            uint32_t orig = rd_le32(r + 12);
            if (incl > (size_t)(end - r - 16)) {
                out->len = start;
                return -1;
            }
            uint32_t pad = (4 - incl % 4) % 4, total = 32 + incl + pad;
            if (buf_reserve(out, total) != 0) {
                out->len = start;
                return -1;
            }
            uint8_t *b = out->data + out->len;
            uint64_t ts = (uint64_t)sec * 1000000 + usec;
            le32(b, 6);
            le32(b + 4, total);
            le32(b + 8, 0);
            le32(b + 12, (uint32_t)(ts >> 32));
            le32(b + 16, (uint32_t)ts);
            le32(b + 20, incl);
            le32(b + 24, orig);
            memcpy(b + 28, r + 16, incl);
            memset(b + 28 + incl, 0, pad);
            le32(b + 28 + incl + pad, total);
            out->len += total;
            r += 16 + incl;
        }
        n++;
    }
    return n;
}

long jsonl_from_json(buf_t *out, const uint8_t *p, size_t len)
{
    size_t start = out->len, i = 0;
    while (i < len && (p[i] == ' ' || p[i] == '\n' || p[i] == '\r' || p[i] == '\t'))
        i++;
    if (i == len)
        return -1;
    if (p[i] == '{') {
        while (len > i && (p[len - 1] == ' ' || p[len - 1] == '\n'))
            len--;
        if (buf_append(out, p + i, len - i) != 0 || buf_append_u8(out, '\n') != 0) {
            out->len = start;
            return -1;
        }
        return 1;
    }
    if (p[i] != '[')
        return -1;
    long n = 0;
    int depth = 0;
    size_t elem = 0;
    for (i++; i < len; i++) {
        uint8_t c = p[i];
        if (c == '"') {
            i = encoding_json_string_end(p, len, i) - 1; /* the loop steps past the quote */
        } else if (c == '{' || c == '[') {
            if (depth++ == 0)
                elem = i;
        } else if (c == '}' || c == ']') {
            if (depth == 0) /* the array's end */
                return n;
            if (--depth == 0) {
                if (buf_append(out, p + elem, i + 1 - elem) != 0 || buf_append_u8(out, '\n') != 0) {
                    out->len = start;
                    return -1;
                }
                n++;
            }
        }
    }
    out->len = start;
    return -1;
}
