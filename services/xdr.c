/* xDR derivations (service/operation, subscriber ids) and encodings; docs/xdr.md. */
#include "xdr.h"

#include <inttypes.h>
#include <string.h>

#include "codec.h"

static const char *const xdr_completion_names[XDR_COMPLETION__COUNT] = {
    [XDR_COMPLETE] = "complete",
    [XDR_TIMEOUT] = "timeout",
    [XDR_EVICTED] = "evicted",
    [XDR_REVOKED] = "revoked",
};

static const char *const xdr_str_names[XDR_S__COUNT] = {
    [XDR_S_CORRELATION_ID] = "correlation_id",
    [XDR_S_NF_INSTANCE] = "nf_instance",
    [XDR_S_CONSUMER_ID] = "consumer_id",
    [XDR_S_CONSUMER_FQDN] = "consumer_fqdn",
    [XDR_S_PRODUCER_ID] = "producer_id",
    [XDR_S_PRODUCER_FQDN] = "producer_fqdn",
    [XDR_S_METHOD] = "method",
    [XDR_S_PATH] = "path",
    [XDR_S_SERVICE] = "service",
    [XDR_S_OPERATION] = "operation",
    [XDR_S_SUPI] = "supi",
    [XDR_S_GPSI] = "gpsi",
};

const char *xdr_completion_name(xdr_completion_t c)
{
    if ((unsigned)c >= XDR_COMPLETION__COUNT)
        return "unknown";
    return xdr_completion_names[c];
}

const char *xdr_str_name(xdr_str_t s)
{
    if ((unsigned)s >= XDR_S__COUNT)
        return "unknown";
    return xdr_str_names[s];
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

static int json_str(buf_t *out, const char *name, codec_slice_t v)
{
    if (buf_printf(out, "\"%s\":", name) != 0)
        return -1;
    if (!v.ptr)
        return buf_append_str(out, "null");
    if (buf_append_u8(out, '"') != 0 || buf_append_json_escaped(out, v.ptr, v.len) != 0)
        return -1;
    return buf_append_u8(out, '"');
}

static int json_i64(buf_t *out, const char *name, int64_t v)
{
    if (v == XDR_NONE)
        return buf_printf(out, "\"%s\":null", name);
    return buf_printf(out, "\"%s\":%" PRId64, name, v);
}

int xdr_encode_json(const xdr_t *x, buf_t *out)
{
    int rc = buf_append_u8(out, '{');
    rc |= json_str(out, xdr_str_names[XDR_S_CORRELATION_ID], x->s[XDR_S_CORRELATION_ID]);
    rc |= buf_printf(out, ",\"nf_type\":\"%s\"", codec_nf_name(x->nf));
    for (int i = XDR_S_NF_INSTANCE; i < XDR_S__COUNT; i++) {
        rc |= buf_append_u8(out, ',');
        rc |= json_str(out, xdr_str_names[i], x->s[i]);
    }
    rc |= buf_append_u8(out, ',');
    rc |= json_i64(out, "status_code", x->status_code ? x->status_code : XDR_NONE);
    rc |= buf_append_str(out, ",\"timestamps_us\":{");
    for (int t = CODEC_TRIGGER_RX_REQUEST; t < CODEC_TRIGGER__COUNT; t++) {
        if (t > CODEC_TRIGGER_RX_REQUEST)
            rc |= buf_append_u8(out, ',');
        rc |= json_i64(out, codec_trigger_name((codec_trigger_t)t), x->ts_us[t]);
    }
    rc |= buf_append_str(out, "},\"latency_us\":{");
    rc |= json_i64(out, "rx", x->latency_rx_us);
    rc |= buf_append_u8(out, ',');
    rc |= json_i64(out, "tx", x->latency_tx_us);
    rc |= buf_append_str(out, "},");
    rc |= json_i64(out, "request_bytes", x->request_bytes);
    rc |= buf_append_u8(out, ',');
    rc |= json_i64(out, "response_bytes", x->response_bytes);
    rc |=
        buf_printf(out, ",\"completion\":\"%s\",\"missing\":[", xdr_completion_name(x->completion));
    bool first = true;
    for (int t = CODEC_TRIGGER_RX_REQUEST; t < CODEC_TRIGGER__COUNT; t++) {
        if (!(x->missing & (1u << t)))
            continue;
        rc |= buf_printf(out, "%s\"%s\"", first ? "" : ",", codec_trigger_name((codec_trigger_t)t));
        first = false;
    }
    rc |= buf_printf(out,
                     "],\"duplicates\":%" PRIu32 ",\"truncated\":%s,\"partition\":%" PRId32
                     ",\"first_offset\":%" PRId64 "}",
                     x->duplicates, (x->flags & XDR_FLAG_TRUNCATED) ? "true" : "false",
                     x->partition, x->first_offset);
    return rc ? -1 : 0;
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
