/* NF message copy codec (docs/message-format.md is the contract this file implements).
 *
 * Decoding never allocates and never copies: every slice points into the key, value and
 * header storage of the record, so a decode costs one pass over the headers plus the
 * checks of the fields found. The first violation found wins; the order of the checks is
 * part of the contract (docs, "Validation order") so that a record always gets the same
 * reason and field. */
#include "codec.h"

#include "buf.h"
#include "frame.h"
#include "swar.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Metadata header names, with their lengths known at compile time (lookups compare
 * lengths first). */
#define CODEC_META_LIST(X)                                                                         \
    X(CODEC_META_CORRELATION_ID, "@correlation-id")                                                \
    X(CODEC_META_TIMESTAMP, "@timestamp-us")                                                       \
    X(CODEC_META_MESSAGE_TYPE, "@message-type")                                                    \
    X(CODEC_META_TRIGGER_POINT, "@trigger-point")                                                  \
    X(CODEC_META_NF_TYPE, "@nf-type")                                                              \
    X(CODEC_META_NF_INSTANCE, "@nf-instance")                                                      \
    X(CODEC_META_SRC_ADDR, "@src-addr")                                                            \
    X(CODEC_META_DST_ADDR, "@dst-addr")                                                            \
    X(CODEC_META_CONSUMER_ID, "@consumer-id")                                                      \
    X(CODEC_META_CONSUMER_FQDN, "@consumer-fqdn")                                                  \
    X(CODEC_META_PRODUCER_ID, "@producer-id")                                                      \
    X(CODEC_META_PRODUCER_FQDN, "@producer-fqdn")                                                  \
    X(CODEC_META_HOP_ID, "@hop-id")                                                                \
    X(CODEC_META_REROUTE_CAUSE, "@reroute-cause")                                                  \
    X(CODEC_META_SEQ, "@seq")                                                                      \
    X(CODEC_META_AGG_TIMESTAMP, "@agg-timestamp-us")                                               \
    X(CODEC_META_AGG_SEQ, "@agg-seq")                                                              \
    X(CODEC_META_ORIGIN, "@origin")

#define CODEC_META_NAME(e, n) [e] = n,
#define CODEC_META_LEN(e, n) [e] = sizeof(n) - 1,
static const char *const codec_meta_names[CODEC_META__COUNT] = {CODEC_META_LIST(CODEC_META_NAME)};
static const size_t codec_meta_name_len_of[CODEC_META__COUNT] = {CODEC_META_LIST(CODEC_META_LEN)};
/* Every name fits the lookup's table by length (codec_meta_lookup), with room for its end. */
#define CODEC_META_FITS(e, n) _Static_assert(sizeof(n) - 1 < 24, "metadata name too long");
CODEC_META_LIST(CODEC_META_FITS)

static const char *const codec_reason_names[CODEC_REASON__COUNT] = {
    [CODEC_OK] = "ok",
    [CODEC_ERR_MISSING_FIELD] = "missing-field",
    [CODEC_ERR_BAD_VALUE] = "bad-value",
    [CODEC_ERR_OVERSIZED] = "oversized",
    [CODEC_ERR_LIMIT] = "too-many-headers",
    [CODEC_ERR_BAD_HEADER] = "bad-header",
    [CODEC_ERR_DUPLICATE] = "duplicate-field",
    [CODEC_ERR_KEY_MISMATCH] = "key-mismatch",
    [CODEC_ERR_INCONSISTENT] = "inconsistent",
};

static const char *const codec_trigger_names[CODEC_TRIGGER__COUNT] = {
    [CODEC_TRIGGER_UNKNOWN] = "unknown",         [CODEC_TRIGGER_RX_REQUEST] = "rx-request",
    [CODEC_TRIGGER_TX_REQUEST] = "tx-request",   [CODEC_TRIGGER_RX_RESPONSE] = "rx-response",
    [CODEC_TRIGGER_TX_RESPONSE] = "tx-response",
};

static const char *const codec_nf_names[CODEC_NF__COUNT] = {
    [CODEC_NF_UNKNOWN] = "unknown", [CODEC_NF_SCP] = "SCP", [CODEC_NF_NRF] = "NRF",
    [CODEC_NF_SEPP] = "SEPP",       [CODEC_NF_BSF] = "BSF", [CODEC_NF_PCF] = "PCF",
    [CODEC_NF_NON_NF] = "NON_NF",
};

/* Bit per pseudo-header, to find duplicates without a scan. */
enum {
    PSEUDO_METHOD = 1,
    PSEUDO_PATH = 2,
    PSEUDO_SCHEME = 4,
    PSEUDO_AUTHORITY = 8,
    PSEUDO_STATUS = 16,
    PSEUDO_PROTOCOL = 32
};

const char *codec_reason_name(codec_reason_t r)
{
    if ((unsigned)r >= CODEC_REASON__COUNT)
        return "unknown";
    return codec_reason_names[r];
}

const char *codec_meta_name(codec_meta_t m)
{
    if ((unsigned)m >= CODEC_META__COUNT)
        return "@unknown";
    return codec_meta_names[m];
}

size_t codec_meta_name_len(codec_meta_t m)
{
    return (unsigned)m >= CODEC_META__COUNT ? 8 : codec_meta_name_len_of[m];
}

/* "request"/"response"; "unknown" for the zero value (a decode error's detail). */
static const char *codec_msg_type_name(codec_msg_type_t t)
{
    switch (t) {
    case CODEC_MSG_REQUEST:
        return "request";
    case CODEC_MSG_RESPONSE:
        return "response";
    default:
        return "unknown";
    }
}

const char *codec_trigger_name(codec_trigger_t t)
{
    if ((unsigned)t >= CODEC_TRIGGER__COUNT)
        return "unknown";
    return codec_trigger_names[t];
}

const char *codec_nf_name(codec_nf_t nf)
{
    if ((unsigned)nf >= CODEC_NF__COUNT)
        return "unknown";
    return codec_nf_names[nf];
}

static bool slice_eq(const char *p, size_t len, const char *lit)
{
    size_t n = strlen(lit);
    return len == n && memcmp(p, lit, n) == 0;
}

codec_nf_t codec_nf_parse(const char *s, size_t len)
{
    for (int i = CODEC_NF_SCP; i < CODEC_NF__COUNT; i++)
        if (slice_eq(s, len, codec_nf_names[i]))
            return (codec_nf_t)i;
    return CODEC_NF_UNKNOWN;
}

int codec_limits_check(const codec_limits_t *l)
{
    return l->max_body > CODEC_MAX_MAX_BODY ? -1 : 0;
}

/* The metadata names by length, each list ending in -1: a lookup compares the one to four
 * names of the length it has, not all eighteen (the scan was a third of decode_header, which
 * runs for every '@' header of every copy in the aggregation and in every feed). */
#define META_LEN_MAX 24
#define META_PER_LEN 6
static int8_t meta_by_len[META_LEN_MAX][META_PER_LEN];

__attribute__((constructor)) static void meta_by_len_build(void)
{
    memset(meta_by_len, -1, sizeof meta_by_len);
    for (int i = 0; i < CODEC_META__COUNT; i++) {
        /* A length with more names than a row holds loses the extra ones: the unit test
         * test_meta_lookup_finds_every_name_and_nothing_else then fails. */
        int8_t *row = meta_by_len[codec_meta_name_len_of[i]], *c = row;
        while (*c >= 0 && c < row + META_PER_LEN - 1)
            c++;
        if (*c < 0)
            *c = (int8_t)i;
    }
}

int codec_meta_lookup(const char *name, size_t len)
{
    if (len < 2 || len >= META_LEN_MAX || name[0] != '@')
        return -1;
    for (const int8_t *c = meta_by_len[len]; *c >= 0; c++)
        if (codec_meta_names[*c][1] == name[1] && memcmp(codec_meta_names[*c], name, len) == 0)
            return *c;
    return -1;
}

/* ---- error reporting ---- */

static void err_field(codec_error_t *err, const char *name, size_t len)
{
    /* Only printable bytes of the name, so a hostile name cannot break a log line. */
    size_t n = len < sizeof err->field - 1 ? len : sizeof err->field - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        err->field[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    err->field[n] = '\0';
}

static codec_reason_t fail(codec_error_t *err, codec_reason_t r, const char *field, size_t flen,
                           const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static codec_reason_t fail(codec_error_t *err, codec_reason_t r, const char *field, size_t flen,
                           const char *fmt, ...)
{
    if (!err)
        return r;
    err->reason = r;
    err_field(err, field, flen);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->detail, sizeof err->detail, fmt, ap);
    va_end(ap);
    return r;
}

#define FAIL_META(err, r, m, ...)                                                                  \
    fail(err, r, codec_meta_names[m], strlen(codec_meta_names[m]), __VA_ARGS__)

/* ---- lexical checks ---- */

/* RFC 9110 token characters, lowercase only: one table load per byte of every HTTP field
 * name of every copy (the branches and strchr this replaced were a visible part of the
 * decode). */
static const bool tchar_lower[256] = {
    ['a'] = 1, ['b'] = 1, ['c'] = 1,  ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1,
    ['i'] = 1, ['j'] = 1, ['k'] = 1,  ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1,
    ['q'] = 1, ['r'] = 1, ['s'] = 1,  ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1,
    ['y'] = 1, ['z'] = 1, ['0'] = 1,  ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1,
    ['6'] = 1, ['7'] = 1, ['8'] = 1,  ['9'] = 1, ['-'] = 1, ['!'] = 1, ['#'] = 1, ['$'] = 1,
    ['%'] = 1, ['&'] = 1, ['\''] = 1, ['*'] = 1, ['+'] = 1, ['.'] = 1, ['^'] = 1, ['_'] = 1,
    ['`'] = 1, ['|'] = 1, ['~'] = 1,
};

/* Pseudo-header bit, or 0 when the name is not a known pseudo-header. */
static int pseudo_bit(const char *n, size_t len)
{
    if (slice_eq(n, len, ":method"))
        return PSEUDO_METHOD;
    if (slice_eq(n, len, ":path"))
        return PSEUDO_PATH;
    if (slice_eq(n, len, ":scheme"))
        return PSEUDO_SCHEME;
    if (slice_eq(n, len, ":authority"))
        return PSEUDO_AUTHORITY;
    if (slice_eq(n, len, ":status"))
        return PSEUDO_STATUS;
    if (slice_eq(n, len, ":protocol"))
        return PSEUDO_PROTOCOL;
    return 0;
}

static bool valid_ext_name(const char *n, size_t len)
{
    if (len < 2 || n[0] != '@')
        return false;
    unsigned char c1 = (unsigned char)n[1];
    if (!((c1 >= 'a' && c1 <= 'z') || (c1 >= '0' && c1 <= '9')))
        return false;
    for (size_t i = 2; i < len; i++) {
        unsigned char c = (unsigned char)n[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
            return false;
    }
    return true;
}

/* RFC 9113 8.2.1: no NUL, CR or LF in a field value; no leading/trailing whitespace is not
 * enforced (copies carry what the NF saw). */
static bool valid_http_value(const char *v, size_t len)
{
    return swar_no_nul_cr_lf(v, len);
}

/* Metadata text: any byte but control characters (UTF-8 allowed). */
static bool valid_meta_text(const char *v, size_t len)
{
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t x = swar_load(v + i);
        if (swar_has_less(x, 0x20) || swar_has_byte(x, 0x7f))
            return false;
    }
    for (; i < len; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c < 0x20 || c == 0x7f)
            return false;
    }
    return true;
}

/* Correlation id: 1..CODEC_MAX_KEY visible ASCII bytes (no space). */
static bool valid_correlation_id(const char *v, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c < 0x21 || c > 0x7e)
            return false;
    }
    return true;
}

/* Unsigned decimal, 1..20 digits, no sign, no blanks, <= max. */
static bool parse_dec(const char *v, size_t len, uint64_t max, uint64_t *out)
{
    if (len == 0 || len > 20)
        return false;
    uint64_t x = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned d = (unsigned char)v[i] - (unsigned)'0';
        if (d > 9)
            return false;
        if (x > (UINT64_MAX - d) / 10)
            return false;
        x = x * 10 + d;
    }
    if (x > max)
        return false;
    *out = x;
    return true;
}

static bool valid_port(const char *v, size_t len)
{
    uint64_t p;
    return len <= 5 && parse_dec(v, len, 65535, &p) && p > 0;
}

/* host:port with host a DNS name or IPv4 literal, or [IPv6]:port (zone id allowed). */
static bool valid_addr(const char *v, size_t len)
{
    if (len == 0)
        return false;
    if (v[0] == '[') {
        const char *close = memchr(v, ']', len);
        if (!close)
            return false;
        size_t hlen = (size_t)(close - v) - 1;
        if (hlen < 2)
            return false;
        bool colon = false, zone = false;
        for (size_t i = 1; i <= hlen; i++) {
            unsigned char c = (unsigned char)v[i];
            bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
            if (zone) { /* RFC 6874 zone id: interface name characters */
                if (!(hex || (c >= 'g' && c <= 'z') || (c >= 'G' && c <= 'Z') || c == '.' ||
                      c == '-' || c == '_'))
                    return false;
            } else if (c == ':') {
                colon = true;
            } else if (c == '%') {
                zone = true;
            } else if (!(hex || c == '.')) {
                return false;
            }
        }
        size_t rest = len - (size_t)(close - v) - 1;
        if (!colon || rest < 2 || close[1] != ':')
            return false;
        return valid_port(close + 2, rest - 1);
    }
    const char *colon = memrchr(v, ':', len);
    if (!colon || colon == v)
        return false;
    size_t hlen = (size_t)(colon - v);
    for (size_t i = 0; i < hlen; i++) {
        unsigned char c = (unsigned char)v[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              c == '.' || c == '-' || c == '_'))
            return false; /* includes a bare IPv6 literal: it needs brackets */
    }
    return valid_port(colon + 1, len - hlen - 1);
}

/* <topic>/<partition>/<offset>: Kafka topic characters, partition int32, offset int64. */
static bool valid_origin(const char *v, size_t len)
{
    const char *s2 = memrchr(v, '/', len);
    if (!s2)
        return false;
    const char *s1 = memrchr(v, '/', (size_t)(s2 - v));
    if (!s1 || s1 == v)
        return false;
    size_t tlen = (size_t)(s1 - v);
    if (tlen > 249)
        return false;
    for (size_t i = 0; i < tlen; i++) {
        unsigned char c = (unsigned char)v[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              c == '.' || c == '-' || c == '_'))
            return false;
    }
    uint64_t x;
    if (!parse_dec(s1 + 1, (size_t)(s2 - s1) - 1, INT32_MAX, &x))
        return false;
    return parse_dec(s2 + 1, len - (size_t)(s2 - v) - 1, INT64_MAX, &x);
}

static codec_trigger_t parse_trigger(const char *v, size_t len)
{
    for (int i = CODEC_TRIGGER_RX_REQUEST; i < CODEC_TRIGGER__COUNT; i++)
        if (slice_eq(v, len, codec_trigger_names[i]))
            return (codec_trigger_t)i;
    return CODEC_TRIGGER_UNKNOWN;
}

static bool trigger_is_request(codec_trigger_t t)
{
    return t == CODEC_TRIGGER_RX_REQUEST || t == CODEC_TRIGGER_TX_REQUEST;
}

/* ---- decoding ---- */

static void msg_reset(codec_msg_t *m)
{
    /* The header arrays are filled up to n_http / n_ext only: clearing them would cost
     * 2.5 KB of stores per copy for nothing. */
    memset(m->meta, 0, sizeof m->meta);
    m->key = (codec_slice_t){0};
    m->body = (codec_slice_t){0};
    m->cid_in = 0;
    m->timestamp_us = 0;
    m->type = CODEC_MSG_UNKNOWN;
    m->trigger = CODEC_TRIGGER_UNKNOWN;
    m->nf = CODEC_NF_UNKNOWN;
    m->status = 0;
    m->seq = 0;
    m->agg_timestamp_us = 0;
    m->agg_seq = 0;
    m->method = (codec_slice_t){0};
    m->path = (codec_slice_t){0};
    m->n_http = 0;
    m->n_ext = 0;
    m->framed = false;
}

/* One header of the record: sorted into meta / ext / http with its structural checks. */
static codec_reason_t decode_header(codec_msg_t *out, const char *name, size_t nlen,
                                    const char *val, size_t vlen, unsigned *pseudo,
                                    codec_error_t *err)
{
    static const char empty[1] = "";
    codec_slice_t value = {val ? val : empty, val ? vlen : 0};

    if (nlen == 0)
        return fail(err, CODEC_ERR_BAD_HEADER, "", 0, "header with an empty name");
    if (nlen > CODEC_MAX_NAME)
        return fail(err, CODEC_ERR_OVERSIZED, name, nlen, "header name of %zu bytes (max %d)", nlen,
                    CODEC_MAX_NAME);

    if (name[0] == '@') {
        if (value.len > CODEC_MAX_META_VALUE)
            return fail(err, CODEC_ERR_OVERSIZED, name, nlen,
                        "metadata value of %zu bytes (max %d)", value.len, CODEC_MAX_META_VALUE);
        int m = codec_meta_lookup(name, nlen);
        if (m >= 0) {
            if (out->meta[m].ptr)
                return fail(err, CODEC_ERR_DUPLICATE, name, nlen, "metadata header repeated");
            out->meta[m] = value;
            return CODEC_OK;
        }
        if (!valid_ext_name(name, nlen))
            return fail(err, CODEC_ERR_BAD_HEADER, name, nlen,
                        "'@' name must be '@' [a-z0-9] followed by [a-z0-9._-]");
        for (size_t i = 0; i < out->n_ext; i++)
            if (out->ext[i].name.len == nlen && memcmp(out->ext[i].name.ptr, name, nlen) == 0)
                return fail(err, CODEC_ERR_DUPLICATE, name, nlen, "metadata header repeated");
        if (!valid_meta_text(value.ptr, value.len))
            return fail(err, CODEC_ERR_BAD_VALUE, name, nlen,
                        "control character in a metadata value");
        if (out->n_ext == CODEC_MAX_EXT_HEADERS)
            return fail(err, CODEC_ERR_LIMIT, name, nlen, "more than %d extension metadata headers",
                        CODEC_MAX_EXT_HEADERS);
        out->ext[out->n_ext++] = (codec_header_t){{name, nlen}, value};
        return CODEC_OK;
    }

    int bit = 0;
    if (name[0] == ':') {
        bit = pseudo_bit(name, nlen);
        if (!bit)
            return fail(err, CODEC_ERR_BAD_HEADER, name, nlen, "unknown pseudo-header");
        if (*pseudo & (unsigned)bit)
            return fail(err, CODEC_ERR_DUPLICATE, name, nlen, "pseudo-header repeated");
        *pseudo |= (unsigned)bit;
    } else {
        for (size_t i = 0; i < nlen; i++)
            if (!tchar_lower[(unsigned char)name[i]])
                return fail(err, CODEC_ERR_BAD_HEADER, name, nlen,
                            "not a lowercase HTTP field name (byte %zu)", i);
    }
    if (value.len > CODEC_MAX_HTTP_VALUE)
        return fail(err, CODEC_ERR_OVERSIZED, name, nlen, "field value of %zu bytes (max %d)",
                    value.len, CODEC_MAX_HTTP_VALUE);
    if (!valid_http_value(value.ptr, value.len))
        return fail(err, CODEC_ERR_BAD_VALUE, name, nlen, "NUL, CR or LF in a field value");
    if (out->n_http == CODEC_MAX_HTTP_HEADERS)
        return fail(err, CODEC_ERR_LIMIT, name, nlen, "more than %d HTTP fields",
                    CODEC_MAX_HTTP_HEADERS);
    out->http[out->n_http++] = (codec_header_t){{name, nlen}, value};
    if (bit == PSEUDO_METHOD)
        out->method = value;
    else if (bit == PSEUDO_PATH)
        out->path = value;
    return CODEC_OK;
}

/* The checks after all headers are sorted, one step each, in the documented order. They run
 * on every copy: static inline, each reads only the fields it checks, no pass repeats. */

/* Correlation id: key, @correlation-id, or both (then equal). */
static inline codec_reason_t check_correlation_id(codec_msg_t *out, codec_error_t *err)
{
    codec_slice_t *cid = &out->meta[CODEC_META_CORRELATION_ID];
    if (cid->ptr) {
        if (cid->len > CODEC_MAX_KEY)
            return FAIL_META(err, CODEC_ERR_OVERSIZED, CODEC_META_CORRELATION_ID,
                             "correlation id of %zu bytes (max %d)", cid->len, CODEC_MAX_KEY);
        if (!valid_correlation_id(cid->ptr, cid->len))
            return FAIL_META(err, CODEC_ERR_BAD_VALUE, CODEC_META_CORRELATION_ID,
                             "correlation id must be 1..%d visible ASCII bytes", CODEC_MAX_KEY);
        if (out->key.ptr &&
            (out->key.len != cid->len || memcmp(out->key.ptr, cid->ptr, cid->len) != 0))
            return fail(err, CODEC_ERR_KEY_MISMATCH, "key", 3,
                        "record key differs from @correlation-id");
        out->cid_in = CODEC_CID_IN_HEADER | (out->key.ptr ? CODEC_CID_IN_KEY : 0u);
        out->key = *cid;
    } else if (out->key.ptr) {
        out->cid_in = CODEC_CID_IN_KEY;
        *cid = out->key;
    } else {
        return FAIL_META(err, CODEC_ERR_MISSING_FIELD, CODEC_META_CORRELATION_ID,
                         "no record key and no @correlation-id");
    }
    return CODEC_OK;
}

/* The metadata every copy carries: timestamp, message type, trigger point, NF type. */
static inline codec_reason_t check_required_meta(codec_msg_t *out, codec_error_t *err)
{
    codec_slice_t *meta = out->meta;
    uint64_t u;
    codec_slice_t *v = &meta[CODEC_META_TIMESTAMP];
    if (!v->ptr)
        return FAIL_META(err, CODEC_ERR_MISSING_FIELD, CODEC_META_TIMESTAMP, "required");
    if (!parse_dec(v->ptr, v->len, INT64_MAX, &u) || u == 0)
        return FAIL_META(err, CODEC_ERR_BAD_VALUE, CODEC_META_TIMESTAMP,
                         "must be decimal microseconds since the epoch, > 0");
    out->timestamp_us = (int64_t)u;

    v = &meta[CODEC_META_MESSAGE_TYPE];
    if (!v->ptr)
        return FAIL_META(err, CODEC_ERR_MISSING_FIELD, CODEC_META_MESSAGE_TYPE, "required");
    if (slice_eq(v->ptr, v->len, "request"))
        out->type = CODEC_MSG_REQUEST;
    else if (slice_eq(v->ptr, v->len, "response"))
        out->type = CODEC_MSG_RESPONSE;
    else
        return FAIL_META(err, CODEC_ERR_BAD_VALUE, CODEC_META_MESSAGE_TYPE,
                         "must be request or response");

    v = &meta[CODEC_META_TRIGGER_POINT];
    if (!v->ptr)
        return FAIL_META(err, CODEC_ERR_MISSING_FIELD, CODEC_META_TRIGGER_POINT, "required");
    out->trigger = parse_trigger(v->ptr, v->len);
    if (out->trigger == CODEC_TRIGGER_UNKNOWN)
        return FAIL_META(err, CODEC_ERR_BAD_VALUE, CODEC_META_TRIGGER_POINT,
                         "must be rx-request, tx-request, rx-response or tx-response");

    v = &meta[CODEC_META_NF_TYPE];
    if (!v->ptr)
        return FAIL_META(err, CODEC_ERR_MISSING_FIELD, CODEC_META_NF_TYPE, "required");
    out->nf = codec_nf_parse(v->ptr, v->len);
    if (out->nf == CODEC_NF_UNKNOWN)
        return FAIL_META(err, CODEC_ERR_BAD_VALUE, CODEC_META_NF_TYPE,
                         "must be SCP, NRF, SEPP, BSF, PCF or NON_NF");
    return CODEC_OK;
}

/* Optional metadata, in enum order (the first bad one is the one reported). */
static inline codec_reason_t check_optional_meta(codec_msg_t *out, codec_error_t *err)
{
    uint64_t u;
    for (int m = CODEC_META_NF_INSTANCE; m < CODEC_META__COUNT; m++) {
        const codec_slice_t *v = &out->meta[m];
        if (!v->ptr)
            continue;
        switch (m) {
        case CODEC_META_SRC_ADDR:
        case CODEC_META_DST_ADDR:
            if (!valid_addr(v->ptr, v->len))
                return FAIL_META(err, CODEC_ERR_BAD_VALUE, m,
                                 "must be host:port or [ipv6]:port, port 1..65535");
            break;
        case CODEC_META_SEQ:
            if (!parse_dec(v->ptr, v->len, UINT64_MAX, &out->seq))
                return FAIL_META(err, CODEC_ERR_BAD_VALUE, m, "must be an unsigned decimal");
            break;
        case CODEC_META_AGG_SEQ:
            if (!parse_dec(v->ptr, v->len, UINT64_MAX, &out->agg_seq))
                return FAIL_META(err, CODEC_ERR_BAD_VALUE, m, "must be an unsigned decimal");
            break;
        case CODEC_META_AGG_TIMESTAMP:
            if (!parse_dec(v->ptr, v->len, INT64_MAX, &u) || u == 0)
                return FAIL_META(err, CODEC_ERR_BAD_VALUE, m,
                                 "must be decimal microseconds since the epoch, > 0");
            out->agg_timestamp_us = (int64_t)u;
            break;
        case CODEC_META_ORIGIN:
            if (!valid_origin(v->ptr, v->len))
                return FAIL_META(err, CODEC_ERR_BAD_VALUE, m,
                                 "must be <topic>/<partition>/<offset>");
            break;
        default:
            if (v->len == 0 || !valid_meta_text(v->ptr, v->len))
                return FAIL_META(err, CODEC_ERR_BAD_VALUE, m,
                                 "must be non-empty text without control characters");
            break;
        }
    }
    return CODEC_OK;
}

/* The pseudo-headers a copy of its type needs, then :method and :path where present. */
static inline codec_reason_t check_request_pseudo(codec_msg_t *out, unsigned pseudo,
                                                  codec_error_t *err)
{
    if (out->type == CODEC_MSG_REQUEST) {
        if (!(pseudo & PSEUDO_METHOD))
            return fail(err, CODEC_ERR_MISSING_FIELD, ":method", 7, "a request copy needs it");
        if (!(pseudo & PSEUDO_PATH))
            return fail(err, CODEC_ERR_MISSING_FIELD, ":path", 5, "a request copy needs it");
    } else if (!(pseudo & PSEUDO_STATUS)) {
        return fail(err, CODEC_ERR_MISSING_FIELD, ":status", 7, "a response copy needs it");
    }
    if (out->method.ptr) {
        bool ok = out->method.len > 0;
        for (size_t i = 0; ok && i < out->method.len; i++) {
            unsigned char c = (unsigned char)out->method.ptr[i];
            ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '-' || c == '_';
        }
        if (!ok)
            return fail(err, CODEC_ERR_BAD_VALUE, ":method", 7, "must be an HTTP method token");
    }
    if (out->path.ptr) {
        const codec_slice_t *p = &out->path;
        if (p->len == 0 || !(p->ptr[0] == '/' || slice_eq(p->ptr, p->len, "*")))
            return fail(err, CODEC_ERR_BAD_VALUE, ":path", 5, "must start with '/' (or be '*')");
        for (size_t i = 0; i < p->len; i++) {
            unsigned char c = (unsigned char)p->ptr[i];
            if (c <= 0x20 || c >= 0x7f)
                return fail(err, CODEC_ERR_BAD_VALUE, ":path", 5,
                            "space, control or non-ASCII byte at %zu", i);
        }
    }
    return CODEC_OK;
}

/* :status where present, then the trigger point against the copy's type. */
static inline codec_reason_t check_status_trigger(codec_msg_t *out, unsigned pseudo,
                                                  codec_error_t *err)
{
    bool is_req = out->type == CODEC_MSG_REQUEST;
    if (pseudo & PSEUDO_STATUS) {
        uint64_t u;
        codec_slice_t st = {0};
        for (size_t i = 0; i < out->n_http; i++)
            if (slice_eq(out->http[i].name.ptr, out->http[i].name.len, ":status"))
                st = out->http[i].value;
        if (st.len != 3 || !parse_dec(st.ptr, 3, 599, &u) || u < 100)
            return fail(err, CODEC_ERR_BAD_VALUE, ":status", 7, "must be 3 digits, 100..599");
        out->status = (int)u;
        if (is_req)
            return fail(err, CODEC_ERR_INCONSISTENT, ":status", 7,
                        "a request copy cannot carry :status");
    }
    if (trigger_is_request(out->trigger) != is_req)
        return FAIL_META(err, CODEC_ERR_INCONSISTENT, CODEC_META_TRIGGER_POINT,
                         "trigger point %s does not fit a %s copy",
                         codec_trigger_name(out->trigger), codec_msg_type_name(out->type));
    return CODEC_OK;
}

/* Field checks after all headers are sorted, in the documented order: the first failing
 * step's error is the copy's. */
static codec_reason_t check_fields(codec_msg_t *out, unsigned pseudo, codec_error_t *err)
{
    codec_reason_t r;
    if ((r = check_correlation_id(out, err)) != CODEC_OK ||
        (r = check_required_meta(out, err)) != CODEC_OK ||
        (r = check_optional_meta(out, err)) != CODEC_OK ||
        (r = check_request_pseudo(out, pseudo, err)) != CODEC_OK)
        return r;
    return check_status_trigger(out, pseudo, err);
}

codec_reason_t codec_decode_parts(codec_msg_t *out, const void *key, size_t key_len,
                                  const void *value, size_t value_len,
                                  const rd_kafka_headers_t *hdrs, codec_error_t *err)
{
    return codec_decode_parts_limited(out, key, key_len, value, value_len, hdrs, NULL, err);
}

/* What both record forms check first: the key and the body, in the documented order. */
static codec_reason_t decode_start(codec_msg_t *out, const void *key, size_t key_len,
                                   const void *value, size_t value_len, const codec_limits_t *l,
                                   codec_error_t *err)
{
    size_t max_body = l && l->max_body ? l->max_body : CODEC_DEFAULT_MAX_BODY;
    msg_reset(out);
    if (err) {
        err->reason = CODEC_OK;
        err->field[0] = '\0';
        err->detail[0] = '\0';
    }
    if (key && key_len > 0) {
        if (key_len > CODEC_MAX_KEY)
            return fail(err, CODEC_ERR_OVERSIZED, "key", 3, "key of %zu bytes (max %d)", key_len,
                        CODEC_MAX_KEY);
        if (!valid_correlation_id(key, key_len))
            return fail(err, CODEC_ERR_BAD_VALUE, "key", 3, "key must be 1..%d visible ASCII bytes",
                        CODEC_MAX_KEY);
        out->key = (codec_slice_t){key, key_len};
    }
    if (value_len > max_body)
        return fail(err, CODEC_ERR_OVERSIZED, "value", 5, "body of %zu bytes (max %zu)", value_len,
                    max_body);
    static const char empty_body[1] = "";
    out->body = (codec_slice_t){value ? (const char *)value : empty_body, value ? value_len : 0};
    return CODEC_OK;
}

/* One header of either form, with the running total of header bytes. */
static codec_reason_t decode_next(codec_msg_t *out, const char *name, size_t nlen, const void *val,
                                  size_t vlen, size_t *total, unsigned *pseudo, codec_error_t *err)
{
    *total += nlen + vlen;
    if (*total > CODEC_MAX_HEADER_BYTES)
        return fail(err, CODEC_ERR_OVERSIZED, "headers", 7, "header names and values pass %d bytes",
                    CODEC_MAX_HEADER_BYTES);
    return decode_header(out, name, nlen, val, vlen, pseudo, err);
}

codec_reason_t codec_decode_parts_limited(codec_msg_t *out, const void *key, size_t key_len,
                                          const void *value, size_t value_len,
                                          const rd_kafka_headers_t *hdrs, const codec_limits_t *l,
                                          codec_error_t *err)
{
    codec_reason_t r = decode_start(out, key, key_len, value, value_len, l, err);
    if (r != CODEC_OK)
        return r;
    unsigned pseudo = 0;
    size_t total = 0;
    if (hdrs) {
        const char *name;
        const void *val;
        size_t vlen;
        for (size_t idx = 0;
             rd_kafka_header_get_all(hdrs, idx, &name, &val, &vlen) == RD_KAFKA_RESP_ERR_NO_ERROR;
             idx++) {
            r = decode_next(out, name, strlen(name), val, vlen, &total, &pseudo, err);
            if (r != CODEC_OK)
                return r;
        }
    }
    return check_fields(out, pseudo, err);
}

codec_reason_t codec_decode_frame_limited(codec_msg_t *out, const void *data, size_t len,
                                          const codec_limits_t *l, codec_error_t *err)
{
    frame_parser_t fp;
    frame_t f;
    frame_record_t rec;
    frame_record_iter_t it;
    size_t used = 0;
    msg_reset(out);
    frame_parser_init(&fp, len > UINT32_MAX ? UINT32_MAX : (uint32_t)len, false);
    frame_status_t st = frame_parse(&fp, data, len, &f, &used);
    if (st != FRAME_OK || used != len || f.hdr.type != FRAME_TYPE_DATA || f.record_count != 1)
        return fail(err, CODEC_ERR_BAD_VALUE, "value", 5, "not one copy in an NDD frame: %s",
                    st == FRAME_ERROR               ? fp.error
                    : st == FRAME_NEED_MORE         ? "truncated frame"
                    : used != len                   ? "bytes after the frame"
                    : f.hdr.type != FRAME_TYPE_DATA ? "not a DATA frame"
                                                    : "record count is not 1");
    frame_records(&f, &it);
    if (!frame_record_next(&it, &rec))
        return fail(err, CODEC_ERR_BAD_VALUE, "value", 5, "frame record unreadable");
    codec_reason_t r =
        decode_start(out, rec.key.ptr, rec.key.len, rec.body.ptr, rec.body.len, l, err);
    if (r != CODEC_OK)
        return r;
    out->framed = true;
    unsigned pseudo = 0;
    size_t total = 0;
    frame_header_iter_t hi;
    codec_slice_t name, value;
    frame_headers(&rec, &hi);
    while (frame_header_next(&hi, &name, &value)) {
        r = decode_next(out, name.ptr, name.len, value.ptr, value.len, &total, &pseudo, err);
        if (r != CODEC_OK)
            return r;
    }
    return check_fields(out, pseudo, err);
}

bool codec_record_is_frame(const rd_kafka_message_t *msg)
{
    /* A record in the header form always has headers (the required metadata), so a value
     * that starts with the frame magic is a frame only on a record without any: a copy whose
     * body happens to start with "NDD1" is never mistaken for one. */
    rd_kafka_headers_t *hdrs = NULL;
    return msg->len >= FRAME_HEADER_LEN && msg->payload &&
           buf_rd_be32(msg->payload) == FRAME_MAGIC &&
           rd_kafka_message_headers(msg, &hdrs) == RD_KAFKA_RESP_ERR__NOENT;
}

codec_reason_t codec_decode_main_limited(codec_msg_t *out, const rd_kafka_message_t *msg,
                                         const codec_limits_t *l, codec_error_t *err)
{
    if (codec_record_is_frame(msg))
        return codec_decode_frame_limited(out, msg->payload, msg->len, l, err);
    return codec_decode_limited(out, msg, l, err);
}

codec_reason_t codec_decode(codec_msg_t *out, const rd_kafka_message_t *msg, codec_error_t *err)
{
    return codec_decode_limited(out, msg, NULL, err);
}

codec_reason_t codec_decode_limited(codec_msg_t *out, const rd_kafka_message_t *msg,
                                    const codec_limits_t *l, codec_error_t *err)
{
    rd_kafka_headers_t *hdrs = NULL;
    rd_kafka_resp_err_t e = rd_kafka_message_headers(msg, &hdrs);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR && e != RD_KAFKA_RESP_ERR__NOENT)
        return fail(err, CODEC_ERR_BAD_HEADER, "headers", 7, "unparsable record headers: %s",
                    rd_kafka_err2str(e));
    return codec_decode_parts_limited(out, msg->key, msg->key_len, msg->payload, msg->len, hdrs, l,
                                      err);
}

/* ---- lookup ---- */

bool codec_msg_field(const codec_msg_t *m, const char *name, size_t name_len, codec_slice_t *out)
{
    if (name_len > 0 && name[0] == '@') {
        int i = codec_meta_lookup(name, name_len);
        if (i >= 0) {
            if (!m->meta[i].ptr)
                return false;
            *out = m->meta[i];
            return true;
        }
        for (size_t k = 0; k < m->n_ext; k++) {
            if (m->ext[k].name.len == name_len && memcmp(m->ext[k].name.ptr, name, name_len) == 0) {
                *out = m->ext[k].value;
                return true;
            }
        }
        return false;
    }
    for (size_t k = 0; k < m->n_http; k++) {
        if (m->http[k].name.len == name_len &&
            strncasecmp(m->http[k].name.ptr, name, name_len) == 0) {
            *out = m->http[k].value;
            return true;
        }
    }
    return false;
}

/* ---- records that are not copies ---- */

/* The end of the JSON value starting at p[i] (a string, number, literal, object or array),
 * or 0 when it is malformed or runs past n. Strings are skipped with their escapes; nothing
 * is validated beyond what finding the end needs. */
static size_t raw_json_skip(const char *p, size_t i, size_t n)
{
    int depth = 0;
    do {
        if (i >= n)
            return 0;
        char c = p[i];
        if (c == '"') {
            for (i++; i < n && p[i] != '"'; i++)
                if (p[i] == '\\')
                    i++;
            if (i >= n)
                return 0;
            i++;
        } else if (c == '{' || c == '[') {
            depth++;
            i++;
        } else if (c == '}' || c == ']') {
            if (--depth < 0)
                return 0;
            i++;
        } else if (depth > 0) {
            i++; /* inside a container: separators, whitespace, scalars */
        } else {
            while (i < n && p[i] != ',' && p[i] != '}' && p[i] != ']' && p[i] != ' ' &&
                   p[i] != '\t' && p[i] != '\n' && p[i] != '\r')
                i++;
        }
    } while (depth > 0);
    return i;
}

static size_t raw_json_ws(const char *p, size_t i, size_t n)
{
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
        i++;
    return i;
}

void codec_fields_raw(codec_msg_t *m, const rd_kafka_message_t *rkm)
{
    rd_kafka_headers_t *h = NULL;
    if (rd_kafka_message_headers(rkm, &h) != RD_KAFKA_RESP_ERR_NO_ERROR)
        h = NULL;
    codec_fields_raw_parts(m, rkm->key, rkm->key_len, rkm->payload, rkm->len, h);
}

void codec_fields_raw_parts(codec_msg_t *m, const void *key, size_t key_len, const void *value,
                            size_t value_len, const rd_kafka_headers_t *h)
{
    msg_reset(m);
    m->key = (codec_slice_t){key, key_len};
    m->body = (codec_slice_t){value ? value : "", value_len};
    if (key_len)
        m->meta[CODEC_META_CORRELATION_ID] = m->key;
    if (h) {
        const char *name;
        const void *val;
        size_t len;
        for (size_t i = 0;
             rd_kafka_header_get_all(h, i, &name, &val, &len) == RD_KAFKA_RESP_ERR_NO_ERROR; i++) {
            codec_slice_t v = {val ? val : "", len};
            int meta = codec_meta_lookup(name, strlen(name));
            if (meta >= 0)
                m->meta[meta] = v;
            else if (name[0] == '@' && m->n_ext < CODEC_MAX_EXT_HEADERS)
                m->ext[m->n_ext++] = (codec_header_t){{name, strlen(name)}, v};
            else if (name[0] != '@' && m->n_http < CODEC_MAX_HTTP_HEADERS)
                m->http[m->n_http++] = (codec_header_t){{name, strlen(name)}, v};
        }
    }
    /* A JSON object value (an xDR): its top-level scalar members, named as in the JSON. */
    const char *p = m->body.ptr;
    size_t n = m->body.len, i = raw_json_ws(p, 0, n);
    if (i >= n || p[i] != '{')
        return;
    i = raw_json_ws(p, i + 1, n);
    while (i < n && p[i] == '"' && m->n_http < CODEC_MAX_HTTP_HEADERS) {
        size_t ks = i + 1, ke = ks;
        while (ke < n && p[ke] != '"' && p[ke] != '\\')
            ke++;
        size_t kend = raw_json_skip(p, i, n); /* the key as a string, escapes included */
        if (!kend)
            return;
        bool plain_key = ke == kend - 1 && ke > ks;
        i = raw_json_ws(p, kend, n);
        if (i >= n || p[i] != ':')
            return;
        size_t vs = raw_json_ws(p, i + 1, n), ve = raw_json_skip(p, vs, n);
        if (!ve)
            return;
        codec_slice_t v = {NULL, 0};
        if (p[vs] == '"' && !memchr(p + vs + 1, '\\', ve - vs - 2))
            v = (codec_slice_t){p + vs + 1, ve - vs - 2}; /* a string without escapes */
        else if (p[vs] != '"' && p[vs] != '{' && p[vs] != '[' && strncmp(p + vs, "null", 4))
            v = (codec_slice_t){p + vs, ve - vs}; /* a number, true, false */
        if (plain_key && v.ptr)
            m->http[m->n_http++] = (codec_header_t){{p + ks, ke - ks}, v};
        i = raw_json_ws(p, ve, n);
        if (i < n && p[i] == ',')
            i = raw_json_ws(p, i + 1, n);
        else
            return;
    }
}
