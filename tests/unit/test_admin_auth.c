/* API tokens: shape, salted hashing, verification; and request dispatch without a database:
 * 401 without a valid token, 404/405, reads served from the cache. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "admin.h"
#include "httpd.h"

static void test_token_generate_gives_distinct_tokens_that_verify(void **state)
{
    char id1[32], tok1[160], salt1[65], hash1[65];
    char id2[32], tok2[160], salt2[65], hash2[65];
    assert_int_equal(admin_token_generate(id1, tok1, salt1, hash1), 0);
    assert_int_equal(admin_token_generate(id2, tok2, salt2, hash2), 0);
    assert_string_not_equal(tok1, tok2);
    assert_string_not_equal(salt1, salt2);
    char id[32];
    const char *secret;
    assert_int_equal(admin_token_parse(tok1, id, sizeof(id), &secret), 0);
    assert_string_equal(id, id1);
    assert_true(admin_token_verify(secret, salt1, hash1));
    /* the hash is not the secret, and another token's salt/hash do not verify it */
    assert_null(strstr(hash1, secret));
    assert_false(admin_token_verify(secret, salt2, hash2));
    assert_false(admin_token_verify(secret, salt2, hash1));
}

static void test_token_verify_rejects_a_changed_secret(void **state)
{
    char id[32], tok[160], salt[65], hash[65];
    assert_int_equal(admin_token_generate(id, tok, salt, hash), 0);
    char pid[32];
    const char *secret;
    assert_int_equal(admin_token_parse(tok, pid, sizeof(pid), &secret), 0);
    char changed[80];
    snprintf(changed, sizeof(changed), "%s", secret);
    changed[0] = changed[0] == 'a' ? 'b' : 'a';
    assert_false(admin_token_verify(changed, salt, hash));
    assert_false(admin_token_verify(secret, "zz", hash));
}

static void test_token_parse_rejects_foreign_shapes(void **state)
{
    static const char *const bad[] = {
        "",
        "ndd_",
        "abc",
        "ndd_0123456789abcdef",
        "ndd_0123456789ABCDEF_" /* upper-case id */
        "0000000000000000000000000000000000000000000000000000000000000000",
        "ndd_0123456789abcdef_short",
        "xyz_0123456789abcdef_"
        "0000000000000000000000000000000000000000000000000000000000000000"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        char id[32];
        const char *secret;
        assert_int_equal(admin_token_parse(bad[i], id, sizeof(id), &secret), -1);
    }
}

static void test_roles_parse(void **state)
{
    assert_int_equal(admin_role_parse("admin"), ADMIN_ROLE_ADMIN);
    assert_int_equal(admin_role_parse("viewer"), ADMIN_ROLE_VIEWER);
    assert_int_equal(admin_role_parse("root"), ADMIN_ROLE_NONE);
    assert_int_equal(admin_role_parse(NULL), ADMIN_ROLE_NONE);
}

static void request(admin_ctx_t *ctx, admin_method_t m, const char *path, const char *auth,
                    admin_resp_t *resp)
{
    admin_req_t req = {.method = m, .path = path};
    admin_resp_init(resp);
    admin_handle(ctx, &req, auth, resp);
}

static void test_dispatch_401_404_405_without_database(void **state)
{
    admin_ctx_t ctx;
    assert_int_equal(admin_ctx_init(&ctx, 16, 1024), 0);
    admin_resp_t r;
    request(&ctx, ADMIN_GET, "/api/v1/feeds", NULL, &r);
    assert_int_equal(r.status, 401);
    admin_resp_free(&r);
    request(&ctx, ADMIN_GET, "/api/v1/feeds", "Bearer nonsense", &r);
    assert_int_equal(r.status, 401);
    admin_resp_free(&r);
    request(&ctx, ADMIN_GET, "/api/v1/unknown", NULL, &r);
    assert_int_equal(r.status, 404);
    admin_resp_free(&r);
    request(&ctx, ADMIN_DELETE, "/api/v1/feeds", NULL, &r);
    assert_int_equal(r.status, 405);
    assert_non_null(strstr((const char *)r.body.data, "GET"));
    admin_resp_free(&r);
    request(&ctx, ADMIN_GET, "/api/v1/feeds/a/b", NULL, &r);
    assert_int_equal(r.status, 404);
    admin_resp_free(&r);
    admin_ctx_free(&ctx);
}

static void test_query_parameters_are_decoded(void **state)
{
    char v[32];
    assert_int_equal(httpd_query_get("a=1&name=my%2Dfeed&b=x+y", "name", v, sizeof(v)), 1);
    assert_string_equal(v, "my-feed");
    assert_int_equal(httpd_query_get("a=1&name=my%2Dfeed&b=x+y", "b", v, sizeof(v)), 1);
    assert_string_equal(v, "x y");
    assert_int_equal(httpd_query_get("names=1", "name", v, sizeof(v)), 0);
    assert_int_equal(httpd_query_get(NULL, "name", v, sizeof(v)), 0);
    assert_int_equal(httpd_query_get("name=%4", "name", v, sizeof(v)), 1);
}

static void test_cache_put_get_replace_remove_and_limit(void **state)
{
    admin_cache_t c;
    assert_int_equal(admin_cache_init(&c, 2), 0);
    assert_int_equal(
        admin_cache_put(&c, json_pack("{s:s,s:s,s:i}", "id", "a", "name", "A", "version", 1)), 0);
    assert_int_equal(
        admin_cache_put(&c, json_pack("{s:s,s:s,s:i}", "id", "b", "name", "B", "version", 1)), 0);
    /* full: a third id is refused, a replacement of a present id is not */
    assert_int_equal(admin_cache_put(&c, json_pack("{s:s,s:s}", "id", "c", "name", "C")), -1);
    assert_int_equal(
        admin_cache_put(&c, json_pack("{s:s,s:s,s:i}", "id", "a", "name", "A2", "version", 2)), 0);
    assert_int_equal(c.count, 2);
    admin_obj_t *o = admin_cache_get(&c, "a");
    assert_non_null(o);
    assert_int_equal(o->version, 2);
    assert_string_equal(o->name, "A2");
    assert_int_equal(o->text[o->text_len - 1], '\n');
    assert_ptr_equal(admin_cache_find_name(&c, "B"), admin_cache_get(&c, "b"));
    /* the name index follows a rename and a removal */
    assert_null(admin_cache_find_name(&c, "A"));
    assert_ptr_equal(admin_cache_find_name(&c, "A2"), o);
    admin_cache_remove(&c, "a");
    assert_null(admin_cache_get(&c, "a"));
    assert_null(admin_cache_find_name(&c, "A2"));
    assert_non_null(admin_cache_find_name(&c, "B"));
    assert_int_equal(c.count, 1);
    admin_cache_free(&c);
}

/* The connection's memo answers only for the very token it holds, and only until it expires:
 * without a database (nothing else can verify a token here) a memo hit is the only way to a
 * role, so each case below proves which path was taken. */
static void test_token_memo_answers_only_for_its_token_until_it_expires(void **state)
{
    (void)state;
    admin_tokens_t *t = admin_tokens_new(NULL, 16, 30000);
    assert_non_null(t);
    char id[32], tok[160], salt[65], hash[65];
    assert_int_equal(admin_token_generate(id, tok, salt, hash), 0);
    admin_token_memo_t memo;
    memset(&memo, 0, sizeof(memo));
    memcpy(memo.token, tok, strlen(tok));
    memo.len = strlen(tok);
    memo.role = ADMIN_ROLE_VIEWER;
    snprintf(memo.name, sizeof(memo.name), "console");
    snprintf(memo.id, sizeof(memo.id), "%s", id);
    memo.expires_ms = wall_now_ms() + 60000;
    char auth[200];
    snprintf(auth, sizeof(auth), "Bearer %s", tok);
    admin_principal_t p;
    admin_tokens_authenticate_memo(t, auth, &memo, &p);
    assert_int_equal(p.role, ADMIN_ROLE_VIEWER);
    assert_string_equal(p.name, "console");
    assert_string_equal(p.token_id, id);
    /* one character changed: not the memo's token */
    char other[200];
    snprintf(other, sizeof(other), "%s", auth);
    other[strlen(other) - 1] = other[strlen(other) - 1] == 'a' ? 'b' : 'a';
    admin_tokens_authenticate_memo(t, other, &memo, &p);
    assert_int_equal(p.role, ADMIN_ROLE_NONE);
    /* a prefix of it: not the memo's token either */
    other[strlen(other) - 1] = '\0';
    admin_tokens_authenticate_memo(t, other, &memo, &p);
    assert_int_equal(p.role, ADMIN_ROLE_NONE);
    /* expired: the token must be verified again (here: cannot be) */
    memo.expires_ms = wall_now_ms() - 1;
    admin_tokens_authenticate_memo(t, auth, &memo, &p);
    assert_int_equal(p.role, ADMIN_ROLE_NONE);
    /* without a memo, as before */
    admin_tokens_authenticate_memo(t, auth, NULL, &p);
    assert_int_equal(p.role, ADMIN_ROLE_NONE);
    admin_tokens_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_generate_gives_distinct_tokens_that_verify),
        cmocka_unit_test(test_token_verify_rejects_a_changed_secret),
        cmocka_unit_test(test_token_parse_rejects_foreign_shapes),
        cmocka_unit_test(test_roles_parse),
        cmocka_unit_test(test_dispatch_401_404_405_without_database),
        cmocka_unit_test(test_query_parameters_are_decoded),
        cmocka_unit_test(test_cache_put_get_replace_remove_and_limit),
        cmocka_unit_test(test_token_memo_answers_only_for_its_token_until_it_expires),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
