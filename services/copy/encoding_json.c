/* The JSON envelope encoding (docs/encodings.md):
 *   {"metadata":{...'@' fields without '@'...},"headers":[[name,value],...],"key":"...",
 *    "body":<JSON>|"<base64>"|null[,"body_encoding":"base64"]}
 * A batch of max_count 1 is the object itself; a larger batch is a JSON array. */
#include "encoding.h"

#include <pthread.h>
#include <string.h>
#include <strings.h>

#include "codec.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define JV_AVX2 1
#endif

/* ---- a JSON validator that allocates nothing ---- */

typedef struct jv {
    const uint8_t *p;
    const uint8_t *end;
} jv_t;

#define JV_MAX_DEPTH 64

static inline void jv_ws(jv_t *v)
{
    /* Most tokens of a compact body are not preceded by whitespace: one test and out. */
    if (v->p<v->end && * v->p> ' ')
        return;
    while (v->p < v->end && (*v->p == ' ' || *v->p == '\t' || *v->p == '\n' || *v->p == '\r'))
        v->p++;
}

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

#ifdef JV_AVX2
/* buf_json_plain_run 32 bytes at a time, for CPUs with AVX2 (the same bytes stop it: '"', '\\',
 * below 0x20 and, compared signed, 0x80 and above). */
__attribute__((target("avx2"))) static size_t plain_run_avx2(const uint8_t *s, size_t n)
{
    const __m256i quote = _mm256_set1_epi8('"'), bslash = _mm256_set1_epi8('\\'),
                  space = _mm256_set1_epi8(0x20);
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(s + i));
        __m256i bad = _mm256_or_si256(
            _mm256_or_si256(_mm256_cmpeq_epi8(x, quote), _mm256_cmpeq_epi8(x, bslash)),
            _mm256_cmpgt_epi8(space, x));
        unsigned mask = (unsigned)_mm256_movemask_epi8(bad);
        if (mask)
            return i + (size_t)__builtin_ctz(mask);
    }
    return i + buf_json_plain_run(s + i, n - i);
}
#endif

/* The plain bytes at s: the first 32 inline (most strings of an NF body end there), a longer
 * run (a body that is one big text value: 3,400 bytes scanned for every copy) on with AVX2
 * where the CPU has it, at twice the bytes per instruction. */
static inline __attribute__((always_inline)) size_t jv_plain_run(const uint8_t *s, size_t n)
{
#ifdef JV_AVX2
    if (n > 32) {
        size_t k = buf_json_plain_run(s, 32);
        if (k < 32 || !__builtin_cpu_supports("avx2"))
            return k < 32 ? k : 32 + buf_json_plain_run(s + 32, n - 32);
        return 32 + plain_run_avx2(s + 32, n - 32);
    }
#endif
    return buf_json_plain_run(s, n);
}

/* Inlined into both call sites (key and value): NF bodies are hundreds of short strings, and
 * the call cost as much as scanning one. */
static inline __attribute__((always_inline)) int jv_string(jv_t *v)
{
    v->p++; /* opening quote */
    while (v->p < v->end) {
        v->p += jv_plain_run(v->p, (size_t)(v->end - v->p));
        if (v->p >= v->end)
            break;
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
            } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' ||
                       e == 'r' || e == 't') {
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

static int jv_lit(jv_t *v, const char *lit, size_t n)
{
    if ((size_t)(v->end - v->p) < n || memcmp(v->p, lit, n) != 0)
        return -1;
    v->p += n;
    return 0;
}

/* The grammar as a loop over an explicit container stack (one bit per level: 1 object,
 * 0 array; 64 levels fit one word) rather than recursion: a call per value costs more than
 * the scanning itself on NF bodies, which are mostly short keys and values. max_depth is at
 * most JV_MAX_DEPTH. */
static int jv_valid(const uint8_t *p, size_t n, int max_depth)
{
    if (!p || n == 0)
        return 0;
    jv_t v = {p, p + n};
    uint64_t objects = 0; /* bit d-1 set: level d is an object */
    int depth = 0;
value:
    jv_ws(&v);
    if (v.p >= v.end)
        return 0;
    switch (*v.p) {
    case '{':
    case '[': {
        int obj = *v.p == '{';
        if (depth == max_depth)
            return 0;
        objects = obj ? objects | (1ull << depth) : objects & ~(1ull << depth);
        depth++;
        v.p++;
        jv_ws(&v);
        if (v.p < v.end && *v.p == (obj ? '}' : ']')) {
            v.p++;
            depth--;
            goto after;
        }
        if (obj)
            goto key;
        goto value;
    }
    case '"':
        if (jv_string(&v) != 0)
            return 0;
        goto after;
    case 't':
        if (jv_lit(&v, "true", 4) != 0)
            return 0;
        goto after;
    case 'f':
        if (jv_lit(&v, "false", 5) != 0)
            return 0;
        goto after;
    case 'n':
        if (jv_lit(&v, "null", 4) != 0)
            return 0;
        goto after;
    default:
        if ((*v.p != '-' && (*v.p < '0' || *v.p > '9')) || jv_number(&v) != 0)
            return 0;
        goto after;
    }
key:
    jv_ws(&v);
    if (v.p >= v.end || *v.p != '"' || jv_string(&v) != 0)
        return 0;
    jv_ws(&v);
    if (v.p >= v.end || *v.p != ':')
        return 0;
    v.p++;
    goto value;
after:
    jv_ws(&v);
    if (depth == 0)
        return v.p == v.end;
    if (v.p >= v.end)
        return 0;
    if (*v.p == ',') {
        v.p++;
        if (objects & (1ull << (depth - 1)))
            goto key;
        goto value;
    }
    if (*v.p == ((objects & (1ull << (depth - 1))) ? '}' : ']')) {
        v.p++;
        depth--;
        goto after;
    }
    return 0;
}

int encoding_json_valid(const uint8_t *p, size_t n)
{
    return jv_valid(p, n, JV_MAX_DEPTH);
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

/* buf_append with the common case (room already reserved) inlined: the same bytes and the
 * same failure (only when they would pass out->max), minus a call and a reserve per piece. */
static inline int put_mem(buf_t *out, const void *p, size_t n)
{
    if (n == 0)
        return 0;
    /* cap may exceed max (the first allocation is 256 bytes), so both bound the fast path. */
    if (out->cap - out->len >= n && out->len <= out->max && out->max - out->len >= n) {
        memcpy(out->data + out->len, p, n);
        out->len += n;
        return 0;
    }
    return buf_append(out, p, n);
}

static inline int put_u8(buf_t *out, uint8_t c)
{
    if (out->cap > out->len && out->max > out->len) {
        out->data[out->len++] = c;
        return 0;
    }
    return buf_append_u8(out, c);
}

#define PUT_LIT(out, lit) put_mem((out), (lit), sizeof(lit) - 1)

/* A JSON string. Header names and values almost never need escaping: one scan proves it and
 * the bytes go out in one copy; otherwise buf_append_json_escaped does the work. */
static int put_jstr(buf_t *out, const char *p, size_t n)
{
    if (!p)
        p = "";
    if (put_u8(out, '"') != 0)
        return -1;
    if (buf_json_plain_run((const uint8_t *)p, n) == n) {
        if (n > 0 && put_mem(out, p, n) != 0)
            return -1;
    } else if (buf_append_json_escaped(out, p, n) != 0) {
        return -1;
    }
    return put_u8(out, '"');
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
 * and it parses within one level less than the limit: the envelope is that level, and an
 * envelope deeper than 64 would fail our own check and any consumer holding the same limit.
 * Otherwise it travels as base64. */
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
    return says_json && jv_valid((const uint8_t *)m->body.ptr, m->body.len, JV_MAX_DEPTH - 1);
}

/* The envelope's size when no string needs escaping, which is how NF headers and values come:
 * reserved once per message so the appends usually never reallocate, without growing the
 * buffer for escapes that almost never happen (an escaped string just grows it in the checked
 * appends). Saturates instead of overflowing (the reserve then fails, harmlessly). */
static size_t envelope_likely(const codec_msg_t *m, int body_json)
{
    size_t n = sizeof("{\"metadata\":{},\"headers\":[],\"key\":,\"body\":}") - 1;
    for (int i = 0; i < CODEC_META__COUNT; i++)
        if (m->meta[i].ptr) /* ,"name":"value" (the name's leading '@' not written) */
            n += codec_meta_name_len((codec_meta_t)i) + m->meta[i].len + 5;
    for (size_t i = 0; i < m->n_ext; i++) /* ,"name":"value" */
        n += m->ext[i].name.len + m->ext[i].value.len + 6;
    for (size_t i = 0; i < m->n_http; i++) /* ,["name","value"] */
        n += m->http[i].name.len + m->http[i].value.len + 8;
    if (m->key.len > SIZE_MAX / 2 || m->body.len > SIZE_MAX / 2 || n > SIZE_MAX / 4)
        return SIZE_MAX;
    n += m->key.ptr ? m->key.len + 2 : 4;
    if (!m->body.ptr || m->body.len == 0)
        n += 4;
    else if (body_json)
        n += m->body.len;
    else
        n += 4 * ((m->body.len + 2) / 3) + sizeof("\"\",\"body_encoding\":\"base64\"") - 1;
    return n;
}

/* Each metadata field's JSON key with its quotes and colon ("correlation-id":), rendered once
 * per process: an NF copy carries about eleven of them, and escaping-checking the same
 * constant names for every copy cost a tenth of the envelope. A name that would need escaping
 * (none does) keeps n 0 and is written the general way. */
typedef struct meta_key {
    char s[40];
    size_t n;
} meta_key_t;

static meta_key_t meta_keys[CODEC_META__COUNT];
static pthread_once_t meta_keys_once = PTHREAD_ONCE_INIT;

static void meta_keys_build(void)
{
    for (int i = 0; i < CODEC_META__COUNT; i++) {
        const char *name = codec_meta_name((codec_meta_t)i) + 1; /* the '@' is not written */
        size_t l = strlen(name);
        meta_keys[i].n = 0;
        if (l + 3 > sizeof meta_keys[i].s || buf_json_plain_run((const uint8_t *)name, l) != l)
            continue;
        meta_keys[i].s[0] = '"';
        memcpy(meta_keys[i].s + 1, name, l);
        meta_keys[i].s[l + 1] = '"';
        meta_keys[i].s[l + 2] = ':';
        meta_keys[i].n = l + 3;
    }
}

static int envelope(buf_t *out, const codec_msg_t *m)
{
    int first = 1;
    int body_json = m->body.ptr && m->body.len > 0 && body_is_json(m);
    /* A capacity hint only: when it fails (near max) the checked appends below still decide,
     * so the output and the failure point are those of appending piece by piece. */
    (void)buf_reserve(out, envelope_likely(m, body_json));
    if (PUT_LIT(out, "{\"metadata\":{") != 0)
        return -1;
    (void)pthread_once(&meta_keys_once, meta_keys_build);
    for (int i = 0; i < CODEC_META__COUNT; i++) {
        const codec_slice_t *v = &m->meta[i];
        if (!v->ptr)
            continue;
        if (!first && put_u8(out, ',') != 0)
            return -1;
        first = 0;
        if (meta_keys[i].n > 0) {
            if (put_mem(out, meta_keys[i].s, meta_keys[i].n) != 0)
                return -1;
        } else {
            const char *name = codec_meta_name((codec_meta_t)i);
            if (put_jstr(out, name + 1, strlen(name + 1)) != 0 || put_u8(out, ':') != 0)
                return -1;
        }
        if (meta_is_number((codec_meta_t)i) && is_json_integer(v->ptr, v->len)) {
            if (put_mem(out, v->ptr, v->len) != 0)
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
        if (!first && put_u8(out, ',') != 0)
            return -1;
        first = 0;
        if (put_jstr(out, n, nl) != 0 || put_u8(out, ':') != 0 ||
            put_jstr(out, h->value.ptr, h->value.len) != 0)
            return -1;
    }
    if (PUT_LIT(out, "},\"headers\":[") != 0)
        return -1;
    for (size_t i = 0; i < m->n_http; i++) {
        const codec_header_t *h = &m->http[i];
        if ((i > 0 && put_u8(out, ',') != 0) || put_u8(out, '[') != 0 ||
            put_jstr(out, h->name.ptr, h->name.len) != 0 || put_u8(out, ',') != 0 ||
            put_jstr(out, h->value.ptr, h->value.len) != 0 || put_u8(out, ']') != 0)
            return -1;
    }
    if (PUT_LIT(out, "],\"key\":") != 0)
        return -1;
    if (m->key.ptr) {
        if (put_jstr(out, m->key.ptr, m->key.len) != 0)
            return -1;
    } else if (PUT_LIT(out, "null") != 0) {
        return -1;
    }
    if (PUT_LIT(out, ",\"body\":") != 0)
        return -1;
    if (!m->body.ptr || m->body.len == 0) {
        if (PUT_LIT(out, "null") != 0)
            return -1;
    } else if (body_json) {
        if (put_mem(out, m->body.ptr, m->body.len) != 0)
            return -1;
    } else {
        if (put_u8(out, '"') != 0 || buf_append_base64(out, m->body.ptr, m->body.len) ||
            PUT_LIT(out, "\",\"body_encoding\":\"base64\"") != 0)
            return -1;
    }
    return put_u8(out, '}');
}

int encoding_json_envelope(buf_t *out, const codec_msg_t *m)
{
    size_t at = out->len;
    if (envelope(out, m) != 0) {
        out->len = at;
        return -1;
    }
    return 0;
}

static encoding_result_t json_begin(encoding_batch_t *b, buf_t *out, size_t max_count)
{
    encoding_batch_open(b, &encoding_json, out, max_count);
    if (b->max_count > 1 && buf_append_u8(out, '[') != 0)
        return ENCODING_TOO_BIG;
    return ENCODING_OK;
}

static encoding_result_t json_add(encoding_batch_t *b, const codec_msg_t *m)
{
    if (!b->out)
        return ENCODING_ERROR;
    if (b->count >= b->max_count)
        return ENCODING_FULL;
    buf_t *out = b->out;
    size_t at = out->len;
    int array = b->max_count > 1;
    /* In an array, room for the closing ']' must stay free, or end_batch could not close. */
    if ((b->count > 0 && buf_append_u8(out, ',') != 0) || envelope(out, m) != 0 ||
        (array && out->max - out->len < 1)) {
        out->len = at;
        return b->count > 0 ? ENCODING_FULL : ENCODING_TOO_BIG;
    }
    b->count++;
    return ENCODING_OK;
}

static encoding_result_t json_end(encoding_batch_t *b)
{
    if (encoding_batch_close(b) != ENCODING_OK)
        return ENCODING_ERROR;
    if (b->max_count > 1 && buf_append_u8(b->out, ']') != 0)
        return ENCODING_ERROR; /* cannot happen: add kept the byte free */
    return ENCODING_OK;
}

const encoding_t encoding_json = {
    .name = "json",
    .content_type = "application/json",
    .max_batch = 10000,
    /* A JSON request with several copies is an array, which an endpoint must be told to
     * expect: one per request unless the feed asks for more. */
    .default_batch = 1,
    .state_size = 0,
    .begin_batch = json_begin,
    .add = json_add,
    .end_batch = json_end,
};
