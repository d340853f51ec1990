/* ndd-aggregation on the control path, the daemon as a child process on the real broker:
 * filter records written to a private ndd.config-like topic change the worker's filtering
 * live without loss (applied before it says ready, replaced, a broken one refused with a
 * config-rejected alarm, deleted); heartbeats with its counters and alarms appear on a private
 * events topic; a produce refusal raises main-produce-failing and its end clears it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <cmocka.h>

#include <jansson.h>

#include "agg_testutil.h"
#include "kafka_testutil.h"

#define PHASE 400

typedef struct ctl_env {
    agg_env_t e;
    char cfg_topic[128], ev_topic[128], instance[128];
    char a_cfg[200], a_ev[200], a_inst[200];
} ctl_env_t;

static void ctl_init(ctl_env_t *c, const char *tag)
{
    assert_int_equal(agg_env_init(&c->e, tag, 2, 2), 0);
    ktu_unique_name("ndd.config-agg", c->cfg_topic, sizeof(c->cfg_topic));
    ktu_unique_name("ndd.events-agg", c->ev_topic, sizeof(c->ev_topic));
    ktu_unique_name("agg", c->instance, sizeof(c->instance));
    const char *compact[] = {"cleanup.policy=compact"};
    assert_int_equal(ktu_create_topic_cfg(c->cfg_topic, 1, compact, 1), 0);
    assert_int_equal(ktu_create_topic(c->ev_topic, 1), 0);
    snprintf(c->a_cfg, sizeof(c->a_cfg), "--config-topic=%s", c->cfg_topic);
    snprintf(c->a_ev, sizeof(c->a_ev), "--events-topic=%s", c->ev_topic);
    snprintf(c->a_inst, sizeof(c->a_inst), "--instance=%s", c->instance);
}

static void ctl_cleanup(ctl_env_t *c)
{
    ktu_delete_topic(c->cfg_topic);
    ktu_delete_topic(c->ev_topic);
    agg_env_cleanup(&c->e);
}

/* Waits for needle in the daemon's log; on failure prints the log's end (the reason). */
static void wait_log(const agg_env_t *e, const char *needle, int timeout_ms)
{
    if (agg_log_wait(e, 0, needle, timeout_ms))
        return;
    FILE *f = fopen(e->log_path[0], "r");
    char line[1024];
    fprintf(stderr, "--- daemon log %s:\n", e->log_path[0]);
    while (f && fgets(line, sizeof(line), f))
        if (!strstr(line, " debug "))
            fputs(line, stderr);
    if (f)
        fclose(f);
    fail_msg("\"%s\" not in the daemon's log after %d ms", needle, timeout_ms);
}

/* The admin's record for a filter dropping copies whose x-kind is `kind` (kind NULL: a
 * definition the engine refuses). value NULL: a tombstone. */
static void put_filter(rd_kafka_t *p, const char *topic, const char *id, const char *name,
                       int version, const char *kind)
{
    char key[160], value[1024];
    snprintf(key, sizeof(key), "filter/%s", id);
    if (kind)
        snprintf(value, sizeof(value),
                 "{\"kind\": \"filter\", \"id\": \"%s\", \"name\": \"%s\", \"version\": %d, "
                 "\"updated_at\": \"2026-11-30T07:00:00Z\", \"spec\": {\"name\": \"%s\", "
                 "\"default\": \"allow\", \"rules\": [{\"name\": \"drop-%s\", \"action\": "
                 "\"drop\", \"match\": {\"field\": \"x-kind\", \"op\": \"equals\", \"value\": "
                 "\"%s\"}}]}}",
                 id, name, version, name, kind, kind);
    else
        snprintf(value, sizeof(value),
                 "{\"kind\": \"filter\", \"id\": \"%s\", \"name\": \"%s\", \"version\": %d, "
                 "\"spec\": {\"name\": \"%s\", \"default\": \"allow\", \"rules\": [{\"name\": "
                 "\"r\", \"action\": \"drop\", \"match\": {\"field\": \"x-kind\", \"op\": "
                 "\"equal\", \"value\": \"a\"}}]}}",
                 id, name, version, name);
    assert_int_equal(ktu_produce(p, topic, 0, key, strlen(key), version < 0 ? NULL : value,
                                 version < 0 ? 0 : strlen(value), NULL, 0),
                     0);
    assert_int_equal(ktu_flush(p, 10000), 0);
}

/* Copies [first, first+n) that reached MAIN, each at most once; kinds seen. */
static void check_phase(const ktu_records_t *r, uint64_t first, size_t n, const char *kept,
                        size_t want, unsigned char *seen)
{
    size_t got = 0;
    for (size_t i = 0; i < r->n; i++) {
        const char *s = ktu_record_header(&r->v[i], "@seq", NULL);
        uint64_t seq = s ? strtoull(s, NULL, 10) : UINT64_MAX;
        if (seq < first || seq >= first + n)
            continue;
        const char *kind = ktu_record_header(&r->v[i], "x-kind", NULL);
        if (kept && strcmp(kind, kept) != 0)
            fail_msg("copy %llu of kind %s passed a filter that keeps only %s",
                     (unsigned long long)seq, kind, kept);
        if (seen[seq])
            fail_msg("copy %llu reached MAIN twice", (unsigned long long)seq);
        seen[seq] = 1;
        got++;
    }
    if (got != want)
        fail_msg("copies %llu..%llu: %zu on MAIN, expected %zu", (unsigned long long)first,
                 (unsigned long long)(first + n - 1), got, want);
}

/* ---- reading the events topic ---- */

typedef struct ev_scan {
    const char *instance;
    json_int_t want_consumed; /* the newest heartbeat with consumed_total >= this */
    bool heartbeat_ok;
    json_int_t hb_consumed, hb_filtered, hb_dead;
    const char *alarm; /* count raise/clear events of this alarm */
    int raises, clears;
    bool clear_after_raise; /* the last event of it is a clear that follows a raise */
    char raise_text[512];
} ev_scan_t;

static bool ev_scan_cb(void *owner, const rd_kafka_message_t *m)
{
    ev_scan_t *s = owner;
    json_t *j = json_loadb(m->payload, m->len, 0, NULL);
    if (!j)
        fail_msg("event at offset %lld is not JSON", (long long)m->offset);
    const char *type = json_string_value(json_object_get(j, "type"));
    const char *inst = json_string_value(json_object_get(j, "instance"));
    assert_string_equal(json_string_value(json_object_get(j, "service")), "ndd-aggregation");
    assert_string_equal(inst, s->instance);
    char key[300];
    snprintf(key, sizeof(key), "ndd-aggregation/%s", s->instance);
    assert_int_equal(m->key_len, strlen(key));
    assert_memory_equal(m->key, key, m->key_len);
    if (strcmp(type, "heartbeat") == 0) {
        json_t *c = json_object_get(j, "counters");
        json_int_t consumed = json_integer_value(json_object_get(c, "consumed_total"));
        assert_non_null(json_object_get(c, "dead_lettered_total"));
        /* what runs, for the admin's /status "aggregation" */
        json_t *info = json_object_get(j, "info");
        assert_string_equal(json_string_value(json_object_get(info, "nf_type")), "SCP");
        assert_non_null(json_string_value(json_object_get(info, "topic")));
        assert_non_null(json_string_value(json_object_get(info, "filter")));
        /* The newest such heartbeat: a copy is counted as consumed when read and as
         * dead-lettered when the DLQ acknowledged it, so an early heartbeat may show the
         * first without the second. */
        if (consumed >= s->want_consumed) {
            s->heartbeat_ok = true;
            s->hb_consumed = consumed;
            s->hb_filtered = json_integer_value(json_object_get(c, "filtered_total"));
            s->hb_dead = json_integer_value(json_object_get(c, "dead_lettered_total"));
        }
    } else if (strcmp(type, "alarm") == 0 && s->alarm &&
               strcmp(json_string_value(json_object_get(j, "alarm")), s->alarm) == 0) {
        const char *action = json_string_value(json_object_get(j, "action"));
        if (strcmp(action, "raise") == 0) {
            s->raises++;
            s->clear_after_raise = false;
            snprintf(s->raise_text, sizeof(s->raise_text), "%s",
                     json_string_value(json_object_get(j, "text")));
        } else {
            s->clears++;
            s->clear_after_raise = s->raises > 0;
        }
    }
    json_decref(j);
    return true;
}

static void ev_scan(const char *topic, ev_scan_t *s)
{
    int64_t n = ktu_topic_record_count(topic, 5000);
    assert_true(n >= 0);
    s->heartbeat_ok = false;
    s->raises = s->clears = 0;
    s->clear_after_raise = false;
    ktu_consume(topic, (size_t)n, 10000, ev_scan_cb, s);
}

/* Waits until the events topic satisfies done(s) (rescanning), up to timeout_ms. */
static bool ev_wait(const char *topic, ev_scan_t *s, bool (*done)(const ev_scan_t *),
                    int timeout_ms)
{
    for (int waited = 0; waited <= timeout_ms; waited += 250) {
        ev_scan(topic, s);
        if (done(s))
            return true;
        struct timespec ts = {0, 250 * 1000000};
        nanosleep(&ts, NULL);
    }
    return false;
}

static bool ev_has_heartbeat(const ev_scan_t *s)
{
    return s->heartbeat_ok;
}
static bool ev_has_raise(const ev_scan_t *s)
{
    return s->raises > 0;
}
static bool ev_has_clear(const ev_scan_t *s)
{
    return s->clear_after_raise;
}

/* ---- tests ---- */

static void test_config_topic_filter_changes_filtering_live_without_loss(void **state)
{
    (void)state;
    ctl_env_t c;
    ctl_init(&c, "aggctl");
    agg_env_t *e = &c.e;
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    /* Version 1 is on the topic before the worker starts: applied before it consumes. Noise
     * around it: a filter of another name and an unrelated kind. */
    put_filter(p, c.cfg_topic, "id-other", "other-filter", 1, "b");
    put_filter(p, c.cfg_topic, "id-1", "ingress-SCP", 1, "a");
    const char *feed = "{\"kind\":\"feed\",\"id\":\"f1\",\"spec\":{}}";
    assert_int_equal(ktu_produce(p, c.cfg_topic, 0, "feed/f1", 7, feed, strlen(feed), NULL, 0), 0);
    assert_int_equal(agg_produce_copies(p, e->in, 0, PHASE, 20, 100), 0);

    const char *extra[] = {c.a_cfg, c.a_ev, c.a_inst, "--heartbeat-interval=300ms", NULL};
    assert_true(agg_start(e, 0, extra) > 0);
    wait_log(e, "ingress filter \"ingress-SCP\" version 1 applied", 20000);
    /* Phase 1 under version 1 (drops kind a): produced before the start, so nothing was
     * consumed before the filter was in place. */
    assert_int_equal(agg_wait_count(e->main, PHASE / 2, 30000), PHASE / 2);

    /* Phase 2 under version 2 (drops kind b), changed on the topic while running. */
    put_filter(p, c.cfg_topic, "id-1", "ingress-SCP", 2, "b");
    wait_log(e, "ingress filter \"ingress-SCP\" version 2 applied", 10000);
    assert_int_equal(agg_produce_copies(p, e->in, PHASE, PHASE, 20, 100), 0);
    assert_int_equal(agg_wait_count(e->main, PHASE, 30000), PHASE);

    /* A version the engine refuses: version 2 stays, config-rejected is raised. */
    put_filter(p, c.cfg_topic, "id-1", "ingress-SCP", 3, NULL);
    wait_log(e, "version 3 refused, the running filter stays", 10000);
    assert_int_equal(agg_produce_copies(p, e->in, 2 * PHASE, PHASE, 20, 100), 0);
    assert_int_equal(agg_wait_count(e->main, 3 * PHASE / 2, 30000), 3 * PHASE / 2);
    ev_scan_t s = {.instance = c.instance, .alarm = "config-rejected"};
    assert_true(ev_wait(c.ev_topic, &s, ev_has_raise, 15000));
    assert_non_null(strstr(s.raise_text, "unknown operator"));

    /* Deleted: no filter any more, everything passes; the rejection is over (cleared). */
    put_filter(p, c.cfg_topic, "id-1", "ingress-SCP", -1, NULL);
    wait_log(e, "no ingress filter in the configuration any more", 10000);
    assert_int_equal(agg_produce_copies(p, e->in, 3 * PHASE, PHASE, 20, 100), 0);
    assert_int_equal(agg_wait_count(e->main, 5 * PHASE / 2, 30000), 5 * PHASE / 2);
    assert_true(ev_wait(c.ev_topic, &s, ev_has_clear, 15000));
    assert_int_equal(s.raises, 1);

    ktu_records_t r = {0};
    assert_int_equal(ktu_consume_records(e->main, 5 * PHASE / 2, 20000, &r), 5 * PHASE / 2);
    static unsigned char seen[4 * PHASE];
    memset(seen, 0, sizeof(seen));
    check_phase(&r, 0, PHASE, "b", PHASE / 2, seen);
    check_phase(&r, PHASE, PHASE, "a", PHASE / 2, seen);
    check_phase(&r, 2 * PHASE, PHASE, "a", PHASE / 2, seen);
    check_phase(&r, 3 * PHASE, PHASE, NULL, PHASE, seen);
    ktu_records_free(&r);

    /* A heartbeat carries the counters of everything consumed. */
    s = (ev_scan_t){.instance = c.instance, .want_consumed = 4 * PHASE};
    assert_true(ev_wait(c.ev_topic, &s, ev_has_heartbeat, 15000));
    assert_int_equal(s.hb_consumed, 4 * PHASE);
    assert_int_equal(s.hb_filtered, 3 * PHASE / 2);
    assert_int_equal(s.hb_dead, 0);

    assert_true(agg_stop_clean(e, 0));
    /* Filtered copies count as done: every input offset is committed, nothing extra. */
    assert_int_equal(agg_committed_sum(e->group, e->in, 2), 4 * PHASE);
    assert_int_equal(ktu_topic_record_count(e->main, 5000), 5 * PHASE / 2);
    rd_kafka_destroy(p);
    ctl_cleanup(&c);
}

/* A source naming its ingress filter (the proposed `ingress_filter` field) wins over the
 * default name; --filter-file wins over ndd.config altogether. */
static void test_source_ingress_filter_and_filter_file_precedence(void **state)
{
    (void)state;
    ctl_env_t c;
    ctl_init(&c, "aggsrc");
    agg_env_t *e = &c.e;
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    put_filter(p, c.cfg_topic, "id-def", "ingress-SCP", 1, "a");   /* the default name */
    put_filter(p, c.cfg_topic, "id-named", "scp-special", 4, "b"); /* named by the source */
    char src[512];
    snprintf(src, sizeof(src),
             "{\"kind\": \"source\", \"id\": \"s1\", \"name\": \"scp-in\", \"version\": 1, "
             "\"spec\": {\"name\": \"scp-in\", \"type\": \"SCP\", \"topic\": \"%s\", "
             "\"ingress_filter\": \"scp-special\"}}",
             e->in);
    assert_int_equal(ktu_produce(p, c.cfg_topic, 0, "source/s1", 9, src, strlen(src), NULL, 0), 0);
    assert_int_equal(ktu_flush(p, 10000), 0);
    assert_int_equal(agg_produce_copies(p, e->in, 0, PHASE, 20, 100), 0);

    const char *extra[] = {c.a_cfg, c.a_ev, c.a_inst, NULL};
    assert_true(agg_start(e, 0, extra) > 0);
    wait_log(e, "filter \"scp-special\" version 4 (named by source \"scp-in\")", 20000);
    assert_int_equal(agg_wait_count(e->main, PHASE / 2, 30000), PHASE / 2);
    assert_true(agg_stop_clean(e, 0));
    ktu_records_t r = {0};
    assert_int_equal(ktu_consume_records(e->main, PHASE / 2, 20000, &r), PHASE / 2);
    static unsigned char seen[2 * PHASE];
    memset(seen, 0, sizeof(seen));
    check_phase(&r, 0, PHASE, "a", PHASE / 2, seen); /* scp-special drops b */
    ktu_records_free(&r);

    /* Restarted with a filter file (drops a, keeps b): the file wins. */
    char path[400];
    snprintf(path, sizeof(path), "%s/f.json", e->dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"name\": \"file-f\", \"default\": \"allow\", \"rules\": [{\"name\": \"d\", "
          "\"action\": \"drop\", \"match\": {\"field\": \"x-kind\", \"op\": \"equals\", "
          "\"value\": \"a\"}}]}",
          f);
    assert_int_equal(fclose(f), 0);
    char farg[420];
    snprintf(farg, sizeof(farg), "--filter-file=%s", path);
    const char *extra2[] = {c.a_cfg, c.a_ev, c.a_inst, farg, NULL};
    assert_true(agg_start(e, 0, extra2) > 0);
    wait_log(e, "--filter-file is set: ingress filters from the", 20000);
    assert_int_equal(agg_produce_copies(p, e->in, PHASE, PHASE, 20, 100), 0);
    assert_int_equal(agg_wait_count(e->main, PHASE, 30000), PHASE);
    assert_true(agg_stop_clean(e, 0));
    assert_int_equal(ktu_consume_records(e->main, PHASE, 20000, &r), PHASE);
    memset(seen, 0, sizeof(seen));
    check_phase(&r, 0, PHASE, "a", PHASE / 2, seen);
    check_phase(&r, PHASE, PHASE, "b", PHASE / 2, seen);
    ktu_records_free(&r);
    rd_kafka_destroy(p);
    ctl_cleanup(&c);
}

/* Records MAIN refuses (over the producer's record limit) go to the DLQ and raise
 * main-produce-failing; once refusals stop for --produce-alarm-after it is cleared. The
 * heartbeat's dead_lettered_total counts them (the admin's dead-letter-surge input). */
static void test_produce_refusals_raise_and_then_clear_main_produce_failing(void **state)
{
    (void)state;
    ctl_env_t c;
    ctl_init(&c, "aggalarm");
    agg_env_t *e = &c.e;
    const char *extra[] = {c.a_cfg,
                           c.a_ev,
                           c.a_inst,
                           "--heartbeat-interval=300ms",
                           "--produce-alarm-after=1500ms",
                           "--kafka.producer.message.max.bytes=3000",
                           NULL};
    assert_true(agg_start(e, 0, extra) > 0);
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    /* Bodies of 5,000 bytes: valid copies, too large for this producer's MAIN records. */
    assert_int_equal(agg_produce_copies(p, e->in, 0, 5, 5, 5000), 0);
    assert_int_equal(agg_wait_count(e->dlq, 5, 30000), 5);
    ev_scan_t s = {.instance = c.instance, .alarm = "main-produce-failing"};
    assert_true(ev_wait(c.ev_topic, &s, ev_has_raise, 15000));
    assert_non_null(strstr(s.raise_text, "produce refusals"));
    assert_true(ev_wait(c.ev_topic, &s, ev_has_clear, 15000));
    s.want_consumed = 5;
    assert_true(ev_wait(c.ev_topic, &s, ev_has_heartbeat, 15000));
    assert_int_equal(s.hb_dead, 5);
    assert_true(agg_stop_clean(e, 0));
    assert_int_equal(agg_committed_sum(e->group, e->in, 2), 5);
    rd_kafka_destroy(p);
    ctl_cleanup(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_topic_filter_changes_filtering_live_without_loss),
        cmocka_unit_test(test_source_ingress_filter_and_filter_file_precedence),
        cmocka_unit_test(test_produce_refusals_raise_and_then_clear_main_produce_failing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
