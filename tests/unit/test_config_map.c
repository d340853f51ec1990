/* The typed config map: a spec row's value lands at its CONFIG_AT offset in a settings
 * struct with the row's type, defaults are the rows' own, a flag overrides the environment
 * which overrides the file, and a bad or out-of-range value is refused with the key and its
 * source named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

typedef struct test_settings {
    int pad; /* a field at offset 0 that nothing maps: offsets are not all 0 */
    const char *name, *unset;
    int64_t port, timeout_ms;
    bool tls;
    double ratio;
    uint64_t buffer;
    config_list_t topics;
} test_settings_t;

#define AT(f) CONFIG_AT(test_settings_t, f), 0, 0
static const config_spec_t specs[] = {
    {"name", CONFIG_STRING, "ndd", "a name", 0, AT(name)},
    {"unset", CONFIG_STRING, NULL, "no default", 0, AT(unset)},
    {"http.port", CONFIG_INT, "9100", "a port", 0, CONFIG_AT(test_settings_t, port), -1, 65535},
    {"timeout", CONFIG_DURATION_MS, "5s", "a duration", 0, AT(timeout_ms)},
    {"tls", CONFIG_BOOL, "true", "a bool", 0, AT(tls)},
    {"ratio", CONFIG_DOUBLE, "0.25", "a double", 0, AT(ratio)},
    {"buffer", CONFIG_BYTES, "2MiB", "a size", 0, AT(buffer)},
    {"topics", CONFIG_LIST, "SCP, NRF", "a list", 0, AT(topics)},
    {"nowhere", CONFIG_INT, "7", "shown, stored nowhere", 0, 0, 0, 0},
};
#define NSPECS (sizeof(specs) / sizeof(specs[0]))

static char *const no_env[] = {NULL};

static config_t *load(int argc, char **argv, char *const *envp, test_settings_t *s, char *err)
{
    config_t *c = config_load_env(specs, NSPECS, argc, argv, envp, err, 512);
    if (c) {
        memset(s, 0x5a, sizeof(*s)); /* every mapped field must be written */
        s->pad = 42;
        assert_int_equal(config_map_apply(c, s), 0);
    }
    return c;
}

static void test_defaults_land_at_their_offsets_with_their_types(void **state)
{
    char *argv[] = {"prog"};
    char err[512];
    test_settings_t s;
    config_t *c = load(1, argv, no_env, &s, err);
    assert_non_null(c);
    assert_int_equal(s.pad, 42); /* nothing written outside the mapped fields */
    assert_string_equal(s.name, "ndd");
    assert_null(s.unset);
    assert_int_equal(s.port, 9100);
    assert_int_equal(s.timeout_ms, 5000);
    assert_true(s.tls);
    assert_true(s.ratio == 0.25);
    assert_int_equal(s.buffer, 2u << 20);
    assert_int_equal(s.topics.n, 2);
    assert_string_equal(s.topics.items[0], "SCP");
    assert_string_equal(s.topics.items[1], "NRF");
    /* a row that lands nowhere is still loaded and shown by --check-config */
    char *dump = NULL;
    size_t dlen = 0;
    FILE *m = open_memstream(&dump, &dlen);
    assert_non_null(m);
    config_dump(c, m);
    fclose(m);
    assert_non_null(strstr(dump, "\nnowhere = 7  (default)\n"));
    free(dump);
    config_free(c);
}

static void test_each_type_lands_what_a_flag_gives(void **state)
{
    char *argv[] = {
        "prog",  "--name=x",    "--http.port",   "0",           "--timeout=250ms", "--tls",
        "false", "--ratio=1.5", "--buffer=4KiB", "--topics=BSF"};
    char err[512];
    test_settings_t s;
    config_t *c = load(10, argv, no_env, &s, err);
    assert_non_null(c);
    assert_string_equal(s.name, "x");
    assert_int_equal(s.port, 0);
    assert_int_equal(s.timeout_ms, 250);
    assert_false(s.tls);
    assert_true(s.ratio == 1.5);
    assert_int_equal(s.buffer, 4096);
    assert_int_equal(s.topics.n, 1);
    assert_string_equal(s.topics.items[0], "BSF");
    config_free(c);
}

static void test_flag_overrides_env_overrides_file(void **state)
{
    char path[] = "/tmp/ndd-test-config-map.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *doc = "{\"name\": \"from-file\", \"http\": {\"port\": 1}, \"timeout\": \"1s\"}";
    assert_int_equal(write(fd, doc, strlen(doc)), (ssize_t)strlen(doc));
    close(fd);
    char cfgflag[64];
    snprintf(cfgflag, sizeof cfgflag, "--config=%s", path);
    char *env[] = {"NDD_HTTP_PORT=2", "NDD_NAME=from-env", NULL};
    char *argv[] = {"prog", cfgflag, "--http.port", "3"};
    char err[512];
    test_settings_t s;
    config_t *c = load(4, argv, env, &s, err);
    assert_non_null(c);
    assert_int_equal(s.port, 3);             /* flag over env over file */
    assert_string_equal(s.name, "from-env"); /* env over file */
    assert_int_equal(s.timeout_ms, 1000);    /* file over default */
    config_free(c);
    char *argv2[] = {"prog", cfgflag};
    c = load(2, argv2, no_env, &s, err);
    assert_non_null(c);
    assert_int_equal(s.port, 1);
    assert_string_equal(s.name, "from-file");
    config_free(c);
    unlink(path);
}

static void test_a_value_out_of_range_is_refused_with_key_and_source(void **state)
{
    char err[512];
    test_settings_t s;
    char *argv[] = {"prog", "--http.port=99999"};
    assert_null(load(2, argv, no_env, &s, err));
    assert_non_null(strstr(err, "http.port"));
    assert_non_null(strstr(err, "flag --http.port"));
    assert_non_null(strstr(err, "-1..65535"));
    char *env[] = {"NDD_HTTP_PORT=-2", NULL};
    char *argv1[] = {"prog"};
    assert_null(load(1, argv1, env, &s, err));
    assert_non_null(strstr(err, "env NDD_HTTP_PORT"));
    char *ok[] = {"prog", "--http.port=-1"}; /* the bounds themselves are accepted */
    config_t *c = load(2, ok, no_env, &s, err);
    assert_non_null(c);
    assert_int_equal(s.port, -1);
    config_free(c);
}

static void test_a_bad_value_names_the_key(void **state)
{
    char err[512];
    test_settings_t s;
    char *argv[] = {"prog", "--timeout=soon"};
    assert_null(load(2, argv, no_env, &s, err));
    assert_non_null(strstr(err, "timeout"));
    assert_non_null(strstr(err, "soon"));
}

static void test_version_and_check_config_are_flags_like_help(void **state)
{
    char err[512];
    test_settings_t s;
    char *argv[] = {"prog", "--version"};
    config_t *c = load(2, argv, no_env, &s, err);
    assert_non_null(c);
    assert_true(config_version_requested(c));
    assert_false(config_check_requested(c));
    config_free(c);
    char *argv2[] = {"prog", "--check-config", "--name", "y"};
    c = load(4, argv2, no_env, &s, err);
    assert_non_null(c);
    assert_true(config_check_requested(c));
    assert_string_equal(s.name, "y");
    config_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_land_at_their_offsets_with_their_types),
        cmocka_unit_test(test_each_type_lands_what_a_flag_gives),
        cmocka_unit_test(test_flag_overrides_env_overrides_file),
        cmocka_unit_test(test_a_value_out_of_range_is_refused_with_key_and_source),
        cmocka_unit_test(test_a_bad_value_names_the_key),
        cmocka_unit_test(test_version_and_check_config_are_flags_like_help),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
