/* ndd-correlation's control path: see corr_control.h and docs/correlation.md. */
#include "corr_control.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "config_topic.h"
#include "events.h"
#include "log.h"
#include "kafka_txn.h"
#include "worker_control.h"

struct corr_control {
    char main_topic[256], xdr_topic[256], name[128], instance[128], res_name[200];
    worker_control_t wc; /* ndd.config follower (wc.dirty: a correlation record changed since
                          * the last resolve) and ndd.events publisher */
    corr_worker_t *w;
    corr_settings_t started; /* what the attached worker was built with */
    char *applied;           /* compact JSON of the live part last applied (change detection) */

    corr_stats_t last_st; /* the counters of the last heartbeat */
    correlate_stats_t last_est;
    int64_t last_timeout_ms;
};

/* ---- ndd.config: which record, what it says ---- */

typedef struct corr_find {
    const corr_control_t *c;
    json_t *record;
} corr_find_t;

static int corr_find_cb(void *arg, const char *kind, const char *id, json_t *record)
{
    (void)id;
    corr_find_t *f = arg;
    if (strcmp(kind, "correlation") != 0)
        return 0;
    json_t *spec = json_object_get(record, "spec");
    const char *name = json_string_value(json_object_get(record, "name"));
    if (!name)
        name = json_string_value(json_object_get(spec, "name"));
    if (f->c->name[0]) {
        if (name && strcmp(name, f->c->name) == 0)
            f->record = record; /* the last in topic order wins (a rename freed the name) */
        return 0;
    }
    const char *src = json_string_value(json_object_get(spec, "source_topic"));
    if (!src || strcmp(src, f->c->main_topic) == 0) {
        f->record = record;
        return 1; /* the first match */
    }
    return 0;
}

/* Reads the record's spec into out. -1 with the reason when a field has the wrong type or is
 * out of the admin's bounds (a record the admin would not have written). */
static int corr_parse_spec(json_t *record, corr_settings_t *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof(*out));
    out->enabled = true;
    out->extract_subscriber = true;
    if (!record)
        return 0;
    json_t *spec = json_object_get(record, "spec");
    const char *name = json_string_value(json_object_get(record, "name"));
    if (!name)
        name = json_string_value(json_object_get(spec, "name"));
    snprintf(out->name, sizeof(out->name), "%s", name ? name : "?");
    json_t *v;
    if ((v = json_object_get(spec, "enabled"))) {
        if (!json_is_boolean(v))
            return snprintf(why, whylen, "enabled is not a boolean"), -1;
        out->enabled = json_is_true(v);
        out->enabled_set = true;
    }
    if ((v = json_object_get(spec, "extract_subscriber"))) {
        if (!json_is_boolean(v))
            return snprintf(why, whylen, "extract_subscriber is not a boolean"), -1;
        out->extract_subscriber = json_is_true(v);
        out->extract_set = true;
    }
    if ((v = json_object_get(spec, "timeout_ms"))) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 ||
            json_integer_value(v) > CORR_TIMEOUT_CEILING_US / 1000)
            return snprintf(why, whylen, "timeout_ms is not an integer 1..%lld",
                            (long long)(CORR_TIMEOUT_CEILING_US / 1000)),
                   -1;
        out->timeout_ms = json_integer_value(v);
        out->timeout_set = true;
    }
    if ((v = json_object_get(spec, "max_open_per_partition"))) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 100000000)
            return snprintf(why, whylen, "max_open_per_partition is not an integer 1..100000000"),
                   -1;
        out->max_open = json_integer_value(v);
        out->max_open_set = true;
    }
    const char *s;
    if ((v = json_object_get(spec, "source_topic"))) {
        if (!(s = json_string_value(v)) || !*s || strlen(s) >= sizeof(out->source_topic))
            return snprintf(why, whylen, "source_topic is not a topic name"), -1;
        snprintf(out->source_topic, sizeof(out->source_topic), "%s", s);
        out->source_topic_set = true;
    }
    if ((v = json_object_get(spec, "xdr_topic"))) {
        if (!(s = json_string_value(v)) || !*s || strlen(s) >= sizeof(out->xdr_topic))
            return snprintf(why, whylen, "xdr_topic is not a topic name"), -1;
        snprintf(out->xdr_topic, sizeof(out->xdr_topic), "%s", s);
        out->xdr_topic_set = true;
    }
    return 0;
}

static json_t *corr_find(const corr_control_t *c)
{
    corr_find_t f = {.c = c};
    if (c->wc.ft)
        config_topic_foreach(c->wc.ft, corr_find_cb, &f);
    return f.record;
}

void corr_control_settings(corr_control_t *c, corr_settings_t *out)
{
    char why[256];
    json_t *rec = corr_find(c);
    if (corr_parse_spec(rec, out, why, sizeof(why)) != 0) {
        log_error("correlation: record \"%s\" refused: %s; command-line settings used", out->name,
                  why);
        if (c->wc.ev)
            events_alarm_raise(c->wc.ev, CORR_ALARM_REJECTED, c->res_name, EVENTS_MAJOR, why);
        corr_parse_spec(NULL, out, why, sizeof(why));
    }
}

/* Applies what can change live to the attached worker and reports what cannot. */
static void corr_control_resolve(void *owner)
{
    corr_control_t *c = owner;
    c->wc.dirty = false;
    if (!c->w)
        return;
    char why[256];
    corr_settings_t s;
    json_t *rec = corr_find(c);
    if (corr_parse_spec(rec, &s, why, sizeof(why)) != 0) {
        log_error("correlation: record \"%s\" refused: %s; running settings kept", s.name, why);
        if (c->wc.ev)
            events_alarm_raise(c->wc.ev, CORR_ALARM_REJECTED, c->res_name, EVENTS_MAJOR, why);
        return;
    }
    if (c->wc.ev)
        events_alarm_clear(c->wc.ev, CORR_ALARM_REJECTED, c->res_name);
    /* Live: without a record (or without the field) the start value comes back. */
    int64_t want_us = s.timeout_set ? s.timeout_ms * 1000 : c->started.timeout_ms * 1000;
    int64_t old_us = corr_worker_timeout_us(c->w);
    if (want_us != old_us) {
        int64_t now_us = corr_worker_set_timeout_us(c->w, want_us);
        log_info("correlation: timeout %" PRId64 " ms -> %" PRId64 " ms (record \"%s\")",
                 old_us / 1000, now_us / 1000, rec ? s.name : "none: start value");
    }
    bool extract = s.extract_set ? s.extract_subscriber : c->started.extract_subscriber;
    char live[64];
    snprintf(live, sizeof(live), "%d", extract);
    if (!c->applied || strcmp(c->applied, live) != 0) {
        if (c->applied)
            log_info("correlation: subscriber extraction %s (record \"%s\")",
                     extract ? "on" : "off", rec ? s.name : "none: start value");
        if (extract && !c->started.extract_subscriber)
            log_warn("correlation: subscriber extraction asked for but the engine was started "
                     "without it (--subscriber-from-path/--subscriber-from-body): restart needed");
        corr_worker_set_subscriber(c->w, extract);
        free(c->applied);
        c->applied = strdup(live);
    }
    /* Restart-only: compared with what the worker runs. */
    char diff[512] = "";
    size_t n = 0;
#define CORR_DIFF(cond, fmt, ...)                                                                  \
    do {                                                                                           \
        if ((cond) && n < sizeof(diff))                                                            \
            n += (size_t)snprintf(diff + n, sizeof(diff) - n, fmt, __VA_ARGS__);                   \
    } while (0)
    CORR_DIFF(s.enabled_set && s.enabled != c->started.enabled, "enabled=%s ",
              s.enabled ? "true" : "false");
    CORR_DIFF(s.source_topic_set && strcmp(s.source_topic, c->started.source_topic) != 0,
              "source_topic=%s ", s.source_topic);
    CORR_DIFF(s.xdr_topic_set && strcmp(s.xdr_topic, c->started.xdr_topic) != 0, "xdr_topic=%s ",
              s.xdr_topic);
    CORR_DIFF(s.max_open_set && s.max_open != c->started.max_open,
              "max_open_per_partition=%" PRId64 " ", s.max_open);
#undef CORR_DIFF
    if (!c->wc.ev)
        return;
    if (diff[0]) {
        char text[700];
        snprintf(text, sizeof(text), "record \"%s\" changed %s(applied at the next start)", s.name,
                 diff);
        if (!events_alarm_active(c->wc.ev, CORR_ALARM_RESTART, c->res_name))
            log_warn("correlation: %s", text);
        events_alarm_raise(c->wc.ev, CORR_ALARM_RESTART, c->res_name, EVENTS_WARNING, text);
    } else {
        events_alarm_clear(c->wc.ev, CORR_ALARM_RESTART, c->res_name);
    }
}

/* ---- ndd.events ---- */

/* Heartbeats carry every counter at all times: before the worker exists they are zero,
 * after it is gone the last values stay, so the admin never sees a counter go backwards. */
static void corr_collect(void *owner, json_t *counters, json_t *feeds)
{
    (void)feeds;
    corr_control_t *c = owner;
    if (c->w) {
        c->last_st = corr_worker_stats(c->w);
        c->last_est = corr_worker_engine_stats(c->w);
        c->last_timeout_ms = corr_worker_timeout_us(c->w) / 1000;
    }
    const corr_stats_t *s = &c->last_st;
    const correlate_stats_t *e = &c->last_est;
#define CORR_SET(k, v) json_object_set_new(counters, k, json_integer((json_int_t)(v)))
    CORR_SET("consumed_total", s->consumed);
    CORR_SET("correlated_total", s->correlated);
    CORR_SET("xdrs_total", s->xdrs);
    CORR_SET("delivered_total", s->xdrs_acked);
    CORR_SET("dead_lettered_total", s->dead_lettered);
    CORR_SET("produce_failures_total", s->produce_failures);
    CORR_SET("pauses_total", s->pauses);
    CORR_SET("unacknowledged", s->unacked);
    CORR_SET("uncommitted", s->uncommitted);
    CORR_SET("open_transactions", e->open);
    CORR_SET("complete_total", e->emitted[XDR_COMPLETE]);
    CORR_SET("timeout_total", e->emitted[XDR_TIMEOUT]);
    CORR_SET("evicted_total", e->emitted[XDR_EVICTED]);
    CORR_SET("revoked_total", e->emitted[XDR_REVOKED]);
    CORR_SET("duplicates_total", e->duplicates);
    CORR_SET("handed_over_total", e->handed_over);
    CORR_SET("timeout_ms", c->last_timeout_ms);
#undef CORR_SET
}

/* Heartbeat "info": what this worker runs, for the admin's /status "correlation" list (the
 * settings it was started with once attached; the command line's before). */
static void corr_info(void *owner, json_t *info)
{
    const corr_control_t *c = owner;
    const char *src = c->started.source_topic[0] ? c->started.source_topic : c->main_topic;
    json_object_set_new(info, "source_topic", json_string(src));
    json_object_set_new(info, "xdr_topic", json_string(c->xdr_topic));
    if (c->started.name[0])
        json_object_set_new(info, "name", json_string(c->started.name));
    int tms;
    if (c->w) /* the delivery mode in effect (docs/kafka-cluster.md, "Exactly once") */
        kafka_txn_mode_info(info, corr_worker_exactly_once(c->w, &tms), tms);
}

/* "xDR produce failing": records handed to Kafka but no acknowledgement for
 * produce_alarm_ms (broker away, XDR topic unwritable; message.timeout.ms is infinite, so
 * they are retried, not lost). Cleared once acknowledgements flow again. A refusal is fatal
 * for the worker: worker_control_report_fatal raises it as critical. */
static void corr_alarm_check(void *owner, int64_t now)
{
    corr_control_t *c = owner;
    if (!c->w || !worker_control_stall_due(&c->wc.stall, now))
        return;
    corr_stats_t s = corr_worker_stats(c->w);
    char text[512], target[300];
    snprintf(target, sizeof(target), "xDRs to %s", c->xdr_topic);
    bool stalled = worker_control_produce_stalled(&c->wc, now, s.xdrs_acked + s.dead_lettered,
                                                  s.unacked, target, text, sizeof(text));
    worker_control_produce_alarm(&c->wc, stalled ? text : NULL);
}

/* ---- life cycle ---- */

corr_control_t *corr_control_new(const corr_control_opts_t *o, char *err, size_t errlen)
{
    corr_control_t *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(err, errlen, "control path: out of memory");
        return NULL;
    }
    snprintf(c->main_topic, sizeof(c->main_topic), "%s", o->main_topic ? o->main_topic : "MAIN");
    snprintf(c->name, sizeof(c->name), "%s", o->name ? o->name : "");
    worker_control_instance_name(c->instance, sizeof(c->instance), o->instance, NULL);
    /* The instance in the resource: two workers writing the same XDR topic must not clear
     * each other's alarm. */
    snprintf(c->xdr_topic, sizeof(c->xdr_topic), "%s", o->xdr_topic ? o->xdr_topic : "XDR");
    char resource[384];
    snprintf(resource, sizeof(resource), "%.127s/%.249s", c->instance, c->xdr_topic);
    snprintf(c->res_name, sizeof(c->res_name), "correlation/%.180s", c->instance);

    static const char *const kinds[] = {"correlation"};
    worker_control_opts_t wo = {.brokers = o->brokers,
                                .props = o->props,
                                .n_props = o->n_props,
                                .metrics = o->metrics,
                                .owner = c,
                                .config_topic = o->config_topic,
                                .config_client_id = "ndd-correlation-config",
                                .kinds = kinds,
                                .n_kinds = 1,
                                .on_loaded = NULL,
                                .events_topic = o->events_topic,
                                .service = "ndd-correlation",
                                .log_name = "correlation",
                                .instance = c->instance,
                                .version = o->version,
                                .heartbeat_ms = o->heartbeat_ms,
                                .events_hub = o->events_hub,
                                .collect = corr_collect,
                                .info = corr_info,
                                .resolve = corr_control_resolve,
                                .check = corr_alarm_check,
                                .produce_alarm = CORR_ALARM_PRODUCE,
                                .produce_resource = resource,
                                .produce_alarm_ms = o->produce_alarm_ms};
    if (worker_control_open(&c->wc, &wo, err, errlen)) {
        free(c);
        return NULL;
    }
    log_info("correlation: control path: config %s (record: %s), events %s as "
             "ndd-correlation/%s",
             c->wc.ft ? o->config_topic : "off", c->name[0] ? c->name : "matched by source_topic",
             c->wc.ev ? o->events_topic : "off", c->instance);
    return c;
}

void corr_control_attach(corr_control_t *c, corr_worker_t *w, const corr_settings_t *started)
{
    if (!c)
        return;
    c->w = w;
    if (started) {
        c->started = *started;
        /* The record may have named another XDR topic than the command line. */
        snprintf(c->xdr_topic, sizeof(c->xdr_topic), "%s", started->xdr_topic);
        snprintf(c->wc.produce_resource, sizeof(c->wc.produce_resource), "%.127s/%.249s",
                 c->instance, c->xdr_topic);
        c->last_timeout_ms = corr_worker_timeout_us(w) / 1000;
    }
    free(c->applied);
    c->applied = NULL;
    c->wc.dirty = w != NULL; /* a change during the start is applied at once */
}

worker_control_t *corr_control_wc(corr_control_t *c)
{
    return &c->wc;
}

void corr_control_free(corr_control_t *c, int timeout_ms)
{
    if (!c)
        return;
    c->w = NULL; /* the last heartbeat (if any) must not read a freed worker */
    worker_control_close(&c->wc, timeout_ms);
    free(c->applied);
    free(c);
}
