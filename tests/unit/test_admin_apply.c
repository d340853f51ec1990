/* The declarative apply's planning without a database (admin_h_apply with dry_run, and the
 * diff): create/update/delete/unchanged against the cached objects, changed paths with server
 * fields ignored, the prune limited to the kinds the document holds, and every refusal naming
 * the object by its path in the document before anything could be written. The writes
 * themselves (one transaction, audit, ndd.config) are tests/e2e/test_admin_apply.sh's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "admin.h"

#define FEED(name, extra)                                                                          \
    "{\"name\":\"" name "\",\"transport\":\"http2\",\"encoding\":\"json\"," extra                  \
    "\"endpoints\":[{\"url\":\"http://127.0.0.1:28999/in\"}]}"
#define FILTER(name)                                                                               \
    "{\"name\":\"" name "\",\"default\":\"drop\",\"rules\":[{\"name\":\"scp\",\"action\":"         \
    "\"allow\",\"match\":{\"field\":\"@nf-type\",\"op\":\"equals\",\"value\":\"SCP\"}}]}"

static admin_ctx_t ctx;

/* A stored object as the cache holds it: the body plus the server fields. */
static void put(admin_kind_t kind, const char *id, const char *body)
{
    json_t *o = json_loads(body, 0, NULL);
    assert_non_null(o);
    json_object_set_new(o, "id", json_string(id));
    json_object_set_new(o, "version", json_integer(3));
    json_object_set_new(o, "created_at", json_string("2026-12-01T10:00:00.000000Z"));
    json_object_set_new(o, "updated_at", json_string("2026-12-01T10:00:00.000000Z"));
    assert_int_equal(admin_cache_put(&ctx.cache[kind], o), 0);
}

static int setup(void **state)
{
    assert_int_equal(admin_ctx_init(&ctx, 100, 1 << 20), 0);
    put(ADMIN_KIND_FILTER, "f1", FILTER("scp-only"));
    put(ADMIN_KIND_FEED, "d1",
        FEED("demo", "\"filter\":\"scp-only\",\"delivery\":{\"timeout_ms\":5000},"));
    put(ADMIN_KIND_FEED, "o1", FEED("old", ""));
    put(ADMIN_KIND_SOURCE, "s1", "{\"name\":\"scp\",\"type\":\"SCP\",\"topic\":\"SCP\"}");
    return 0;
}

static int teardown(void **state)
{
    admin_ctx_free(&ctx);
    return 0;
}

/* POST /api/v1/apply?query with body as role admin; the answer's JSON. */
static json_t *apply(const char *query, const char *body, int want_status)
{
    admin_req_t req = {.method = ADMIN_POST,
                       .path = "/api/v1/apply",
                       .query = query,
                       .body = body,
                       .body_len = strlen(body)};
    req.principal.role = ADMIN_ROLE_ADMIN;
    snprintf(req.principal.name, sizeof(req.principal.name), "ops");
    admin_resp_t r;
    admin_resp_init(&r);
    admin_h_apply(&ctx, &req, "", &r);
    json_t *j = json_loadb((const char *)r.body.data, r.body.len, 0, NULL);
    if (r.status != want_status)
        fail_msg("apply %s: %d, expected %d: %.*s", body, r.status, want_status, (int)r.body.len,
                 (const char *)r.body.data);
    admin_resp_free(&r);
    assert_non_null(j);
    return j;
}

static json_t *change(json_t *res, const char *kind, const char *name)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(res, "changes"), i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "kind")), kind) == 0 &&
            strcmp(json_string_value(json_object_get(c, "name")), name) == 0)
            return c;
    }
    fail_msg("no change for %s %s", kind, name);
    return NULL;
}

static const char *action(json_t *res, const char *kind, const char *name)
{
    return json_string_value(json_object_get(change(res, kind, name), "action"));
}

static void test_plan_update_create_unchanged_and_changed_paths(void **state)
{
    json_t *r = apply(
        "dry_run=true",
        "{\"filters\":[" FILTER("scp-only") "],\"feeds\":[" FEED(
            "demo",
            "\"filter\":\"scp-only\",\"delivery\":{\"timeout_ms\":2000},") "," FEED("new", "") "]}",
        200);
    assert_true(json_is_true(json_object_get(r, "dry_run")));
    assert_string_equal(action(r, "filter", "scp-only"), "unchanged");
    assert_string_equal(action(r, "feed", "demo"), "update");
    assert_string_equal(action(r, "feed", "new"), "create");
    json_t *want =
        json_loads("[{\"path\":\"delivery.timeout_ms\",\"before\":5000,\"after\":2000}]", 0, NULL);
    assert_true(json_equal(json_object_get(change(r, "feed", "demo"), "diff"), want));
    json_decref(want);
    /* without prune, "old" is left alone: no change listed for it */
    size_t n = json_array_size(json_object_get(r, "changes"));
    assert_int_equal(n, 3);
    /* filters come before the feeds that name them */
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(r, "changes"), 0), "kind")),
                        "filter");
    json_decref(r);
}

static void test_prune_deletes_only_in_the_kinds_present(void **state)
{
    json_t *r = apply("dry_run=true&prune=true",
                      "{\"feeds\":[" FEED("demo", "\"filter\":\"scp-only\",\"delivery\":{"
                                                  "\"timeout_ms\":5000},") "]}",
                      200);
    assert_string_equal(action(r, "feed", "demo"), "unchanged");
    assert_string_equal(action(r, "feed", "old"), "delete");
    /* a delete's diff lists the old members, with "before" only */
    json_t *d = json_array_get(json_object_get(change(r, "feed", "old"), "diff"), 0);
    assert_non_null(json_object_get(d, "before"));
    assert_null(json_object_get(d, "after"));
    assert_int_equal(json_array_size(json_object_get(r, "changes")), 2); /* filter, source kept */
    json_decref(r);
}

static void test_refusals_name_the_object_path(void **state)
{
    static const struct {
        const char *body, *query;
        int status;
        const char *field;
    } cases[] = {
        {"{\"feeds\":[" FEED("a", "") "," FEED("b", "\"delivery\":{\"timeout_ms\":-1},") "]}", "",
         422, "feeds[1].delivery.timeout_ms"},
        {"{\"feeds\":[" FEED("a", "") ",{\"name\":\"b\",\"transport\":\"http2\",\"encoding\":"
                                      "\"json\",\"endpoints\":[{\"url\":\"http://h:99999/\"}]}]}",
         "", 422, "feeds[1].endpoints[0].url"},
        {"{\"feeds\":[" FEED("a", "") "," FEED("a", "") "]}", "", 422, "feeds[1].name"},
        {"{\"feeds\":[" FEED("a", "\"filter\":\"nope\",") "]}", "", 422, "feeds[0].filter"},
        /* the filter it names is pruned by the same document */
        {"{\"filters\":[],\"feeds\":[" FEED("a", "\"filter\":\"scp-only\",") "]}", "prune=true",
         422, "feeds[0].filter"},
        /* a stored feed the document leaves alone still uses the filter the prune would drop */
        {"{\"filters\":[]}", "prune=true", 409, "filters"},
        {"{\"widgets\":[]}", "", 400, "widgets"},
        {"{\"feeds\":{}}", "", 400, "feeds"},
        {"{\"feeds\":[\"demo\"]}", "", 400, "feeds[0]"},
        {"{\"feeds\":[]}", "dry_run=yes", 400, "dry_run"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        json_t *r = apply(cases[i].query, cases[i].body, cases[i].status);
        const char *field = json_string_value(json_object_get(r, "field"));
        if (!field || strcmp(field, cases[i].field) != 0)
            fail_msg("case %zu: field \"%s\", expected \"%s\"", i, field ? field : "(none)",
                     cases[i].field);
        json_decref(r);
    }
    /* the stored objects are as before */
    assert_int_equal(ctx.cache[ADMIN_KIND_FEED].count, 2);
    assert_int_equal(ctx.cache[ADMIN_KIND_FILTER].count, 1);
}

static void test_writes_need_the_database_and_a_no_op_does_not(void **state)
{
    json_decref(apply("", "{\"feeds\":[" FEED("new", "") "]}", 503));
    json_t *r =
        apply("", "{\"sources\":[{\"name\":\"scp\",\"type\":\"SCP\",\"topic\":\"SCP\"}]}", 200);
    assert_true(json_is_false(json_object_get(r, "dry_run")));
    assert_string_equal(action(r, "source", "scp"), "unchanged");
    json_decref(r);
}

static void test_diff_paths(void **state)
{
    json_t *a = json_loads("{\"id\":\"x\",\"version\":2,\"name\":\"n\",\"e\":[{\"u\":1},{\"u\":2}],"
                           "\"d\":{\"t\":1,\"gone\":true}}",
                           0, NULL);
    json_t *b = json_loads("{\"id\":\"y\",\"version\":3,\"name\":\"n\",\"e\":[{\"u\":1}],"
                           "\"d\":{\"t\":2},\"new\":null}",
                           0, NULL);
    json_t *d = admin_json_diff(a, b);
    json_t *want = json_loads("[{\"path\":\"d.gone\",\"before\":true},"
                              "{\"path\":\"d.t\",\"before\":1,\"after\":2},"
                              "{\"path\":\"e[1]\",\"before\":{\"u\":2}},"
                              "{\"path\":\"new\",\"after\":null}]",
                              0, NULL);
    if (!json_equal(d, want))
        fail_msg("diff: %s", json_dumps(d, JSON_COMPACT));
    json_decref(d);
    d = admin_json_diff(a, a);
    assert_int_equal(json_array_size(d), 0);
    json_decref(d);
    json_decref(want);
    json_decref(a);
    json_decref(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_update_create_unchanged_and_changed_paths),
        cmocka_unit_test(test_prune_deletes_only_in_the_kinds_present),
        cmocka_unit_test(test_refusals_name_the_object_path),
        cmocka_unit_test(test_writes_need_the_database_and_a_no_op_does_not),
        cmocka_unit_test(test_diff_paths),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
