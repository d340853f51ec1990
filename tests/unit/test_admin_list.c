/* The read side of the collections without a database: cursor pages return every object
 * exactly once while objects are created and deleted between pages, the filters, 400s naming
 * the parameter, and conditional GETs (ETag per version, If-None-Match -> 304 without a body,
 * a 200 that carries the cached text itself). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "admin.h"

static void put(admin_ctx_t *ctx, const char *id, const char *name, int version, int enabled)
{
    json_t *o = json_pack("{s:s,s:s,s:i}", "id", id, "name", name, "version", version);
    if (enabled >= 0)
        json_object_set_new(o, "enabled", json_boolean(enabled));
    assert_int_equal(admin_cache_put(&ctx->cache[ADMIN_KIND_SOURCE], o), 0);
}

static json_t *list(admin_ctx_t *ctx, const char *query, int want_status, admin_resp_t *r)
{
    admin_req_t req = {.method = ADMIN_GET, .path = "/api/v1/sources", .query = query};
    admin_resp_init(r);
    admin_h_list(ctx, &req, "", r);
    assert_int_equal(r->status, want_status);
    json_t *j = json_loadb((const char *)r->body.data, r->body.len, 0, NULL);
    assert_non_null(j);
    return j;
}

static void test_cursor_round_trips_and_rejects_what_it_did_not_make(void **state)
{
    char c[512], name[80], id[160];
    assert_int_equal(admin_cursor_encode("feed-a", "0001", c, sizeof(c)), 0);
    assert_int_equal(admin_cursor_decode(c, name, sizeof(name), id, sizeof(id)), 0);
    assert_string_equal(name, "feed-a");
    assert_string_equal(id, "0001");
    static const char *const bad[] = {"", "c1", "c2666f0a31", "c1zz", "c1666f", "c1666f0a", "c100"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        assert_int_equal(admin_cursor_decode(bad[i], name, sizeof(name), id, sizeof(id)), -1);
}

/* 300 objects walked in pages of 7; between pages one object after the cursor is deleted and
 * one created (some before the cursor, some after): every object that existed for the whole
 * walk is seen exactly once, one deleted before the walk reached it never, nothing twice. */
static void test_cursor_pages_return_each_object_once_across_inserts_and_deletes(void **state)
{
    admin_ctx_t ctx;
    assert_int_equal(admin_ctx_init(&ctx, 1000, 1024), 0);
    enum { N = 300 };
    char id[32], name[32];
    for (int i = 0; i < N; i++) {
        snprintf(id, sizeof(id), "id%04d", i);
        snprintf(name, sizeof(name), "src-%04d", i);
        put(&ctx, id, name, 1, -1);
    }
    int seen[N + 200] = {0};
    bool deleted[N] = {false};
    char query[600] = "limit=7";
    int pages = 0, created = 0;
    for (;;) {
        admin_resp_t r;
        json_t *j = list(&ctx, query, 200, &r);
        size_t k;
        json_t *it;
        json_array_foreach(json_object_get(j, "items"), k, it)
        {
            int n = atoi(json_string_value(json_object_get(it, "id")) + 2);
            assert_true(n >= 0 && n < N + 200);
            seen[n]++;
        }
        const char *next = json_string_value(json_object_get(j, "next_cursor"));
        pages++;
        if (!next) {
            json_decref(j);
            admin_resp_free(&r);
            break;
        }
        snprintf(query, sizeof(query), "limit=7&cursor=%s", next);
        json_decref(j);
        admin_resp_free(&r);
        /* concurrent writers: delete an object not yet reached, create one on either side */
        int victim = N - 1 - pages;
        if (victim >= 0) {
            snprintf(id, sizeof(id), "id%04d", victim);
            admin_cache_remove(&ctx.cache[ADMIN_KIND_SOURCE], id);
            /* deleted before the walk reached it: must never appear */
            deleted[victim] = seen[victim] == 0;
        }
        snprintf(id, sizeof(id), "id%04d", N + created);
        snprintf(name, sizeof(name), created % 2 ? "src-0000a%03d" : "src-zzzz%03d", created);
        put(&ctx, id, name, 1, -1);
        created++;
    }
    for (int i = 0; i < N; i++)
        assert_int_equal(seen[i], deleted[i] ? 0 : 1);
    for (int i = N; i < N + created; i++)
        assert_true(seen[i] <= 1);
    assert_true(pages > N / 7 / 2);
    admin_ctx_free(&ctx);
}

static void test_filters_select_by_name_prefix_and_state(void **state)
{
    admin_ctx_t ctx;
    assert_int_equal(admin_ctx_init(&ctx, 16, 1024), 0);
    put(&ctx, "a", "edge-1", 1, 1);
    put(&ctx, "b", "edge-2", 1, 0);
    put(&ctx, "c", "core-1", 1, -1);
    admin_resp_t r;
    json_t *j = list(&ctx, "name_prefix=edge-", 200, &r);
    assert_int_equal(json_integer_value(json_object_get(j, "total")), 2);
    json_decref(j);
    admin_resp_free(&r);
    j = list(&ctx, "state=enabled", 200, &r); /* absent "enabled" counts as enabled */
    assert_int_equal(json_integer_value(json_object_get(j, "total")), 2);
    json_decref(j);
    admin_resp_free(&r);
    j = list(&ctx, "state=disabled&name_prefix=edge", 200, &r);
    assert_int_equal(json_integer_value(json_object_get(j, "count")), 1);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(j, "items"), 0), "name")),
        "edge-2");
    assert_null(json_object_get(j, "next_cursor"));
    json_decref(j);
    admin_resp_free(&r);
    admin_ctx_free(&ctx);
}

/* Replacing (also renaming) and removing keep the cache's (name, id) order the pages walk. */
static void test_cache_order_follows_replaces_renames_and_removes(void **state)
{
    admin_ctx_t ctx;
    assert_int_equal(admin_ctx_init(&ctx, 64, 1024), 0);
    char id[16], name[16];
    for (int i = 0; i < 40; i++) {
        snprintf(id, sizeof(id), "i%02d", (i * 17) % 40);
        snprintf(name, sizeof(name), "n%02d", (i * 23) % 40);
        put(&ctx, id, name, 1, -1);
    }
    put(&ctx, "i05", "a-first", 2, -1); /* rename to the front */
    put(&ctx, "i06", "n06", 2, -1);     /* replace in place (or move) */
    admin_cache_remove(&ctx.cache[ADMIN_KIND_SOURCE], "i07");
    const admin_cache_t *c = &ctx.cache[ADMIN_KIND_SOURCE];
    assert_int_equal(c->count, 39);
    assert_string_equal(c->sorted[0]->name, "a-first");
    for (size_t k = 1; k < c->count; k++)
        assert_true(admin_obj_key_cmp(c->sorted[k - 1]->name, c->sorted[k - 1]->id,
                                      c->sorted[k]->name, c->sorted[k]->id) < 0);
    for (size_t k = 0; k < c->count; k++)
        assert_ptr_equal(admin_cache_get(c, c->sorted[k]->id), c->sorted[k]);
    admin_resp_t r;
    json_t *j = list(&ctx, "limit=1000", 200, &r);
    assert_int_equal(json_integer_value(json_object_get(j, "count")), 39);
    json_decref(j);
    admin_resp_free(&r);
    admin_ctx_free(&ctx);
}

static void test_bad_list_parameters_are_400_naming_the_parameter(void **state)
{
    admin_ctx_t ctx;
    assert_int_equal(admin_ctx_init(&ctx, 16, 1024), 0);
    static const char *const q[][2] = {
        {"limit=0", "limit"},
        {"limit=abc", "limit"},
        {"state=paused", "state"},
        {"cursor=nonsense", "cursor"},
        {"cursor=c1610a62&offset=3", "offset"},
        {"name_prefix=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
         "name_prefix"}};
    for (size_t i = 0; i < sizeof(q) / sizeof(*q); i++) {
        admin_resp_t r;
        json_t *j = list(&ctx, q[i][0], 400, &r);
        assert_string_equal(json_string_value(json_object_get(j, "field")), q[i][1]);
        json_decref(j);
        admin_resp_free(&r);
    }
    admin_ctx_free(&ctx);
}

static void test_get_sends_the_cached_text_and_304_for_a_current_etag(void **state)
{
    admin_ctx_t ctx;
    assert_int_equal(admin_ctx_init(&ctx, 16, 1024), 0);
    put(&ctx, "s1", "one", 3, -1);
    const admin_obj_t *o = admin_cache_get(&ctx.cache[ADMIN_KIND_SOURCE], "s1");
    static const struct {
        const char *inm;
        int status;
    } cases[] = {{NULL, 200}, {"\"3\"", 304}, {"W/\"3\"", 304}, {"\"2\", \"3\"", 304},
                 {"*", 304},  {"\"2\"", 200}, {"\"33\"", 200},  {"3", 200}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        admin_req_t req = {
            .method = ADMIN_GET, .path = "/api/v1/sources/s1", .if_none_match = cases[i].inm};
        admin_resp_t r;
        admin_resp_init(&r);
        admin_h_get(&ctx, &req, "s1", &r);
        assert_int_equal(r.status, cases[i].status);
        assert_string_equal(r.etag, "\"3\"");
        if (cases[i].status == 200) {
            assert_ptr_equal(r.body_ref, o->text);
            assert_int_equal(r.body_ref_len, o->text_len);
        } else {
            assert_int_equal(r.body.len, 0);
        }
        admin_resp_free(&r);
    }
    /* a new version gets a new ETag: the old one no longer matches */
    put(&ctx, "s1", "one", 4, -1);
    admin_req_t req = {.method = ADMIN_GET, .path = "/api/v1/sources/s1", .if_none_match = "\"3\""};
    admin_resp_t r;
    admin_resp_init(&r);
    admin_h_get(&ctx, &req, "s1", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.etag, "\"4\"");
    admin_resp_free(&r);
    admin_ctx_free(&ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cursor_round_trips_and_rejects_what_it_did_not_make),
        cmocka_unit_test(test_cursor_pages_return_each_object_once_across_inserts_and_deletes),
        cmocka_unit_test(test_filters_select_by_name_prefix_and_state),
        cmocka_unit_test(test_cache_order_follows_replaces_renames_and_removes),
        cmocka_unit_test(test_bad_list_parameters_are_400_naming_the_parameter),
        cmocka_unit_test(test_get_sends_the_cached_text_and_304_for_a_current_etag),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
