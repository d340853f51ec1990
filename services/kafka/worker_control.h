/* The control path glue every NDD Kafka worker shares (ndd-aggregation, ndd-correlation):
 * follow ndd.config (config_topic) for some record kinds, publish heartbeats and alarms on
 * ndd.events (events), and step both from the worker's loop at a bounded rate. The owner
 * keeps what is its own: which records matter and how they apply (resolve), what the
 * heartbeat reports (collect) and which alarms it raises (check).
 *
 * Also the "produce stalled" watch both workers raise an alarm from: records handed to Kafka
 * while no acknowledgement came for a while, and the consumer backpressure step with the two
 * metrics both export for it. */
#ifndef NDD_WORKER_CONTROL_H
#define NDD_WORKER_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config_topic.h"
#include "events.h"
#include "kafka.h"
#include "metrics.h"

typedef struct worker_control_opts {
    const char *brokers;
    const kafka_prop_t *props; /* kafka.* pass-through, routed by kafka_props_split */
    size_t n_props;
    metrics_registry_t *metrics;
    void *owner; /* handed to every callback below */

    /* ndd.config: off when config_topic is NULL or "". Every upsert or delete of a record of
     * kinds sets dirty (the owner resolves its whole configuration again, not per record). */
    const char *config_topic;
    const char *config_client_id;
    const char *const *kinds;
    size_t n_kinds;
    config_topic_loaded_fn on_loaded; /* may be NULL; it may set wc->dirty itself */

    /* ndd.events: off when events_topic is NULL or "". */
    const char *events_topic;
    const char *service;  /* "ndd-aggregation" */
    const char *log_name; /* prefix of the log lines ("aggregation SCP"); NULL: service */
    const char *instance;
    const char *version;
    int64_t heartbeat_ms;
    events_collect_fn collect;
    events_info_fn info;      /* may be NULL */
    events_hub_t *events_hub; /* NULL: the publisher's own producer */

    /* Called from a step once the configuration is loaded while wc->dirty is set; it clears
     * dirty (or leaves it set to be called again at the next step). */
    void (*resolve)(void *owner);
    /* Called from every step while events are on (alarm checks); may be NULL. */
    void (*check)(void *owner, int64_t now_ms);
    /* The worker's produce alarm ("main-produce-failing") and its resource: what
     * worker_control_produce_alarm and worker_control_report_fatal raise. */
    const char *produce_alarm;
    const char *produce_resource;
    int64_t produce_alarm_ms; /* records unacknowledged this long: the alarm; 0: 10000 */
} worker_control_opts_t;

/* The produce-stall watch; zero-initialise. */
typedef struct worker_control_stall {
    int64_t next_check_ms;
    int64_t last_progress_ms;
    uint64_t last_acked;
    bool was_inflight;
} worker_control_stall_t;

typedef struct worker_control {
    config_topic_t *ft; /* NULL: no configuration topic */
    events_t *ev;       /* NULL: no events */
    bool dirty;         /* a record changed (or the owner asks): resolve at the next step */
    int64_t next_step_ms;
    void (*resolve)(void *owner);
    void (*check)(void *owner, int64_t now_ms);
    config_topic_loaded_fn on_loaded;
    void *owner;
    char log_name[96];
    const char *produce_alarm;
    char produce_resource[384]; /* the owner may change it (an XDR topic from ndd.config) */
    int64_t produce_alarm_ms;
    worker_control_stall_t stall; /* the produce alarm's watch (worker_control_stall_due) */
} worker_control_t;

/* The instance name a worker's heartbeats and alarms carry: `given` when set, else the host
 * name followed by "-suffix" when a suffix is given (unique per service and stable across
 * restarts). */
void worker_control_instance_name(char *out, size_t size, const char *given, const char *suffix);

/* Fills wc and creates the followers that are on. -1 with err (wc is then closed). */
int worker_control_open(worker_control_t *wc, const worker_control_opts_t *o, char *err,
                        size_t errlen);
/* Steps until the configuration is loaded or timeout_ms passed: 0 when loaded (or there is no
 * configuration topic), -1 otherwise. wc is a worker_control_t: the function is a
 * daemon_wait_fn as it is. */
int worker_control_wait_loaded(void *wc, int timeout_ms);
/* The worker's on_tick: one non-blocking step at most every few ms. */
void worker_control_tick(worker_control_t *wc);
/* Raises the produce alarm as critical with text and flushes the events for up to timeout_ms
 * (the worker is stopping on a fatal error). No-op without events. */
void worker_control_report_fatal(worker_control_t *wc, const char *text, int timeout_ms);
/* Raises the produce alarm (major) with text, or clears it when text is NULL; the first raise
 * and the clearing of an active one are logged. No-op without events. */
void worker_control_produce_alarm(worker_control_t *wc, const char *text);
/* Frees the followers (the last heartbeat is sent within timeout_ms). */
void worker_control_close(worker_control_t *wc, int timeout_ms);

/* True when a stall check is due (once a second), false until then. */
bool worker_control_stall_due(worker_control_stall_t *s, int64_t now_ms);
/* How long (ms) records have been in flight without any acknowledgement; 0 when none is
 * awaited. acked: the worker's running total of acknowledged records; inflight: how many it
 * awaits now. Compare with the alarm threshold. */
int64_t worker_control_stall_ms(worker_control_stall_t *s, int64_t now_ms, uint64_t acked,
                                uint64_t inflight);

/* The stall test of the produce alarm, once worker_control_stall_due(&wc->stall, now_ms)
 * allows it: acked is the worker's running total of acknowledged records, inflight how many
 * it awaits, target where they go ("to MAIN"). True, with text "N records unacknowledged for
 * S s (producing <target>)", when records waited produce_alarm_ms or more without any
 * acknowledgement. */
bool worker_control_produce_stalled(worker_control_t *wc, int64_t now_ms, uint64_t acked,
                                    uint64_t inflight, const char *target, char *text, size_t size);

/* One consumer backpressure step (kafka_gate_update) that also keeps the worker's metrics:
 * paused is 1 while the partitions are paused, pauses counts the pauses. Returns the event;
 * on KAFKA_GATE_PAUSED with g->log_due the caller logs what it is waiting for. */
kafka_gate_event_t worker_control_backpressure(kafka_gate_t *g, kafka_consumer_t *c, bool room,
                                               int pause_after_ms, metrics_gauge_t *paused,
                                               metrics_counter_t *pauses);

#endif
