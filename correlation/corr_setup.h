/* ndd-correlation's settings (the typed struct the spec table of main.c fills), their check
 * (modes, xDR format, engine bounds, proxy NF types), the topics it creates, and the worker
 * configuration built from the settings and the ndd.config record. */
#ifndef NDD_CORR_SETUP_H
#define NDD_CORR_SETUP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "corr_control.h"
#include "corr_worker.h"
#include "daemon.h"

typedef struct corr_settings_map {
    daemon_settings_t common; /* first: the skeleton's common settings */
    const char *main_topic, *xdr_topic, *dlq_topic, *group, *client_id;
    bool create_topics, preallocate, from_path, from_body, cooperative, exactly_once;
    int64_t main_partitions, xdr_partitions, dlq_partitions;
    int64_t timeout_ms, max_open, max_partitions, batch, max_unacked, checkpoint_ms;
    uint64_t text_area, body_scan, max_body;
    config_list_t proxy_types;
    const char *xdr_format, *revoke_mode, *shutdown_mode;
    int64_t shutdown_timeout_ms, revoke_flush_ms, heartbeat_ms, produce_alarm_ms, transaction_ms;
    const char *config_topic, *events_topic, *instance, *correlation_name;
} corr_settings_map_t;

/* daemon_def_t.check: 0, or -1 with err naming the setting. */
int corr_setup_check(daemon_t *d, FILE *out, char *err, size_t errlen);
corr_control_opts_t corr_setup_control(const daemon_t *d, const corr_settings_map_t *s);
/* The worker's configuration from the settings, the record st overriding what it sets;
 * started gets what the worker runs (for the control path's restart-only comparison). */
void corr_setup_worker(const daemon_t *d, const corr_settings_map_t *s, const corr_settings_t *st,
                       corr_config_t *cc, corr_settings_t *started);
/* Creates MAIN when missing, the XDR and dead-letter topics. 0 or -1. */
int corr_setup_create_topics(const daemon_t *d, const corr_settings_map_t *s,
                             const corr_config_t *cc);
/* Waits while the record disables correlation: 0 once enabled, -1 when stopped first. */
int corr_setup_wait_enabled(daemon_t *d, corr_control_t *ctl, corr_settings_t *st);

typedef struct corr_run {
    daemon_t *d;
    corr_control_t *ctl;
    corr_worker_t *w;
} corr_run_t;

/* The correlation role (corr_role.c): ndd-correlation's main and ndd run it. */
struct daemon_role;
extern const struct daemon_role corr_role;

#endif
