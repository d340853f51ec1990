/* ndd-gui-api's Prometheus text parser (gui-api/gui_prom.c) and session cookie parsing
 * (gui_session.c): what the live figures and the login depend on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gui.h"

typedef struct seen {
    int n;
    char names[8][64];
    double values[8];
    char feed[8][64];
} seen_t;

static void collect(const gui_prom_sample_t *s, void *arg)
{
    seen_t *x = arg;
    if (x->n >= 8)
        return;
    snprintf(x->names[x->n], 64, "%s", s->name);
    x->values[x->n] = s->value;
    if (!gui_prom_label(s, "feed", x->feed[x->n], 64))
        x->feed[x->n][0] = '\0';
    x->n++;
}

static void test_prom_parse_reads_samples_labels_and_skips_comments(void **st)
{
    char text[] = "# HELP a_total x\n# TYPE a_total counter\n"
                  "a_total{feed=\"f1\",endpoint=\"h:1\"} 42\n\nb 1.5e3 1700000000\n"
                  "c{le=\"+Inf\"} +Inf\n";
    seen_t x = {0};
    char err[128];
    assert_int_equal(gui_prom_parse(text, strlen(text), collect, &x, err, sizeof(err)), 3);
    assert_string_equal(x.names[0], "a_total");
    assert_string_equal(x.feed[0], "f1");
    assert_true(x.values[0] == 42);
    assert_string_equal(x.names[1], "b");
    assert_true(x.values[1] == 1500);
    assert_string_equal(x.feed[1], "");
    assert_true(x.values[2] > 1e308);
}

static void test_prom_label_unescapes_quotes_backslashes_and_newlines(void **st)
{
    char text[] = "m{feed=\"a\\\"b\\\\c\\nd\"} 1\n";
    seen_t x = {0};
    char err[128];
    assert_int_equal(gui_prom_parse(text, strlen(text), collect, &x, err, sizeof(err)), 1);
    assert_string_equal(x.feed[0], "a\"b\\c\nd");
}

static void test_prom_parse_refuses_malformed_lines_naming_the_line(void **st)
{
    const char *bad[] = {"ok 1\nbroken{a=\"x 1\n", "ok 1\nnovalue\n", "ok 1\nx{a=b} 1\n",
                         "ok 1\nx notanumber\n", "ok 1\n9starts_with_digit 1\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char text[64], err[128] = "";
        snprintf(text, sizeof(text), "%s", bad[i]);
        assert_int_equal(gui_prom_parse(text, strlen(text), NULL, NULL, err, sizeof(err)), -1);
        assert_non_null(strstr(err, "line 2"));
    }
}

static void test_prom_parse_never_reads_past_len(void **st)
{
    char text[] = "a 1\nb 2\n";
    seen_t x = {0};
    char err[128];
    /* only "a 1\nb" is given: the second line has no value */
    assert_int_equal(gui_prom_parse(text, 5, collect, &x, err, sizeof(err)), -1);
    assert_int_equal(x.n, 1);
}

static void test_cookie_get_finds_the_session_among_others(void **st)
{
    char v[80];
    assert_true(gui_cookie_get("a=1; ndd_session=abc; b=2", "ndd_session", v, sizeof(v)));
    assert_string_equal(v, "abc");
    assert_false(gui_cookie_get("x_ndd_session=abc", "ndd_session", v, sizeof(v)));
    assert_false(gui_cookie_get("", "ndd_session", v, sizeof(v)));
}

static void test_session_lookup_by_cookie_until_it_expires(void **st)
{
    gui_sessions_t *s = gui_sessions_new(2, 1000);
    gui_session_info_t info, got;
    char id[65], cookie[100];
    assert_int_equal(gui_sessions_create(s, "ndd_tok", "alice", "viewer", 0, id, &info), 0);
    assert_int_equal(strlen(id), 64);
    assert_int_equal(strlen(info.csrf), 64);
    snprintf(cookie, sizeof(cookie), "ndd_session=%s", id);
    assert_true(gui_sessions_lookup(s, cookie, 999, &got));
    assert_string_equal(got.token, "ndd_tok");
    assert_string_equal(got.role, "viewer");
    assert_false(gui_sessions_lookup(s, cookie, 1000, &got));
    assert_false(gui_sessions_lookup(s, "ndd_session=00", 0, &got));
    gui_sessions_free(s);
}

static void test_sessions_beyond_the_limit_drop_the_oldest(void **st)
{
    gui_sessions_t *s = gui_sessions_new(2, 100000);
    gui_session_info_t info;
    char id[3][65], cookie[100];
    for (int i = 0; i < 3; i++)
        assert_int_equal(gui_sessions_create(s, "t", "n", "admin", i, id[i], &info), 0);
    snprintf(cookie, sizeof(cookie), "ndd_session=%s", id[0]);
    assert_false(gui_sessions_lookup(s, cookie, 10, &info));
    snprintf(cookie, sizeof(cookie), "ndd_session=%s", id[2]);
    assert_true(gui_sessions_lookup(s, cookie, 10, &info));
    assert_int_equal(gui_sessions_count(s, 10), 2);
    gui_sessions_remove(s, cookie);
    assert_int_equal(gui_sessions_count(s, 10), 1);
    gui_sessions_free(s);
}

static void test_url_parse_takes_host_port_and_path(void **st)
{
    gui_url_t u;
    char err[128];
    assert_int_equal(gui_url_parse("http://127.0.0.1:9102/metrics", &u, err, sizeof(err)), 0);
    assert_string_equal(u.host, "127.0.0.1");
    assert_string_equal(u.port, "9102");
    assert_string_equal(u.path, "/metrics");
    assert_int_equal(gui_url_parse("http://[::1]:9100", &u, err, sizeof(err)), 0);
    assert_string_equal(u.host, "::1");
    assert_string_equal(u.port, "9100");
    assert_false(u.https);
    assert_int_equal(gui_url_parse("https://admin", &u, err, sizeof(err)), 0);
    assert_true(u.https);
    assert_string_equal(u.host, "admin");
    assert_string_equal(u.port, "443");
    assert_int_equal(gui_url_parse("ftp://x", &u, err, sizeof(err)), -1);
    assert_int_equal(gui_url_parse("http://x:12a", &u, err, sizeof(err)), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prom_parse_reads_samples_labels_and_skips_comments),
        cmocka_unit_test(test_prom_label_unescapes_quotes_backslashes_and_newlines),
        cmocka_unit_test(test_prom_parse_refuses_malformed_lines_naming_the_line),
        cmocka_unit_test(test_prom_parse_never_reads_past_len),
        cmocka_unit_test(test_cookie_get_finds_the_session_among_others),
        cmocka_unit_test(test_session_lookup_by_cookie_until_it_expires),
        cmocka_unit_test(test_sessions_beyond_the_limit_drop_the_oldest),
        cmocka_unit_test(test_url_parse_takes_host_port_and_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
