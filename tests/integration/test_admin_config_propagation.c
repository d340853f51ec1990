/* Propagation of configuration changes: one ndd-admin, three ndd-adapters following
 * its configuration topic. A series of REST writes (two creates, an update, a delete) must be
 * applied by every adapter: each adapter's own histogram counted every change
 * (ndd_config_propagation_seconds), and the admin saw each change applied by 3 of 3 workers
 * (/api/v1/status "config") and counted it in ndd_admin_config_propagation_seconds. The
 * configuration topic is created compacted with the documented settings.
 *
 * Real PostgreSQL (NDD_TEST_PG) and Kafka (NDD_TEST_KAFKA); the daemons are children of this
 * process, stopped by PID. Every run has its own schema, topics and names. The feeds point at
 * a closed loopback port: what is measured is the configuration, not the delivery. */
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
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>

#include "adapter_testutil.h"
#include "http_testutil.h"
#include "kafka_testutil.h"
#include "pg_testutil.h"

#define ADMIN_BIN NDD_BINARY_DIR "/admin/ndd-admin"
#define ADAPTER_BIN NDD_BINARY_DIR "/adapter/ndd-adapter"
#define N_ADAPTERS 3
#define N_CHANGES 4
/* The adapters' /metrics ports: a private range below the local stack's. */
#define PORT_LO 28600
#define PORT_HI 28700

typedef struct fixture {
    char schema[64];
    char config_topic[96], events_topic[96], events_group[96], source[96];
    char feed[2][64];
    char dir[96], admin_log[128], port_file[128];
    char adapter_log[N_ADAPTERS][128], instance[N_ADAPTERS][64];
    pid_t admin, adapter[N_ADAPTERS];
    uint16_t admin_port;
    int adapter_mport[N_ADAPTERS];
    char auth[256];
    int failed;
} fixture_t;

static fixture_t fx;

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

static void start_adapter(int i)
{
    fx.adapter_mport[i] = atu_free_port(PORT_LO, PORT_HI);
    char mp[16];
    snprintf(mp, sizeof(mp), "%d", fx.adapter_mport[i]);
    char *argv[] = {ADAPTER_BIN,
                    "--bootstrap",
                    (char *)ktu_brokers(),
                    "--config-topic",
                    fx.config_topic,
                    "--events-topic",
                    fx.events_topic,
                    "--instance",
                    fx.instance[i],
                    "--http.port",
                    mp,
                    "--drain-timeout",
                    "1s",
                    NULL};
    fx.adapter[i] = ktu_spawn(argv, NULL, fx.adapter_log[i]);
    assert_true(fx.adapter[i] > 0);
}

static void wait_adapter_ready(int i)
{
    int64_t deadline = ktu_now_ms() + 30000;
    while (ktu_now_ms() < deadline) {
        int st;
        if (!ktu_alive(fx.adapter[i], &st)) {
            fx.adapter[i] = 0;
            fail_msg("ndd-adapter exited during start-up (status %d); see %s", st,
                     fx.adapter_log[i]);
        }
        htu_resp_t r;
        int rc =
            htu_request((uint16_t)fx.adapter_mport[i], "GET", "/readyz", NULL, NULL, 0, 2000, &r);
        int status = r.status;
        htu_resp_free(&r);
        if (rc == 0 && status == 200)
            return;
        ktu_sleep_ms(50);
    }
    fail_msg("ndd-adapter %d not ready within 30 s; see %s", i, fx.adapter_log[i]);
}

static int api(const char *method, const char *path, const char *body, htu_resp_t *r)
{
    const char *headers[] = {fx.auth, NULL};
    return htu_request(fx.admin_port, method, path, headers, body, body ? strlen(body) : 0, 10000,
                       r);
}

/* The write's answer (asserting status want), parsed; NULL for a body-less answer. */
static json_t *api_json(const char *method, const char *path, const char *body, int want)
{
    htu_resp_t r;
    assert_int_equal(api(method, path, body, &r), 0);
    if (r.status != want)
        fail_msg("%s %s: %d %s", method, path, r.status, r.body ? r.body : "");
    json_t *j = r.body && *r.body ? json_loads(r.body, 0, NULL) : NULL;
    htu_resp_free(&r);
    return j;
}

static json_t *status_config(void)
{
    json_t *st = api_json("GET", "/api/v1/status?changes=50", NULL, 200);
    assert_non_null(st);
    json_t *c = json_incref(json_object_get(st, "config"));
    json_decref(st);
    if (!c)
        fail_msg("/api/v1/status has no \"config\" part");
    return c;
}

/* The value of one series in a /metrics text, -1 when absent. */
static double metric(uint16_t port, const char *series)
{
    htu_resp_t r;
    double v = -1;
    if (htu_request(port, "GET", "/metrics", NULL, NULL, 0, 5000, &r) == 0 && r.status == 200 &&
        r.body) {
        const char *p = r.body;
        size_t n = strlen(series);
        while ((p = strstr(p, series)) != NULL) {
            if ((p == r.body || p[-1] == '\n') && p[n] == ' ') {
                v = strtod(p + n + 1, NULL);
                break;
            }
            p += n;
        }
    }
    htu_resp_free(&r);
    return v;
}

/* The topic's value of a config, via DescribeConfigs; "" when unknown. */
static void topic_config(const char *topic, const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s", "");
    char errstr[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", ktu_brokers(), errstr, sizeof(errstr));
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    assert_non_null(rk);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_ConfigResource_t *res = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
    rd_kafka_DescribeConfigs(rk, &res, 1, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 10000);
    const rd_kafka_DescribeConfigs_result_t *dr =
        ev ? rd_kafka_event_DescribeConfigs_result(ev) : NULL;
    size_t nres = 0;
    const rd_kafka_ConfigResource_t **rs =
        dr ? rd_kafka_DescribeConfigs_result_resources(dr, &nres) : NULL;
    for (size_t i = 0; i < nres; i++) {
        size_t ncfg = 0;
        const rd_kafka_ConfigEntry_t **cfg = rd_kafka_ConfigResource_configs(rs[i], &ncfg);
        for (size_t k = 0; k < ncfg; k++)
            if (strcmp(rd_kafka_ConfigEntry_name(cfg[k]), name) == 0 &&
                rd_kafka_ConfigEntry_value(cfg[k]))
                snprintf(out, len, "%s", rd_kafka_ConfigEntry_value(cfg[k]));
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_ConfigResource_destroy(res);
    rd_kafka_queue_destroy(q);
    rd_kafka_destroy(rk);
}

static int setup(void **state)
{
    ptu_conninfo();
    ktu_brokers();
    signal(SIGPIPE, SIG_IGN);
    char suffix[64];
    ktu_unique_name("x", suffix, sizeof(suffix));
    if (snprintf(fx.schema, sizeof(fx.schema), "ndd_test_prop_%s", suffix + 2) >=
        (int)sizeof(fx.schema))
        fail_msg("schema name for suffix %s is too long", suffix);
    for (char *p = fx.schema; *p; p++)
        if (*p == '-')
            *p = '_';
    ktu_unique_name("ndd.config.prop", fx.config_topic, sizeof(fx.config_topic));
    ktu_unique_name("ndd.events.prop", fx.events_topic, sizeof(fx.events_topic));
    ktu_unique_name("ndd-admin-prop", fx.events_group, sizeof(fx.events_group));
    ktu_unique_name("MAIN.prop", fx.source, sizeof(fx.source));
    for (int i = 0; i < 2; i++) {
        char p[16];
        snprintf(p, sizeof(p), "prop-f%d", i);
        ktu_unique_name(p, fx.feed[i], sizeof(fx.feed[i]));
    }
    snprintf(fx.dir, sizeof(fx.dir), "/tmp/%s", fx.schema);
    assert_int_equal(mkdir(fx.dir, 0700), 0);
    snprintf(fx.admin_log, sizeof(fx.admin_log), "%s/admin.log", fx.dir);
    snprintf(fx.port_file, sizeof(fx.port_file), "%s/admin.port", fx.dir);
    for (int i = 0; i < N_ADAPTERS; i++) {
        snprintf(fx.adapter_log[i], sizeof(fx.adapter_log[i]), "%s/adapter%d.log", fx.dir, i);
        char p[16];
        snprintf(p, sizeof(p), "prop-a%d", i);
        ktu_unique_name(p, fx.instance[i], sizeof(fx.instance[i]));
    }
    assert_int_equal(ktu_create_topic(fx.source, 1), 0);
    setenv("NDD_PG", ptu_conninfo(), 1);
    char tok[100];
    ptu_admin_token(ADMIN_BIN, fx.schema, "admin", "ops", fx.admin_log, tok, sizeof(tok));
    snprintf(fx.auth, sizeof(fx.auth), "Authorization: Bearer %s", tok);
    start_admin(); /* creates the configuration and events topics */
    /* Start the three together: their start-ups overlap. */
    for (int i = 0; i < N_ADAPTERS; i++)
        start_adapter(i);
    for (int i = 0; i < N_ADAPTERS; i++)
        wait_adapter_ready(i);
    return 0;
}

static int stop_child(pid_t *pid, const char *what, const char *log)
{
    if (*pid <= 0)
        return 0;
    int st = ktu_stop(*pid, SIGTERM, 10000);
    *pid = 0;
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "%s did not exit cleanly on SIGTERM (wait status %d); see %s\n", what, st,
                log);
        return -1;
    }
    return 0;
}

/* Best effort: this run's consumer groups (the feeds', the admin's events group) off the
 * shared broker, once the daemons left them. */
static void delete_groups(void)
{
    char errstr[256], g[3][128];
    snprintf(g[0], sizeof(g[0]), "ndd-feed-%s", fx.feed[0]);
    snprintf(g[1], sizeof(g[1]), "ndd-feed-%s", fx.feed[1]);
    snprintf(g[2], sizeof(g[2]), "%s", fx.events_group);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", ktu_brokers(), errstr, sizeof(errstr));
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (!rk) {
        rd_kafka_conf_destroy(conf);
        return;
    }
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_DeleteGroup_t *del[3];
    for (int i = 0; i < 3; i++)
        del[i] = rd_kafka_DeleteGroup_new(g[i]);
    rd_kafka_DeleteGroups(rk, del, 3, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 10000);
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_DeleteGroup_destroy_array(del, 3);
    rd_kafka_queue_destroy(q);
    rd_kafka_destroy(rk);
}

static int teardown(void **state)
{
    int rc = 0;
    for (int i = 0; i < N_ADAPTERS; i++)
        rc |= stop_child(&fx.adapter[i], "ndd-adapter", fx.adapter_log[i]);
    rc |= stop_child(&fx.admin, "ndd-admin", fx.admin_log);
    ptu_drop_schema(fx.schema);
    delete_groups();
    ktu_delete_topic(fx.config_topic);
    ktu_delete_topic(fx.events_topic);
    ktu_delete_topic(fx.source);
    for (int i = 0; i < 2; i++) {
        char dlq[160];
        snprintf(dlq, sizeof(dlq), "ndd.dlq.%s", fx.feed[i]);
        ktu_delete_topic(dlq);
    }
    if (rc == 0 && !fx.failed && getenv("NDD_TEST_KEEP_LOGS") == NULL)
        atu_remove_tree(fx.dir);
    else
        fprintf(stderr, "logs kept in %s\n", fx.dir);
    return rc;
}

static void feed_body(char *out, size_t len, const char *name, int max_in_flight)
{
    snprintf(out, len,
             "{\"name\":\"%s\",\"source_topic\":\"%s\",\"transport\":\"http2\","
             "\"encoding\":\"json\",\"endpoints\":[{\"url\":\"http://127.0.0.1:9/ingest\","
             "\"weight\":1}],\"delivery\":{\"max_in_flight\":%d}}",
             name, fx.source, max_in_flight);
}

/* The change of key at version (0: its tombstone) in the status's config part, or NULL. */
static json_t *find_change(json_t *cfg, const char *key, int64_t version)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(cfg, "changes"), i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "key")), key) == 0 &&
            json_integer_value(json_object_get(c, "version")) == version)
            return c;
    }
    return NULL;
}

static void test_every_adapter_applies_every_change_and_the_admin_times_each(void **state)
{
    /* The admin knows the three followers before any change (their first config event). */
    int64_t deadline = ktu_now_ms() + 15000;
    json_int_t followers = 0;
    while (ktu_now_ms() < deadline) {
        json_t *cfg = status_config();
        followers = json_integer_value(json_object_get(json_object_get(cfg, "followers"), "feed"));
        json_decref(cfg);
        if (followers == N_ADAPTERS)
            break;
        ktu_sleep_ms(50);
    }
    if (followers != N_ADAPTERS)
        fail_msg("the admin knows %lld feed followers, want %d (logs in %s)", (long long)followers,
                 N_ADAPTERS, fx.dir);

    /* create, create, update, delete */
    char key[2][160], body[512], path[160];
    feed_body(body, sizeof(body), fx.feed[0], 64);
    json_t *o0 = api_json("POST", "/api/v1/feeds", body, 201);
    feed_body(body, sizeof(body), fx.feed[1], 64);
    json_t *o1 = api_json("POST", "/api/v1/feeds", body, 201);
    assert_non_null(o0);
    assert_non_null(o1);
    const char *id0 = json_string_value(json_object_get(o0, "id"));
    const char *id1 = json_string_value(json_object_get(o1, "id"));
    snprintf(key[0], sizeof(key[0]), "feed/%s", id0);
    snprintf(key[1], sizeof(key[1]), "feed/%s", id1);
    snprintf(path, sizeof(path), "/api/v1/feeds/%s", id0);
    json_t *o0b = api_json("PATCH", path, "{\"delivery\":{\"max_in_flight\":32}}", 200);
    assert_non_null(o0b);
    assert_int_equal(json_integer_value(json_object_get(o0b, "version")), 2);
    snprintf(path, sizeof(path), "/api/v1/feeds/%s", id1);
    json_decref(api_json("DELETE", path, NULL, 204));
    struct {
        const char *key;
        int64_t version;
    } want[N_CHANGES] = {{key[0], 1}, {key[1], 1}, {key[0], 2}, {key[1], 0}};

    /* Every change applied by 3 of 3, each with its propagation time. */
    deadline = ktu_now_ms() + 20000;
    int complete = 0;
    json_t *cfg = NULL;
    while (ktu_now_ms() < deadline) {
        json_decref(cfg);
        cfg = status_config();
        complete = 0;
        for (int i = 0; i < N_CHANGES; i++) {
            json_t *c = find_change(cfg, want[i].key, want[i].version);
            complete += c && json_is_integer(json_object_get(c, "propagation_ms")) &&
                        json_integer_value(json_object_get(c, "applied_by")) == N_ADAPTERS &&
                        json_integer_value(json_object_get(c, "workers")) == N_ADAPTERS;
        }
        if (complete == N_CHANGES)
            break;
        ktu_sleep_ms(50);
    }
    if (complete != N_CHANGES) {
        char *dump = json_dumps(cfg, JSON_INDENT(1));
        fx.failed = 1;
        fail_msg("%d of %d changes applied by every adapter within 20 s: %s (logs in %s)", complete,
                 N_CHANGES, dump, fx.dir);
    }
    for (int i = 0; i < N_CHANGES; i++) {
        json_t *c = find_change(cfg, want[i].key, want[i].version);
        json_int_t ms = json_integer_value(json_object_get(c, "propagation_ms"));
        print_message("%s v%lld: applied by every adapter %lld ms after its publish\n", want[i].key,
                      (long long)want[i].version, (long long)ms);
        assert_true(ms >= 0 && ms < 20000);
        assert_true(json_is_true(json_object_get(c, "deleted")) == (want[i].version == 0));
    }
    assert_int_equal(json_integer_value(json_object_get(cfg, "changes_pending")), 0);
    json_decref(cfg);

    /* Each adapter timed the four changes it applied; the admin counted the four complete. */
    char series[256];
    snprintf(series, sizeof(series),
             "ndd_config_propagation_seconds_count{topic=\"%s\",kind=\"feed\"}", fx.config_topic);
    for (int i = 0; i < N_ADAPTERS; i++) {
        double n = metric((uint16_t)fx.adapter_mport[i], series);
        if (n != N_CHANGES) {
            fx.failed = 1;
            fail_msg("adapter %d: %s = %g, want %d (see %s)", i, series, n, N_CHANGES,
                     fx.adapter_log[i]);
        }
    }
    assert_true(metric(fx.admin_port,
                       "ndd_admin_config_propagation_seconds_count{kind=\"feed\"}") == N_CHANGES);
    assert_true(metric(fx.admin_port, "ndd_admin_config_changes_pending") == 0);
    json_decref(o0);
    json_decref(o1);
    json_decref(o0b);
}

static void test_config_topic_is_created_compacted_with_the_documented_settings(void **state)
{
    static const char *const want[][2] = {{"cleanup.policy", "compact"},
                                          {"segment.ms", "3600000"},
                                          {"min.cleanable.dirty.ratio", "0.1"},
                                          {"delete.retention.ms", "86400000"}};
    for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++) {
        char v[64];
        topic_config(fx.config_topic, want[i][0], v, sizeof(v));
        if (strcmp(v, want[i][1]) != 0)
            fail_msg("%s of %s is \"%s\", want \"%s\"", want[i][0], fx.config_topic, v, want[i][1]);
    }
}

int main(void)
{
    (void)ktu_brokers();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_adapter_applies_every_change_and_the_admin_times_each),
        cmocka_unit_test(test_config_topic_is_created_compacted_with_the_documented_settings),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
