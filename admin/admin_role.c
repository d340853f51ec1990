/* The admin role: the REST API over PostgreSQL that manages feeds, filters, sources and
 * correlation settings and distributes them through ndd.config (docs/api.md), as ndd-admin runs
 * it alone (main.c) and ndd beside the other roles.
 *
 * The spec table, the settings check, then the run (admin_server.c serves). The role serves on
 * its own listener (own_http): the REST API has its own port and TLS settings, which in ndd
 * stay the admin's; that listener answers /metrics /healthz /readyz too. */
#include <stdio.h>

#include "admin_server.h"
#include "daemon_role.h"

static admin_settings_t admin_standalone;
#define AT(f) CONFIG_AT(admin_settings_t, f), 0, 0
#define IN(f, lo, hi) CONFIG_AT(admin_settings_t, f), lo, hi
/* clang-format off */
static const config_spec_t admin_specs[] = {
    {"pg", CONFIG_STRING, NULL, "PostgreSQL libpq conninfo (env NDD_PG; --pg-file reads it)",
     CONFIG_F_SECRET, AT(db)},
    {"db-schema", CONFIG_STRING, "ndd", "PostgreSQL schema holding the admin's tables", 0,
     AT(db_schema)},
    {"db-wait", CONFIG_DURATION_MS, "30s", "how long start-up waits for PostgreSQL", 0,
     IN(db_wait_ms, 0, 86400000)},
    {"config-topic", CONFIG_STRING, "ndd.config", "compacted topic the configuration goes to", 0,
     AT(config_topic)},
    {"config-replication", CONFIG_INT, "-1",
     "replication factor of the topics it creates (-1: min(3, brokers), min.insync.replicas 2 with 3)", 0,
     IN(config_replication, -1, 100)},
    {"events-topic", CONFIG_STRING, "ndd.events", "topic of worker heartbeats and alarms", 0,
     AT(events_topic)},
    {"events-group", CONFIG_STRING, "ndd-admin", "consumer group reading the events topic", 0,
     AT(events_group)},
    {"max-body", CONFIG_BYTES, "1MiB", "largest request body; larger gets 413", 0, AT(max_body)},
    {"max-objects", CONFIG_INT, "10000", "objects per collection; more gets 507", 0,
     IN(max_objects, 1, 100000000)},
    {"tls-cert", CONFIG_STRING, NULL, "PEM certificate: serve HTTPS", 0, AT(tls_cert)},
    {"tls-key", CONFIG_STRING, NULL, "PEM private key of --tls-cert", 0, AT(tls_key)},
    {"tls-ca", CONFIG_STRING, NULL, "PEM CA for client certificates (mTLS)", 0, AT(tls_ca)},
    {"tls-client-auth", CONFIG_BOOL, "false", "require a client certificate from --tls-ca", 0,
     AT(tls_client_auth)},
    {"down-after", CONFIG_DURATION_MS, "0", "missing heartbeats before service-down (0 = three "
     "of the worker's intervals)", 0, IN(down_after_ms, 0, 86400000)},
    {"feed-lag-window", CONFIG_DURATION_MS, "30s", "window of a feed's lag trend: growing over it "
     "(and above --feed-lag-floor) is \"falling behind\"", 0, IN(feed_lag_window_ms, 2000, 3600000)},
    {"feed-lag-floor", CONFIG_INT, "1000", "messages of lag below which a feed is never falling "
     "behind (or 5 s of its rate, whichever is larger)", 0, IN(feed_lag_floor, 1, 1000000000)},
    {"kafka-status-interval", CONFIG_DURATION_MS, "10s", "how often the status of Kafka feeds "
     "(consumer lag, produce rate) is sampled (0 = never)", 0, IN(kafka_status_ms, 0, 86400000)},
    {"token-ttl", CONFIG_DURATION_MS, "30s", "how long a verified token is cached", 0,
     IN(token_ttl_ms, 0, 86400000)},
    {"role", CONFIG_STRING, NULL, "token create: admin or viewer", 0, AT(role)},
    {"name", CONFIG_STRING, NULL, "token create/revoke: the token's name", 0, AT(name)},
    DAEMON_SPECS_COMMON(admin_settings_t, "9100"),
};
/* clang-format on */

static int admin_check(daemon_t *d, FILE *out, char *err, size_t errlen)
{
    const admin_settings_t *S = d->def->settings;
    if (!S->db || !*S->db)
        snprintf(err, errlen, "pg: no PostgreSQL: set --pg CONNINFO, --pg-file FILE or NDD_PG");
    else if (S->common.http_port < 0)
        snprintf(err, errlen, "http.port: the REST API needs a port (0..65535)");
    else if (S->tls_cert && !S->tls_key)
        snprintf(err, errlen, "tls-key: --tls-cert needs --tls-key");
    else if (S->tls_client_auth && (!S->tls_cert || !S->tls_ca))
        snprintf(err, errlen, "tls-client-auth: needs --tls-cert, --tls-key and --tls-ca");
    else {
        if (out)
            fprintf(out, "REST API on %s:%lld (%s), schema %s, configuration topic %s\n",
                    S->common.http_listen, (long long)S->common.http_port,
                    S->tls_cert ? "HTTPS" : "HTTP", S->db_schema, S->config_topic);
        return 0;
    }
    return -1;
}

static const daemon_def_t admin_def = {
    .name = "ndd-admin",
    .usage = "usage: ndd-admin [settings]              serve the REST API\n"
             "       ndd-admin token create --role admin|viewer --name NAME\n"
             "       ndd-admin token list | token revoke --name NAME\n"
             "       ndd-admin apply [--dry-run] [--prune] [--url URL] [--token-file F]\n"
             "                       [--ca-file F] FILE|DIR   (ndd-admin apply --help)\n",
    .specs = admin_specs,
    .n_specs = sizeof(admin_specs) / sizeof(admin_specs[0]),
    .settings = &admin_standalone,
    .check = admin_check,
    .kafka_optional = true,
    /* Ready once the configuration is loaded from PostgreSQL and the API serves it; Kafka is
     * optional (without it nothing is published), so it is not awaited. */
    .ready_needs = DAEMON_NEEDS(DAEMON_COND_CONFIG),
};

const daemon_role_t admin_role = {.name = "admin",
                                  .def = &admin_def,
                                  .settings_size = sizeof(admin_settings_t),
                                  .arena_max = 0,
                                  .own_http = true,
                                  .run = admin_serve};
