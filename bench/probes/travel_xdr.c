#include "travel_xdr.h"

#include <string.h>

#include "xdr.h"

/* Nesting allowed inside a skipped value: an xDR has at most one level (timestamps_us,
 * latency_us, missing); deeper input is not an xDR and is refused rather than walked. */
#define TRAVEL_XDR_MAX_DEPTH 16

typedef struct travel_scan {
    const char *p, *end;
} travel_scan_t;

static const char *const travel_xdr_names[TRAVEL_XDR_COMPLETIONS] = {
    "complete", "timeout", "evicted", "revoked", "unknown"};

const char *travel_xdr_completion_name(int completion)
{
    if (completion < 0 || completion >= TRAVEL_XDR_COMPLETIONS)
        completion = TRAVEL_XDR_UNKNOWN;
    return travel_xdr_names[completion];
}

static void travel_ws(travel_scan_t *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static bool travel_expect(travel_scan_t *s, char c)
{
    travel_ws(s);
    if (s->p >= s->end || *s->p != c)
        return false;
    s->p++;
    travel_ws(s);
    return true;
}

/* A string at s->p (opening quote): its raw bytes, escapes left as they are. A quote ends the
 * string unless an odd number of backslashes precedes it. */
static bool travel_string(travel_scan_t *s, const char **str, size_t *len)
{
    if (s->p >= s->end || *s->p != '"')
        return false;
    const char *b = s->p + 1, *q = b;
    for (;;) {
        q = memchr(q, '"', (size_t)(s->end - q));
        if (!q)
            return false;
        size_t bs = 0;
        while (q - bs > b && q[-1 - (ptrdiff_t)bs] == '\\')
            bs++;
        if (bs % 2 == 0)
            break;
        q++;
    }
    *str = b;
    *len = (size_t)(q - b);
    s->p = q + 1;
    return true;
}

static bool travel_delim(char c)
{
    return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* A number or literal (true, false, null): up to the next delimiter. */
static bool travel_scalar(travel_scan_t *s)
{
    const char *b = s->p;
    while (s->p < s->end && !travel_delim(*s->p))
        s->p++;
    return s->p > b;
}

/* Skips one value of any type without building it. */
static bool travel_skip(travel_scan_t *s)
{
    const char *str;
    size_t n;
    if (s->p >= s->end)
        return false;
    if (*s->p == '"')
        return travel_string(s, &str, &n);
    if (*s->p != '{' && *s->p != '[')
        return travel_scalar(s);
    int depth = 0;
    while (s->p < s->end) {
        char c = *s->p;
        if (c == '"') {
            if (!travel_string(s, &str, &n))
                return false;
            continue;
        }
        if (c == '{' || c == '[') {
            if (++depth > TRAVEL_XDR_MAX_DEPTH)
                return false;
        } else if (c == '}' || c == ']') {
            if (--depth == 0) {
                s->p++;
                return true;
            }
        }
        s->p++;
    }
    return false;
}

/* An integer value (timestamps are µs since the epoch): *ok set; not for null, a fraction or
 * exponent, or more than 18 digits (no overflow), the value being skipped all the same. */
static bool travel_int(travel_scan_t *s, int64_t *v, bool *ok)
{
    const char *b = s->p;
    bool neg = s->p < s->end && *s->p == '-';
    if (neg)
        s->p++;
    int64_t x = 0;
    int digits = 0;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9' && digits < 18) {
        x = x * 10 + (*s->p++ - '0');
        digits++;
    }
    bool plain = digits > 0 && (s->p == s->end || travel_delim(*s->p));
    if (!plain) {
        s->p = b;
        *ok = false;
        return travel_skip(s);
    }
    *v = neg ? -x : x;
    *ok = true;
    return true;
}

/* "timestamps_us":{"rx-request":N|null,...}: the latest timestamp into out. */
static bool travel_timestamps(travel_scan_t *s, travel_xdr_t *out)
{
    if (*s->p != '{')
        return travel_skip(s);
    s->p++;
    travel_ws(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return true;
    }
    for (;;) {
        const char *k;
        size_t kn;
        int64_t v;
        bool is_int;
        if (!travel_string(s, &k, &kn) || !travel_expect(s, ':') || s->p >= s->end ||
            !travel_int(s, &v, &is_int))
            return false;
        if (is_int && (!out->has_ts || v > out->ts_us)) {
            out->ts_us = v;
            out->has_ts = true;
        }
        travel_ws(s);
        if (s->p < s->end && *s->p == '}') {
            s->p++;
            return true;
        }
        if (!travel_expect(s, ','))
            return false;
    }
}

static int travel_completion_of(const char *str, size_t n)
{
    for (int i = 0; i < TRAVEL_XDR_UNKNOWN; i++)
        if (strlen(travel_xdr_names[i]) == n && memcmp(travel_xdr_names[i], str, n) == 0)
            return i;
    return TRAVEL_XDR_UNKNOWN;
}

/* One pass over the top-level members; stops as soon as both members are known. */
static travel_xdr_form_t travel_read_json(const char *data, size_t len, travel_xdr_t *out)
{
    travel_scan_t s = {data, data + len};
    bool have_completion = false, have_ts = false;
    if (!travel_expect(&s, '{'))
        return TRAVEL_XDR_NOT;
    if (s.p < s.end && *s.p == '}')
        return TRAVEL_XDR_NOT;
    for (;;) {
        const char *k;
        size_t kn;
        if (!travel_string(&s, &k, &kn) || !travel_expect(&s, ':') || s.p >= s.end)
            break;
        if (kn == 10 && memcmp(k, "completion", 10) == 0) {
            const char *v;
            size_t vn;
            if (*s.p == '"') {
                if (!travel_string(&s, &v, &vn))
                    break;
                out->completion = travel_completion_of(v, vn);
            } else if (!travel_skip(&s)) {
                break;
            }
            have_completion = true;
        } else if (kn == 13 && memcmp(k, "timestamps_us", 13) == 0) {
            if (!travel_timestamps(&s, out))
                break;
            have_ts = true;
        } else if (!travel_skip(&s)) {
            break;
        }
        if (have_completion && have_ts)
            break;
        travel_ws(&s);
        if (s.p >= s.end || *s.p != ',')
            break;
        s.p++;
        travel_ws(&s);
    }
    return have_completion ? TRAVEL_XDR_JSON : TRAVEL_XDR_NOT;
}

travel_xdr_form_t travel_xdr_read(const void *data, size_t len, travel_xdr_t *out)
{
    *out = (travel_xdr_t){.completion = TRAVEL_XDR_UNKNOWN};
    if (!data || len == 0)
        return TRAVEL_XDR_NOT;
    const uint8_t *b = data;
    if (len >= 4 && b[0] == 'X' && b[1] == 'D' && b[2] == 'R' && b[3] == '1') {
        xdr_t x;
        if (xdr_decode_binary(b, len, &x) != 0)
            return TRAVEL_XDR_NOT;
        out->completion =
            (unsigned)x.completion < TRAVEL_XDR_UNKNOWN ? (int)x.completion : TRAVEL_XDR_UNKNOWN;
        for (int t = 0; t < CODEC_TRIGGER__COUNT; t++) {
            if (x.ts_us[t] != XDR_NONE && (!out->has_ts || x.ts_us[t] > out->ts_us)) {
                out->ts_us = x.ts_us[t];
                out->has_ts = true;
            }
        }
        return TRAVEL_XDR_BINARY;
    }
    return travel_read_json(data, len, out);
}
