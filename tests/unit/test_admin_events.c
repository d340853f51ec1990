/* ndd.events handling without Kafka or PostgreSQL: heartbeats into per-worker and per-feed
 * status, rates from counter deltas, missing heartbeats into "down", dead-letter surges,
 * refusal of records that are not events, and the propagation of configuration changes
 * (published records against the offsets workers report applied). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "admin.h"
#include "log.h"

static admin_events_t *events_new(int64_t down_after_ms)
{
    char err[128];
    admin_events_t *ev =
        admin_events_new(NULL, "ndd.events", "g", NULL, down_after_ms, err, sizeof(err));
    assert_non_null(ev);
    return ev;
}

static void apply(admin_events_t *ev, const char *json, int64_t now)
{
    assert_int_equal(admin_events_apply(ev, json, strlen(json), now), 0);
}

static json_t *worker(json_t *status, const char *instance)
{
    size_t i;
    json_t *w;
    json_array_foreach(json_object_get(status, "workers"), i, w)
    {
        if (strcmp(json_string_value(json_object_get(w, "instance")), instance) == 0)
            return w;
    }
    fail_msg("worker %s not in status", instance);
    return NULL;
}

static void test_missing_heartbeats_mark_worker_down_and_next_heartbeat_up(void **state)
{
    admin_events_t *ev = events_new(0);
    apply(ev,
          "{\"type\":\"heartbeat\",\"service\":\"ndd-adapter\",\"instance\":\"a\","
          "\"interval_ms\":1000}",
          10000);
    admin_events_check(ev, 12900); /* within three intervals */
    json_t *st = admin_events_status(ev, 12900);
    assert_string_equal(json_string_value(json_object_get(worker(st, "a"), "state")), "up");
    json_decref(st);
    admin_events_check(ev, 13100);
    st = admin_events_status(ev, 13100);
    assert_string_equal(json_string_value(json_object_get(worker(st, "a"), "state")), "down");
    json_decref(st);
    apply(ev,
          "{\"type\":\"heartbeat\",\"service\":\"ndd-adapter\",\"instance\":\"a\","
          "\"interval_ms\":1000}",
          14000);
    st = admin_events_status(ev, 14000);
    assert_string_equal(json_string_value(json_object_get(worker(st, "a"), "state")), "up");
    json_decref(st);
    admin_events_free(ev);
}

static void test_rates_and_dead_letter_surge_from_counter_deltas(void **state)
{
    admin_events_t *ev = events_new(60000);
    apply(ev,
          "{\"type\":\"heartbeat\",\"service\":\"agg\",\"instance\":\"b\",\"counters\":{"
          "\"dead_lettered_total\":0,\"produced_total\":1000}}",
          1000);
    apply(ev,
          "{\"type\":\"heartbeat\",\"service\":\"agg\",\"instance\":\"b\",\"counters\":{"
          "\"dead_lettered_total\":50,\"produced_total\":3000}}",
          3000);
    json_t *st = admin_events_status(ev, 3000);
    json_t *w = worker(st, "b");
    json_t *rates = json_object_get(w, "rates_per_s");
    assert_float_equal(json_number_value(json_object_get(rates, "produced_total")), 1000.0, 0.01);
    assert_float_equal(json_number_value(json_object_get(rates, "dead_lettered_total")), 25.0,
                       0.01);
    assert_true(json_is_true(json_object_get(w, "dead_letter_surge")));
    json_decref(st);
    /* 2 per second: below half the threshold, the surge clears */
    apply(ev,
          "{\"type\":\"heartbeat\",\"service\":\"agg\",\"instance\":\"b\",\"counters\":{"
          "\"dead_lettered_total\":54,\"produced_total\":5000}}",
          5000);
    st = admin_events_status(ev, 5000);
    assert_true(json_is_false(json_object_get(worker(st, "b"), "dead_letter_surge")));
    json_decref(st);
    admin_events_free(ev);
}

static void test_feed_status_sums_workers_and_flags_down_endpoints(void **state)
{
    admin_events_t *ev = events_new(60000);
    apply(ev,
          "{\"type\":\"heartbeat\",\"service\":\"ndd-adapter\",\"instance\":\"a1\",\"feeds\":{"
          "\"f1\":{\"lag\":3,\"delivered_total\":10,\"endpoints\":{\"http://e:1\":\"up\"}}}}",
          1000);
    apply(ev,
          "{\"type\":\"heartbeat\",\"service\":\"ndd-adapter\",\"instance\":\"a2\",\"feeds\":{"
          "\"f1\":{\"lag\":4,\"delivered_total\":5,\"endpoints\":{\"http://e:2\":\"down\"}}}}",
          1000);
    json_t *st = admin_events_status(ev, 1000);
    json_t *f = json_array_get(json_object_get(st, "feeds"), 0);
    assert_non_null(f);
    assert_string_equal(json_string_value(json_object_get(f, "name")), "f1");
    assert_int_equal(json_integer_value(json_object_get(f, "workers")), 2);
    assert_int_equal(json_integer_value(json_object_get(f, "lag")), 7);
    assert_int_equal(json_integer_value(json_object_get(f, "delivered_total")), 15);
    assert_int_equal(json_integer_value(json_object_get(f, "endpoints_down")), 1);
    assert_string_equal(json_string_value(json_object_get(f, "health")), "degraded");
    json_decref(st);
    admin_events_free(ev);
}

static void test_records_that_are_not_events_are_counted_as_rejected(void **state)
{
    admin_events_t *ev = events_new(0);
    static const char *const bad[] = {
        "not json",
        "[]",
        "{\"type\":\"heartbeat\"}",
        "{\"type\":\"heartbeat\",\"service\":\"\",\"instance\":\"x\"}",
        "{\"type\":\"alarm\",\"action\":\"raise\",\"alarm\":\"x\"}",
        "{\"type\":\"alarm\",\"action\":\"explode\",\"alarm\":\"x\",\"resource\":\"r\"}",
        /* parenthesized: clang takes a split literal in an array for a missing comma */
        ("{\"type\":\"alarm\",\"action\":\"raise\",\"alarm\":\"x\",\"resource\":\"r\","
         "\"severity\":\"apocalyptic\"}"),
        "{\"type\":\"gossip\"}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        assert_int_equal(admin_events_apply(ev, bad[i], strlen(bad[i]), 1000), -1);
    json_t *st = admin_events_status(ev, 1000);
    assert_int_equal(json_integer_value(json_object_get(st, "events_rejected")),
                     (json_int_t)(sizeof(bad) / sizeof(*bad)));
    assert_int_equal(json_array_size(json_object_get(st, "workers")), 0);
    json_decref(st);
    admin_events_free(ev);
}

/* The change of key in the status's "config" part. */
static json_t *change(json_t *status, const char *key)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(status, "config"), "changes"), i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "key")), key) == 0)
            return c;
    }
    fail_msg("change %s not in status", key);
    return NULL;
}

static json_t *prop_status(admin_events_t *ev)
{
    json_t *st = json_object();
    json_object_set_new(st, "config", admin_prop_status(admin_events_prop(ev), 10));
    return st;
}

static void config_event(admin_events_t *ev, const char *instance, const char *kinds, int next,
                         int64_t applied_ms)
{
    char j[512];
    snprintf(j, sizeof(j),
             "{\"type\":\"config\",\"service\":\"ndd-adapter\",\"instance\":\"%s\","
             "\"ts_ms\":1,\"config\":{\"topic\":\"ndd.config\",\"kinds\":%s,\"offsets\":[%d],"
             "\"applied_ms\":%lld}}",
             instance, kinds, next, (long long)applied_ms);
    apply(ev, j, applied_ms);
}

static void test_config_change_completes_when_every_follower_of_its_kind_applied_it(void **state)
{
    admin_events_t *ev = events_new(0);
    admin_prop_t *p = admin_events_prop(ev);
    /* Two adapters follow feeds (one learnt from its heartbeat), one worker filters only. */
    apply(ev,
          "{\"type\":\"heartbeat\",\"service\":\"ndd-adapter\",\"instance\":\"a\","
          "\"interval_ms\":1000,\"config\":{\"topic\":\"ndd.config\",\"kinds\":[\"feed\"],"
          "\"offsets\":[5],\"applied_ms\":1000}}",
          1000);
    apply(ev,
          "{\"type\":\"heartbeat\",\"service\":\"ndd-adapter\",\"instance\":\"b\","
          "\"interval_ms\":1000}",
          1000);
    config_event(ev, "b", "[\"feed\"]", 5, 1000);
    config_event(ev, "f", "[\"filter\",\"source\"]", 5, 1000);

    admin_prop_published(p, "feed/x", 6, 3, 0, 5, 2000);
    json_t *st = prop_status(ev);
    json_t *c = change(st, "feed/x");
    assert_int_equal(json_integer_value(json_object_get(c, "applied_by")), 0);
    assert_int_equal(json_integer_value(json_object_get(c, "workers")), 2);
    assert_int_equal(json_integer_value(json_object_get(c, "version")), 3);
    assert_true(json_is_null(json_object_get(c, "propagation_ms")));
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(st, "config"), "changes_pending")), 1);
    json_decref(st);

    config_event(ev, "a", "[\"feed\"]", 6, 2040);
    config_event(ev, "f", "[\"filter\",\"source\"]", 6, 2010); /* not a follower of feeds */
    st = prop_status(ev);
    assert_int_equal(json_integer_value(json_object_get(change(st, "feed/x"), "applied_by")), 1);
    json_decref(st);
    /* The last follower's apply time makes the propagation; a later report changes nothing. */
    config_event(ev, "b", "[\"feed\"]", 6, 2090);
    config_event(ev, "a", "[\"feed\"]", 6, 2500);
    st = prop_status(ev);
    c = change(st, "feed/x");
    assert_int_equal(json_integer_value(json_object_get(c, "applied_by")), 2);
    assert_int_equal(json_integer_value(json_object_get(c, "propagation_ms")), 90);
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_object_get(st, "config"), "followers"), "feed")),
                     2);
    json_decref(st);

    /* A tombstone that adapter a applies while b stops heartbeating: once b is down it is not
     * waited for. A worker may report before the delivery report reaches the admin. */
    config_event(ev, "a", "[\"feed\"]", 7, 3030);
    admin_prop_published(p, "feed/x", 6, 0, 0, 6, 3000);
    st = prop_status(ev);
    c = json_array_get(json_object_get(json_object_get(st, "config"), "changes"), 0);
    assert_true(json_is_true(json_object_get(c, "deleted")));
    assert_true(json_is_null(json_object_get(c, "propagation_ms")));
    json_decref(st);
    apply(ev,
          "{\"type\":\"heartbeat\",\"service\":\"ndd-adapter\",\"instance\":\"a\","
          "\"interval_ms\":1000}",
          3500);
    admin_events_check(ev, 1000 + 3001); /* b's last heartbeat: 1000, interval 1000 */
    st = prop_status(ev);
    c = json_array_get(json_object_get(json_object_get(st, "config"), "changes"), 0);
    assert_int_equal(json_integer_value(json_object_get(c, "propagation_ms")), 30);
    assert_int_equal(json_integer_value(json_object_get(c, "workers")), 1);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(st, "config"), "changes_pending")), 0);
    json_decref(st);
    admin_events_free(ev);
}

int main(void)
{
    log_setup("test_admin_events", LOG_LEVEL_ERROR, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_heartbeats_mark_worker_down_and_next_heartbeat_up),
        cmocka_unit_test(test_rates_and_dead_letter_surge_from_counter_deltas),
        cmocka_unit_test(test_feed_status_sums_workers_and_flags_down_endpoints),
        cmocka_unit_test(test_records_that_are_not_events_are_counted_as_rejected),
        cmocka_unit_test(test_config_change_completes_when_every_follower_of_its_kind_applied_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
