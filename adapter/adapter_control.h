/* ndd-adapter's settings (the typed struct main.c's spec table fills), their check, and its
 * control path: the feed manager fed from the feeds file (watched, reloaded on SIGHUP) or
 * from the ndd.config topic (kind "feed"), heartbeats with the per-feed counters on
 * ndd.events, and the readiness the skeleton reports (configuration applied, partitions
 * assigned). Everything runs on one libevent loop (adapter_control_run). */
#ifndef NDD_ADAPTER_CONTROL_H
#define NDD_ADAPTER_CONTROL_H

#include <stdint.h>
#include <stdio.h>

#include "daemon.h"

typedef struct adapter_settings {
    daemon_settings_t common; /* first: the skeleton's common settings */
    const char *feeds_file, *config_topic, *events_topic, *instance;
    int64_t feeds_watch_ms, drain_timeout_ms, feed_memory_mb;
    int64_t heartbeat_ms; /* heartbeat period on the events topic */
} adapter_settings_t;

typedef struct adapter_control adapter_control_t;

/* daemon_def_t.check: exactly one of feeds-file and config-topic, and every feed of the
 * feeds file valid (feed_config_parse). 0, or -1 with err naming the setting and field. */
int adapter_control_check(daemon_t *d, FILE *out, char *err, size_t errlen);
/* daemon_def_t.version: nghttp2, which only the adapter links. */
void adapter_control_version(FILE *out);
/* Starts the events publisher, the feed manager and the configuration source. NULL with err
 * when the configuration topic's follower cannot be created. */
adapter_control_t *adapter_control_new(daemon_t *d, const adapter_settings_t *s, char *err,
                                       size_t errlen);
/* Runs the loop until SIGTERM/SIGINT; 0. */
int adapter_control_run(adapter_control_t *a);
/* Stops the feeds (each drains), then the events publisher. NULL is a no-op. */
void adapter_control_free(adapter_control_t *a);

/* The adapter role (adapter_role.c): ndd-adapter's main and ndd run it. */
struct daemon_role;
extern const struct daemon_role adapter_role;

#endif
