/* Prometheus' own checker on our exposition: a real server from services/base/httpd.c serving a
 * registry with counters, gauges, histograms and awkward label values; `curl` fetches
 * /metrics and `promtool check metrics` must accept it without a single complaint. Also
 * validates deploy/prometheus/prometheus.yml with `promtool check config`.
 * Needs curl and promtool (Debian packages curl and prometheus); fails if either is absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "httpd.h"
#include "log.h"
#include "metrics.h"

static void require_tool(const char *tool)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
    if (system(cmd) != 0) {
        fprintf(stderr,
                "FATAL: %s is not installed (apt-get install %s); this test cannot run "
                "without it\n",
                tool, strcmp(tool, "promtool") == 0 ? "prometheus" : tool);
        fail();
    }
}

/* Runs cmd through sh, capturing stdout+stderr; returns the exit status. */
static int run(const char *cmd, char *out, size_t outlen)
{
    char full[2048];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, outlen - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static double half(void *arg)
{
    return 0.5;
}

static int setup_metrics(httpd_t *h, void *arg)
{
    httpd_set_metrics(h, arg);
    return 0;
}

static void fill_registry(metrics_registry_t *r)
{
    metrics_family_t *in = metrics_counter_new(r, "ndd_ingress_messages_total",
                                               "NF message copies read, by NF type.", "nf_type");
    metrics_counter_add(metrics_counter_labels(in, "SCP"), 12345);
    metrics_counter_inc(metrics_counter_labels(in, "NRF"));
    metrics_family_t *eg = metrics_counter_new(
        r, "ndd_egress_messages_total", "Copies delivered, by feed and endpoint.", "feed,endpoint");
    /* awkward label values: quotes, backslashes, newlines, UTF-8, empty, braces */
    metrics_counter_inc(metrics_counter_labels(eg, "fe\"ed", "http://h:1/p?a=b&c"));
    metrics_counter_inc(metrics_counter_labels(eg, "back\\slash", "new\nline"));
    metrics_counter_inc(metrics_counter_labels(eg, "ünïcødé ✓", ""));
    metrics_counter_inc(metrics_counter_labels(eg, "{}=,", " spaces "));
    metrics_counter_inc(metrics_counter_labels(eg, "bad utf-8 \xff\xc3(", "\xed\xa0\x80"));
    metrics_family_t *lag =
        metrics_gauge_new(r, "ndd_consumer_lag_messages",
                          "Messages behind the log end, by partition.", "topic,partition");
    metrics_gauge_set(metrics_gauge_labels(lag, "MAIN", "0"), 42);
    metrics_gauge_set(metrics_gauge_labels(lag, "MAIN", "1"), -1);
    metrics_child_set_callback(metrics_gauge_labels(lag, "XDR", "0"), half, NULL);
    metrics_family_t *lat = metrics_histogram_new(
        r, "ndd_egress_latency_seconds", "Round trip to the endpoint.\nSecond \\ line.", "feed",
        metrics_latency_buckets_seconds, metrics_latency_buckets_seconds_n);
    for (int i = 0; i < 1000; i++)
        metrics_histogram_observe(metrics_histogram_labels(lat, "f1"), (double)i * 1e-4);
    metrics_histogram_observe(metrics_histogram_labels(lat, "f\"2"), 100);
    metrics_family_t *sz =
        metrics_histogram_new(r, "ndd_message_size_bytes", "Body sizes.", NULL,
                              metrics_size_buckets_bytes, metrics_size_buckets_bytes_n);
    metrics_histogram_observe(metrics_histogram_labels(sz), 3400);
    /* an overflowing family, so ndd_metrics_overflow_total and _overflow appear */
    metrics_family_t *capped =
        metrics_counter_new(r, "ndd_test_capped_total", "A capped family.", "id");
    metrics_family_set_max_children(capped, 2);
    for (int i = 0; i < 5; i++) {
        char id[8];
        snprintf(id, sizeof id, "%d", i);
        metrics_counter_inc(metrics_counter_labels(capped, id));
    }
    /* an empty HELP must still pass the lint */
    metrics_counter_inc(
        metrics_counter_labels(metrics_counter_new(r, "ndd_test_nohelp_total", "", NULL)));
}

static void test_promtool_accepts_metrics_served_over_http(void **state)
{
    require_tool("curl");
    require_tool("promtool");
    metrics_registry_t *r = metrics_registry_new();
    fill_registry(r);
    char err[256];
    httpd_options_t o = {.port = 0};
    httpd_thread_t *t = httpd_thread_start(&o, setup_metrics, r, err, sizeof err);
    if (!t)
        fprintf(stderr, "%s\n", err);
    assert_non_null(t);
    uint16_t port = httpd_port(httpd_thread_server(t));

    char cmd[512], out[65536];
    snprintf(cmd, sizeof cmd, "curl -sS --fail --max-time 10 http://127.0.0.1:%u/metrics", port);
    int rc = run(cmd, out, sizeof out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "ndd_egress_messages_total{feed=\"fe\\\"ed\""));
    assert_non_null(strstr(out, "ndd_metrics_overflow_total{family=\"ndd_test_capped_total\"} 3"));
    assert_non_null(strstr(out, "process_cpu_seconds_total "));

    snprintf(cmd, sizeof cmd,
             "set -o pipefail; curl -sS --fail --max-time 10 http://127.0.0.1:%u/metrics | "
             "promtool check metrics",
             port);
    char full[600];
    snprintf(full, sizeof full, "bash -c '%s'", cmd);
    rc = run(full, out, sizeof out);
    if (rc != 0 || out[0] != '\0')
        fprintf(stderr, "promtool check metrics (exit %d) said:\n%s\n", rc, out);
    assert_int_equal(rc, 0);
    assert_string_equal(out, "");

    httpd_thread_stop(t);
    metrics_registry_free(r);
}

static void test_promtool_accepts_the_prometheus_config(void **state)
{
    require_tool("promtool");
    char cmd[512], out[8192];
    snprintf(cmd, sizeof cmd, "promtool check config %s/deploy/prometheus/prometheus.yml",
             NDD_SOURCE_DIR);
    int rc = run(cmd, out, sizeof out);
    if (rc != 0)
        fprintf(stderr, "promtool check config (exit %d) said:\n%s\n", rc, out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "SUCCESS"));
}

/* Every query of the Grafana dashboard must be valid PromQL: they are written out as
 * recording rules (Grafana's $__rate_interval replaced by 1m) for `promtool check rules`. */
static void test_dashboard_queries_are_valid_promql(void **state)
{
    require_tool("promtool");
    char path[512];
    snprintf(path, sizeof path, "%s/deploy/grafana/dashboards/ndd-overview.json", NDD_SOURCE_DIR);
    json_error_t je;
    json_t *dash = json_load_file(path, 0, &je);
    if (!dash)
        fprintf(stderr, "%s: line %d: %s\n", path, je.line, je.text);
    assert_non_null(dash);
    char rules[] = "/tmp/ndd_dash_rules_XXXXXX";
    int fd = mkstemp(rules);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "groups:\n  - name: dashboard\n    rules:\n");
    size_t i, k, n = 0;
    json_t *panel, *target;
    json_array_foreach(json_object_get(dash, "panels"), i, panel)
    {
        json_array_foreach(json_object_get(panel, "targets"), k, target)
        {
            const char *expr = json_string_value(json_object_get(target, "expr"));
            assert_non_null(expr);
            /* YAML single-quoted scalar: '' escapes a quote */
            fprintf(f, "      - record: ndd:dashboard:q%zu\n        expr: '", n++);
            for (const char *p = expr; *p; p++) {
                if (strncmp(p, "$__rate_interval", 16) == 0) {
                    fputs("1m", f);
                    p += 15;
                } else if (*p == '\'') {
                    fputs("''", f);
                } else {
                    fputc(*p, f);
                }
            }
            fputs("'\n", f);
        }
    }
    fclose(f);
    json_decref(dash);
    assert_true(n >= 20);
    char cmd[600], out[16384];
    snprintf(cmd, sizeof cmd, "promtool check rules %s", rules);
    int rc = run(cmd, out, sizeof out);
    if (rc != 0)
        fprintf(stderr, "promtool check rules (exit %d) said:\n%s\n", rc, out);
    unlink(rules);
    assert_int_equal(rc, 0);
    snprintf(cmd, sizeof cmd, "promtool check rules %s/deploy/prometheus/ndd-rules.yml",
             NDD_SOURCE_DIR);
    rc = run(cmd, out, sizeof out);
    if (rc != 0)
        fprintf(stderr, "promtool check rules (exit %d) said:\n%s\n", rc, out);
    assert_int_equal(rc, 0);
}

int main(void)
{
    log_setup("test_metrics_promtool", LOG_LEVEL_WARN, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_promtool_accepts_metrics_served_over_http),
        cmocka_unit_test(test_promtool_accepts_the_prometheus_config),
        cmocka_unit_test(test_dashboard_queries_are_valid_promql),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
