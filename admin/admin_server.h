/* ndd-admin's serving side: the REST API on services/base/httpd, the timers that drive the
 * ndd.config publisher and the ndd.events consumer, and the token subcommands. main.c only
 * parses settings and calls these. */
#ifndef NDD_ADMIN_SERVER_H
#define NDD_ADMIN_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon.h"

typedef struct admin_settings {
    /* The skeleton's common settings: http.listen, http.port and http.port-file are the one
     * server of the REST API and /metrics /healthz /readyz; log.level, log.json, bootstrap. */
    daemon_settings_t common;
    const char *db;           /* libpq conninfo */
    const char *db_schema;    /* default "ndd" */
    const char *brokers;      /* NULL: no Kafka (no publishing, no events); the skeleton's */
    const char *config_topic; /* ndd.config */
    const char *events_topic; /* ndd.events */
    const char *events_group;
    int64_t config_replication; /* -1: broker default */
    uint64_t max_body;
    int64_t max_objects;
    const char *tls_cert, *tls_key, *tls_ca;
    bool tls_client_auth;
    int64_t down_after_ms;
    int64_t token_ttl_ms;
    int64_t kafka_status_ms; /* Kafka feed status samples (0: none) */
    int64_t db_wait_ms;      /* how long start-up waits for PostgreSQL */
    const char *role, *name; /* the token subcommands' */
} admin_settings_t;

/* Runs the server until SIGINT/SIGTERM. Returns the process exit code. */
int admin_serve(const admin_settings_t *s);
/* `ndd-admin token create|list|revoke`: prints to stdout. Returns the exit code. */
int admin_token_command(const admin_settings_t *s, const char *verb, const char *name,
                        const char *role);

#endif
