/* The kafka transport end to end (real broker, ndd-adapter as a child, kcat as the independent
 * consumer): a kafka feed with an egress filter puts exactly the records the filter lets
 * through into its topic, each with its key, its headers and its body, every key in one
 * partition and in the order it was produced (by @seq). Exactly once: a read_committed
 * consumer sees every @seq once across a kill -9 of the adapter mid-stream (a
 * read_uncommitted one also sees the killed instance's aborted records) and across a
 * rebalance 1 -> 2 -> 1 of two adapter processes; with kafka.exactly_once false the feed says
 * at-least-once. A correlated feed (xDRs, pass-through) carries exactly the xDRs its filter
 * selects, key, headers and value as they are. */
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

/* Reads the whole topic with kcat: partition, key, headers, body per line; read_committed
 * (only records of committed transactions) unless uncommitted. */
static void read_back_iso(const char *topic, int max_seq, got_t *g, bool uncommitted)
{
    char out[400], cmd[1200];
    snprintf(out, sizeof out, "%s/%s.%s.kcat", tmpdir, topic, uncommitted ? "ru" : "rc");
    snprintf(cmd, sizeof cmd,
             "kcat -C -b %s -t %s -o beginning -e -q -X isolation.level=%s "
             "-f '%%p|%%k|%%h|%%s\\n' > %s",
             ktu_brokers(), topic, uncommitted ? "read_uncommitted" : "read_committed", out);
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

static void read_back(const char *topic, int max_seq, got_t *g)
{
    read_back_iso(topic, max_seq, g, false);
}

/* The value of the feed's series of a metric on the adapter's /metrics, -1 when absent. */
static double feed_metric(int port, const char *name, const char *feed)
{
    char cmd[600], line[512];
    snprintf(cmd, sizeof cmd, "curl -s --max-time 5 http://127.0.0.1:%d/metrics", port);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char want[300];
    snprintf(want, sizeof want, "%s{feed=\"%s\"} ", name, feed);
    double v = -1;
    while (fgets(line, sizeof line, p))
        if (!strncmp(line, want, strlen(want)))
            v = atof(line + strlen(want));
    pclose(p);
    return v;
}

/* A consumer handle for watermark queries: with read_committed the high watermark it gets is
 * the last stable offset (the first offset of the oldest open transaction). */
static rd_kafka_t *watermark_reader(const char *isolation)
{
    char e[256];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    if (rd_kafka_conf_set(c, "bootstrap.servers", ktu_brokers(), e, sizeof e) ||
        rd_kafka_conf_set(c, "isolation.level", isolation, e, sizeof e))
        fail_msg("conf: %s", e);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, e, sizeof e);
    if (!rk)
        fail_msg("consumer: %s", e);
    return rk;
}

/* Records of the topic's partitions 0..parts-1 above their last stable offset: produced in a
 * transaction still open. -1 on a query error. */
static int64_t records_in_open_txns(rd_kafka_t *ru, rd_kafka_t *rc, const char *topic, int parts)
{
    int64_t n = 0;
    for (int i = 0; i < parts; i++) {
        int64_t lo, hw, lso;
        if (rd_kafka_query_watermark_offsets(ru, topic, i, &lo, &hw, 5000) ||
            rd_kafka_query_watermark_offsets(rc, topic, i, &lo, &lso, 5000))
            return -1;
        n += hw - lso;
    }
    return n;
}

/* Every @seq the filter lets through (not every third) exactly once, no other. */
static void assert_each_once(const got_t *g, int n, const char *what)
{
    for (int i = 0; i < n; i++) {
        int w = i % 3 != 0;
        if (g->seen[i] != w)
            fail_msg("@seq %d in the feed topic %d times, want %d (%s)", i, g->seen[i], w, what);
    }
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
    int mport = atu_free_port(27100, 27999);
    pid_t a = atu_start_adapter(ff, mport, log, NULL);
    if (a <= 0)
        fail_msg("ndd-adapter did not start (log %s)", log);
    if (!atu_group_caught_up(src, group, 90000))
        fail_msg("feed did not catch up (log %s)", log);
    /* the mode in effect and the transactions, as the feed reports them */
    assert_true(feed_metric(mport, "ndd_adapter_kafka_exactly_once", feed) == 1);
    assert_true(feed_metric(mport, "ndd_adapter_kafka_transactions_committed_total", feed) >= 1);
    assert_true(feed_metric(mport, "ndd_adapter_kafka_messages_produced_total", feed) == N - N / 3);
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

/* A kill -9 leaves a transaction open; the restarted instance (same transactional.id) aborts
 * it and produces its records again from the committed offsets: read_committed sees every
 * @seq once, read_uncommitted sees the aborted copies too. */
static void test_kafka_feed_kill_9_mid_stream_read_committed_sees_each_record_once(void **st)
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
    /* kill -9 mid-stream, with records of an open transaction in the feed topic */
    rd_kafka_t *ru = watermark_reader("read_uncommitted"), *rc = watermark_reader("read_committed");
    uint64_t until = atu_now_ms() + 60000;
    int64_t in = 0;
    while ((in = records_in_open_txns(ru, rc, dst, 3)) < 50 && atu_now_ms() < until)
        ktu_sleep_ms(2);
    atu_stop(a, SIGKILL);
    rd_kafka_destroy(ru);
    rd_kafka_destroy(rc);
    if (in < 50)
        fail_msg("no open transaction with 50 records seen in the feed topic (log %s)", log);
    a = atu_start_adapter(ff, mport, log, NULL);
    if (a <= 0)
        fail_msg("ndd-adapter did not restart (log %s)", log);
    if (!atu_group_caught_up(src, group, 90000))
        fail_msg("feed did not catch up after the restart (log %s)", log);
    atu_stop(a, SIGTERM);
    got_t g, u;
    read_back(dst, N, &g);
    assert_each_once(&g, N, "read_committed across a kill -9");
    read_back_iso(dst, N, &u, true);
    int aborted = 0;
    for (int i = 0; i < N; i++) {
        if (u.seen[i] < g.seen[i])
            fail_msg("@seq %d: read_uncommitted saw it %d times, read_committed %d", i, u.seen[i],
                     g.seen[i]);
        aborted += u.seen[i] - g.seen[i];
    }
    print_message("kill -9 with %lld records of an open transaction in the feed topic: %d "
                  "aborted record(s) seen by read_uncommitted, none by read_committed\n",
                  (long long)in, aborted);
    if (aborted == 0)
        fail_msg("the kill -9 left no aborted record: the test proved nothing (log %s)", log);
    free(g.seen);
    free(u.seen);
}

/* Two adapter processes for the same feed, then one: each rebalance commits or aborts the
 * open transaction before the partitions move; read_committed sees every @seq once. */
static void test_kafka_feed_rebalance_1_2_1_read_committed_sees_each_record_once(void **st)
{
    (void)st;
    enum { N1 = 3000, N2 = 3000, N3 = 1500, N = N1 + N2 + N3 };
    char src[128], dst[128], feed[96], ff[400], loga[400], logb[400], group[200];
    ktu_unique_name("kfr-src", src, sizeof src);
    ktu_unique_name("kfr-dst", dst, sizeof dst);
    ktu_unique_name("kfeedr", feed, sizeof feed);
    snprintf(ff, sizeof ff, "%s/%s.json", tmpdir, feed);
    snprintf(loga, sizeof loga, "%s/%s.a.log", tmpdir, feed);
    snprintf(logb, sizeof logb, "%s/%s.b.log", tmpdir, feed);
    snprintf(group, sizeof group, "ndd-feed-%s", feed);
    assert_int_equal(ktu_create_topic(src, 4), 0);
    assert_int_equal(ktu_create_topic(dst, 3), 0);
    produce(src, 0, N1, -1);
    write_feed(ff, feed, src, dst, 32, "");
    int pa = atu_free_port(27100, 27999);
    pid_t a = atu_start_adapter(ff, pa, loga, NULL);
    if (a <= 0)
        fail_msg("ndd-adapter A did not start (log %s)", loga);
    uint64_t until = atu_now_ms() + 60000;
    while (ktu_topic_record_count(dst, 5000) < 200 && atu_now_ms() < until)
        ktu_sleep_ms(20);
    int pb = atu_free_port(28000, 28999);
    pid_t b = atu_start_adapter(ff, pb, logb, NULL); /* 1 -> 2 */
    if (b <= 0)
        fail_msg("ndd-adapter B did not start (log %s)", logb);
    /* the rebalance: B gets half of the partitions (A committed or aborted before) */
    until = atu_now_ms() + 30000;
    while (!atu_count_in_file(logb, "2 partition(s) of") && atu_now_ms() < until)
        ktu_sleep_ms(50);
    if (!atu_count_in_file(logb, "2 partition(s) of"))
        fail_msg("instance B never got partitions (log %s)", logb);
    produce(src, N1, N2, -1);
    if (!atu_group_caught_up(src, group, 90000))
        fail_msg("feed did not catch up with two instances (logs %s %s)", loga, logb);
    atu_stop(b, SIGTERM); /* 2 -> 1: A takes B's partitions back */
    produce(src, N1 + N2, N3, -1);
    if (!atu_group_caught_up(src, group, 90000))
        fail_msg("feed did not catch up after B stopped (logs %s %s)", loga, logb);
    atu_stop(a, SIGTERM);
    got_t g;
    read_back(dst, N, &g);
    assert_each_once(&g, N, "read_committed across a rebalance 1 -> 2 -> 1");
    free(g.seen);
}

/* kafka.exactly_once false: the idempotent producer, the offsets stored by the feed, and the
 * mode said in the feed's metrics. */
static void test_kafka_feed_exactly_once_off_reports_at_least_once(void **st)
{
    (void)st;
    enum { N = 90 };
    char src[128], dst[128], feed[96], ff[400], log[400], group[200];
    ktu_unique_name("kfa-src", src, sizeof src);
    ktu_unique_name("kfa-dst", dst, sizeof dst);
    ktu_unique_name("kfeeda", feed, sizeof feed);
    snprintf(ff, sizeof ff, "%s/%s.json", tmpdir, feed);
    snprintf(log, sizeof log, "%s/%s.log", tmpdir, feed);
    snprintf(group, sizeof group, "ndd-feed-%s", feed);
    assert_int_equal(ktu_create_topic(src, 1), 0);
    assert_int_equal(ktu_create_topic(dst, 1), 0);
    produce(src, 0, N, -1);
    write_feed(ff, feed, src, dst, 8, ",\"kafka\":{\"exactly_once\":false}");
    int mport = atu_free_port(27100, 27999);
    pid_t a = atu_start_adapter(ff, mport, log, NULL);
    if (a <= 0)
        fail_msg("ndd-adapter did not start (log %s)", log);
    if (!atu_group_caught_up(src, group, 90000))
        fail_msg("feed did not catch up (log %s)", log);
    assert_true(feed_metric(mport, "ndd_adapter_kafka_exactly_once", feed) == 0);
    assert_true(feed_metric(mport, "ndd_adapter_kafka_transactions_committed_total", feed) == 0);
    assert_true(feed_metric(mport, "ndd_adapter_kafka_messages_produced_total", feed) == N - N / 3);
    atu_stop(a, SIGTERM);
    if (!atu_count_in_file(log, "at-least-once: idempotent"))
        fail_msg("the log does not say at-least-once (log %s)", log);
    got_t g;
    read_back(dst, N, &g);
    assert_each_once(&g, N, "at-least-once, no failure");
    free(g.seen);
}

/* A correlated-filtered feed: xDRs of an XDR topic (JSON values keyed by correlation id),
 * pass-through, a filter on the xDR's members: exactly the matching xDRs, each with its key,
 * its headers and its value byte for byte. */
static void test_kafka_feed_correlated_carries_exactly_the_filtered_xdrs(void **st)
{
    (void)st;
    enum { N = 120 };
    char src[128], dst[128], feed[96], ff[400], log[400], group[200], doc[2000];
    ktu_unique_name("kfx-xdr", src, sizeof src);
    ktu_unique_name("kfx-dst", dst, sizeof dst);
    ktu_unique_name("kfeedx", feed, sizeof feed);
    snprintf(ff, sizeof ff, "%s/%s.json", tmpdir, feed);
    snprintf(log, sizeof log, "%s/%s.log", tmpdir, feed);
    snprintf(group, sizeof group, "ndd-feed-%s", feed);
    assert_int_equal(ktu_create_topic(src, 2), 0);
    assert_int_equal(ktu_create_topic(dst, 2), 0);
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    for (int i = 0; i < N; i++) {
        char key[32], val[400], idx[16];
        snprintf(key, sizeof key, "c-%d", i);
        snprintf(idx, sizeof idx, "%d", i);
        int vl = snprintf(val, sizeof val,
                          "{\"correlation_id\":\"c-%d\",\"nf_type\":\"%s\",\"status_code\":%d,"
                          "\"timestamps_us\":{\"rx-request\":%d},\"completion\":\"complete\"}",
                          i, i % 2 ? "SCP" : "NRF", i % 4 == 0 ? 503 : 200, i);
        const char *h[] = {"x-idx", idx};
        assert_int_equal(ktu_produce(p, src, -1, key, strlen(key), val, (size_t)vl, h, 1), 0);
    }
    assert_int_equal(ktu_flush(p, 30000), 0);
    rd_kafka_destroy(p);
    snprintf(doc, sizeof doc,
             "{\"feeds\":[{\"name\":\"%s\",\"source_topic\":\"%s\",\"transport\":\"kafka\","
             "\"encoding\":\"passthrough\",\"endpoints\":[{\"url\":\"kafka://%s/%s\"}],"
             "\"delivery\":{\"backoff_max_ms\":500},"
             "\"filter\":{\"name\":\"errors\",\"default\":\"drop\",\"rules\":[{\"name\":\"5xx\","
             "\"action\":\"allow\",\"match\":{\"field\":\"status_code\",\"op\":\"ge\","
             "\"value\":500}}]}}]}",
             feed, src, ktu_brokers(), dst);
    assert_int_equal(atu_write_file(ff, doc), 0);
    pid_t a = atu_start_adapter(ff, atu_free_port(27100, 27999), log, NULL);
    if (a <= 0)
        fail_msg("ndd-adapter did not start (log %s)", log);
    if (!atu_group_caught_up(src, group, 90000))
        fail_msg("feed did not catch up (log %s)", log);
    atu_stop(a, SIGTERM);
    char out[400], cmd[1200];
    snprintf(out, sizeof out, "%s/%s.kcat", tmpdir, dst);
    snprintf(cmd, sizeof cmd,
             "kcat -C -b %s -t %s -o beginning -e -q -X isolation.level=read_committed "
             "-f '%%k|%%h|%%s\\n' > %s",
             ktu_brokers(), dst, out);
    assert_int_equal(system(cmd), 0);
    FILE *f = fopen(out, "r");
    assert_non_null(f);
    int seen[N] = {0}, count = 0;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        int k, hi;
        char val[600], want[400];
        if (sscanf(line, "c-%d|x-idx=%d|%599[^\n]", &k, &hi, val) != 3)
            fail_msg("kcat line not as produced: %s", line);
        assert_true(k >= 0 && k < N && hi == k);
        snprintf(want, sizeof want,
                 "{\"correlation_id\":\"c-%d\",\"nf_type\":\"%s\",\"status_code\":%d,"
                 "\"timestamps_us\":{\"rx-request\":%d},\"completion\":\"complete\"}",
                 k, k % 2 ? "SCP" : "NRF", k % 4 == 0 ? 503 : 200, k);
        assert_string_equal(val, want);
        seen[k]++;
        count++;
    }
    fclose(f);
    for (int i = 0; i < N; i++)
        if (seen[i] != (i % 4 == 0))
            fail_msg("xDR c-%d in the feed topic %d times, want %d", i, seen[i], i % 4 == 0);
    assert_int_equal(count, N / 4);
}

/* One record (@seq BIG, above the feed topic's max.message.bytes of 2000) among N, one record
 * per send; kafka is the feed's "kafka" object. When the feed has caught up: the big record
 * is in the DLQ once with the broker's reason (and, for a refusal inside a transaction, the
 * abort named in it and counted), every other record passing the filter in the feed topic
 * once and not in the DLQ. */
static void refusal_goes_to_the_dlq(const char *pfx, const char *kafka, bool in_txn)
{
    enum { N = 60, BIG = 31 };
    char src[128], dst[128], feed[96], ff[400], log[400], group[200], dlq[200], n[64];
    snprintf(n, sizeof n, "%s-src", pfx);
    ktu_unique_name(n, src, sizeof src);
    snprintf(n, sizeof n, "%s-dst", pfx);
    ktu_unique_name(n, dst, sizeof dst);
    snprintf(n, sizeof n, "%sfeed", pfx);
    ktu_unique_name(n, feed, sizeof feed);
    snprintf(ff, sizeof ff, "%s/%s.json", tmpdir, feed);
    snprintf(log, sizeof log, "%s/%s.log", tmpdir, feed);
    snprintf(group, sizeof group, "ndd-feed-%s", feed);
    snprintf(dlq, sizeof dlq, "ndd.dlq.%s", feed);
    static const char *const small[] = {"max.message.bytes=2000"};
    assert_int_equal(ktu_create_topic(src, 1), 0);
    assert_int_equal(ktu_create_topic_cfg(dst, 1, small, 1), 0);
    produce(src, 0, N, BIG);
    write_feed(ff, feed, src, dst, 1, kafka);
    int mport = atu_free_port(27100, 27999);
    pid_t a = atu_start_adapter(ff, mport, log, NULL);
    if (a <= 0)
        fail_msg("ndd-adapter did not start (log %s)", log);
    if (!atu_group_caught_up(src, group, 90000))
        fail_msg("feed did not catch up (log %s)", log);
    if (in_txn) {
        assert_true(feed_metric(mport, "ndd_adapter_kafka_exactly_once", feed) == 1);
        assert_true(feed_metric(mport, "ndd_adapter_kafka_transactions_aborted_total", feed) >= 1);
        /* The producer's abort, not the broker's transaction timeout (which fences it and
         * leaves a new producer to rewind): the abort waits for the sends behind the refusal
         * up to message.timeout.ms, so the transaction must outlive that. */
        char *l = atu_read_file(log);
        assert_non_null(l);
        if (!strstr(l, "; aborted, produced again from the last committed offsets"))
            fail_msg("the transaction was not aborted by the feed (log %s)", log);
        free(l);
    }
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
    if (!strstr(d, "MSG_SIZE_TOO_LARGE") || (in_txn && !strstr(d, "aborted")))
        fail_msg("the DLQ lacks the reason: %.500s", d);
    char want[32];
    for (int i = 0; i < N; i++) {
        if (i % 3 == 0)
            continue;
        snprintf(want, sizeof want, "@seq=%d,", i);
        const char *at = strstr(d, want);
        if (i == BIG && (!at || strstr(at + 1, want)))
            fail_msg("the refused record %d is %s the DLQ", i, at ? "more than once in" : "not in");
        if (i != BIG && (at || g.seen[i] != 1))
            fail_msg("@seq %d: %d times in the feed topic, %s the DLQ", i, g.seen[i],
                     at ? "in" : "not in");
    }
    free(d);
    free(g.seen);
}

/* The producer's message.max.bytes that of the topic (through kafka.config): librdkafka
 * refuses the big record alone, before it is batched with others or produced. */
static void test_kafka_feed_record_too_large_goes_to_the_dlq_with_the_reason(void **st)
{
    (void)st;
    refusal_goes_to_the_dlq("kfb", ",\"kafka\":{\"config\":{\"message.max.bytes\":\"2000\"}}",
                            false);
}

/* The producer's limits let the big record through (batch.size keeps the small records'
 * batches under the topic's limit; the big one is sent alone): the broker refuses it inside
 * a transaction, which aborts; on the replay its batch is dead-lettered instead of being
 * produced into the next transaction again, so the feed catches up. */
static void test_kafka_feed_broker_refusal_in_a_transaction_goes_to_the_dlq_once(void **st)
{
    (void)st;
    refusal_goes_to_the_dlq("kfr", ",\"kafka\":{\"config\":{\"batch.size\":\"1000\"}}", true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_kafka_feed_delivers_exactly_the_filtered_records_with_key_headers_and_order),
        cmocka_unit_test(test_kafka_feed_kill_9_mid_stream_read_committed_sees_each_record_once),
        cmocka_unit_test(test_kafka_feed_rebalance_1_2_1_read_committed_sees_each_record_once),
        cmocka_unit_test(test_kafka_feed_exactly_once_off_reports_at_least_once),
        cmocka_unit_test(test_kafka_feed_correlated_carries_exactly_the_filtered_xdrs),
        cmocka_unit_test(test_kafka_feed_record_too_large_goes_to_the_dlq_with_the_reason),
        cmocka_unit_test(test_kafka_feed_broker_refusal_in_a_transaction_goes_to_the_dlq_once),
    };
    return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
