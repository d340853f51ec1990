/* ndd-admin at the scale of a large site against the real PostgreSQL (NDD_TEST_PG; no Kafka):
 * the objects are written straight into the admin's tables (NDD_SCALE_OBJECTS per kind, default
 * 10,000 feeds, filters and sources, plus one audit row each), then the admin starts on them.
 * Checks: start-up loads every object; cursor pages over HTTP return every object exactly once
 * while objects are created and deleted between pages; the audit queries by object, actor and
 * time range answer from an index (EXPLAIN of the very statement the admin runs). */
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
#include <libpq-fe.h>

#include "admin.h"
#include "http_testutil.h"
#include "kafka_testutil.h"
#include "pg_testutil.h"

#ifndef NDD_ADMIN_BIN
#define NDD_ADMIN_BIN NDD_BINARY_DIR "/admin/ndd-admin"
#endif

static struct {
    char schema[64];
    char port_file[128];
    char log_file[128];
    char auth[200];
    pid_t pid;
    uint16_t port;
    int n; /* objects per kind */
    PGconn *pg;
    int64_t startup_ms;
} fx;

static void sql(const char *q)
{
    PGresult *r = PQexec(fx.pg, q);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", q, PQerrorMessage(fx.pg));
    PQclear(r);
}

/* kind k's objects i = 0..n-1: id "<k>-%06d", name "<k>-%06d"; one audit row each, by one of
 * 50 actors, one second apart going back from now. */
static void load_objects(const char *kind, const char *body_fmt)
{
    char q[1024];
    snprintf(q, sizeof(q),
             "INSERT INTO objects (kind, id, name, version, body) SELECT '%s', "
             "format('%s-%%s', lpad(i::text, 6, '0')), format('%s-%%s', lpad(i::text, 6, '0')), 1, "
             "format('%s', format('%s-%%s', lpad(i::text, 6, '0')))::jsonb "
             "FROM generate_series(0, %d) AS i",
             kind, kind, kind, body_fmt, kind, fx.n - 1);
    sql(q);
    snprintf(
        q, sizeof(q),
        "INSERT INTO audit (at, who, action, kind, object_id, after) SELECT "
        "now() - make_interval(secs => i), format('actor-%%s', i %% 50), 'create', '%s', "
        "format('%s-%%s', lpad(i::text, 6, '0')), '{}'::jsonb FROM generate_series(0, %d) AS i",
        kind, kind, fx.n - 1);
    sql(q);
}

static void start_admin(void)
{
    unlink(fx.port_file);
    char max[16];
    snprintf(max, sizeof(max), "%d", fx.n + 1000);
    char *argv[] = {NDD_ADMIN_BIN, "--http.port", "0",       "--http.port-file",
                    fx.port_file,  "--db-schema", fx.schema, "--max-objects",
                    max,           "--max-body",  "64KiB",   NULL};
    char *env[] = {NULL};
    int64_t t0 = ktu_now_ms();
    fx.pid = ktu_spawn(argv, env[0] ? env : NULL, fx.log_file);
    assert_true(fx.pid > 0);
    int st;
    fx.port = htu_serving_wait(fx.pid, fx.port_file, 120000, &st);
    if (!fx.port) {
        if (st >= 0)
            fail_msg("ndd-admin exited during start-up (status %d); see %s", st, fx.log_file);
        fail_msg("ndd-admin did not serve within 120 s; see %s", fx.log_file);
    }
    fx.startup_ms = ktu_now_ms() - t0;
}

static int setup(void **state)
{
    const char *n = getenv("NDD_SCALE_OBJECTS");
    fx.n = n ? atoi(n) : 10000;
    if (fx.n < 100)
        fx.n = 100;
    char suffix[64];
    ktu_unique_name("x", suffix, sizeof(suffix));
    if (snprintf(fx.schema, sizeof(fx.schema), "ndd_scale_%s", suffix + 2) >=
        (int)sizeof(fx.schema))
        fail_msg("schema name for suffix %s is too long", suffix);
    for (char *p = fx.schema; *p; p++)
        if (*p == '-')
            *p = '_';
    snprintf(fx.port_file, sizeof(fx.port_file), "/tmp/%s.port", fx.schema);
    snprintf(fx.log_file, sizeof(fx.log_file), "/tmp/%s.log", fx.schema);
    setenv("NDD_PG", ptu_conninfo(), 1);
    unsetenv("NDD_KAFKA");
    char tok[100];
    /* also creates the schema at the current migration */
    ptu_admin_token(NDD_ADMIN_BIN, fx.schema, "admin", "ops", fx.log_file, tok, sizeof(tok));
    snprintf(fx.auth, sizeof(fx.auth), "Authorization: Bearer %s", tok);
    fx.pg = PQconnectdb(ptu_conninfo());
    if (PQstatus(fx.pg) != CONNECTION_OK)
        fail_msg("PostgreSQL: %s", PQerrorMessage(fx.pg));
    char q[160];
    snprintf(q, sizeof(q), "SET search_path TO %s", fx.schema);
    sql(q);
    int64_t t0 = ktu_now_ms();
    load_objects("filter", "{\"name\":\"%s\",\"default\":\"pass\",\"rules\":[]}");
    load_objects("source", "{\"name\":\"%s\",\"type\":\"SCP\",\"topic\":\"ndd.scale\"}");
    load_objects("feed",
                 "{\"name\":\"%s\",\"transport\":\"http2\",\"encoding\":\"json\","
                 "\"endpoints\":[{\"url\":\"http://127.0.0.1:28999/ingest\",\"weight\":1}]}");
    sql("ANALYZE objects");
    sql("ANALYZE audit");
    print_message("loaded %d objects per kind in %lld ms\n", fx.n, (long long)(ktu_now_ms() - t0));
    start_admin();
    print_message("ndd-admin served %d objects %lld ms after it was started\n", 3 * fx.n,
                  (long long)fx.startup_ms);
    return 0;
}

static int teardown(void **state)
{
    if (fx.pid > 0)
        ktu_stop(fx.pid, SIGTERM, 10000);
    if (fx.pg)
        PQfinish(fx.pg);
    ptu_drop_schema(fx.schema);
    unlink(fx.port_file);
    if (getenv("NDD_TEST_KEEP_LOGS") == NULL)
        unlink(fx.log_file);
    return 0;
}

static json_t *get_json(const char *path)
{
    const char *h[2] = {fx.auth, NULL};
    htu_resp_t r;
    assert_int_equal(htu_request(fx.port, "GET", path, h, NULL, 0, 20000, &r), 0);
    if (r.status != 200)
        fail_msg("GET %s: %d %s", path, r.status, r.body ? r.body : "");
    json_t *j = json_loads(r.body, 0, NULL);
    assert_non_null(j);
    htu_resp_free(&r);
    return j;
}

static int send_req(const char *method, const char *path, const char *body)
{
    const char *h[3] = {fx.auth, body ? "Content-Type: application/json" : NULL, NULL};
    htu_resp_t r;
    assert_int_equal(
        htu_request(fx.port, method, path, h, body, body ? strlen(body) : 0, 20000, &r), 0);
    int s = r.status;
    htu_resp_free(&r);
    return s;
}

static void test_startup_loads_every_object(void **state)
{
    static const char *const colls[] = {"feeds", "filters", "sources"};
    for (int c = 0; c < 3; c++) {
        char path[64];
        snprintf(path, sizeof(path), "/api/v1/%s?limit=1", colls[c]);
        json_t *j = get_json(path);
        assert_int_equal(json_integer_value(json_object_get(j, "total")), fx.n);
        json_decref(j);
    }
}

/* Sources walked in pages of 500 over HTTP; between pages a source not yet reached is deleted
 * and a new one created (alternately before and after the cursor, by name). */
static void test_cursor_pages_over_http_return_each_object_once(void **state)
{
    int *seen = calloc((size_t)fx.n, sizeof(int));
    bool *gone = calloc((size_t)fx.n, sizeof(bool));
    assert_true(seen && gone);
    char path[1024] = "/api/v1/sources?limit=500";
    int pages = 0, created = 0, extra = 0;
    for (;;) {
        json_t *j = get_json(path);
        size_t k;
        json_t *it;
        json_array_foreach(json_object_get(j, "items"), k, it)
        {
            const char *id = json_string_value(json_object_get(it, "id"));
            if (strncmp(id, "source-", 7) == 0) {
                int i = atoi(id + 7);
                assert_true(i >= 0 && i < fx.n);
                seen[i]++;
            } else {
                extra++;
            }
        }
        const char *next = json_string_value(json_object_get(j, "next_cursor"));
        pages++;
        if (!next) {
            json_decref(j);
            break;
        }
        snprintf(path, sizeof(path), "/api/v1/sources?limit=500&cursor=%s", next);
        json_decref(j);
        int victim = fx.n - 1 - pages * 3;
        if (victim >= 0 && !seen[victim]) {
            char del[96];
            snprintf(del, sizeof(del), "/api/v1/sources/source-%06d", victim);
            assert_int_equal(send_req("DELETE", del, NULL), 204);
            gone[victim] = true;
        }
        char body[256];
        snprintf(body, sizeof(body),
                 "{\"name\":\"%s-%d\",\"type\":\"SCP\",\"topic\":\"ndd.scale\"}",
                 created % 2 ? "aaa-new" : "zzz-new", created);
        assert_int_equal(send_req("POST", "/api/v1/sources", body), 201);
        created++;
    }
    int missing = 0, twice = 0;
    for (int i = 0; i < fx.n; i++) {
        if (gone[i])
            assert_int_equal(seen[i], 0);
        else if (seen[i] == 0)
            missing++;
        else if (seen[i] > 1)
            twice++;
    }
    if (missing || twice)
        fail_msg("%d objects never returned, %d returned more than once", missing, twice);
    assert_true(extra <= created);
    print_message("%d pages, %d creates and deletes between them\n", pages, created);
    free(seen);
    free(gone);
}

/* EXPLAIN of what admin_db_audit_list runs: an index, never a sequential scan of the audit. */
static void explain_uses_index(const admin_audit_query_t *q, const char *what)
{
    char stmt[512], ex[600], num[2][24];
    const char *p[7];
    int n = admin_db_audit_sql(q, stmt, sizeof(stmt), p, num);
    assert_true(n > 0);
    snprintf(ex, sizeof(ex), "EXPLAIN %s", stmt);
    PGresult *r = PQexecParams(fx.pg, ex, n, NULL, p, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", ex, PQerrorMessage(fx.pg));
    char plan[4096] = "";
    for (int i = 0; i < PQntuples(r); i++) {
        size_t l = strlen(plan);
        snprintf(plan + l, sizeof(plan) - l, "%s\n", PQgetvalue(r, i, 0));
    }
    PQclear(r);
    if (strstr(plan, "Seq Scan") || !strstr(plan, "Index"))
        fail_msg("audit query by %s does not use an index:\n%s\n%s", what, stmt, plan);
}

static void test_audit_queries_by_object_actor_and_time_use_an_index(void **state)
{
    admin_audit_query_t by_obj = {.object_id = "feed-000123", .limit = 100};
    admin_audit_query_t by_kind_obj = {.kind = "feed", .object_id = "feed-000123", .limit = 100};
    admin_audit_query_t by_who = {.who = "actor-7", .limit = 100};
    char since[64], until[64];
    PGresult *r = PQexec(fx.pg, "SELECT to_char(now() - interval '600 seconds', "
                                "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), to_char(now() - interval "
                                "'300 seconds', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')");
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    snprintf(since, sizeof(since), "%s", PQgetvalue(r, 0, 0));
    snprintf(until, sizeof(until), "%s", PQgetvalue(r, 0, 1));
    PQclear(r);
    admin_audit_query_t by_time = {.since = since, .until = until, .limit = 100};
    explain_uses_index(&by_obj, "object id");
    explain_uses_index(&by_kind_obj, "kind and object id");
    explain_uses_index(&by_who, "actor");
    explain_uses_index(&by_time, "time range");
    /* and the API answers them */
    char path[256];
    json_t *j = get_json("/api/v1/audit?object_id=feed-000123");
    assert_int_equal(json_integer_value(json_object_get(j, "count")), 1);
    json_decref(j);
    j = get_json("/api/v1/audit?who=actor-7&limit=1000");
    assert_true(json_integer_value(json_object_get(j, "count")) >= 3 * (fx.n / 50) - 3);
    json_decref(j);
    snprintf(path, sizeof(path), "/api/v1/audit?since=%s&until=%s&kind=source&limit=1000", since,
             until);
    j = get_json(path);
    json_int_t c = json_integer_value(json_object_get(j, "count"));
    assert_true(c >= 250 && c <= 301);
    json_decref(j);
    assert_int_equal(send_req("GET", "/api/v1/audit?since=yesterday", NULL), 400);
}

/* At this scale the admin restarts in under 5 s, from exec to serving, and its alarms
 * come back as they were (active, and an acknowledgement kept). */
static void test_admin_restarts_at_scale_within_5s_with_its_alarms_intact(void **state)
{
    (void)state;
    enum { ALARMS = 500 };
    char q[256];
    snprintf(q, sizeof(q),
             "INSERT INTO alarms (type, resource, severity, state, text) SELECT 'endpoint-down', "
             "'scale-feed-' || i || '/http://127.0.0.1:1', 'major', 'active', 'unreachable' "
             "FROM generate_series(1, %d) AS i",
             ALARMS);
    sql(q);
    json_t *j = get_json("/api/v1/alarms?state=active&limit=1");
    json_t *first = json_array_get(json_object_get(j, "items"), 0);
    assert_non_null(first);
    char ack[96];
    snprintf(ack, sizeof(ack), "/api/v1/alarms/%lld/ack",
             (long long)json_integer_value(json_object_get(first, "id")));
    json_decref(j);
    assert_int_equal(send_req("POST", ack, NULL), 200);

    assert_true(ktu_stop(fx.pid, SIGTERM, 10000) != -1);
    fx.pid = 0;
    start_admin();
    print_message("ndd-admin restarted on %d objects and %d alarms in %lld ms\n", 3 * fx.n, ALARMS,
                  (long long)fx.startup_ms);
    if (fx.startup_ms >= 5000)
        fail_msg("restart took %lld ms, want < 5,000", (long long)fx.startup_ms);
    j = get_json("/api/v1/feeds?limit=1");
    assert_int_equal(json_integer_value(json_object_get(j, "total")), fx.n);
    json_decref(j);
    j = get_json("/api/v1/alarms?state=active&limit=1000");
    json_t *items = json_object_get(j, "items");
    assert_int_equal(json_array_size(items), ALARMS);
    size_t acked = 0, i;
    json_t *a;
    json_array_foreach(items, i, a)
    {
        const char *by = json_string_value(json_object_get(a, "acked_by"));
        acked += by && *by;
    }
    assert_int_equal(acked, 1);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_startup_loads_every_object),
        cmocka_unit_test(test_cursor_pages_over_http_return_each_object_once),
        cmocka_unit_test(test_audit_queries_by_object_actor_and_time_use_an_index),
        cmocka_unit_test(test_admin_restarts_at_scale_within_5s_with_its_alarms_intact),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
