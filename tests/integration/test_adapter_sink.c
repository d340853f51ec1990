/* ndd-adapter against the project's ndd-sink (bench/sink), which counts distinct @seq,
 * duplicates and gaps on its side: HTTP/2 with the JSON envelope, TCP frames acknowledged by
 * ACK frames, and batched frames (50 records per frame). Real broker (NDD_TEST_KAFKA). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "adapter_testutil.h"
#include "kafka_testutil.h"
#include "log.h"

static json_t *sink_summary(int mport)
{
    char cmd[200];
    snprintf(cmd, sizeof cmd, "curl -s --max-time 5 http://127.0.0.1:%d/summary", mport);
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    json_t *j = json_loadf(p, 0, NULL);
    pclose(p);
    return j;
}

/* Polls the sink's summary until it says complete, for at most timeout_ms; fails the test
 * (naming the adapter's log and the last summary) otherwise. The caller frees the summary. */
static json_t *sink_wait_complete(int sm, uint64_t timeout_ms, const char *alog)
{
    uint64_t t0 = atu_now_ms();
    bool complete = false;
    json_t *sum = NULL;
    while (!complete && atu_now_ms() - t0 < timeout_ms) {
        usleep(200000);
        json_decref(sum);
        sum = sink_summary(sm);
        complete = sum && json_is_true(json_object_get(sum, "complete"));
    }
    if (!complete) {
        /* fail_msg does not return: free the summary first, keep its text on the stack. */
        char *txt = sum ? json_dumps(sum, 0) : NULL;
        char why[1024];
        snprintf(why, sizeof why, "%s", txt ? txt : "(no summary)");
        free(txt);
        json_decref(sum);
        fail_msg("sink never complete (adapter log %s): %s", alog, why);
    }
    return sum;
}

/* The value of the adapter's metric line `name{feed="feed"}`, or -1 when absent. */
static double adapter_metric(int aport, const char *name, const char *feed)
{
    char cmd[200], want[400], line[1024];
    snprintf(cmd, sizeof cmd, "curl -s --max-time 5 http://127.0.0.1:%d/metrics", aport);
    snprintf(want, sizeof want, "%s{feed=\"%s\"} ", name, feed);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    double v = -1;
    while (fgets(line, sizeof line, p))
        if (!strncmp(line, want, strlen(want)))
            v = strtod(line + strlen(want), NULL);
    pclose(p);
    return v;
}

/* min_rewound > 0: the case is meant to fill the feed so that copies are given back
 * (ndd_adapter_messages_rewound_total) and fails when that path was not taken. */
static void sink_case_rw(const char *transport, const char *encoding, const char *scheme,
                         const char *delivery, size_t n, double min_rewound, const char *sink_delay,
                         const char *const *adapter_extra, bool late_sink)
{
    char topic[128], feed[96], dir[] = "/tmp/ndd-adsink-XXXXXX";
    assert_non_null(mkdtemp(dir));
    ktu_unique_name("adsink-src", topic, sizeof topic);
    ktu_unique_name("feed-sink", feed, sizeof feed);
    assert_int_equal(ktu_create_topic(topic, 3), 0);
    int dport = atu_free_port(27100, 27999), sm = atu_free_port(27100, 27999),
        am = atu_free_port(27100, 27999);
    char bin[600], ds[16], sms[16], exp[32], slog[700], alog[700], file[700];
    snprintf(bin, sizeof bin, "%s/bench/sink/ndd-sink", NDD_BINARY_DIR);
    snprintf(ds, sizeof ds, "%d", dport);
    snprintf(sms, sizeof sms, "%d", sm);
    snprintf(exp, sizeof exp, "%zu", n);
    snprintf(slog, sizeof slog, "%s/sink.log", dir);
    snprintf(alog, sizeof alog, "%s/adapter.log", dir);
    snprintf(file, sizeof file, "%s/feeds.json", dir);
    bool tcp = !strcmp(transport, "tcp");
    char *argv[] = {bin,
                    tcp ? "--tcp-port" : "--h2-port",
                    ds,
                    "--metrics-port",
                    sms,
                    "--expect",
                    exp,
                    sink_delay ? "--delay-ms" : NULL,
                    (char *)sink_delay,
                    NULL};
    pid_t sink = -1;
    if (!late_sink) {
        sink = atu_spawn(argv, slog);
        assert_true(sink > 0);
        if (!atu_wait_port(dport, 5000) || !atu_wait_port(sm, 5000))
            fail_msg("ndd-sink did not start (log %s)", slog);
    }
    char doc[2000];
    snprintf(doc, sizeof doc,
             "{\"feeds\":[{\"name\":\"%s\",\"source_topic\":\"%s\",\"transport\":\"%s\","
             "\"encoding\":\"%s\",\"endpoints\":[{\"url\":\"%s://127.0.0.1:%d%s\"}],"
             "\"delivery\":%s}]}",
             feed, topic, transport, encoding, scheme, dport, tcp ? "" : "/ingest", delivery);
    assert_int_equal(atu_write_file(file, doc), 0);
    if (!late_sink)
        assert_int_equal(atu_produce_copies(topic, 0, n, 3400), 0);
    pid_t ad = atu_start_adapter(file, am, alog, adapter_extra);
    assert_true(ad > 0);
    if (late_sink) {
        /* The endpoint is down, so nothing the feed holds is released, and with a request
         * that fits one copy each delivery holds one: the feed's deliveries run out in the
         * middle of a poll, with later copies of the same partitions in it, and it must give
         * copies back until the sink comes up. Then everything must drain. */
        uint64_t ta = atu_now_ms();
        while (adapter_metric(am, "ndd_adapter_partitions_assigned", feed) != 3 &&
               atu_now_ms() - ta < 20000)
            usleep(100000);
        assert_int_equal(atu_produce_copies(topic, 0, n, 3400), 0);
        uint64_t tr = atu_now_ms();
        while (adapter_metric(am, "ndd_adapter_messages_rewound_total", feed) < min_rewound &&
               atu_now_ms() - tr < 10000)
            usleep(100000);
        sink = atu_spawn(argv, slog);
        assert_true(sink > 0);
        if (!atu_wait_port(dport, 5000) || !atu_wait_port(sm, 5000))
            fail_msg("ndd-sink did not start (log %s)", slog);
    }
    json_t *sum = sink_wait_complete(sm, 60000, alog);
    assert_int_equal(json_integer_value(json_object_get(sum, "unique")), (json_int_t)n);
    assert_int_equal(json_integer_value(json_object_get(sum, "missing")), 0);
    /* The feed holds the topic's three partitions (one process in the group). */
    double parts = adapter_metric(am, "ndd_adapter_partitions_assigned", feed);
    if (parts != 3)
        fail_msg("ndd_adapter_partitions_assigned{feed=\"%s\"} = %g, want 3", feed, parts);
    double rewound = adapter_metric(am, "ndd_adapter_messages_rewound_total", feed);
    fprintf(stderr, "%s/%s %s: %zu distinct, %lld duplicates, %lld requests, %g rewound\n",
            transport, encoding, delivery, n,
            (long long)json_integer_value(json_object_get(sum, "duplicates")),
            (long long)json_integer_value(json_object_get(sum, "requests")), rewound);
    if (min_rewound > 0 && rewound < min_rewound) {
        json_decref(sum);
        fail_msg("feed %s rewound %g copies, want >= %g: the full-feed path was not exercised",
                 feed, rewound, min_rewound);
    }
    json_decref(sum);
    atu_stop(ad, SIGTERM);
    atu_stop(sink, SIGTERM);
    ktu_delete_topic(topic);
    atu_remove_tree(dir);
}

static void sink_case(const char *transport, const char *encoding, const char *scheme,
                      const char *delivery, size_t n)
{
    sink_case_rw(transport, encoding, scheme, delivery, n, 0, NULL, NULL, false);
}

/* More copies held than the feed has deliveries (hard_max / batch_max + 64 = 66 here; a
 * 6000-byte request fits one copy) while the endpoint is down: the feed must give copies back
 * (rewind) with later copies of the same partitions in the same poll, again and again until
 * the sink comes up. Every copy must still arrive. Before the fix the later copies were taken,
 * after which the rewound one was refused forever (ORDER, rewind, ORDER...) or skipped by the
 * next rewind's seek further on. */
static void test_full_feed_rewinds_lose_no_copy(void **state)
{
    sink_case_rw("tcp", "frame", "tcp",
                 "{\"max_in_flight\":4,\"batch_max\":100,\"batch_ms\":1,\"max_pending\":100,"
                 "\"max_request_bytes\":6000}",
                 1000, 10, NULL, NULL, true);
}

static void test_h2c_json_to_ndd_sink_every_seq_once(void **state)
{
    sink_case("http2", "json", "http", "{\"max_in_flight\":64}", 5000);
}

static void test_tcp_frames_to_ndd_sink_acked_every_seq(void **state)
{
    sink_case("tcp", "frame", "tcp", "{\"max_in_flight\":64}", 5000);
}

/* Several copies per request: a JSON array of envelopes, which ndd-sink unpacks. */
static void test_batched_h2c_json_arrays_to_ndd_sink_every_seq(void **state)
{
    sink_case("http2", "json", "http", "{\"max_in_flight\":32,\"batch_max\":16}", 5000);
}

/* A 1 MiB budget (64 KiB of prefetch per partition): 17 MB of backlog still drains within the
 * test's 60 s, i.e. the refetch after each emptied prefetch queue does not wait for
 * librdkafka's 1 s re-check (at 64 KiB per partition per second that would take over a
 * minute). */
static void test_tiny_memory_budget_still_drains_backlog(void **state)
{
    sink_case("http2", "json", "http", "{\"max_in_flight\":64,\"memory_mb\":1}", 5000);
}

static void test_batched_frames_to_ndd_sink_every_seq(void **state)
{
    sink_case("tcp", "frame", "tcp", "{\"max_in_flight\":16,\"batch_max\":50,\"batch_ms\":5}",
              5000);
}

/* Ten h2c feeds of one process on one slow sink (5 ms per answer), each with a topic of its
 * own: every copy of every feed arrives. The feeds share the process's event loops and the
 * sink's connection limits, which a single-feed case never exercises. (It does not reproduce
 * the stall of the reverted direct h2c socket writes, e95a4fe, which showed with ten feeds
 * on one topic at 20,000 copies each in bench/adapter/run.sh.) */
#define MULTI_FEEDS 10
#define MULTI_COPIES 1000
static void test_ten_h2c_feeds_on_one_slow_sink_deliver_every_copy(void **state)
{
    (void)state;
    char dir[] = "/tmp/ndd-adsink-multi-XXXXXX"; /* a mkdtemp template */
    assert_non_null(mkdtemp(dir));
    char topics[MULTI_FEEDS][128], feeds[MULTI_FEEDS][96];
    int dport = atu_free_port(27100, 27999), sm = atu_free_port(27100, 27999),
        am = atu_free_port(27100, 27999);
    char bin[600], ds[16], sms[16], exp[32], slog[700], alog[700], file[700];
    snprintf(bin, sizeof bin, "%s/bench/sink/ndd-sink", NDD_BINARY_DIR);
    snprintf(ds, sizeof ds, "%d", dport);
    snprintf(sms, sizeof sms, "%d", sm);
    snprintf(exp, sizeof exp, "%d", MULTI_FEEDS * MULTI_COPIES);
    snprintf(slog, sizeof slog, "%s/sink.log", dir);
    snprintf(alog, sizeof alog, "%s/adapter.log", dir);
    snprintf(file, sizeof file, "%s/feeds.json", dir);
    char *argv[] = {bin,          "--h2-port", ds,  "--metrics-port", sms, "--expect", exp,
                    "--delay-ms", "5",         NULL};
    pid_t sink = atu_spawn(argv, slog);
    assert_true(sink > 0);
    if (!atu_wait_port(dport, 5000) || !atu_wait_port(sm, 5000))
        fail_msg("ndd-sink did not start (log %s)", slog);
    char doc[8000];
    size_t o = (size_t)snprintf(doc, sizeof doc, "{\"feeds\":[");
    for (int i = 0; i < MULTI_FEEDS; i++) {
        ktu_unique_name("adsink-multi", topics[i], sizeof topics[i]);
        ktu_unique_name("feed-multi", feeds[i], sizeof feeds[i]);
        assert_int_equal(ktu_create_topic(topics[i], 3), 0);
        /* disjoint @seq ranges: the sink counts distinct copies over all feeds */
        assert_int_equal(
            atu_produce_copies(topics[i], (uint64_t)i * MULTI_COPIES, MULTI_COPIES, 3400), 0);
        o += (size_t)snprintf(doc + o, sizeof doc - o,
                              "%s{\"name\":\"%s\",\"source_topic\":\"%s\",\"transport\":\"http2\","
                              "\"encoding\":\"json\",\"endpoints\":[{\"url\":\"http://"
                              "127.0.0.1:%d/ingest\"}],\"delivery\":{\"max_in_flight\":64}}",
                              i ? "," : "", feeds[i], topics[i], dport);
        assert_true(o < sizeof doc);
    }
    snprintf(doc + o, sizeof doc - o, "]}");
    assert_int_equal(atu_write_file(file, doc), 0);
    pid_t ad = atu_start_adapter(file, am, alog, NULL);
    assert_true(ad > 0);
    json_t *sum = sink_wait_complete(sm, 90000, alog);
    assert_int_equal(json_integer_value(json_object_get(sum, "unique")),
                     MULTI_FEEDS * MULTI_COPIES);
    assert_int_equal(json_integer_value(json_object_get(sum, "missing")), 0);
    json_decref(sum);
    atu_stop(ad, SIGTERM);
    atu_stop(sink, SIGTERM);
    for (int i = 0; i < MULTI_FEEDS; i++)
        ktu_delete_topic(topics[i]);
    atu_remove_tree(dir);
}

int main(void)
{
    log_setup("test_adapter_sink", LOG_LEVEL_WARN, 0);
    signal(SIGPIPE, SIG_IGN);
    (void)ktu_brokers();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_feed_rewinds_lose_no_copy),
        cmocka_unit_test(test_h2c_json_to_ndd_sink_every_seq_once),
        cmocka_unit_test(test_tcp_frames_to_ndd_sink_acked_every_seq),
        cmocka_unit_test(test_batched_frames_to_ndd_sink_every_seq),
        cmocka_unit_test(test_batched_h2c_json_arrays_to_ndd_sink_every_seq),
        cmocka_unit_test(test_tiny_memory_budget_still_drains_backlog),
        cmocka_unit_test(test_ten_h2c_feeds_on_one_slow_sink_deliver_every_copy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
