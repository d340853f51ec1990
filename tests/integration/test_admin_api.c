/* ndd-admin against the real PostgreSQL (NDD_TEST_PG) and Kafka (NDD_TEST_KAFKA), the admin
 * running as a child process and reached over HTTP. Each run uses its own schema, topics and
 * consumer group, so parallel runs (and a sanitizer build of this test) do not collide.
 * PostgreSQL is reached through a proxy in this process, so "PostgreSQL unreachable" is
 * simulated for this admin only, without stopping the server other tests share. */
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

#include "http_testutil.h"
#include "pg_testutil.h"
#include "kafka_testutil.h"

#ifndef NDD_ADMIN_BIN
#define NDD_ADMIN_BIN NDD_BINARY_DIR "/admin/ndd-admin"
#endif

typedef struct fixture {
    char schema[64];
    char config_topic[96];
    char events_topic[96];
    char group[96];
    char conninfo[1024]; /* through the proxy */
    char port_file[128];
    char log_file[128];
    htu_proxy_t *proxy;
    pid_t pid;
    uint16_t port;
    char admin_auth[200];
    char viewer_auth[200];
} fixture_t;

static fixture_t fx;

/* ---- helpers ---- */

static int http(const char *method, const char *path, const char *auth, const char *if_match,
                const char *body, htu_resp_t *r)
{
    char im[64];
    const char *headers[3] = {NULL, NULL, NULL};
    int h = 0;
    if (auth)
        headers[h++] = auth;
    if (if_match) {
        snprintf(im, sizeof(im), "If-Match: %s", if_match);
        headers[h++] = im;
    }
    return htu_request(fx.port, method, path, headers, body, body ? strlen(body) : 0, 10000, r);
}

/* "Authorization: Bearer <a new token of role>" (the documented bootstrap command). */
static void create_token(const char *role, const char *name, char *auth, size_t len)
{
    char tok[100]; /* "ndd_" + 16 + "_" + 64 hex digits */
    ptu_admin_token(NDD_ADMIN_BIN, fx.schema, role, name, fx.log_file, tok, sizeof(tok));
    snprintf(auth, len, "Authorization: Bearer %s", tok);
}

static void start_admin(void)
{
    unlink(fx.port_file);
    char *argv[] = {NDD_ADMIN_BIN,
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
                    fx.group,
                    "--down-after",
                    "1500ms",
                    "--token-ttl",
                    "300ms",
                    "--max-body",
                    "64KiB",
                    "--config-replication",
                    "1",
                    NULL};
    fx.pid = ktu_spawn(argv, NULL, fx.log_file);
    assert_true(fx.pid > 0);
    int st;
    fx.port = htu_serving_wait(fx.pid, fx.port_file, 30000, &st);
    if (!fx.port) {
        if (st >= 0)
            fail_msg("ndd-admin exited during start-up (status %d); see %s", st, fx.log_file);
        fail_msg("ndd-admin did not serve within 30 s; see %s", fx.log_file);
    }
}

static int setup(void **state)
{
    ptu_conninfo();
    ktu_brokers();
    char suffix[64];
    ktu_unique_name("x", suffix, sizeof(suffix));
    /* schema names: lowercase letters, digits and '_' only */
    if (snprintf(fx.schema, sizeof(fx.schema), "ndd_test_%s", suffix + 2) >= (int)sizeof(fx.schema))
        fail_msg("schema name for suffix %s is too long", suffix);
    for (char *p = fx.schema; *p; p++)
        if (*p == '-')
            *p = '_';
    ktu_unique_name("ndd.config.test", fx.config_topic, sizeof(fx.config_topic));
    ktu_unique_name("ndd.events.test", fx.events_topic, sizeof(fx.events_topic));
    ktu_unique_name("ndd-admin-test", fx.group, sizeof(fx.group));
    snprintf(fx.port_file, sizeof(fx.port_file), "/tmp/%s.port", fx.schema);
    snprintf(fx.log_file, sizeof(fx.log_file), "/tmp/%s.log", fx.schema);
    fx.proxy = ptu_proxy_conninfo(fx.conninfo, sizeof(fx.conninfo));
    setenv("NDD_PG", fx.conninfo, 1);
    create_token("admin", "ops", fx.admin_auth, sizeof(fx.admin_auth));
    create_token("viewer", "watcher", fx.viewer_auth, sizeof(fx.viewer_auth));
    start_admin();
    return 0;
}

static int teardown(void **state)
{
    if (fx.pid > 0)
        ktu_stop(fx.pid, SIGTERM, 10000);
    htu_proxy_stop(fx.proxy);
    ptu_drop_schema(fx.schema);
    ktu_delete_topic(fx.config_topic);
    ktu_delete_topic(fx.events_topic);
    unlink(fx.port_file);
    if (getenv("NDD_TEST_KEEP_LOGS") == NULL)
        unlink(fx.log_file);
    return 0;
}

static json_t *body_json(const htu_resp_t *r)
{
    json_t *j = json_loads(r->body ? r->body : "", 0, NULL);
    if (!j)
        fail_msg("response body is not JSON: %s", r->body ? r->body : "(none)");
    return j;
}

/* POSTs and returns the new object's id (asserting 201). */
static char *create(const char *coll, const char *body)
{
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/%s", coll);
    htu_resp_t r;
    assert_int_equal(http("POST", path, fx.admin_auth, NULL, body, &r), 0);
    if (r.status != 201)
        fail_msg("POST %s: %d %s", path, r.status, r.body);
    char loc[256];
    assert_true(htu_header(&r, "Location", loc, sizeof(loc)));
    json_t *j = body_json(&r);
    char *id = strdup(json_string_value(json_object_get(j, "id")));
    char want[300];
    snprintf(want, sizeof(want), "/api/v1/%s/%s", coll, id);
    assert_string_equal(loc, want);
    json_decref(j);
    htu_resp_free(&r);
    return id;
}

static int status_of(const char *method, const char *path, const char *auth, const char *body)
{
    htu_resp_t r;
    http(method, path, auth, NULL, body, &r);
    int s = r.status;
    htu_resp_free(&r);
    return s;
}

#define FILTER_BODY(name)                                                                          \
    "{\"name\":\"" name "\",\"default\":\"drop\",\"rules\":[{\"name\":\"scp\",\"action\":"         \
    "\"allow\",\"match\":{\"field\":\"@nf-type\",\"op\":\"equals\",\"value\":\"SCP\"}}]}"
#define FEED_BODY(name, filter)                                                                    \
    "{\"name\":\"" name "\",\"transport\":\"http2\",\"encoding\":\"json\",\"filter\":\"" filter    \
    "\",\"endpoints\":[{\"url\":\"http://127.0.0.1:28999/ingest\",\"weight\":1}]}"

/* ---- tests ---- */

static void test_crud_create_get_list_replace_patch_delete(void **state)
{
    char *fid = create("filters", FILTER_BODY("crud-filter"));
    char *id = create("feeds", FEED_BODY("crud-feed", "crud-filter"));
    char path[160];
    snprintf(path, sizeof(path), "/api/v1/feeds/%s", id);

    htu_resp_t r;
    char etag[32];
    assert_int_equal(http("GET", path, fx.viewer_auth, NULL, NULL, &r), 0);
    assert_int_equal(r.status, 200);
    assert_true(htu_header(&r, "ETag", etag, sizeof(etag)));
    assert_string_equal(etag, "\"1\"");
    json_t *j = body_json(&r);
    assert_string_equal(json_string_value(json_object_get(j, "name")), "crud-feed");
    assert_non_null(json_object_get(j, "created_at"));
    assert_non_null(json_object_get(j, "updated_at"));
    json_decref(j);
    htu_resp_free(&r);

    assert_int_equal(http("GET", "/api/v1/feeds?name=crud-feed", fx.viewer_auth, NULL, NULL, &r),
                     0);
    assert_int_equal(r.status, 200);
    j = body_json(&r);
    assert_int_equal(json_integer_value(json_object_get(j, "count")), 1);
    json_decref(j);
    htu_resp_free(&r);

    /* replace with the current version */
    assert_int_equal(http("PUT", path, fx.admin_auth, "\"1\"",
                          "{\"name\":\"crud-feed\",\"transport\":\"tcp\",\"encoding\":\"frame\","
                          "\"endpoints\":[{\"url\":\"tcp://127.0.0.1:28998\"}]}",
                          &r),
                     0);
    assert_int_equal(r.status, 200);
    j = body_json(&r);
    assert_int_equal(json_integer_value(json_object_get(j, "version")), 2);
    assert_string_equal(json_string_value(json_object_get(j, "transport")), "tcp");
    assert_null(json_object_get(j, "filter"));
    json_decref(j);
    htu_resp_free(&r);

    /* merge patch: add delivery options, keep the rest */
    assert_int_equal(
        http("PATCH", path, fx.admin_auth, "\"2\"", "{\"delivery\":{\"max_in_flight\":8}}", &r), 0);
    assert_int_equal(r.status, 200);
    j = body_json(&r);
    assert_int_equal(json_integer_value(json_object_get(j, "version")), 3);
    assert_string_equal(json_string_value(json_object_get(j, "transport")), "tcp");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(j, "delivery"), "max_in_flight")), 8);
    json_decref(j);
    htu_resp_free(&r);

    /* a patch producing an invalid object is refused, naming the field */
    assert_int_equal(http("PATCH", path, fx.admin_auth, NULL, "{\"endpoints\":null}", &r), 0);
    assert_int_equal(r.status, 400);
    j = body_json(&r);
    assert_string_equal(json_string_value(json_object_get(j, "field")), "endpoints");
    json_decref(j);
    htu_resp_free(&r);

    assert_int_equal(status_of("DELETE", path, fx.admin_auth, NULL), 204);
    assert_int_equal(status_of("GET", path, fx.admin_auth, NULL), 404);
    assert_int_equal(status_of("DELETE", path, fx.admin_auth, NULL), 404);
    snprintf(path, sizeof(path), "/api/v1/filters/%s", fid);
    assert_int_equal(status_of("DELETE", path, fx.admin_auth, NULL), 204);

    /* the other collections take the same verbs */
    char *sid = create("sources", "{\"name\":\"scp\",\"type\":\"SCP\",\"topic\":\"SCP\","
                                  "\"partitions\":6}");
    char *cid = create("correlation", "{\"name\":\"default\",\"timeout_ms\":5000}");
    snprintf(path, sizeof(path), "/api/v1/sources/%s", sid);
    assert_int_equal(status_of("PATCH", path, fx.admin_auth, "{\"partitions\":12}"), 200);
    assert_int_equal(status_of("DELETE", path, fx.admin_auth, NULL), 204);
    snprintf(path, sizeof(path), "/api/v1/correlation/%s", cid);
    assert_int_equal(status_of("GET", path, fx.viewer_auth, NULL), 200);
    assert_int_equal(status_of("DELETE", path, fx.admin_auth, NULL), 204);
    free(sid);
    free(cid);
    free(fid);
    free(id);
}

typedef struct bad_http {
    const char *method;
    const char *path;
    const char *body;
    int status;
    const char *field; /* NULL: not checked (bodies from the HTTP layer) */
} bad_http_t;

static void test_bad_inputs_get_status_and_field(void **state)
{
    char *fid = create("filters", FILTER_BODY("bad-filter"));
    char *id = create("feeds", FEED_BODY("bad-feed", "bad-filter"));
    char feed_path[160];
    snprintf(feed_path, sizeof(feed_path), "/api/v1/feeds/%s", id);
    char big[70000];
    memset(big, ' ', sizeof(big) - 1);
    big[0] = '{';
    big[sizeof(big) - 3] = '}';
    big[sizeof(big) - 2] = '\0';
    const bad_http_t cases[] = {
        {"POST", "/api/v1/feeds", "{\"name\":", 400, ""},
        {"POST", "/api/v1/feeds", "[]", 400, ""},
        {"POST", "/api/v1/feeds", "{\"name\":1,\"transport\":\"http2\",\"endpoints\":[]}", 400,
         "name"},
        {"POST", "/api/v1/feeds",
         "{\"name\":\"x\",\"transport\":\"http2\",\"endpoints\":[{\"url\":\"http://"
         "a:1\"}],\"bogus\":1}",
         400, "bogus"},
        {"POST", "/api/v1/feeds", "{\"name\":\"x\",\"transport\":\"http2\"}", 400, "endpoints"},
        {"POST", "/api/v1/feeds",
         "{\"name\":\"x\",\"transport\":\"tcp\",\"endpoints\":[{\"url\":\"tcp://a:1\"}]}", 422,
         "encoding"},
        {"POST", "/api/v1/feeds",
         "{\"name\":\"x\",\"transport\":\"http2\",\"endpoints\":[{\"url\":\"http//a\"}]}", 422,
         "endpoints[0].url"},
        {"POST", "/api/v1/filters",
         "{\"name\":\"re\",\"default\":\"allow\",\"rules\":[{\"name\":\"r\",\"action\":\"drop\","
         "\"match\":{\"field\":\":path\",\"op\":\"regex\",\"value\":\"[z-a]\"}}]}",
         422, "rules[0].match.value"},
        {"POST", "/api/v1/feeds", FEED_BODY("bad-feed", "bad-filter"), 409, "name"},
        {"POST", "/api/v1/feeds", FEED_BODY("other-feed", "no-such-filter"), 422, "filter"},
        {"PUT", feed_path, FEED_BODY("bad-feed", "no-such-filter"), 422, "filter"},
        {"POST", "/api/v1/feeds", big, 413, NULL},
        {"GET", "/api/v1/nothing", NULL, 404, NULL},
        {"DELETE", "/api/v1/feeds", NULL, 405, NULL},
        {"PUT", "/api/v1/feeds/does-not-exist", FEED_BODY("ghost", "bad-filter"), 404, ""},
        {"PUT", feed_path, FEED_BODY("bad-feed", "bad-filter"), 200, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        htu_resp_t r;
        const bad_http_t *c = &cases[i];
        assert_int_equal(http(c->method, c->path, fx.admin_auth, NULL, c->body, &r), 0);
        if (r.status != c->status)
            fail_msg("case %zu %s %s: status %d, want %d: %s", i, c->method, c->path, r.status,
                     c->status, r.body);
        if (c->field) {
            json_t *j = body_json(&r);
            const char *field = json_string_value(json_object_get(j, "field"));
            if (!field || strcmp(field, c->field) != 0)
                fail_msg("case %zu: field \"%s\", want \"%s\" (%s)", i, field ? field : "(none)",
                         c->field, r.body);
            assert_non_null(json_string_value(json_object_get(j, "reason")));
            json_decref(j);
        }
        htu_resp_free(&r);
    }
    /* a filter in use can be neither deleted nor renamed */
    char fpath[160];
    snprintf(fpath, sizeof(fpath), "/api/v1/filters/%s", fid);
    assert_int_equal(status_of("DELETE", fpath, fx.admin_auth, NULL), 409);
    assert_int_equal(status_of("PATCH", fpath, fx.admin_auth, "{\"name\":\"renamed\"}"), 409);
    assert_int_equal(status_of("DELETE", feed_path, fx.admin_auth, NULL), 204);
    assert_int_equal(status_of("DELETE", fpath, fx.admin_auth, NULL), 204);
    free(fid);
    free(id);
}

static void test_auth_401_without_token_403_for_viewer_write(void **state)
{
    assert_int_equal(status_of("GET", "/api/v1/feeds", NULL, NULL), 401);
    assert_int_equal(status_of("GET", "/api/v1/feeds",
                               "Authorization: Bearer ndd_0123456789abcdef_"
                               "00000000000000000000000000000000000000000"
                               "00000000000000000000000",
                               NULL),
                     401);
    assert_int_equal(status_of("GET", "/api/v1/feeds", "Authorization: Basic b3BzOm9wcw==", NULL),
                     401);
    /* a real token id with a wrong secret */
    char forged[200];
    snprintf(forged, sizeof(forged), "%.*s%s", (int)(strlen(fx.viewer_auth) - 4), fx.viewer_auth,
             "0000");
    assert_int_equal(status_of("GET", "/api/v1/feeds", forged, NULL), 401);
    assert_int_equal(status_of("GET", "/api/v1/feeds", fx.viewer_auth, NULL), 200);
    assert_int_equal(status_of("POST", "/api/v1/filters", fx.viewer_auth, FILTER_BODY("v")), 403);
    assert_int_equal(status_of("GET", "/healthz", NULL, NULL), 200);

    /* a revoked token stops working (within the cache TTL of 300 ms) */
    char auth[200];
    create_token("admin", "short-lived", auth, sizeof(auth));
    assert_int_equal(status_of("GET", "/api/v1/feeds", auth, NULL), 200);
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "'%s' token revoke --name short-lived --db-schema %s 2>>%s",
             NDD_ADMIN_BIN, fx.schema, fx.log_file);
    assert_int_equal(system(cmd), 0);
    int64_t deadline = ktu_now_ms() + 5000;
    int s = 200;
    while (ktu_now_ms() < deadline && (s = status_of("GET", "/api/v1/feeds", auth, NULL)) == 200)
        ktu_sleep_ms(50);
    assert_int_equal(s, 401);
}

static void test_stale_if_match_gets_412(void **state)
{
    char *id = create("filters", FILTER_BODY("etag-filter"));
    char path[160];
    snprintf(path, sizeof(path), "/api/v1/filters/%s", id);
    htu_resp_t r;
    assert_int_equal(http("PATCH", path, fx.admin_auth, "\"1\"", "{\"default\":\"allow\"}", &r), 0);
    assert_int_equal(r.status, 200);
    htu_resp_free(&r);
    /* a second writer still holding version 1 */
    assert_int_equal(http("PATCH", path, fx.admin_auth, "\"1\"", "{\"default\":\"drop\"}", &r), 0);
    assert_int_equal(r.status, 412);
    json_t *j = body_json(&r);
    assert_string_equal(json_string_value(json_object_get(j, "field")), "version");
    json_decref(j);
    htu_resp_free(&r);
    assert_int_equal(http("DELETE", path, fx.admin_auth, "\"1\"", NULL, &r), 0);
    assert_int_equal(r.status, 412);
    htu_resp_free(&r);
    assert_int_equal(http("DELETE", path, fx.admin_auth, "\"2\"", NULL, &r), 0);
    assert_int_equal(r.status, 204);
    htu_resp_free(&r);
    free(id);
}

static void test_every_change_writes_one_audit_row(void **state)
{
    char *id = create("filters", FILTER_BODY("audit-filter"));
    char path[160];
    snprintf(path, sizeof(path), "/api/v1/filters/%s", id);
    assert_int_equal(status_of("PATCH", path, fx.admin_auth, "{\"default\":\"allow\"}"), 200);
    assert_int_equal(status_of("PUT", path, fx.admin_auth, FILTER_BODY("audit-filter")), 200);
    assert_int_equal(status_of("PATCH", path, fx.admin_auth, "{\"default\":7}"), 400);
    assert_int_equal(status_of("DELETE", path, fx.admin_auth, NULL), 204);

    char q[256];
    snprintf(q, sizeof(q), "/api/v1/audit?kind=filter&object_id=%s", id);
    htu_resp_t r;
    assert_int_equal(http("GET", q, fx.viewer_auth, NULL, NULL, &r), 0);
    assert_int_equal(r.status, 200);
    json_t *j = body_json(&r);
    json_t *items = json_object_get(j, "items");
    /* four successful changes, newest first; the refused patch left no row */
    assert_int_equal(json_array_size(items), 4);
    static const char *const actions[] = {"delete", "replace", "patch", "create"};
    for (size_t i = 0; i < 4; i++) {
        json_t *a = json_array_get(items, i);
        assert_string_equal(json_string_value(json_object_get(a, "action")), actions[i]);
        assert_string_equal(json_string_value(json_object_get(a, "who")), "ops");
        assert_non_null(json_string_value(json_object_get(a, "at")));
    }
    json_t *create_row = json_array_get(items, 3), *patch_row = json_array_get(items, 2),
           *delete_row = json_array_get(items, 0);
    assert_true(json_is_null(json_object_get(create_row, "before")));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(patch_row, "before"), "default")),
        "drop");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(patch_row, "after"), "default")),
        "allow");
    assert_true(json_is_null(json_object_get(delete_row, "after")));
    json_int_t audit_id = json_integer_value(json_object_get(delete_row, "id"));
    json_decref(j);
    htu_resp_free(&r);
    snprintf(q, sizeof(q), "/api/v1/audit/%lld", (long long)audit_id);
    assert_int_equal(status_of("GET", q, fx.viewer_auth, NULL), 200);
    free(id);
}

/* Latest value per key of the config topic. */
static json_t *read_config_topic(void)
{
    ktu_records_t recs = {0};
    int64_t n = ktu_topic_record_count(fx.config_topic, 5000);
    ktu_consume_records(fx.config_topic, n > 0 ? (size_t)n : 0, 5000, &recs);
    json_t *m = json_object();
    for (size_t i = 0; i < recs.n; i++) {
        if (!recs.v[i].key)
            continue;
        json_t *v = recs.v[i].value ? json_loadb(recs.v[i].value, recs.v[i].value_len, 0, NULL)
                                    : json_null();
        json_object_set_new(m, recs.v[i].key, v ? v : json_string("unparseable"));
    }
    ktu_records_free(&recs);
    return m;
}

/* Waits until the topic's latest value for key satisfies want (NULL = tombstone). */
static json_t *wait_config_record(const char *key, bool tombstone, int64_t version)
{
    int64_t deadline = ktu_now_ms() + 15000;
    while (ktu_now_ms() < deadline) {
        json_t *m = read_config_topic();
        json_t *v = json_object_get(m, key);
        if (v && tombstone && json_is_null(v)) {
            json_decref(m);
            return json_null();
        }
        if (v && !tombstone && json_integer_value(json_object_get(v, "version")) == version) {
            json_incref(v);
            json_decref(m);
            return v;
        }
        json_decref(m);
        ktu_sleep_ms(200);
    }
    fail_msg("ndd.config never showed %s %s version %lld", key, tombstone ? "tombstone" : "",
             (long long)version);
    return NULL;
}

static void test_changes_are_published_to_config_topic(void **state)
{
    char *fid = create("filters", FILTER_BODY("pub-filter"));
    char *id = create("feeds", FEED_BODY("pub-feed", "pub-filter"));
    char key[200], fkey[200], path[160];
    snprintf(key, sizeof(key), "feed/%s", id);
    snprintf(fkey, sizeof(fkey), "filter/%s", fid);
    json_t *rec = wait_config_record(key, false, 1);
    /* the record carries the full feed, with the named filter's rules inside */
    json_t *spec = json_object_get(rec, "spec");
    assert_string_equal(json_string_value(json_object_get(rec, "kind")), "feed");
    assert_string_equal(json_string_value(json_object_get(spec, "name")), "pub-feed");
    assert_string_equal(json_string_value(json_object_get(spec, "transport")), "http2");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(spec, "filter"), "default")), "drop");
    assert_string_equal(json_string_value(json_object_get(rec, "filter_ref")), "pub-filter");
    json_decref(rec);

    /* a filter change is republished inside the feeds that use it */
    snprintf(path, sizeof(path), "/api/v1/filters/%s", fid);
    assert_int_equal(status_of("PATCH", path, fx.admin_auth, "{\"default\":\"allow\"}"), 200);
    int64_t deadline = ktu_now_ms() + 15000;
    bool seen = false;
    while (!seen && ktu_now_ms() < deadline) {
        json_t *m = read_config_topic();
        json_t *f = json_object_get(json_object_get(json_object_get(m, key), "spec"), "filter");
        seen = f && strcmp(json_string_value(json_object_get(f, "default")), "allow") == 0;
        json_decref(m);
        if (!seen)
            ktu_sleep_ms(200);
    }
    assert_true(seen);

    snprintf(path, sizeof(path), "/api/v1/feeds/%s", id);
    assert_int_equal(status_of("DELETE", path, fx.admin_auth, NULL), 204);
    json_decref(wait_config_record(key, true, 0));
    snprintf(path, sizeof(path), "/api/v1/filters/%s", fid);
    assert_int_equal(status_of("DELETE", path, fx.admin_auth, NULL), 204);
    json_decref(wait_config_record(fkey, true, 0));
    free(fid);
    free(id);
}

static void test_kill_and_restart_loses_no_configuration(void **state)
{
    char *fid = create("filters", FILTER_BODY("keep-filter"));
    char *id = create("feeds", FEED_BODY("keep-feed", "keep-filter"));
    char path[160], key[200];
    snprintf(path, sizeof(path), "/api/v1/feeds/%s", id);
    htu_resp_t before;
    assert_int_equal(http("GET", path, fx.admin_auth, NULL, NULL, &before), 0);
    assert_int_equal(before.status, 200);

    int st = ktu_stop(fx.pid, SIGKILL, 5000);
    assert_true(st != -1);
    /* while it is down, the topic drifts: a stale key the database does not have */
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    const char *stale = "feed/00000000-stale";
    assert_int_equal(
        ktu_produce(p, fx.config_topic, -1, stale, strlen(stale), "{\"stale\":1}", 11, NULL, 0), 0);
    assert_int_equal(ktu_flush(p, 10000), 0);
    rd_kafka_destroy(p);

    start_admin();
    htu_resp_t after;
    assert_int_equal(http("GET", path, fx.admin_auth, NULL, NULL, &after), 0);
    assert_int_equal(after.status, 200);
    assert_string_equal(before.body, after.body);
    htu_resp_free(&before);
    htu_resp_free(&after);
    /* reconcile on start: the stale key is tombstoned, the feed is still there */
    json_decref(wait_config_record(stale, true, 0));
    snprintf(key, sizeof(key), "feed/%s", id);
    json_decref(wait_config_record(key, false, 1));

    assert_int_equal(status_of("DELETE", path, fx.admin_auth, NULL), 204);
    snprintf(path, sizeof(path), "/api/v1/filters/%s", fid);
    assert_int_equal(status_of("DELETE", path, fx.admin_auth, NULL), 204);
    free(fid);
    free(id);
}

static void test_postgres_unreachable_writes_503_reads_keep_working(void **state)
{
    char *id = create("filters", FILTER_BODY("pgdown-filter"));
    char path[160], key[200];
    snprintf(path, sizeof(path), "/api/v1/filters/%s", id);
    snprintf(key, sizeof(key), "filter/%s", id);
    json_decref(wait_config_record(key, false, 1));

    htu_proxy_cut(fx.proxy);
    htu_resp_t r;
    assert_int_equal(
        http("POST", "/api/v1/filters", fx.admin_auth, NULL, FILTER_BODY("pgdown-2"), &r), 0);
    assert_int_equal(r.status, 503);
    json_t *j = body_json(&r);
    assert_string_equal(json_string_value(json_object_get(j, "error")), "database unavailable");
    assert_true(strstr(json_string_value(json_object_get(j, "reason")), "PostgreSQL") != NULL);
    json_decref(j);
    htu_resp_free(&r);
    assert_int_equal(status_of("PATCH", path, fx.admin_auth, "{\"default\":\"allow\"}"), 503);
    /* applied configuration stays readable: from the admin's cache and from ndd.config */
    assert_int_equal(status_of("GET", path, fx.viewer_auth, NULL), 200);
    json_t *m = read_config_topic();
    assert_non_null(json_object_get(json_object_get(m, key), "spec"));
    json_decref(m);

    htu_proxy_restore(fx.proxy);
    int64_t deadline = ktu_now_ms() + 10000;
    int s = 503;
    while (ktu_now_ms() < deadline &&
           (s = status_of("PATCH", path, fx.admin_auth, "{\"default\":\"allow\"}")) == 503)
        ktu_sleep_ms(100);
    assert_int_equal(s, 200);
    assert_int_equal(status_of("DELETE", path, fx.admin_auth, NULL), 204);
    free(id);
}

/* A failed assertion must not leave PostgreSQL cut off for the tests that follow. */
static int restore_proxy(void **state)
{
    htu_proxy_restore(fx.proxy);
    return 0;
}

static void produce_event(rd_kafka_t *p, const char *json)
{
    assert_int_equal(ktu_produce(p, fx.events_topic, -1, "k", 1, json, strlen(json), NULL, 0), 0);
    assert_int_equal(ktu_flush(p, 10000), 0);
}

/* Polls /api/v1/alarms?<query> until count matches. */
static void wait_alarm_count(const char *query, size_t want)
{
    char path[256];
    snprintf(path, sizeof(path), "/api/v1/alarms?%s", query);
    int64_t deadline = ktu_now_ms() + 15000;
    size_t got = 0;
    while (ktu_now_ms() < deadline) {
        htu_resp_t r;
        assert_int_equal(http("GET", path, fx.viewer_auth, NULL, NULL, &r), 0);
        json_t *j = body_json(&r);
        got = json_array_size(json_object_get(j, "items"));
        json_decref(j);
        htu_resp_free(&r);
        if (got == want)
            return;
        ktu_sleep_ms(100);
    }
    fail_msg("alarms?%s: %zu, want %zu", query, got, want);
}

static void test_heartbeats_status_and_service_down_alarm(void **state)
{
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    const char *hb = "{\"type\":\"heartbeat\",\"service\":\"ndd-adapter\",\"instance\":\"t1\","
                     "\"interval_ms\":500,\"counters\":{\"delivered_total\":10},\"feeds\":{"
                     "\"f1\":{\"delivered_total\":10,\"lag\":3,\"endpoints\":{\"http://e:1\":"
                     "\"up\"}}}}";
    /* the admin's group starts at the end of the topic: send until it shows up */
    int64_t deadline = ktu_now_ms() + 20000;
    bool up = false;
    while (!up && ktu_now_ms() < deadline) {
        produce_event(p, hb);
        htu_resp_t r;
        assert_int_equal(http("GET", "/api/v1/status", fx.viewer_auth, NULL, NULL, &r), 0);
        json_t *j = body_json(&r);
        json_t *w = json_array_get(json_object_get(j, "workers"), 0);
        json_t *f = json_array_get(json_object_get(j, "feeds"), 0);
        up = w && strcmp(json_string_value(json_object_get(w, "state")), "up") == 0 && f &&
             json_integer_value(json_object_get(f, "lag")) == 3;
        json_decref(j);
        htu_resp_free(&r);
        if (!up)
            ktu_sleep_ms(200);
    }
    assert_true(up);
    /* silence: after --down-after (1.5 s) a service-down alarm is raised */
    wait_alarm_count("state=active&type=service-down", 1);
    produce_event(p, hb);
    wait_alarm_count("state=active&type=service-down", 0);
    wait_alarm_count("state=cleared&type=service-down", 1);

    /* alarm events from workers: raise, acknowledge, clear */
    produce_event(p, "{\"type\":\"alarm\",\"action\":\"raise\",\"alarm\":\"endpoint-down\","
                     "\"resource\":\"f1/http://e:1\",\"severity\":\"major\",\"text\":\"refused\"}");
    wait_alarm_count("state=active&type=endpoint-down", 1);
    htu_resp_t r;
    assert_int_equal(http("GET", "/api/v1/alarms?state=active&type=endpoint-down", fx.viewer_auth,
                          NULL, NULL, &r),
                     0);
    json_t *j = body_json(&r);
    json_int_t aid =
        json_integer_value(json_object_get(json_array_get(json_object_get(j, "items"), 0), "id"));
    json_decref(j);
    htu_resp_free(&r);
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/alarms/%lld/ack", (long long)aid);
    assert_int_equal(status_of("POST", path, fx.viewer_auth, NULL), 403);
    assert_int_equal(http("POST", path, fx.admin_auth, NULL, NULL, &r), 0);
    assert_int_equal(r.status, 200);
    j = body_json(&r);
    assert_string_equal(json_string_value(json_object_get(j, "acked_by")), "ops");
    json_decref(j);
    htu_resp_free(&r);
    produce_event(p, "{\"type\":\"alarm\",\"action\":\"clear\",\"alarm\":\"endpoint-down\","
                     "\"resource\":\"f1/http://e:1\"}");
    wait_alarm_count("state=active&type=endpoint-down", 0);

    /* PostgreSQL away: an alarm change waits in memory and is written when it is back */
    htu_proxy_cut(fx.proxy);
    produce_event(p, "{\"type\":\"alarm\",\"action\":\"raise\",\"alarm\":\"queued-while-down\","
                     "\"resource\":\"r1\",\"severity\":\"minor\"}");
    int64_t deadline2 = ktu_now_ms() + 15000;
    json_int_t pending = 0;
    while (ktu_now_ms() < deadline2 && pending != 1) {
        assert_int_equal(http("GET", "/api/v1/status", fx.viewer_auth, NULL, NULL, &r), 0);
        assert_int_equal(r.status, 200);
        j = body_json(&r);
        pending = json_integer_value(json_object_get(j, "alarm_changes_pending"));
        json_decref(j);
        htu_resp_free(&r);
        if (pending != 1)
            ktu_sleep_ms(100);
    }
    assert_int_equal(pending, 1);
    htu_proxy_restore(fx.proxy);
    wait_alarm_count("state=active&type=queued-while-down", 1);
    rd_kafka_destroy(p);
}

/* ---- hardening against bad input and outages: one name rule, JSON error bodies, 503 for an
 * uncheckable token, alarms across a restart ---- */

static void test_bad_names_get_422_invalid_value_for_every_kind(void **state)
{
    static const char *const names[] = {
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", /* 65 */
        "caf\xc3\xa9", "a' OR '1'='1"};
    static const struct {
        const char *coll, *rest;
    } kinds[] = {
        {"feeds", ",\"transport\":\"http2\",\"endpoints\":[{\"url\":\"http://127.0.0.1:1\"}]"},
        {"filters", ",\"default\":\"allow\",\"rules\":[]"},
        {"sources", ",\"type\":\"SCP\",\"topic\":\"SCP\""},
        {"correlation", ""}};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (size_t n = 0; n < sizeof names / sizeof *names; n++) {
            char body[512], path[64];
            snprintf(body, sizeof body, "{\"name\":\"%s\"%s}", names[n], kinds[k].rest);
            snprintf(path, sizeof path, "/api/v1/%s", kinds[k].coll);
            htu_resp_t r;
            assert_int_equal(http("POST", path, fx.admin_auth, NULL, body, &r), 0);
            json_t *j = body_json(&r);
            const char *err = json_string_value(json_object_get(j, "error"));
            const char *field = json_string_value(json_object_get(j, "field"));
            if (r.status != 422 || !err || strcmp(err, "invalid value") || !field ||
                strcmp(field, "name"))
                fail_msg("POST %s %s: %d %s", path, body, r.status, r.body);
            json_decref(j);
            htu_resp_free(&r);
        }
}

/* The documented Error shape: exactly error, field and reason, all strings. */
static void assert_error_shape(const htu_resp_t *r, int status, const char *error)
{
    if (r->status != status)
        fail_msg("status %d, want %d: %s", r->status, status, r->body ? r->body : "");
    char ct[128];
    assert_true(htu_header(r, "Content-Type", ct, sizeof ct));
    assert_string_equal(ct, "application/json");
    json_t *j = body_json(r);
    assert_int_equal(json_object_size(j), 3);
    assert_true(json_is_string(json_object_get(j, "field")));
    assert_true(json_is_string(json_object_get(j, "reason")));
    assert_string_equal(json_string_value(json_object_get(j, "error")), error);
    json_decref(j);
}

static void test_errors_before_the_handler_are_json_in_the_error_shape(void **state)
{
    /* --max-body 64KiB: a larger body is refused by the HTTP server, in the Error shape */
    size_t n = 80 * 1024;
    char *big = malloc(n + 1);
    memset(big, ' ', n);
    big[0] = '{';
    big[n - 1] = '}';
    big[n] = '\0';
    htu_resp_t r;
    assert_int_equal(http("POST", "/api/v1/feeds", fx.admin_auth, NULL, big, &r), 0);
    assert_error_shape(&r, 413, "body too large");
    assert_null(strstr(r.headers, "text/html"));
    htu_resp_free(&r);
    free(big);
    /* outside /api/v1 */
    assert_int_equal(http("GET", "/api/v2/feeds", fx.admin_auth, NULL, NULL, &r), 0);
    assert_error_shape(&r, 404, "not found");
    htu_resp_free(&r);
    assert_int_equal(http("GET", "/api/v2/x", NULL, NULL, NULL, &r), 0);
    assert_error_shape(&r, 404, "not found");
    htu_resp_free(&r);
}

static void test_never_seen_token_gets_503_while_postgres_is_away(void **state)
{
    char fresh[200];
    create_token("viewer", "fresh-during-outage", fresh, sizeof fresh);
    htu_proxy_cut(fx.proxy);
    htu_resp_t r;
    assert_int_equal(http("GET", "/api/v1/feeds", fresh, NULL, NULL, &r), 0);
    assert_error_shape(&r, 503, "database unavailable");
    htu_resp_free(&r);
    /* a token that is not even well-formed is still 401: nothing to check */
    assert_int_equal(status_of("GET", "/api/v1/feeds", "Authorization: Bearer nonsense", NULL),
                     401);
    htu_proxy_restore(fx.proxy);
    int64_t deadline = ktu_now_ms() + 10000;
    int s = 503;
    while (ktu_now_ms() < deadline && (s = status_of("GET", "/api/v1/feeds", fresh, NULL)) == 503)
        ktu_sleep_ms(100);
    assert_int_equal(s, 200);
}

/* Alarms of type on resource in state (from the first 1000 of /api/v1/alarms). */
static size_t alarms_on(const char *state, const char *type, const char *resource)
{
    char path[200];
    snprintf(path, sizeof path, "/api/v1/alarms?state=%s&type=%s&limit=1000", state, type);
    htu_resp_t r;
    assert_int_equal(http("GET", path, fx.viewer_auth, NULL, NULL, &r), 0);
    json_t *j = body_json(&r);
    size_t n = 0, i;
    json_t *a;
    json_array_foreach(json_object_get(j, "items"), i, a)
    {
        if (strcmp(json_string_value(json_object_get(a, "resource")), resource) == 0)
            n++;
    }
    json_decref(j);
    htu_resp_free(&r);
    return n;
}

static void wait_alarms_on(const char *state, const char *type, const char *resource, size_t want,
                           rd_kafka_t *p, const char *keep_sending)
{
    int64_t deadline = ktu_now_ms() + 20000;
    size_t got = 0;
    while (ktu_now_ms() < deadline) {
        if (keep_sending)
            produce_event(p, keep_sending);
        if ((got = alarms_on(state, type, resource)) == want)
            return;
        ktu_sleep_ms(200);
    }
    fail_msg("%s %s on %s: %zu, want %zu", state, type, resource, got, want);
}

static void test_alarms_raised_before_an_admin_restart_clear_on_heartbeat(void **state)
{
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    const char *down = "{\"type\":\"heartbeat\",\"service\":\"ndd-aggregation\",\"instance\":"
                       "\"restart-1\",\"interval_ms\":500,\"counters\":{},\"feeds\":{\"rf\":{"
                       "\"endpoints\":{\"http://r:1\":\"down\"}}}}";
    const char *up = "{\"type\":\"heartbeat\",\"service\":\"ndd-aggregation\",\"instance\":"
                     "\"restart-1\",\"interval_ms\":500,\"counters\":{},\"feeds\":{\"rf\":{"
                     "\"endpoints\":{\"http://r:1\":\"up\"}}}}";
    /* an endpoint reported down, then silence: endpoint-down and service-down are active */
    wait_alarms_on("active", "endpoint-down", "rf/http://r:1", 1, p, down);
    wait_alarms_on("active", "service-down", "ndd-aggregation/restart-1", 1, NULL, NULL);

    assert_true(ktu_stop(fx.pid, SIGTERM, 10000) != -1);
    start_admin();
    /* the new admin process knows both from PostgreSQL: the worker's heartbeat clears them */
    wait_alarms_on("active", "service-down", "ndd-aggregation/restart-1", 0, p, up);
    wait_alarms_on("active", "endpoint-down", "rf/http://r:1", 0, p, up);
    assert_int_equal(alarms_on("cleared", "service-down", "ndd-aggregation/restart-1"), 1);
    rd_kafka_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crud_create_get_list_replace_patch_delete),
        cmocka_unit_test(test_bad_inputs_get_status_and_field),
        cmocka_unit_test(test_auth_401_without_token_403_for_viewer_write),
        cmocka_unit_test(test_stale_if_match_gets_412),
        cmocka_unit_test(test_every_change_writes_one_audit_row),
        cmocka_unit_test(test_changes_are_published_to_config_topic),
        cmocka_unit_test_teardown(test_postgres_unreachable_writes_503_reads_keep_working,
                                  restore_proxy),
        cmocka_unit_test_teardown(test_heartbeats_status_and_service_down_alarm, restore_proxy),
        cmocka_unit_test(test_bad_names_get_422_invalid_value_for_every_kind),
        cmocka_unit_test(test_errors_before_the_handler_are_json_in_the_error_shape),
        cmocka_unit_test_teardown(test_never_seen_token_gets_503_while_postgres_is_away,
                                  restore_proxy),
        cmocka_unit_test(test_alarms_raised_before_an_admin_restart_clear_on_heartbeat),
        cmocka_unit_test(test_kill_and_restart_loses_no_configuration),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
