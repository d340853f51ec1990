/* One feed: its own consumer group (ndd-feed-<name>) on its source topic, its own thread and
 * event loop, its endpoints, its dead-letter topic. A dead endpoint of one feed never slows
 * another: nothing is shared between feeds but the process.
 *
 * Delivery (at-least-once): every consumed record gets a ticket in its partition's
 * offset_tracker; the offset stored for commit is the low-water mark of records that were
 * acknowledged by an endpoint, filtered out, or dead-lettered (and the DLQ produce
 * acknowledged by Kafka). Pending work is bounded by delivery.max_pending: at that point the
 * feed stops polling (records wait in librdkafka's bounded prefetch), and when that lasts
 * (every endpoint full or down) its partitions are paused; both end when it drains to half.
 * Revoked partitions' pending acknowledgements are dropped (their records will be consumed
 * again by the new owner). */
#ifndef NDD_ADAPTER_FEED_H
#define NDD_ADAPTER_FEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events.h"
#include "feed_config.h"
#include "kafka.h"
#include "metrics.h"

typedef struct feed feed_t;

typedef struct feed_runtime {
    const char *brokers;
    const kafka_prop_t *kafka_props; /* pass-through kafka.* settings (consumer and DLQ producer) */
    size_t n_kafka_props;
    metrics_registry_t *metrics; /* NULL: metrics_default_registry() */
    events_t *events; /* NULL: no alarms; else endpoint-down raised/cleared on "<feed>/<url>" */
    unsigned feed_memory_mb; /* memory budget of a feed without delivery.memory_mb; 0: 5 MiB */
    /* Static group membership of each feed's consumer (kafka_group_instance_id, qualified by
     * the feed's name and its source topic): the instance setting (NULL: none) and the HTTP
     * port (<= 0: none). */
    const char *instance;
    int http_port;
} feed_runtime_t;

/* What a feed's memory budget (MiB) turns into; feed_start applies it (docs/adapter.md). */
typedef struct feed_memory_plan {
    unsigned queued_max_kbytes;     /* queued.max.messages.kbytes: the prefetch queue */
    unsigned queued_min_messages;   /* queued.min.messages: its record count */
    unsigned fetch_max_bytes;       /* fetch.max.bytes: one fetch response */
    unsigned message_max_bytes;     /* the consumer's message.max.bytes (<= fetch.max.bytes) */
    unsigned partition_fetch_bytes; /* max.partition.fetch.bytes */
    unsigned receive_max_bytes;     /* receive.message.max.bytes (>= fetch.max.bytes + 512) */
    unsigned dlq_buffer_kbytes;     /* queue.buffering.max.kbytes of the DLQ producer */
    uint64_t held_bytes_max;        /* held payload + in-use request buffers before polling stops */
    uint64_t idle_buffer_bytes;     /* request buffers kept for reuse when idle */
} feed_memory_plan_t;

typedef struct feed_stats {
    uint64_t consumed, filtered, sent, acked, retried, dead_lettered;
    uint64_t rewound; /* records given back (feed full): sought again, consumed again */
    uint64_t pending; /* messages held now */
    unsigned endpoints_up;
    bool paused;
    int kafka_exactly_once; /* kafka feeds: 1 exactly once, 0 at-least-once; -1 other feeds */
    double lag;             /* ndd_adapter_consumer_lag_messages: fetch lag + pending */
} feed_stats_t;

/* Starts the feed on a thread of its own. Takes ownership of cfg (also on failure). NULL with
 * err when the consumer, producer, TLS context or an endpoint cannot be created. */
/* The librdkafka sizes and the held-bytes bound of a budget of mb MiB (0: 5). */
void feed_memory_plan(unsigned mb, feed_memory_plan_t *out);
feed_t *feed_start(feed_config_t *cfg, const feed_runtime_t *rt, char *err, size_t errlen);
/* Stops fetching, waits up to drain_ms for in-flight deliveries to finish, commits the
 * stored offsets, leaves the group, joins the thread and frees everything. Whatever was not
 * acknowledged by then is simply not committed: the next owner consumes it again. */
void feed_stop(feed_t *f, uint32_t drain_ms);
const feed_config_t *feed_get_config(const feed_t *f);
/* Thread-safe snapshot (relaxed counters). */
void feed_get_stats(const feed_t *f, feed_stats_t *out);
/* Partitions of the source topic assigned to this feed's consumer now (any thread; a round
 * trip to librdkafka's thread), -1 on error. For the readiness rule. */
int feed_assigned(const feed_t *f);
/* Endpoint i of the feed (0..n_endpoints-1): its URL and whether it is connected now.
 * Thread-safe. false when i is out of range. */
bool feed_endpoint_state(const feed_t *f, size_t i, const char **url, bool *up);
/* Delivery latency (the ndd_adapter_e2e_latency_seconds histogram) of the copies
 * acknowledged since the previous call: their count and p50/p99 in ms, interpolated within
 * the histogram's buckets. false when none was acknowledged since. Reads the histogram's
 * counters (nothing on the delivery path); one caller at a time (the heartbeat's collect). */
bool feed_latency_window(feed_t *f, uint64_t *count, double *p50_ms, double *p99_ms);

#endif
