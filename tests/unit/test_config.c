/* Configuration: precedence, every type, every error path, secrets, kafka pass-through. Values
 * are read as the daemons read them, from the settings struct config_map_apply fills, and
 * where a value came from as --check-config shows it, from config_dump. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"

typedef struct settings {
    int64_t port, backoff_ms;
    const char *listen, *password, *name;
    bool tls;
    double ratio;
    uint64_t max_buffer;
    config_list_t topics;
} settings_t;

#define AT(f) CONFIG_AT(settings_t, f), 0, 0
static const config_spec_t specs[] = {
    {"http.port", CONFIG_INT, "9100", "metrics/API port", 0, AT(port)},
    {"http.listen", CONFIG_STRING, "127.0.0.1", "listen address", 0, AT(listen)},
    {"tls.enabled", CONFIG_BOOL, "false", "serve TLS", 0, AT(tls)},
    {"ratio", CONFIG_DOUBLE, "0.5", "a ratio", 0, AT(ratio)},
    {"feed.retry-backoff", CONFIG_DURATION_MS, "250ms", "retry backoff", 0, AT(backoff_ms)},
    {"feed.max-buffer", CONFIG_BYTES, "1MiB", "buffer limit", 0, AT(max_buffer)},
    {"topics", CONFIG_LIST, "SCP,NRF", "NF topics", 0, AT(topics)},
    {"db.password", CONFIG_STRING, NULL, "database password", CONFIG_F_SECRET, AT(password)},
    {"name", CONFIG_STRING, NULL, "instance name", 0, AT(name)},
};
#define NSPECS (sizeof specs / sizeof specs[0])

static char tmpdir[256];

static int make_tmpdir(void **state)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ndd_test_config_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *write_file(const char *name, const char *content)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
    return path;
}

/* argv from a NULL-terminated list (argv[0] added). */
#define ARGV(...) ((char *[]){"ndd-test", __VA_ARGS__, NULL})
#define ARGC(v) (int)(sizeof(v) / sizeof(char *) - 1)

static char *no_env[] = {NULL};

/* The settings of the last successful load(), as a daemon sees them. */
static settings_t S;

static config_t *load(int argc, char **argv, char **envp, char *err)
{
    config_t *c = config_load_env(specs, NSPECS, argc, argv, envp, err, 512);
    if (!c && getenv("NDD_TEST_VERBOSE"))
        fprintf(stderr, "config_load: %s\n", err);
    memset(&S, 0x5a, sizeof S); /* every field must be written by config_map_apply */
    if (c)
        assert_int_equal(config_map_apply(c, &S), 0);
    return c;
}

/* Fails unless config_dump (what --check-config prints) has the line `line`. */
static void assert_dump_has(const config_t *c, const char *line)
{
    char *dump = NULL;
    size_t dlen = 0;
    FILE *m = open_memstream(&dump, &dlen);
    assert_non_null(m);
    config_dump(c, m);
    fclose(m);
    char want[700];
    snprintf(want, sizeof want, "%s\n", line);
    bool found = strncmp(dump, want, strlen(want)) == 0;
    snprintf(want, sizeof want, "\n%s\n", line);
    found |= strstr(dump, want) != NULL;
    if (!found)
        fprintf(stderr, "config_dump has no line \"%s\":\n%s", line, dump);
    free(dump);
    assert_true(found);
}

static void test_defaults_apply_when_no_source_sets_a_key(void **state)
{
    char err[512];
    char *argv[] = {"ndd-test", NULL};
    config_t *c = load(1, argv, no_env, err);
    assert_non_null(c);
    assert_int_equal(S.port, 9100);
    assert_string_equal(S.listen, "127.0.0.1");
    assert_false(S.tls);
    assert_true(S.ratio == 0.5);
    assert_int_equal(S.backoff_ms, 250);
    assert_int_equal(S.max_buffer, 1048576);
    assert_int_equal(S.topics.n, 2);
    assert_string_equal(S.topics.items[0], "SCP");
    assert_string_equal(S.topics.items[1], "NRF");
    assert_null(S.name);
    assert_null(S.password);
    /* --check-config tells a default from a value no source gave */
    assert_dump_has(c, "http.port = 9100  (default)");
    assert_dump_has(c, "topics = SCP,NRF  (default)");
    assert_dump_has(c, "name = (unset)");
    config_free(c);
}

static void test_flag_beats_env_beats_file_beats_default_and_dump_names_the_winner(void **state)
{
    const char *path = write_file("prec.json", "{\"http\":{\"port\":9001,\"listen\":\"0.0.0.0\"},"
                                               "\"ratio\":0.75,\"name\":\"from-file\"}");
    char cfgflag[600];
    snprintf(cfgflag, sizeof cfgflag, "--config=%s", path);
    char *env[] = {"NDD_HTTP_PORT=9002", "NDD_HTTP_LISTEN=10.0.0.1", NULL};
    char *argv[] = {"ndd-test", cfgflag, "--http.port", "9003", NULL};
    char err[512];
    config_t *c = load(4, argv, env, err);
    assert_non_null(c);
    assert_int_equal(S.port, 9003);
    assert_dump_has(c, "http.port = 9003  (flag --http.port)");
    assert_string_equal(S.listen, "10.0.0.1");
    assert_dump_has(c, "http.listen = 10.0.0.1  (env NDD_HTTP_LISTEN)");
    assert_true(S.ratio == 0.75);
    char want[700];
    snprintf(want, sizeof want, "ratio = 0.75  (file %s)", path);
    assert_dump_has(c, want);
    assert_string_equal(S.name, "from-file");
    snprintf(want, sizeof want, "name = from-file  (file %s)", path);
    assert_dump_has(c, want);
    assert_int_equal(S.backoff_ms, 250);
    assert_dump_has(c, "feed.retry-backoff = 250ms  (default)");
    config_free(c);
}

static void test_config_file_named_by_env_and_lists_from_json_arrays(void **state)
{
    const char *path = write_file("env.json", "{\"topics\":[\"SEPP\",\" BSF \",\"PCF\"],"
                                              "\"tls\":{\"enabled\":true},"
                                              "\"feed\":{\"max_buffer\":\"64KiB\"}}");
    char envcfg[600];
    snprintf(envcfg, sizeof envcfg, "NDD_CONFIG=%s", path);
    char *env[] = {envcfg, NULL};
    char *argv[] = {"ndd-test", NULL};
    char err[512];
    config_t *c = load(1, argv, env, err);
    assert_non_null(c);
    assert_int_equal(S.topics.n, 3);
    assert_string_equal(S.topics.items[0], "SEPP");
    assert_string_equal(S.topics.items[1], "BSF"); /* items trimmed */
    assert_string_equal(S.topics.items[2], "PCF");
    assert_true(S.tls);
    assert_int_equal(S.max_buffer, 65536);
    config_free(c);
}

static void test_flag_forms_equals_space_and_bare_bool(void **state)
{
    char *argv[] = {"ndd-test", "--tls.enabled",      "--name=a=b", "--feed.retry-backoff",
                    "2s",       "--topics=SCP, ,NRF", "--ratio",    "1e-3",
                    NULL};
    char err[512];
    config_t *c = load(8, argv, no_env, err);
    assert_non_null(c);
    assert_true(S.tls);
    assert_string_equal(S.name, "a=b");
    assert_int_equal(S.backoff_ms, 2000);
    assert_int_equal(S.topics.n, 2); /* empty items dropped */
    assert_string_equal(S.topics.items[0], "SCP");
    assert_string_equal(S.topics.items[1], "NRF");
    assert_true(S.ratio == 0.001);
    config_free(c);
    char *argv2[] = {"ndd-test", "--tls.enabled", "off", "--feed.max_buffer=2MB", NULL};
    c = load(4, argv2, no_env, err);
    assert_non_null(c);
    assert_false(S.tls);
    assert_int_equal(S.max_buffer, 2000000);
    config_free(c);
}

static void expect_error(int argc, char **argv, char **envp, const char *want1, const char *want2)
{
    char err[512] = "";
    config_t *c = load(argc, argv, envp, err);
    if (c || !strstr(err, want1) || (want2 && !strstr(err, want2))) {
        fprintf(stderr, "error was \"%s\"; wanted \"%s\" and \"%s\"\n", err, want1,
                want2 ? want2 : "");
        config_free(c);
        fail();
    }
}

static void test_unknown_keys_fail_naming_key_and_source(void **state)
{
    char *a1[] = {"ndd-test", "--htp.port=1", NULL};
    expect_error(2, a1, no_env, "unknown setting \"htp.port\"", "flag --htp.port");
    const char *path = write_file("unknown.json", "{\"http\":{\"prot\":1}}");
    char cfg[600];
    snprintf(cfg, sizeof cfg, "--config=%s", path);
    char *a2[] = {"ndd-test", cfg, NULL};
    expect_error(2, a2, no_env, "unknown setting \"http.prot\"", path);
    char *a3[] = {"ndd-test", "positional", NULL};
    expect_error(2, a3, no_env, "unexpected argument \"positional\"", NULL);
    /* _file is only for secrets */
    char *a4[] = {"ndd-test", "--name-file=/etc/hostname", NULL};
    expect_error(2, a4, no_env, "only secret settings", NULL);
}

static void test_invalid_values_fail_naming_key_source_and_expectation(void **state)
{
    char *a1[] = {"ndd-test", "--http.port=80x", NULL};
    expect_error(2, a1, no_env, "invalid value \"80x\" for http.port (from flag --http.port)",
                 "integer");
    char *e2[] = {"NDD_TLS_ENABLED=maybe", NULL};
    char *a0[] = {"ndd-test", NULL};
    expect_error(1, a0, e2, "tls.enabled (from env NDD_TLS_ENABLED)", "true/false");
    char *a3[] = {"ndd-test", "--feed.retry-backoff=5 s", NULL};
    expect_error(2, a3, no_env, "feed.retry-backoff", "duration");
    char *a4[] = {"ndd-test", "--feed.max-buffer=-1", NULL};
    expect_error(2, a4, no_env, "feed.max-buffer", "size");
    char *a5[] = {"ndd-test", "--ratio=nan", NULL};
    expect_error(2, a5, no_env, "ratio", "finite");
    char *a6[] = {"ndd-test", "--http.port", NULL};
    expect_error(2, a6, no_env, "flag --http.port needs a value", NULL);
    const char *path = write_file("badtype.json", "{\"http\":{\"port\":\"high\"}}");
    char cfg[600];
    snprintf(cfg, sizeof cfg, "--config=%s", path);
    char *a7[] = {"ndd-test", cfg, NULL};
    expect_error(2, a7, no_env, "\"high\" for http.port", path);
}

static void test_bad_config_files_fail_with_path_and_position(void **state)
{
    char cfg[600];
    char *argv[] = {"ndd-test", cfg, NULL};
    snprintf(cfg, sizeof cfg, "--config=%s/missing.json", tmpdir);
    expect_error(2, argv, no_env, "missing.json: cannot open", NULL);
    const char *p = write_file("syntax.json", "{\"http\": {\"port\": 1,}}");
    snprintf(cfg, sizeof cfg, "--config=%s", p);
    expect_error(2, argv, no_env, "syntax.json: line 1", NULL);
    p = write_file("array.json", "[1,2]");
    snprintf(cfg, sizeof cfg, "--config=%s", p);
    expect_error(2, argv, no_env, "top level must be a JSON object", NULL);
    p = write_file("dup.json", "{\"name\":\"a\",\"name\":\"b\"}");
    snprintf(cfg, sizeof cfg, "--config=%s", p);
    expect_error(2, argv, no_env, "dup.json", "duplicate");
    p = write_file("null.json", "{\"name\":null}");
    snprintf(cfg, sizeof cfg, "--config=%s", p);
    expect_error(2, argv, no_env, "name: null", NULL);
    p = write_file("nested.json", "{\"topics\":[[\"a\"]]}");
    snprintf(cfg, sizeof cfg, "--config=%s", p);
    expect_error(2, argv, no_env, "topics[0]", NULL);
    char *a2[] = {"ndd-test", "--config", NULL};
    expect_error(2, a2, no_env, "--config needs a file name", NULL);
}

static void test_required_setting_missing_fails_naming_all_sources(void **state)
{
    static const config_spec_t req[] = {
        {"kafka-group", CONFIG_STRING, NULL, "group", CONFIG_F_REQUIRED, AT(name)}};
    char err[512];
    char *argv[] = {"ndd-test", NULL};
    assert_null(config_load_env(req, 1, 1, argv, no_env, err, sizeof err));
    assert_non_null(strstr(err, "missing required setting kafka-group"));
    assert_non_null(strstr(err, "NDD_KAFKA_GROUP"));
    char *argv2[] = {"ndd-test", "--kafka-group=g1", NULL};
    config_t *c = config_load_env(req, 1, 2, argv2, no_env, err, sizeof err);
    assert_non_null(c);
    assert_int_equal(config_map_apply(c, &S), 0);
    assert_string_equal(S.name, "g1");
    config_free(c);
}

static void test_secret_read_from_file_trims_newline_and_is_never_dumped(void **state)
{
    const char *p = write_file("pw", "s3cr3t-value\n");
    char flag[600];
    snprintf(flag, sizeof flag, "--db.password-file=%s", p);
    char *argv[] = {"ndd-test", flag, "--kafka.sasl.password=kpw", NULL};
    char err[512];
    config_t *c = load(3, argv, no_env, err);
    assert_non_null(c);
    assert_string_equal(S.password, "s3cr3t-value");
    char *dump = NULL;
    size_t dlen = 0;
    FILE *m = open_memstream(&dump, &dlen);
    config_dump(c, m);
    fclose(m);
    assert_null(strstr(dump, "s3cr3t"));
    assert_null(strstr(dump, "kpw"));
    assert_non_null(strstr(dump, "db.password = ***"));
    assert_non_null(strstr(dump, "kafka.sasl.password = ***"));
    assert_non_null(strstr(dump, "http.port = 9100  (default)"));
    snprintf(flag, sizeof flag, "db.password = ***  (flag --db.password-file)");
    assert_non_null(strstr(dump, flag));
    free(dump);
    config_free(c);
    /* env _FILE form, and a secret's bad value is not echoed in the error */
    char envf[600];
    snprintf(envf, sizeof envf, "NDD_DB_PASSWORD_FILE=%s", p);
    char *env[] = {envf, NULL};
    char *a0[] = {"ndd-test", NULL};
    c = load(1, a0, env, err);
    assert_non_null(c);
    assert_string_equal(S.password, "s3cr3t-value");
    config_free(c);
    char *both[] = {envf, "NDD_DB_PASSWORD=x", NULL};
    expect_error(1, a0, both, "both env", NULL);
    char *a1[] = {"ndd-test", "--db.password-file=/nonexistent/pw", NULL};
    expect_error(2, a1, no_env, "cannot open file /nonexistent/pw", NULL);
}

static void test_kafka_properties_pass_through_from_every_source(void **state)
{
    char p[512];
    snprintf(p, sizeof p, "%s",
             write_file("k.json", "{\"kafka\":{\"bootstrap.servers\":\"file:9092\","
                                  "\"linger.ms\":5,\"client.id\":\"from-file\"}}"));
    const char *pw = write_file("kpw", "kafka-secret\n");
    char cfg[600], envpw[600];
    snprintf(cfg, sizeof cfg, "--config=%s", p);
    snprintf(envpw, sizeof envpw, "NDD_KAFKA_SASL_PASSWORD_FILE=%s", pw);
    char *env[] = {"NDD_KAFKA_BOOTSTRAP_SERVERS=env:9092", "NDD_KAFKA_ACKS=all", envpw,
                   "NDD_KAFKA=ignored-not-a-property", NULL};
    char *argv[] = {"ndd-test", cfg, "--kafka.acks", "1", "--kafka.enable.idempotence=true", NULL};
    char err[512];
    config_t *c = load(5, argv, env, err);
    assert_non_null(c);
    size_t n;
    const config_kafka_prop_t *kp = config_kafka_props(c, &n);
    const char *want[][2] = {{"bootstrap.servers", "env:9092"}, {"linger.ms", "5"},
                             {"client.id", "from-file"},        {"acks", "1"},
                             {"sasl.password", "kafka-secret"}, {"enable.idempotence", "true"}};
    assert_int_equal(n, 6);
    for (size_t w = 0; w < 6; w++) {
        bool found = false;
        for (size_t i = 0; i < n; i++)
            if (strcmp(kp[i].name, want[w][0]) == 0) {
                assert_string_equal(kp[i].value, want[w][1]);
                found = true;
            }
        if (!found)
            fprintf(stderr, "missing kafka property %s\n", want[w][0]);
        assert_true(found);
    }
    config_free(c);
}

/* NDD_KAFKA_GROUP is the environment name of a declared "kafka-group": it must be read as
 * that setting and not also become a librdkafka property "group". */
static void test_declared_kafka_prefixed_setting_is_not_a_property(void **state)
{
    static const config_spec_t ks[] = {{"kafka-group", CONFIG_STRING, NULL, "group", 0, AT(name)}};
    char *env[] = {"NDD_KAFKA_GROUP=g1", "NDD_KAFKA_CLIENT_ID=c1", NULL};
    char *argv[] = {"ndd-test", NULL};
    char err[512];
    config_t *c = config_load_env(ks, 1, 1, argv, env, err, sizeof err);
    assert_non_null(c);
    assert_int_equal(config_map_apply(c, &S), 0);
    assert_string_equal(S.name, "g1");
    size_t n;
    const config_kafka_prop_t *kp = config_kafka_props(c, &n);
    assert_int_equal(n, 1);
    assert_string_equal(kp[0].name, "client.id");
    config_free(c);
}

static void test_help_flag_is_reported_and_help_lists_every_key(void **state)
{
    static const config_spec_t req[] = {
        {"must", CONFIG_STRING, NULL, "needed", CONFIG_F_REQUIRED, 0, 0, 0},
        {"token", CONFIG_STRING, "dflt-secret", "api token", CONFIG_F_SECRET, 0, 0, 0}};
    char err[512];
    char *argv[] = {"ndd-test", "--help", NULL};
    config_t *c = config_load_env(req, 2, 2, argv, no_env, err, sizeof err);
    assert_non_null(c);
    assert_true(config_help_requested(c));
    config_free(c);
    char *out = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&out, &len);
    config_print_help(req, 2, "/usr/bin/ndd-x", m);
    fclose(m);
    assert_non_null(strstr(out, "Usage: ndd-x"));
    assert_non_null(strstr(out, "--must=<string>"));
    assert_non_null(strstr(out, "env NDD_MUST"));
    assert_non_null(strstr(out, "NDD_TOKEN_FILE"));
    assert_null(strstr(out, "dflt-secret"));
    free(out);
}

static void test_value_parsers_accept_units_and_reject_garbage(void **state)
{
    int64_t ms;
    uint64_t b;
    bool v;
    assert_int_equal(config_parse_duration_ms("1.5s", &ms), 0);
    assert_int_equal(ms, 1500);
    assert_int_equal(config_parse_duration_ms("2m", &ms), 0);
    assert_int_equal(ms, 120000);
    assert_int_equal(config_parse_duration_ms("1h", &ms), 0);
    assert_int_equal(ms, 3600000);
    assert_int_equal(config_parse_duration_ms("42", &ms), 0);
    assert_int_equal(ms, 42);
    assert_int_equal(config_parse_duration_ms("5x", &ms), -1);
    assert_int_equal(config_parse_duration_ms("-5s", &ms), -1);
    assert_int_equal(config_parse_duration_ms("", &ms), -1);
    assert_int_equal(config_parse_duration_ms("0x10", &ms), -1);
    assert_int_equal(config_parse_bytes("16MiB", &b), 0);
    assert_int_equal(b, 16u << 20);
    assert_int_equal(config_parse_bytes("1GB", &b), 0);
    assert_int_equal(b, 1000000000u);
    assert_int_equal(config_parse_bytes("4k", &b), 0);
    assert_int_equal(b, 4096);
    assert_int_equal(config_parse_bytes("0.5B", &b), -1);
    assert_int_equal(config_parse_bytes("99999999999TB", &b), -1);
    assert_int_equal(config_parse_bool("YES", &v), 0);
    assert_true(v);
    assert_int_equal(config_parse_bool("2", &v), -1);
    char env[32];
    assert_int_equal(config_env_name("feed.max-inflight", env, sizeof env), 0);
    assert_string_equal(env, "NDD_FEED_MAX_INFLIGHT");
    assert_int_equal(config_env_name("a.very.long.key.name.that.is.too.long", env, sizeof env), -1);
}

static void test_duplicate_spec_keys_and_bad_defaults_are_rejected(void **state)
{
    static const config_spec_t dup[] = {{"a-b", CONFIG_INT, "1", "", 0, 0, 0, 0},
                                        {"a_b", CONFIG_INT, "1", "", 0, 0, 0, 0}};
    static const config_spec_t baddef[] = {{"n", CONFIG_INT, "ten", "", 0, 0, 0, 0}};
    char err[512];
    char *argv[] = {"ndd-test", NULL};
    assert_null(config_load_env(dup, 2, 1, argv, no_env, err, sizeof err));
    assert_non_null(strstr(err, "declared twice"));
    assert_null(config_load_env(baddef, 1, 1, argv, no_env, err, sizeof err));
    assert_non_null(strstr(err, "(from default)"));
}

int main(void)
{
    log_setup("test_config", LOG_LEVEL_OFF, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_apply_when_no_source_sets_a_key),
        cmocka_unit_test(test_flag_beats_env_beats_file_beats_default_and_dump_names_the_winner),
        cmocka_unit_test(test_config_file_named_by_env_and_lists_from_json_arrays),
        cmocka_unit_test(test_flag_forms_equals_space_and_bare_bool),
        cmocka_unit_test(test_unknown_keys_fail_naming_key_and_source),
        cmocka_unit_test(test_invalid_values_fail_naming_key_source_and_expectation),
        cmocka_unit_test(test_bad_config_files_fail_with_path_and_position),
        cmocka_unit_test(test_required_setting_missing_fails_naming_all_sources),
        cmocka_unit_test(test_secret_read_from_file_trims_newline_and_is_never_dumped),
        cmocka_unit_test(test_kafka_properties_pass_through_from_every_source),
        cmocka_unit_test(test_declared_kafka_prefixed_setting_is_not_a_property),
        cmocka_unit_test(test_help_flag_is_reported_and_help_lists_every_key),
        cmocka_unit_test(test_value_parsers_accept_units_and_reject_garbage),
        cmocka_unit_test(test_duplicate_spec_keys_and_bad_defaults_are_rejected),
    };
    return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
