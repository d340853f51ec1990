/* ndd's configuration file: the split into ndd's own settings and one leaf list per role
 * instance (ndd/ndd_config.c), and every instance checked as its daemon would check it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapter_control.h"
#include "admin_server.h"
#include "agg_setup.h"
#include "corr_setup.h"
#include "daemon_role.h"
#include "gui.h"
#include "ndd_config.h"
#include "ndd_supervise.h"

static const daemon_role_t *const known_roles[] = {&agg_role, &corr_role, &adapter_role,
                                                   &admin_role, &gui_role};
static const ndd_roles_t known = {known_roles, 5};

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

/* What --check-config prints for the instances of text (their own settings) says needle. */
static void expect_check_says(const char *text, const char *needle)
{
    ndd_config_t c;
    char err[512] = "";
    if (parse(&c, text, err, sizeof err) != 0)
        fail_msg("refused: %s", err);
    daemon_t host;
    memset(&host, 0, sizeof host);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    assert_non_null(f);
    int rc = ndd_supervise_check(&c, &host, f, err, sizeof err);
    fclose(f);
    ndd_config_free(&c);
    if (rc != 0)
        fail_msg("check refused: %s", err);
    if (!strstr(out, needle))
        fail_msg("--check-config does not say \"%s\":\n%s", needle, out);
    free(out);
}

/* role (its required keys in needs) keeps the http.* of its section, or else its daemon's
 * default port, and serves there ("<says> host:port" in --check-config); a data role beside
 * it still gets ndd's http.port -1. */
static void expect_keeps_its_http(const char *role, const char *needs, const char *says,
                                  int default_port)
{
    char text[512], want[128];
    snprintf(text, sizeof text,
             "{\"bootstrap\": \"127.0.0.1:1\", \"http\": {\"port\": 9190}, \"roles\": "
             "{\"%s\": {%s, \"http\": {\"port\": "
             "9200, \"listen\": \"127.0.0.2\", \"port-file\": \"/tmp/p\"}}, \"adapter\": "
             "{\"config-topic\": \"ndd.config\"}}}",
             role, needs);
    ndd_config_t c;
    char err[512] = "";
    assert_int_equal(parse(&c, text, err, sizeof err), 0);
    assert_string_equal(c.inst[0].name, role);
    assert_string_equal(leaf(&c.inst[0], "http.port"), "9200");
    assert_string_equal(leaf(&c.inst[0], "http.listen"), "127.0.0.2");
    assert_string_equal(leaf(&c.inst[0], "http.port-file"), "/tmp/p");
    assert_string_equal(leaf(&c.inst[1], "http.port"), "-1");
    ndd_config_free(&c);
    snprintf(want, sizeof want, "%s 127.0.0.2:9200", says);
    expect_check_says(text, want);
    /* without http in its section: its daemon's default, not ndd's and not -1 */
    snprintf(text, sizeof text, "{\"http\": {\"port\": 9190}, \"roles\": {\"%s\": {%s}}}", role,
             needs);
    snprintf(want, sizeof want, "%s 127.0.0.1:%d", says, default_port);
    expect_check_says(text, want);
}

static void test_the_admin_role_keeps_its_http_port_from_its_section(void **state)
{
    (void)state;
    expect_keeps_its_http("admin", "\"pg\": \"host=x\"", "REST API on", 9100);
}

static void test_the_gui_api_role_keeps_its_http_port_from_its_section(void **state)
{
    (void)state;
    expect_keeps_its_http("gui-api", "\"web-root\": \"/tmp\"", "console on", 9108);
}

static void test_a_data_role_beside_the_admin_still_may_not_set_http(void **state)
{
    (void)state;
    expect_refused("{\"roles\": {\"admin\": {\"pg\": \"h\", \"http\": {\"port\": 9200}}, "
                   "\"correlation\": {\"http\": {\"port\": 9103}}}}",
                   "roles.correlation.http.port: every role answers on ndd's one HTTP server");
    expect_refused("{\"roles\": {\"gui-api\": {\"web-root\": \"/tmp\"}, \"aggregation\": "
                   "{\"nf-types\": \"SCP\", \"http\": {\"listen\": \"0.0.0.0\"}}}}",
                   "roles.aggregation.http.listen: every role answers");
}

static void test_the_file_comes_from_config_or_ndd_config_as_the_loader_finds_it(void **state)
{
    (void)state;
    unsetenv("NDD_CONFIG");
    ndd_config_t c;
    char err[512] = "";
    char *none[] = {"ndd", NULL};
    assert_int_equal(ndd_config_load(&c, &known, 1, none, err, sizeof err), -1);
    if (!strstr(err, "--config FILE (or NDD_CONFIG) names the file of roles"))
        fail_msg("error \"%s\" does not ask for the file", err);
    char *help[] = {"ndd", "--help", NULL};
    assert_int_equal(ndd_config_load(&c, &known, 2, help, err, sizeof err), 0);
    assert_int_equal(c.n_inst, 0);
    assert_string_equal(c.origin, "");
    char path[] = "/tmp/test_ndd_config.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *doc = "{\"roles\": {\"correlation\": {}}}";
    assert_int_equal(write(fd, doc, strlen(doc)), (ssize_t)strlen(doc));
    close(fd);
    char *given[] = {"ndd", "--config", path, NULL};
    assert_int_equal(ndd_config_load(&c, &known, 3, given, err, sizeof err), 0);
    assert_int_equal(c.n_inst, 1);
    char want[64];
    snprintf(want, sizeof want, "file %s", path);
    assert_string_equal(c.origin, want);
    ndd_config_free(&c);
    setenv("NDD_CONFIG", path, 1);
    assert_int_equal(ndd_config_load(&c, &known, 1, none, err, sizeof err), 0);
    assert_int_equal(c.n_inst, 1);
    ndd_config_free(&c);
    unsetenv("NDD_CONFIG");
    unlink(path);
    char *missing[] = {"ndd", "--config=/nonexistent/ndd.json", NULL};
    assert_int_equal(ndd_config_load(&c, &known, 2, missing, err, sizeof err), -1);
    if (!strstr(err, "/nonexistent/ndd.json: cannot open"))
        fail_msg("error \"%s\" does not name the file", err);
}

static void test_aggregation_and_correlation_keep_their_own_body_limits(void **state)
{
    (void)state;
    /* each worker decodes with its own limit (codec_decode_limited) */
    ndd_config_t c;
    char err[512] = "";
    assert_int_equal(parse(&c,
                           "{\"roles\": {\"aggregation\": {\"nf-types\": \"SCP\", \"max-body\": "
                           "\"2MiB\"}, \"correlation\": {\"max-body\": \"4MiB\"}}}",
                           err, sizeof err),
                     0);
    assert_int_equal(c.n_inst, 2);
    assert_string_equal(c.inst[0].name, "aggregation-SCP");
    assert_string_equal(leaf(&c.inst[0], "max-body"), "2MiB");
    assert_string_equal(c.inst[1].name, "correlation");
    assert_string_equal(leaf(&c.inst[1], "max-body"), "4MiB");
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
        cmocka_unit_test(test_the_admin_role_keeps_its_http_port_from_its_section),
        cmocka_unit_test(test_the_gui_api_role_keeps_its_http_port_from_its_section),
        cmocka_unit_test(test_a_data_role_beside_the_admin_still_may_not_set_http),
        cmocka_unit_test(test_the_file_comes_from_config_or_ndd_config_as_the_loader_finds_it),
        cmocka_unit_test(test_aggregation_and_correlation_keep_their_own_body_limits),
        cmocka_unit_test(test_every_instance_is_checked_as_its_daemon_would_check_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
