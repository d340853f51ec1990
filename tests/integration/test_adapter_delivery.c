/* ndd-adapter end to end on the real broker (NDD_TEST_KAFKA): copies produced to a unique
 * source topic, the daemon started as a child process (killed by PID), endpoints that are
 * not NDD code (nghttpd for HTTP/2 cleartext and TLS) and recording endpoints run by the test
 * (for scripted faults and counting by @seq at the receiving side). Endpoint outages last
 * 30 s, the outage the adapter must ride out without loss (NDD_TEST_OUTAGE_MS shortens them for
 * quick local runs). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "adapter_testutil.h"
#include "kafka_testutil.h"
#include "log.h"
#include "tls.h"
#include "tls_testutil.h"

static tls_testutil_pki_t pki;
static char tmpdir[460];

typedef struct tctx {
    char topic[128];
    char feed[96];
    char feeds_file[600];
    char log[600];
    int mport;
    pid_t adapter;
} tctx_t;

static int setup_all(void **state)
{
    log_setup("test_adapter_delivery", LOG_LEVEL_WARN, 0);
    signal(SIGPIPE, SIG_IGN);
    (void)ktu_brokers(); /* fails the run clearly when NDD_TEST_KAFKA is unset */
    if (tls_testutil_make_pki(&pki) != 0)
        return -1;
    snprintf(tmpdir, sizeof tmpdir, "%s", pki.dir);
    return 0;
}

static int teardown_all(void **state)
{
    tls_testutil_remove_pki(&pki);
    atu_remove_tree(tmpdir); /* logs and feeds files of the tests */
    return 0;
}

static void tctx_init(tctx_t *t, const char *what, int partitions)
{
    memset(t, 0, sizeof *t);
    ktu_unique_name("adapter-src", t->topic, sizeof t->topic);
    ktu_unique_name(what, t->feed, sizeof t->feed);
    snprintf(t->feeds_file, sizeof t->feeds_file, "%s/%s.json", tmpdir, t->feed);
    snprintf(t->log, sizeof t->log, "%s/%s.log", tmpdir, t->feed);
    t->mport = atu_free_port(27100, 27999);
    assert_int_equal(ktu_create_topic(t->topic, partitions), 0);
}

static void tctx_done(tctx_t *t)
{
    if (t->adapter > 0)
        atu_stop(t->adapter, SIGTERM);
    ktu_delete_topic(t->topic);
}

/* One feed object; endpoints_json e.g. [{"url":"http://127.0.0.1:1/x"}]. */
static void feed_json(char *out, size_t n, const char *name, const char *topic,
                      const char *transport, const char *encoding, const char *endpoints_json,
                      const char *extra)
{
    snprintf(out, n,
             "{\"name\":\"%s\",\"source_topic\":\"%s\",\"transport\":\"%s\",\"encoding\":\"%s\","
             "\"endpoints\":%s,\"delivery\":{\"max_in_flight\":32,\"timeout_ms\":2000,"
             "\"retry_max_ms\":60000,\"retry_backoff_max_ms\":1000,\"backoff_max_ms\":2000}%s%s}",
             name, topic, transport, encoding, endpoints_json, extra ? "," : "",
             extra ? extra : "");
}

static void write_feeds(tctx_t *t, const char *feeds_array_items)
{
    char *doc = malloc(strlen(feeds_array_items) + 32);
    sprintf(doc, "{\"feeds\":[%s]}", feeds_array_items);
    assert_int_equal(atu_write_file(t->feeds_file, doc), 0);
    free(doc);
}

static void start_adapter(tctx_t *t)
{
    t->adapter = atu_start_adapter(t->feeds_file, t->mport, t->log, NULL);
    if (t->adapter <= 0)
        fail_msg("ndd-adapter did not start (log %s)", t->log);
}

typedef struct srvwait {
    atu_srv_t *a, *b;
    uint64_t from, to;
} srvwait_t;

static bool union_has_all(const srvwait_t *w)
{
    for (uint64_t i = w->from; i < w->to; i++)
        if (!(w->a && atu_srv_has(w->a, i)) && !(w->b && atu_srv_has(w->b, i)))
            return false;
    return true;
}

static bool wait_all(const srvwait_t *w, int timeout_ms)
{
    uint64_t end = atu_now_ms() + (uint64_t)timeout_ms;
    while (!union_has_all(w)) {
        if (atu_now_ms() > end)
            return false;
        usleep(50000);
    }
    return true;
}

static pid_t start_nghttpd(int port, bool tls, const char *key, const char *cert, const char *log)
{
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    pid_t pid;
    if (tls) {
        char *argv[] = {"nghttpd", "-v",        "--echo-upload", "-a", "127.0.0.1",
                        ps,        (char *)key, (char *)cert,    NULL};
        pid = atu_spawn(argv, log);
    } else {
        char *argv[] = {"nghttpd", "-v", "--echo-upload", "--no-tls", "-a", "127.0.0.1", ps, NULL};
        pid = atu_spawn(argv, log);
    }
    assert_true(pid > 0);
    if (!atu_wait_port(port, 5000))
        fail_msg("nghttpd did not listen on %d", port);
    return pid;
}

static void nghttpd_case(bool tls)
{
    enum { N = 400 };
    tctx_t t;
    tctx_init(&t, tls ? "feed-h2tls" : "feed-h2c", 3);
    int port = atu_free_port(27100, 27999);
    char nglog[700];
    snprintf(nglog, sizeof nglog, "%s/nghttpd-%s.log", tmpdir, t.feed);
    pid_t ng = start_nghttpd(port, tls, pki.server_key, pki.server_cert, nglog);
    char eps[200], f[2000], extra[800];
    snprintf(eps, sizeof eps, "[{\"url\":\"%s://127.0.0.1:%d/ingest\"}]", tls ? "https" : "http",
             port);
    snprintf(extra, sizeof extra, "\"tls\":{\"ca_file\":\"%s\"}", pki.ca_cert);
    feed_json(f, sizeof f, t.feed, t.topic, "http2", "json", eps, tls ? extra : NULL);
    write_feeds(&t, f);
    assert_int_equal(atu_produce_copies(t.topic, 0, N, 3400), 0);
    start_adapter(&t);
    char group[200];
    snprintf(group, sizeof group, "ndd-feed-%s", t.feed);
    /* Offsets are committed only after acknowledgement: caught up = all acknowledged. */
    if (!atu_group_caught_up(t.topic, group, 60000))
        fail_msg("group %s did not commit every offset (adapter log %s)", group, t.log);
    size_t posts = atu_count_in_file(nglog, ":method: POST");
    if (posts < N)
        fail_msg("nghttpd saw %zu POSTs, want >= %d", posts, N);
    atu_stop(ng, SIGTERM);
    tctx_done(&t);
}

static void test_h2c_to_nghttpd_delivers_everything(void **state)
{
    nghttpd_case(false);
}

static void test_h2_tls_to_nghttpd_delivers_everything(void **state)
{
    nghttpd_case(true);
}

static void test_frames_over_tcp_and_tls_deliver_every_seq(void **state)
{
    enum { N = 2000 };
    tctx_t t;
    tctx_init(&t, "feed-frames", 3);
    int p1 = atu_free_port(27100, 27999), p2 = atu_free_port(27100, 27999);
    char err[256];
    tls_config_t sc = {.cert_file = pki.server_cert, .key_file = pki.server_key};
    SSL_CTX *sctx = tls_server_ctx_new(&sc, err, sizeof err);
    assert_non_null(sctx);
    atu_srv_t *a = atu_srv_start(ATU_SRV_FRAME, p1, NULL);
    atu_srv_t *b = atu_srv_start(ATU_SRV_FRAME, p2, sctx);
    assert_non_null(a);
    assert_non_null(b);
    char eps1[200], eps2[200], f1[2000], f2[2000], both[4200], extra[800];
    snprintf(eps1, sizeof eps1, "[{\"url\":\"tcp://127.0.0.1:%d\"}]", p1);
    snprintf(eps2, sizeof eps2, "[{\"url\":\"tls://127.0.0.1:%d\"}]", p2);
    snprintf(extra, sizeof extra, "\"tls\":{\"ca_file\":\"%s\"}", pki.ca_cert);
    char fa[128], fb[128];
    snprintf(fa, sizeof fa, "%s-tcp", t.feed);
    snprintf(fb, sizeof fb, "%s-tls", t.feed);
    feed_json(f1, sizeof f1, fa, t.topic, "tcp", "frame", eps1, NULL);
    feed_json(f2, sizeof f2, fb, t.topic, "tls", "frame", eps2, extra);
    snprintf(both, sizeof both, "%s,%s", f1, f2);
    write_feeds(&t, both);
    assert_int_equal(atu_produce_copies(t.topic, 0, N, 3400), 0);
    start_adapter(&t);
    srvwait_t wa = {a, NULL, 0, N}, wb = {b, NULL, 0, N};
    if (!wait_all(&wa, 60000))
        fail_msg("tcp: %zu of %d distinct seq (log %s)", atu_srv_distinct(a), N, t.log);
    if (!wait_all(&wb, 60000))
        fail_msg("tls: %zu of %d distinct seq (log %s)", atu_srv_distinct(b), N, t.log);
    atu_stop(t.adapter, SIGTERM);
    t.adapter = 0;
    atu_srv_stop(a);
    atu_srv_stop(b);
    tls_ctx_free(sctx);
    tctx_done(&t);
}

/* How long an endpoint stays dead in the outage tests. */
static uint64_t outage_ms(void)
{
    const char *e = getenv("NDD_TEST_OUTAGE_MS");
    long v = e ? strtol(e, NULL, 10) : 0;
    return v > 0 ? (uint64_t)v : 30000;
}

static void test_endpoint_outage_loses_nothing_and_second_endpoint_takes_load(void **state)
{
    enum { N1 = 500, N2 = 1000, N3 = 500 };
    tctx_t t;
    tctx_init(&t, "feed-outage", 3);
    int pa = atu_free_port(27100, 27999), pb = atu_free_port(27100, 27999);
    atu_srv_t *a = atu_srv_start(ATU_SRV_H2, pa, NULL);
    atu_srv_t *b = atu_srv_start(ATU_SRV_H2, pb, NULL);
    char eps[300], f[2000];
    snprintf(eps, sizeof eps,
             "[{\"url\":\"http://127.0.0.1:%d/in\",\"weight\":1},"
             "{\"url\":\"http://127.0.0.1:%d/in\",\"weight\":1}]",
             pa, pb);
    feed_json(f, sizeof f, t.feed, t.topic, "http2", "json", eps, NULL);
    write_feeds(&t, f);
    start_adapter(&t);
    assert_int_equal(atu_produce_copies(t.topic, 0, N1, 3400), 0);
    srvwait_t w = {a, b, 0, N1};
    assert_true(wait_all(&w, 60000));
    assert_true(atu_srv_total(a) > 0); /* both share the load while healthy */
    assert_true(atu_srv_total(b) > 0);
    /* Endpoint A dies (its connections close); traffic during the outage goes to B. */
    atu_srv_stop(a);
    size_t b_before = atu_srv_total(b);
    assert_int_equal(atu_produce_copies(t.topic, N1, N2, 3400), 0);
    w = (srvwait_t){NULL, b, N1, N1 + N2};
    if (!wait_all(&w, 60000))
        fail_msg("B did not take the load: %zu distinct", atu_srv_distinct(b));
    assert_true(atu_srv_total(b) - b_before >= N2);
    uint64_t t0 = atu_now_ms();
    while (atu_now_ms() - t0 < outage_ms())
        usleep(100000);
    /* A comes back and gets traffic again (the adapter reconnected with backoff). */
    a = atu_srv_start(ATU_SRV_H2, pa, NULL);
    assert_non_null(a);
    assert_int_equal(atu_produce_copies(t.topic, N1 + N2, N3, 3400), 0);
    w = (srvwait_t){a, b, N1 + N2, N1 + N2 + N3};
    assert_true(wait_all(&w, 60000));
    uint64_t t1 = atu_now_ms();
    while (atu_srv_total(a) == 0 && atu_now_ms() - t1 < 10000) {
        assert_int_equal(atu_produce_copies(t.topic, 100000, 50, 200), 0);
        usleep(200000);
    }
    assert_true(atu_srv_total(a) > 0);
    atu_stop(t.adapter, SIGTERM);
    t.adapter = 0;
    atu_srv_stop(a);
    atu_srv_stop(b);
    tctx_done(&t);
}

static void test_single_endpoint_killed_then_restarted_loses_nothing(void **state)
{
    enum { N = 1500 };
    tctx_t t;
    tctx_init(&t, "feed-restart", 3);
    int pa = atu_free_port(27100, 27999);
    atu_srv_t *a = atu_srv_start(ATU_SRV_H2, pa, NULL);
    char eps[200], f[2000];
    snprintf(eps, sizeof eps, "[{\"url\":\"http://127.0.0.1:%d/in\"}]", pa);
    feed_json(f, sizeof f, t.feed, t.topic, "http2", "json", eps, NULL);
    write_feeds(&t, f);
    start_adapter(&t);
    assert_int_equal(atu_produce_copies(t.topic, 0, 500, 3400), 0);
    srvwait_t w = {a, NULL, 0, 500};
    assert_true(wait_all(&w, 60000));
    atu_srv_t *old = a;
    atu_srv_stop(old);
    /* Produced while the only endpoint is dead: held (paused, retried), never dropped. */
    assert_int_equal(atu_produce_copies(t.topic, 500, N - 500, 3400), 0);
    uint64_t t0 = atu_now_ms();
    while (atu_now_ms() - t0 < outage_ms())
        usleep(100000);
    a = atu_srv_start(ATU_SRV_H2, pa, NULL);
    w = (srvwait_t){a, NULL, 500, N};
    if (!wait_all(&w, 60000))
        fail_msg("after restart only %zu distinct of %d (log %s)", atu_srv_distinct(a), N - 500,
                 t.log);
    char group[200];
    snprintf(group, sizeof group, "ndd-feed-%s", t.feed);
    assert_true(atu_group_caught_up(t.topic, group, 30000));
    atu_srv_stop(a);
    tctx_done(&t);
}

static void test_503_then_200_loses_nothing(void **state)
{
    enum { N = 300 };
    tctx_t t;
    tctx_init(&t, "feed-503", 3);
    int pa = atu_free_port(27100, 27999);
    atu_srv_t *a = atu_srv_start(ATU_SRV_H2, pa, NULL);
    atu_srv_script(a, 503, 150, 0); /* the first 150 requests fail with 503 */
    char eps[200], f[2000];
    snprintf(eps, sizeof eps, "[{\"url\":\"http://127.0.0.1:%d/in\"}]", pa);
    feed_json(f, sizeof f, t.feed, t.topic, "http2", "json", eps, NULL);
    write_feeds(&t, f);
    assert_int_equal(atu_produce_copies(t.topic, 0, N, 1000), 0);
    start_adapter(&t);
    srvwait_t w = {a, NULL, 0, N};
    if (!wait_all(&w, 60000))
        fail_msg("%zu distinct of %d after 503s (log %s)", atu_srv_distinct(a), N, t.log);
    assert_int_equal(atu_srv_rejected(a), 150);
    char group[200];
    snprintf(group, sizeof group, "ndd-feed-%s", t.feed);
    assert_true(atu_group_caught_up(t.topic, group, 30000));
    atu_srv_stop(a);
    tctx_done(&t);
}

static void test_429_with_retry_after_is_honoured(void **state)
{
    tctx_t t;
    tctx_init(&t, "feed-429", 1);
    int pa = atu_free_port(27100, 27999);
    atu_srv_t *a = atu_srv_start(ATU_SRV_H2, pa, NULL);
    atu_srv_script(a, 429, 1, 2); /* one 429 asking for 2 s */
    char eps[200], f[2000];
    snprintf(eps, sizeof eps, "[{\"url\":\"http://127.0.0.1:%d/in\"}]", pa);
    feed_json(f, sizeof f, t.feed, t.topic, "http2", "json", eps, NULL);
    write_feeds(&t, f);
    start_adapter(&t);
    /* Wait until the consumer is in the group before measuring. */
    assert_int_equal(atu_produce_copies(t.topic, 0, 1, 100), 0);
    uint64_t t0 = atu_now_ms();
    srvwait_t w = {a, NULL, 0, 1};
    assert_true(wait_all(&w, 30000));
    uint64_t took = atu_now_ms() - t0;
    assert_int_equal(atu_srv_rejected(a), 1);
    if (took < 1900)
        fail_msg("retried after %llu ms, Retry-After asked for 2000", (unsigned long long)took);
    atu_srv_stop(a);
    tctx_done(&t);
}

typedef struct dlqcount {
    size_t n, with_status, with_reason;
} dlqcount_t;

static bool dlq_cb(void *owner, const rd_kafka_message_t *m)
{
    dlqcount_t *c = owner;
    c->n++;
    rd_kafka_headers_t *h = NULL;
    const void *v;
    size_t vl;
    if (rd_kafka_message_headers(m, &h) == 0 && h) {
        if (rd_kafka_header_get_last(h, "@dlq-status", &v, &vl) == 0 && vl == 3 &&
            !memcmp(v, "400", 3))
            c->with_status++;
        if (rd_kafka_header_get_last(h, "@dlq-reason", &v, &vl) == 0 &&
            memmem(v, vl, "HTTP 400", 8))
            c->with_reason++;
    }
    return true;
}

static void test_400_goes_to_dead_letter_topic_with_status(void **state)
{
    enum { N = 50 };
    tctx_t t;
    tctx_init(&t, "feed-400", 3);
    int pa = atu_free_port(27100, 27999);
    atu_srv_t *a = atu_srv_start(ATU_SRV_H2, pa, NULL);
    atu_srv_script(a, 400, -1, 0);
    char eps[200], f[2000];
    snprintf(eps, sizeof eps, "[{\"url\":\"http://127.0.0.1:%d/in\"}]", pa);
    feed_json(f, sizeof f, t.feed, t.topic, "http2", "json", eps, NULL);
    write_feeds(&t, f);
    assert_int_equal(atu_produce_copies(t.topic, 0, N, 500), 0);
    start_adapter(&t);
    char group[200], dlq[200];
    snprintf(group, sizeof group, "ndd-feed-%s", t.feed);
    snprintf(dlq, sizeof dlq, "ndd.dlq.%s", t.feed);
    /* Offsets advance once the DLQ produce is acknowledged. */
    if (!atu_group_caught_up(t.topic, group, 60000))
        fail_msg("offsets not committed after dead-lettering (log %s)", t.log);
    dlqcount_t c = {0};
    ktu_consume(dlq, N, 20000, dlq_cb, &c);
    assert_int_equal(c.n, N);
    assert_int_equal(c.with_status, N);
    assert_int_equal(c.with_reason, N);
    assert_int_equal(atu_srv_distinct(a), 0);
    atu_srv_stop(a);
    ktu_delete_topic(dlq);
    tctx_done(&t);
}

typedef struct exhausted {
    size_t n, with_reason;
} exhausted_t;

static bool exhausted_cb(void *owner, const rd_kafka_message_t *m)
{
    exhausted_t *c = owner;
    c->n++;
    rd_kafka_headers_t *h = NULL;
    const void *v;
    size_t vl;
    if (rd_kafka_message_headers(m, &h) == 0 && h &&
        rd_kafka_header_get_last(h, "@dlq-reason", &v, &vl) == 0 &&
        memmem(v, vl, "retries exhausted", 17) && memmem(v, vl, "HTTP 503", 8))
        c->with_reason++;
    return true;
}

static void test_endpoint_failing_forever_goes_to_dlq_after_retry_max(void **state)
{
    enum { N = 20 };
    tctx_t t;
    tctx_init(&t, "feed-exhaust", 1);
    int pa = atu_free_port(27100, 27999);
    atu_srv_t *a = atu_srv_start(ATU_SRV_H2, pa, NULL);
    atu_srv_script(a, 503, -1, 0);
    char f[2000];
    snprintf(f, sizeof f,
             "{\"name\":\"%s\",\"source_topic\":\"%s\",\"endpoints\":[{\"url\":"
             "\"http://127.0.0.1:%d/in\"}],\"delivery\":{\"timeout_ms\":1000,"
             "\"retry_max_ms\":1500,\"retry_backoff_max_ms\":300,\"backoff_max_ms\":300}}",
             t.feed, t.topic, pa);
    write_feeds(&t, f);
    assert_int_equal(atu_produce_copies(t.topic, 0, N, 300), 0);
    start_adapter(&t);
    char group[200], dlq[200];
    snprintf(group, sizeof group, "ndd-feed-%s", t.feed);
    snprintf(dlq, sizeof dlq, "ndd.dlq.%s", t.feed);
    /* The pipeline is not blocked for ever: after retry_max_ms the copies are dead-lettered
     * and the offsets move on. */
    if (!atu_group_caught_up(t.topic, group, 30000))
        fail_msg("offsets stuck behind an endpoint failing for ever (log %s)", t.log);
    exhausted_t c = {0};
    ktu_consume(dlq, N, 20000, exhausted_cb, &c);
    assert_int_equal(c.n, N);
    assert_int_equal(c.with_reason, N);
    assert_true(atu_srv_rejected(a) > N); /* each was retried before giving up */
    atu_srv_stop(a);
    ktu_delete_topic(dlq);
    tctx_done(&t);
}

static void test_dead_endpoint_feed_does_not_slow_healthy_feed(void **state)
{
    enum { N = 3000 };
    tctx_t t;
    tctx_init(&t, "feed-iso", 3);
    int pa = atu_free_port(27100, 27999), dead = atu_free_port(27100, 27999);
    atu_srv_t *a = atu_srv_start(ATU_SRV_H2, pa, NULL);
    char e1[200], e2[200], f1[2000], f2[2000], both[4200], n1[128], n2[128];
    snprintf(e1, sizeof e1, "[{\"url\":\"http://127.0.0.1:%d/in\"}]", pa);
    snprintf(e2, sizeof e2, "[{\"url\":\"http://127.0.0.1:%d/in\"}]", dead);
    snprintf(n1, sizeof n1, "%s-ok", t.feed);
    snprintf(n2, sizeof n2, "%s-dead", t.feed);
    feed_json(f1, sizeof f1, n1, t.topic, "http2", "json", e1, NULL);
    feed_json(f2, sizeof f2, n2, t.topic, "http2", "json", e2, NULL);
    snprintf(both, sizeof both, "%s,%s", f1, f2);
    write_feeds(&t, both);
    start_adapter(&t);
    /* Give the group joins a moment by delivering a first record. */
    assert_int_equal(atu_produce_copies(t.topic, 0, 1, 100), 0);
    srvwait_t w0 = {a, NULL, 0, 1};
    assert_true(wait_all(&w0, 30000));
    uint64_t t0 = atu_now_ms();
    assert_int_equal(atu_produce_copies(t.topic, 1, N, 3400), 0);
    srvwait_t w = {a, NULL, 1, N + 1};
    assert_true(wait_all(&w, 30000));
    uint64_t took = atu_now_ms() - t0;
    fprintf(stderr, "healthy feed: %d copies in %llu ms while the other feed's endpoint is dead\n",
            N, (unsigned long long)took);
    assert_true(took < 15000);
    atu_srv_stop(a);
    tctx_done(&t);
}

static void test_kill_9_of_adapter_and_restart_loses_nothing(void **state)
{
    enum { N = 20000 };
    tctx_t t;
    tctx_init(&t, "feed-kill9", 3);
    int pa = atu_free_port(27100, 27999);
    atu_srv_t *a = atu_srv_start(ATU_SRV_H2, pa, NULL);
    char eps[200], f[2000];
    snprintf(eps, sizeof eps, "[{\"url\":\"http://127.0.0.1:%d/in\"}]", pa);
    feed_json(f, sizeof f, t.feed, t.topic, "http2", "json", eps, NULL);
    write_feeds(&t, f);
    assert_int_equal(atu_produce_copies(t.topic, 0, N, 1000), 0);
    start_adapter(&t);
    uint64_t t0 = atu_now_ms();
    while (atu_srv_distinct(a) < N / 4 && atu_now_ms() - t0 < 60000)
        usleep(5000);
    size_t at_kill = atu_srv_distinct(a);
    assert_true(at_kill >= N / 4);
    atu_stop(t.adapter, SIGKILL);
    t.adapter = 0;
    start_adapter(&t);
    srvwait_t w = {a, NULL, 0, N};
    if (!wait_all(&w, 90000))
        fail_msg("after kill -9 and restart: %zu distinct of %d (log %s)", atu_srv_distinct(a), N,
                 t.log);
    fprintf(stderr, "kill -9 at %zu delivered; total received %zu for %d distinct (%zu dups)\n",
            at_kill, atu_srv_total(a), N, atu_srv_total(a) - N);
    atu_srv_stop(a);
    tctx_done(&t);
}

static void test_tls_endpoint_with_unknown_ca_is_refused_with_clear_error(void **state)
{
    tctx_t t;
    tctx_init(&t, "feed-badca", 1);
    int port = atu_free_port(27100, 27999);
    char nglog[700];
    snprintf(nglog, sizeof nglog, "%s/nghttpd-%s.log", tmpdir, t.feed);
    pid_t ng = start_nghttpd(port, true, pki.other_server_key, pki.other_server_cert, nglog);
    char eps[200], f[2000], extra[800];
    snprintf(eps, sizeof eps, "[{\"url\":\"https://127.0.0.1:%d/ingest\"}]", port);
    snprintf(extra, sizeof extra, "\"tls\":{\"ca_file\":\"%s\"}", pki.ca_cert);
    feed_json(f, sizeof f, t.feed, t.topic, "http2", "json", eps, extra);
    write_feeds(&t, f);
    assert_int_equal(atu_produce_copies(t.topic, 0, 5, 100), 0);
    start_adapter(&t);
    uint64_t t0 = atu_now_ms();
    while (atu_count_in_file(t.log, "certificate verify failed") == 0 && atu_now_ms() - t0 < 15000)
        usleep(100000);
    assert_true(atu_count_in_file(t.log, "certificate verify failed") > 0);
    assert_int_equal(atu_count_in_file(nglog, ":method: POST"), 0);
    atu_stop(ng, SIGTERM);
    tctx_done(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h2c_to_nghttpd_delivers_everything),
        cmocka_unit_test(test_h2_tls_to_nghttpd_delivers_everything),
        cmocka_unit_test(test_frames_over_tcp_and_tls_deliver_every_seq),
        cmocka_unit_test(test_tls_endpoint_with_unknown_ca_is_refused_with_clear_error),
        cmocka_unit_test(test_503_then_200_loses_nothing),
        cmocka_unit_test(test_429_with_retry_after_is_honoured),
        cmocka_unit_test(test_400_goes_to_dead_letter_topic_with_status),
        cmocka_unit_test(test_endpoint_failing_forever_goes_to_dlq_after_retry_max),
        cmocka_unit_test(test_endpoint_outage_loses_nothing_and_second_endpoint_takes_load),
        cmocka_unit_test(test_single_endpoint_killed_then_restarted_loses_nothing),
        cmocka_unit_test(test_dead_endpoint_feed_does_not_slow_healthy_feed),
        cmocka_unit_test(test_kill_9_of_adapter_and_restart_loses_nothing),
    };
    /* NDD_TEST_FILTER=<glob> runs a subset (cmocka's own filter). */
    if (getenv("NDD_TEST_FILTER"))
        cmocka_set_test_filter(getenv("NDD_TEST_FILTER"));
    return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
