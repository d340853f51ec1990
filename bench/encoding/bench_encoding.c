/* ndd-bench-encoding: what one egress message costs the encoders, in encodes per CPU-second.
 *
 *   ndd-bench-encoding [--seconds S] [--body BYTES] [--vectors DIR] [--count N]
 *
 * Every valid test vector (tests/vectors/valid) is decoded, and its copy gets a synthetic
 * NF-style JSON body of BYTES bytes (default 3,400, the adapter's h2c feed). Each copy is then
 * encoded one message per envelope / per DATA frame by the current encoders, for about S
 * CPU-seconds per row (default 1, at most 30), or exactly N encodes per row with --count (for
 * instruction counts under callgrind: the work no longer depends on the machine's speed, so
 * the inclusive cost of json_now / frame_now divided by N is instructions per encode); any
 * encode failure exits 1. The output bytes
 * are guarded elsewhere (tests/unit/golden/encoding, tests/fuzz/fuzz_encoding_json.c); the
 * pre-optimisation figures in docs/encodings.md came from a baseline copy that lived in this
 * folder until it was removed (see the doc for the commit that still has it).
 * Rows: "body-check" = encoding_json_valid alone on the body, "json-embedded" = the copies whose
 * body is embedded as JSON (content-type JSON), "json-all" / "frame-all" = every copy (non-JSON
 * content types go base64 in JSON). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec.h"
#include "encoding.h"
#include "frame.h"
#include "vectors.h"

#define BENCH_MAX_BODY (1u << 20)

typedef struct bench_copy {
    vectors_record_t v;
    codec_msg_t m;
    int embeds; /* the JSON envelope embeds the body (not base64) */
} bench_copy_t;

typedef int (*bench_fn)(buf_t *out, const codec_msg_t *m);

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A deterministic NF-profile-like JSON document of exactly n bytes (n >= 64): nested objects,
 * arrays, numbers, booleans, an escaped quote, a \u escape and non-ASCII UTF-8, the way SBI
 * bodies look; padded to size inside a final string member. */
static size_t make_body(char *dst, size_t n)
{
    static const char item[] =
        "{\"nfInstanceId\":\"5a9c7e3b-1f2d-4c8e-9b0a-%06u\",\"nfType\":\"UDM\","
        "\"nfStatus\":\"REGISTERED\",\"heartBeatTimer\":%u,\"plmnList\":[{\"mcc\":\"208\","
        "\"mnc\":\"93\"}],\"sNssais\":[{\"sst\":1,\"sd\":\"000001\"}],\"fqdn\":"
        "\"udm-%u.5gc.mnc093.mcc208.3gppnetwork.org\",\"ipv4Addresses\":[\"10.45.%u.%u\"],"
        "\"priority\":%u,\"capacity\":100,\"load\":%u.5,\"locality\":\"Z\\u00fcrich \\\"A\\\"\","
        "\"nfServices\":[{\"serviceName\":\"nudm-sdm\",\"versions\":[{\"apiVersionInUri\":\"v2\","
        "\"apiFullVersion\":\"2.2.0\"}],\"scheme\":\"http\",\"allowed\":true,\"note\":null}]}";
    const char *head = "{\"items\":[";
    const char *tail_open = "],\"pad\":\"";
    const char *tail_close = "\"}";
    size_t fixed = strlen(head) + strlen(tail_open) + strlen(tail_close);
    size_t at = 0;
    char tmp[1024];
    memcpy(dst, head, strlen(head));
    at += strlen(head);
    for (unsigned i = 0;; i++) {
        int l =
            snprintf(tmp, sizeof tmp, item, i, 10 + i, i, i % 250, (i * 7) % 250, i % 100, i % 90);
        if (l < 0 || at + (i ? 1 : 0) + (size_t)l + fixed > n)
            break;
        if (i)
            dst[at++] = ',';
        memcpy(dst + at, tmp, (size_t)l);
        at += (size_t)l;
    }
    memcpy(dst + at, tail_open, strlen(tail_open));
    at += strlen(tail_open);
    /* Pad with text that includes a two-byte UTF-8 letter now and then. */
    size_t pad = n - at - strlen(tail_close);
    for (size_t i = 0; i < pad;) {
        if (pad - i >= 2 && i % 40 == 39) {
            dst[at++] = (char)0xC3;
            dst[at++] = (char)0xA9;
            i += 2;
        } else {
            dst[at++] = (char)('a' + (i % 26));
            i++;
        }
    }
    memcpy(dst + at, tail_close, strlen(tail_close));
    at += strlen(tail_close);
    return at;
}

static int json_now(buf_t *out, const codec_msg_t *m)
{
    return encoding_json_envelope(out, m);
}

/* The body check alone (what decides "embed as JSON"); the result must be "valid". */
static int valid_now(buf_t *out, const codec_msg_t *m)
{
    (void)out;
    return encoding_json_valid((const uint8_t *)m->body.ptr, m->body.len) ? 0 : -1;
}

static int frame_now(buf_t *out, const codec_msg_t *m)
{
    frame_builder_t fb;
    if (frame_data_begin(&fb, out, 0, FRAME_FLAG_ACK_REQUESTED, 0) != 0)
        return -1;
    if (frame_data_add_msg(&fb, m) != 0) {
        frame_data_abort(&fb);
        return -1;
    }
    return frame_data_end(&fb);
}

/* Encodes every selected copy round-robin for about `seconds` of CPU time; returns encodes
 * per CPU-second and the mean output size. The loop is bounded by time and by a count. */
static double run(bench_fn fn, buf_t *out, bench_copy_t *c, size_t n, int only_embedded,
                  double seconds, unsigned long long count, double *mean_out)
{
    size_t sel[1024], ns = 0;
    *mean_out = 0; /* an empty selection (no copy embeds its body) prints a 0 row */
    for (size_t i = 0; i < n && ns < 1024; i++)
        if (!only_embedded || c[i].embeds)
            sel[ns++] = i;
    if (ns == 0)
        return 0;
    unsigned long long done = 0, bytes = 0;
    const unsigned long long cap = 200000000ull;
    double t0 = cpu_now(), t;
    if (count > 0) {
        for (unsigned long long k = 0; k < count; k++) {
            bench_copy_t *cp = &c[sel[k % ns]];
            buf_reset(out);
            if (fn(out, &cp->m) != 0) {
                fprintf(stderr, "encode failed for %s\n", cp->v.name);
                exit(1);
            }
            bytes += out->len;
        }
        t = cpu_now() - t0;
        *mean_out = (double)bytes / (double)count;
        return t > 0 ? (double)count / t : 0;
    }
    do {
        for (int rep = 0; rep < 256; rep++) {
            for (size_t k = 0; k < ns; k++) {
                buf_reset(out);
                if (fn(out, &c[sel[k]].m) != 0) {
                    fprintf(stderr, "encode failed for %s\n", c[sel[k]].v.name);
                    exit(1);
                }
                bytes += out->len;
            }
            done += ns;
        }
        t = cpu_now() - t0;
    } while (t < seconds && done < cap);
    *mean_out = (double)bytes / (double)done;
    return (double)done / t;
}

int main(int argc, char **argv)
{
    double seconds = 1.0;
    size_t body_len = 3400;
    unsigned long long count = 0;
    char dir[1024];
    vectors_dir("valid", dir, sizeof dir);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            seconds = atof(argv[++i]);
        } else if (strcmp(argv[i], "--body") == 0 && i + 1 < argc) {
            body_len = (size_t)strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
            count = strtoull(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--vectors") == 0 && i + 1 < argc) {
            snprintf(dir, sizeof dir, "%s", argv[++i]);
        } else {
            fprintf(stderr,
                    "usage: %s [--seconds S (0.05..30)] [--body BYTES (64..%u)] "
                    "[--vectors DIR] [--count N]\n",
                    argv[0], BENCH_MAX_BODY);
            return 2;
        }
    }
    if (seconds < 0.05 || seconds > 30 || body_len < 64 || body_len > BENCH_MAX_BODY ||
        count > 100000000ull) {
        fprintf(stderr, "--seconds must be 0.05..30, --body 64..%u and --count at most 1e8\n",
                BENCH_MAX_BODY);
        return 2;
    }

    char **paths;
    size_t n;
    if (vectors_list(dir, &paths, &n) != 0 || n == 0) {
        fprintf(stderr, "no test vectors in %s\n", dir);
        return 1;
    }
    if (n > 1024)
        n = 1024;
    bench_copy_t *c = calloc(n, sizeof *c);
    char *body = malloc(body_len);
    if (!c || !body) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    size_t blen = make_body(body, body_len);
    if (!encoding_json_valid((const uint8_t *)body, blen)) {
        fprintf(stderr, "internal: the synthetic body is not valid JSON\n");
        return 1;
    }
    buf_t x;
    if (buf_init(&x, 1 << 16, 64u << 20) != 0) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    size_t embeds = 0;
    for (size_t i = 0; i < n; i++) {
        char err[256];
        codec_error_t ce;
        if (vectors_load(paths[i], &c[i].v, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        if (codec_decode_parts(&c[i].m, c[i].v.key, c[i].v.key_len, c[i].v.value, c[i].v.value_len,
                               c[i].v.headers, &ce) != CODEC_OK) {
            fprintf(stderr, "%s: %s %s\n", c[i].v.name, ce.field, ce.detail);
            return 1;
        }
        c[i].m.body.ptr = body;
        c[i].m.body.len = blen;
        /* Which copies embed the body decides the json-embedded row; a copy that cannot be
         * encoded at all would make every figure meaningless, so it stops the bench here. */
        buf_reset(&x);
        if (json_now(&x, &c[i].m) != 0) {
            fprintf(stderr, "json envelope failed for %s\n", c[i].v.name);
            return 1;
        }
        c[i].embeds = memmem(x.data, x.len, "\"body_encoding\"", 15) == NULL;
        embeds += (size_t)c[i].embeds;
    }
    vectors_list_free(paths, n);
    printf("ndd-bench-encoding: %zu valid vectors, body %zu bytes, %zu embed it as JSON\n", n, blen,
           embeds);
    printf("%-14s %14s %11s\n", "set", "enc/CPU-s", "bytes/enc");
    struct {
        const char *name;
        bench_fn fn;
        int only_embedded;
    } rows[] = {
        {"body-check", valid_now, 1},
        {"json-embedded", json_now, 1},
        {"json-all", json_now, 0},
        {"frame-all", frame_now, 0},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        double mean;
        double rate = run(rows[r].fn, &x, c, n, rows[r].only_embedded, seconds, count, &mean);
        printf("%-14s %14.0f %11.0f\n", rows[r].name, rate, mean);
    }
    for (size_t i = 0; i < n; i++)
        vectors_free(&c[i].v);
    free(c);
    free(body);
    buf_free(&x);
    return 0;
}
