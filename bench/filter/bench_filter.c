/* ndd-bench-filter: how many filter evaluations per second one core does for a 5-rule
 * filter over a mix of realistic copies (decoded by the real codec), single-threaded with
 * filter_eval and with 2 threads through a filter_slot (one acquire per batch), and the cost
 * of a regex rule in comparison. Prints one line per case and a JSON summary line.
 *
 *   ndd-bench-filter [--evals N] [--batch B]      (defaults 20000000, 64) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "codec.h"
#include "filter.h"

#define BENCH_MSGS 8

static const char *const bench_five_rules =
    "{\"name\":\"bench-5\",\"default\":\"allow\",\"rules\":["
    "{\"name\":\"drop-heartbeats\",\"action\":\"drop\",\"match\":{\"all\":["
    "{\"field\":\":method\",\"op\":\"equals\",\"value\":\"PATCH\"},"
    "{\"field\":\":path\",\"op\":\"prefix\",\"value\":\"/nnrf-nfm/v1/nf-instances/\"}]}},"
    "{\"name\":\"keep-server-errors\",\"action\":\"allow\",\"match\":"
    "{\"field\":\":status\",\"op\":\"between\",\"value\":[500,599]}},"
    "{\"name\":\"drop-probes\",\"action\":\"drop\",\"match\":{\"any\":["
    "{\"field\":\"user-agent\",\"op\":\"contains\",\"value\":\"kube-probe\",\"icase\":true},"
    "{\"field\":\":path\",\"op\":\"one-of\",\"value\":[\"/healthz\",\"/readyz\",\"/metrics\"]}]}},"
    "{\"name\":\"drop-unknown-nf\",\"action\":\"drop\",\"match\":{\"not\":"
    "{\"field\":\"@nf-type\",\"op\":\"one-of\",\"value\":[\"SCP\",\"NRF\",\"SEPP\",\"BSF\","
    "\"PCF\"]}}},"
    "{\"name\":\"drop-non-json-errors\",\"action\":\"drop\",\"match\":{\"all\":["
    "{\"field\":\"@message-type\",\"op\":\"equals\",\"value\":\"response\"},"
    "{\"field\":\":status\",\"op\":\"ge\",\"value\":400},"
    "{\"not\":{\"field\":\"content-type\",\"op\":\"suffix\",\"value\":\"json\"}}]}}]}";

/* The heartbeat test as one regex on :path (run on every copy that has a :path). */
static const char *const bench_regex_rule =
    "{\"name\":\"bench-regex\",\"default\":\"allow\",\"rules\":["
    "{\"name\":\"drop-heartbeats\",\"action\":\"drop\",\"match\":"
    "{\"field\":\":path\",\"op\":\"regex\",\"value\":\"^/nnrf-nfm/v[0-9]+/nf-instances/\"}}]}";

typedef struct bench_copy {
    const char *hdr[16][2];
    const char *body;
} bench_copy_t;

/* Requests and responses as SCP/PCF/UDM would copy them; most reach the default. */
static const bench_copy_t bench_copies[BENCH_MSGS] = {
    {{{"@correlation-id", "b-1"},
      {"@timestamp-us", "1764484033123456"},
      {"@message-type", "request"},
      {"@trigger-point", "rx-request"},
      {"@nf-type", "SCP"},
      {":method", "GET"},
      {":scheme", "http"},
      {":authority", "udm1.5gc.mnc001.mcc001.3gppnetwork.org"},
      {":path", "/nudm-sdm/v2/imsi-001010000000001/am-data?plmn-id=00101"},
      {"user-agent", "AMF-amf01"},
      {"accept", "application/json"}},
     ""},
    {{{"@correlation-id", "b-1"},
      {"@timestamp-us", "1764484033124456"},
      {"@message-type", "response"},
      {"@trigger-point", "tx-response"},
      {"@nf-type", "SCP"},
      {":status", "200"},
      {"content-type", "application/json"}},
     "{\"gpsis\":[\"msisdn-33600000001\"]}"},
    {{{"@correlation-id", "b-2"},
      {"@timestamp-us", "1764484033125456"},
      {"@message-type", "request"},
      {"@trigger-point", "rx-request"},
      {"@nf-type", "PCF"},
      {":method", "POST"},
      {":path", "/npcf-smpolicycontrol/v1/sm-policies"},
      {"content-type", "application/json"},
      {"user-agent", "SMF-smf01"}},
     "{\"supi\":\"imsi-001010000000002\"}"},
    {{{"@correlation-id", "b-2"},
      {"@timestamp-us", "1764484033126456"},
      {"@message-type", "response"},
      {"@trigger-point", "tx-response"},
      {"@nf-type", "PCF"},
      {":status", "201"},
      {"content-type", "application/json"},
      {"location", "http://pcf1/npcf-smpolicycontrol/v1/sm-policies/1"}},
     "{}"},
    {{{"@correlation-id", "b-3"},
      {"@timestamp-us", "1764484033127456"},
      {"@message-type", "request"},
      {"@trigger-point", "rx-request"},
      {"@nf-type", "NRF"},
      {":method", "PATCH"},
      {":path", "/nnrf-nfm/v1/nf-instances/5a7bc7d0-97f5-4ed1-a5e0-1c1e3e2b1a11"},
      {"content-type", "application/json-patch+json"}},
     "[{\"op\":\"replace\",\"path\":\"/nfStatus\",\"value\":\"REGISTERED\"}]"},
    {{{"@correlation-id", "b-4"},
      {"@timestamp-us", "1764484033128456"},
      {"@message-type", "response"},
      {"@trigger-point", "tx-response"},
      {"@nf-type", "BSF"},
      {":status", "404"},
      {"content-type", "application/problem+json"}},
     "{\"cause\":\"RESOURCE_NOT_FOUND\"}"},
    {{{"@correlation-id", "b-5"},
      {"@timestamp-us", "1764484033129456"},
      {"@message-type", "response"},
      {"@trigger-point", "tx-response"},
      {"@nf-type", "SEPP"},
      {":status", "503"},
      {"content-type", "application/problem+json"}},
     "{\"cause\":\"SYSTEM_FAILURE\"}"},
    {{{"@correlation-id", "b-6"},
      {"@timestamp-us", "1764484033130456"},
      {"@message-type", "request"},
      {"@trigger-point", "rx-request"},
      {"@nf-type", "SCP"},
      {":method", "GET"},
      {":path", "/nnrf-disc/v1/nf-instances?target-nf-type=UDM&requester-nf-type=AMF"},
      {"user-agent", "AMF-amf02"}},
     ""},
};

typedef struct bench_ctx {
    codec_msg_t msgs[BENCH_MSGS];
    rd_kafka_headers_t *hdrs[BENCH_MSGS];
    filter_slot_t *slot;
    long evals;
    int batch;
    unsigned long drops;
} bench_ctx_t;

static double bench_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double bench_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static filter_t *bench_compile(const char *text)
{
    char err[512];
    filter_t *f = filter_compile_text(text, strlen(text), err, sizeof err);
    if (!f) {
        fprintf(stderr, "ndd-bench-filter: filter refused: %s\n", err);
        exit(2);
    }
    return f;
}

static unsigned long bench_direct(const bench_ctx_t *c, const filter_t *f, long n)
{
    unsigned long drops = 0;
    for (long i = 0; i < n; i++)
        drops += filter_eval(f, &c->msgs[i & (BENCH_MSGS - 1)], NULL) == FILTER_DROP;
    return drops;
}

static void *bench_slot_thread(void *p)
{
    bench_ctx_t *c = p;
    unsigned long drops = 0;
    for (long i = 0; i < c->evals;) {
        filter_t *f = filter_slot_acquire(c->slot);
        for (int k = 0; k < c->batch && i < c->evals; k++, i++)
            drops += filter_eval(f, &c->msgs[i & (BENCH_MSGS - 1)], NULL) == FILTER_DROP;
        filter_release(f);
    }
    __atomic_add_fetch(&c->drops, drops, __ATOMIC_RELAXED);
    return NULL;
}

int main(int argc, char **argv)
{
    long evals = 20000000;
    int batch = 64;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--evals") == 0 && i + 1 < argc)
            evals = atol(argv[++i]);
        else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc)
            batch = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--evals N] [--batch B]\n", argv[0]);
            return 2;
        }
    }
    if (evals < BENCH_MSGS || batch < 1) {
        fprintf(stderr, "ndd-bench-filter: --evals must be >= %d and --batch >= 1\n", BENCH_MSGS);
        return 2;
    }

    static bench_ctx_t c;
    for (int i = 0; i < BENCH_MSGS; i++) {
        c.hdrs[i] = rd_kafka_headers_new(16);
        for (int h = 0; h < 16 && bench_copies[i].hdr[h][0]; h++)
            rd_kafka_header_add(c.hdrs[i], bench_copies[i].hdr[h][0], -1, bench_copies[i].hdr[h][1],
                                -1);
        codec_error_t e;
        const char *key = bench_copies[i].hdr[0][1];
        codec_reason_t r = codec_decode_parts(&c.msgs[i], key, strlen(key), bench_copies[i].body,
                                              strlen(bench_copies[i].body), c.hdrs[i], &e);
        if (r != CODEC_OK) {
            fprintf(stderr, "ndd-bench-filter: copy %d does not decode: %s %s %s\n", i,
                    codec_reason_name(r), e.field, e.detail);
            return 1;
        }
    }

    filter_t *five = bench_compile(bench_five_rules);
    filter_t *rx = bench_compile(bench_regex_rule);

    /* Single thread, direct. */
    bench_direct(&c, five, evals / 10); /* warm-up */
    double t0 = bench_now(), c0 = bench_cpu();
    unsigned long d1 = bench_direct(&c, five, evals);
    double t1 = bench_now(), c1 = bench_cpu();
    double direct_eps = (double)evals / (t1 - t0);
    double direct_ns = (t1 - t0) * 1e9 / (double)evals;
    printf("5-rule filter, 1 thread:  %.0f evals/s (%.1f ns/eval, %.0f evals per CPU-s), %lu "
           "drops\n",
           direct_eps, direct_ns, (double)evals / (c1 - c0), d1);

    /* Per-rule hits show every rule is exercised. */
    for (int r = 0; r < (int)filter_rule_count(five); r++)
        printf("  rule %-22s %lu\n", filter_rule_name(five, r),
               (unsigned long)filter_rule_hits(five, r));
    printf("  rule %-22s %lu\n", "default",
           (unsigned long)filter_rule_hits(five, FILTER_RULE_DEFAULT));

    /* Regex comparison. */
    long rx_n = evals / 4;
    t0 = bench_now();
    bench_direct(&c, rx, rx_n);
    t1 = bench_now();
    double rx_eps = (double)rx_n / (t1 - t0);
    printf("1-rule regex filter, 1 thread: %.0f evals/s (%.1f ns/eval)\n", rx_eps,
           (t1 - t0) * 1e9 / (double)rx_n);

    /* Two threads through a slot, one acquire per batch. */
    c.slot = filter_slot_new(filter_retain(five));
    c.evals = evals;
    c.batch = batch;
    pthread_t th[2];
    t0 = bench_now();
    c0 = bench_cpu();
    for (int i = 0; i < 2; i++)
        if (pthread_create(&th[i], NULL, bench_slot_thread, &c) != 0) {
            fprintf(stderr, "ndd-bench-filter: pthread_create failed\n");
            return 1;
        }
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    t1 = bench_now();
    c1 = bench_cpu();
    double slot_eps = 2.0 * (double)evals / (t1 - t0);
    double slot_cpu = 2.0 * (double)evals / (c1 - c0);
    printf("5-rule filter, 2 threads via slot (batch %d): %.0f evals/s, %.0f evals per CPU-s\n",
           batch, slot_eps, slot_cpu);

    printf("{\"bench\":\"filter\",\"rules\":5,\"evals\":%ld,\"evals_per_s_1thread\":%.0f,"
           "\"ns_per_eval\":%.1f,\"evals_per_s_2threads_slot\":%.0f,"
           "\"evals_per_cpu_s_2threads\":%.0f,\"regex_rule_evals_per_s\":%.0f}\n",
           evals, direct_eps, direct_ns, slot_eps, slot_cpu, rx_eps);

    filter_slot_free(c.slot);
    filter_release(five);
    filter_release(rx);
    for (int i = 0; i < BENCH_MSGS; i++)
        rd_kafka_headers_destroy(c.hdrs[i]);
    return 0;
}
