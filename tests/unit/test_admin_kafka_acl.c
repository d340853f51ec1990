/* ndd-admin's Kafka feed topics and ACLs (admin_kafka_acl.c) without a broker: what it leaves
 * alone is never sent to Kafka, and a cluster that does not answer is a 503 naming no field
 * (the request is fine; tests/e2e/test_kafka_acl.sh covers a real broker). The cluster here
 * is 127.0.0.1:1, where nothing listens, with 300 ms per call. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "clock.h"
#include "admin.h"

#define NOBODY "127.0.0.1:1"

static json_t *kafka_feed(const char *cluster, const char *kafka)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"id\":\"f-1\",\"name\":\"vendor-a\",\"transport\":\"kafka\",\"encoding\":"
             "\"frame\",\"endpoints\":[{\"url\":\"kafka://%s/ndd.feed.vendor-a\"}]%s%s}",
             cluster, kafka ? ",\"kafka\":" : "", kafka ? kafka : "");
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    return j;
}

static void test_feeds_the_admin_does_not_manage_make_no_kafka_call(void **state)
{
    (void)state;
    char err[256];
    admin_kacl_t *k = admin_kacl_new(NOBODY, 300, err, sizeof err);
    assert_non_null(k);
    admin_ctx_t ctx;
    assert_int_equal(admin_ctx_init(&ctx, 16, 65536), 0);
    admin_err_t e;
    memset(&e, 0, sizeof e);
    int64_t t0 = mono_now_ms();
    /* another cluster than the admin's bootstrap, and a transport that is not kafka */
    json_t *other = kafka_feed("10.0.0.1:9092", "{\"consumer\":{\"principal\":\"User:a\"}}");
    json_t *h2 = json_loads("{\"id\":\"f-2\",\"name\":\"p\",\"transport\":\"http2\",\"endpoints\":"
                            "[{\"url\":\"http://127.0.0.1:1/x\"}]}",
                            0, NULL);
    assert_int_equal(admin_kacl_grant(k, other, &e), 0);
    assert_int_equal(admin_kacl_grant(k, h2, &e), 0);
    assert_int_equal(admin_kacl_revoke(k, &ctx, other, NULL, &e), 0);
    /* on the admin's cluster but without a consumer: a delete has no ACL to remove */
    json_t *bare = kafka_feed(NOBODY, NULL);
    assert_int_equal(admin_kacl_revoke(k, &ctx, bare, NULL, &e), 0);
    assert_true(mono_now_ms() - t0 < 250); /* none waited for the cluster */
    assert_int_equal(admin_kacl_errors(k), 0);
    json_t *st = admin_kacl_status(k, wall_now_ms());
    assert_int_equal(json_array_size(st), 0);
    json_decref(st);
    json_decref(other);
    json_decref(h2);
    json_decref(bare);
    admin_ctx_free(&ctx);
    admin_kacl_free(k);
}

static void test_unreachable_cluster_is_503_for_grant_and_revoke(void **state)
{
    (void)state;
    char err[256];
    admin_kacl_t *k = admin_kacl_new(NOBODY, 300, err, sizeof err);
    assert_non_null(k);
    admin_ctx_t ctx;
    assert_int_equal(admin_ctx_init(&ctx, 16, 65536), 0);
    json_t *f = kafka_feed(NOBODY, "{\"topic\":{\"partitions\":2},\"consumer\":{\"principal\":"
                                   "\"User:CN=vendor-a,O=V\",\"group_prefix\":\"va.\"}}");
    admin_err_t e;
    memset(&e, 0, sizeof e);
    int64_t t0 = mono_now_ms();
    assert_int_equal(admin_kacl_grant(k, f, &e), -1);
    assert_int_equal(e.status, 503);
    assert_string_equal(e.field, "");
    assert_non_null(strstr(e.reason, NOBODY));
    memset(&e, 0, sizeof e);
    assert_int_equal(admin_kacl_revoke(k, &ctx, f, NULL, &e), -1);
    assert_int_equal(e.status, 503);
    assert_true(admin_kacl_errors(k) >= 2);
    /* bounded by the timeout given (300 ms per call, and librdkafka's own margin) */
    assert_true(mono_now_ms() - t0 < 6000);
    /* the reconcile of a cache holding the feed fails and stays pending for the retry */
    json_incref(f);
    assert_int_equal(admin_cache_put(&ctx.cache[ADMIN_KIND_FEED], f), 0);
    assert_int_equal(admin_kacl_reconcile(k, &ctx), -1);
    assert_true(admin_kacl_pending(k));
    /* a status sample records why it has no figures */
    admin_kacl_sample(k, &ctx, wall_now_ms());
    json_t *st = admin_kacl_status(k, wall_now_ms());
    assert_int_equal(json_array_size(st), 1);
    json_t *o = json_array_get(st, 0);
    assert_string_equal(json_string_value(json_object_get(o, "principal")), "User:CN=vendor-a,O=V");
    assert_string_equal(json_string_value(json_object_get(o, "group_prefix")), "va.");
    assert_string_equal(json_string_value(json_object_get(o, "state")), "unknown");
    assert_non_null(json_object_get(o, "error"));
    assert_null(json_object_get(o, "consumer_lag"));
    json_decref(st);
    json_decref(f);
    admin_ctx_free(&ctx);
    admin_kacl_free(k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_feeds_the_admin_does_not_manage_make_no_kafka_call),
        cmocka_unit_test(test_unreachable_cluster_is_503_for_grant_and_revoke),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
