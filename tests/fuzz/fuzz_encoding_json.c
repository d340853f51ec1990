/* Fuzz target: the egress encoders (services/copy/encoding_json.c, services/copy/frame.c and the
 * JSON escaper in services/base/buf.c). The input is split into a header value, a key and a body
 * (the first three bytes choose the split, the content type and an output limit), then:
 *  - the escaped header value, quoted, is one valid JSON string that jansson decodes back to
 *    the value whenever the value is valid UTF-8 (invalid bytes become U+FFFD);
 *  - encoding_json_valid agrees with jansson on the body, except where RFC 8259 and jansson
 *    legitimately differ (numbers jansson cannot hold, \u escapes of lone surrogates,
 *    nesting beyond our 64 levels, jansson taking a NUL byte for the end of input);
 *  - the envelope is valid JSON, or on a bounded output fails leaving the buffer unchanged;
 *  - the frame of the same copy parses back to the same headers, key and body. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "buf.h"
#include "codec.h"
#include "encoding.h"
#include "frame.h"

static void check_escape(const uint8_t *v, size_t n)
{
    buf_t o;
    if (buf_init(&o, 0, 16 * n + 16) != 0)
        abort();
    if (buf_append_u8(&o, '"') != 0 || buf_append_json_escaped(&o, v, n) != 0 ||
        buf_append_u8(&o, '"') != 0)
        abort();
    if (!encoding_json_valid(o.data, o.len))
        abort();
    json_error_t je;
    json_t *s = json_loadb((const char *)o.data, o.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!s || !json_is_string(s))
        abort();
    /* jansson's own UTF-8 check says whether the value must come back exactly; an invalid
     * one must come back with U+FFFD in place of the bad bytes. */
    json_t *as_is = json_stringn((const char *)v, n);
    if (as_is && (json_string_length(s) != n || memcmp(json_string_value(s), v, n) != 0))
        abort();
    if (!as_is && !memmem(json_string_value(s), json_string_length(s), "\xEF\xBF\xBD", 3))
        abort();
    json_decref(as_is);
    json_decref(s);
    buf_free(&o);
}

static size_t open_brackets(const uint8_t *p, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += p[i] == '[' || p[i] == '{';
    return c;
}

static void check_validator(const uint8_t *p, size_t n)
{
    int ours = encoding_json_valid(p, n);
    json_error_t je;
    json_t *j = n ? json_loadb((const char *)p, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je) : NULL;
    /* jansson reads a NUL byte outside a string as the end of input; RFC 8259 does not. */
    if (j && !ours && open_brackets(p, n) <= 64 && !memchr(p, 0, n))
        abort();
    if (ours && !j && !strstr(je.text, "too big") && !strstr(je.text, "overflow") &&
        !strstr(je.text, "Unicode") && !strstr(je.text, "surrogate"))
        abort();
    json_decref(j);
}

static void make_copy(codec_msg_t *m, const uint8_t *val, size_t vn, const uint8_t *key, size_t kn,
                      const uint8_t *body, size_t bn, uint8_t sel)
{
    static const char *ctypes[] = {"application/json", "application/problem+json; q=1",
                                   "text/plain", "application/octet-stream"};
    memset(m, 0, sizeof *m);
    if (kn) {
        m->key = (codec_slice_t){(const char *)key, kn};
        m->meta[CODEC_META_CORRELATION_ID] = m->key;
    }
    m->meta[CODEC_META_SEQ] = (codec_slice_t){(const char *)val, vn < 20 ? vn : 20};
    m->n_http = 2;
    m->http[0].name = (codec_slice_t){"content-type", 12};
    m->http[0].value = (codec_slice_t){ctypes[sel & 3], strlen(ctypes[sel & 3])};
    m->http[1].name = (codec_slice_t){"x-fuzz", 6};
    m->http[1].value = (codec_slice_t){(const char *)val, vn};
    if (sel & 4) {
        m->n_ext = 1;
        m->ext[0].name = (codec_slice_t){"@x-ext", 6};
        m->ext[0].value = (codec_slice_t){(const char *)val, vn};
    }
    m->body = (codec_slice_t){(const char *)body, bn};
}

static void check_envelope(const codec_msg_t *m, uint8_t limit_sel)
{
    buf_t full;
    if (buf_init(&full, 0, 1u << 24) != 0 || encoding_json_envelope(&full, m) != 0)
        abort();
    if (!encoding_json_valid(full.data, full.len))
        abort();
    /* The same message into a bounded buffer already holding a prefix. */
    size_t max = 3 + (size_t)limit_sel * (full.len + 3) / 255;
    buf_t b;
    if (buf_init(&b, 0, max) != 0 || buf_append(&b, "[1,", 3) != 0)
        abort();
    int r = encoding_json_envelope(&b, m);
    if (r == 0 && (b.len != 3 + full.len || memcmp(b.data + 3, full.data, full.len) != 0))
        abort();
    if (r != 0 && (b.len != 3 || max >= 3 + full.len))
        abort();
    buf_free(&b);
    buf_free(&full);
}

static void check_frame(const codec_msg_t *m)
{
    buf_t out;
    frame_builder_t fb;
    if (buf_init(&out, 0, 1u << 24) != 0 ||
        frame_data_begin(&fb, &out, 1, FRAME_FLAG_ACK_REQUESTED, 0) != 0 ||
        frame_data_add_msg(&fb, m) != 0 || frame_data_end(&fb) != 0)
        abort();
    frame_parser_t p;
    frame_t f;
    size_t used;
    frame_parser_init(&p, 0, true);
    if (frame_parse(&p, out.data, out.len, &f, &used) != FRAME_OK || used != out.len ||
        f.record_count != 1)
        abort();
    frame_record_iter_t it;
    frame_record_t r;
    frame_records(&f, &it);
    if (!frame_record_next(&it, &r))
        abort();
    size_t want = m->n_http + m->n_ext;
    for (int i = 0; i < CODEC_META__COUNT; i++)
        want += m->meta[i].ptr != NULL;
    codec_slice_t v;
    if (r.header_count != want || !frame_record_header(&r, "x-fuzz", &v) ||
        v.len != m->http[1].value.len || memcmp(v.ptr, m->http[1].value.ptr, v.len) != 0 ||
        r.key.len != m->key.len || (r.key.len && memcmp(r.key.ptr, m->key.ptr, r.key.len)) ||
        r.body.len != m->body.len || (r.body.len && memcmp(r.body.ptr, m->body.ptr, r.body.len)))
        abort();
    buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    uint8_t sel = data[0], split = data[1], limit = data[2];
    data += 3;
    size -= 3;
    size_t vn = size * (split & 15) / 32, kn = (size - vn) * (split >> 4) / 32;
    const uint8_t *val = data, *key = data + vn, *body = data + vn + kn;
    size_t bn = size - vn - kn;

    check_escape(val, vn);
    check_validator(body, bn);
    codec_msg_t m;
    make_copy(&m, val, vn, key, kn, body, bn, sel);
    check_envelope(&m, limit);
    check_frame(&m);
    return 0;
}
