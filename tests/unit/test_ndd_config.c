/* ndd's configuration file: the split into ndd's own settings and one leaf list per role
 * instance (ndd/ndd_config.c), and every instance checked as its daemon would check it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "adapter_control.h"
#include "agg_setup.h"
#include "corr_setup.h"
#include "daemon_role.h"
#include "ndd_config.h"
#include "ndd_supervise.h"

static const daemon_role_t *const known_roles[] = {&agg_role, &corr_role, &adapter_role};
static const ndd_roles_t known = {known_roles, 3};

static int parse(ndd_config_t *c, const char *text, char *err, size_t errlen)
{
    return ndd_config_parse(c, &known, text, strlen(text), "file t.json", err, errlen);
}

/* The last leaf of key wins, as in the loader. */
static const char *leaf(const ndd_instance_conf_t *in, const char *key)
{
    const char *v = NULL;
    for (size_t i = 0; i < in->n_leaves; i++)
        if (strcmp(in->leaves[i].key, key) == 0)
            v = in->leaves[i].value;
    return v;
}

static void test_each_nf_type_is_an_instance_with_its_own_overrides(void **state)
{
    (void)state;
    ndd_config_t c;
    char err[512] = "";
    int rc = parse(&c,
                   "{\"bootstrap\": \"127.0.0.1:1\", \"http\": {\"port\": 0}, "
                   "\"kafka\": {\"linger.ms\": 5}, \"roles\": {\"aggregation\": "
                   "{\"nf-types\": [\"SCP\", \"NRF\"], \"batch\": 100, "
                   "\"SCP\": {\"topic\": \"scp-in\", \"batch\": 7}}, \"correlation\": {}}}",
                   err, sizeof err);
    assert_int_equal(rc, 0);
    assert_int_equal(c.n_inst, 3);
    assert_string_equal(c.inst[0].name, "aggregation-SCP");
    assert_string_equal(c.inst[1].name, "aggregation-NRF");
    assert_string_equal(c.inst[2].name, "correlation");
    assert_string_equal(leaf(&c.inst[0], "nf-type"), "SCP");
    assert_string_equal(leaf(&c.inst[0], "topic"), "scp-in");
    assert_string_equal(leaf(&c.inst[0], "batch"), "7");
    assert_null(leaf(&c.inst[1], "topic"));
    assert_string_equal(leaf(&c.inst[1], "batch"), "100");
    assert_null(leaf(&c.inst[0], "nf-types"));
    assert_null(leaf(&c.inst[0], "SCP.topic"));
    /* shared from the top: the broker list and the librdkafka properties */
    for (size_t i = 0; i < c.n_inst; i++) {
        assert_string_equal(leaf(&c.inst[i], "bootstrap"), "127.0.0.1:1");
        assert_string_equal(leaf(&c.inst[i], "kafka.linger.ms"), "5");
        assert_string_equal(leaf(&c.inst[i], "http.port"), "-1");
    }
    /* ndd's own: the top level only */
    bool http = false;
    for (size_t i = 0; i < c.n_own; i++) {
        assert_true(strncmp(c.own[i].key, "roles.", 6) != 0);
        http |= strcmp(c.own[i].key, "http.port") == 0;
    }
    assert_true(http);
    ndd_config_free(&c);
}

static void expect_refused(const char *text, const char *needle)
{
    ndd_config_t c;
    char err[512] = "";
    assert_int_equal(parse(&c, text, err, sizeof err), -1);
    if (!strstr(err, needle))
        fail_msg("error \"%s\" does not name \"%s\"", err, needle);
}

static void test_an_unknown_role_is_refused_naming_it_and_the_known_ones(void **state)
{
    (void)state;
    expect_refused("{\"roles\": {\"forwarder\": {}}}", "roles.forwarder: not a role");
    expect_refused("{\"roles\": {\"forwarder\": {}}}", "aggregation, correlation, adapter");
}

static void test_a_file_without_roles_is_refused(void **state)
{
    (void)state;
    expect_refused("{\"bootstrap\": \"b:1\"}", "roles: name at least one role");
    expect_refused("{\"roles\": {}}", "roles: name at least one role");
    expect_refused("[1]", "not a JSON object");
}

static void test_aggregation_needs_its_nf_types_and_refuses_an_unlisted_nf(void **state)
{
    (void)state;
    expect_refused("{\"roles\": {\"aggregation\": {}}}", "roles.aggregation.nf-types");
    expect_refused("{\"roles\": {\"aggregation\": {\"nf-types\": [\"SCP\", \"SCP\"]}}}",
                   "SCP is listed twice");
    expect_refused("{\"roles\": {\"aggregation\": {\"nf-types\": [\"SCP\"], "
                   "\"PCF\": {\"topic\": \"x\"}}}}",
                   "roles.aggregation.PCF.topic: that NF type is not in");
}

static void test_a_role_may_not_set_the_shared_http_server(void **state)
{
    (void)state;
    expect_refused("{\"roles\": {\"adapter\": {\"http\": {\"port\": 9102}}}}",
                   "roles.adapter.http.port: every role answers on ndd's one HTTP server");
}

static void test_aggregation_and_correlation_must_agree_on_the_body_limit(void **state)
{
    (void)state;
    expect_refused("{\"roles\": {\"aggregation\": {\"nf-types\": \"SCP\", \"max-body\": "
                   "\"2MiB\"}, \"correlation\": {}}}",
                   "roles.correlation.max-body");
    ndd_config_t c;
    char err[512] = "";
    assert_int_equal(parse(&c,
                           "{\"roles\": {\"aggregation\": {\"nf-types\": \"SCP\", \"max-body\": "
                           "\"1048576\"}, \"correlation\": {\"max-body\": \"1MiB\"}}}",
                           err, sizeof err),
                     0);
    ndd_config_free(&c);
}

static void test_every_instance_is_checked_as_its_daemon_would_check_it(void **state)
{
    (void)state;
    ndd_config_t c;
    char err[512] = "";
    assert_int_equal(parse(&c,
                           "{\"bootstrap\": \"127.0.0.1:1\", \"roles\": {\"aggregation\": "
                           "{\"nf-types\": [\"SCP\", \"XYZ\"]}}}",
                           err, sizeof err),
                     0);
    daemon_t host;
    memset(&host, 0, sizeof host);
    assert_int_equal(ndd_supervise_check(&c, &host, NULL, err, sizeof err), -1);
    if (!strstr(err, "aggregation-XYZ") || !strstr(err, "nf-type"))
        fail_msg("error \"%s\" names neither the instance nor the key", err);
    ndd_config_free(&c);

    assert_int_equal(parse(&c,
                           "{\"bootstrap\": \"127.0.0.1:1\", \"roles\": {\"adapter\": "
                           "{\"feed-memory-mb\": 0, \"config-topic\": \"ndd.config\"}}}",
                           err, sizeof err),
                     0);
    assert_int_equal(ndd_supervise_check(&c, &host, NULL, err, sizeof err), -1);
    if (!strstr(err, "feed-memory-mb") || !strstr(err, "roles.adapter"))
        fail_msg("error \"%s\" does not name the key and its section", err);
    ndd_config_free(&c);

    assert_int_equal(parse(&c,
                           "{\"bootstrap\": \"127.0.0.1:1\", \"roles\": {\"aggregation\": "
                           "{\"nf-types\": [\"SCP\", \"NRF\"]}, \"correlation\": {}}}",
                           err, sizeof err),
                     0);
    if (ndd_supervise_check(&c, &host, NULL, err, sizeof err) != 0)
        fail_msg("a valid file was refused: %s", err);
    ndd_config_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_nf_type_is_an_instance_with_its_own_overrides),
        cmocka_unit_test(test_an_unknown_role_is_refused_naming_it_and_the_known_ones),
        cmocka_unit_test(test_a_file_without_roles_is_refused),
        cmocka_unit_test(test_aggregation_needs_its_nf_types_and_refuses_an_unlisted_nf),
        cmocka_unit_test(test_a_role_may_not_set_the_shared_http_server),
        cmocka_unit_test(test_aggregation_and_correlation_must_agree_on_the_body_limit),
        cmocka_unit_test(test_every_instance_is_checked_as_its_daemon_would_check_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
