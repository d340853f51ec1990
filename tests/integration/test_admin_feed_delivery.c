/* ndd-admin driving a real ndd-adapter: feeds and filters written
 * through the REST API reach the adapter over the admin's configuration topic and change what
 * an ndd-sink (bench/sink, h2c) receives; PostgreSQL unreachable stops API writes but not the
 * delivery; the adapter's heartbeats show in /api/v1/status.
 *
 * Real PostgreSQL (NDD_TEST_PG) and Kafka (NDD_TEST_KAFKA); ndd-admin, ndd-adapter and
 * ndd-sink are children of this process, stopped by PID. Every run has its own schema,
 * configuration / events / source topics, groups and feed names, so parallel runs (and the
 * sanitizer build of this test) do not collide. The admin reaches PostgreSQL through a proxy
 * in this process (tests/common/http_testutil.h) that can be cut for this admin only.
 *
 * What arrived is read from the sink's /summary, which counts distinct @seq: each phase uses
 * its own range of sequence numbers, and copies a filter must drop get numbers far above
 * every allowed one, so `unique` (exact count) together with `seq_max` (nothing dropped
 * arrived) proves which copies came. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <libpq-fe.h>

#include "adapter_testutil.h"
#include "http_testutil.h"
#include "pg_testutil.h"
#include "kafka_testutil.h"

#define ADMIN_BIN NDD_BINARY_DIR "/admin/ndd-admin"
#define ADAPTER_BIN NDD_BINARY_DIR "/adapter/ndd-adapter"
#define SINK_BIN NDD_BINARY_DIR "/bench/sink/ndd-sink"

/* Ports for the sink and the adapter's /metrics: h8's private range, below the local stack's. */
#define PORT_LO 28100
#define PORT_HI 28580

/* Sequence-number ranges, one per phase (see the file comment). */
#define SEQ_T1 1000u           /* test 1: delivered by the new feed */
#define SEQ_T1_AFTER 2000u     /* test 1: produced after DELETE, must not arrive */
#define SEQ_T2_BEFORE 3000u    /* test 2: before PostgreSQL is cut */
#define SEQ_T2_DURING 4000u    /* test 2: while it is cut */
#define SEQ_T3_A 5000u         /* test 3: allowed by both filter versions */
#define SEQ_T3_B1 6000u        /* ... produced just before the change */
#define SEQ_T3_B2 7000u        /* ... produced while the change is applied */
#define SEQ_T3_C 8000u         /* ... after the change */
#define SEQ_DROPPED_A 9000000u /* NRF copies under filter v1: dropped */
#define SEQ_NRF_C 9100000u     /* NRF copies under filter v2: allowed */

typedef struct fixture {
    char schema[64];
    char config_topic[96], events_topic[96], events_group[96];
    char main1[96], main2[96]; /* source topics ("MAIN") of the two feeds */
    char feed1[64], feed2[64], filter[64], instance[64];
    char conninfo[1024]; /* the admin's, through the proxy */
    char dir[96];
    char admin_log[128], adapter_log[128], sink_log[128], port_file[128];
    htu_proxy_t *proxy;
    pid_t admin, adapter, sink;
    uint16_t admin_port;
    int sink_port, sink_mport, adapter_mport;
    int64_t adapter_started_ms;
    char auth[256];
    char *filter_id, *feed2_id;
    int children_failed; /* a daemon did not exit 0: keep the logs */
} fixture_t;

static fixture_t fx;

/* ---- PostgreSQL, the proxy, the admin ---- */

static void create_token(void)
{
    char tok[100]; /* "ndd_" + 16 + "_" + 64 hex digits */
    ptu_admin_token(ADMIN_BIN, fx.schema, "admin", "ops", fx.admin_log, tok, sizeof(tok));
    snprintf(fx.auth, sizeof(fx.auth), "Authorization: Bearer %s", tok);
}

static void start_admin(void)
{
    unlink(fx.port_file);
    char *argv[] = {ADMIN_BIN,
                    "--http.port",
                    "0",
                    "--http.port-file",
                    fx.port_file,
                    "--db-schema",
                    fx.schema,
                    "--bootstrap",
                    (char *)ktu_brokers(),
                    "--config-topic",
                    fx.config_topic,
                    "--events-topic",
                    fx.events_topic,
                    "--events-group",
                    fx.events_group,
                    "--config-replication",
                    "1",
                    NULL};
    fx.admin = ktu_spawn(argv, NULL, fx.admin_log);
    assert_true(fx.admin > 0);
    int st;
    fx.admin_port = htu_serving_wait(fx.admin, fx.port_file, 30000, &st);
    if (!fx.admin_port) {
        if (st >= 0)
            fx.admin = 0;
        if (st >= 0)
            fail_msg("ndd-admin exited during start-up (status %d); see %s", st, fx.admin_log);
        fail_msg("ndd-admin did not serve within 30 s; see %s", fx.admin_log);
    }
}

/* ---- the sink and the adapter ---- */

static void start_sink(void)
{
    fx.sink_port = atu_free_port(PORT_LO, PORT_HI);
    fx.sink_mport = atu_free_port(PORT_LO, PORT_HI);
    char hp[16], mp[16];
    snprintf(hp, sizeof(hp), "%d", fx.sink_port);
    snprintf(mp, sizeof(mp), "%d", fx.sink_mport);
    char *argv[] = {SINK_BIN, "--h2-port", hp, "--metrics-port", mp, NULL};
    fx.sink = atu_spawn(argv, fx.sink_log);
    assert_true(fx.sink > 0);
    if (!atu_wait_port(fx.sink_port, 10000) || !atu_wait_port(fx.sink_mport, 10000))
        fail_msg("ndd-sink did not listen within 10 s; see %s", fx.sink_log);
}

static void start_adapter(void)
{
    fx.adapter_mport = atu_free_port(PORT_LO, PORT_HI);
    char mp[16];
    snprintf(mp, sizeof(mp), "%d", fx.adapter_mport);
    char *argv[] = {ADAPTER_BIN,
                    "--bootstrap",
                    (char *)ktu_brokers(),
                    "--config-topic",
                    fx.config_topic,
                    "--events-topic",
                    fx.events_topic,
                    "--instance",
                    fx.instance,
                    "--http.port",
                    mp,
                    "--drain-timeout",
                    "3s",
                    "--kafka.session.timeout.ms=6000",
                    NULL};
    fx.adapter_started_ms = ktu_now_ms();
    fx.adapter = ktu_spawn(argv, NULL, fx.adapter_log);
    assert_true(fx.adapter > 0);
    /* ready = the configuration topic's initial load is applied */
    int64_t deadline = ktu_now_ms() + 30000;
    while (ktu_now_ms() < deadline) {
        int st;
        if (!ktu_alive(fx.adapter, &st)) {
            fx.adapter = 0;
            fail_msg("ndd-adapter exited during start-up (status %d); see %s", st, fx.adapter_log);
        }
        htu_resp_t r;
        int rc = htu_request((uint16_t)fx.adapter_mport, "GET", "/readyz", NULL, NULL, 0, 2000, &r);
        int status = r.status;
        htu_resp_free(&r);
        if (rc == 0 && status == 200)
            return;
        ktu_sleep_ms(50);
    }
    fail_msg("ndd-adapter not ready within 30 s; see %s", fx.adapter_log);
}

typedef struct sink_sum {
    int64_t unique, seq_max;
} sink_sum_t;

static sink_sum_t sink_summary(void)
{
    htu_resp_t r;
    sink_sum_t s = {-1, -1};
    if (htu_request((uint16_t)fx.sink_mport, "GET", "/summary", NULL, NULL, 0, 5000, &r) == 0 &&
        r.status == 200) {
        json_t *j = json_loads(r.body, 0, NULL);
        if (j) {
            s.unique = json_integer_value(json_object_get(j, "unique"));
            s.seq_max = json_integer_value(json_object_get(j, "seq_max"));
            json_decref(j);
        }
    }
    htu_resp_free(&r);
    if (s.unique < 0)
        fail_msg("ndd-sink /summary unreadable; see %s", fx.sink_log);
    return s;
}

/* Waits until the sink counted `want` distinct copies; returns the ms it took. */
static int64_t wait_sink_unique(int64_t want, int timeout_ms, const char *what)
{
    int64_t t0 = ktu_now_ms();
    sink_sum_t s;
    while ((s = sink_summary()).unique < want && ktu_now_ms() - t0 < timeout_ms)
        ktu_sleep_ms(50);
    if (s.unique != want)
        fail_msg("%s: the sink counted %lld distinct copies after %lld ms, want %lld (logs: %s, "
                 "%s)",
                 what, (long long)s.unique, (long long)(ktu_now_ms() - t0), (long long)want,
                 fx.adapter_log, fx.sink_log);
    return ktu_now_ms() - t0;
}

/* Whether the adapter's /metrics has series of the feed (a removed feed's series are removed,
 * docs/adapter.md). */
static bool adapter_metrics_have_feed(const char *feed)
{
    htu_resp_t r;
    char label[128];
    snprintf(label, sizeof(label), "feed=\"%s\"", feed);
    if (htu_request((uint16_t)fx.adapter_mport, "GET", "/metrics", NULL, NULL, 0, 5000, &r) != 0 ||
        r.status != 200)
        fail_msg("ndd-adapter /metrics unreadable (status %d); see %s", r.status, fx.adapter_log);
    bool has = r.body && strstr(r.body, label) != NULL;
    htu_resp_free(&r);
    return has;
}

/* Occurrences of "feed <name>: <what>" in the adapter's log. */
static size_t adapter_log_count(const char *feed, const char *what)
{
    char needle[160];
    snprintf(needle, sizeof(needle), "feed %s: %s", feed, what);
    return atu_count_in_file(fx.adapter_log, needle);
}

static bool wait_adapter_log(const char *feed, const char *what, size_t count, int timeout_ms)
{
    int64_t t0 = ktu_now_ms();
    while (adapter_log_count(feed, what) < count) {
        if (ktu_now_ms() - t0 > timeout_ms)
            return false;
        ktu_sleep_ms(50);
    }
    return true;
}

/* ---- copies ---- */

/* One valid NF copy (docs/message-format.md) with @seq and @nf-type, keyed by correlation id:
 * copies with the same key go to the same partition, in order. Queued, not flushed. */
static void produce_copy(rd_kafka_t *p, const char *topic, uint64_t seq, const char *nf_type,
                         unsigned key_no)
{
    char key[32], ts[32], sq[32], body[160];
    snprintf(key, sizeof(key), "corr-%u", key_no % 32);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    snprintf(ts, sizeof(ts), "%lld",
             (long long)now.tv_sec * 1000000 + (long long)now.tv_nsec / 1000);
    snprintf(sq, sizeof(sq), "%llu", (unsigned long long)seq);
    int len = snprintf(body, sizeof(body), "{\"supi\":\"imsi-00101%010llu\",\"n\":%llu}",
                       (unsigned long long)seq, (unsigned long long)seq);
    const char *h[] = {"@correlation-id",
                       key,
                       "@timestamp-us",
                       ts,
                       "@message-type",
                       "request",
                       "@trigger-point",
                       "rx-request",
                       "@nf-type",
                       nf_type,
                       "@seq",
                       sq,
                       ":method",
                       "POST",
                       ":path",
                       "/nudm-sdm/v2/imsi-001010000000001/am-data",
                       "content-type",
                       "application/json"};
    assert_int_equal(ktu_produce(p, topic, -1, key, strlen(key), body, (size_t)len, h, 9), 0);
}

/* n SCP copies with @seq first..first+n-1; flushed. */
static void produce_scp(const char *topic, uint64_t first, unsigned n)
{
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    for (unsigned i = 0; i < n; i++)
        produce_copy(p, topic, first + i, "SCP", i);
    assert_int_equal(ktu_flush(p, 10000), 0);
    rd_kafka_destroy(p);
}

/* n pairs, each an NRF copy (@seq nrf_first+i) then an SCP copy (@seq scp_first+i) with the
 * same key: every partition's last record of the batch is an SCP copy. Flushed. */
static void produce_pairs(const char *topic, uint64_t scp_first, uint64_t nrf_first, unsigned n)
{
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    for (unsigned i = 0; i < n; i++) {
        produce_copy(p, topic, nrf_first + i, "NRF", i);
        produce_copy(p, topic, scp_first + i, "SCP", i);
    }
    assert_int_equal(ktu_flush(p, 10000), 0);
    rd_kafka_destroy(p);
}

/* ---- the API ---- */

static int api(const char *method, const char *path, const char *body, htu_resp_t *r)
{
    const char *headers[] = {fx.auth, NULL};
    return htu_request(fx.admin_port, method, path, headers, body, body ? strlen(body) : 0, 10000,
                       r);
}

static int api_status(const char *method, const char *path, const char *body)
{
    htu_resp_t r;
    api(method, path, body, &r);
    int s = r.status;
    htu_resp_free(&r);
    return s;
}

/* POSTs and returns the new object's id (asserting 201). */
static char *api_create(const char *coll, const char *body)
{
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/%s", coll);
    htu_resp_t r;
    assert_int_equal(api("POST", path, body, &r), 0);
    if (r.status != 201)
        fail_msg("POST %s: %d %s", path, r.status, r.body ? r.body : "");
    json_t *j = json_loads(r.body, 0, NULL);
    assert_non_null(j);
    char *id = strdup(json_string_value(json_object_get(j, "id")));
    json_decref(j);
    htu_resp_free(&r);
    return id;
}

static void feed_body(char *out, size_t len, const char *name, const char *topic,
                      const char *filter)
{
    char filt[128] = "";
    if (filter)
        snprintf(filt, sizeof(filt), "\"filter\":\"%s\",", filter);
    snprintf(out, len,
             "{\"name\":\"%s\",\"source_topic\":\"%s\",%s\"transport\":\"http2\","
             "\"encoding\":\"json\",\"endpoints\":[{\"url\":\"http://127.0.0.1:%d/ingest\","
             "\"weight\":1}],\"delivery\":{\"max_in_flight\":64}}",
             name, topic, filt, fx.sink_port);
}

/* v1 allows SCP copies only; v2 allows SCP and NRF. */
static void filter_body(char *out, size_t len, bool with_nrf)
{
    snprintf(
        out, len,
        "{\"name\":\"%s\",\"default\":\"drop\",\"rules\":[{\"name\":\"scp\",\"action\":"
        "\"allow\",\"match\":{\"field\":\"@nf-type\",\"op\":\"equals\",\"value\":\"SCP\"}}%s]}",
        fx.filter,
        with_nrf ? ",{\"name\":\"nrf\",\"action\":\"allow\",\"match\":{\"field\":"
                   "\"@nf-type\",\"op\":\"equals\",\"value\":\"NRF\"}}"
                 : "");
}

/* ---- fixture ---- */

static int setup(void **state)
{
    ptu_conninfo();
    ktu_brokers();
    signal(SIGPIPE, SIG_IGN);
    char suffix[64];
    ktu_unique_name("x", suffix, sizeof(suffix));
    if (snprintf(fx.schema, sizeof(fx.schema), "ndd_test_feed_%s", suffix + 2) >=
        (int)sizeof(fx.schema))
        fail_msg("schema name for suffix %s is too long", suffix);
    for (char *p = fx.schema; *p; p++)
        if (*p == '-')
            *p = '_';
    ktu_unique_name("ndd.config.fdt", fx.config_topic, sizeof(fx.config_topic));
    ktu_unique_name("ndd.events.fdt", fx.events_topic, sizeof(fx.events_topic));
    ktu_unique_name("ndd-admin-fdt", fx.events_group, sizeof(fx.events_group));
    ktu_unique_name("MAIN.fdt1", fx.main1, sizeof(fx.main1));
    ktu_unique_name("MAIN.fdt2", fx.main2, sizeof(fx.main2));
    ktu_unique_name("fdt-f1", fx.feed1, sizeof(fx.feed1));
    ktu_unique_name("fdt-f2", fx.feed2, sizeof(fx.feed2));
    ktu_unique_name("fdt-scp", fx.filter, sizeof(fx.filter));
    ktu_unique_name("adapter-fdt", fx.instance, sizeof(fx.instance));
    snprintf(fx.dir, sizeof(fx.dir), "/tmp/%s", fx.schema);
    assert_int_equal(mkdir(fx.dir, 0700), 0);
    snprintf(fx.admin_log, sizeof(fx.admin_log), "%s/admin.log", fx.dir);
    snprintf(fx.adapter_log, sizeof(fx.adapter_log), "%s/adapter.log", fx.dir);
    snprintf(fx.sink_log, sizeof(fx.sink_log), "%s/sink.log", fx.dir);
    snprintf(fx.port_file, sizeof(fx.port_file), "%s/admin.port", fx.dir);
    assert_int_equal(ktu_create_topic(fx.main1, 3), 0);
    assert_int_equal(ktu_create_topic(fx.main2, 3), 0);

    fx.proxy = ptu_proxy_conninfo(fx.conninfo, sizeof(fx.conninfo));
    setenv("NDD_PG", fx.conninfo, 1);
    create_token();
    start_admin(); /* creates the configuration and events topics */
    start_sink();
    start_adapter();
    return 0;
}

/* Best effort: removes this run's consumer groups from the shared broker (after the daemons
 * left them; a group with members is refused, which is logged and ignored). */
static void delete_groups(const char *const *groups, size_t n)
{
    char errstr[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", ktu_brokers(), errstr, sizeof(errstr));
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (!rk) {
        rd_kafka_conf_destroy(conf);
        return;
    }
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_DeleteGroup_t *del[4];
    for (size_t i = 0; i < n; i++)
        del[i] = rd_kafka_DeleteGroup_new(groups[i]);
    rd_kafka_DeleteGroups(rk, del, n, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 10000);
    const rd_kafka_DeleteGroups_result_t *res = ev ? rd_kafka_event_DeleteGroups_result(ev) : NULL;
    if (res) {
        size_t cnt = 0;
        const rd_kafka_group_result_t **gr = rd_kafka_DeleteGroups_result_groups(res, &cnt);
        for (size_t i = 0; i < cnt; i++)
            if (rd_kafka_group_result_error(gr[i]))
                fprintf(stderr, "cleanup: group %s not deleted: %s\n",
                        rd_kafka_group_result_name(gr[i]),
                        rd_kafka_error_string(rd_kafka_group_result_error(gr[i])));
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_DeleteGroup_destroy_array(del, n);
    rd_kafka_queue_destroy(q);
    rd_kafka_destroy(rk);
}

/* SIGTERM and reap; a daemon that does not exit 0 (a sanitizer report exits 1) fails the run. */
static int stop_child(pid_t *pid, const char *what, const char *log, int timeout_ms)
{
    if (*pid <= 0)
        return 0;
    int st = ktu_stop(*pid, SIGTERM, timeout_ms);
    *pid = 0;
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "%s did not exit cleanly on SIGTERM (wait status %d); see %s\n", what, st,
                log);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    /* normally done by the last test already (cmocka ignores a group teardown's result) */
    int rc = 0;
    rc |= stop_child(&fx.adapter, "ndd-adapter", fx.adapter_log, 10000);
    rc |= stop_child(&fx.admin, "ndd-admin", fx.admin_log, 10000);
    rc |= stop_child(&fx.sink, "ndd-sink", fx.sink_log, 5000);
    rc |= fx.children_failed;
    htu_proxy_stop(fx.proxy);
    ptu_drop_schema(fx.schema);
    char g1[96], g2[96];
    snprintf(g1, sizeof(g1), "ndd-feed-%s", fx.feed1);
    snprintf(g2, sizeof(g2), "ndd-feed-%s", fx.feed2);
    const char *groups[] = {g1, g2, fx.events_group};
    delete_groups(groups, 3);
    ktu_delete_topic(fx.config_topic);
    ktu_delete_topic(fx.events_topic);
    ktu_delete_topic(fx.main1);
    ktu_delete_topic(fx.main2);
    char dlq[160];
    snprintf(dlq, sizeof(dlq), "ndd.dlq.%s", fx.feed1);
    ktu_delete_topic(dlq);
    snprintf(dlq, sizeof(dlq), "ndd.dlq.%s", fx.feed2);
    ktu_delete_topic(dlq);
    free(fx.filter_id);
    free(fx.feed2_id);
    if (rc == 0 && getenv("NDD_TEST_KEEP_LOGS") == NULL)
        atu_remove_tree(fx.dir);
    else
        fprintf(stderr, "logs kept in %s\n", fx.dir);
    return rc;
}

/* A failed assertion must not leave PostgreSQL cut off for the tests that follow. */
static int restore_proxy(void **state)
{
    htu_proxy_restore(fx.proxy);
    return 0;
}

/* ---- tests ---- */

/* The entry of /api/v1/status "workers" for this run's adapter, or NULL. */
static json_t *status_worker(json_t *st)
{
    json_t *w;
    size_t i;
    json_array_foreach(json_object_get(st, "workers"), i, w)
    {
        const char *svc = json_string_value(json_object_get(w, "service"));
        const char *ins = json_string_value(json_object_get(w, "instance"));
        if (svc && ins && strcmp(svc, "ndd-adapter") == 0 && strcmp(ins, fx.instance) == 0)
            return w;
    }
    return NULL;
}

static json_t *get_status(void)
{
    htu_resp_t r;
    assert_int_equal(api("GET", "/api/v1/status", NULL, &r), 0);
    assert_int_equal(r.status, 200);
    json_t *j = json_loads(r.body, 0, NULL);
    assert_non_null(j);
    htu_resp_free(&r);
    return j;
}

static void test_adapter_heartbeat_appears_in_status_within_seconds(void **state)
{
    int64_t deadline = fx.adapter_started_ms + 15000;
    bool up = false;
    while (!up && ktu_now_ms() < deadline) {
        json_t *st = get_status();
        json_t *w = status_worker(st);
        up = w && strcmp(json_string_value(json_object_get(w, "state")), "up") == 0;
        json_decref(st);
        if (!up)
            ktu_sleep_ms(100);
    }
    int64_t took = ktu_now_ms() - fx.adapter_started_ms;
    if (!up)
        fail_msg("no heartbeat of ndd-adapter/%s in /api/v1/status %lld ms after its start "
                 "(logs %s, %s)",
                 fx.instance, (long long)took, fx.adapter_log, fx.admin_log);
    fprintf(stderr, "heartbeat of the adapter in /status %lld ms after its start\n",
            (long long)took);
    /* the adapter sends one at start and every 5 s; the admin's group may join just after the
     * first one, so allow two intervals */
    assert_true(took <= 11000);
}

static void test_feed_created_through_api_delivers_within_10s_and_stops_after_delete(void **state)
{
    const unsigned n = 200;
    int64_t before = sink_summary().unique;
    produce_scp(fx.main1, SEQ_T1, n);

    char body[1024];
    feed_body(body, sizeof(body), fx.feed1, fx.main1, NULL);
    int64_t t0 = ktu_now_ms();
    char *id = api_create("feeds", body);
    wait_sink_unique(before + n, (int)(t0 + 10000 - ktu_now_ms()), "feed created through the API");
    int64_t took = ktu_now_ms() - t0;
    fprintf(stderr, "feed created through the API: %u copies at the sink %lld ms after the POST\n",
            n, (long long)took);
    assert_true(took <= 10000);
    assert_true(adapter_metrics_have_feed(fx.feed1));

    char path[160];
    snprintf(path, sizeof(path), "/api/v1/feeds/%s", id);
    assert_int_equal(api_status("DELETE", path, NULL), 204);
    /* the adapter applies the tombstone: the feed is stopped (drained, committed) and its
     * series are gone */
    int64_t deadline = ktu_now_ms() + 10000;
    while (adapter_metrics_have_feed(fx.feed1) && ktu_now_ms() < deadline)
        ktu_sleep_ms(50);
    if (adapter_metrics_have_feed(fx.feed1))
        fail_msg("the adapter did not stop feed %s within 10 s of the DELETE; see %s", fx.feed1,
                 fx.adapter_log);
    produce_scp(fx.main1, SEQ_T1_AFTER, 50);
    /* an absence can only be watched for a while: 2 s is many times the delivery latency
     * measured above */
    int64_t end = ktu_now_ms() + 2000;
    while (ktu_now_ms() < end) {
        sink_sum_t s = sink_summary();
        if (s.unique != before + n)
            fail_msg("after DELETE the sink still received copies: %lld distinct, want %lld",
                     (long long)s.unique, (long long)(before + n));
        ktu_sleep_ms(100);
    }
    free(id);
}

static void test_postgres_unreachable_api_writes_503_adapter_keeps_delivering(void **state)
{
    char body[1024];
    filter_body(body, sizeof(body), false);
    fx.filter_id = api_create("filters", body);
    feed_body(body, sizeof(body), fx.feed2, fx.main2, fx.filter);
    fx.feed2_id = api_create("feeds", body);
    int64_t before = sink_summary().unique;
    produce_scp(fx.main2, SEQ_T2_BEFORE, 100);
    wait_sink_unique(before + 100, 10000, "feed with a filter, before PostgreSQL is cut");

    htu_proxy_cut(fx.proxy);
    /* writes: 503 with a reason naming PostgreSQL */
    char other[1024];
    feed_body(other, sizeof(other), "fdt-never", fx.main2, NULL);
    htu_resp_t r;
    assert_int_equal(api("POST", "/api/v1/feeds", other, &r), 0);
    assert_int_equal(r.status, 503);
    json_t *j = json_loads(r.body, 0, NULL);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "error")), "database unavailable");
    const char *reason = json_string_value(json_object_get(j, "reason"));
    assert_non_null(reason);
    assert_non_null(strstr(reason, "PostgreSQL"));
    json_decref(j);
    htu_resp_free(&r);
    char path[160];
    snprintf(path, sizeof(path), "/api/v1/filters/%s", fx.filter_id);
    assert_int_equal(api_status("PATCH", path, "{\"default\":\"allow\"}"), 503);
    snprintf(path, sizeof(path), "/api/v1/feeds/%s", fx.feed2_id);
    assert_int_equal(api_status("DELETE", path, NULL), 503);

    /* the workers keep the applied feed: new copies still arrive */
    int64_t t0 = ktu_now_ms();
    produce_scp(fx.main2, SEQ_T2_DURING, 100);
    wait_sink_unique(before + 200, 10000, "delivery while PostgreSQL is unreachable");
    fprintf(stderr, "PostgreSQL cut: 100 copies delivered in %lld ms\n",
            (long long)(ktu_now_ms() - t0));
    /* and the filter still applies: nothing dropped came (SCP only here) */
    assert_true(sink_summary().seq_max < (int64_t)SEQ_DROPPED_A);

    /* the next test's first write waits for the admin to reconnect */
    htu_proxy_restore(fx.proxy);
}

static void test_filter_changed_through_api_changes_delivery_live_without_loss(void **state)
{
    assert_non_null(fx.filter_id); /* made by the previous test */
    int64_t base = sink_summary().unique;

    /* v1 (SCP only): the NRF copies are dropped; each partition ends with an SCP copy, so once
     * all SCP copies arrived, every NRF copy was consumed and dropped */
    produce_pairs(fx.main2, SEQ_T3_A, SEQ_DROPPED_A, 100);
    wait_sink_unique(base + 100, 10000, "filter v1, SCP copies");
    sink_sum_t s = sink_summary();
    if (s.seq_max >= (int64_t)SEQ_DROPPED_A)
        fail_msg("filter v1 let an NRF copy through (seq_max %lld)", (long long)s.seq_max);

    /* copies allowed by both versions, produced just before and while the change is applied */
    size_t started = adapter_log_count(fx.feed2, "started");
    produce_scp(fx.main2, SEQ_T3_B1, 100);
    char body[1024], path[160];
    filter_body(body, sizeof(body), true);
    snprintf(path, sizeof(path), "/api/v1/filters/%s", fx.filter_id);
    int64_t deadline = ktu_now_ms() + 10000;
    int st;
    /* the proxy was just restored: the admin's next connection may still be coming up */
    while ((st = api_status("PUT", path, body)) == 503 && ktu_now_ms() < deadline)
        ktu_sleep_ms(100);
    assert_int_equal(st, 200);
    int64_t t0 = ktu_now_ms();
    produce_scp(fx.main2, SEQ_T3_B2, 100);
    /* the admin republishes the feed with the new filter; the adapter restarts it */
    if (!wait_adapter_log(fx.feed2, "started", started + 1, 10000))
        fail_msg("the adapter did not restart feed %s with the changed filter; see %s", fx.feed2,
                 fx.adapter_log);
    fprintf(stderr, "filter change applied by the adapter %lld ms after the PUT\n",
            (long long)(ktu_now_ms() - t0));

    /* v2 (SCP and NRF) */
    produce_pairs(fx.main2, SEQ_T3_C, SEQ_NRF_C, 100);
    wait_sink_unique(base + 100 + 200 + 200, 15000, "filter v2");
    s = sink_summary();
    assert_int_equal(s.seq_max, (int64_t)SEQ_NRF_C + 99);
    /* exact count: every allowed copy once, no dropped NRF copy of v1 re-delivered */
    ktu_sleep_ms(500);
    assert_int_equal(sink_summary().unique, base + 500);
}

static void test_status_reports_the_feed_from_adapter_heartbeats(void **state)
{
    int64_t deadline = ktu_now_ms() + 12000;
    json_int_t delivered = 0;
    bool healthy = false;
    while (ktu_now_ms() < deadline) {
        json_t *st = get_status();
        json_t *f;
        size_t i;
        json_array_foreach(json_object_get(st, "feeds"), i, f)
        {
            const char *name = json_string_value(json_object_get(f, "name"));
            if (name && strcmp(name, fx.feed2) == 0) {
                delivered = json_integer_value(json_object_get(f, "delivered_total"));
                healthy = json_integer_value(json_object_get(f, "endpoints_down")) == 0;
            }
        }
        json_decref(st);
        /* the restarted feed counts from its restart: at least the 200 copies of v2's phase */
        if (delivered >= 200 && healthy)
            break;
        ktu_sleep_ms(200);
    }
    if (delivered < 200 || !healthy)
        fail_msg("/api/v1/status: feed %s delivered_total %lld, healthy %d", fx.feed2,
                 (long long)delivered, healthy);
}

/* Last: the daemons stop cleanly (in the sanitizer build an ASan/UBSan report exits 1). */
static void test_daemons_exit_cleanly_on_sigterm(void **state)
{
    int rc = 0;
    rc |= stop_child(&fx.adapter, "ndd-adapter", fx.adapter_log, 10000);
    rc |= stop_child(&fx.admin, "ndd-admin", fx.admin_log, 10000);
    rc |= stop_child(&fx.sink, "ndd-sink", fx.sink_log, 5000);
    fx.children_failed = rc;
    assert_int_equal(rc, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_adapter_heartbeat_appears_in_status_within_seconds),
        cmocka_unit_test(test_feed_created_through_api_delivers_within_10s_and_stops_after_delete),
        cmocka_unit_test_teardown(test_postgres_unreachable_api_writes_503_adapter_keeps_delivering,
                                  restore_proxy),
        cmocka_unit_test(test_filter_changed_through_api_changes_delivery_live_without_loss),
        cmocka_unit_test(test_status_reports_the_feed_from_adapter_heartbeats),
        cmocka_unit_test(test_daemons_exit_cleanly_on_sigterm),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
