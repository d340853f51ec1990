/* ndd-admin: the REST API that manages feeds, filters, sources and correlation settings,
 * backed by PostgreSQL and distributed through ndd.config (docs/api.md).
 *
 *   ndd-admin [--pg CONNINFO] [--bootstrap HOST:PORT] [--port 9100] ...   serve
 *   ndd-admin token create --role admin|viewer --name NAME                prints a new token once
 *   ndd-admin token list | token revoke --name NAME
 *
 * main only reads settings and hands over to admin_server.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin_server.h"
#include "config.h"
#include "log.h"

static const config_spec_t admin_specs[] = {
    {"pg", CONFIG_STRING, NULL, "PostgreSQL libpq conninfo (env NDD_PG; --pg-file reads it)",
     CONFIG_F_SECRET},
    {"db-schema", CONFIG_STRING, "ndd", "PostgreSQL schema holding the admin's tables", 0},
    {"db-wait", CONFIG_DURATION_MS, "30s", "how long start-up waits for PostgreSQL", 0},
    {"bootstrap", CONFIG_STRING, NULL, "Kafka bootstrap servers (env NDD_KAFKA also works)", 0},
    {"config-topic", CONFIG_STRING, "ndd.config", "compacted topic the configuration goes to", 0},
    {"config-replication", CONFIG_INT, "-1",
     "replication factor when creating topics (-1 = "
     "broker default)",
     0},
    {"events-topic", CONFIG_STRING, "ndd.events", "topic of worker heartbeats and alarms", 0},
    {"events-group", CONFIG_STRING, "ndd-admin", "consumer group reading the events topic", 0},
    {"listen", CONFIG_STRING, "127.0.0.1", "address the API listens on", 0},
    {"port", CONFIG_INT, "9100", "API port (0 = ephemeral; see --port-file)", 0},
    {"port-file", CONFIG_STRING, NULL, "write the bound port to this file once serving", 0},
    {"max-body", CONFIG_BYTES, "1MiB", "largest request body; larger gets 413", 0},
    {"max-objects", CONFIG_INT, "10000", "objects per collection; more gets 507", 0},
    {"tls-cert", CONFIG_STRING, NULL, "PEM certificate: serve HTTPS", 0},
    {"tls-key", CONFIG_STRING, NULL, "PEM private key of --tls-cert", 0},
    {"tls-ca", CONFIG_STRING, NULL, "PEM CA for client certificates (mTLS)", 0},
    {"tls-client-auth", CONFIG_BOOL, "false", "require a client certificate from --tls-ca", 0},
    {"down-after", CONFIG_DURATION_MS, "0",
     "missing heartbeats before service-down (0 = three "
     "of the worker's intervals)",
     0},
    {"token-ttl", CONFIG_DURATION_MS, "30s", "how long a verified token is cached", 0},
    {"log-level", CONFIG_STRING, "info", "debug, info, warn, error", 0},
    {"role", CONFIG_STRING, NULL, "token create: admin or viewer", 0},
    {"name", CONFIG_STRING, NULL, "token create/revoke: the token's name", 0},
};
#define ADMIN_NSPECS (sizeof(admin_specs) / sizeof(*admin_specs))

int main(int argc, char **argv)
{
    /* `token VERB ...`: VERB takes argv[0]'s place for the settings parser. */
    bool token_cmd = argc >= 3 && strcmp(argv[1], "token") == 0;
    int cargc = token_cmd ? argc - 2 : argc;
    char **cargv = token_cmd ? argv + 2 : argv;
    char err[512];
    config_t *cfg = config_load(admin_specs, ADMIN_NSPECS, cargc, cargv, err, sizeof(err));
    if (!cfg) {
        fprintf(stderr, "ndd-admin: %s\n", err);
        return 2;
    }
    if (config_help_requested(cfg)) {
        printf("usage: ndd-admin [settings]              serve the REST API\n"
               "       ndd-admin token create --role admin|viewer --name NAME\n"
               "       ndd-admin token list | token revoke --name NAME\n\n");
        config_print_help(admin_specs, ADMIN_NSPECS, "ndd-admin", stdout);
        config_free(cfg);
        return 0;
    }
    log_level_t level = LOG_LEVEL_INFO;
    if (log_level_parse(config_get_str(cfg, "log-level"), &level) != 0) {
        fprintf(stderr, "ndd-admin: --log-level: \"%s\" is not debug, info, warn or error\n",
                config_get_str(cfg, "log-level"));
        config_free(cfg);
        return 2;
    }
    log_setup("ndd-admin", level, 0);
    admin_settings_t s = {
        .db = config_get_str(cfg, "pg"),
        .db_schema = config_get_str(cfg, "db-schema"),
        .brokers = config_get_str(cfg, "bootstrap"),
        .config_topic = config_get_str(cfg, "config-topic"),
        .events_topic = config_get_str(cfg, "events-topic"),
        .events_group = config_get_str(cfg, "events-group"),
        .config_replication = (int)config_get_int(cfg, "config-replication"),
        .listen = config_get_str(cfg, "listen"),
        .port = (uint16_t)config_get_int(cfg, "port"),
        .max_body = (size_t)config_get_bytes(cfg, "max-body"),
        .max_objects = (size_t)config_get_int(cfg, "max-objects"),
        .tls_cert = config_get_str(cfg, "tls-cert"),
        .tls_key = config_get_str(cfg, "tls-key"),
        .tls_ca = config_get_str(cfg, "tls-ca"),
        .tls_client_auth = config_get_bool(cfg, "tls-client-auth"),
        .down_after_ms = config_get_duration_ms(cfg, "down-after"),
        .token_ttl_ms = config_get_duration_ms(cfg, "token-ttl"),
        .db_wait_ms = config_get_duration_ms(cfg, "db-wait"),
        .port_file = config_get_str(cfg, "port-file"),
    };
    if (!s.brokers)
        s.brokers = getenv("NDD_KAFKA");
    int rc = 2;
    if (!s.db || !*s.db) {
        fprintf(stderr, "ndd-admin: no PostgreSQL: set --pg CONNINFO, --pg-file FILE or NDD_PG\n");
    } else if (config_get_int(cfg, "port") < 0 || config_get_int(cfg, "port") > 65535 ||
               config_get_int(cfg, "max-objects") < 1) {
        fprintf(stderr, "ndd-admin: --port must be 0..65535 and --max-objects at least 1\n");
    } else if (s.tls_cert && !s.tls_key) {
        fprintf(stderr, "ndd-admin: --tls-cert needs --tls-key\n");
    } else if (s.tls_client_auth && (!s.tls_cert || !s.tls_ca)) {
        fprintf(stderr, "ndd-admin: --tls-client-auth needs --tls-cert, --tls-key and --tls-ca\n");
    } else if (token_cmd) {
        rc = admin_token_command(&s, argv[2], config_get_str(cfg, "name"),
                                 config_get_str(cfg, "role"));
    } else if (argc >= 2 && argv[1][0] != '-') {
        fprintf(stderr, "ndd-admin: unknown command \"%s\" (try --help)\n", argv[1]);
    } else {
        rc = admin_serve(&s);
    }
    config_free(cfg);
    return rc;
}
