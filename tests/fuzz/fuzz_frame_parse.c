/* Fuzz target: the binary frame stream parser. The input is a byte stream fed in two
 * splits (so partial frames are exercised); every parsed frame is walked completely, and
 * every DATA frame is rebuilt with the builder and must parse back to the same records. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

static void walk_and_rebuild(const frame_t *f)
{
    frame_record_iter_t it;
    frame_record_t r;
    buf_t out;
    frame_builder_t b;
    uint32_t n = 0;
    if (buf_init(&out, 0, 1u << 20) != 0)
        abort();
    frame_data_begin(&b, &out, f->hdr.id, f->hdr.flags, 0);
    frame_records(f, &it);
    while (frame_record_next(&it, &r)) {
        frame_header_iter_t hi;
        codec_slice_t name, value;
        uint16_t hn = 0;
        if (frame_data_record_begin(&b) != 0)
            abort();
        frame_headers(&r, &hi);
        while (frame_header_next(&hi, &name, &value)) {
            if (frame_data_record_header(&b, name.ptr, name.len, value.ptr, value.len) != 0)
                abort();
            hn++;
        }
        if (hn != r.header_count)
            abort();
        if (frame_data_record_end(&b, r.key.ptr, r.key.len, r.body.ptr, r.body.len) != 0)
            abort();
        n++;
    }
    if (n != f->record_count)
        abort();
    frame_data_end(&b);
    /* The rebuilt frame is byte-identical to the parsed one. */
    if (out.len != FRAME_HEADER_LEN + f->hdr.payload_len ||
        memcmp(out.data + FRAME_HEADER_LEN, f->payload, f->hdr.payload_len) != 0)
        abort();
    buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    frame_parser_t p;
    frame_parser_init(&p, 1u << 20, true);
    size_t split = size ? data[0] % (size + 1) : 0;
    size_t off = 0;
    /* First pass sees only a prefix: the parser must wait or fail, never read past it. */
    for (int pass = 0; pass < 2; pass++) {
        size_t avail = pass == 0 ? split : size;
        for (;;) {
            frame_t f;
            size_t used = 0;
            frame_status_t st = frame_parse(&p, data + off, avail - off, &f, &used);
            if (st != FRAME_OK) {
                if (st == FRAME_ERROR && p.error[0] == '\0')
                    abort();
                if (st == FRAME_ERROR)
                    return 0;
                break;
            }
            if (used < FRAME_HEADER_LEN || used > avail - off)
                abort();
            if (f.hdr.type == FRAME_TYPE_DATA)
                walk_and_rebuild(&f);
            off += used;
        }
    }
    return 0;
}
