/* A feed's live health in the admin: the lag trend over its window, the "falling behind"
 * verdict and its hysteresis (raised once while the lag grows, cleared once when it stops or
 * drains, no flapping on noise), and what GET /api/v1/status shows per feed (rate, lag, trend,
 * latency, kafka_mode, origin, instances) and per aggregation and correlation worker, from
 * heartbeats applied without Kafka or PostgreSQL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "admin.h"
#include "admin_feed_health.h"
#include "log.h"

static const admin_lag_policy_t policy = {.window_ms = 30000, .floor = 1000};

/* Feeds t one sample a second from t0 for n seconds, lag = base + slope * s; counts changes. */
static void feed_line(admin_lag_trend_t *t, int64_t t0, int n, double base, double slope,
                      double rate, int *raises, int *clears)
{
    for (int s = 0; s < n; s++) {
        admin_lag_add(t, &policy, t0 + s * 1000, base + slope * s);
        admin_lag_change_t c = admin_lag_judge(t, &policy, rate);
        *raises += c == ADMIN_LAG_RAISE;
        *clears += c == ADMIN_LAG_CLEAR;
    }
}

static void test_slope_of_a_growing_lag_is_its_rate(void **state)
{
    (void)state;
    admin_lag_trend_t t = {0};
    for (int s = 0; s <= 30; s++)
        admin_lag_add(&t, &policy, 1000000 + s * 1000, 500 + 200.0 * s);
    double slope;
    int64_t span;
    assert_int_equal(admin_lag_slope(&t, &policy, &slope, &span), 31);
    assert_true(slope > 199.9 && slope < 200.1);
    assert_int_equal(span, 30000);
    assert_true(admin_lag_last(&t) == 6500);
}

static void test_slope_uses_only_the_window(void **state)
{
    (void)state;
    admin_lag_trend_t t = {0};
    /* 40 s of growth, then 40 s flat: the window (30 s) sees only the flat part. */
    for (int s = 0; s < 40; s++)
        admin_lag_add(&t, &policy, s * 1000, 100.0 * s);
    for (int s = 40; s < 80; s++)
        admin_lag_add(&t, &policy, s * 1000, 4000);
    double slope;
    int64_t span;
    admin_lag_slope(&t, &policy, &slope, &span);
    assert_true(slope == 0);
    assert_true(span <= 30000);
}

static void test_samples_closer_than_a_32nd_of_the_window_replace_the_newest(void **state)
{
    (void)state;
    admin_lag_trend_t t = {0};
    admin_lag_add(&t, &policy, 0, 10);
    admin_lag_add(&t, &policy, 200, 20); /* 30000/32 = 937 ms: replaces */
    assert_int_equal(t.n, 1);
    assert_true(admin_lag_last(&t) == 20);
    admin_lag_add(&t, &policy, 1200, 30);
    assert_int_equal(t.n, 2);
    /* bounded: a long run never holds more than the ring */
    for (int s = 0; s < 1000; s++)
        admin_lag_add(&t, &policy, 2000 + s * 1000, s);
    assert_int_equal(t.n, ADMIN_LAG_SAMPLES);
}

static void test_growing_lag_raises_once_then_drain_clears_once(void **state)
{
    (void)state;
    admin_lag_trend_t t = {0};
    int raises = 0, clears = 0;
    feed_line(&t, 0, 20, 0, 0, 200, &raises, &clears);     /* healthy: lag 0 */
    feed_line(&t, 20000, 40, 0, 200, 0, &raises, &clears); /* stalled: +200/s */
    assert_int_equal(raises, 1);
    assert_int_equal(clears, 0);
    assert_true(t.behind);
    feed_line(&t, 60000, 10, 8000, -800, 1000, &raises, &clears); /* draining */
    feed_line(&t, 70000, 60, 0, 0, 200, &raises, &clears);        /* healthy again */
    assert_int_equal(raises, 1);
    assert_int_equal(clears, 1);
    assert_false(t.behind);
}

static void test_raise_waits_for_half_a_window_of_growth(void **state)
{
    (void)state;
    admin_lag_trend_t t = {0};
    int raises = 0, clears = 0;
    /* 10 s of steep growth from nothing: not yet half of the 30 s window covered */
    feed_line(&t, 0, 10, 0, 1000, 0, &raises, &clears);
    assert_int_equal(raises, 0);
    feed_line(&t, 10000, 10, 10000, 1000, 0, &raises, &clears);
    assert_int_equal(raises, 1);
}

static void test_lag_under_the_floor_is_never_falling_behind(void **state)
{
    (void)state;
    admin_lag_trend_t t = {0};
    int raises = 0, clears = 0;
    feed_line(&t, 0, 60, 0, 15, 0, &raises, &clears); /* grows to 885 < 1000 */
    assert_int_equal(raises, 0);
    /* the floor is also 5 s of the rate: 4000 of lag at 1000/s is in flight, not behind */
    admin_lag_trend_t u = {0};
    feed_line(&u, 0, 60, 1000, 50, 1000, &raises, &clears);
    assert_int_equal(raises, 0);
}

static void test_noisy_lag_around_a_level_does_not_flap(void **state)
{
    (void)state;
    admin_lag_trend_t t = {0};
    int raises = 0, clears = 0;
    feed_line(&t, 0, 30, 0, 200, 0, &raises, &clears); /* behind: raised */
    assert_int_equal(raises, 1);
    /* then the lag stays at its level with noise of +-300: the stop of growth clears once,
     * and the noise raises nothing again */
    for (int s = 30; s < 150; s++) {
        double noise = (s % 2 ? 300 : -300) + (s % 7) * 10;
        admin_lag_add(&t, &policy, s * 1000, 6000 + noise);
        admin_lag_change_t c = admin_lag_judge(&t, &policy, 0);
        raises += c == ADMIN_LAG_RAISE;
        clears += c == ADMIN_LAG_CLEAR;
    }
    assert_int_equal(raises, 1);
    assert_int_equal(clears, 1);
}

static void test_table_expires_silent_feeds_and_reports_those_behind(void **state)
{
    (void)state;
    admin_feed_health_t *fh = admin_feed_health_new();
    bool created;
    admin_lag_trend_t *a = admin_feed_health_get(fh, "a", 0, 1000, &created);
    assert_true(created);
    a->behind = true;
    admin_feed_health_get(fh, "b", 0, 1000, &created);
    admin_feed_health_get(fh, "c", 0, 1000, &created);
    assert_non_null(admin_feed_health_get(fh, "c", 2500, 1000, &created));
    assert_false(created);
    json_t *cleared = json_array();
    admin_feed_health_expire(fh, 3500, cleared); /* a and b: 3.5 s > 3 intervals */
    assert_int_equal(json_array_size(cleared), 1);
    assert_string_equal(json_string_value(json_array_get(cleared, 0)), "a");
    assert_null(admin_feed_health_find(fh, "a"));
    assert_null(admin_feed_health_find(fh, "b"));
    assert_non_null(admin_feed_health_find(fh, "c"));
    json_decref(cleared);
    admin_feed_health_free(fh);
}

/* ---- through admin_events: what /status shows ---- */

static admin_events_t *events_new(void)
{
    char err[128];
    admin_events_t *ev = admin_events_new(NULL, "ndd.events", "g", NULL, 0, err, sizeof(err));
    assert_non_null(ev);
    admin_events_set_lag_policy(ev, 10000, 1000);
    return ev;
}

static void heartbeat(admin_events_t *ev, const char *instance, const char *feed,
                      long long delivered, long long lag, const char *extra, int64_t now)
{
    char j[1024];
    snprintf(j, sizeof(j),
             "{\"type\":\"heartbeat\",\"service\":\"ndd-adapter\",\"instance\":\"%s\","
             "\"interval_ms\":1000,\"counters\":{},\"feeds\":{\"%s\":{\"delivered_total\":%lld,"
             "\"lag\":%lld,\"in_flight\":3,\"origin\":\"admin\"%s,\"endpoints\":"
             "{\"http://x/\":\"up\"}}}}",
             instance, feed, delivered, lag, extra);
    assert_int_equal(admin_events_apply(ev, j, strlen(j), now), 0);
}

static json_t *status_feed(admin_events_t *ev, const char *name, int64_t now)
{
    json_t *st = admin_events_status(ev, now);
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(st, "feeds"), i, f)
    {
        if (strcmp(json_string_value(json_object_get(f, "name")), name) == 0) {
            json_incref(f);
            json_decref(st);
            return f;
        }
    }
    fail_msg("feed %s not in status", name);
    return NULL;
}

static void test_status_feed_shows_rate_lag_trend_strings_and_latency(void **state)
{
    (void)state;
    admin_events_t *ev = events_new();
    const char *kx = ",\"kafka_mode\":\"exactly-once\",\"latency_ms\":{\"p50\":2,\"p99\":8,"
                     "\"count\":100}";
    heartbeat(ev, "a1", "k", 1000, 10, kx, 100000);
    heartbeat(ev, "a2", "k", 0, 5, ",\"latency_ms\":{\"p50\":4,\"p99\":20,\"count\":100}", 100000);
    heartbeat(ev, "a1", "k", 1500, 20, kx, 101000);
    json_t *f = status_feed(ev, "k", 101000);
    assert_string_equal(json_string_value(json_object_get(f, "kafka_mode")), "exactly-once");
    assert_string_equal(json_string_value(json_object_get(f, "origin")), "admin");
    assert_int_equal(json_integer_value(json_object_get(f, "workers")), 2);
    assert_int_equal(json_array_size(json_object_get(f, "instances")), 2);
    assert_int_equal(json_integer_value(json_object_get(f, "delivered_total")), 1500);
    assert_int_equal(json_integer_value(json_object_get(f, "lag")), 25);
    assert_true(json_real_value(json_object_get(f, "rate_per_s")) == 500.0);
    assert_non_null(json_object_get(f, "lag_trend_per_s"));
    json_t *l = json_object_get(f, "latency_ms");
    assert_true(json_real_value(json_object_get(l, "p50")) == 3.0);  /* weighted by count */
    assert_true(json_real_value(json_object_get(l, "p99")) == 20.0); /* the highest */
    assert_string_equal(json_string_value(json_object_get(f, "health")), "ok");
    json_decref(f);
    admin_events_free(ev);
}

static void test_status_feed_falling_behind_then_ok(void **state)
{
    (void)state;
    admin_events_t *ev = events_new();
    int64_t t = 200000;
    for (int s = 0; s < 12; s++, t += 1000) /* stalled: nothing delivered, lag +300/s */
        heartbeat(ev, "a1", "slow", 0, 500 + 300 * s, "", t);
    json_t *f = status_feed(ev, "slow", t);
    assert_string_equal(json_string_value(json_object_get(f, "health")), "falling behind");
    assert_true(json_real_value(json_object_get(f, "lag_trend_per_s")) > 299);
    json_decref(f);
    for (int s = 0; s < 3; s++, t += 1000) /* drained */
        heartbeat(ev, "a1", "slow", 4000 + 1000 * s, 0, "", t);
    f = status_feed(ev, "slow", t);
    assert_string_equal(json_string_value(json_object_get(f, "health")), "ok");
    json_decref(f);
    admin_events_free(ev);
}

static void test_status_lists_aggregation_and_correlation_workers(void **state)
{
    (void)state;
    admin_events_t *ev = events_new();
    const char *a =
        "{\"type\":\"heartbeat\",\"service\":\"ndd-aggregation\",\"instance\":\"h-scp\","
        "\"interval_ms\":1000,\"info\":{\"nf_type\":\"SCP\",\"topic\":\"SCP\","
        "\"filter\":\"ingress-SCP\",\"kafka_mode\":\"exactly-once\",\"transaction_ms\":200},"
        "\"counters\":{\"consumed_total\":%d,"
        "\"dead_lettered_total\":1}}";
    const char *c = "{\"type\":\"heartbeat\",\"service\":\"ndd-correlation\",\"instance\":\"h\","
                    "\"interval_ms\":1000,\"info\":{\"source_topic\":\"MAIN\",\"xdr_topic\":"
                    "\"XDR\",\"kafka_mode\":\"at-least-once\"},\"counters\":{\"xdrs_total\":%d,"
                    "\"open_transactions\":7,"
                    "\"timeout_ms\":5000}}";
    char j[600];
    for (int s = 0; s < 2; s++) {
        snprintf(j, sizeof(j), a, 100 + 50 * s);
        assert_int_equal(admin_events_apply(ev, j, strlen(j), 1000 + s * 1000), 0);
        snprintf(j, sizeof(j), c, 10 + 20 * s);
        assert_int_equal(admin_events_apply(ev, j, strlen(j), 1000 + s * 1000), 0);
    }
    json_t *st = admin_events_status(ev, 2000);
    json_t *ag = json_array_get(json_object_get(st, "aggregation"), 0);
    assert_string_equal(json_string_value(json_object_get(ag, "nf_type")), "SCP");
    assert_string_equal(json_string_value(json_object_get(ag, "topic")), "SCP");
    assert_string_equal(json_string_value(json_object_get(ag, "filter")), "ingress-SCP");
    assert_int_equal(json_integer_value(json_object_get(ag, "consumed_total")), 150);
    assert_true(json_real_value(json_object_get(ag, "rate_per_s")) == 50.0);
    assert_string_equal(json_string_value(json_object_get(ag, "kafka_mode")), "exactly-once");
    assert_int_equal(json_integer_value(json_object_get(ag, "transaction_ms")), 200);
    json_t *co = json_array_get(json_object_get(st, "correlation"), 0);
    assert_string_equal(json_string_value(json_object_get(co, "source_topic")), "MAIN");
    assert_string_equal(json_string_value(json_object_get(co, "xdr_topic")), "XDR");
    assert_int_equal(json_integer_value(json_object_get(co, "timeout_ms")), 5000);
    assert_int_equal(json_integer_value(json_object_get(co, "open")), 7);
    assert_int_equal(json_integer_value(json_object_get(co, "xdrs_total")), 30);
    assert_string_equal(json_string_value(json_object_get(co, "kafka_mode")), "at-least-once");
    assert_null(json_object_get(co, "transaction_ms"));
    assert_true(json_real_value(json_object_get(co, "rate_per_s")) == 20.0);
    json_decref(st);
    admin_events_free(ev);
}

int main(void)
{
    log_setup("test_admin_feed_health", LOG_LEVEL_ERROR, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slope_of_a_growing_lag_is_its_rate),
        cmocka_unit_test(test_slope_uses_only_the_window),
        cmocka_unit_test(test_samples_closer_than_a_32nd_of_the_window_replace_the_newest),
        cmocka_unit_test(test_growing_lag_raises_once_then_drain_clears_once),
        cmocka_unit_test(test_raise_waits_for_half_a_window_of_growth),
        cmocka_unit_test(test_lag_under_the_floor_is_never_falling_behind),
        cmocka_unit_test(test_noisy_lag_around_a_level_does_not_flap),
        cmocka_unit_test(test_table_expires_silent_feeds_and_reports_those_behind),
        cmocka_unit_test(test_status_feed_shows_rate_lag_trend_strings_and_latency),
        cmocka_unit_test(test_status_feed_falling_behind_then_ok),
        cmocka_unit_test(test_status_lists_aggregation_and_correlation_workers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
