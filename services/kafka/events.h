/* The workers' side of ndd.events: heartbeats and alarm raise/clear events, in the format
 * ndd-admin's consumer (admin/admin_events.c) parses. Design and wiring: docs/control-path.md.
 *
 *   heartbeat: {"type":"heartbeat","service":S,"instance":I,"interval_ms":N,
 *               "version":V,"uptime_ms":U,"pid":P,"host":H,"ts_ms":T,"seq":Q,
 *               "counters":{name:number,...},
 *               "feeds":{feed:{name:number,...,"endpoints":{url:"up"|"down"}},...},
 *               "config":C}                      (C once the worker follows ndd.config)
 *   config:    {"type":"config","service":S,"instance":I,"ts_ms":T,"config":C}
 *              C = {"topic":"ndd.config","kinds":[...],"offsets":[next offset applied of
 *              partition 0, ...],"applied_ms":W}: sent as soon as the worker applied a
 *              configuration change (at most one per EVENTS_CONFIG_MIN_MS; the latest state
 *              always goes), so the admin can tell when every worker applied a change.
 *   alarm:     {"type":"alarm","action":"raise"|"clear","alarm":A,"resource":R,
 *               "severity":"critical"|"major"|"minor"|"warning","text":T,
 *               "service":S,"instance":I,"ts_ms":T}
 * The record key is "<service>/<instance>" (one partition per worker: its events stay in
 * order).
 *
 * Never blocks the data path: the publisher has its own librdkafka producer with a small
 * bounded queue; a produce that does not fit is dropped and counted, never waited for. At
 * most one heartbeat is in flight: while the previous one is not acknowledged (broker away)
 * the next ones are dropped (counted), so a broker coming back never receives a burst of
 * stale heartbeats (which would distort the rates the admin derives from them).
 *
 * Alarms are state, not messages: the publisher keeps a bounded table of the alarms it was
 * told about, sends a raise or a clear only when the state changes, and re-sends the current
 * state of an alarm whose event was not acknowledged (dropped, or failed while the broker
 * was away) at the next tick, until it is. */
#ifndef NDD_EVENTS_H
#define NDD_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "kafka.h"
#include "metrics.h"

/* ---- types ---------------------------------------------------------------------------- */

#define EVENTS_DEFAULT_TOPIC "ndd.events"
#define EVENTS_DEFAULT_INTERVAL_MS 5000
#define EVENTS_DEFAULT_MAX_ALARMS 1024
#define EVENTS_DEFAULT_MAX_HEARTBEAT (512 * 1024)
/* The admin keeps service and instance in 64- and 128-byte buffers (admin_events.c): longer
 * names would be truncated there and could collide, so they are refused here. */
#define EVENTS_MAX_SERVICE 63
#define EVENTS_MAX_INSTANCE 127
#define EVENTS_MAX_ALARM_NAME 63
#define EVENTS_MAX_RESOURCE 383
#define EVENTS_MAX_TEXT 1023
/* Config events of one worker are this far apart at least (a burst of changes makes one per
 * period; the last state is sent by the first events_tick after it). */
#define EVENTS_CONFIG_MIN_MS 20

typedef struct events events_t;
/* One producer that several publishers of one process share (ndd: one per process for every
 * role's heartbeats and alarms instead of one per role, each with its own threads and broker
 * connections). Its own thread serves the delivery reports and hands each to the publisher
 * that produced the event; a publisher keeps its key, its one-heartbeat-in-flight rule and
 * its alarm table, so sharing changes no event. Publishers are freed before their hub. */
typedef struct events_hub events_hub_t;
#define EVENTS_HUB_MAX_PUBLISHERS 64

/* Fills the heartbeat: counters is an empty object to fill with numbers (totals are best,
 * the admin derives rates: {"delivered_total": 123, "dead_lettered_total": 2}); feeds an
 * empty object to fill per feed name with numbers and "endpoints": {url: "up"|"down"}.
 * Runs on the thread that calls events_tick() (the publisher's own thread with own_thread). */
typedef void (*events_collect_fn)(void *owner, json_t *counters, json_t *feeds);
/* Fills the heartbeat's "info": an empty object to fill with what the worker runs (strings
 * and numbers that are settings, not counters: {"nf_type": "SCP", "topic": "SCP"}); the
 * admin's /status shows them. Runs right after collect, on the same thread. */
typedef void (*events_info_fn)(void *owner, json_t *info);

typedef struct events_opts {
    const char *brokers;       /* required (NULL: offline, builds events but sends nothing) */
    const char *topic;         /* NULL: "ndd.events" */
    const char *service;       /* required: "ndd-adapter", "ndd-aggregation", "ndd-correlation" */
    const char *instance;      /* NULL: the host name. Stable across restarts and unique per
                                * service (the pod name), or the admin keeps a dead instance */
    const char *version;       /* NULL: "dev" */
    int64_t interval_ms;       /* heartbeat period; 0: EVENTS_DEFAULT_INTERVAL_MS */
    events_collect_fn collect; /* may be NULL: heartbeats without counters */
    events_info_fn info;       /* may be NULL: heartbeats without "info" */
    void *owner;
    /* true: a thread of the publisher ticks every 100 ms (collect runs there, so it must be
     * thread-safe with respect to the owner). false: the owner calls events_tick(). */
    bool own_thread;
    size_t max_alarms;          /* alarms tracked; 0: EVENTS_DEFAULT_MAX_ALARMS */
    size_t max_heartbeat_bytes; /* larger: sent without "feeds"; 0: 512 KiB */
    const kafka_prop_t *props;  /* kafka.* pass-through (security...), applied last */
    size_t n_props;
    metrics_registry_t *metrics; /* NULL: metrics_default_registry() */
    /* Not NULL: produce through this shared producer (brokers, props are the hub's then). */
    events_hub_t *hub;
} events_opts_t;

typedef enum events_severity {
    EVENTS_CRITICAL = 0,
    EVENTS_MAJOR,
    EVENTS_MINOR,
    EVENTS_WARNING,
} events_severity_t;

typedef struct events_stats {
    uint64_t heartbeats_sent;          /* handed to librdkafka */
    uint64_t heartbeats_acked;         /* acknowledged by the broker */
    uint64_t heartbeats_failed;        /* delivery failed */
    uint64_t heartbeats_dropped;       /* not sent: previous in flight, queue full, error */
    uint64_t heartbeats_feeds_omitted; /* sent without "feeds" (over max_heartbeat_bytes) */
    uint64_t alarms_sent;              /* raise/clear events handed to librdkafka */
    uint64_t alarms_acked;
    uint64_t alarms_failed;    /* delivery failed or dropped (re-sent at the next tick) */
    uint64_t alarms_untracked; /* table full: sent once, best effort */
    uint64_t config_sent;      /* config events handed to librdkafka */
    uint64_t config_coalesced; /* config states replaced by a newer one before being sent */
    size_t alarms_active;      /* alarms currently raised */
} events_stats_t;

/* ---- functions ------------------------------------------------------------------------ */
/* The shared producer (see events_hub_t), with the events' producer settings and the
 * kafka.* pass-through props. NULL with err on a bad property or OOM. */
events_hub_t *events_hub_new(const char *brokers, const kafka_prop_t *props, size_t n_props,
                             char *err, size_t errlen);
/* Waits up to timeout_ms for what is queued, then stops the thread and frees. Every
 * publisher of the hub must be freed already. NULL is a no-op. */
void events_hub_free(events_hub_t *h, int timeout_ms);

/* NULL with err on a missing/oversized service or instance, a bad property or OOM. With
 * own_thread the first heartbeat leaves at once; otherwise at the first events_tick(). */
events_t *events_new(const events_opts_t *opts, char *err, size_t errlen);
/* Stops the thread, waits up to timeout_ms for queued events (a last clear, say), frees. */
void events_free(events_t *ev, int timeout_ms);

/* Call from the owner's loop (at least every interval/2; every loop iteration is fine: it
 * costs a clock read when nothing is due). Sends the heartbeat when due, re-sends alarm
 * states not yet acknowledged, serves delivery reports. Returns 1 when a heartbeat was
 * produced, else 0. Not with own_thread. */
int events_tick(events_t *ev);

/* Raise or clear an alarm (type e.g. "endpoint-down", resource e.g. "probe-1/http://h:1/x",
 * "<feed>/<url>" for endpoint alarms as the admin names its own). Thread-safe, never blocks.
 * A raise of an alarm already raised with the same severity, or a clear of one already
 * clear, sends nothing. Returns 0, or -1 on a bad argument (empty or too long names). */
int events_alarm_raise(events_t *ev, const char *alarm, const char *resource,
                       events_severity_t severity, const char *text);
int events_alarm_clear(events_t *ev, const char *alarm, const char *resource);
/* True while the alarm is raised (as told by the owner, whether or not delivered yet). */
bool events_alarm_active(events_t *ev, const char *alarm, const char *resource);

/* The worker's applied configuration state moved (config_topic's on_applied; state is
 * copied). Thread-safe, never blocks. Sends a config event now and returns 0, or, within
 * EVENTS_CONFIG_MIN_MS of the previous one (or when the queue refused it), keeps it for the
 * next events_tick and returns 1: the owner then ticks within that time. Heartbeats carry the
 * latest state too (a lost config event is repaired by the next heartbeat). */
int events_config_applied(events_t *ev, json_t *state);

/* Serves delivery reports for up to timeout_ms until nothing is in flight: 0, or -1 when
 * something is still in flight. */
int events_flush(events_t *ev, int timeout_ms);
events_stats_t events_stats(events_t *ev);

/* Helpers for collect callbacks: the object of one feed in `feeds` (created on first use;
 * NULL on a bad name), and an endpoint's state in it ("up"/"down", the only values the
 * admin turns into endpoint-down alarms). 0, or -1 on a bad argument. */
json_t *events_feed(json_t *feeds, const char *feed);
int events_feed_endpoint(json_t *feed, const char *url, bool up);

/* Builders (new references), used by the publisher and by tests. */
json_t *events_heartbeat_build(events_t *ev, int64_t now_ms);
json_t *events_alarm_build(const events_t *ev, bool raise, const char *alarm, const char *resource,
                           events_severity_t severity, const char *text, int64_t now_ms);

#endif
