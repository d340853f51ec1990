/* ndd-correlation on the control path (docs/correlation.md, "Control path"): follows
 * ndd.config (kind "correlation"), hands the settings of the matching record to main at start
 * and applies the live ones (timeout_ms, extract_subscriber) to the running worker; publishes
 * heartbeats with the worker's counters and the "xdr-produce-failing" alarm on ndd.events.
 * Everything runs on the worker's thread from worker_control_tick() (the worker's on_tick
 * hook): no locks, no blocking Kafka call.
 *
 * Which record: the one named --correlation-name when set; otherwise the first (topic order)
 * whose spec.source_topic is absent or equals the worker's MAIN topic. */
#ifndef NDD_CORR_CONTROL_H
#define NDD_CORR_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "corr_worker.h"
#include "kafka.h"
#include "metrics.h"
#include "worker_control.h"

#define CORR_ALARM_PRODUCE "xdr-produce-failing"
#define CORR_ALARM_REJECTED "config-rejected"
#define CORR_ALARM_RESTART "config-restart-required"

/* The settings a "correlation" record can carry. The *_set flags say which the record has;
 * the others keep the command line's value. */
typedef struct corr_settings {
    char name[128]; /* the record's name, "" when no record matched */
    bool enabled;
    char source_topic[256], xdr_topic[256];
    int64_t timeout_ms;
    int64_t max_open;
    bool extract_subscriber;
    bool enabled_set, source_topic_set, xdr_topic_set, timeout_set, max_open_set, extract_set;
} corr_settings_t;

typedef struct corr_control_opts {
    const char *brokers;
    const char *main_topic;        /* for record matching (and the alarm resource) */
    const char *xdr_topic;         /* for the alarm resource */
    const char *config_topic;      /* NULL or "": no follower */
    const char *events_topic;      /* NULL or "": no publisher */
    const char *instance;          /* NULL: the host name */
    const char *version;           /* NULL: "dev" */
    const char *name;              /* NULL or "": match by source_topic */
    int64_t heartbeat_ms;          /* 0: EVENTS_DEFAULT_INTERVAL_MS */
    struct events_hub *events_hub; /* NULL: the publisher's own producer */
    int64_t produce_alarm_ms;      /* acknowledgements stalled this long: alarm; 0: 10000 */
    const kafka_prop_t *props;     /* kafka.* pass-through (security), to both clients */
    size_t n_props;
    metrics_registry_t *metrics;
} corr_control_opts_t;

typedef struct corr_control corr_control_t;

/* NULL with err on a bad option (Kafka property, instance name too long...). */
corr_control_t *corr_control_new(const corr_control_opts_t *opts, char *err, size_t errlen);
/* The shared control path it runs on: worker_control_wait_loaded polls the follower until the
 * initial load is complete, worker_control_tick steps it (config changes, heartbeat when due,
 * produce alarm check) from the worker's on_tick, worker_control_report_fatal raises the
 * produce alarm as critical (the worker stopped on a fatal error). */
worker_control_t *corr_control_wc(corr_control_t *c);
/* The settings of the matching record as held now (no record: name "" and no *_set). */
void corr_control_settings(corr_control_t *c, corr_settings_t *out);
/* The worker whose counters heartbeats carry and whose live settings changes go to, with the
 * settings it was started with (restart-only ones are compared against them). NULL detaches
 * (before corr_worker_free). */
void corr_control_attach(corr_control_t *c, corr_worker_t *w, const corr_settings_t *started);
void corr_control_free(corr_control_t *c, int timeout_ms);

#endif
