/* The start-up and shutdown every NDD Kafka daemon (ndd-aggregation, ndd-correlation) shares:
 * settings from the command line/environment, logging, the kafka.* pass-through properties and
 * the broker list, the /metrics /healthz /readyz server on its own thread, signal handling and
 * readiness. The daemon's own settings and its worker stay in its main.c.
 *
 * The spec table given to daemon_init must contain these keys (the daemons' common options):
 *   bootstrap (string), log-level (string), log-json (bool), http-listen (string),
 *   http-port (int, -1: no server, 0: ephemeral), http-port-file (string); all but bootstrap
 *   come with DAEMON_SPECS_COMMON. */
#ifndef NDD_DAEMON_H
#define NDD_DAEMON_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "httpd.h"
#include "kafka.h"
#include "metrics.h"

/* The common options of daemon_init's spec table, to end a daemon's table with; port is the
 * daemon's default HTTP port as a string ("9102"). */
/* clang-format off */
#define DAEMON_SPECS_COMMON(port)                                                              \
    {"http-listen", CONFIG_STRING, "127.0.0.1", "address of /metrics, /healthz, /readyz", 0},  \
    {"http-port", CONFIG_INT, port, "port of /metrics (0: ephemeral, -1: no HTTP server)", 0}, \
    {"http-port-file", CONFIG_STRING, NULL, "write the bound HTTP port to this file", 0},      \
    {"log-level", CONFIG_STRING, "info", "debug, info, warn, error", 0},                       \
    {"log-json", CONFIG_BOOL, "false", "log JSON lines", 0}
/* clang-format on */

/* daemon_init's "go on" result; any other value is the process exit code. */
#define DAEMON_CONTINUE (-1)

typedef struct daemon {
    const char *name; /* program name, prefix of every stderr line */
    config_t *cfg;
    const char *brokers; /* --bootstrap, else env NDD_KAFKA, else kafka.bootstrap.servers */
    kafka_prop_t *props; /* every kafka.* pass-through property (prefix removed) */
    size_t n_props;
    metrics_registry_t *metrics; /* metrics_default_registry() */
    httpd_thread_t *http;        /* NULL with --http-port -1 */
    /* Set by SIGTERM/SIGINT and (with daemon_start's hup) SIGHUP; the daemon clears reload. */
    volatile sig_atomic_t *stop, *reload;
    const char *ready_reason; /* /readyz text until daemon_set_ready (daemon_start's) */
} daemon_t;

/* Called between two waits of daemon_wait: 0 when what is awaited is there. */
typedef int (*daemon_wait_fn)(void *arg, int timeout_ms);

/* Keeps librdkafka's large short-lived fetch and produce buffers in the heap (reused) instead
 * of fresh mmap'd zeroed pages each time; one_arena also stops every librdkafka thread from
 * keeping its own arena's free memory. Call first in main. */
void daemon_heap_setup(bool one_arena);

/* Loads the settings (printing the help with --help), sets up logging and collects the Kafka
 * properties and brokers. Returns DAEMON_CONTINUE, or the exit code (0 after --help, 2 on a
 * bad setting, explained on stderr). daemon_free releases d in every case. */
int daemon_init(daemon_t *d, const char *name, const config_spec_t *specs, size_t n_specs, int argc,
                char **argv);

/* Starts the HTTP thread (not ready, with ready_reason on /readyz), writes http-port-file,
 * and installs the signal handlers (SIGHUP too when hup; SIGPIPE ignored). 0, or -1 with the
 * reason on stderr. */
int daemon_start(daemon_t *d, const char *ready_reason, bool hup);

/* /readyz: ready, or not ready with reason (may be NULL). No-op without an HTTP server. */
void daemon_set_ready(daemon_t *d, bool ready, const char *reason);

/* Calls fn(arg, 1000) until it returns 0 or a stop is asked, logging every 10 s that what
 * is still awaited. 0 when fn succeeded, -1 when stopped first. */
int daemon_wait(daemon_t *d, daemon_wait_fn fn, void *arg, const char *what);

/* Stops the HTTP thread and frees the settings and properties. */
void daemon_free(daemon_t *d);

#endif
