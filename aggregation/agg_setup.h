/* ndd-aggregation's settings (the typed struct the spec table of main.c fills), their check
 * (the NF type against the known list, the filter file through the filter compiler, the
 * ranges), the topics it creates, and the worker and control options built from them. */
#ifndef NDD_AGG_SETUP_H
#define NDD_AGG_SETUP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "agg_control.h"
#include "agg_worker.h"
#include "daemon.h"

typedef struct agg_settings {
    daemon_settings_t common; /* first: the skeleton's common settings */
    const char *nf_type, *topic, *group, *main_topic, *dlq_topic;
    bool create_topics, cooperative, exactly_once;
    int64_t main_partitions, dlq_partitions;
    const char *filter_file, *config_topic, *ingress_filter, *events_topic, *instance;
    const char *main_format; /* "headers" | "frame" (docs/message-format.md) */
    int64_t heartbeat_ms, produce_alarm_ms, filter_check_ms, shutdown_timeout_ms;
    int64_t revoke_flush_ms, max_inflight, batch, transaction_ms;
    uint64_t max_body;
} agg_settings_t;

/* daemon_def_t.check: 0, or -1 with err naming the setting. */
int agg_setup_check(daemon_t *d, FILE *out, char *err, size_t errlen);
/* Creates the NF topic when missing, MAIN and the dead-letter topic. 0 or -1. */
int agg_setup_create_topics(const daemon_t *d, const agg_settings_t *s);
agg_control_opts_t agg_setup_control(const daemon_t *d, const agg_settings_t *s,
                                     filter_slot_t *slot);
/* What the worker's tick needs: the control path's step and the readiness of the partitions. */
typedef struct agg_run {
    daemon_t *d;
    agg_control_t *ctl;
    agg_worker_t *w;
} agg_run_t;
agg_config_t agg_setup_worker(const daemon_t *d, const agg_settings_t *s, filter_slot_t *slot,
                              agg_run_t *run);

/* The aggregation role (agg_role.c): ndd-aggregation's main and ndd run it. */
struct daemon_role;
extern const struct daemon_role agg_role;

#endif
