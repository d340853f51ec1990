/* The ndd.config follower's state machine without Kafka (an offline follower fed with
 * config_topic_apply): key and record parsing, last version wins during the initial load,
 * tombstones, unchanged records, kind filtering and the bounds (max keys, record size), and
 * the propagation bookkeeping (changes timed once marked applied, the applied offsets). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "clock.h"
#include "buf.h"
#include "config_topic.h"
#include "config_topic_testutil.h"
#include "log.h"
#include "metrics.h"

/* What the callbacks saw, in order: "U kind/id name prev-name|-", "D kind/id prev-name",
 * "L n". */
typedef struct seen {
    char lines[64][160];
    size_t n;
} seen_t;

static void seen_add(seen_t *s, const char *line)
{
    assert_true(s->n < 64);
    snprintf(s->lines[s->n++], sizeof(s->lines[0]), "%s", line);
}

static const char *name_of(json_t *rec)
{
    const char *n = json_string_value(json_object_get(rec, "name"));
    return n ? n : "-";
}

static void on_upsert(void *owner, const char *kind, const char *id, json_t *rec, json_t *prev)
{
    char line[160];
    snprintf(line, sizeof(line), "U %s/%s %s %s", kind, id, name_of(rec),
             prev ? name_of(prev) : "-");
    seen_add(owner, line);
}

static void on_delete(void *owner, const char *kind, const char *id, json_t *prev)
{
    char line[160];
    snprintf(line, sizeof(line), "D %s/%s %s", kind, id, name_of(prev));
    seen_add(owner, line);
}

static void on_loaded(void *owner, size_t keys)
{
    char line[32];
    snprintf(line, sizeof(line), "L %zu", keys);
    seen_add(owner, line);
}

typedef struct fixture {
    config_topic_t *ft;
    seen_t seen;
    metrics_registry_t *reg;
} fixture_t;

static fixture_t *fixture_new(const char *const *kinds, size_t n_kinds, size_t max_keys,
                              size_t max_record)
{
    fixture_t *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->reg = metrics_registry_new();
    config_topic_opts_t o = {.topic = "ndd.config.unit",
                             .kinds = kinds,
                             .n_kinds = n_kinds,
                             .max_keys = max_keys,
                             .max_record_bytes = max_record,
                             .on_upsert = on_upsert,
                             .on_delete = on_delete,
                             .on_loaded = on_loaded,
                             .owner = &f->seen,
                             .metrics = f->reg};
    char err[256];
    f->ft = config_topic_new(&o, err, sizeof(err));
    assert_non_null(f->ft);
    return f;
}

static void fixture_free(fixture_t *f)
{
    config_topic_free(f->ft);
    metrics_registry_free(f->reg);
    free(f);
}

/* A record as ndd-admin publishes it (docs/api.md, admin_config_record). */
static char *record(const char *kind, const char *id, const char *name, int version)
{
    char *s = NULL;
    int n = asprintf(&s,
                     "{\"id\":\"%s\",\"kind\":\"%s\",\"name\":\"%s\",\"spec\":{\"name\":\"%s\","
                     "\"source_topic\":\"MAIN\"},\"updated_at\":\"2026-11-30T06:36:46.927750Z\","
                     "\"version\":%d}",
                     id, kind, name, name, version);
    assert_true(n > 0);
    return s;
}

static config_topic_result_t put(fixture_t *f, const char *kind, const char *id, const char *name,
                                 int version)
{
    char key[256];
    snprintf(key, sizeof(key), "%s/%s", kind, id);
    char *v = record(kind, id, name, version);
    config_topic_result_t r = config_topic_apply(f->ft, key, strlen(key), v, strlen(v), 0, 1);
    free(v);
    return r;
}

static config_topic_result_t del(fixture_t *f, const char *kind, const char *id)
{
    char key[256];
    snprintf(key, sizeof(key), "%s/%s", kind, id);
    return config_topic_apply(f->ft, key, strlen(key), NULL, 0, 0, 2);
}

static void test_parse_key_splits_kind_and_id(void **state)
{
    char kind[32], id[256];
    const char *k = "feed/0b6c1c2e-8f0e-4d7a-9a55-3c1f7f1d2b11";
    assert_int_equal(config_topic_parse_key(k, strlen(k), kind, sizeof(kind), id, sizeof(id)), 0);
    assert_string_equal(kind, "feed");
    assert_string_equal(id, "0b6c1c2e-8f0e-4d7a-9a55-3c1f7f1d2b11");
    /* An id may itself hold a slash: the kind ends at the first one. */
    k = "source/a/b";
    assert_int_equal(config_topic_parse_key(k, strlen(k), kind, sizeof(kind), id, sizeof(id)), 0);
    assert_string_equal(kind, "source");
    assert_string_equal(id, "a/b");
}

static void test_parse_key_rejects_keys_not_kind_slash_id(void **state)
{
    char kind[32], id[256];
    const char *bad[] = {"",        "feed",      "/id",
                         "feed/",   "Feed/x",    "9feed/x",
                         "fe ed/x", "feed/a\nb", "averyveryveryveryverylongkindname/x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        assert_int_equal(
            config_topic_parse_key(bad[i], strlen(bad[i]), kind, sizeof(kind), id, sizeof(id)), -1);
    char longkey[300];
    memset(longkey, 'x', sizeof(longkey));
    memcpy(longkey, "feed/", 5);
    assert_int_equal(
        config_topic_parse_key(longkey, sizeof(longkey), kind, sizeof(kind), id, sizeof(id)), -1);
    assert_int_equal(config_topic_parse_key(NULL, 4, kind, sizeof(kind), id, sizeof(id)), -1);
}

static void test_parse_record_accepts_the_admin_record_format(void **state)
{
    char err[256];
    char *v = record("feed", "id1", "probe-1", 3);
    json_t *r = config_topic_parse_record("feed", "id1", v, strlen(v), err, sizeof(err));
    assert_non_null(r);
    assert_int_equal(json_integer_value(json_object_get(r, "version")), 3);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(r, "spec"), "source_topic")), "MAIN");
    json_decref(r);
    free(v);
}

static void test_parse_record_rejects_mismatch_missing_spec_and_bad_json(void **state)
{
    char err[256];
    struct {
        const char *value;
        const char *why;
    } bad[] = {
        {"{\"kind\":\"filter\",\"id\":\"id1\",\"spec\":{}}", "\"kind\" differs"},
        {"{\"kind\":\"feed\",\"id\":\"id2\",\"spec\":{}}", "\"id\" differs"},
        {"{\"kind\":\"feed\",\"id\":\"id1\"}", "no \"spec\""},
        {"{\"kind\":\"feed\",\"id\":\"id1\",\"spec\":[]}", "no \"spec\""},
        {"{\"id\":\"id1\",\"spec\":{}}", "no \"kind\""},
        {"{\"kind\":\"feed\",\"spec\":{}}", "no \"id\""},
        {"[1,2]", "not a JSON object"},
        {"{\"kind\":\"feed\",", "not JSON"},
        {"{\"kind\":\"feed\",\"kind\":\"feed\",\"id\":\"id1\",\"spec\":{}}", "not JSON"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        err[0] = '\0';
        assert_null(config_topic_parse_record("feed", "id1", bad[i].value, strlen(bad[i].value),
                                              err, sizeof(err)));
        if (!strstr(err, bad[i].why))
            fail_msg("case %zu: reason \"%s\" does not say \"%s\"", i, err, bad[i].why);
    }
}

static void test_initial_load_applies_only_the_last_version_of_each_key(void **state)
{
    fixture_t *f = fixture_new(NULL, 0, 0, 0);
    assert_int_equal(put(f, "feed", "a", "a-v1", 1), CONFIG_TOPIC_UPSERT);
    assert_int_equal(put(f, "filter", "b", "b-v1", 1), CONFIG_TOPIC_UPSERT);
    assert_int_equal(put(f, "feed", "a", "a-v2", 2), CONFIG_TOPIC_UPSERT);
    assert_int_equal(put(f, "feed", "c", "c-v1", 1), CONFIG_TOPIC_UPSERT);
    assert_int_equal(put(f, "feed", "a", "a-v3", 3), CONFIG_TOPIC_UPSERT);
    assert_int_equal(del(f, "feed", "c"), CONFIG_TOPIC_DELETE);
    /* Nothing reaches the owner before the load is complete. */
    assert_int_equal(f->seen.n, 0);
    assert_false(config_topic_loaded(f->ft));
    config_topic_finish_load(f->ft);
    assert_true(config_topic_loaded(f->ft));
    assert_int_equal(f->seen.n, 3);
    assert_string_equal(f->seen.lines[0], "U feed/a a-v3 -");
    assert_string_equal(f->seen.lines[1], "U filter/b b-v1 -");
    assert_string_equal(f->seen.lines[2], "L 2");
    /* A second call changes nothing. */
    config_topic_finish_load(f->ft);
    assert_int_equal(f->seen.n, 3);
    fixture_free(f);
}

static void test_live_records_call_upsert_and_delete_with_the_previous_record(void **state)
{
    fixture_t *f = fixture_new(NULL, 0, 0, 0);
    config_topic_finish_load(f->ft); /* empty topic */
    assert_string_equal(f->seen.lines[0], "L 0");
    assert_int_equal(put(f, "feed", "a", "probe-1", 1), CONFIG_TOPIC_UPSERT);
    assert_int_equal(put(f, "feed", "a", "probe-renamed", 2), CONFIG_TOPIC_UPSERT);
    assert_int_equal(del(f, "feed", "a"), CONFIG_TOPIC_DELETE);
    assert_int_equal(f->seen.n, 4);
    assert_string_equal(f->seen.lines[1], "U feed/a probe-1 -");
    assert_string_equal(f->seen.lines[2], "U feed/a probe-renamed probe-1");
    assert_string_equal(f->seen.lines[3], "D feed/a probe-renamed");
    assert_null(cttu_held(f->ft, "feed", "a"));
    fixture_free(f);
}

static void test_unchanged_record_and_tombstone_of_unknown_key_call_nothing(void **state)
{
    fixture_t *f = fixture_new(NULL, 0, 0, 0);
    config_topic_finish_load(f->ft);
    assert_int_equal(put(f, "feed", "a", "probe-1", 1), CONFIG_TOPIC_UPSERT);
    /* The admin's reconcile republishes identical records. */
    assert_int_equal(put(f, "feed", "a", "probe-1", 1), CONFIG_TOPIC_UNCHANGED);
    assert_int_equal(del(f, "feed", "zzz"), CONFIG_TOPIC_UNCHANGED);
    assert_int_equal(f->seen.n, 2);
    config_topic_stats_t s = config_topic_stats(f->ft);
    assert_int_equal(s.results[CONFIG_TOPIC_UNCHANGED], 2);
    assert_int_equal(s.keys, 1);
    fixture_free(f);
}

static void test_kinds_filter_skips_other_kinds_without_holding_them(void **state)
{
    const char *kinds[] = {"feed", "filter"};
    fixture_t *f = fixture_new(kinds, 2, 0, 0);
    assert_int_equal(put(f, "source", "s", "SCP", 1), CONFIG_TOPIC_IGNORED);
    assert_int_equal(put(f, "correlation", "c", "corr", 1), CONFIG_TOPIC_IGNORED);
    assert_int_equal(put(f, "filter", "f", "scp-only", 1), CONFIG_TOPIC_UPSERT);
    /* Ignored without parsing: even a broken record of another kind is just ignored. */
    const char *k = "source/x";
    assert_int_equal(config_topic_apply(f->ft, k, strlen(k), "not json", 8, 0, 9),
                     CONFIG_TOPIC_IGNORED);
    config_topic_finish_load(f->ft);
    assert_int_equal(f->seen.n, 2);
    assert_string_equal(f->seen.lines[0], "U filter/f scp-only -");
    assert_null(cttu_held(f->ft, "source", "s"));
    assert_non_null(cttu_held(f->ft, "filter", "f"));
    fixture_free(f);
}

static void test_max_keys_skips_new_keys_but_updates_held_ones(void **state)
{
    fixture_t *f = fixture_new(NULL, 0, 2, 0);
    config_topic_finish_load(f->ft);
    assert_int_equal(put(f, "feed", "a", "a", 1), CONFIG_TOPIC_UPSERT);
    assert_int_equal(put(f, "feed", "b", "b", 1), CONFIG_TOPIC_UPSERT);
    assert_int_equal(put(f, "feed", "c", "c", 1), CONFIG_TOPIC_MAX_KEYS);
    assert_int_equal(put(f, "feed", "a", "a2", 2), CONFIG_TOPIC_UPSERT);
    assert_null(cttu_held(f->ft, "feed", "c"));
    /* A delete frees a slot for the next new key. */
    assert_int_equal(del(f, "feed", "b"), CONFIG_TOPIC_DELETE);
    assert_int_equal(put(f, "feed", "c", "c", 1), CONFIG_TOPIC_UPSERT);
    config_topic_stats_t s = config_topic_stats(f->ft);
    assert_int_equal(s.results[CONFIG_TOPIC_MAX_KEYS], 1);
    assert_int_equal(s.keys, 2);
    fixture_free(f);
}

static void test_oversized_or_invalid_record_keeps_the_previous_version(void **state)
{
    fixture_t *f = fixture_new(NULL, 0, 0, 300);
    config_topic_finish_load(f->ft);
    assert_int_equal(put(f, "feed", "a", "probe-1", 1), CONFIG_TOPIC_UPSERT);
    char big[400];
    memset(big, ' ', sizeof(big));
    const char *k = "feed/a";
    assert_int_equal(config_topic_apply(f->ft, k, strlen(k), big, sizeof(big), 0, 7),
                     CONFIG_TOPIC_TOO_LARGE);
    const char *wrong = "{\"kind\":\"feed\",\"id\":\"other\",\"spec\":{}}";
    assert_int_equal(config_topic_apply(f->ft, k, strlen(k), wrong, strlen(wrong), 0, 8),
                     CONFIG_TOPIC_INVALID);
    assert_int_equal(config_topic_apply(f->ft, "nokey", 5, wrong, strlen(wrong), 0, 9),
                     CONFIG_TOPIC_INVALID);
    json_t *held = cttu_held(f->ft, "feed", "a");
    assert_non_null(held);
    assert_string_equal(name_of(held), "probe-1");
    assert_int_equal(f->seen.n, 2); /* L 0, U feed/a */

    /* Counted in the metric, by result. */
    buf_t out;
    assert_int_equal(buf_init(&out, 0, 1 << 20), 0);
    assert_int_equal(metrics_render(f->reg, &out), 0);
    assert_int_equal(buf_append_u8(&out, 0), 0);
    const char *text = (const char *)out.data;
    assert_non_null(strstr(
        text, "ndd_config_messages_read_total{topic=\"ndd.config.unit\",result=\"too_large\"} 1"));
    assert_non_null(strstr(
        text, "ndd_config_messages_read_total{topic=\"ndd.config.unit\",result=\"invalid\"} 2"));
    assert_non_null(strstr(text, "ndd_config_keys{topic=\"ndd.config.unit\"} 1"));
    assert_non_null(strstr(text, "ndd_config_loaded{topic=\"ndd.config.unit\"} 1"));
    buf_free(&out);
    fixture_free(f);
}

static int count_cb(void *arg, const char *kind, const char *id, json_t *rec)
{
    (*(int *)arg)++;
    return strcmp(id, "stop") == 0 ? 7 : 0;
}

static void test_foreach_visits_held_records_in_topic_order_and_stops_early(void **state)
{
    fixture_t *f = fixture_new(NULL, 0, 0, 0);
    put(f, "feed", "x", "x", 1);
    put(f, "feed", "stop", "s", 1);
    put(f, "feed", "y", "y", 1);
    int n = 0;
    assert_int_equal(config_topic_foreach(f->ft, count_cb, &n), 7);
    assert_int_equal(n, 2);
    fixture_free(f);
}

/* The follower's applied states as on_applied reported them. */
typedef struct applied {
    json_t *states[8];
    size_t n;
} applied_t;

static void on_applied(void *owner, json_t *state)
{
    applied_t *a = owner;
    assert_true(a->n < 8);
    a->states[a->n++] = json_deep_copy(state);
}

static void nop_upsert(void *owner, const char *kind, const char *id, json_t *rec, json_t *prev) {}

static config_topic_result_t put_at(config_topic_t *ft, const char *id, const char *name,
                                    int version, int64_t offset, int64_t ts_ms)
{
    char key[64];
    snprintf(key, sizeof(key), "feed/%s", id);
    char *v = record("feed", id, name, version);
    config_topic_result_t r =
        config_topic_apply_timed(ft, key, strlen(key), v, strlen(v), 0, offset, ts_ms);
    free(v);
    return r;
}

static void
test_live_changes_are_timed_once_marked_applied_and_reported_with_their_offsets(void **state)
{
    metrics_registry_t *reg = metrics_registry_new();
    applied_t seen = {0};
    static const char *const kinds[] = {"feed"};
    config_topic_opts_t o = {.topic = "ndd.config.unit",
                             .kinds = kinds,
                             .n_kinds = 1,
                             .on_upsert = nop_upsert,
                             .on_applied = on_applied,
                             .defer_applied = true,
                             .owner = &seen,
                             .metrics = reg};
    char err[256];
    config_topic_t *ft = config_topic_new(&o, err, sizeof(err));
    assert_non_null(ft);

    /* Before the load completes nothing is reported; the load itself is not timed. */
    assert_int_equal(put_at(ft, "a", "a", 1, 0, wall_now_ms() - 100000), CONFIG_TOPIC_UPSERT);
    config_topic_mark_applied(ft);
    assert_int_equal(seen.n, 0);
    config_topic_finish_load(ft);
    config_topic_mark_applied(ft);
    assert_int_equal(seen.n, 1);
    assert_int_equal(
        json_integer_value(json_array_get(json_object_get(seen.states[0], "offsets"), 0)), 1);
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(seen.states[0], "kinds"), 0)), "feed");
    assert_int_equal(config_topic_stats(ft).changes_applied, 0);

    /* Two live changes published 300 ms and 200 ms ago, then a record of another kind: all
     * wait for the owner's mark. */
    int64_t now = wall_now_ms();
    assert_int_equal(put_at(ft, "a", "a2", 2, 1, now - 300), CONFIG_TOPIC_UPSERT);
    char key[] = "feed/a";
    assert_int_equal(config_topic_apply_timed(ft, key, strlen(key), NULL, 0, 0, 2, now - 200),
                     CONFIG_TOPIC_DELETE);
    char *v = record("filter", "f", "f", 1);
    assert_int_equal(config_topic_apply_timed(ft, "filter/f", 8, v, strlen(v), 0, 3, now),
                     CONFIG_TOPIC_IGNORED);
    free(v);
    assert_int_equal(config_topic_stats(ft).changes_applied, 0);
    assert_int_equal(seen.n, 1);
    config_topic_mark_applied(ft);
    assert_int_equal(config_topic_stats(ft).changes_applied, 2);
    assert_int_equal(seen.n, 2);
    assert_int_equal(
        json_integer_value(json_array_get(json_object_get(seen.states[1], "offsets"), 0)), 4);
    assert_true(json_integer_value(json_object_get(seen.states[1], "applied_ms")) >= now);
    /* Nothing moved: no second report. */
    config_topic_mark_applied(ft);
    assert_int_equal(seen.n, 2);

    /* A change without a timestamp is applied but not timed. */
    assert_int_equal(put_at(ft, "b", "b", 1, 4, 0), CONFIG_TOPIC_UPSERT);
    config_topic_mark_applied(ft);
    assert_int_equal(config_topic_stats(ft).changes_applied, 2);
    assert_int_equal(config_topic_stats(ft).changes_untimed, 1);
    assert_int_equal(seen.n, 3);

    buf_t out;
    assert_int_equal(buf_init(&out, 4096, 1 << 20), 0);
    assert_int_equal(metrics_render(reg, &out), 0);
    buf_append(&out, "", 1);
    const char *text = (const char *)out.data;
    assert_non_null(strstr(
        text, "ndd_config_propagation_seconds_count{topic=\"ndd.config.unit\",kind=\"feed\"} 2"));
    /* 0.3 + 0.2 s, give or take the test's own run time. */
    const char *sum = strstr(
        text, "ndd_config_propagation_seconds_sum{topic=\"ndd.config.unit\",kind=\"feed\"} ");
    assert_non_null(sum);
    double secs = strtod(strchr(sum, '}') + 2, NULL);
    assert_true(secs >= 0.5 && secs < 5.0);
    buf_free(&out);
    for (size_t i = 0; i < seen.n; i++)
        json_decref(seen.states[i]);
    config_topic_free(ft);
    metrics_registry_free(reg);
}

int main(void)
{
    log_set_stream(fopen("/dev/null", "w"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_key_splits_kind_and_id),
        cmocka_unit_test(test_parse_key_rejects_keys_not_kind_slash_id),
        cmocka_unit_test(test_parse_record_accepts_the_admin_record_format),
        cmocka_unit_test(test_parse_record_rejects_mismatch_missing_spec_and_bad_json),
        cmocka_unit_test(test_initial_load_applies_only_the_last_version_of_each_key),
        cmocka_unit_test(test_live_records_call_upsert_and_delete_with_the_previous_record),
        cmocka_unit_test(test_unchanged_record_and_tombstone_of_unknown_key_call_nothing),
        cmocka_unit_test(test_kinds_filter_skips_other_kinds_without_holding_them),
        cmocka_unit_test(test_max_keys_skips_new_keys_but_updates_held_ones),
        cmocka_unit_test(test_oversized_or_invalid_record_keeps_the_previous_version),
        cmocka_unit_test(test_foreach_visits_held_records_in_topic_order_and_stops_early),
        cmocka_unit_test(
            test_live_changes_are_timed_once_marked_applied_and_reported_with_their_offsets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
