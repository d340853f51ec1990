/* Validation of REST bodies: each bad input gets its expected status and names the field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "admin.h"

#define GOOD_FEED                                                                                  \
    "{\"name\":\"probe-1\",\"transport\":\"http2\",\"encoding\":\"json\",\"endpoints\":[{\"url\":" \
    "\"http://127.0.0.1:8080/ingest\",\"weight\":2}]}"

typedef struct bad_case {
    admin_kind_t kind;
    const char *body;
    int status;
    const char *field;
} bad_case_t;

static const bad_case_t bad_cases[] = {
    /* wrong type */
    {ADMIN_KIND_FEED,
     "{\"name\":5,\"transport\":\"http2\",\"endpoints\":[{\"url\":\"http://a:1\"}]}", 400, "name"},
    {ADMIN_KIND_FEED, "{\"name\":\"f\",\"transport\":\"http2\",\"endpoints\":{}}", 400,
     "endpoints"},
    {ADMIN_KIND_FEED,
     "{\"name\":\"f\",\"transport\":\"http2\",\"endpoints\":[{\"url\":\"http://"
     "a:1\",\"weight\":\"2\"}]}",
     400, "endpoints[0].weight"},
    {ADMIN_KIND_FEED,
     "{\"name\":\"f\",\"transport\":\"http2\",\"endpoints\":[{\"url\":\"http://"
     "a:1\"}],\"filter\":7}",
     400, "filter"},
    {ADMIN_KIND_FEED,
     "{\"name\":\"f\",\"transport\":\"http2\",\"endpoints\":[{\"url\":\"http://"
     "a:1\"}],\"delivery\":{\"timeout_ms\":1.5}}",
     400, "delivery.timeout_ms"},
    /* unknown field */
    {ADMIN_KIND_FEED,
     "{\"name\":\"f\",\"transport\":\"http2\",\"endpoints\":[{\"url\":\"http://"
     "a:1\"}],\"colour\":\"red\"}",
     400, "colour"},
    {ADMIN_KIND_FEED,
     "{\"name\":\"f\",\"transport\":\"http2\",\"endpoints\":[{\"url\":\"http://a:1\",\"prio\":1}]}",
     400, "endpoints[0].prio"},
    {ADMIN_KIND_FEED,
     "{\"name\":\"f\",\"transport\":\"http2\",\"endpoints\":[{\"url\":\"http://"
     "a:1\"}],\"tls\":{\"verfy\":true}}",
     400, "tls.verfy"},
    /* missing field */
    {ADMIN_KIND_FEED, "{\"transport\":\"http2\",\"endpoints\":[{\"url\":\"http://a:1\"}]}", 400,
     "name"},
    {ADMIN_KIND_FEED, "{\"name\":\"f\",\"transport\":\"http2\"}", 400, "endpoints"},
    {ADMIN_KIND_FEED, "{\"name\":\"f\",\"transport\":\"http2\",\"endpoints\":[{\"weight\":1}]}",
     400, "endpoints[0].url"},
    {ADMIN_KIND_FEED,
     "{\"name\":\"f\",\"transport\":\"tls\",\"endpoints\":[{\"url\":\"tls://a:1\"}]}", 422,
     "encoding"},
    {ADMIN_KIND_FEED,
     "{\"name\":\"f\",\"endpoints\":[{\"url\":\"http://"
     "a:1\"}],\"delivery\":{\"max_in_flight\":20000}}",
     422, "delivery.max_in_flight"},
    {ADMIN_KIND_FEED,
     "{\"name\":\"f\",\"endpoints\":[{\"url\":\"http://"
     "a:1\"}],\"http\":{\"header_files\":{\"authorization\":3}}}",
     400, "http.header_files.authorization"},
    /* bad URL */
    {ADMIN_KIND_FEED,
     "{\"name\":\"f\",\"transport\":\"http2\",\"endpoints\":[{\"url\":\"not a url\"}]}", 422,
     "endpoints[0].url"},
    {ADMIN_KIND_FEED,
     "{\"name\":\"f\",\"transport\":\"http2\",\"endpoints\":[{\"url\":\"http://"
     "a:1\"},{\"url\":\"ftp://h/x\"}]}",
     422, "endpoints[1].url"},
    {ADMIN_KIND_FEED,
     "{\"name\":\"f\",\"transport\":\"http2\",\"endpoints\":[{\"url\":\"http://h:99999/\"}]}", 422,
     "endpoints[0].url"},
    {ADMIN_KIND_FEED,
     "{\"name\":\"f\",\"transport\":\"tcp\",\"encoding\":\"frame\",\"endpoints\":[{\"url\":\"tcp://"
     "h\"}]}",
     422, "endpoints[0].url"},
    {ADMIN_KIND_FEED,
     "{\"name\":\"f\",\"transport\":\"http2\",\"endpoints\":[{\"url\":\"http://user:pw@h:80/\"}]}",
     422, "endpoints[0].url"},
    /* values */
    {ADMIN_KIND_FEED,
     "{\"name\":\"f\",\"transport\":\"carrier-pigeon\",\"endpoints\":[{\"url\":\"http://a:1\"}]}",
     422, "transport"},
    {ADMIN_KIND_FEED,
     "{\"name\":\"bad name!\",\"transport\":\"http2\",\"endpoints\":[{\"url\":\"http://a:1\"}]}",
     422, "name"},
    {ADMIN_KIND_FEED, "{\"name\":\"f\",\"transport\":\"http2\",\"endpoints\":[]}", 422,
     "endpoints"},
    {ADMIN_KIND_FEED,
     "{\"name\":\"f\",\"transport\":\"http2\",\"endpoints\":[{\"url\":\"http://"
     "a:1\",\"weight\":0}]}",
     422, "endpoints[0].weight"},
    {ADMIN_KIND_FEED,
     "{\"name\":\"f\",\"transport\":\"http2\",\"endpoints\":[{\"url\":\"http://"
     "a:1\"}],\"http\":{\"path\":\"ingest\"}}",
     422, "http.path"},
    /* bad regular expression, inline and in a filter object */
    {ADMIN_KIND_FEED,
     "{\"name\":\"f\",\"transport\":\"http2\",\"endpoints\":[{\"url\":\"http://"
     "a:1\"}],\"filter\":{\"name\":\"x\",\"default\":\"allow\",\"rules\":[{\"name\":\"r\","
     "\"action\":\"drop\",\"match\":{\"field\":\":path\",\"op\":\"regex\",\"value\":\"([a-\"}}]}}",
     422, "filter.rules[0].match.value"},
    {ADMIN_KIND_FILTER,
     "{\"name\":\"x\",\"default\":\"allow\",\"rules\":[{\"name\":\"r\",\"action\":\"drop\","
     "\"match\":{\"field\":\":path\",\"op\":\"regex\",\"value\":\"(\"}}]}",
     422, "rules[0].match.value"},
    {ADMIN_KIND_FILTER, "{\"default\":\"allow\",\"rules\":[]}", 400, "name"},
    {ADMIN_KIND_FILTER, "{\"name\":\"x\",\"default\":\"allow\",\"rules\":[],\"colour\":1}", 400,
     "colour"},
    /* sources and correlation */
    {ADMIN_KIND_SOURCE, "{\"name\":\"scp\",\"type\":\"SCP\"}", 400, "topic"},
    {ADMIN_KIND_SOURCE, "{\"name\":\"scp\",\"type\":\"SMF\",\"topic\":\"SCP\"}", 422, "type"},
    {ADMIN_KIND_SOURCE, "{\"name\":\"scp\",\"type\":\"SCP\",\"topic\":\"bad topic\"}", 422,
     "topic"},
    {ADMIN_KIND_SOURCE, "{\"name\":\"scp\",\"type\":\"SCP\",\"topic\":\"SCP\",\"partitions\":0}",
     422, "partitions"},
    {ADMIN_KIND_CORRELATION, "{\"name\":\"c\",\"timeout_ms\":\"5s\"}", 400, "timeout_ms"},
    {ADMIN_KIND_CORRELATION, "{\"name\":\"c\",\"enabled\":\"yes\"}", 400, "enabled"},
};

static void test_validate_table_of_bad_inputs_gives_status_and_field(void **state)
{
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(*bad_cases); i++) {
        const bad_case_t *c = &bad_cases[i];
        admin_err_t err;
        json_t *body = admin_parse_body(c->body, strlen(c->body), 65536, &err);
        assert_non_null(body);
        int rc = admin_validate(c->kind, body, &err);
        json_decref(body);
        if (rc != -1 || err.status != c->status || strcmp(err.field, c->field) != 0)
            fail_msg("case %zu (%s): got rc %d status %d field \"%s\" (%s), want %d \"%s\"", i,
                     c->body, rc, err.status, err.field, err.reason, c->status, c->field);
        assert_true(err.reason[0] != '\0');
    }
}

/* One name rule for every kind (docs/api.md): 65 characters, non-ASCII and SQL-looking names
 * are a well-formed string with an unacceptable value, 422 "invalid value" on field "name". */
static void test_bad_names_get_422_invalid_value_for_every_kind(void **state)
{
    static const char *const rest[ADMIN_KIND_COUNT] = {
        [ADMIN_KIND_FEED] = ",\"transport\":\"http2\",\"endpoints\":[{\"url\":\"http://a:1\"}]",
        [ADMIN_KIND_FILTER] = ",\"default\":\"allow\",\"rules\":[]",
        [ADMIN_KIND_SOURCE] = ",\"type\":\"SCP\",\"topic\":\"SCP\"",
        [ADMIN_KIND_CORRELATION] = ""};
    static const char *const names[] = {
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", /* 65 */
        "caf\u00e9", "a' OR '1'='1"};
    for (int k = 0; k < ADMIN_KIND_COUNT; k++)
        for (size_t n = 0; n < sizeof names / sizeof *names; n++) {
            char text[512];
            snprintf(text, sizeof text, "{\"name\":\"%s\"%s}", names[n], rest[k]);
            admin_err_t err;
            json_t *body = admin_parse_body(text, strlen(text), 65536, &err);
            assert_non_null(body);
            int rc = admin_validate((admin_kind_t)k, body, &err);
            json_decref(body);
            if (rc != -1 || err.status != 422 || strcmp(err.error, "invalid value") != 0 ||
                strcmp(err.field, "name") != 0)
                fail_msg("%s %s: got rc %d %d \"%s\" field \"%s\"",
                         admin_kind_name((admin_kind_t)k), text, rc, err.status, err.error,
                         err.field);
        }
}

static void test_validate_accepts_good_objects_of_every_kind(void **state)
{
    static const struct {
        admin_kind_t kind;
        const char *body;
    } good[] = {
        {ADMIN_KIND_FEED, GOOD_FEED},
        {ADMIN_KIND_FEED,
         "{\"name\":\"f4\",\"dlq_topic\":\"ndd.dlq.f4\",\"endpoints\":[{\"url\":"
         "\"http://h:8080/\"}],\"delivery\":{\"max_pending\":4096,\"fire_and_forget\":false,"
         "\"retry_initial_ms\":50,\"fail_threshold\":3},\"http\":{\"header_files\":{"
         "\"authorization\":\"/run/secrets/probe-auth\"}},\"tls\":{\"key_password_file\":"
         "\"/run/secrets/kp\"}}"},
        {ADMIN_KIND_FEED,
         "{\"name\":\"f2\",\"source_topic\":\"XDR\",\"transport\":\"tls\",\"encoding\":\"frame\","
         "\"filter\":\"scp-only\",\"endpoints\":[{\"url\":\"tls://[::1]:7000\"},{\"url\":"
         "\"tls://probe.example:7001\",\"weight\":3}],\"delivery\":{\"max_in_flight\":64,"
         "\"timeout_ms\":5000,\"retry_max_ms\":60000,\"batch_max\":10,\"batch_ms\":5},\"tls\":{"
         "\"ca_file\":\"/etc/ca.pem\",\"verify\":true,\"sni\":\"probe.example\"}}"},
        {ADMIN_KIND_FEED,
         "{\"name\":\"f3\",\"transport\":\"http2\",\"filter\":null,\"endpoints\":[{\"url\":"
         "\"https://h.example/x\"}],\"http\":{\"path\":\"/in\",\"method\":\"PUT\",\"headers\":{"
         "\"x-tenant\":\"a\"}},\"id\":\"ignored\",\"version\":3}"},
        {ADMIN_KIND_FILTER,
         "{\"name\":\"scp-only\",\"default\":\"drop\",\"rules\":[{\"name\":\"scp\",\"action\":"
         "\"allow\",\"match\":{\"field\":\"@nf-type\",\"op\":\"equals\",\"value\":\"SCP\"}}]}"},
        {ADMIN_KIND_SOURCE, "{\"name\":\"scp\",\"type\":\"SCP\",\"topic\":\"SCP\",\"partitions\":"
                            "12,\"retention_ms\":-1}"},
        {ADMIN_KIND_CORRELATION, "{\"name\":\"default\",\"enabled\":true,\"timeout_ms\":5000,"
                                 "\"max_open_per_partition\":100000}"},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
        admin_err_t err;
        json_t *body = admin_parse_body(good[i].body, strlen(good[i].body), 65536, &err);
        assert_non_null(body);
        if (admin_validate(good[i].kind, body, &err) != 0)
            fail_msg("good case %zu refused: %d %s: %s", i, err.status, err.field, err.reason);
        json_decref(body);
    }
}

static void test_parse_body_rejects_malformed_json_with_400(void **state)
{
    static const char *const bad[] = {"{", "{\"a\":}",          "[1,2]", "\"x\"",
                                      "",  "{\"a\":1,\"a\":2}", "nul"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        admin_err_t err;
        json_t *j = admin_parse_body(bad[i], strlen(bad[i]), 1024, &err);
        assert_null(j);
        assert_int_equal(err.status, 400);
    }
}

static void test_parse_body_over_limit_gives_413(void **state)
{
    admin_err_t err;
    assert_null(admin_parse_body(GOOD_FEED, strlen(GOOD_FEED), 10, &err));
    assert_int_equal(err.status, 413);
}

static void test_merge_patch_follows_rfc7396(void **state)
{
    json_t *target =
        json_loads("{\"a\":\"b\",\"c\":{\"d\":\"e\",\"f\":\"g\"},\"l\":[1,2]}", 0, NULL);
    json_t *patch =
        json_loads("{\"a\":\"z\",\"c\":{\"f\":null},\"l\":[3],\"n\":{\"x\":null}}", 0, NULL);
    json_t *want = json_loads("{\"a\":\"z\",\"c\":{\"d\":\"e\"},\"l\":[3],\"n\":{}}", 0, NULL);
    json_t *got = admin_merge_patch(target, patch);
    assert_true(json_equal(got, want));
    /* the target is left unchanged */
    assert_string_equal(json_string_value(json_object_get(target, "a")), "b");
    json_t *one = json_integer(1);
    json_t *replace = admin_merge_patch(target, one);
    assert_true(json_is_integer(replace));
    json_decref(replace);
    json_decref(one);
    json_decref(target);
    json_decref(patch);
    json_decref(want);
    json_decref(got);
}

static void test_strip_server_fields_removes_only_server_fields(void **state)
{
    json_t *o = json_loads("{\"id\":\"x\",\"version\":2,\"created_at\":\"t\",\"updated_at\":\"t\","
                           "\"name\":\"n\"}",
                           0, NULL);
    json_t *s = admin_strip_server_fields(o);
    assert_int_equal(json_object_size(s), 1);
    assert_non_null(json_object_get(s, "name"));
    json_decref(o);
    json_decref(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validate_table_of_bad_inputs_gives_status_and_field),
        cmocka_unit_test(test_bad_names_get_422_invalid_value_for_every_kind),
        cmocka_unit_test(test_validate_accepts_good_objects_of_every_kind),
        cmocka_unit_test(test_parse_body_rejects_malformed_json_with_400),
        cmocka_unit_test(test_parse_body_over_limit_gives_413),
        cmocka_unit_test(test_merge_patch_follows_rfc7396),
        cmocka_unit_test(test_strip_server_fields_removes_only_server_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
