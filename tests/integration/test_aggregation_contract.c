/* The MAIN contract of docs/message-format.md ("Key and correlation id", "Limits") on the real
 * broker, ndd-aggregation as a child process: a copy that gives its correlation id only as
 * the key, or only as @correlation-id, reaches MAIN with both (the key equal to the header)
 * and in order per key; a copy with a body at the 1 MiB limit reaches MAIN and then an
 * endpoint (ndd-adapter to ndd-sink). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "adapter_testutil.h"
#include "agg_testutil.h"
#include "kafka_testutil.h"

#define N_COPIES 1200
#define N_KEYS 40

/* Copy i: correlation id "txn-<i % N_KEYS>", given as the key only (even keys) or as
 * @correlation-id only (odd keys), so both kinds share the topic and its partitions. */
static int produce_split_copies(rd_kafka_t *p, const char *topic, size_t body_len)
{
    static char body[1u << 20];
    if (body_len > sizeof body)
        return -1;
    memset(body, 'x', body_len);
    for (uint64_t i = 0; i < N_COPIES; i++) {
        char id[32], seq[24], ts[24];
        int k = (int)(i % N_KEYS);
        snprintf(id, sizeof id, "txn-%d", k);
        snprintf(seq, sizeof seq, "%llu", (unsigned long long)i);
        snprintf(ts, sizeof ts, "%llu", 1764486000000000ULL + i);
        bool key_only = k % 2 == 0;
        const char *hdrs[] = {"@timestamp-us",
                              ts,
                              "@message-type",
                              "request",
                              "@trigger-point",
                              "rx-request",
                              "@nf-type",
                              "SCP",
                              "@seq",
                              seq,
                              ":method",
                              "GET",
                              ":path",
                              "/nudm-sdm/v2/imsi-1/am-data",
                              "@correlation-id",
                              id};
        size_t nh = sizeof(hdrs) / sizeof(hdrs[0]) / 2 - (key_only ? 1 : 0);
        /* One NF-topic partition per transaction (as an NF that partitions by its id):
         * the order to keep is the order in it. */
        if (ktu_produce(p, topic, k % 3, key_only ? id : NULL, key_only ? strlen(id) : 0, body,
                        body_len, hdrs, nh))
            return -1;
        if (i % 200 == 0)
            rd_kafka_poll(p, 0);
    }
    return ktu_flush(p, 30000);
}

static void
test_key_only_and_id_only_copies_reach_main_with_key_and_header_in_key_order(void **state)
{
    (void)state;
    agg_env_t e;
    assert_int_equal(agg_env_init(&e, "aggcid", 3, 3), 0);
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    assert_int_equal(produce_split_copies(p, e.in, 120), 0);
    assert_true(agg_start(&e, 0, NULL) > 0);

    ktu_records_t r = {0};
    assert_int_equal(ktu_consume_records(e.main, N_COPIES, 30000, &r), N_COPIES);
    static unsigned char seen[N_COPIES];
    memset(seen, 0, sizeof seen);
    int64_t last[N_KEYS];
    int32_t part[N_KEYS];
    for (int k = 0; k < N_KEYS; k++) {
        last[k] = -1;
        part[k] = -1;
    }
    int parts_used[3] = {0};
    for (size_t i = 0; i < r.n; i++) {
        const ktu_record_t *m = &r.v[i];
        const char *s = ktu_record_header(m, "@seq", NULL);
        assert_non_null(s);
        uint64_t seq = strtoull(s, NULL, 10);
        assert_true(seq < N_COPIES);
        assert_false(seen[seq]);
        seen[seq] = 1;
        int k = (int)(seq % N_KEYS);
        char id[32];
        snprintf(id, sizeof id, "txn-%d", k);
        /* Both, equal, whichever of the two the copy came with. */
        assert_non_null(m->key);
        assert_string_equal(m->key, id);
        const char *cid = ktu_record_header(m, "@correlation-id", NULL);
        if (!cid)
            fail_msg("MAIN record @seq %llu (key %s) has no @correlation-id",
                     (unsigned long long)seq, m->key);
        assert_string_equal(cid, id);
        int n_cid = 0;
        for (size_t h = 0; h < m->n_headers; h++)
            n_cid += strcmp(m->headers[h].name, "@correlation-id") == 0;
        assert_int_equal(n_cid, 1);
        /* One partition per key and produce order within it. */
        if (part[k] < 0)
            part[k] = m->partition;
        assert_int_equal(m->partition, part[k]);
        assert_true((int64_t)seq > last[k]);
        last[k] = (int64_t)seq;
        parts_used[m->partition % 3] = 1;
    }
    /* Id-only copies are partitioned by their id, not all on one partition. */
    assert_int_equal(parts_used[0] + parts_used[1] + parts_used[2], 3);
    ktu_records_free(&r);
    assert_true(agg_stop_clean(&e, 0));
    assert_int_equal(ktu_topic_record_count(e.dlq, 5000), 0);
    rd_kafka_destroy(p);
    agg_env_cleanup(&e);
}

static json_t *sink_summary(int mport)
{
    char cmd[200];
    snprintf(cmd, sizeof cmd, "curl -s --max-time 5 http://127.0.0.1:%d/summary", mport);
    FILE *f = popen(cmd, "r");
    if (!f)
        return NULL;
    json_t *j = json_loadf(f, 0, NULL);
    pclose(f);
    return j;
}

/* A body of exactly 1 MiB (the contract's default limit) with a full set of headers: on MAIN
 * whole, then at ndd-sink through ndd-adapter. The aggregation and the adapter run with their
 * own defaults (no kafka.* override): the producers' and the topics' limits must hold it. */
static void test_copy_with_1_mib_body_reaches_main_and_the_endpoint(void **state)
{
    (void)state;
    agg_env_t e;
    assert_int_equal(agg_env_init(&e, "agg1mib", 1, 1), 0);
    const char *props[] = {"message.max.bytes=4194304"};
    rd_kafka_t *p = ktu_producer_new(props, 1);
    assert_non_null(p);
    static char body[1u << 20];
    memset(body, 'b', sizeof body);
    memcpy(body, "body-0;", 7);
    /* Near the header limit too: 15 extension headers of 255 bytes. */
    char ext[15][2][256];
    const char *hdrs[64];
    size_t nh = 0;
    const char *fixed[] = {
        "@correlation-id", "big-1",   "@timestamp-us",  "1764486000000000",
        "@message-type",   "request", "@trigger-point", "rx-request",
        "@nf-type",        "SCP",     "@seq",           "0",
        ":method",         "POST",    ":path",          "/npcf-smpolicycontrol/v1/sm-policies"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        hdrs[nh++] = fixed[i];
    for (int i = 0; i < 15; i++) {
        snprintf(ext[i][0], sizeof ext[i][0], "@x-ext-%d", i);
        memset(ext[i][1], 'v', 255);
        ext[i][1][255] = '\0';
        hdrs[nh++] = ext[i][0];
        hdrs[nh++] = ext[i][1];
    }
    assert_int_equal(ktu_produce(p, e.in, 0, "big-1", 5, body, sizeof body, hdrs, nh / 2), 0);
    assert_int_equal(ktu_flush(p, 30000), 0);
    assert_true(agg_start(&e, 0, NULL) > 0);

    ktu_records_t r = {0};
    if (ktu_consume_records(e.main, 1, 30000, &r) != 1)
        fail_msg("the 1 MiB copy did not reach MAIN (DLQ holds %lld; log %s)",
                 (long long)ktu_topic_record_count(e.dlq, 5000), e.log_path[0]);
    /* In the form asked for (the _frame registration: tests/CMakeLists.txt). */
    const char *fmt = getenv("NDD_TEST_MAIN_FORMAT");
    assert_int_equal(r.v[0].framed, fmt && strcmp(fmt, "frame") == 0);
    assert_int_equal(r.v[0].value_len, sizeof body);
    assert_memory_equal(r.v[0].value, body, sizeof body);
    assert_string_equal(r.v[0].key, "big-1");
    ktu_records_free(&r);
    assert_int_equal(ktu_topic_record_count(e.dlq, 5000), 0);

    /* MAIN to an endpoint: ndd-adapter (defaults) to ndd-sink over h2c, JSON envelopes. */
    char dir[] = "/tmp/ndd-agg1mib-XXXXXX";
    assert_non_null(mkdtemp(dir));
    int dport = atu_free_port(27100, 27999), sm = atu_free_port(27100, 27999),
        am = atu_free_port(27100, 27999);
    char bin[600], ds[16], sms[16], slog[700], alog[700], file[700], doc[1200];
    snprintf(bin, sizeof bin, "%s/bench/sink/ndd-sink", NDD_BINARY_DIR);
    snprintf(ds, sizeof ds, "%d", dport);
    snprintf(sms, sizeof sms, "%d", sm);
    snprintf(slog, sizeof slog, "%s/sink.log", dir);
    snprintf(alog, sizeof alog, "%s/adapter.log", dir);
    snprintf(file, sizeof file, "%s/feeds.json", dir);
    char *argv[] = {bin, "--h2-port", ds, "--metrics-port", sms, "--expect", "1", NULL};
    pid_t sink = atu_spawn(argv, slog);
    assert_true(sink > 0);
    if (!atu_wait_port(dport, 5000) || !atu_wait_port(sm, 5000))
        fail_msg("ndd-sink did not start (log %s)", slog);
    snprintf(doc, sizeof doc,
             "{\"feeds\":[{\"name\":\"big\",\"source_topic\":\"%s\",\"transport\":\"http2\","
             "\"encoding\":\"json\",\"endpoints\":[{\"url\":\"http://127.0.0.1:%d/ingest\"}]}]}",
             e.main, dport);
    assert_int_equal(atu_write_file(file, doc), 0);
    pid_t ad = atu_start_adapter(file, am, alog, NULL);
    assert_true(ad > 0);
    bool complete = false;
    json_t *sum = NULL;
    for (uint64_t t0 = atu_now_ms(); !complete && atu_now_ms() - t0 < 30000;) {
        usleep(200000);
        json_decref(sum);
        sum = sink_summary(sm);
        complete = sum && json_is_true(json_object_get(sum, "complete"));
    }
    if (!complete)
        fail_msg("ndd-sink never received the 1 MiB copy (adapter log %s, sink log %s)", alog,
                 slog);
    assert_int_equal(json_integer_value(json_object_get(sum, "unique")), 1);
    json_decref(sum);
    atu_stop(ad, SIGTERM);
    atu_stop(sink, SIGTERM);
    atu_remove_tree(dir);
    assert_true(agg_stop_clean(&e, 0));
    rd_kafka_destroy(p);
    agg_env_cleanup(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_key_only_and_id_only_copies_reach_main_with_key_and_header_in_key_order),
        cmocka_unit_test(test_copy_with_1_mib_body_reaches_main_and_the_endpoint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
