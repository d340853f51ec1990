/* The daemon skeleton: the start-up and shutdown every NDD daemon shares (ndd-aggregation,
 * ndd-correlation, ndd-adapter, ndd-admin, and the ones to come). It loads the settings
 * through the typed config map into the daemon's settings struct, answers --help, --version
 * and --check-config, sets up logging, validates the kafka.* pass-through properties and
 * resolves the broker list, registers ndd_build_info, runs the /metrics /healthz /readyz
 * server on its own thread with the one readiness rule, and handles the signals. The daemon's
 * own settings, its check and its worker stay in its main.c and *_control.c.
 *
 * Files: daemon.c (init, start, wait, free), daemon_check.c (kafka.* validation and
 * --check-config), daemon_version.c (--version and ndd_build_info), daemon_ready.c (the
 * readiness rule and the Kafka probe).
 *
 * The common settings, with the same names in every daemon (docs/configuration.md):
 *   http.listen, http.port (-1: no server, 0: ephemeral), http.port-file, log.level,
 *   log.json, bootstrap (else env NDD_KAFKA, else kafka.bootstrap.servers).
 * A daemon's settings struct starts with a daemon_settings_t named `common`, and its spec
 * table ends with DAEMON_SPECS_COMMON(its struct type, its default port). */
#ifndef NDD_DAEMON_H
#define NDD_DAEMON_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "httpd.h"
#include "kafka.h"
#include "metrics.h"

/* The common settings: the first member, `common`, of every daemon's settings struct. */
typedef struct daemon_settings {
    const char *bootstrap;
    const char *http_listen;
    int64_t http_port;
    const char *http_port_file;
    const char *log_level;
    bool log_json;
} daemon_settings_t;

/* The common rows, to end a daemon's spec table with; port is its default HTTP port as text. */
/* clang-format off */
#define DAEMON_SPECS_COMMON(type, port)                                                         \
    {"bootstrap", CONFIG_STRING, NULL,                                                          \
     "Kafka bootstrap servers (else env NDD_KAFKA, else kafka.bootstrap.servers)", 0,           \
     CONFIG_AT(type, common.bootstrap), 0, 0},                                                  \
    {"http.listen", CONFIG_STRING, "127.0.0.1", "address of the HTTP server", 0,                \
     CONFIG_AT(type, common.http_listen), 0, 0},                                                \
    {"http.port", CONFIG_INT, port,                                                             \
     "port of /metrics /healthz /readyz (0: ephemeral, -1: no HTTP server)", 0,                 \
     CONFIG_AT(type, common.http_port), -1, 65535},                                             \
    {"http.port-file", CONFIG_STRING, NULL, "write the bound HTTP port to this file", 0,        \
     CONFIG_AT(type, common.http_port_file), 0, 0},                                             \
    {"log.level", CONFIG_STRING, "info", "debug, info, warn, error", 0,                         \
     CONFIG_AT(type, common.log_level), 0, 0},                                                  \
    {"log.json", CONFIG_BOOL, "false", "log JSON lines instead of text", 0,                     \
     CONFIG_AT(type, common.log_json), 0, 0}
/* clang-format on */

/* daemon_init's "go on" result; any other value is the process exit code. */
#define DAEMON_CONTINUE (-1)

/* What /readyz waits for; the first one that does not hold is the /readyz body. */
typedef enum daemon_cond {
    DAEMON_COND_KAFKA = 0,  /* a broker answered (the skeleton's probe sets it) */
    DAEMON_COND_CONFIG,     /* the configuration (file or topic) is loaded and applied */
    DAEMON_COND_PARTITIONS, /* the consumer group gave this member its partitions */
    DAEMON_COND__COUNT,
} daemon_cond_t;

#define DAEMON_NEEDS(c) (1u << (c))
#define DAEMON_NEEDS_ALL                                                                           \
    (DAEMON_NEEDS(DAEMON_COND_KAFKA) | DAEMON_NEEDS(DAEMON_COND_CONFIG) |                          \
     DAEMON_NEEDS(DAEMON_COND_PARTITIONS))

typedef struct daemon daemon_t;

/* What a daemon gives the skeleton: one static description. */
typedef struct daemon_def {
    const char *name;  /* program name, prefix of every stderr line, daemon label */
    const char *usage; /* printed before the settings table by --help; may be NULL */
    const config_spec_t *specs;
    size_t n_specs;
    void *settings; /* the daemon's settings struct (first member: daemon_settings_t common) */
    /* Validates what the settings name (files, filters, NF type, ranges across settings)
     * without connecting to anything; with out != NULL (--check-config) it also prints one
     * line per feed/filter/etc. of what would run. 0, or -1 with err naming the key/field. */
    int (*check)(daemon_t *d, FILE *out, char *err, size_t errlen);
    /* --version lines of libraries only this daemon links (nghttp2); may be NULL. */
    void (*version)(FILE *out);
    bool kafka_optional;  /* starts without a broker list (the admin) */
    unsigned ready_needs; /* DAEMON_NEEDS(...) of /readyz; 0: DAEMON_NEEDS_ALL */
} daemon_def_t;

struct daemon {
    const char *name;
    const daemon_def_t *def;
    config_t *cfg;
    const daemon_settings_t *common; /* the settings struct's common part */
    const char *brokers;             /* resolved: bootstrap, NDD_KAFKA, kafka.bootstrap.servers */
    kafka_prop_t *props;             /* every kafka.* pass-through property (prefix removed) */
    size_t n_props;
    metrics_registry_t *metrics; /* metrics_default_registry() */
    httpd_thread_t *http;        /* NULL with http.port -1 */
    /* Set by SIGTERM/SIGINT and (with daemon_start's hup) SIGHUP; the daemon clears reload. */
    volatile sig_atomic_t *stop, *reload;
    /* readiness (daemon_ready.c) */
    volatile bool holds[DAEMON_COND__COUNT];
    const char *volatile override; /* not ready for this reason regardless ("stopping") */
    struct daemon_probe *probe;
    int64_t partitions_next_ms;
    /* A role of ndd (daemon_init_embedded), NULL for a daemon that is its own process. */
    const struct daemon_embed *embed;
    volatile sig_atomic_t own_stop, own_reload; /* stop and reload of an embedded role */
    /* ndd's own daemon: its readiness is its roles' too, so ndd renders /readyz itself. */
    void (*ready_hook)(void *arg);
    void *ready_hook_arg;
};

/* How ndd runs a daemon as one of its roles, in its own process: the settings come from the
 * role's section of ndd's file (no command line, no environment: those are ndd's), and the
 * HTTP server, the Kafka probe, the signals and the logging are ndd's. The role keeps its
 * own stop and reload flags (d->stop, d->reload), which ndd sets, so that one role can be
 * stopped and started again while the others run. */
typedef struct daemon_embed {
    const daemon_t *host; /* ndd's own daemon: its probe's answer is the role's Kafka too */
    const config_leaf_t *leaves;
    size_t n_leaves;
    const char *origin; /* "file ndd.json, roles.adapter" */
    /* The role's readiness changed: ndd renders every role's in its /readyz (any thread). */
    void (*on_ready)(void *arg);
    void *arg;
    /* ndd's one producer for every role's heartbeats and alarms (events.h); NULL: the role
     * has its own, as the separate daemon does. */
    struct events_hub *events_hub;
} daemon_embed_t;

/* Keeps librdkafka's large short-lived fetch and produce buffers in the heap (reused) instead
 * of fresh mmap'd zeroed pages each time; arena_max (0: glibc's default, 8 per core) bounds
 * how many malloc arenas the threads share, so every librdkafka thread does not keep its own
 * arena's free memory. Call first in main. */
void daemon_heap_setup(int arena_max);

/* Loads the settings into def->settings, answers --help and --version (exit 0), sets up
 * logging, validates the kafka.* properties and the broker list, runs def->check, and with
 * --check-config prints the effective settings (secrets masked) and what would run. Returns
 * DAEMON_CONTINUE, or the exit code (0 after --help/--version/a valid --check-config, 2 on
 * a bad setting, explained on stderr with the key named). daemon_free releases d always. */
int daemon_init(daemon_t *d, const daemon_def_t *def, int argc, char **argv);
/* daemon_init with leaves in the config file's place (config_load_leaves): ndd, which reads
 * its file itself to split it among its roles, gives its own part this way. */
int daemon_init_leaves(daemon_t *d, const daemon_def_t *def, int argc, char **argv,
                       const config_leaf_t *leaves, size_t n_leaves, const char *origin);

/* daemon_init for a role of ndd (see daemon_embed_t): no --help or --version, no logging set
 * up, no ndd_build_info; def->check runs (print: --check-config's lines on out when not
 * NULL). DAEMON_CONTINUE, or 2 with the reason, key named, in err. */
int daemon_init_embedded(daemon_t *d, const daemon_def_t *def, const daemon_embed_t *e, FILE *out,
                         char *err, size_t errlen);
bool daemon_is_embedded(const daemon_t *d);
/* The HTTP port the process answers on, ndd's for a role of ndd: with the host name and the
 * service it makes a consumer's static group membership (kafka_group_instance_id), so a
 * role restarted after a kill -9 takes its partitions back at once, as the daemon does. */
int daemon_http_port(const daemon_t *d);
/* The producer a role's events publisher shares (daemon_embed_t), NULL for its own. */
struct events_hub *daemon_events_hub(const daemon_t *d);

/* Starts the HTTP thread (not ready until the conditions hold), writes http.port-file,
 * starts the Kafka probe, installs the signal handlers (SIGHUP too when hup; SIGPIPE
 * ignored). 0, or -1 with the reason on stderr. An embedded role starts none of these: it
 * publishes its first readiness reason to ndd. */
int daemon_start(daemon_t *d, bool hup);

/* The daemon says whether cond holds now; /readyz follows (any thread). */
void daemon_hold(daemon_t *d, daemon_cond_t cond, bool holds);
/* For a worker's tick: at most once a second asks count(arg) how many partitions this member
 * has and holds DAEMON_COND_PARTITIONS while it is more than 0. */
void daemon_poll_partitions(daemon_t *d, int (*count)(void *arg), void *arg);
/* Not ready for reason whatever holds ("stopping", "disabled by configuration"); NULL
 * lifts it. */
void daemon_not_ready(daemon_t *d, const char *reason);
/* The /readyz reason now, NULL when ready (tests, logs). */
const char *daemon_ready_reason(const daemon_t *d);

/* Writes port (one line) to the http.port-file if set: 0, or -1 on stderr. For daemons that
 * run their own server (the admin's REST API). */
int daemon_write_port_file(const daemon_t *d, unsigned port);

/* Called between two waits of daemon_wait: 0 when what is awaited is there. */
typedef int (*daemon_wait_fn)(void *arg, int timeout_ms);
/* Calls fn(arg, 1000) until it returns 0 or a stop is asked, logging every 10 s that what
 * is still awaited. 0 when fn succeeded, -1 when stopped first. */
int daemon_wait(daemon_t *d, daemon_wait_fn fn, void *arg, const char *what);

/* NDD's version (ndd_version.h), for heartbeats. */
const char *daemon_version(void);

/* Stops the HTTP thread and the probe, frees the settings and properties. */
void daemon_free(daemon_t *d);

#endif
