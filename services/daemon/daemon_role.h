/* A role: what one NDD daemon does, apart from being a process. Each daemon's library
 * (ndd_aggregation, ndd_adapter_core, ...) gives one daemon_role_t; the daemon's main.c runs
 * it alone (daemon_role_main), and ndd runs several in one process, each on its own thread
 * with its own settings struct (ndd/). The same run function serves both, so a role in ndd
 * keeps the daemon's guarantees, metrics and readiness rule. */
#ifndef NDD_DAEMON_ROLE_H
#define NDD_DAEMON_ROLE_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon.h"

struct event_base;

typedef struct daemon_role {
    const char *name;        /* its section under "roles" in ndd's file: "aggregation" */
    const daemon_def_t *def; /* def->settings: the standalone daemon's settings struct */
    size_t settings_size;    /* ndd gives each instance a zeroed struct of this size */
    int arena_max;           /* daemon_heap_setup's argument when the daemon runs alone */
    /* The role serves an API of its own on its own listener (the admin's REST API, the
     * console) with its own port and TLS settings: in ndd it keeps its http.* keys, where
     * every other role answers on ndd's one /metrics /healthz /readyz and may not set them. */
    bool own_http;
    /* Everything after daemon_init until *d->stop (or a failure): daemon_start included.
     * Returns the exit code: 0 after a stop, 1 on a failure (ndd restarts the role). */
    int (*run)(daemon_t *d);
} daemon_role_t;

/* A daemon's main: heap set-up, daemon_init, role->run, daemon_free. The exit code. */
int daemon_role_main(const daemon_role_t *role, int argc, char **argv);

/* For a role whose loop is a libevent base: how a stop (and a reload) reach that loop. Alone,
 * SIGTERM/SIGINT (and SIGHUP with on_reload) are evsignals of base; embedded, a 100 ms timer
 * reads *d->stop and *d->reload, because one process has one signal handler and libevent
 * gives signals to one base only. A stop breaks base's loop. NULL on OOM. */
typedef struct daemon_evstop daemon_evstop_t;
daemon_evstop_t *daemon_evstop_new(daemon_t *d, struct event_base *base,
                                   void (*on_reload)(void *arg), void *arg);
void daemon_evstop_free(daemon_evstop_t *s);

#endif
