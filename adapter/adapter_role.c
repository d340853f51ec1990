/* The adapter role: runs the feeds of a feeds file or of the ndd.config topic
 * (docs/adapter.md), as ndd-adapter runs it alone (main.c) and ndd beside the others.
 * The spec table, then the run: the control path (adapter_control.c) runs the feeds until a
 * stop; SIGHUP (or ndd's reload) re-reads the feeds file. */
#include <stdio.h>

#include "adapter_control.h"
#include "daemon_role.h"

static adapter_settings_t adapter_standalone;
#define AT(f) CONFIG_AT(adapter_settings_t, f), 0, 0
#define IN(f, lo, hi) CONFIG_AT(adapter_settings_t, f), lo, hi
/* clang-format off */
static const config_spec_t adapter_specs[] = {
    {"feeds-file", CONFIG_STRING, NULL,
     "JSON file with the feeds (reloaded on SIGHUP/change); or --config-topic", 0,
     AT(feeds_file)},
    {"config-topic", CONFIG_STRING, "", "follow the admin's feeds on this compacted topic (e.g. "
     "ndd.config) instead of a file", 0, AT(config_topic)},
    {"feeds-watch", CONFIG_DURATION_MS, "1s", "how often the feeds file is checked for changes "
     "(0: never)", 0, IN(feeds_watch_ms, 0, 3600000)},
    {"drain-timeout", CONFIG_DURATION_MS, "10s",
     "how long a stopping feed waits for in-flight acknowledgements", 0,
     IN(drain_timeout_ms, 0, 3600000)},
    {"events-topic", CONFIG_STRING, "ndd.events",
     "heartbeats and alarms for ndd-admin go to this topic (empty: off)", 0, AT(events_topic)},
    {"instance", CONFIG_STRING, NULL, "name of this process in heartbeats (default: host name)",
     0, AT(instance)},
    {"heartbeat-interval", CONFIG_DURATION_MS, "5s", "heartbeat period on the events topic", 0,
     IN(heartbeat_ms, 100, 3600000)},
    {"feed-memory-mb", CONFIG_INT, "5", "memory budget of each feed in MiB: sizes librdkafka's "
     "prefetch and fetches and the bytes a feed holds (a feed's delivery.memory_mb overrides it)",
     0, IN(feed_memory_mb, 1, 65536)},
    DAEMON_SPECS_COMMON(adapter_settings_t, "9102"),
};
/* clang-format on */
static const daemon_def_t adapter_def = {.name = "ndd-adapter",
                                         .specs = adapter_specs,
                                         .n_specs =
                                             sizeof(adapter_specs) / sizeof(adapter_specs[0]),
                                         .settings = &adapter_standalone,
                                         .check = adapter_control_check,
                                         .version = adapter_control_version};

static int adapter_role_run(daemon_t *d)
{
    char err[1024];
    adapter_control_t *a = NULL;
    int rc = 1;
    if (daemon_start(d, false) == 0) {
        a = adapter_control_new(d, d->def->settings, err, sizeof(err));
        if (a)
            rc = adapter_control_run(a);
        else
            fprintf(stderr, "%s: %s\n", d->name, err);
    }
    adapter_control_free(a);
    return rc;
}

const daemon_role_t adapter_role = {.name = "adapter",
                                    .def = &adapter_def,
                                    .settings_size = sizeof(adapter_settings_t),
                                    /* Four arenas: 10 h2c feeds peaked at 120-131 MiB
                                     * with glibc's 16 and 109-112 MiB with 4, CPU per copy
                                     * the same within the noise (3 alternating rounds of
                                     * bench/adapter/run.sh --feeds 10 --count 20000); one arena
                                     * cost about 15 % more CPU there. */
                                    .arena_max = 4,
                                    .run = adapter_role_run};
