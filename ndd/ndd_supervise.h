/* ndd's role instances: each runs on a thread of its own with its own settings struct, is
 * restarted with backoff when it stops by itself, and reports its readiness into ndd's one
 * /readyz (ndd_supervise.c). */
#ifndef NDD_SUPERVISE_H
#define NDD_SUPERVISE_H

#include <stdio.h>

#include "daemon.h"
#include "ndd_config.h"

typedef struct ndd_supervisor ndd_supervisor_t;

/* Every instance of c checked as its daemon's --check-config would (out: their lines, or
 * NULL). 0, or -1 with err naming the instance and the key. */
int ndd_supervise_check(const ndd_config_t *c, const daemon_t *host, FILE *out, char *err,
                        size_t errlen);
/* Starts every instance of c (c outlives the supervisor); readiness goes to host's HTTP
 * server. With host's brokers, one producer (events_hub_t) carries every role's heartbeats
 * and alarms, and ndd's own alarm role-restarted (resource: the role), to events_topic
 * (NULL: ndd.events). NULL with err. */
ndd_supervisor_t *ndd_supervise_start(const ndd_config_t *c, daemon_t *host,
                                      const char *events_topic, char *err, size_t errlen);
/* Until *host->stop: forwards reloads, then stops every instance and waits for it. */
void ndd_supervise_run(ndd_supervisor_t *s);
void ndd_supervise_free(ndd_supervisor_t *s);

#endif
