/* Metrics registry: exact exposition text, escaping, bounds, removal, concurrency. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "metrics.h"

/* Renders r into a fresh NUL-terminated string (caller frees). */
static char *render(metrics_registry_t *r)
{
    buf_t b;
    assert_int_equal(buf_init(&b, 0, 16 * 1024 * 1024), 0);
    assert_int_equal(metrics_render(r, &b), 0);
    assert_int_equal(buf_append_u8(&b, 0), 0);
    return (char *)b.data;
}

/* Families named a_* sort before ndd_* and process_*: the document starts with them. */
static void assert_starts_with(const char *doc, const char *want)
{
    if (strncmp(doc, want, strlen(want)) != 0) {
        fprintf(stderr, "--- want prefix:\n%s--- got:\n%.*s\n", want, (int)strlen(want) + 200, doc);
        fail();
    }
}

static void test_render_counter_and_gauge_exact_text(void **state)
{
    metrics_registry_t *r = metrics_registry_new();
    metrics_family_t *c = metrics_counter_new(r, "a_msgs_total", "Messages seen.", "nf_type");
    metrics_family_t *g = metrics_gauge_new(r, "a_queue_depth", "Depth.", NULL);
    metrics_counter_add(metrics_counter_labels(c, "SCP"), 41);
    metrics_counter_inc(metrics_counter_labels(c, "SCP"));
    metrics_counter_inc(metrics_counter_labels(c, "NRF"));
    metrics_gauge_t *gg = metrics_gauge_labels(g);
    metrics_gauge_set(gg, 1.5);
    char *doc = render(r);
    assert_starts_with(doc, "# HELP a_msgs_total Messages seen.\n"
                            "# TYPE a_msgs_total counter\n"
                            "a_msgs_total{nf_type=\"NRF\"} 1\n"
                            "a_msgs_total{nf_type=\"SCP\"} 42\n"
                            "# HELP a_queue_depth Depth.\n"
                            "# TYPE a_queue_depth gauge\n"
                            "a_queue_depth 1.5\n"
                            "# HELP process_cpu_seconds_total");
    free(doc);
    metrics_registry_free(r);
}

static void test_histogram_renders_cumulative_buckets_sum_count(void **state)
{
    metrics_registry_t *r = metrics_registry_new();
    const double b[] = {0.1, 1, 2.5};
    metrics_family_t *f = metrics_histogram_new(r, "a_latency_seconds", "Latency.", "feed", b, 3);
    metrics_histogram_t *h = metrics_histogram_labels(f, "f1");
    metrics_histogram_observe(h, 0.05);
    metrics_histogram_observe(h, 0.1); /* le is inclusive */
    metrics_histogram_observe(h, 2);
    metrics_histogram_observe(h, 100);
    assert_int_equal(metrics_histogram_count(h), 4);
    char *doc = render(r);
    assert_starts_with(doc, "# HELP a_latency_seconds Latency.\n"
                            "# TYPE a_latency_seconds histogram\n"
                            "a_latency_seconds_bucket{feed=\"f1\",le=\"0.1\"} 2\n"
                            "a_latency_seconds_bucket{feed=\"f1\",le=\"1\"} 2\n"
                            "a_latency_seconds_bucket{feed=\"f1\",le=\"2.5\"} 3\n"
                            "a_latency_seconds_bucket{feed=\"f1\",le=\"+Inf\"} 4\n"
                            "a_latency_seconds_sum{feed=\"f1\"} 102.15\n"
                            "a_latency_seconds_count{feed=\"f1\"} 4\n");
    free(doc);
    metrics_registry_free(r);
}

static void test_label_values_and_help_are_escaped(void **state)
{
    metrics_registry_t *r = metrics_registry_new();
    metrics_family_t *f =
        metrics_counter_new(r, "a_odd_total", "Back\\slash and\nnewline \"quoted\".", "path");
    metrics_counter_inc(metrics_counter_labels(f, "a\\b\"c\nd"));
    char *doc = render(r);
    assert_starts_with(doc, "# HELP a_odd_total Back\\\\slash and\\nnewline \"quoted\".\n"
                            "# TYPE a_odd_total counter\n"
                            "a_odd_total{path=\"a\\\\b\\\"c\\nd\"} 1\n");
    free(doc);
    metrics_registry_free(r);
}

static void test_invalid_utf8_and_long_label_values_are_canonicalised(void **state)
{
    metrics_registry_t *r = metrics_registry_new();
    metrics_family_t *f = metrics_counter_new(r, "a_utf_total", "u", "v");
    metrics_counter_t *bad = metrics_counter_labels(f, "x\xff\xfey\xc3");
    /* the same canonical text is the same child */
    assert_ptr_equal(bad, metrics_counter_labels(f, "x\xef\xbf\xbd\xef\xbf\xbdy\xef\xbf\xbd"));
    metrics_counter_inc(metrics_counter_labels(f, "ok \xc3\xa9")); /* valid UTF-8 kept */
    char *longv = malloc(5000);
    memset(longv, 'L', 4999);
    longv[4999] = '\0';
    metrics_counter_inc(metrics_counter_labels(f, longv));
    char *doc = render(r);
    assert_non_null(strstr(doc, "a_utf_total{v=\"ok \xc3\xa9\"} 1\n"));
    assert_non_null(strstr(doc, "a_utf_total{v=\"x\xef\xbf\xbd\xef\xbf\xbdy\xef\xbf\xbd\"} 0\n"));
    longv[METRICS_MAX_LABEL_VALUE] = '\0';
    char want[METRICS_MAX_LABEL_VALUE + 64];
    snprintf(want, sizeof want, "{v=\"%s\"} 1\n", longv);
    assert_non_null(strstr(doc, want));
    free(doc);
    /* removal finds the child by the same canonical form */
    assert_int_equal(metrics_family_remove_matching(f, "v", "x\xff\xfey\xc3"), 1);
    free(longv);
    metrics_registry_free(r);
}

static void test_same_label_values_give_same_child(void **state)
{
    metrics_registry_t *r = metrics_registry_new();
    metrics_family_t *f = metrics_counter_new(r, "a_x_total", "x", "feed,endpoint");
    metrics_counter_t *a = metrics_counter_labels(f, "f1", "e1");
    assert_ptr_equal(a, metrics_counter_labels(f, "f1", "e1"));
    /* ("f1","e1") and ("f1e","1") must not collide */
    assert_ptr_not_equal(a, metrics_counter_labels(f, "f1e", "1"));
    assert_ptr_not_equal(a, metrics_counter_labels(f, "f1", "e2"));
    assert_int_equal(metrics_family_children(f), 3);
    metrics_registry_free(r);
}

static void test_overflow_folds_new_label_sets_and_counts(void **state)
{
    metrics_registry_t *r = metrics_registry_new();
    metrics_family_t *f = metrics_counter_new(r, "a_capped_total", "capped", "id");
    metrics_family_set_max_children(f, 2);
    metrics_counter_t *c1 = metrics_counter_labels(f, "1");
    metrics_counter_t *c2 = metrics_counter_labels(f, "2");
    metrics_counter_t *o1 = metrics_counter_labels(f, "3");
    metrics_counter_t *o2 = metrics_counter_labels(f, "4");
    assert_non_null(o1);
    assert_ptr_equal(o1, o2);
    assert_ptr_not_equal(o1, c1);
    assert_ptr_not_equal(o1, c2);
    assert_ptr_equal(c1, metrics_counter_labels(f, "1")); /* existing sets still resolve */
    assert_int_equal(metrics_family_children(f), 2);
    metrics_counter_add(o1, 5);
    char *doc = render(r);
    assert_starts_with(doc, "# HELP a_capped_total capped\n"
                            "# TYPE a_capped_total counter\n"
                            "a_capped_total{id=\"1\"} 0\n"
                            "a_capped_total{id=\"2\"} 0\n"
                            "a_capped_total{id=\"_overflow\"} 5\n");
    assert_non_null(strstr(doc, "\nndd_metrics_overflow_total{family=\"a_capped_total\"} 2\n"));
    free(doc);
    metrics_registry_free(r);
}

static void test_removed_children_disappear_from_output(void **state)
{
    metrics_registry_t *r = metrics_registry_new();
    metrics_family_t *f = metrics_gauge_new(r, "a_lag", "lag", "feed,partition");
    metrics_gauge_set(metrics_gauge_labels(f, "f1", "0"), 1);
    metrics_gauge_set(metrics_gauge_labels(f, "f1", "1"), 2);
    metrics_gauge_set(metrics_gauge_labels(f, "f2", "0"), 3);
    assert_int_equal(metrics_family_remove_matching(f, "feed", "f2"), 1);
    assert_int_equal(metrics_family_remove_matching(f, "feed", "f2"), 0);
    metrics_gauge_set(metrics_gauge_labels(f, "f3", "0"), 4);
    assert_int_equal(metrics_family_remove_matching(f, "feed", "f1"), 2);
    assert_int_equal(metrics_family_children(f), 1);
    char *doc = render(r);
    assert_starts_with(doc, "# HELP a_lag lag\n# TYPE a_lag gauge\n"
                            "a_lag{feed=\"f3\",partition=\"0\"} 4\n# HELP ");
    free(doc);
    metrics_registry_free(r);
}

static void test_reregistering_a_family_returns_it_or_fails_on_conflict(void **state)
{
    metrics_registry_t *r = metrics_registry_new();
    metrics_family_t *f = metrics_counter_new(r, "a_same_total", "h", "a,b");
    assert_non_null(f);
    assert_ptr_equal(f, metrics_counter_new(r, "a_same_total", "other help", "a,b"));
    assert_null(metrics_gauge_new(r, "a_same_total", "h", NULL));
    assert_null(metrics_counter_new(r, "a_same_total", "h", "a"));
    const double b1[] = {1, 2}, b2[] = {1, 3};
    assert_non_null(metrics_histogram_new(r, "a_h", "h", NULL, b1, 2));
    assert_null(metrics_histogram_new(r, "a_h", "h", NULL, b2, 2));
    metrics_registry_free(r);
}

static void test_invalid_names_labels_and_buckets_are_rejected(void **state)
{
    metrics_registry_t *r = metrics_registry_new();
    const double ok[] = {1, 2}, unsorted[] = {2, 1}, inf[] = {1, INFINITY};
    assert_null(metrics_counter_new(r, "1abc", "h", NULL));
    assert_null(metrics_counter_new(r, "a-b", "h", NULL));
    assert_null(metrics_counter_new(r, "", "h", NULL));
    assert_null(metrics_counter_new(r, "a_no_suffix", "h", NULL)); /* counters end in _total */
    assert_null(metrics_gauge_new(r, "a_gauge_total", "h", NULL));
    assert_null(metrics_gauge_new(r, "a_queue_count", "h", NULL)); /* histogram suffixes */
    assert_null(metrics_counter_new(r, "a_camelCase_total", "h", NULL));
    assert_null(metrics_counter_new(r, "a_ok", "h", "bad-label"));
    assert_null(metrics_counter_new(r, "a_ok", "h", "__reserved"));
    assert_null(metrics_counter_new(r, "a_ok", "h", "x,x"));
    assert_null(metrics_histogram_new(r, "a_hist", "h", "le", ok, 2));
    assert_null(metrics_histogram_new(r, "a_hist", "h", NULL, unsorted, 2));
    assert_null(metrics_histogram_new(r, "a_hist", "h", NULL, inf, 2));
    assert_null(metrics_histogram_new(r, "a_hist", "h", NULL, ok, 0));
    assert_non_null(metrics_counter_new(r, "a:colon_ok_total", "h", " x , y "));
    /* a type mismatch at lookup is refused */
    metrics_family_t *g = metrics_gauge_new(r, "a_g", "h", NULL);
    assert_null(metrics_counter_labels(g));
    metrics_registry_free(r);
}

static double answer(void *arg)
{
    return *(double *)arg;
}

static void test_empty_help_falls_back_to_the_name(void **state)
{
    metrics_registry_t *r = metrics_registry_new();
    metrics_counter_inc(metrics_counter_labels(metrics_counter_new(r, "a_nohelp_total", "", NULL)));
    char *doc = render(r);
    assert_starts_with(doc, "# HELP a_nohelp_total a_nohelp_total\n");
    free(doc);
    metrics_registry_free(r);
}

static void test_callback_values_are_read_at_scrape_time(void **state)
{
    metrics_registry_t *r = metrics_registry_new();
    metrics_family_t *f = metrics_gauge_new(r, "a_inflight", "in flight", NULL);
    double v = 7;
    metrics_child_set_callback(metrics_gauge_labels(f), answer, &v);
    char *doc = render(r);
    assert_non_null(strstr(doc, "\na_inflight 7\n"));
    free(doc);
    v = 0.25;
    doc = render(r);
    assert_non_null(strstr(doc, "\na_inflight 0.25\n"));
    free(doc);
    metrics_registry_free(r);
}

/* What heartbeats and worker stats read instead of counting twice: the exact whole count of
 * the child (also past 2^53, where a double would round), the same for the same label
 * values, and nothing for a missing handle. */
static void test_counter_get_reads_the_exact_count_of_a_child(void **state)
{
    metrics_registry_t *r = metrics_registry_new();
    metrics_family_t *f = metrics_counter_new(r, "a_events_total", "events", "feed");
    metrics_counter_t *c = metrics_counter_labels(f, "f1");
    assert_int_equal(metrics_counter_get(c), 0);
    metrics_counter_inc(c);
    metrics_counter_add(c, 41);
    assert_int_equal(metrics_counter_get(c), 42);
    assert_int_equal(metrics_counter_get(metrics_counter_labels(f, "f1")), 42);
    assert_int_equal(metrics_counter_get(metrics_counter_labels(f, "f2")), 0);
    metrics_counter_add(c, (UINT64_C(1) << 53) + 1 - 42);
    assert_true(metrics_counter_get(c) == (UINT64_C(1) << 53) + 1);
    assert_int_equal(metrics_counter_get(NULL), 0);
    metrics_registry_free(r);
}

static double sample_of(const char *doc, const char *name)
{
    char pat[128];
    snprintf(pat, sizeof pat, "\n%s ", name);
    const char *p = strstr(doc, pat);
    assert_non_null(p);
    return strtod(p + strlen(pat), NULL);
}

static void test_process_metrics_reflect_this_process(void **state)
{
    metrics_registry_t *r = metrics_registry_new();
    char *doc = render(r);
    assert_true(sample_of(doc, "process_resident_memory_bytes") > 100000);
    assert_true(sample_of(doc, "process_open_fds") >= 3);
    assert_true(sample_of(doc, "process_max_fds") >= 64);
    assert_true(sample_of(doc, "process_cpu_seconds_total") >= 0);
    double start = sample_of(doc, "process_start_time_seconds");
    double now = (double)time(NULL);
    assert_true(start > now - 3600 && start <= now + 1);
    assert_non_null(strstr(doc, "# TYPE process_cpu_seconds_total counter\n"));
    free(doc);
    metrics_registry_free(r);
}

struct worker {
    metrics_counter_t *c;
    metrics_histogram_t *h;
};

#define WORKER_ITERS 200000

static void *worker_run(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < WORKER_ITERS; i++) {
        metrics_counter_inc(w->c);
        metrics_histogram_observe(w->h, (double)(i % 10) * 0.001);
    }
    return NULL;
}

static void test_concurrent_updates_from_two_threads_while_rendering(void **state)
{
    metrics_registry_t *r = metrics_registry_new();
    metrics_family_t *cf = metrics_counter_new(r, "a_conc_total", "c", "who");
    metrics_family_t *hf =
        metrics_histogram_new(r, "a_conc_seconds", "h", NULL, metrics_latency_buckets_seconds,
                              metrics_latency_buckets_seconds_n);
    struct worker w = {metrics_counter_labels(cf, "both"), metrics_histogram_labels(hf)};
    pthread_t t1, t2;
    assert_int_equal(pthread_create(&t1, NULL, worker_run, &w), 0);
    assert_int_equal(pthread_create(&t2, NULL, worker_run, &w), 0);
    /* Scrape while they run; also create new children concurrently. */
    int scrapes = 0;
    for (int i = 0; i < 50; i++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", i);
        metrics_counter_inc(metrics_counter_labels(cf, name));
        char *doc = render(r);
        assert_non_null(strstr(doc, "# TYPE a_conc_total counter"));
        free(doc);
        scrapes++;
    }
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    assert_true(metrics_counter_value(w.c) == 2.0 * WORKER_ITERS);
    assert_int_equal(metrics_histogram_count(w.h), 2 * WORKER_ITERS);
    /* The sum is a double added by compare-exchange: a lost update would take up to 0.009
     * from 2 x 20,000 x (0 + 0.001 + ... + 0.009) = 1,800; rounding costs far less. */
    assert_true(fabs(metrics_histogram_sum(w.h) - 1800.0) < 1e-6);
    char *doc = render(r);
    assert_non_null(strstr(doc, "a_conc_seconds_count 400000\n"));
    assert_non_null(strstr(doc, "a_conc_seconds_bucket{le=\"+Inf\"} 400000\n"));
    assert_non_null(strstr(doc, "a_conc_total{who=\"both\"} 400000\n"));
    free(doc);
    assert_int_equal(scrapes, 50);
    metrics_registry_free(r);
}

static void test_render_reports_full_buffer(void **state)
{
    metrics_registry_t *r = metrics_registry_new();
    metrics_family_t *f = metrics_counter_new(r, "a_big_total", "big", "id");
    for (int i = 0; i < 100; i++) {
        char id[16];
        snprintf(id, sizeof id, "%d", i);
        metrics_counter_inc(metrics_counter_labels(f, id));
    }
    buf_t b;
    buf_init(&b, 0, 512);
    assert_int_equal(metrics_render(r, &b), -1);
    buf_free(&b);
    metrics_registry_free(r);
}

static void test_bucket_helpers_and_number_formatting(void **state)
{
    double e[4];
    assert_int_equal(metrics_buckets_exponential(0.001, 10, 4, e), 0);
    assert_true(fabs(e[3] - 1.0) < 1e-12);
    assert_int_equal(metrics_buckets_exponential(0, 2, 4, e), -1);
    assert_int_equal(metrics_buckets_exponential(1, 1, 4, e), -1);

    metrics_registry_t *r = metrics_registry_new();
    metrics_family_t *f = metrics_gauge_new(r, "a_num", "n", "k");
    metrics_gauge_set(metrics_gauge_labels(f, "a"), 0.1);
    metrics_gauge_set(metrics_gauge_labels(f, "b"), 1e-05);
    metrics_gauge_set(metrics_gauge_labels(f, "c"), -3);
    metrics_gauge_set(metrics_gauge_labels(f, "d"), INFINITY);
    metrics_gauge_set(metrics_gauge_labels(f, "e"), NAN);
    metrics_gauge_set(metrics_gauge_labels(f, "f"), 1e20);
    metrics_gauge_set(metrics_gauge_labels(f, "g"), 123456789012.0);
    char *doc = render(r);
    assert_starts_with(doc, "# HELP a_num n\n# TYPE a_num gauge\n"
                            "a_num{k=\"a\"} 0.1\n"
                            "a_num{k=\"b\"} 1e-05\n"
                            "a_num{k=\"c\"} -3\n"
                            "a_num{k=\"d\"} +Inf\n"
                            "a_num{k=\"e\"} NaN\n"
                            "a_num{k=\"f\"} 1e+20\n"
                            "a_num{k=\"g\"} 123456789012\n");
    free(doc);
    metrics_registry_free(r);
}

static void test_default_registry_is_shared(void **state)
{
    metrics_registry_t *a = metrics_default_registry();
    assert_non_null(a);
    assert_ptr_equal(a, metrics_default_registry());
}

int main(void)
{
    log_setup("test_metrics", LOG_LEVEL_OFF, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_render_counter_and_gauge_exact_text),
        cmocka_unit_test(test_histogram_renders_cumulative_buckets_sum_count),
        cmocka_unit_test(test_label_values_and_help_are_escaped),
        cmocka_unit_test(test_same_label_values_give_same_child),
        cmocka_unit_test(test_invalid_utf8_and_long_label_values_are_canonicalised),
        cmocka_unit_test(test_overflow_folds_new_label_sets_and_counts),
        cmocka_unit_test(test_removed_children_disappear_from_output),
        cmocka_unit_test(test_reregistering_a_family_returns_it_or_fails_on_conflict),
        cmocka_unit_test(test_invalid_names_labels_and_buckets_are_rejected),
        cmocka_unit_test(test_empty_help_falls_back_to_the_name),
        cmocka_unit_test(test_callback_values_are_read_at_scrape_time),
        cmocka_unit_test(test_counter_get_reads_the_exact_count_of_a_child),
        cmocka_unit_test(test_process_metrics_reflect_this_process),
        cmocka_unit_test(test_concurrent_updates_from_two_threads_while_rendering),
        cmocka_unit_test(test_render_reports_full_buffer),
        cmocka_unit_test(test_bucket_helpers_and_number_formatting),
        cmocka_unit_test(test_default_registry_is_shared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
