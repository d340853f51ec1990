/* ndd-correlation on the control path, the daemon as a child process on the real broker with
 * its own configuration and events topics: the correlation record found at start is applied
 * before /readyz says ready, a new version of the record changes the timeout live (open
 * transactions then time out after the new timeout, not the old one), and the heartbeats on
 * the events topic carry the worker's counters in the format the admin's consumer
 * (admin/admin_events.c) accepts. Needs NDD_TEST_KAFKA. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <sys/types.h>

#include <cmocka.h>
#include <jansson.h>

#include "codec.h"
#include "corr_testutil.h"
#include "http_testutil.h"
#include "kafka_testutil.h"
#ifdef NDD_HAVE_ADMIN
#include "admin.h"
#endif

#define TS0 1764486000000000LL

static const codec_trigger_t ORDER_PROXY[] = {CODEC_TRIGGER_RX_REQUEST, CODEC_TRIGGER_TX_REQUEST,
                                              CODEC_TRIGGER_RX_RESPONSE, CODEC_TRIGGER_TX_RESPONSE};

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Publishes the admin's record for correlation settings `spec` (admin_config_record shape)
 * under key "correlation/<id>" and waits for the acknowledgement. */
static void publish_correlation(const corr_env_t *e, const char *id, int version,
                                const char *spec_json)
{
    json_error_t je;
    json_t *spec = json_loads(spec_json, 0, &je);
    assert_non_null(spec);
    json_t *rec = json_pack("{s:s, s:s, s:s, s:i, s:s, s:o}", "kind", "correlation", "id", id,
                            "name", json_string_value(json_object_get(spec, "name")), "version",
                            version, "updated_at", "2026-11-30T08:00:00.000000Z", "spec", spec);
    assert_non_null(rec);
    char *value = json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS);
    char key[160];
    snprintf(key, sizeof(key), "correlation/%s", id);
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    assert_int_equal(ktu_produce(p, e->config, 0, key, strlen(key), value, strlen(value), NULL, 0),
                     0);
    assert_int_equal(ktu_flush(p, 15000), 0);
    rd_kafka_destroy(p);
    free(value);
    json_decref(rec);
}

/* The events topic from its beginning up to its end now (the daemon keeps writing to it, so
 * "until nothing new comes" would never end). */
static void read_events(const corr_env_t *e, ktu_records_t *out)
{
    int64_t n = ktu_topic_record_count(e->events, 5000);
    if (n > 0)
        ktu_consume_records(e->events, (size_t)n, 5000, out);
}

/* The last heartbeat of the events topic, read from its beginning (new reference, NULL when
 * none). *n_records gets how many records the topic held. */
static json_t *last_heartbeat(const corr_env_t *e, size_t *n_records)
{
    ktu_records_t recs = {0};
    read_events(e, &recs);
    json_t *last = NULL;
    for (size_t i = 0; i < recs.n; i++) {
        json_t *j = json_loadb(recs.v[i].value, recs.v[i].value_len, 0, NULL);
        const char *type = json_string_value(json_object_get(j, "type"));
        if (type && strcmp(type, "heartbeat") == 0) {
            json_decref(last);
            last = j;
        } else {
            json_decref(j);
        }
    }
    if (n_records)
        *n_records = recs.n;
    ktu_records_free(&recs);
    return last;
}

static json_int_t counter(json_t *hb, const char *name)
{
    json_t *v = json_object_get(json_object_get(hb, "counters"), name);
    return json_is_integer(v) ? json_integer_value(v) : -1;
}

/* Waits until a heartbeat shows counter `name` == want; fails with the last value seen. */
static void wait_counter(const corr_env_t *e, const char *name, json_int_t want, int timeout_ms)
{
    int64_t end = ktu_now_ms() + timeout_ms;
    json_int_t seen = -1;
    do {
        json_t *hb = last_heartbeat(e, NULL);
        seen = hb ? counter(hb, name) : -1;
        json_decref(hb);
        if (seen == want)
            return;
    } while (ktu_now_ms() < end);
    fail_msg("heartbeat counter %s: %lld after %d ms, want %lld", name, (long long)seen, timeout_ms,
             (long long)want);
}

static void test_record_timeout_applies_at_start_and_changes_live(void **state)
{
    (void)state;
    enum { N_BEFORE = 15, N_AFTER = 15 };
    static corr_env_t e;
    corr_test_env = &e;
    assert_int_equal(corr_env_init(&e, "corrctl", 2), 0);
    assert_int_equal(corr_env_control(&e), 0);
    char id[64];
    snprintf(id, sizeof(id), "c-%s", e.main + strlen(e.main) - 8);
    /* At start: 60 s, over the command line's 20 s. */
    publish_correlation(&e, id, 1, "{\"name\":\"corr-main\",\"timeout_ms\":60000}");
    const char *extra[] = {"--timeout=20s", "--heartbeat-interval=300ms", NULL};
    assert_true(corr_start(&e, extra) > 0);
    uint16_t port = corr_http_port(&e, 20000);
    assert_true(port > 0);
    /* Ready only after the initial load, so the first heartbeat after ready shows 60 s. */
    int64_t end = ktu_now_ms() + 30000;
    htu_resp_t r = {0};
    while (ktu_now_ms() < end) {
        htu_resp_free(&r);
        memset(&r, 0, sizeof(r));
        if (htu_request(port, "GET", "/readyz", NULL, NULL, 0, 2000, &r) == 0 && r.status == 200)
            break;
        ktu_sleep_ms(50);
    }
    assert_int_equal(r.status, 200);
    htu_resp_free(&r);
    wait_counter(&e, "timeout_ms", 60000, 10000);
    assert_true(corr_log_wait(&e, "kafka consumer assigned", 20000));

    /* Transactions missing their tx-response stay open under the 60 s timeout. */
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    char tid[160];
    for (long i = 0; i < N_BEFORE; i++) {
        snprintf(tid, sizeof(tid), "ctl-%s-before-%ld", id, i);
        assert_int_equal(
            corr_produce_txn(p, e.main, tid, "SCP", TS0 + i * 1000, ORDER_PROXY, 3, 200), 0);
    }
    assert_int_equal(ktu_flush(p, 30000), 0);
    wait_counter(&e, "open_transactions", N_BEFORE, 20000);
    ktu_sleep_ms(1500); /* longer than the new timeout: nothing may expire under the old one */
    assert_int_equal(ktu_topic_record_count(e.xdr, 10000), 0);

    /* Live change to 1 s: the open ones are older than that, they go now. */
    int64_t changed_at = wall_ms();
    publish_correlation(&e, id, 2, "{\"name\":\"corr-main\",\"timeout_ms\":1000}");
    corr_xdrs_t xs = {0};
    corr_read_xdrs(e.xdr, N_BEFORE, 15000, &xs);
    assert_int_equal(xs.n, N_BEFORE);
    for (size_t k = 0; k < xs.n; k++) {
        const corr_xdr_t *x = &xs.v[k];
        if (strcmp(x->completion, "timeout") != 0 ||
            x->missing != (1u << CODEC_TRIGGER_TX_RESPONSE))
            fail_msg("%s: completion %s missing %#x, want timeout without tx-response", x->id,
                     x->completion, x->missing);
        if (x->create_ms < changed_at - 50 || x->create_ms > changed_at + 12000)
            fail_msg("%s: written %lld ms after the change to 1 s", x->id,
                     (long long)(x->create_ms - changed_at));
    }
    int64_t latest = 0;
    for (size_t k = 0; k < xs.n; k++)
        if (xs.v[k].create_ms - changed_at > latest)
            latest = xs.v[k].create_ms - changed_at;
    print_message("timeout 60 s -> 1 s: the %d open transactions were written within %lld ms of "
                  "the record's publication\n",
                  N_BEFORE, (long long)latest);
    corr_xdrs_free(&xs);
    wait_counter(&e, "timeout_ms", 1000, 10000);

    /* New transactions: incomplete xDRs after 1 s, long before the 20 s or 60 s. */
    int64_t produced_at = wall_ms();
    for (long i = 0; i < N_AFTER; i++) {
        snprintf(tid, sizeof(tid), "ctl-%s-after-%ld", id, i);
        assert_int_equal(
            corr_produce_txn(p, e.main, tid, "SCP", TS0 + i * 1000, ORDER_PROXY, 3, 200), 0);
    }
    assert_int_equal(ktu_flush(p, 30000), 0);
    rd_kafka_destroy(p);
    corr_read_xdrs(e.xdr, N_BEFORE + N_AFTER, 20000, &xs);
    assert_int_equal(xs.n, N_BEFORE + N_AFTER);
    size_t after = 0;
    for (size_t k = 0; k < xs.n; k++) {
        const corr_xdr_t *x = &xs.v[k];
        if (!strstr(x->id, "-after-"))
            continue;
        after++;
        assert_string_equal(x->completion, "timeout");
        int64_t dt = x->create_ms - produced_at;
        if (dt < 1000 || dt > 15000)
            fail_msg("%s: timeout xDR written %lld ms after the copies (timeout 1 s)", x->id,
                     (long long)dt);
    }
    assert_int_equal(after, N_AFTER);
    corr_xdrs_free(&xs);

    /* A tombstone brings the start value (--timeout=20s) back. */
    rd_kafka_t *t = ktu_producer_new(NULL, 0);
    char key[160];
    snprintf(key, sizeof(key), "correlation/%s", id);
    assert_int_equal(ktu_produce(t, e.config, 0, key, strlen(key), NULL, 0, NULL, 0), 0);
    assert_int_equal(ktu_flush(t, 15000), 0);
    rd_kafka_destroy(t);
    wait_counter(&e, "timeout_ms", 20000, 10000);
    corr_env_cleanup(&e);
    corr_test_env = NULL;
}

static void test_heartbeats_carry_counters_in_the_admin_format(void **state)
{
    (void)state;
    enum { N = 25 };
    static corr_env_t e;
    corr_test_env = &e;
    assert_int_equal(corr_env_init(&e, "corrhb", 2), 0);
    assert_int_equal(corr_env_control(&e), 0);
    char instance[64], inst_arg[96];
    snprintf(instance, sizeof(instance), "corr-%s", e.main + strlen(e.main) - 8);
    snprintf(inst_arg, sizeof(inst_arg), "--instance=%s", instance);
    const char *extra[] = {"--heartbeat-interval=300ms", inst_arg, NULL};
    assert_true(corr_start(&e, extra) > 0);
    assert_true(corr_log_wait(&e, "kafka consumer assigned", 20000));
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    char tid[160];
    for (long i = 0; i < N; i++) {
        snprintf(tid, sizeof(tid), "hb-%s-%ld", instance, i);
        assert_int_equal(
            corr_produce_txn(p, e.main, tid, "SCP", TS0 + i * 1000, ORDER_PROXY, 4, 200), 0);
    }
    assert_int_equal(ktu_flush(p, 30000), 0);
    rd_kafka_destroy(p);
    wait_counter(&e, "delivered_total", N, 20000);

    ktu_records_t recs = {0};
    read_events(&e, &recs);
    assert_true(recs.n >= 2);
    char want_key[160];
    snprintf(want_key, sizeof(want_key), "ndd-correlation/%s", instance);
#ifdef NDD_HAVE_ADMIN
    char err[128];
    admin_events_t *admin = admin_events_new(NULL, e.events, "unused", NULL, 0, err, sizeof(err));
    assert_non_null(admin);
#endif
    json_int_t last_seq = 0;
    size_t n_hb = 0;
    for (size_t i = 0; i < recs.n; i++) {
        ktu_record_t *rec = &recs.v[i];
        assert_non_null(rec->key);
        assert_string_equal(rec->key, want_key);
#ifdef NDD_HAVE_ADMIN
        if (admin_events_apply(admin, rec->value, rec->value_len, ktu_now_ms()) != 0)
            fail_msg("record %zu refused by the admin's parser: %.*s", i, (int)rec->value_len,
                     rec->value);
#endif
        json_t *j = json_loadb(rec->value, rec->value_len, JSON_REJECT_DUPLICATES, NULL);
        assert_non_null(j);
        if (strcmp(json_string_value(json_object_get(j, "type")), "heartbeat") == 0) {
            n_hb++;
            assert_string_equal(json_string_value(json_object_get(j, "service")),
                                "ndd-correlation");
            assert_string_equal(json_string_value(json_object_get(j, "instance")), instance);
            assert_int_equal(json_integer_value(json_object_get(j, "interval_ms")), 300);
            json_int_t seq = json_integer_value(json_object_get(j, "seq"));
            assert_true(seq > last_seq);
            last_seq = seq;
            json_t *c = json_object_get(j, "counters");
            assert_true(json_is_object(c));
            /* The admin's dead-letter-surge input is exactly this name. */
            assert_true(json_is_integer(json_object_get(c, "dead_lettered_total")));
        }
        json_decref(j);
    }
    assert_true(n_hb >= 2);
    json_t *hb = last_heartbeat(&e, NULL);
    assert_non_null(hb);
    assert_int_equal(counter(hb, "consumed_total"), 4 * N);
    assert_int_equal(counter(hb, "complete_total"), N);
    assert_int_equal(counter(hb, "delivered_total"), N);
    assert_int_equal(counter(hb, "dead_lettered_total"), 0);
    assert_int_equal(counter(hb, "open_transactions"), 0);
    assert_int_equal(counter(hb, "timeout_ms"), 5000); /* no record: the start value */
    json_decref(hb);
#ifdef NDD_HAVE_ADMIN
    json_t *status = admin_events_status(admin, ktu_now_ms());
    char *dump = json_dumps(status, JSON_COMPACT);
    assert_non_null(strstr(dump, instance));
    free(dump);
    /* what runs, from the heartbeats' "info" and counters: /status "correlation" */
    json_t *cs = json_array_get(json_object_get(status, "correlation"), 0);
    assert_string_equal(json_string_value(json_object_get(cs, "instance")), instance);
    assert_string_equal(json_string_value(json_object_get(cs, "source_topic")), e.main);
    assert_string_equal(json_string_value(json_object_get(cs, "xdr_topic")), e.xdr);
    assert_int_equal(json_integer_value(json_object_get(cs, "timeout_ms")), 5000);
    assert_int_equal(json_integer_value(json_object_get(cs, "open")), 0);
    assert_int_equal(json_integer_value(json_object_get(cs, "xdrs_total")), N);
    /* the delivery mode in effect, from the worker's heartbeat (exactly-once is off by default) */
    assert_string_equal(json_string_value(json_object_get(cs, "kafka_mode")), "at-least-once");
    json_decref(status);
    admin_events_free(admin);
#endif
    ktu_records_free(&recs);
    corr_env_cleanup(&e);
    corr_test_env = NULL;
}

/* True when the events topic holds an alarm event action/alarm/resource. */
static bool has_alarm(const corr_env_t *e, const char *action, const char *alarm,
                      const char *resource)
{
    ktu_records_t recs = {0};
    read_events(e, &recs);
    bool found = false;
    for (size_t i = 0; i < recs.n && !found; i++) {
        json_t *j = json_loadb(recs.v[i].value, recs.v[i].value_len, 0, NULL);
        const char *a = json_string_value(json_object_get(j, "action"));
        const char *n = json_string_value(json_object_get(j, "alarm"));
        const char *r = json_string_value(json_object_get(j, "resource"));
        found = a && n && r && strcmp(a, action) == 0 && strcmp(n, alarm) == 0 &&
                strcmp(r, resource) == 0;
        json_decref(j);
    }
    ktu_records_free(&recs);
    return found;
}

static void test_disabled_record_holds_consumption_until_enabled(void **state)
{
    (void)state;
    static corr_env_t e;
    corr_test_env = &e;
    assert_int_equal(corr_env_init(&e, "corren", 1), 0);
    assert_int_equal(corr_env_control(&e), 0);
    char instance[64], inst_arg[96], res[160];
    snprintf(instance, sizeof(instance), "corr-%s", e.main + strlen(e.main) - 8);
    snprintf(inst_arg, sizeof(inst_arg), "--instance=%s", instance);
    snprintf(res, sizeof(res), "correlation/%s", instance);
    publish_correlation(&e, "en-1", 1, "{\"name\":\"corr-en\",\"enabled\":false}");
    const char *extra[] = {"--heartbeat-interval=300ms", inst_arg, NULL};
    assert_true(corr_start(&e, extra) > 0);
    assert_true(corr_log_wait(&e, "disabled by record", 20000));
    uint16_t port = corr_http_port(&e, 10000);
    assert_true(port > 0);
    htu_resp_t r = {0};
    assert_int_equal(htu_request(port, "GET", "/readyz", NULL, NULL, 0, 2000, &r), 0);
    assert_int_equal(r.status, 503);
    htu_resp_free(&r);
    /* Alive while disabled: heartbeats flow, nothing is consumed. */
    json_t *hb = NULL;
    for (int64_t end = ktu_now_ms() + 10000; !hb && ktu_now_ms() < end;)
        hb = last_heartbeat(&e, NULL);
    assert_non_null(hb);
    assert_int_equal(counter(hb, "consumed_total"), 0);
    json_decref(hb);
    assert_false(corr_log_wait(&e, "kafka consumer assigned", 500));

    publish_correlation(&e, "en-1", 2, "{\"name\":\"corr-en\",\"enabled\":true}");
    assert_true(corr_log_wait(&e, "kafka consumer assigned", 20000));
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    char tid[160];
    snprintf(tid, sizeof(tid), "en-%s", instance);
    assert_int_equal(corr_produce_txn(p, e.main, tid, "SCP", TS0, ORDER_PROXY, 4, 200), 0);
    assert_int_equal(ktu_flush(p, 30000), 0);
    rd_kafka_destroy(p);
    wait_counter(&e, "delivered_total", 1, 20000);

    /* A restart-only change is reported, and cleared when the record is back. */
    publish_correlation(&e, "en-1", 3,
                        "{\"name\":\"corr-en\",\"enabled\":true,\"max_open_per_partition\":7}");
    int64_t end = ktu_now_ms() + 10000;
    while (!has_alarm(&e, "raise", "config-restart-required", res) && ktu_now_ms() < end)
        ktu_sleep_ms(100);
    assert_true(has_alarm(&e, "raise", "config-restart-required", res));
    publish_correlation(&e, "en-1", 4, "{\"name\":\"corr-en\",\"enabled\":true}");
    end = ktu_now_ms() + 10000;
    /* The clear sent at start is first: look for one after the raise. */
    size_t clears = 0;
    while (ktu_now_ms() < end) {
        ktu_records_t recs = {0};
        read_events(&e, &recs);
        bool raised = false;
        clears = 0;
        for (size_t i = 0; i < recs.n; i++) {
            json_t *j = json_loadb(recs.v[i].value, recs.v[i].value_len, 0, NULL);
            const char *a = json_string_value(json_object_get(j, "action"));
            const char *n = json_string_value(json_object_get(j, "alarm"));
            if (a && n && strcmp(n, "config-restart-required") == 0) {
                if (strcmp(a, "raise") == 0)
                    raised = true;
                else if (raised)
                    clears++;
            }
            json_decref(j);
        }
        ktu_records_free(&recs);
        if (clears)
            break;
        ktu_sleep_ms(100);
    }
    assert_int_equal(clears, 1);
    corr_env_cleanup(&e);
    corr_test_env = NULL;
}

static char g_small[128]; /* the refusing XDR topic of the test below, deleted by its teardown */

static int teardown_small(void **state)
{
    if (g_small[0])
        ktu_delete_topic(g_small);
    g_small[0] = '\0';
    return corr_test_teardown(state);
}

static void test_xdr_refused_by_the_broker_raises_the_produce_alarm(void **state)
{
    (void)state;
    static corr_env_t e;
    corr_test_env = &e;
    assert_int_equal(corr_env_init(&e, "corrfail", 1), 0);
    assert_int_equal(corr_env_control(&e), 0);
    /* An XDR topic whose records may not exceed 64 bytes (an xDR is several hundred), named
     * by the correlation record only: the record's xdr_topic is applied at start. */
    snprintf(g_small, sizeof(g_small), "%.80s.small", e.main);
    static const char *const small_cfg[] = {"max.message.bytes=64"};
    assert_int_equal(ktu_create_topic_cfg(g_small, 1, small_cfg, 1), 0);
    char spec[300], instance[64], inst_arg[96];
    snprintf(spec, sizeof(spec), "{\"name\":\"corr-small\",\"xdr_topic\":\"%s\"}", g_small);
    publish_correlation(&e, "small-1", 1, spec);
    snprintf(instance, sizeof(instance), "corr-%s", e.main + strlen(e.main) - 8);
    snprintf(inst_arg, sizeof(inst_arg), "--instance=%s", instance);
    const char *extra[] = {"--heartbeat-interval=300ms", inst_arg, NULL};
    pid_t pid = corr_start(&e, extra);
    assert_true(pid > 0);
    assert_true(corr_log_wait(&e, "kafka consumer assigned", 20000));
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    char tid[160];
    snprintf(tid, sizeof(tid), "fail-%s", instance);
    assert_int_equal(corr_produce_txn(p, e.main, tid, "SCP", TS0, ORDER_PROXY, 4, 200), 0);
    assert_int_equal(ktu_flush(p, 30000), 0);
    rd_kafka_destroy(p);

    /* The worker stops on the refusal (nothing more is committed) and says why on ndd.events. */
    int status = 0;
    int64_t end = ktu_now_ms() + 30000;
    while (ktu_alive(pid, &status) && ktu_now_ms() < end)
        ktu_sleep_ms(50);
    assert_false(ktu_alive(pid, &status));
    e.pid = 0;
    char want_res[300];
    snprintf(want_res, sizeof(want_res), "%s/%s", instance, g_small);
    ktu_records_t recs = {0};
    read_events(&e, &recs);
    bool raised = false;
    for (size_t i = 0; i < recs.n && !raised; i++) {
        json_t *j = json_loadb(recs.v[i].value, recs.v[i].value_len, 0, NULL);
        const char *type = json_string_value(json_object_get(j, "type"));
        const char *action = json_string_value(json_object_get(j, "action"));
        const char *alarm = json_string_value(json_object_get(j, "alarm"));
        const char *res = json_string_value(json_object_get(j, "resource"));
        const char *sev = json_string_value(json_object_get(j, "severity"));
        raised = type && strcmp(type, "alarm") == 0 && action && strcmp(action, "raise") == 0 &&
                 alarm && strcmp(alarm, "xdr-produce-failing") == 0 && res &&
                 strcmp(res, want_res) == 0 && sev && strcmp(sev, "critical") == 0;
        json_decref(j);
    }
    if (!raised)
        fail_msg("no critical xdr-produce-failing raise on %s among %zu events", want_res, recs.n);
    ktu_records_free(&recs);
    assert_int_equal(ktu_topic_record_count(g_small, 5000), 0);
    teardown_small(NULL);
}

int main(void)
{
    (void)ktu_brokers(); /* fails with a clear message when NDD_TEST_KAFKA is unset */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_record_timeout_applies_at_start_and_changes_live,
                                  corr_test_teardown),
        cmocka_unit_test_teardown(test_heartbeats_carry_counters_in_the_admin_format,
                                  corr_test_teardown),
        cmocka_unit_test_teardown(test_xdr_refused_by_the_broker_raises_the_produce_alarm,
                                  teardown_small),
        cmocka_unit_test_teardown(test_disabled_record_holds_consumption_until_enabled,
                                  corr_test_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
