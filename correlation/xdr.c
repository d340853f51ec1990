/* xDR derivations (service/operation, subscriber ids) and encodings; docs/xdr.md. */
#include "xdr.h"

#include <string.h>

#include "codec.h"

static const char *const xdr_completion_names[XDR_COMPLETION__COUNT] = {
    [XDR_COMPLETE] = "complete",
    [XDR_TIMEOUT] = "timeout",
    [XDR_EVICTED] = "evicted",
    [XDR_REVOKED] = "revoked",
};

const char *xdr_completion_name(xdr_completion_t c)
{
    if ((unsigned)c >= XDR_COMPLETION__COUNT)
        return "unknown";
    return xdr_completion_names[c];
}

/* ---- path and body derivations ---- */

static bool has_prefix(const char *p, size_t len, const char *lit)
{
    size_t n = strlen(lit);
    return len >= n && memcmp(p, lit, n) == 0;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_hex(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Identifier prefixes of TS 29.571 (SUPI, GPSI, SUCI, PEI, ...) and similar. */
static const char *const xdr_id_prefixes[] = {"imsi-", "nai-",    "msisdn-", "extid-", "suci-",
                                              "imei-", "imeisv-", "gli-",    "gci-",   "mac-"};

/* A path segment that names an instance rather than a resource or an operation. */
static bool segment_is_identifier(const char *s, size_t len)
{
    for (size_t i = 0; i < sizeof xdr_id_prefixes / sizeof xdr_id_prefixes[0]; i++)
        if (has_prefix(s, len, xdr_id_prefixes[i]))
            return true;
    size_t digits = 0, hex_or_dash = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '%' || c == '=' || c == '@' || c == ':' || c == '.' || c == '+')
            return true;
        digits += is_digit(c);
        hex_or_dash += is_hex(c) || c == '-';
    }
    if (digits == len)
        return true;
    if (len >= 16 && hex_or_dash == len && digits > 0)
        return true; /* UUID, hex id */
    return digits >= 4;
}

static bool segment_is_version(const char *s, size_t len)
{
    if (len < 2 || s[0] != 'v')
        return false;
    for (size_t i = 1; i < len; i++)
        if (!is_digit(s[i]))
            return false;
    return true;
}

static size_t path_length(const char *path, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (path[i] == '?' || path[i] == '#')
            return i;
    return len;
}

void xdr_path_service(const char *path, size_t len, codec_slice_t *service,
                      codec_slice_t *operation)
{
    *service = (codec_slice_t){0};
    *operation = (codec_slice_t){0};
    len = path_length(path, len);
    if (len < 2 || path[0] != '/' || path[1] == '/')
        return;
    size_t seg = 0;
    const char *p = path + 1, *end = path + len;
    *operation = (codec_slice_t){path + len, 0};
    while (p < end) {
        const char *slash = memchr(p, '/', (size_t)(end - p));
        size_t n = slash ? (size_t)(slash - p) : (size_t)(end - p);
        if (seg == 0)
            *service = (codec_slice_t){p, n};
        else if (n > 0 && !(seg == 1 && segment_is_version(p, n)) && !segment_is_identifier(p, n))
            *operation = (codec_slice_t){p, n};
        seg++;
        if (!slash)
            break;
        p = slash + 1;
    }
}

/* Length of an identifier token starting at p: up to a delimiter of paths, queries or JSON. */
static size_t token_len(const char *p, const char *end)
{
    const char *q = p;
    while (q < end && *q != '/' && *q != '?' && *q != '&' && *q != '#' && *q != ';' && *q != '"' &&
           *q != '\\' && *q != ',' && (unsigned char)*q > 0x20 && q - p < 64)
        q++;
    return (size_t)(q - p);
}

/* imsi-/msisdn- need 5..15 digits; nai-/extid- need something after the prefix. */
static bool token_valid(const char *p, size_t n, size_t plen, bool digits_only)
{
    if (n <= plen)
        return false;
    if (!digits_only)
        return true;
    if (n - plen < 5 || n - plen > 15)
        return false;
    for (size_t i = plen; i < n; i++)
        if (!is_digit(p[i]))
            return false;
    return true;
}

typedef struct xdr_sub_prefix {
    const char *prefix;
    bool supi; /* else gpsi */
    bool digits_only;
} xdr_sub_prefix_t;

static const xdr_sub_prefix_t xdr_sub_prefixes[] = {
    {"imsi-", true, true},
    {"nai-", true, false},
    {"msisdn-", false, true},
    {"extid-", false, false},
};

void xdr_find_subscriber_path(const char *path, size_t len, codec_slice_t *supi,
                              codec_slice_t *gpsi)
{
    const char *end = path + len;
    for (size_t i = 0; i < len; i++) {
        if (i > 0 && path[i - 1] != '/' && path[i - 1] != '=')
            continue;
        for (size_t k = 0; k < sizeof xdr_sub_prefixes / sizeof xdr_sub_prefixes[0]; k++) {
            const xdr_sub_prefix_t *sp = &xdr_sub_prefixes[k];
            codec_slice_t *dst = sp->supi ? supi : gpsi;
            if (dst->ptr || !has_prefix(path + i, len - i, sp->prefix))
                continue;
            size_t n = token_len(path + i, end);
            if (token_valid(path + i, n, strlen(sp->prefix), sp->digits_only))
                *dst = (codec_slice_t){path + i, n};
        }
    }
}

void xdr_find_subscriber_body(const char *body, size_t len, size_t scan_max, codec_slice_t *supi,
                              codec_slice_t *gpsi)
{
    if (scan_max == 0)
        scan_max = 4096;
    if (len > scan_max)
        len = scan_max;
    const char *end = body + len;
    /* JSON string values that start with a subscriber prefix: "supi":"imsi-...",
     * "gpsis":["msisdn-..."], ... The earliest occurrence of each kind wins. */
    for (size_t k = 0; k < sizeof xdr_sub_prefixes / sizeof xdr_sub_prefixes[0]; k++) {
        const xdr_sub_prefix_t *sp = &xdr_sub_prefixes[k];
        codec_slice_t *dst = sp->supi ? supi : gpsi;
        if (dst->ptr)
            continue;
        char needle[16];
        size_t nlen = strlen(sp->prefix);
        needle[0] = '"';
        memcpy(needle + 1, sp->prefix, nlen);
        const char *p = body;
        while (p < end) {
            const char *hit = memmem(p, (size_t)(end - p), needle, nlen + 1);
            if (!hit)
                break;
            size_t n = token_len(hit + 1, end);
            if (hit + 1 + n < end && hit[1 + n] == '"' &&
                token_valid(hit + 1, n, nlen, sp->digits_only)) {
                *dst = (codec_slice_t){hit + 1, n};
                break;
            }
            p = hit + 1;
        }
    }
}

/* ---- JSON ---- */

/* The encoder writes straight into out's storage: member names are literals copied with a
 * constant length, numbers are formatted by hand and text fields are copied as they are
 * unless they hold a byte that JSON needs escaped. printf-style formatting (parsing the
 * format, locale, vararg handling) cost several percent of ndd-correlation's CPU. The bytes
 * are the same as before: tests/unit/test_xdr.c compares them with a printf reference. */

typedef struct xdr_lit {
    const char *s;
    size_t n;
} xdr_lit_t;

#define XDR_LIT(str)                                                                               \
    {                                                                                              \
        str, sizeof(str) - 1                                                                       \
    }

/* ",\"<name>\":" per text field after the first. */
static const xdr_lit_t xdr_json_keys[XDR_S__COUNT] = {
    [XDR_S_NF_INSTANCE] = XDR_LIT(",\"nf_instance\":"),
    [XDR_S_CONSUMER_ID] = XDR_LIT(",\"consumer_id\":"),
    [XDR_S_CONSUMER_FQDN] = XDR_LIT(",\"consumer_fqdn\":"),
    [XDR_S_PRODUCER_ID] = XDR_LIT(",\"producer_id\":"),
    [XDR_S_PRODUCER_FQDN] = XDR_LIT(",\"producer_fqdn\":"),
    [XDR_S_METHOD] = XDR_LIT(",\"method\":"),
    [XDR_S_PATH] = XDR_LIT(",\"path\":"),
    [XDR_S_SERVICE] = XDR_LIT(",\"service\":"),
    [XDR_S_OPERATION] = XDR_LIT(",\"operation\":"),
    [XDR_S_SUPI] = XDR_LIT(",\"supi\":"),
    [XDR_S_GPSI] = XDR_LIT(",\"gpsi\":"),
};

/* Timestamp members and "missing" entries per codec_trigger_t (codec_trigger_name()). */
static const xdr_lit_t xdr_json_ts_keys[CODEC_TRIGGER__COUNT] = {
    [CODEC_TRIGGER_RX_REQUEST] = XDR_LIT(",\"timestamps_us\":{\"rx-request\":"),
    [CODEC_TRIGGER_TX_REQUEST] = XDR_LIT(",\"tx-request\":"),
    [CODEC_TRIGGER_RX_RESPONSE] = XDR_LIT(",\"rx-response\":"),
    [CODEC_TRIGGER_TX_RESPONSE] = XDR_LIT(",\"tx-response\":"),
};
static const xdr_lit_t xdr_json_missing[CODEC_TRIGGER__COUNT] = {
    [CODEC_TRIGGER_RX_REQUEST] = XDR_LIT(",\"rx-request\""),
    [CODEC_TRIGGER_TX_REQUEST] = XDR_LIT(",\"tx-request\""),
    [CODEC_TRIGGER_RX_RESPONSE] = XDR_LIT(",\"rx-response\""),
    [CODEC_TRIGGER_TX_RESPONSE] = XDR_LIT(",\"tx-response\""),
};

/* Room for n more bytes: a compare when the up-front reservation succeeded; otherwise (out
 * near its ceiling) a growth that fails only when the bytes really do not fit. */
static inline int jw_room(buf_t *out, size_t n)
{
    return out->cap - out->len >= n ? 0 : buf_reserve(out, n);
}

static inline int jw_put(buf_t *out, const void *p, size_t n)
{
    if (jw_room(out, n) != 0)
        return -1;
    memcpy(out->data + out->len, p, n);
    out->len += n;
    return 0;
}

static inline int jw_lit(buf_t *out, xdr_lit_t l)
{
    return jw_put(out, l.s, l.n);
}

#define JW(out, str) jw_put(out, str, sizeof(str) - 1)

/* Decimal digits of u, written backwards ending at end; returns the count. Two digits per
 * division halves the divisions of the naive loop. */
static size_t jw_digits(char *end, uint64_t u)
{
    static const char pairs[201] = "00010203040506070809"
                                   "10111213141516171819"
                                   "20212223242526272829"
                                   "30313233343536373839"
                                   "40414243444546474849"
                                   "50515253545556575859"
                                   "60616263646566676869"
                                   "70717273747576777879"
                                   "80818283848586878889"
                                   "90919293949596979899";
    char *p = end;
    while (u >= 100) {
        unsigned r = (unsigned)(u % 100);
        u /= 100;
        p -= 2;
        memcpy(p, pairs + 2 * r, 2);
    }
    if (u >= 10) {
        p -= 2;
        memcpy(p, pairs + 2 * u, 2);
    } else {
        *--p = (char)('0' + u);
    }
    return (size_t)(end - p);
}

/* v as printf's %PRId64 writes it (INT64_MIN included). */
static int jw_int(buf_t *out, int64_t v)
{
    char tmp[24];
    char *end = tmp + sizeof tmp;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    size_t n = jw_digits(end, u);
    if (v < 0)
        *(end - ++n) = '-';
    return jw_put(out, end - n, n);
}

/* An int64 field: null when XDR_NONE. */
static int jw_opt(buf_t *out, int64_t v)
{
    return v == XDR_NONE ? JW(out, "null") : jw_int(out, v);
}

/* A text field: null when absent, else a JSON string. The plain prefix is copied directly;
 * buf_append_json_escaped takes over from the first byte that needs escaping (it only looks
 * forward, so the bytes equal escaping the whole value). */
static int jw_str(buf_t *out, codec_slice_t v)
{
    if (!v.ptr)
        return JW(out, "null");
    if (jw_room(out, v.len + 2) != 0)
        return -1;
    const uint8_t *s = (const uint8_t *)v.ptr;
    size_t run = buf_json_plain_run(s, v.len);
    uint8_t *d = out->data + out->len;
    d[0] = '"';
    memcpy(d + 1, s, run);
    out->len += run + 1;
    if (run < v.len && buf_append_json_escaped(out, s + run, v.len - run) != 0)
        return -1;
    return JW(out, "\"");
}

static xdr_lit_t jw_nf_value(codec_nf_t nf)
{
    static const xdr_lit_t names[CODEC_NF__COUNT] = {
        [CODEC_NF_UNKNOWN] = XDR_LIT(",\"nf_type\":\"unknown\""),
        [CODEC_NF_SCP] = XDR_LIT(",\"nf_type\":\"SCP\""),
        [CODEC_NF_NRF] = XDR_LIT(",\"nf_type\":\"NRF\""),
        [CODEC_NF_SEPP] = XDR_LIT(",\"nf_type\":\"SEPP\""),
        [CODEC_NF_BSF] = XDR_LIT(",\"nf_type\":\"BSF\""),
        [CODEC_NF_PCF] = XDR_LIT(",\"nf_type\":\"PCF\""),
        [CODEC_NF_NON_NF] = XDR_LIT(",\"nf_type\":\"NON_NF\""),
    };
    return names[(unsigned)nf < CODEC_NF__COUNT ? nf : CODEC_NF_UNKNOWN];
}

static xdr_lit_t jw_completion_value(xdr_completion_t c)
{
    static const xdr_lit_t names[XDR_COMPLETION__COUNT + 1] = {
        [XDR_COMPLETE] = XDR_LIT(",\"completion\":\"complete\",\"missing\":["),
        [XDR_TIMEOUT] = XDR_LIT(",\"completion\":\"timeout\",\"missing\":["),
        [XDR_EVICTED] = XDR_LIT(",\"completion\":\"evicted\",\"missing\":["),
        [XDR_REVOKED] = XDR_LIT(",\"completion\":\"revoked\",\"missing\":["),
        [XDR_COMPLETION__COUNT] = XDR_LIT(",\"completion\":\"unknown\",\"missing\":["),
    };
    return names[(unsigned)c < XDR_COMPLETION__COUNT ? c : XDR_COMPLETION__COUNT];
}

int xdr_encode_json(const xdr_t *x, buf_t *out)
{
    size_t start = out->len;
    /* One reservation for the whole record when no text field needs escaping. If out is too
     * close to its ceiling for the worst case, the writes below still succeed as long as
     * the actual bytes fit (the same limit as the printf encoder had). */
    size_t need = XDR_JSON_FIXED_MAX;
    for (int i = 0; i < XDR_S__COUNT; i++)
        if (x->s[i].ptr)
            need += x->s[i].len;
    (void)buf_reserve(out, need);

    int rc = JW(out, "{\"correlation_id\":");
    rc |= jw_str(out, x->s[XDR_S_CORRELATION_ID]);
    rc |= jw_lit(out, jw_nf_value(x->nf));
    for (int i = XDR_S_NF_INSTANCE; i < XDR_S__COUNT; i++) {
        rc |= jw_lit(out, xdr_json_keys[i]);
        rc |= jw_str(out, x->s[i]);
    }
    rc |= JW(out, ",\"status_code\":");
    rc |= jw_opt(out, x->status_code ? x->status_code : XDR_NONE);
    for (int t = CODEC_TRIGGER_RX_REQUEST; t < CODEC_TRIGGER__COUNT; t++) {
        rc |= jw_lit(out, xdr_json_ts_keys[t]);
        rc |= jw_opt(out, x->ts_us[t]);
    }
    rc |= JW(out, "},\"latency_us\":{\"rx\":");
    rc |= jw_opt(out, x->latency_rx_us);
    rc |= JW(out, ",\"tx\":");
    rc |= jw_opt(out, x->latency_tx_us);
    rc |= JW(out, "},\"request_bytes\":");
    rc |= jw_opt(out, x->request_bytes);
    rc |= JW(out, ",\"response_bytes\":");
    rc |= jw_opt(out, x->response_bytes);
    rc |= jw_lit(out, jw_completion_value(x->completion));
    bool first = true;
    for (int t = CODEC_TRIGGER_RX_REQUEST; t < CODEC_TRIGGER__COUNT; t++) {
        if (!(x->missing & (1u << t)))
            continue;
        xdr_lit_t m = xdr_json_missing[t];
        rc |= jw_put(out, m.s + first, m.n - first); /* no comma before the first */
        first = false;
    }
    rc |= JW(out, "],\"duplicates\":");
    rc |= jw_int(out, x->duplicates);
    rc |= (x->flags & XDR_FLAG_TRUNCATED) ? JW(out, ",\"truncated\":true,\"partition\":")
                                          : JW(out, ",\"truncated\":false,\"partition\":");
    rc |= jw_int(out, x->partition);
    rc |= JW(out, ",\"first_offset\":");
    rc |= jw_int(out, x->first_offset);
    rc |= JW(out, "}");
    if (rc) {
        out->len = start;
        return -1;
    }
    return 0;
}

/* ---- binary ---- */

#define XDR_BIN_FIXED 92
#define XDR_BIN_ABSENT 0xFFFFu

int xdr_encode_binary(const xdr_t *x, buf_t *out)
{
    size_t start = out->len;
    int rc = buf_append_be32(out, XDR_BIN_MAGIC);
    rc |= buf_append_u8(out, XDR_BIN_VERSION);
    rc |= buf_append_u8(out, (uint8_t)x->completion);
    rc |= buf_append_u8(out, (uint8_t)x->nf);
    rc |= buf_append_u8(out, x->seen);
    rc |= buf_append_u8(out, x->missing);
    rc |= buf_append_u8(out, x->flags);
    rc |= buf_append_be16(out, (uint16_t)x->status_code);
    rc |= buf_append_be32(out, x->duplicates);
    rc |= buf_append_be32(out, (uint32_t)x->partition);
    rc |= buf_append_be64(out, (uint64_t)x->first_offset);
    for (int t = CODEC_TRIGGER_RX_REQUEST; t < CODEC_TRIGGER__COUNT; t++)
        rc |= buf_append_be64(out, (uint64_t)x->ts_us[t]);
    rc |= buf_append_be64(out, (uint64_t)x->latency_rx_us);
    rc |= buf_append_be64(out, (uint64_t)x->latency_tx_us);
    rc |= buf_append_be64(out, (uint64_t)x->request_bytes);
    rc |= buf_append_be64(out, (uint64_t)x->response_bytes);
    for (int i = 0; i < XDR_S__COUNT; i++) {
        const codec_slice_t *s = &x->s[i];
        size_t n = s->len < XDR_BIN_ABSENT ? s->len : XDR_BIN_ABSENT - 1;
        if (!s->ptr) {
            rc |= buf_append_be16(out, XDR_BIN_ABSENT);
            continue;
        }
        rc |= buf_append_be16(out, (uint16_t)n);
        rc |= buf_append(out, s->ptr, n);
    }
    if (rc) {
        out->len = start;
        return -1;
    }
    return 0;
}

int xdr_decode_binary(const uint8_t *p, size_t len, xdr_t *x)
{
    if (len < XDR_BIN_FIXED || buf_rd_be32(p) != XDR_BIN_MAGIC || p[4] != XDR_BIN_VERSION ||
        p[5] >= XDR_COMPLETION__COUNT || p[6] >= CODEC_NF__COUNT)
        return -1;
    memset(x, 0, sizeof *x);
    x->completion = (xdr_completion_t)p[5];
    x->nf = (codec_nf_t)p[6];
    x->seen = p[7];
    x->missing = p[8];
    x->flags = p[9];
    x->status_code = buf_rd_be16(p + 10);
    x->duplicates = buf_rd_be32(p + 12);
    x->partition = (int32_t)buf_rd_be32(p + 16);
    x->first_offset = (int64_t)buf_rd_be64(p + 20);
    const uint8_t *q = p + 28;
    x->ts_us[0] = XDR_NONE;
    for (int t = CODEC_TRIGGER_RX_REQUEST; t < CODEC_TRIGGER__COUNT; t++, q += 8)
        x->ts_us[t] = (int64_t)buf_rd_be64(q);
    x->latency_rx_us = (int64_t)buf_rd_be64(q);
    x->latency_tx_us = (int64_t)buf_rd_be64(q + 8);
    x->request_bytes = (int64_t)buf_rd_be64(q + 16);
    x->response_bytes = (int64_t)buf_rd_be64(q + 24);
    q += 32;
    const uint8_t *end = p + len;
    for (int i = 0; i < XDR_S__COUNT; i++) {
        if (end - q < 2)
            return -1;
        uint16_t n = buf_rd_be16(q);
        q += 2;
        if (n == XDR_BIN_ABSENT)
            continue;
        if ((size_t)(end - q) < n)
            return -1;
        x->s[i] = (codec_slice_t){(const char *)q, n};
        q += n;
    }
    return q == end ? 0 : -1;
}
