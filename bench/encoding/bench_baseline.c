/* The encoders as they were before the fast-path work (copied verbatim from
 * services/encoding_json.c, services/buf.c and services/frame.c, symbols renamed base_*):
 * the "before" column of ndd-bench-encoding, and the reference it checks the current
 * encoders' output against byte for byte. Not used outside the bench. */
#include "bench_baseline.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "codec.h"

static void wr_be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void wr_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void wr_be64(uint8_t *p, uint64_t v)
{
    wr_be32(p, (uint32_t)(v >> 32));
    wr_be32(p + 4, (uint32_t)v);
}

/* Length of a valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
static size_t utf8_seq(const uint8_t *s, size_t n)
{
    uint8_t c = s[0];
    size_t len;
    uint32_t min;
    if (c < 0x80)
        return 1;
    if ((c & 0xE0) == 0xC0) {
        len = 2;
        min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3;
        min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    uint32_t cp = c & (0x7F >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

static int base_json_escaped(buf_t *b, const void *p, size_t n)
{
    const uint8_t *s = p;
    size_t i = 0;
    while (i < n) {
        /* Copy the longest run that needs no escaping in one go. */
        size_t run = i;
        while (run < n && s[run] >= 0x20 && s[run] < 0x80 && s[run] != '"' && s[run] != '\\')
            run++;
        if (run > i && buf_append(b, s + i, run - i) != 0)
            return -1;
        i = run;
        if (i >= n)
            break;
        uint8_t c = s[i];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            if (buf_append(b, e, 2) != 0)
                return -1;
            i++;
        } else if (c < 0x20) {
            char e[8];
            const char *named = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
            if (named) {
                if (buf_append_str(b, named) != 0)
                    return -1;
            } else {
                snprintf(e, sizeof e, "\\u%04x", c);
                if (buf_append(b, e, 6) != 0)
                    return -1;
            }
            i++;
        } else {
            size_t l = utf8_seq(s + i, n - i);
            if (l == 0) {
                if (buf_append(b, "\xEF\xBF\xBD", 3) != 0)
                    return -1;
                i++;
            } else {
                if (buf_append(b, s + i, l) != 0)
                    return -1;
                i += l;
            }
        }
    }
    return 0;
}

/* ---- a JSON validator that allocates nothing ---- */

typedef struct jv {
    const uint8_t *p;
    const uint8_t *end;
    int depth;
} jv_t;

#define JV_MAX_DEPTH 64

static void jv_ws(jv_t *v)
{
    while (v->p < v->end && (*v->p == ' ' || *v->p == '\t' || *v->p == '\n' || *v->p == '\r'))
        v->p++;
}

static int jv_value(jv_t *v);

/* One UTF-8 sequence at v->p (first byte >= 0x80); rejects overlongs, surrogates, > U+10FFFF. */
static int jv_utf8(jv_t *v)
{
    const uint8_t *p = v->p;
    size_t left = (size_t)(v->end - p);
    uint8_t c = p[0];
    uint32_t cp;
    size_t n;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return -1;
    }
    if (left < n)
        return -1;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return -1;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return -1;
    v->p += n;
    return 0;
}

static int jv_hex(uint8_t c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int jv_string(jv_t *v)
{
    v->p++; /* opening quote */
    while (v->p < v->end) {
        uint8_t c = *v->p;
        if (c == '"') {
            v->p++;
            return 0;
        }
        if (c < 0x20)
            return -1;
        if (c == '\\') {
            if (v->end - v->p < 2)
                return -1;
            uint8_t e = v->p[1];
            if (e == 'u') {
                if (v->end - v->p < 6)
                    return -1;
                for (int i = 2; i < 6; i++)
                    if (!jv_hex(v->p[i]))
                        return -1;
                v->p += 6;
            } else if (strchr("\"\\/bfnrt", e) && e != 0) {
                v->p += 2;
            } else {
                return -1;
            }
        } else if (c >= 0x80) {
            if (jv_utf8(v) != 0)
                return -1;
        } else {
            v->p++;
        }
    }
    return -1;
}

static int jv_digits(jv_t *v)
{
    const uint8_t *s = v->p;
    while (v->p < v->end && *v->p >= '0' && *v->p <= '9')
        v->p++;
    return v->p > s ? 0 : -1;
}

static int jv_number(jv_t *v)
{
    if (*v->p == '-')
        v->p++;
    if (v->p >= v->end)
        return -1;
    if (*v->p == '0')
        v->p++;
    else if (jv_digits(v) != 0)
        return -1;
    if (v->p < v->end && *v->p == '.') {
        v->p++;
        if (jv_digits(v) != 0)
            return -1;
    }
    if (v->p < v->end && (*v->p == 'e' || *v->p == 'E')) {
        v->p++;
        if (v->p < v->end && (*v->p == '+' || *v->p == '-'))
            v->p++;
        if (jv_digits(v) != 0)
            return -1;
    }
    return 0;
}

static int jv_lit(jv_t *v, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(v->end - v->p) < n || memcmp(v->p, lit, n) != 0)
        return -1;
    v->p += n;
    return 0;
}

static int jv_container(jv_t *v, uint8_t close)
{
    if (++v->depth > JV_MAX_DEPTH)
        return -1;
    v->p++;
    jv_ws(v);
    if (v->p < v->end && *v->p == close) {
        v->p++;
        v->depth--;
        return 0;
    }
    for (;;) {
        if (close == '}') {
            jv_ws(v);
            if (v->p >= v->end || *v->p != '"' || jv_string(v) != 0)
                return -1;
            jv_ws(v);
            if (v->p >= v->end || *v->p != ':')
                return -1;
            v->p++;
        }
        if (jv_value(v) != 0)
            return -1;
        jv_ws(v);
        if (v->p >= v->end)
            return -1;
        if (*v->p == ',') {
            v->p++;
            continue;
        }
        if (*v->p == close) {
            v->p++;
            v->depth--;
            return 0;
        }
        return -1;
    }
}

static int jv_value(jv_t *v)
{
    jv_ws(v);
    if (v->p >= v->end)
        return -1;
    switch (*v->p) {
    case '{':
        return jv_container(v, '}');
    case '[':
        return jv_container(v, ']');
    case '"':
        return jv_string(v);
    case 't':
        return jv_lit(v, "true");
    case 'f':
        return jv_lit(v, "false");
    case 'n':
        return jv_lit(v, "null");
    default:
        if (*v->p == '-' || (*v->p >= '0' && *v->p <= '9'))
            return jv_number(v);
        return -1;
    }
}

int base_json_valid(const uint8_t *p, size_t n)
{
    if (!p || n == 0)
        return 0;
    jv_t v = {p, p + n, 0};
    if (jv_value(&v) != 0)
        return 0;
    jv_ws(&v);
    return v.p == v.end;
}

/* ---- the envelope ---- */

/* Metadata whose values are integers in the contract: written as JSON numbers. */
static int meta_is_number(codec_meta_t m)
{
    return m == CODEC_META_TIMESTAMP || m == CODEC_META_SEQ || m == CODEC_META_AGG_TIMESTAMP ||
           m == CODEC_META_AGG_SEQ;
}

/* A decimal integer JSON accepts as a number (no leading zeros, at most 19 digits). */
static int is_json_integer(const char *p, size_t n)
{
    size_t i = 0;
    if (n > 0 && p[0] == '-')
        i = 1;
    if (i == n || n - i > 19)
        return 0;
    if (p[i] == '0' && n - i > 1)
        return 0;
    for (; i < n; i++)
        if (p[i] < '0' || p[i] > '9')
            return 0;
    return 1;
}

static int put_jstr(buf_t *out, const char *p, size_t n)
{
    if (buf_append_u8(out, '"') != 0 || base_json_escaped(out, p ? p : "", n) != 0 ||
        buf_append_u8(out, '"') != 0)
        return -1;
    return 0;
}

/* Does the media type (before any ';') say JSON: application/json or any +json suffix? */
static int media_is_json(const char *p, size_t n)
{
    const char *semi = memchr(p, ';', n);
    if (semi)
        n = (size_t)(semi - p);
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    while (n > 0 && (*p == ' ' || *p == '\t')) {
        p++;
        n--;
    }
    if (n == 16 && strncasecmp(p, "application/json", 16) == 0)
        return 1;
    return n > 5 && strncasecmp(p + n - 5, "+json", 5) == 0;
}

/* The body is embedded as JSON when the copy says it is JSON (content-type, or an xDR record)
 * and it parses; otherwise it travels as base64. */
static int body_is_json(const codec_msg_t *m)
{
    int says_json = 0;
    for (size_t i = 0; i < m->n_http && !says_json; i++) {
        const codec_header_t *h = &m->http[i];
        if (h->name.len == 12 && strncasecmp(h->name.ptr, "content-type", 12) == 0)
            says_json = media_is_json(h->value.ptr, h->value.len);
    }
    for (size_t i = 0; i < m->n_ext && !says_json; i++) {
        const codec_header_t *h = &m->ext[i];
        if (h->name.len == 12 && memcmp(h->name.ptr, "@record-type", 12) == 0 &&
            h->value.len == 3 && memcmp(h->value.ptr, "xdr", 3) == 0)
            says_json = 1;
    }
    return says_json && base_json_valid((const uint8_t *)m->body.ptr, m->body.len);
}

static int envelope(buf_t *out, const codec_msg_t *m)
{
    int first = 1;
    if (buf_append_str(out, "{\"metadata\":{") != 0)
        return -1;
    for (int i = 0; i < CODEC_META__COUNT; i++) {
        const codec_slice_t *v = &m->meta[i];
        if (!v->ptr)
            continue;
        const char *name = codec_meta_name((codec_meta_t)i);
        if (!first && buf_append_u8(out, ',') != 0)
            return -1;
        first = 0;
        if (put_jstr(out, name + 1, strlen(name + 1)) != 0 || buf_append_u8(out, ':') != 0)
            return -1;
        if (meta_is_number((codec_meta_t)i) && is_json_integer(v->ptr, v->len)) {
            if (buf_append(out, v->ptr, v->len) != 0)
                return -1;
        } else if (put_jstr(out, v->ptr, v->len) != 0) {
            return -1;
        }
    }
    for (size_t i = 0; i < m->n_ext; i++) {
        const codec_header_t *h = &m->ext[i];
        const char *n = h->name.ptr;
        size_t nl = h->name.len;
        if (nl > 0 && n[0] == '@') {
            n++;
            nl--;
        }
        if (!first && buf_append_u8(out, ',') != 0)
            return -1;
        first = 0;
        if (put_jstr(out, n, nl) != 0 || buf_append_u8(out, ':') != 0 ||
            put_jstr(out, h->value.ptr, h->value.len) != 0)
            return -1;
    }
    if (buf_append_str(out, "},\"headers\":[") != 0)
        return -1;
    for (size_t i = 0; i < m->n_http; i++) {
        const codec_header_t *h = &m->http[i];
        if ((i > 0 && buf_append_u8(out, ',') != 0) || buf_append_u8(out, '[') != 0 ||
            put_jstr(out, h->name.ptr, h->name.len) != 0 || buf_append_u8(out, ',') != 0 ||
            put_jstr(out, h->value.ptr, h->value.len) != 0 || buf_append_u8(out, ']') != 0)
            return -1;
    }
    if (buf_append_str(out, "],\"key\":") != 0)
        return -1;
    if (m->key.ptr) {
        if (put_jstr(out, m->key.ptr, m->key.len) != 0)
            return -1;
    } else if (buf_append_str(out, "null") != 0) {
        return -1;
    }
    if (buf_append_str(out, ",\"body\":") != 0)
        return -1;
    if (!m->body.ptr || m->body.len == 0) {
        if (buf_append_str(out, "null") != 0)
            return -1;
    } else if (body_is_json(m)) {
        if (buf_append(out, m->body.ptr, m->body.len) != 0)
            return -1;
    } else {
        if (buf_append_u8(out, '"') != 0 || buf_append_base64(out, m->body.ptr, m->body.len) ||
            buf_append_str(out, "\",\"body_encoding\":\"base64\"") != 0)
            return -1;
    }
    return buf_append_u8(out, '}');
}

int base_json_envelope(buf_t *out, const codec_msg_t *m)
{
    size_t at = out->len;
    if (envelope(out, m) != 0) {
        out->len = at;
        return -1;
    }
    return 0;
}

static int put_header(buf_t *out, uint8_t type, uint16_t flags, uint32_t len, uint64_t id)
{
    if (buf_reserve(out, FRAME_HEADER_LEN) != 0)
        return -1;
    uint8_t *h = out->data + out->len;
    wr_be32(h, FRAME_MAGIC);
    h[4] = FRAME_VERSION;
    h[5] = type;
    wr_be16(h + FRAME_OFF_FLAGS, flags);
    wr_be32(h + FRAME_OFF_LENGTH, len);
    wr_be64(h + FRAME_OFF_ID, id);
    out->len += FRAME_HEADER_LEN;
    return 0;
}

int base_data_begin(frame_builder_t *b, buf_t *out, uint64_t id, uint16_t flags,
                    uint32_t max_payload)
{
    b->out = out;
    b->start = out->len;
    b->rec_start = SIZE_MAX;
    b->hcount_off = 0;
    b->hcount = 0;
    b->count = 0;
    b->max_payload = max_payload ? max_payload : FRAME_DEFAULT_MAX_PAYLOAD;
    if (put_header(out, FRAME_TYPE_DATA, flags, 4, id) != 0 || buf_append_be32(out, 0) != 0) {
        out->len = b->start;
        return -1;
    }
    return 0;
}

/* Would the payload stay within max_payload after `extra` more bytes? */
static int fits(const frame_builder_t *b, size_t extra)
{
    size_t payload = b->out->len - b->start - FRAME_HEADER_LEN;
    return payload + extra <= b->max_payload;
}

static void base_data_record_abort(frame_builder_t *b);

static int base_data_record_begin(frame_builder_t *b)
{
    if (b->rec_start != SIZE_MAX)
        base_data_record_abort(b);
    if (b->count == UINT32_MAX || !fits(b, 6))
        return -1;
    size_t at = b->out->len;
    if (buf_append_be32(b->out, 0) != 0 || buf_append_be16(b->out, 0) != 0) {
        b->out->len = at;
        return -1;
    }
    b->rec_start = at;
    b->hcount_off = at + 4;
    b->hcount = 0;
    return 0;
}

static void base_data_record_abort(frame_builder_t *b)
{
    if (b->rec_start != SIZE_MAX) {
        b->out->len = b->rec_start;
        b->rec_start = SIZE_MAX;
    }
}

static int base_data_record_header(frame_builder_t *b, const void *name, size_t name_len,
                                   const void *value, size_t value_len)
{
    if (b->rec_start == SIZE_MAX)
        return -1;
    size_t need = 2 + name_len + 4 + value_len;
    if (name_len == 0 || name_len > UINT16_MAX || value_len > UINT32_MAX ||
        b->hcount == UINT16_MAX || !fits(b, need) || buf_reserve(b->out, need) != 0) {
        base_data_record_abort(b);
        return -1;
    }
    buf_append_be16(b->out, (uint16_t)name_len);
    buf_append(b->out, name, name_len);
    buf_append_be32(b->out, (uint32_t)value_len);
    buf_append(b->out, value, value_len);
    b->hcount++;
    return 0;
}

static int base_data_record_end(frame_builder_t *b, const void *key, size_t key_len,
                                const void *body, size_t body_len)
{
    if (b->rec_start == SIZE_MAX)
        return -1;
    size_t need = 4 + key_len + 4 + body_len;
    if (key_len > UINT32_MAX || body_len > UINT32_MAX || !fits(b, need) ||
        buf_reserve(b->out, need) != 0) {
        base_data_record_abort(b);
        return -1;
    }
    buf_append_be32(b->out, (uint32_t)key_len);
    buf_append(b->out, key, key_len);
    buf_append_be32(b->out, (uint32_t)body_len);
    buf_append(b->out, body, body_len);
    uint8_t *d = b->out->data;
    wr_be32(d + b->rec_start, (uint32_t)(b->out->len - b->rec_start - 4));
    wr_be16(d + b->hcount_off, b->hcount);
    b->rec_start = SIZE_MAX;
    b->count++;
    return 0;
}

int base_data_add_msg(frame_builder_t *b, const codec_msg_t *m)
{
    if (base_data_record_begin(b) != 0)
        return -1;
    for (int i = 0; i < CODEC_META__COUNT; i++) {
        const codec_slice_t *v = &m->meta[i];
        if (!v->ptr)
            continue;
        const char *name = codec_meta_name((codec_meta_t)i);
        if (base_data_record_header(b, name, strlen(name), v->ptr, v->len) != 0)
            return -1;
    }
    for (size_t i = 0; i < m->n_http; i++) {
        const codec_header_t *h = &m->http[i];
        if (base_data_record_header(b, h->name.ptr, h->name.len, h->value.ptr, h->value.len) != 0)
            return -1;
    }
    for (size_t i = 0; i < m->n_ext; i++) {
        const codec_header_t *h = &m->ext[i];
        if (base_data_record_header(b, h->name.ptr, h->name.len, h->value.ptr, h->value.len) != 0)
            return -1;
    }
    return base_data_record_end(b, m->key.ptr ? m->key.ptr : "", m->key.len,
                                m->body.ptr ? m->body.ptr : "", m->body.len);
}

int base_data_end(frame_builder_t *b)
{
    base_data_record_abort(b);
    uint8_t *d = b->out->data + b->start;
    wr_be32(d + FRAME_OFF_LENGTH, (uint32_t)(b->out->len - b->start - FRAME_HEADER_LEN));
    wr_be32(d + FRAME_HEADER_LEN, b->count);
    return 0;
}

void base_data_abort(frame_builder_t *b)
{
    b->out->len = b->start;
    b->rec_start = SIZE_MAX;
    b->count = 0;
}
