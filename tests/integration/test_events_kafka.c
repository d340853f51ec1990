/* The ndd.events publisher against the real broker (NDD_TEST_KAFKA): heartbeats and alarm
 * raise/clear land on the topic, in order, deduplicated, and each parses under the rules
 * of ndd-admin's consumer (admin/admin_events.c: admin_apply_heartbeat, admin_apply_alarm),
 * replicated in admin_accepts() below; when this test is linked with ndd_admin_core, the
 * admin's own parser checks them as well. A broker that does not answer never blocks the
 * caller: heartbeats are dropped (one in flight at most), alarm states are re-sent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "events.h"
#include "kafka_testutil.h"
#include "log.h"
#include "metrics.h"

#if __has_include("admin.h")
#include "admin.h"
#define HAVE_ADMIN 1
#endif

#define WAIT_MS 20000

/* The checks admin_events_apply makes before it accepts an event (admin/admin_events.c, read
 * 2026-11-30), plus the bounds of its buffers (service 64, instance 128 bytes). Returns NULL
 * when accepted, else why not. */
static const char *admin_accepts(const char *text, size_t len)
{
    json_t *j = json_loadb(text, len, 0, NULL);
    const char *why = NULL;
    const char *type = json_string_value(json_object_get(j, "type"));
    if (!j)
        why = "not JSON";
    else if (!type)
        why = "no type";
    else if (strcmp(type, "heartbeat") == 0) {
        const char *service = json_string_value(json_object_get(j, "service"));
        const char *instance = json_string_value(json_object_get(j, "instance"));
        json_t *counters = json_object_get(j, "counters");
        json_t *feeds = json_object_get(j, "feeds");
        if (!service || !*service || strlen(service) >= 64)
            why = "heartbeat service";
        else if (!instance || !*instance || strlen(instance) >= 128)
            why = "heartbeat instance";
        else if (json_integer_value(json_object_get(j, "interval_ms")) <= 0)
            why = "heartbeat interval_ms (the admin would assume 10 s)";
        else if (!json_is_object(counters) || !json_is_object(feeds))
            why = "heartbeat counters/feeds not objects";
        const char *k;
        json_t *v;
        json_object_foreach(counters, k, v)
        {
            if (!json_is_number(v))
                why = "a counter that is not a number";
        }
        json_t *f;
        json_object_foreach(feeds, k, f)
        {
            const char *url;
            json_t *st;
            json_object_foreach(json_object_get(f, "endpoints"), url, st)
            {
                const char *s = json_string_value(st);
                if (!s || (strcmp(s, "up") && strcmp(s, "down")))
                    why = "an endpoint state that is not up/down";
            }
        }
    } else if (strcmp(type, "alarm") == 0) {
        const char *action = json_string_value(json_object_get(j, "action"));
        const char *alarm = json_string_value(json_object_get(j, "alarm"));
        const char *resource = json_string_value(json_object_get(j, "resource"));
        json_t *sev = json_object_get(j, "severity");
        const char *s = json_string_value(sev);
        if (!action || (strcmp(action, "raise") && strcmp(action, "clear")))
            why = "alarm action";
        else if (!alarm || !*alarm || !resource || !*resource)
            why = "alarm or resource";
        else if (sev && (!s || (strcmp(s, "critical") && strcmp(s, "major") && strcmp(s, "minor") &&
                                strcmp(s, "warning"))))
            why = "alarm severity";
    } else {
        why = "unknown type";
    }
    json_decref(j);
    return why;
}

typedef struct owner {
    int calls;
    int64_t delivered;
} owner_t;

static void collect(void *arg, json_t *counters, json_t *feeds)
{
    owner_t *o = arg;
    o->calls++;
    o->delivered += 100;
    json_object_set_new(counters, "delivered_total", json_integer(o->delivered));
    json_object_set_new(counters, "dead_lettered_total", json_integer(0));
    json_t *f = events_feed(feeds, "probe-1");
    json_object_set_new(f, "delivered_total", json_integer(o->delivered));
    events_feed_endpoint(f, "http://127.0.0.1:9/x", false);
}

static events_t *publisher(const char *brokers, const char *topic, const char *instance,
                           int64_t interval_ms, bool own_thread, owner_t *o,
                           metrics_registry_t *reg, const kafka_prop_t *props, size_t n_props)
{
    events_opts_t opts = {.brokers = brokers,
                          .topic = topic,
                          .service = "ndd-test",
                          .instance = instance,
                          .version = "test",
                          .interval_ms = interval_ms,
                          .collect = collect,
                          .owner = o,
                          .own_thread = own_thread,
                          .props = props,
                          .n_props = n_props,
                          .metrics = reg};
    char err[256];
    events_t *ev = events_new(&opts, err, sizeof(err));
    if (!ev)
        fail_msg("events_new: %s", err);
    return ev;
}

static void test_heartbeats_and_alarms_reach_the_topic_in_order_as_admin_parses_them(void **state)
{
    char topic[96], instance[64];
    ktu_unique_name("ndd-events-test", topic, sizeof(topic));
    ktu_unique_name("inst", instance, sizeof(instance));
    assert_int_equal(ktu_create_topic(topic, 1), 0);
    metrics_registry_t *reg = metrics_registry_new();
    owner_t o = {0};
    events_t *ev = publisher(ktu_brokers(), topic, instance, 200, false, &o, reg, NULL, 0);

    /* Three heartbeats, ticking like a busy loop would. */
    int64_t deadline = ktu_now_ms() + WAIT_MS;
    int64_t worst_tick_us = 0;
    while (events_stats(ev).heartbeats_acked < 3 && ktu_now_ms() < deadline) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        events_tick(ev);
        clock_gettime(CLOCK_MONOTONIC, &b);
        int64_t us = (b.tv_sec - a.tv_sec) * 1000000 + (b.tv_nsec - a.tv_nsec) / 1000;
        if (us > worst_tick_us)
            worst_tick_us = us;
        ktu_sleep_ms(5);
    }
    assert_true(events_stats(ev).heartbeats_acked >= 3);
    print_message("slowest events_tick: %lld us\n", (long long)worst_tick_us);

    /* Alarm transitions; repeats send nothing. */
    assert_int_equal(events_alarm_raise(ev, "endpoint-down", "probe-1/http://127.0.0.1:9/x",
                                        EVENTS_MAJOR, "connect refused"),
                     0);
    assert_int_equal(events_alarm_raise(ev, "endpoint-down", "probe-1/http://127.0.0.1:9/x",
                                        EVENTS_MAJOR, "connect refused again"),
                     0);
    assert_int_equal(events_alarm_clear(ev, "endpoint-down", "probe-1/http://127.0.0.1:9/x"), 0);
    assert_int_equal(events_alarm_clear(ev, "endpoint-down", "probe-1/http://127.0.0.1:9/x"), 0);
    assert_int_equal(events_flush(ev, WAIT_MS), 0);
    events_stats_t st = events_stats(ev);
    assert_int_equal(st.alarms_sent, 2);
    assert_int_equal(st.alarms_acked, 2);
    uint64_t heartbeats = st.heartbeats_acked;
    events_free(ev, 5000);

    ktu_records_t recs = {0};
    size_t want = (size_t)heartbeats + 2;
    assert_int_equal(ktu_consume_records(topic, want, WAIT_MS, &recs), want);
    size_t n_hb = 0, n_alarm = 0;
    char expect_key[128];
    snprintf(expect_key, sizeof(expect_key), "ndd-test/%s", instance);
#ifdef HAVE_ADMIN
    char err[128];
    admin_events_t *admin = admin_events_new(NULL, topic, "unused", NULL, 0, err, sizeof(err));
    assert_non_null(admin);
#endif
    int64_t last_seq = 0;
    for (size_t i = 0; i < recs.n; i++) {
        ktu_record_t *r = &recs.v[i];
        const char *why = admin_accepts(r->value, r->value_len);
        if (why)
            fail_msg("record %zu (%.*s) would be refused by the admin: %s", i, (int)r->value_len,
                     r->value, why);
#ifdef HAVE_ADMIN
        assert_int_equal(admin_events_apply(admin, r->value, r->value_len, ktu_now_ms()), 0);
#endif
        assert_string_equal(r->key, expect_key);
        json_t *j = json_loadb(r->value, r->value_len, 0, NULL);
        const char *type = json_string_value(json_object_get(j, "type"));
        if (strcmp(type, "heartbeat") == 0) {
            n_hb++;
            int64_t seq = json_integer_value(json_object_get(j, "seq"));
            assert_true(seq > last_seq); /* in order */
            last_seq = seq;
            assert_int_equal(json_integer_value(json_object_get(j, "interval_ms")), 200);
        } else {
            const char *action = json_string_value(json_object_get(j, "action"));
            assert_string_equal(action, n_alarm == 0 ? "raise" : "clear");
            if (n_alarm == 0)
                assert_string_equal(json_string_value(json_object_get(j, "text")),
                                    "connect refused");
            n_alarm++;
        }
        json_decref(j);
    }
    assert_int_equal(n_hb, heartbeats);
    assert_int_equal(n_alarm, 2);
#ifdef HAVE_ADMIN
    json_t *status = admin_events_status(admin, ktu_now_ms());
    assert_int_equal(json_array_size(json_object_get(status, "workers")), 1);
    json_decref(status);
    admin_events_free(admin);
#endif
    ktu_records_free(&recs);
    metrics_registry_free(reg);
    ktu_delete_topic(topic);
}

static void test_own_thread_publishes_heartbeats_without_the_owner_ticking(void **state)
{
    char topic[96];
    ktu_unique_name("ndd-events-test-thr", topic, sizeof(topic));
    assert_int_equal(ktu_create_topic(topic, 1), 0);
    metrics_registry_t *reg = metrics_registry_new();
    owner_t o = {0};
    events_t *ev = publisher(ktu_brokers(), topic, "thr", 100, true, &o, reg, NULL, 0);
    int64_t deadline = ktu_now_ms() + WAIT_MS;
    while (events_stats(ev).heartbeats_acked < 3 && ktu_now_ms() < deadline)
        ktu_sleep_ms(20);
    assert_true(events_stats(ev).heartbeats_acked >= 3);
    /* Alarms from the owner's thread while the publisher's thread runs. */
    assert_int_equal(events_alarm_raise(ev, "x", "y", EVENTS_WARNING, "t"), 0);
    assert_int_equal(events_flush(ev, WAIT_MS), 0);
    events_free(ev, 5000);
    ktu_records_t recs = {0};
    assert_true(ktu_consume_records(topic, 4, WAIT_MS, &recs) >= 4);
    for (size_t i = 0; i < recs.n; i++)
        assert_null(admin_accepts(recs.v[i].value, recs.v[i].value_len));
    ktu_records_free(&recs);
    metrics_registry_free(reg);
    ktu_delete_topic(topic);
}

static void test_dead_broker_never_blocks_drops_heartbeats_and_resends_alarms(void **state)
{
    /* Nothing listens there (a port of this test's private range). */
    const char *dead = "127.0.0.1:22999";
    const kafka_prop_t props[] = {{"message.timeout.ms", "1000"},
                                  {"reconnect.backoff.max.ms", "200"}};
    metrics_registry_t *reg = metrics_registry_new();
    owner_t o = {0};
    events_t *ev = publisher(dead, "ndd.events", "dead", 50, false, &o, reg, props, 2);
    assert_int_equal(events_alarm_raise(ev, "a", "b", EVENTS_CRITICAL, "t"), 0);
    int64_t worst_us = 0, end = ktu_now_ms() + 10000;
    events_stats_t st = events_stats(ev);
    while ((st.alarms_failed < 2 || st.heartbeats_failed < 2) && ktu_now_ms() < end) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        events_tick(ev);
        events_alarm_raise(ev, "a", "b", EVENTS_CRITICAL, "t"); /* repeats: no-ops */
        clock_gettime(CLOCK_MONOTONIC, &b);
        int64_t us = (b.tv_sec - a.tv_sec) * 1000000 + (b.tv_nsec - a.tv_nsec) / 1000;
        if (us > worst_us)
            worst_us = us;
        ktu_sleep_ms(10);
        st = events_stats(ev);
    }
    print_message("dead broker: slowest tick %lld us, heartbeats sent %llu dropped %llu failed "
                  "%llu, alarm events sent %llu failed %llu\n",
                  (long long)worst_us, (unsigned long long)st.heartbeats_sent,
                  (unsigned long long)st.heartbeats_dropped,
                  (unsigned long long)st.heartbeats_failed, (unsigned long long)st.alarms_sent,
                  (unsigned long long)st.alarms_failed);
    assert_true(worst_us < 50000);
    assert_int_equal(st.heartbeats_acked, 0);
    /* One heartbeat in flight at a time: one due every 50 ms, only one sent after each
     * expiry; the others were dropped. */
    assert_true(st.heartbeats_failed >= 2);
    assert_true(st.heartbeats_sent <= st.heartbeats_failed + 1);
    assert_true(st.heartbeats_dropped > 10 * st.heartbeats_sent);
    /* The raise expired and was re-sent; the repeated raises added nothing. */
    assert_true(st.alarms_failed >= 2);
    assert_true(st.alarms_sent <= st.alarms_failed + 1);
    assert_true(events_alarm_active(ev, "a", "b"));
    assert_int_equal(events_flush(ev, 100), -1);
    events_free(ev, 0);
    metrics_registry_free(reg);
}

/* ndd's shared producer: three publishers (one freed and another attached in its place, as
 * ndd does when a role restarts) each get their own acknowledgements and their own key, and
 * the hub delivers every event of every publisher. */
static void test_publishers_sharing_one_producer_each_get_their_own_reports(void **state)
{
    (void)state;
    char topic[96];
    ktu_unique_name("ndd-events-hub", topic, sizeof(topic));
    assert_int_equal(ktu_create_topic(topic, 1), 0);
    metrics_registry_t *reg = metrics_registry_new();
    char err[256];
    events_hub_t *hub = events_hub_new(ktu_brokers(), NULL, 0, err, sizeof(err));
    if (!hub)
        fail_msg("events_hub_new: %s", err);
    owner_t o[3] = {{0}};
    events_t *ev[3];
    const char *inst[3] = {"role-a", "role-b", "role-c"};
    for (int i = 0; i < 2; i++) {
        events_opts_t opts = {.hub = hub,
                              .topic = topic,
                              .service = "ndd-test",
                              .instance = inst[i],
                              .interval_ms = 200,
                              .collect = collect,
                              .owner = &o[i],
                              .own_thread = true,
                              .metrics = reg};
        ev[i] = events_new(&opts, err, sizeof(err));
        if (!ev[i])
            fail_msg("events_new on the hub: %s", err);
    }
    assert_int_equal(events_alarm_raise(ev[0], "role-restarted", "a", EVENTS_MAJOR, "test"), 0);
    assert_int_equal(events_alarm_raise(ev[1], "role-restarted", "b", EVENTS_MINOR, "test"), 0);
    int64_t deadline = ktu_now_ms() + WAIT_MS;
    while ((events_stats(ev[0]).heartbeats_acked < 2 || events_stats(ev[1]).heartbeats_acked < 2) &&
           ktu_now_ms() < deadline)
        ktu_sleep_ms(20);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(events_flush(ev[i], WAIT_MS), 0);
        events_stats_t st = events_stats(ev[i]);
        assert_true(st.heartbeats_acked >= 2);
        assert_int_equal(st.alarms_acked, 1);
    }
    /* a role that stops: its publisher goes, another one comes on the same hub */
    uint64_t a_acked = events_stats(ev[0]).heartbeats_acked;
    events_free(ev[0], 5000);
    events_opts_t oc = {.hub = hub,
                        .topic = topic,
                        .service = "ndd-test",
                        .instance = inst[2],
                        .interval_ms = 200,
                        .collect = collect,
                        .owner = &o[2],
                        .own_thread = true,
                        .metrics = reg};
    ev[2] = events_new(&oc, err, sizeof(err));
    assert_non_null(ev[2]);
    deadline = ktu_now_ms() + WAIT_MS;
    while (events_stats(ev[2]).heartbeats_acked < 2 && ktu_now_ms() < deadline)
        ktu_sleep_ms(20);
    assert_true(events_stats(ev[2]).heartbeats_acked >= 2);
    uint64_t total = a_acked + 1;
    for (int i = 1; i < 3; i++) {
        assert_int_equal(events_flush(ev[i], WAIT_MS), 0);
        events_stats_t st = events_stats(ev[i]);
        total += st.heartbeats_acked + st.alarms_acked;
    }
    events_free(ev[1], 5000);
    events_free(ev[2], 5000);
    events_hub_free(hub, 5000);

    /* What was acknowledged is on the topic, each under its publisher's key. */
    ktu_records_t recs = {0};
    assert_true(ktu_consume_records(topic, (size_t)total, WAIT_MS, &recs) >= (size_t)total);
    size_t per_key[3] = {0};
    for (size_t i = 0; i < recs.n; i++) {
        assert_null(admin_accepts(recs.v[i].value, recs.v[i].value_len));
        for (int k = 0; k < 3; k++) {
            char key[64];
            snprintf(key, sizeof(key), "ndd-test/%s", inst[k]);
            if (recs.v[i].key && strcmp(recs.v[i].key, key) == 0)
                per_key[k]++;
        }
    }
    for (int k = 0; k < 3; k++)
        assert_true(per_key[k] >= 2);
    assert_int_equal(per_key[0] + per_key[1] + per_key[2], recs.n);
    ktu_records_free(&recs);
    metrics_registry_free(reg);
}

int main(void)
{
    ktu_brokers(); /* fails (not skips) without NDD_TEST_KAFKA */
    log_setup("test_events_kafka", LOG_LEVEL_OFF, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_heartbeats_and_alarms_reach_the_topic_in_order_as_admin_parses_them),
        cmocka_unit_test(test_own_thread_publishes_heartbeats_without_the_owner_ticking),
        cmocka_unit_test(test_dead_broker_never_blocks_drops_heartbeats_and_resends_alarms),
        cmocka_unit_test(test_publishers_sharing_one_producer_each_get_their_own_reports),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
