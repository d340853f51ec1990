/* ndd-aggregation on the control path (docs/aggregation.md, "Control path"): follows
 * ndd.config (kinds "filter" and "source") and swaps the ingress filter it resolves into the
 * worker's filter slot; publishes heartbeats with the worker's counters and the
 * "main-produce-failing" alarm on ndd.events. Everything runs on the worker's thread from
 * worker_control_tick() (the worker's on_tick hook): no locks, no blocking Kafka call.
 *
 * Which filter: the "ingress_filter" of the source whose topic is the worker's NF topic (else
 * whose type is its NF type) when the source has one (an inline filter object, or a filter
 * name); otherwise the filter named filter_name (default "ingress-<NF type>"); none of them:
 * no filter (allow everything). A filter file (--filter-file) takes precedence over all of
 * it: the follower still runs but its filters are not applied. */
#ifndef NDD_AGG_CONTROL_H
#define NDD_AGG_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agg_worker.h"
#include "filter.h"
#include "kafka.h"
#include "metrics.h"
#include "worker_control.h"

/* The alarm raised while MAIN (or the DLQ) produce fails, on resource "<nf>/<main topic>". */
#define AGG_ALARM_PRODUCE "main-produce-failing"
#define AGG_ALARM_REJECTED "config-rejected"

typedef struct agg_control_opts {
    const char *brokers;
    const char *nf_type;
    const char *in_topic;          /* the NF topic the worker consumes (source matching) */
    const char *main_topic;        /* for the alarm's resource */
    const char *config_topic;      /* NULL or "": no follower */
    const char *events_topic;      /* NULL or "": no publisher */
    const char *instance;          /* NULL: "<host name>-<nf_type>" */
    const char *version;           /* NULL: "dev" */
    const char *filter_name;       /* NULL: "ingress-<nf_type>" */
    bool filter_file_set;          /* --filter-file given: config filters are not applied */
    int64_t heartbeat_ms;          /* 0: EVENTS_DEFAULT_INTERVAL_MS */
    struct events_hub *events_hub; /* NULL: the publisher's own producer */
    int64_t produce_alarm_ms;      /* acknowledgements stalled this long: alarm; 0: 10000 */
    const kafka_prop_t *props;     /* kafka.* pass-through (security), to both clients */
    size_t n_props;
    filter_slot_t *slot; /* where resolved filters are swapped in (the worker's slot) */
    metrics_registry_t *metrics;
} agg_control_opts_t;

typedef struct agg_control agg_control_t;

/* NULL with err on a bad option (Kafka property, instance name too long, ...). */
agg_control_t *agg_control_new(const agg_control_opts_t *opts, char *err, size_t errlen);
/* Lets heartbeats carry the worker's counters and the alarm watch its acknowledgements
 * (NULL detaches: call before agg_worker_free). */
void agg_control_attach(agg_control_t *c, agg_worker_t *w);
/* The shared control path it runs on: worker_control_wait_loaded polls the follower until the
 * initial load is complete (the resolved filter is then in the slot), worker_control_tick
 * steps it (config changes, heartbeat when due, alarm check) from the worker's on_tick,
 * worker_control_report_fatal raises the produce alarm as critical (the worker stopped on a
 * fatal error). */
worker_control_t *agg_control_wc(agg_control_t *c);
void agg_control_free(agg_control_t *c, int timeout_ms);

#endif
