/* The ndd.events publisher without Kafka (an offline publisher): the heartbeat and alarm
 * events carry what admin/admin_events.c requires, names the admin would truncate are
 * refused, alarm state is tracked, long texts are cut on a UTF-8 boundary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "events.h"
#include "log.h"
#include "metrics.h"

static void collect(void *owner, json_t *counters, json_t *feeds)
{
    int *calls = owner;
    (*calls)++;
    json_object_set_new(counters, "delivered_total", json_integer(1000 + *calls));
    json_object_set_new(counters, "dead_lettered_total", json_integer(2));
    json_t *f = json_pack("{s:I,s:I,s:{s:s,s:s}}", "delivered_total", (json_int_t)900, "lag",
                          (json_int_t)12, "endpoints", "http://10.0.0.5:8080/ingest", "up",
                          "https://probe.example:8443/ingest", "down");
    json_object_set_new(feeds, "probe-1", f);
}

static events_t *offline(const char *service, const char *instance, int *calls,
                         metrics_registry_t *reg)
{
    events_opts_t o = {.service = service,
                       .instance = instance,
                       .version = "1.2.3",
                       .interval_ms = 2000,
                       .collect = collect,
                       .owner = calls,
                       .metrics = reg};
    char err[256];
    events_t *ev = events_new(&o, err, sizeof(err));
    if (!ev)
        fail_msg("events_new: %s", err);
    return ev;
}

static void test_heartbeat_carries_identity_interval_and_the_owner_counters(void **state)
{
    metrics_registry_t *reg = metrics_registry_new();
    int calls = 0;
    events_t *ev = offline("ndd-adapter", "adapter-0", &calls, reg);
    json_t *hb = events_heartbeat_build(ev, 1764486000000);
    assert_int_equal(calls, 1);
    assert_string_equal(json_string_value(json_object_get(hb, "type")), "heartbeat");
    assert_string_equal(json_string_value(json_object_get(hb, "service")), "ndd-adapter");
    assert_string_equal(json_string_value(json_object_get(hb, "instance")), "adapter-0");
    assert_int_equal(json_integer_value(json_object_get(hb, "interval_ms")), 2000);
    assert_string_equal(json_string_value(json_object_get(hb, "version")), "1.2.3");
    assert_true(json_is_integer(json_object_get(hb, "uptime_ms")));
    assert_true(json_integer_value(json_object_get(hb, "uptime_ms")) >= 0);
    assert_int_equal(json_integer_value(json_object_get(hb, "ts_ms")), 1764486000000);
    assert_int_equal(json_integer_value(json_object_get(hb, "seq")), 1);
    json_t *c = json_object_get(hb, "counters");
    assert_int_equal(json_integer_value(json_object_get(c, "delivered_total")), 1001);
    json_t *eps =
        json_object_get(json_object_get(json_object_get(hb, "feeds"), "probe-1"), "endpoints");
    assert_string_equal(json_string_value(json_object_get(eps, "http://10.0.0.5:8080/ingest")),
                        "up");
    json_decref(hb);
    hb = events_heartbeat_build(ev, 1764486002000);
    assert_int_equal(json_integer_value(json_object_get(hb, "seq")), 2);
    json_decref(hb);
    events_free(ev, 0);
    metrics_registry_free(reg);
}

static void test_heartbeat_carries_the_latest_applied_configuration_state(void **state)
{
    metrics_registry_t *reg = metrics_registry_new();
    int calls = 0;
    events_t *ev = offline("ndd-adapter", "adapter-0", &calls, reg);
    json_t *hb = events_heartbeat_build(ev, 1);
    assert_null(json_object_get(hb, "config")); /* not following ndd.config yet */
    json_decref(hb);
    json_t *st = json_pack("{s:s,s:[s],s:[i],s:I}", "topic", "ndd.config", "kinds", "feed",
                           "offsets", 7, "applied_ms", (json_int_t)1000);
    /* Offline: nothing can be sent, the state is held. */
    assert_int_equal(events_config_applied(ev, st), 1);
    json_object_set_new(st, "offsets", json_pack("[i]", 9)); /* the caller's copy is its own */
    json_object_set_new(st, "applied_ms", json_integer(2000));
    assert_int_equal(events_config_applied(ev, st), 1);
    json_decref(st);
    hb = events_heartbeat_build(ev, 2);
    json_t *c = json_object_get(hb, "config");
    assert_int_equal(json_integer_value(json_array_get(json_object_get(c, "offsets"), 0)), 9);
    assert_int_equal(json_integer_value(json_object_get(c, "applied_ms")), 2000);
    assert_int_equal(events_stats(ev).config_coalesced, 1);
    json_decref(hb);
    events_free(ev, 0);
    metrics_registry_free(reg);
}

static void test_alarm_raise_has_severity_and_text_and_clear_has_neither(void **state)
{
    metrics_registry_t *reg = metrics_registry_new();
    int calls = 0;
    events_t *ev = offline("ndd-adapter", "adapter-0", &calls, reg);
    json_t *r = events_alarm_build(ev, true, "endpoint-down", "probe-1/http://h:1/x",
                                   EVENTS_CRITICAL, "connect refused", 5);
    assert_string_equal(json_string_value(json_object_get(r, "type")), "alarm");
    assert_string_equal(json_string_value(json_object_get(r, "action")), "raise");
    assert_string_equal(json_string_value(json_object_get(r, "alarm")), "endpoint-down");
    assert_string_equal(json_string_value(json_object_get(r, "resource")), "probe-1/http://h:1/x");
    assert_string_equal(json_string_value(json_object_get(r, "severity")), "critical");
    assert_string_equal(json_string_value(json_object_get(r, "text")), "connect refused");
    json_decref(r);
    json_t *c = events_alarm_build(ev, false, "endpoint-down", "probe-1/http://h:1/x", EVENTS_MAJOR,
                                   NULL, 6);
    assert_string_equal(json_string_value(json_object_get(c, "action")), "clear");
    assert_null(json_object_get(c, "severity"));
    assert_null(json_object_get(c, "text"));
    json_decref(c);
    /* Names that are not UTF-8 cannot be put in JSON. */
    assert_null(events_alarm_build(ev, true, "bad\xff", "r", EVENTS_MAJOR, "", 7));
    events_free(ev, 0);
    metrics_registry_free(reg);
}

static void test_new_refuses_names_the_admin_would_truncate(void **state)
{
    char err[256], longname[200];
    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    events_opts_t o = {.service = ""};
    assert_null(events_new(&o, err, sizeof(err)));
    assert_non_null(strstr(err, "service"));
    longname[EVENTS_MAX_SERVICE + 1] = '\0';
    o.service = longname;
    assert_null(events_new(&o, err, sizeof(err)));
    memset(longname, 'x', sizeof(longname) - 1);
    o.service = "ndd-adapter";
    o.instance = longname; /* 199 bytes */
    assert_null(events_new(&o, err, sizeof(err)));
    assert_non_null(strstr(err, "instance"));
    o.instance = "";
    assert_null(events_new(&o, err, sizeof(err)));
    o.instance = "inst\xc3";
    assert_null(events_new(&o, err, sizeof(err)));
    /* The longest accepted. */
    longname[EVENTS_MAX_INSTANCE] = '\0';
    o.instance = longname;
    o.metrics = metrics_registry_new();
    events_t *ev = events_new(&o, err, sizeof(err));
    assert_non_null(ev);
    events_free(ev, 0);
    metrics_registry_free(o.metrics);
}

static void test_alarm_state_is_tracked_and_bad_names_are_refused(void **state)
{
    metrics_registry_t *reg = metrics_registry_new();
    int calls = 0;
    events_t *ev = offline("ndd-aggregation", "scp-0", &calls, reg);
    assert_int_equal(events_alarm_raise(ev, "dlq-surge", "SCP", EVENTS_MAJOR, "50/s"), 0);
    assert_true(events_alarm_active(ev, "dlq-surge", "SCP"));
    assert_false(events_alarm_active(ev, "dlq-surge", "NRF"));
    assert_int_equal(events_stats(ev).alarms_active, 1);
    assert_int_equal(events_alarm_clear(ev, "dlq-surge", "SCP"), 0);
    assert_false(events_alarm_active(ev, "dlq-surge", "SCP"));
    assert_int_equal(events_stats(ev).alarms_active, 0);

    char longres[EVENTS_MAX_RESOURCE + 2];
    memset(longres, 'r', sizeof(longres) - 1);
    longres[sizeof(longres) - 1] = '\0';
    assert_int_equal(events_alarm_raise(ev, "", "x", EVENTS_MAJOR, ""), -1);
    assert_int_equal(events_alarm_raise(ev, "a", "", EVENTS_MAJOR, ""), -1);
    assert_int_equal(events_alarm_raise(ev, "a", NULL, EVENTS_MAJOR, ""), -1);
    assert_int_equal(events_alarm_raise(ev, "a", longres, EVENTS_MAJOR, ""), -1);
    assert_int_equal(events_alarm_clear(ev, "a\xfe", "x"), -1);
    /* Offline: nothing was sent, and the tick that is due to send a heartbeat cannot. */
    assert_int_equal(events_stats(ev).alarms_sent, 0);
    assert_int_equal(events_tick(ev), 0);
    assert_int_equal(events_stats(ev).heartbeats_sent, 0);
    events_free(ev, 0);
    metrics_registry_free(reg);
}

static void test_feed_helpers_build_the_per_feed_endpoint_map(void **state)
{
    json_t *feeds = json_object();
    json_t *f = events_feed(feeds, "probe-1");
    assert_non_null(f);
    assert_ptr_equal(events_feed(feeds, "probe-1"), f); /* same object on the next call */
    json_object_set_new(f, "lag", json_integer(12));
    assert_int_equal(events_feed_endpoint(f, "http://a:1/x", true), 0);
    assert_int_equal(events_feed_endpoint(f, "http://b:1/x", false), 0);
    assert_int_equal(events_feed_endpoint(f, "http://b:1/x", true), 0); /* replaced */
    assert_int_equal(events_feed_endpoint(f, "", true), -1);
    assert_int_equal(events_feed_endpoint(NULL, "u", true), -1);
    assert_null(events_feed(feeds, ""));
    assert_null(events_feed(feeds, "bad\xff"));
    json_t *want = json_pack("{s:{s:i,s:{s:s,s:s}}}", "probe-1", "lag", 12, "endpoints",
                             "http://a:1/x", "up", "http://b:1/x", "up");
    assert_true(json_equal(feeds, want));
    json_decref(want);
    json_decref(feeds);
}

static void test_long_alarm_text_is_cut_on_a_utf8_boundary(void **state)
{
    metrics_registry_t *reg = metrics_registry_new();
    int calls = 0;
    events_t *ev = offline("ndd-adapter", "a", &calls, reg);
    /* 2-byte characters with the cut falling inside one. */
    char text[EVENTS_MAX_TEXT + 40];
    size_t n = 0;
    text[n++] = 'x';
    while (n + 2 < sizeof(text)) {
        text[n++] = '\xc3';
        text[n++] = '\xa9'; /* é */
    }
    text[n] = '\0';
    json_t *r = events_alarm_build(ev, true, "a", "r", EVENTS_MINOR, text, 1);
    const char *t = json_string_value(json_object_get(r, "text"));
    assert_non_null(t);
    assert_true(strlen(t) <= EVENTS_MAX_TEXT);
    assert_true(strlen(t) >= EVENTS_MAX_TEXT - 1);
    assert_string_equal(json_string_value(json_object_get(r, "severity")), "minor");
    json_decref(r);
    /* Invalid UTF-8 in a text is replaced, the event is still built. */
    r = events_alarm_build(ev, true, "a", "r", EVENTS_WARNING, "bad \xff text", 1);
    assert_non_null(r);
    assert_non_null(strstr(json_string_value(json_object_get(r, "text")), "not valid UTF-8"));
    json_decref(r);
    events_free(ev, 0);
    metrics_registry_free(reg);
}

int main(void)
{
    log_set_stream(fopen("/dev/null", "w"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_heartbeat_carries_identity_interval_and_the_owner_counters),
        cmocka_unit_test(test_heartbeat_carries_the_latest_applied_configuration_state),
        cmocka_unit_test(test_alarm_raise_has_severity_and_text_and_clear_has_neither),
        cmocka_unit_test(test_new_refuses_names_the_admin_would_truncate),
        cmocka_unit_test(test_alarm_state_is_tracked_and_bad_names_are_refused),
        cmocka_unit_test(test_feed_helpers_build_the_per_feed_endpoint_map),
        cmocka_unit_test(test_long_alarm_text_is_cut_on_a_utf8_boundary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
