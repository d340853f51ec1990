/* ndd-admin's serving side: the REST API on services/base/httpd, the timers that drive the
 * ndd.config publisher and the ndd.events consumer, and the token subcommands. admin_role.c
 * holds the settings table and the role (ndd-admin alone, or a role of ndd); main.c only
 * picks the token subcommand or the role. */
#ifndef NDD_ADMIN_SERVER_H
#define NDD_ADMIN_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon.h"
#include "daemon_role.h"

typedef struct admin_settings {
    /* The skeleton's common settings: http.listen, http.port and http.port-file are the one
     * server of the REST API and /metrics /healthz /readyz; log.level, log.json, bootstrap. */
    daemon_settings_t common;
    const char *db;           /* libpq conninfo */
    const char *db_schema;    /* default "ndd" */
    const char *config_topic; /* ndd.config */
    const char *events_topic; /* ndd.events */
    const char *events_group;
    int64_t config_replication; /* -1: broker default */
    uint64_t max_body;
    int64_t max_objects;
    const char *tls_cert, *tls_key, *tls_ca;
    bool tls_client_auth;
    int64_t down_after_ms;
    int64_t feed_lag_window_ms; /* the lag trend's window ("falling behind") */
    int64_t feed_lag_floor;     /* messages below which a feed is never falling behind */
    int64_t token_ttl_ms;
    int64_t kafka_status_ms; /* Kafka feed status samples (0: none) */
    int64_t db_wait_ms;      /* how long start-up waits for PostgreSQL */
    const char *role, *name; /* the token subcommands' */
} admin_settings_t;

/* The admin role: ndd-admin's settings and its run (admin_role.c). */
extern const daemon_role_t admin_role;

/* Runs the server on d (its settings d->def->settings, Kafka d->brokers: NULL for no
 * publishing and no events) until a stop: SIGINT/SIGTERM alone, ndd's flag embedded. The
 * exit code: 0 after a stop. */
int admin_serve(daemon_t *d);
/* `ndd-admin token create|list|revoke`: prints to stdout. Returns the exit code. */
int admin_token_command(const admin_settings_t *s, const char *verb, const char *name,
                        const char *role);

/* `ndd-admin backup FILE` / `ndd-admin restore FILE` (verb "backup" or "restore"): the admin's
 * schema to or from a pg_dump custom-format file (admin_backup.c). Returns the exit code: 0
 * done, 1 failed, 2 usage. */
int admin_backup_command(const admin_settings_t *s, const char *verb, const char *file);

/* `ndd-admin apply [...] FILE|DIR` (argv[0] "apply"): the client of POST /api/v1/apply
 * (admin_apply_cli.c). Returns the exit code: 0 done, 1 refused, 2 usage. */
int admin_apply_command(int argc, char **argv);

#endif
