/* The kafka transport end to end (real broker, ndd-adapter as a child, kcat as the independent
 * consumer): a kafka feed with an egress filter puts exactly the records the filter lets
 * through into its topic, each with its key, its headers and its body, every key in one
 * partition and in the order it was produced (by @seq); a kill -9 of the adapter mid-stream
 * loses nothing (at-least-once: every @seq is in the topic after the restart). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "adapter_testutil.h"
#include "kafka_testutil.h"
#include "log.h"

#define N_KEYS 16

static char tmpdir[256];

static int setup_all(void **state)
{
    (void)state;
    log_setup("test_kafka_feed", LOG_LEVEL_WARN, 0);
    signal(SIGPIPE, SIG_IGN);
    (void)ktu_brokers();
    return atu_scratch_make(tmpdir, sizeof tmpdir, "kafka-feed");
}

static int teardown_all(void **state)
{
    (void)state;
    atu_scratch_remove(tmpdir);
    return 0;
}

/* Records first..first+n-1: key k-(i % N_KEYS), @seq i, every third one an SCP copy (the
 * feed's filter drops those). */
static void produce(const char *topic, int first, int n, int big_seq)
{
    static char body[4000];
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    for (int i = first; i < first + n; i++) {
        char key[16], seq[16];
        snprintf(key, sizeof key, "k-%d", i % N_KEYS);
        snprintf(seq, sizeof seq, "%d", i);
        int bl = snprintf(body, sizeof body, "body-%d", i);
        if (i == big_seq) { /* above the feed topic's max.message.bytes */
            memset(body + bl, 'x', 3000);
            bl += 3000;
        }
        char ts[32];
        snprintf(ts, sizeof ts, "%lld", 1764486000000000LL + i);
        const char *h[] = {"@seq",
                           seq,
                           "@nf-type",
                           i % 3 == 0 ? "SCP" : "NRF",
                           ":method",
                           "GET",
                           ":path",
                           "/nnrf-disc/v1/nf-instances",
                           ":scheme",
                           "http",
                           "@timestamp-us",
                           ts,
                           "@message-type",
                           "request",
                           "@trigger-point",
                           "rx-request",
                           "@src-addr",
                           "10.0.0.1:40000",
                           "@dst-addr",
                           "10.0.0.2:8443",
                           "@correlation-id",
                           key};
        assert_int_equal(ktu_produce(p, topic, -1, key, strlen(key), body, (size_t)bl, h, 11), 0);
    }
    assert_int_equal(ktu_flush(p, 30000), 0);
    rd_kafka_destroy(p);
}

static void write_feed(const char *ff, const char *feed, const char *src, const char *dst,
                       int batch_max, const char *kafka)
{
    char doc[2000];
    snprintf(doc, sizeof doc,
             "{\"feeds\":[{\"name\":\"%s\",\"source_topic\":\"%s\",\"transport\":\"kafka\","
             "\"encoding\":\"frame\",\"endpoints\":[{\"url\":\"kafka://%s/%s\"}],"
             "\"delivery\":{\"batch_max\":%d,\"backoff_max_ms\":500},"
             "\"filter\":{\"name\":\"no-scp\",\"default\":\"allow\",\"rules\":[{\"name\":"
             "\"drop-scp\",\"action\":\"drop\",\"match\":{\"field\":\"@nf-type\",\"op\":"
             "\"equals\",\"value\":\"SCP\"}}]}%s}]}",
             feed, src, ktu_brokers(), dst, batch_max, kafka);
    assert_int_equal(atu_write_file(ff, doc), 0);
}

typedef struct got {
    int count;
    int *seen; /* by @seq */
    int part[N_KEYS];
    int last[N_KEYS]; /* last @seq of each key, for the order check */
    bool order_ok;
} got_t;

/* Reads the whole topic with kcat: partition, key, headers, body per line. */
static void read_back(const char *topic, int max_seq, got_t *g)
{
    char out[400], cmd[1200];
    snprintf(out, sizeof out, "%s/%s.kcat", tmpdir, topic);
    snprintf(cmd, sizeof cmd,
             "kcat -C -b %s -t %s -o beginning -e -q -X isolation.level=read_committed "
             "-f '%%p|%%k|%%h|%%s\\n' > %s",
             ktu_brokers(), topic, out);
    assert_int_equal(system(cmd), 0);
    FILE *f = fopen(out, "r");
    assert_non_null(f);
    memset(g, 0, sizeof *g);
    g->seen = calloc((size_t)max_seq, sizeof *g->seen);
    g->order_ok = true;
    for (int k = 0; k < N_KEYS; k++)
        g->part[k] = g->last[k] = -1;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        int p, k, seq, bseq;
        char hdrs[512];
        if (sscanf(line, "%d|k-%d|%511[^|]|body-%d", &p, &k, hdrs, &bseq) != 4)
            fail_msg("kcat line not as produced: %s", line);
        char *s = strstr(hdrs, "@seq=");
        assert_non_null(s);
        seq = atoi(s + 5);
        assert_int_equal(seq, bseq);
        assert_int_equal(k, seq % N_KEYS);
        if (!strstr(hdrs, "@nf-type=NRF") || !strstr(hdrs, ":method=GET"))
            fail_msg("record %d lacks its headers: %s", seq, hdrs);
        assert_true(seq >= 0 && seq < max_seq);
        if (g->part[k] >= 0 && g->part[k] != p)
            fail_msg("key k-%d in partitions %d and %d", k, g->part[k], p);
        g->part[k] = p;
        if (seq <= g->last[k])
            g->order_ok = false;
        g->last[k] = seq;
        g->seen[seq]++;
        g->count++;
    }
    fclose(f);
}

static void
test_kafka_feed_delivers_exactly_the_filtered_records_with_key_headers_and_order(void **st)
{
    (void)st;
    enum { N = 600 };
    char src[128], dst[128], feed[96], ff[400], log[400], group[200];
    ktu_unique_name("kf-src", src, sizeof src);
    ktu_unique_name("kf-dst", dst, sizeof dst);
    ktu_unique_name("kfeed", feed, sizeof feed);
    snprintf(ff, sizeof ff, "%s/%s.json", tmpdir, feed);
    snprintf(log, sizeof log, "%s/%s.log", tmpdir, feed);
    snprintf(group, sizeof group, "ndd-feed-%s", feed);
    assert_int_equal(ktu_create_topic(src, 2), 0);
    assert_int_equal(ktu_create_topic(dst, 3), 0);
    produce(src, 0, N, -1);
    write_feed(ff, feed, src, dst, 32, "");
    pid_t a = atu_start_adapter(ff, atu_free_port(27100, 27999), log, NULL);
    if (a <= 0)
        fail_msg("ndd-adapter did not start (log %s)", log);
    if (!atu_group_caught_up(src, group, 90000))
        fail_msg("feed did not catch up (log %s)", log);
    atu_stop(a, SIGTERM);
    got_t g;
    read_back(dst, N, &g);
    int want = 0;
    for (int i = 0; i < N; i++) {
        int w = i % 3 != 0;
        want += w;
        if (g.seen[i] != w)
            fail_msg("@seq %d in the feed topic %d times, want %d", i, g.seen[i], w);
    }
    assert_int_equal(g.count, want);
    assert_true(g.order_ok);
    free(g.seen);
}

static void test_kafka_feed_kill_9_mid_stream_loses_nothing(void **st)
{
    (void)st;
    enum { N = 6000 };
    char src[128], dst[128], feed[96], ff[400], log[400], group[200];
    ktu_unique_name("kf9-src", src, sizeof src);
    ktu_unique_name("kf9-dst", dst, sizeof dst);
    ktu_unique_name("kfeed9", feed, sizeof feed);
    snprintf(ff, sizeof ff, "%s/%s.json", tmpdir, feed);
    snprintf(log, sizeof log, "%s/%s.log", tmpdir, feed);
    snprintf(group, sizeof group, "ndd-feed-%s", feed);
    assert_int_equal(ktu_create_topic(src, 2), 0);
    assert_int_equal(ktu_create_topic(dst, 3), 0);
    produce(src, 0, N, -1);
    write_feed(ff, feed, src, dst, 32, "");
    int mport = atu_free_port(27100, 27999);
    pid_t a = atu_start_adapter(ff, mport, log, NULL);
    if (a <= 0)
        fail_msg("ndd-adapter did not start (log %s)", log);
    /* kill -9 once part of the stream is in the feed topic, not all of it */
    uint64_t until = atu_now_ms() + 60000;
    int64_t in = 0;
    while ((in = ktu_topic_record_count(dst, 5000)) < 200 && atu_now_ms() < until)
        ktu_sleep_ms(20);
    assert_true(in >= 200);
    atu_stop(a, SIGKILL);
    a = atu_start_adapter(ff, mport, log, NULL);
    if (a <= 0)
        fail_msg("ndd-adapter did not restart (log %s)", log);
    if (!atu_group_caught_up(src, group, 90000))
        fail_msg("feed did not catch up after the restart (log %s)", log);
    atu_stop(a, SIGTERM);
    got_t g;
    read_back(dst, N, &g);
    int dups = 0;
    for (int i = 0; i < N; i++) {
        int w = i % 3 != 0;
        if (w && g.seen[i] < 1)
            fail_msg("@seq %d lost across the kill -9", i);
        if (!w && g.seen[i])
            fail_msg("@seq %d (filtered out) in the feed topic", i);
        dups += g.seen[i] > 1 ? g.seen[i] - 1 : 0;
    }
    print_message("kill -9 at %lld records in the feed topic: %d duplicates (at-least-once)\n",
                  (long long)in, dups);
    free(g.seen);
}

/* A record the feed topic refuses for good (above its max.message.bytes, also the producer's
 * through kafka.config) goes to the feed's DLQ with the reason, alone; every other record is
 * in the feed topic once. */
static void test_kafka_feed_record_too_large_goes_to_the_dlq_with_the_reason(void **st)
{
    (void)st;
    enum { N = 60, BIG = 31 };
    char src[128], dst[128], feed[96], ff[400], log[400], group[200], dlq[200];
    ktu_unique_name("kfb-src", src, sizeof src);
    ktu_unique_name("kfb-dst", dst, sizeof dst);
    ktu_unique_name("kfeedb", feed, sizeof feed);
    snprintf(ff, sizeof ff, "%s/%s.json", tmpdir, feed);
    snprintf(log, sizeof log, "%s/%s.log", tmpdir, feed);
    snprintf(group, sizeof group, "ndd-feed-%s", feed);
    snprintf(dlq, sizeof dlq, "ndd.dlq.%s", feed);
    static const char *const small[] = {"max.message.bytes=2000"};
    assert_int_equal(ktu_create_topic(src, 1), 0);
    assert_int_equal(ktu_create_topic_cfg(dst, 1, small, 1), 0);
    produce(src, 0, N, BIG);
    /* the producer's message.max.bytes that of the topic: librdkafka refuses the big record
     * alone, before it is batched with others */
    write_feed(ff, feed, src, dst, 1, ",\"kafka\":{\"config\":{\"message.max.bytes\":\"2000\"}}");
    pid_t a = atu_start_adapter(ff, atu_free_port(27100, 27999), log, NULL);
    if (a <= 0)
        fail_msg("ndd-adapter did not start (log %s)", log);
    if (!atu_group_caught_up(src, group, 90000))
        fail_msg("feed did not catch up (log %s)", log);
    atu_stop(a, SIGTERM);
    got_t g;
    read_back(dst, N, &g);
    assert_int_equal(g.seen[BIG], 0);
    char out[700], cmd[1200];
    snprintf(out, sizeof out, "%s/%s.kcat", tmpdir, dlq);
    snprintf(cmd, sizeof cmd, "kcat -C -b %s -t %s -o beginning -e -q -f '%%h|%%s\\n' > %s",
             ktu_brokers(), dlq, out);
    assert_int_equal(system(cmd), 0);
    char *d = atu_read_file(out);
    assert_non_null(d);
    if (!strstr(d, "MSG_SIZE_TOO_LARGE"))
        fail_msg("the DLQ lacks the broker's reason: %.500s", d);
    char want[32];
    for (int i = 0; i < N; i++) {
        if (i % 3 == 0)
            continue;
        snprintf(want, sizeof want, "@seq=%d,", i);
        bool in_dlq = strstr(d, want) != NULL;
        if (i == BIG && !in_dlq)
            fail_msg("the too-large record %d is not in the DLQ", i);
        if (i != BIG && (in_dlq || g.seen[i] != 1))
            fail_msg("@seq %d: %d times in the feed topic, %s the DLQ", i, g.seen[i],
                     in_dlq ? "in" : "not in");
    }
    free(d);
    free(g.seen);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_kafka_feed_delivers_exactly_the_filtered_records_with_key_headers_and_order),
        cmocka_unit_test(test_kafka_feed_kill_9_mid_stream_loses_nothing),
        cmocka_unit_test(test_kafka_feed_record_too_large_goes_to_the_dlq_with_the_reason),
    };
    return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
