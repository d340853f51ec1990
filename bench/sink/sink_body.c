/* ndd-sink: find the records of a request body and their @seq / @timestamp-us, without
 * allocating (a scanner over the JSON envelope, and the frame parser). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "frame.h"
#include "sink.h"

typedef struct scan {
    const uint8_t *p, *end;
    const char *why;
} scan_t;

#define SCAN_MAX_DEPTH 64

static void scan_ws(scan_t *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

/* A string at s->p: sets [*k, *k+*kl) to its raw inside (escapes not decoded). */
static int scan_str(scan_t *s, const uint8_t **k, size_t *kl)
{
    if (s->p >= s->end || *s->p != '"') {
        s->why = "string expected";
        return -1;
    }
    const uint8_t *start = ++s->p;
    while (s->p < s->end) {
        if (*s->p == '\\') {
            s->p += 2;
            continue;
        }
        if (*s->p == '"') {
            if (k) {
                *k = start;
                *kl = (size_t)(s->p - start);
            }
            s->p++;
            return 0;
        }
        s->p++;
    }
    s->why = "unterminated string";
    return -1;
}

static int scan_skip(scan_t *s, int depth);

/* Called with s->p at a member's value (key NULL in an array), which it consumes; 0 or -1
 * (s->why set). */
typedef int (*scan_member_fn)(scan_t *s, const uint8_t *key, size_t key_len, void *arg);

/* Walks the object or array starting at s->p ('{' or '[' there; close: '}' or ']'), handing
 * each value to member; sep_why: the error when a value is followed by neither ',' nor close.
 * Skipping, reading the envelope and reading its metadata all walk JSON this way. */
static int scan_container(scan_t *s, uint8_t close, scan_member_fn member, void *arg,
                          const char *sep_why)
{
    s->p++;
    scan_ws(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        return 0;
    }
    for (;;) {
        const uint8_t *k = NULL;
        size_t kl = 0;
        scan_ws(s);
        if (close == '}') {
            if (scan_str(s, &k, &kl) != 0)
                return -1;
            scan_ws(s);
            if (s->p >= s->end || *s->p != ':') {
                s->why = "':' expected";
                return -1;
            }
            s->p++;
        }
        if (member(s, k, kl, arg) != 0)
            return -1;
        scan_ws(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        if (s->p < s->end && *s->p == close) {
            s->p++;
            return 0;
        }
        s->why = sep_why;
        return -1;
    }
}

/* Skips a member of a container at *depth. */
static int scan_skip_member(scan_t *s, const uint8_t *key, size_t key_len, void *arg)
{
    (void)key, (void)key_len;
    return scan_skip(s, *(const int *)arg + 1);
}

static int scan_skip_container(scan_t *s, int depth, uint8_t close)
{
    if (depth > SCAN_MAX_DEPTH) {
        s->why = "nested too deep";
        return -1;
    }
    return scan_container(s, close, scan_skip_member, &depth, "',' or end of container expected");
}

static int scan_skip(scan_t *s, int depth)
{
    scan_ws(s);
    if (s->p >= s->end) {
        s->why = "value expected";
        return -1;
    }
    switch (*s->p) {
    case '{':
        return scan_skip_container(s, depth, '}');
    case '[':
        return scan_skip_container(s, depth, ']');
    case '"':
        return scan_str(s, NULL, NULL);
    default: {
        /* number, true, false, null: a run of token characters */
        const uint8_t *start = s->p;
        while (s->p < s->end && strchr("0123456789+-.eEtrufalsn", *s->p) && *s->p)
            s->p++;
        if (s->p == start) {
            s->why = "unexpected character";
            return -1;
        }
        return 0;
    }
    }
}

/* A non-negative decimal integer value (bare or quoted). */
static int uint_value(scan_t *s, uint64_t *out, bool *ok)
{
    scan_ws(s);
    const uint8_t *start = s->p;
    bool quoted = s->p < s->end && *s->p == '"';
    const uint8_t *q = quoted ? s->p + 1 : s->p;
    uint64_t v = 0;
    const uint8_t *d = q;
    while (d < s->end && *d >= '0' && *d <= '9') {
        uint64_t nv = v * 10 + (uint64_t)(*d - '0');
        if (nv / 10 != v) /* overflow: not a usable number */
            break;
        v = nv;
        d++;
    }
    /* Whole digits only: "1.5", "1e3" or an overflow are no sequence number. */
    bool good = d > q && (d >= s->end || !strchr("0123456789.eE", *d) || *d == '\0') &&
                (!quoted || (d < s->end && *d == '"'));
    s->p = start;
    if (scan_skip(s, 0) != 0)
        return -1;
    *ok = good;
    *out = v;
    return 0;
}

static bool key_is(const uint8_t *k, size_t kl, const char *name)
{
    size_t n = strlen(name);
    return kl == n && memcmp(k, name, n) == 0;
}

/* A member of "metadata": the sequence number and the timestamp are kept. */
static int metadata_member(scan_t *s, const uint8_t *k, size_t kl, void *arg)
{
    sink_record_info_t *info = arg;
    uint64_t v;
    bool ok;
    if (key_is(k, kl, "seq")) {
        if (uint_value(s, &v, &ok) != 0)
            return -1;
        info->has_seq = ok;
        info->seq = v;
    } else if (key_is(k, kl, "timestamp-us")) {
        if (uint_value(s, &v, &ok) != 0)
            return -1;
        info->has_ts = ok && v <= (uint64_t)INT64_MAX;
        info->ts_us = (int64_t)v;
    } else {
        return scan_skip(s, 2);
    }
    return 0;
}

static int metadata(scan_t *s, sink_record_info_t *info)
{
    scan_ws(s);
    if (s->p >= s->end || *s->p != '{')
        return scan_skip(s, 1);
    return scan_container(s, '}', metadata_member, info, "',' or '}' expected in metadata");
}

/* A member of the envelope: only "metadata" is read. */
static int envelope_member(scan_t *s, const uint8_t *k, size_t kl, void *arg)
{
    if (key_is(k, kl, "metadata"))
        return metadata(s, arg);
    return scan_skip(s, 1);
}

/* One envelope object (or any JSON value: a non-object is a record without metadata). */
static int envelope(scan_t *s, sink_record_info_t *info)
{
    memset(info, 0, sizeof *info);
    scan_ws(s);
    if (s->p >= s->end || *s->p != '{')
        return scan_skip(s, 0);
    return scan_container(s, '}', envelope_member, info, "',' or '}' expected");
}

static bool ctype_is(const char *ct, const char *want)
{
    if (!ct)
        return false;
    size_t n = strlen(want);
    return strncasecmp(ct, want, n) == 0 && (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

static bool ctype_json(const char *ct)
{
    if (!ct)
        return false;
    if (ctype_is(ct, "application/json") || ctype_is(ct, "application/x-ndjson"))
        return true;
    const char *semi = strchr(ct, ';');
    size_t n = semi ? (size_t)(semi - ct) : strlen(ct);
    return n > 5 && strncasecmp(ct + n - 5, "+json", 5) == 0;
}

/* Decimal digits of a header value into a number; false when not all digits. */
static bool header_number(const frame_record_t *r, const char *name, uint64_t *out)
{
    codec_slice_t v;
    if (!frame_record_header(r, name, &v) || v.len == 0 || v.len > 19)
        return false;
    uint64_t n = 0;
    for (size_t i = 0; i < v.len; i++) {
        if (v.ptr[i] < '0' || v.ptr[i] > '9')
            return false;
        n = n * 10 + (uint64_t)(v.ptr[i] - '0');
    }
    *out = n;
    return true;
}

void sink_frame_record_info(const frame_record_t *r, sink_record_info_t *info)
{
    uint64_t ts = 0;
    memset(info, 0, sizeof *info);
    info->has_seq = header_number(r, "@seq", &info->seq);
    info->has_ts = header_number(r, "@timestamp-us", &ts);
    info->ts_us = (int64_t)ts;
}

static long frame_body(const uint8_t *body, size_t len, sink_record_fn fn, void *arg, char *err,
                       size_t errlen)
{
    frame_parser_t p;
    frame_parser_init(&p, 0, false);
    size_t off = 0;
    long n = 0;
    while (off < len) {
        frame_t f;
        size_t used;
        frame_status_t st = frame_parse(&p, body + off, len - off, &f, &used);
        if (st != FRAME_OK) {
            snprintf(err, errlen, "%s", st == FRAME_NEED_MORE ? "truncated frame" : p.error);
            return -1;
        }
        off += used;
        if (f.hdr.type != FRAME_TYPE_DATA)
            continue;
        frame_record_iter_t it;
        frame_record_t r;
        frame_records(&f, &it);
        while (frame_record_next(&it, &r)) {
            sink_record_info_t info;
            sink_frame_record_info(&r, &info);
            fn(arg, &info);
            n++;
        }
    }
    return n;
}

long sink_body_records(const uint8_t *body, size_t len, const char *content_type, sink_record_fn fn,
                       void *arg, char *err, size_t errlen)
{
    sink_record_info_t info;
    if (ctype_is(content_type, "application/vnd.ndd.frame"))
        return frame_body(body, len, fn, arg, err, errlen);
    if (!ctype_json(content_type)) {
        memset(&info, 0, sizeof info);
        fn(arg, &info);
        return 1;
    }
    scan_t s = {body, body + len, NULL};
    long n = 0;
    scan_ws(&s);
    if (s.p < s.end && *s.p == '[') {
        /* A batch: an array of envelopes. */
        s.p++;
        scan_ws(&s);
        if (s.p < s.end && *s.p == ']') {
            s.p++;
        } else {
            for (;;) {
                if (envelope(&s, &info) != 0)
                    goto bad;
                fn(arg, &info);
                n++;
                scan_ws(&s);
                if (s.p < s.end && *s.p == ',') {
                    s.p++;
                    continue;
                }
                if (s.p < s.end && *s.p == ']') {
                    s.p++;
                    break;
                }
                s.why = "',' or ']' expected in batch";
                goto bad;
            }
        }
        scan_ws(&s);
        if (s.p != s.end) {
            s.why = "bytes after the batch";
            goto bad;
        }
        return n;
    }
    /* One envelope, or NDJSON: envelopes one after another. */
    while (scan_ws(&s), s.p < s.end) {
        if (envelope(&s, &info) != 0)
            goto bad;
        fn(arg, &info);
        n++;
    }
    if (n == 0) {
        s.why = "empty JSON body";
        goto bad;
    }
    return n;
bad:
    snprintf(err, errlen, "malformed JSON body at byte %zu: %s", (size_t)(s.p - body),
             s.why ? s.why : "syntax error");
    return -1;
}
