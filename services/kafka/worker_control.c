/* Shared worker control path: see worker_control.h. */
#include "worker_control.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"

/* config_topic_poll and events_tick are cheap, but the worker loop turns thousands of times a
 * second under load: a few milliseconds between control steps cost nothing in reaction time. */
#define WORKER_CONTROL_PERIOD_MS 5
#define WORKER_CONTROL_STALL_CHECK_MS 1000

/* The config_topic callbacks get wc itself: a record change only marks the configuration for
 * the owner's next resolve, so the owner never sees single records. */
static void worker_control_on_upsert(void *arg, const char *kind, const char *id, json_t *record,
                                     json_t *previous)
{
    (void)kind, (void)id, (void)record, (void)previous;
    ((worker_control_t *)arg)->dirty = true;
}

static void worker_control_on_delete(void *arg, const char *kind, const char *id, json_t *previous)
{
    (void)kind, (void)id, (void)previous;
    ((worker_control_t *)arg)->dirty = true;
}

static void worker_control_on_loaded(void *arg, size_t keys)
{
    worker_control_t *wc = arg;
    if (wc->on_loaded)
        wc->on_loaded(wc->owner, keys);
}

/* The configuration applied moved: the admin learns it on ndd.events (propagation). */
static void worker_control_on_applied(void *arg, json_t *state)
{
    worker_control_t *wc = arg;
    if (wc->ev)
        events_config_applied(wc->ev, state);
}

/* A change is applied once the owner resolved the configuration it belongs to. */
static void worker_control_mark(worker_control_t *wc)
{
    if (wc->ft && !wc->dirty)
        config_topic_mark_applied(wc->ft);
}

void worker_control_instance_name(char *out, size_t size, const char *given, const char *suffix)
{
    if (given && *given) {
        snprintf(out, size, "%s", given);
        return;
    }
    char host[64] = "localhost";
    gethostname(host, sizeof(host) - 1);
    if (suffix)
        snprintf(out, size, "%.63s-%.60s", host, suffix);
    else
        snprintf(out, size, "%s", host);
}

int worker_control_open(worker_control_t *wc, const worker_control_opts_t *o, char *err,
                        size_t errlen)
{
    memset(wc, 0, sizeof(*wc));
    wc->resolve = o->resolve;
    wc->check = o->check;
    wc->on_loaded = o->on_loaded;
    wc->owner = o->owner;
    snprintf(wc->log_name, sizeof(wc->log_name), "%s", o->log_name ? o->log_name : o->service);
    wc->produce_alarm = o->produce_alarm;
    wc->produce_alarm_ms = o->produce_alarm_ms > 0 ? o->produce_alarm_ms : 10000;
    snprintf(wc->produce_resource, sizeof(wc->produce_resource), "%s",
             o->produce_resource ? o->produce_resource : "");
    kafka_prop_t *props = calloc(o->n_props + 1, sizeof(*props));
    if (!props) {
        snprintf(err, errlen, "control path: out of memory");
        return -1;
    }
    if (o->events_topic && *o->events_topic) {
        events_opts_t eo = {
            .brokers = o->brokers,
            .topic = o->events_topic,
            .service = o->service,
            .instance = o->instance,
            .version = o->version,
            .interval_ms = o->heartbeat_ms,
            .collect = o->collect,
            .info = o->info,
            .owner = o->owner,
            .props = props,
            .n_props = kafka_props_split(o->props, o->n_props, KAFKA_CLIENT_PRODUCER, props),
            .metrics = o->metrics,
            .hub = o->events_hub};
        wc->ev = events_new(&eo, err, errlen);
        if (!wc->ev)
            goto fail;
    }
    if (o->config_topic && *o->config_topic) {
        config_topic_opts_t co = {
            .brokers = o->brokers,
            .topic = o->config_topic,
            .client_id = o->config_client_id,
            .kinds = o->kinds,
            .n_kinds = o->n_kinds,
            .props = props,
            .n_props = kafka_props_split(o->props, o->n_props, KAFKA_CLIENT_CONSUMER, props),
            .on_upsert = worker_control_on_upsert,
            .on_delete = worker_control_on_delete,
            .on_loaded = worker_control_on_loaded,
            .on_applied = worker_control_on_applied,
            .defer_applied = o->resolve != NULL,
            .owner = wc,
            .metrics = o->metrics};
        wc->ft = config_topic_new(&co, err, errlen);
        if (!wc->ft)
            goto fail;
    }
    free(props);
    return 0;
fail:
    free(props);
    worker_control_close(wc, 0);
    return -1;
}

/* One step: config_topic_poll(poll_ms), resolve when dirty and loaded, events_tick, check. */
static void worker_control_step(worker_control_t *wc, int poll_ms)
{
    if (wc->ft) {
        config_topic_poll(wc->ft, poll_ms);
        if (wc->dirty && wc->resolve && config_topic_loaded(wc->ft))
            wc->resolve(wc->owner);
        worker_control_mark(wc);
    }
    if (wc->ev) {
        events_tick(wc->ev);
        if (wc->check)
            wc->check(wc->owner, mono_now_ms());
    }
}

int worker_control_wait_loaded(void *arg, int timeout_ms)
{
    worker_control_t *wc = arg;
    int64_t end = mono_now_ms() + timeout_ms;
    while (wc->ft && !config_topic_loaded(wc->ft)) {
        int64_t left = end - mono_now_ms();
        if (left <= 0)
            break;
        worker_control_step(wc, left < 100 ? (int)left : 100);
    }
    if (wc->ft && wc->dirty && wc->resolve && config_topic_loaded(wc->ft))
        wc->resolve(wc->owner);
    worker_control_mark(wc);
    return !wc->ft || config_topic_loaded(wc->ft) ? 0 : -1;
}

void worker_control_tick(worker_control_t *wc)
{
    int64_t now = mono_now_ms();
    if (now < wc->next_step_ms)
        return;
    wc->next_step_ms = now + WORKER_CONTROL_PERIOD_MS;
    worker_control_step(wc, 0);
}

void worker_control_report_fatal(worker_control_t *wc, const char *text, int timeout_ms)
{
    if (!wc->ev)
        return;
    events_alarm_raise(wc->ev, wc->produce_alarm, wc->produce_resource, EVENTS_CRITICAL, text);
    events_flush(wc->ev, timeout_ms);
}

void worker_control_produce_alarm(worker_control_t *wc, const char *text)
{
    if (!wc->ev)
        return;
    const char *alarm = wc->produce_alarm, *resource = wc->produce_resource;
    bool active = events_alarm_active(wc->ev, alarm, resource);
    if (text) {
        if (!active)
            log_warn("%s: alarm %s raised: %s", wc->log_name, alarm, text);
        events_alarm_raise(wc->ev, alarm, resource, EVENTS_MAJOR, text);
        return;
    }
    if (active)
        log_info("%s: alarm %s cleared", wc->log_name, alarm);
    events_alarm_clear(wc->ev, alarm, resource);
}

void worker_control_close(worker_control_t *wc, int timeout_ms)
{
    config_topic_free(wc->ft);
    wc->ft = NULL;
    if (wc->ev)
        events_free(wc->ev, timeout_ms);
    wc->ev = NULL;
}

bool worker_control_stall_due(worker_control_stall_t *s, int64_t now_ms)
{
    if (now_ms < s->next_check_ms)
        return false;
    s->next_check_ms = now_ms + WORKER_CONTROL_STALL_CHECK_MS;
    return true;
}

int64_t worker_control_stall_ms(worker_control_stall_t *s, int64_t now_ms, uint64_t acked,
                                uint64_t inflight)
{
    /* Progress is an acknowledgement, or nothing in flight at the previous check (a record
     * that just left is not late). */
    if (acked != s->last_acked || !s->was_inflight)
        s->last_progress_ms = now_ms;
    s->last_acked = acked;
    s->was_inflight = inflight > 0;
    return inflight > 0 ? now_ms - s->last_progress_ms : 0;
}

bool worker_control_produce_stalled(worker_control_t *wc, int64_t now_ms, uint64_t acked,
                                    uint64_t inflight, const char *target, char *text, size_t size)
{
    int64_t ms = worker_control_stall_ms(&wc->stall, now_ms, acked, inflight);
    if (ms < wc->produce_alarm_ms) /* 0 while nothing is in flight */
        return false;
    snprintf(text, size, "%" PRIu64 " records unacknowledged for %" PRId64 " s (producing %s)",
             inflight, ms / 1000, target);
    return true;
}

kafka_gate_event_t worker_control_backpressure(kafka_gate_t *g, kafka_consumer_t *c, bool room,
                                               int pause_after_ms, metrics_gauge_t *paused,
                                               metrics_counter_t *pauses)
{
    kafka_gate_event_t ev = kafka_gate_update(g, c, room, pause_after_ms);
    if (ev == KAFKA_GATE_RESUMED)
        metrics_gauge_set(paused, 0);
    if (ev == KAFKA_GATE_PAUSED) {
        metrics_counter_inc(pauses);
        metrics_gauge_set(paused, 1);
    }
    return ev;
}
