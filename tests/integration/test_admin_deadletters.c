/* The dead-letter view of ndd-admin (GET /api/v1/deadletters, docs/api.md "Dead letters")
 * against the real Kafka (NDD_TEST_KAFKA) and PostgreSQL (NDD_TEST_PG): dead-letter records
 * with the @dlq-* headers the adapter and the aggregation write (docs/adapter.md,
 * docs/message-format.md) are produced to a DLQ topic of two partitions; the admin, a child
 * process, lists the topic with its count and shows the last records newest first with
 * reason, field, source and origin, bodies cut to 512 bytes for the admin role and absent for
 * a viewer. An admin without Kafka answers 503. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "http_testutil.h"
#include "kafka_testutil.h"
#include "pg_testutil.h"

#ifndef NDD_ADMIN_BIN
#define NDD_ADMIN_BIN NDD_BINARY_DIR "/admin/ndd-admin"
#endif

static struct {
    char schema[96], dlq[128], config_topic[96], events_topic[96], port_file[128], log_file[128];
    char admin_auth[200], viewer_auth[200];
    pid_t pid;
    uint16_t port;
} fx;

/* Starts an admin (with Kafka or without) and returns its port. */
static uint16_t start_admin(bool kafka, pid_t *pid)
{
    unlink(fx.port_file);
    char *argv[] = {NDD_ADMIN_BIN,
                    "--http.port",
                    "0",
                    "--http.port-file",
                    fx.port_file,
                    "--db-schema",
                    fx.schema,
                    "--config-topic",
                    fx.config_topic,
                    "--events-topic",
                    fx.events_topic,
                    "--config-replication",
                    "1",
                    "--bootstrap",
                    (char *)ktu_brokers(),
                    NULL};
    if (!kafka)
        argv[13] = NULL;
    *pid = ktu_spawn(argv, NULL, fx.log_file);
    assert_true(*pid > 0);
    int st;
    uint16_t port = htu_serving_wait(*pid, fx.port_file, 30000, &st);
    if (!port)
        fail_msg("ndd-admin did not serve (status %d); see %s", st, fx.log_file);
    return port;
}

static json_t *get(uint16_t port, const char *auth, const char *path, int want_status)
{
    const char *headers[] = {auth, NULL};
    htu_resp_t r;
    assert_int_equal(htu_request(port, "GET", path, headers, NULL, 0, 10000, &r), 0);
    if (r.status != want_status)
        fail_msg("GET %s: %d, expected %d: %s", path, r.status, want_status, r.body);
    json_t *j = json_loads(r.body ? r.body : "", 0, NULL);
    if (!j)
        fail_msg("GET %s: not JSON: %s", path, r.body);
    htu_resp_free(&r);
    return j;
}

/* Three dead letters, each a little later than the one before: an adapter feed's (partition
 * 0, a 2000-byte body), a contract refusal of the aggregation (partition 1), another feed's
 * (partition 0). */
static void produce_dead_letters(void)
{
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    char big[2000];
    memset(big, 'x', sizeof(big));
    const char *feed_h[] = {"@dlq-reason",   "HTTP 400 from http://vendor:8080/in",
                            "@dlq-status",   "400",
                            "@dlq-feed",     "vendor-a",
                            "@dlq-endpoint", "http://vendor:8080/in",
                            "@dlq-origin",   "ndd.main/2/41"};
    const char *agg_h[] = {"@dlq-reason", "missing-field", "@dlq-field",
                           "@nf-type",    "@dlq-detail",   "the required header @nf-type is absent",
                           "@dlq-origin", "SCP/0/7"};
    const char *second_h[] = {"@dlq-reason", "retries exhausted", "@dlq-feed", "vendor-a"};
    assert_int_equal(ktu_produce(p, fx.dlq, 0, "k-1", 3, big, sizeof(big), feed_h, 5), 0);
    assert_int_equal(ktu_flush(p, 10000), 0);
    ktu_sleep_ms(5); /* distinct record timestamps: the view's order is by timestamp */
    assert_int_equal(ktu_produce(p, fx.dlq, 1, "k-2", 3, "{\"a\":1}", 7, agg_h, 4), 0);
    assert_int_equal(ktu_flush(p, 10000), 0);
    ktu_sleep_ms(5);
    assert_int_equal(ktu_produce(p, fx.dlq, 0, "k-3", 3, "third", 5, second_h, 2), 0);
    assert_int_equal(ktu_flush(p, 10000), 0);
    rd_kafka_destroy(p);
}

static int setup(void **state)
{
    setenv("NDD_PG", ptu_conninfo(), 1); /* the admin's and its token command's database */
    char suffix[64];
    ktu_unique_name("x", suffix, sizeof(suffix));
    snprintf(fx.schema, sizeof(fx.schema), "ndd_test_dlq_%s", suffix + 2);
    for (char *c = fx.schema; *c; c++)
        if (*c == '-')
            *c = '_';
    ktu_unique_name("ndd.dlq.test", fx.dlq, sizeof(fx.dlq));
    ktu_unique_name("ndd.config.test", fx.config_topic, sizeof(fx.config_topic));
    ktu_unique_name("ndd.events.test", fx.events_topic, sizeof(fx.events_topic));
    snprintf(fx.port_file, sizeof(fx.port_file), "/tmp/%s.port", fx.schema);
    snprintf(fx.log_file, sizeof(fx.log_file), "/tmp/%s.log", fx.schema);
    assert_int_equal(ktu_create_topic(fx.dlq, 2), 0);
    char tok[100];
    ptu_admin_token(NDD_ADMIN_BIN, fx.schema, "admin", "ops", fx.log_file, tok, sizeof(tok));
    snprintf(fx.admin_auth, sizeof(fx.admin_auth), "Authorization: Bearer %s", tok);
    ptu_admin_token(NDD_ADMIN_BIN, fx.schema, "viewer", "watcher", fx.log_file, tok, sizeof(tok));
    snprintf(fx.viewer_auth, sizeof(fx.viewer_auth), "Authorization: Bearer %s", tok);
    produce_dead_letters();
    fx.port = start_admin(true, &fx.pid);
    return 0;
}

static int teardown(void **state)
{
    if (fx.pid > 0)
        ktu_stop(fx.pid, SIGTERM, 10000);
    ptu_drop_schema(fx.schema);
    ktu_delete_topic(fx.dlq);
    ktu_delete_topic(fx.config_topic);
    ktu_delete_topic(fx.events_topic);
    unlink(fx.port_file);
    if (!getenv("NDD_TEST_KEEP_LOGS"))
        unlink(fx.log_file);
    return 0;
}

static void test_topics_listed_with_their_counts(void **state)
{
    json_t *j = get(fx.port, fx.viewer_auth, "/api/v1/deadletters", 200);
    size_t i;
    json_t *t;
    bool found = false;
    json_array_foreach(json_object_get(j, "topics"), i, t)
    {
        const char *name = json_string_value(json_object_get(t, "topic"));
        assert_int_equal(strncmp(name, "ndd.dlq.", 8), 0); /* only dead-letter topics */
        if (strcmp(name, fx.dlq) == 0) {
            found = true;
            assert_int_equal(json_integer_value(json_object_get(t, "records")), 3);
        }
    }
    if (!found)
        fail_msg("%s missing from %s", fx.dlq, json_dumps(j, 0));
    json_decref(j);
}

static void test_last_records_newest_first_with_reason_and_field(void **state)
{
    char path[256];
    snprintf(path, sizeof(path), "/api/v1/deadletters?topic=%s&limit=20", fx.dlq);
    json_t *j = get(fx.port, fx.admin_auth, path, 200);
    json_t *items = json_object_get(j, "items");
    assert_string_equal(json_string_value(json_object_get(j, "topic")), fx.dlq);
    assert_int_equal(json_array_size(items), 3);
    json_t *third = json_array_get(items, 0), *agg = json_array_get(items, 1),
           *feed = json_array_get(items, 2);
    assert_string_equal(json_string_value(json_object_get(third, "key")), "k-3");
    assert_string_equal(json_string_value(json_object_get(third, "reason")), "retries exhausted");
    assert_string_equal(json_string_value(json_object_get(third, "body")), "third");
    /* the aggregation's refusal: reason, field, origin; source from the topic's name */
    assert_int_equal(json_integer_value(json_object_get(agg, "partition")), 1);
    assert_int_equal(json_integer_value(json_object_get(agg, "offset")), 0);
    assert_string_equal(json_string_value(json_object_get(agg, "reason")), "missing-field");
    assert_string_equal(json_string_value(json_object_get(agg, "field")), "@nf-type");
    assert_string_equal(json_string_value(json_object_get(agg, "source")), fx.dlq + 8);
    json_t *orig = json_object_get(agg, "original");
    assert_string_equal(json_string_value(json_object_get(orig, "topic")), "SCP");
    assert_int_equal(json_integer_value(json_object_get(orig, "partition")), 0);
    assert_int_equal(json_integer_value(json_object_get(orig, "offset")), 7);
    assert_non_null(json_string_value(json_object_get(agg, "timestamp")));
    /* the feed's: its name, HTTP status, endpoint; the body cut to 512 of 2000 bytes */
    assert_string_equal(json_string_value(json_object_get(feed, "source")), "vendor-a");
    assert_int_equal(json_integer_value(json_object_get(feed, "status")), 400);
    assert_string_equal(json_string_value(json_object_get(feed, "endpoint")),
                        "http://vendor:8080/in");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(feed, "original"), "topic")), "ndd.main");
    assert_int_equal(json_integer_value(json_object_get(feed, "body_bytes")), 2000);
    assert_int_equal(strlen(json_string_value(json_object_get(feed, "body"))), 512);
    json_decref(j);
    /* limit=1: the newest alone */
    snprintf(path, sizeof(path), "/api/v1/deadletters?topic=%s&limit=1", fx.dlq);
    j = get(fx.port, fx.admin_auth, path, 200);
    assert_int_equal(json_array_size(json_object_get(j, "items")), 1);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(j, "items"), 0), "key")),
        "k-3");
    json_decref(j);
}

static void test_viewer_sees_no_body(void **state)
{
    char path[256];
    snprintf(path, sizeof(path), "/api/v1/deadletters?topic=%s", fx.dlq);
    json_t *j = get(fx.port, fx.viewer_auth, path, 200);
    size_t i;
    json_t *it;
    assert_int_equal(json_array_size(json_object_get(j, "items")), 3);
    json_array_foreach(json_object_get(j, "items"), i, it)
    {
        assert_null(json_object_get(it, "body"));
        assert_true(json_integer_value(json_object_get(it, "body_bytes")) > 0);
    }
    json_decref(j);
}

static void test_refusals(void **state)
{
    json_t *j = get(fx.port, fx.admin_auth, "/api/v1/deadletters?topic=SCP", 404);
    assert_string_equal(json_string_value(json_object_get(j, "field")), "topic");
    json_decref(j);
    json_decref(
        get(fx.port, fx.admin_auth, "/api/v1/deadletters?topic=ndd.dlq.no-such-topic-xyz", 404));
    j = get(fx.port, fx.admin_auth, "/api/v1/deadletters?limit=101", 400);
    assert_string_equal(json_string_value(json_object_get(j, "field")), "limit");
    json_decref(j);
    json_decref(get(fx.port, "Authorization: Bearer nope", "/api/v1/deadletters", 401));
}

/* The cluster is shared: dead-letter topics of other deployments come and go. One deleted
 * between the admin's metadata request and its offset requests is left out of the list; the
 * list is not a 503. A child process creates and deletes such topics while the list is read. */
static void test_topics_deleted_while_listed_are_left_out(void **state)
{
    char prefix[96];
    ktu_unique_name("ndd.dlq.churn", prefix, sizeof(prefix));
    pid_t churn = fork();
    assert_true(churn >= 0);
    if (churn == 0) {
        int64_t end = ktu_now_ms() + 8000;
        for (int i = 0; i < 40 && ktu_now_ms() < end; i++) {
            char t[128];
            snprintf(t, sizeof(t), "%s-%d", prefix, i % 4);
            ktu_create_topic(t, 3);
            ktu_delete_topic(t);
        }
        _exit(0);
    }
    int reads = 0, seen = 0, st;
    bool alive = true;
    while (reads < 400 && (alive = ktu_alive(churn, &st))) {
        json_t *j = get(fx.port, fx.viewer_auth, "/api/v1/deadletters", 200);
        size_t i;
        json_t *t;
        json_array_foreach(json_object_get(j, "topics"), i, t)
        {
            seen += strncmp(json_string_value(json_object_get(t, "topic")), prefix,
                            strlen(prefix)) == 0;
        }
        json_decref(j);
        reads++;
    }
    if (alive)
        ktu_stop(churn, SIGTERM, 10000);
    print_message("%d lists read while topics came and went, %d churn topics seen in them\n", reads,
                  seen);
    assert_true(reads > 0);
}

static void test_without_kafka_503(void **state)
{
    pid_t pid;
    uint16_t port = start_admin(false, &pid);
    json_t *j = get(port, fx.viewer_auth, "/api/v1/deadletters", 503);
    const char *reason = json_string_value(json_object_get(j, "reason"));
    if (!strstr(reason, "Kafka"))
        fail_msg("the 503 does not name Kafka: %s", reason);
    json_decref(j);
    ktu_stop(pid, SIGTERM, 10000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_topics_listed_with_their_counts),
        cmocka_unit_test(test_last_records_newest_first_with_reason_and_field),
        cmocka_unit_test(test_viewer_sees_no_body),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_topics_deleted_while_listed_are_left_out),
        cmocka_unit_test(test_without_kafka_503),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
