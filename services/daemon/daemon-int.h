/* What the skeleton's files (daemon.c, daemon_check.c, daemon_version.c, daemon_ready.c)
 * share and no daemon calls. */
#ifndef NDD_DAEMON_INT_H
#define NDD_DAEMON_INT_H

#include <stdbool.h>
#include <stdio.h>

#include "daemon.h"

/* Collects the kafka.* properties (each checked on a scratch librdkafka configuration) and
 * resolves the brokers: 0, or -1 with err naming the property or the missing setting. */
int daemon_kafka_setup(daemon_t *d, char *err, size_t errlen);
/* def->check, and with print the effective settings and what would run on stdout: 0, or -1
 * with the reason on stderr. */
int daemon_run_check(daemon_t *d, bool print);
void daemon_print_version(const daemon_t *d, FILE *out);
/* Registers ndd_build_info{version,revision,daemon} 1. */
void daemon_build_info(daemon_t *d);
/* The Kafka probe behind DAEMON_COND_KAFKA (daemon_ready.c). */
void daemon_probe_start(daemon_t *d);
void daemon_probe_stop(daemon_t *d);

#endif
