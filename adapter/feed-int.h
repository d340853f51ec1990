/* Internals of one feed shared by the files of the feed engine (not a public interface; the
 * feed's interface is feed.h). Everything here runs on the feed's thread except where a
 * field says it is read by other threads.
 *
 *   feed.c           lifecycle: start (clients, endpoints, pool, loop), the thread, stop, drain
 *   feed_consume.c   the Kafka side: the partition ledger (partitions.h), rebalances, polling,
 * rewinds, fetch restarts, flow control (stop polling, pause), consumer lag feed_delivery.c  the
 * delivery side: the pool of deliveries, batching, dispatch to the endpoints, acks, failures and
 * retries feed_dlq.c       dead-lettering: the DLQ record with its @dlq-* headers, produce, retries
 *   feed_metrics.c   the feed's Prometheus families: created at start, removed at stop */
#ifndef NDD_ADAPTER_FEED_INT_H
#define NDD_ADAPTER_FEED_INT_H

#include "feed.h"
#include "clock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include <event2/event.h>
#include <event2/event_struct.h>

#include "buf.h"
#include "encoding.h"
#include "endpoint.h"
#include "filter.h"
#include "partitions.h"

/* ---- types ---- */

#define FEED_MAX_PARTITIONS 4096
#define FEED_POLL_CHUNK 64
#define FEED_POLL_BUDGET 2048
#define FEED_KICK_MIN_MS 5   /* first fetch restart after the prefetch ran dry */
#define FEED_KICK_MAX_MS 800 /* below librdkafka's own 1 s re-check */
#define FEED_EXCERPT_MAX 256
#define FEED_PAUSE_AFTER_MS 1000

typedef enum dstate {
    D_FREE = 0,
    D_FILLING,
    D_WAITING,
    D_IN_FLIGHT,
    D_RETRY_WAIT,
    D_DLQ,
} dstate_t;

typedef struct feed_delivery feed_delivery_t;

typedef struct feed_msg {
    rd_kafka_message_t *rkm;
    feed_delivery_t *d;
    int32_t partition;
    uint32_t epoch; /* the partition's ledger epoch when the record was taken */
    uint64_t ticket;
    int64_t ts_us;
    bool dlq_done;
    bool dlq_failed;
} feed_msg_t;

struct feed_delivery {
    feed_t *f;
    dstate_t state;
    buf_t buf;
    encoding_batch_t batch;
    feed_msg_t *msgs;
    unsigned n;
    unsigned attempts;
    uint64_t first_ms;
    endpoint_t *ep;
    struct event timer;
    /* dead-lettering */
    unsigned dlq_next, dlq_outstanding;
    int dlq_status;
    char dlq_reason[400];
    char dlq_endpoint[600];
    uint8_t excerpt[FEED_EXCERPT_MAX];
    size_t excerpt_len;
    size_t buf_counted; /* buf.cap as counted in the feed's buf_inuse / buf_free_bytes */
    feed_delivery_t *next;
};

/* What the adapter keeps per partition beyond the ledger's bookkeeping (zeroed by the ledger at
 * every new epoch of the partition). */
typedef struct feed_part {
    /* A rewind of this partition is outstanding: the next record wanted is `rewound`. Later
     * records of the same poll (already past the seek) are dropped, not taken: taking one
     * would put the last taken offset above the rewound record, which would then be refused
     * (ORDER) and rewound forever, or be skipped by a second seek further on. */
    bool rewinding;
    int64_t rewound;
} feed_part_t;

typedef struct feed_ep_metrics {
    metrics_counter_t *sent, *acked, *retried, *failed, *bytes;
    metrics_gauge_t *in_flight, *up;
    atomic_bool is_up; /* read by other threads (heartbeats) */
    const char *url;
} feed_ep_metrics_t;

struct feed {
    feed_config_t *cfg;
    feed_runtime_t rt;
    char brokers[512];
    pthread_t thread;
    bool thread_started;
    struct event_base *base;
    int wake[2]; /* [0] read end watched by the loop; kafka io events + stop requests */
    struct event *wake_ev, *tick_ev, *poll_ev, *drain_ev, *lag_ev, *kick_ev;
    /* Acks land in the ledger at once; their offsets are stored once per loop turn (store_ev,
     * activated by the first ack of the turn): one librdkafka store for all of them. */
    struct event *store_ev;
    bool store_due;
    uint64_t kick_consumed; /* m_consumed when the kick was armed */
    uint32_t kick_ms;       /* next kick delay: doubles while kicks bring nothing */
    /* Bytes and records taken since the prefetch queue was last found empty, and librdkafka's
     * bounds of that queue (the memory plan's): a run of about a queue's worth means the
     * fetcher may have stopped at the bound, whatever the cached high watermarks say. */
    uint64_t run_bytes, run_msgs, prefetch_bytes, prefetch_msgs;
    bool kick_any; /* the next kick restarts every assigned partition */
    atomic_bool stop_requested;
    atomic_uint drain_ms;
    bool stopping, closing;
    uint64_t drain_deadline_ms;

    kafka_consumer_t *kc;
    kafka_producer_t *dlq;
    rd_kafka_queue_t *cq;
    SSL_CTX *ssl;
    filter_t *filter;
    endpoint_set_t *eps;
    feed_ep_metrics_t *epm; /* per endpoint */
    kafka_prop_t *props;    /* feed defaults + the operator's kafka.* settings */
    char prop_vals[7][24];  /* values of the budget-derived defaults in props */
    transport_header_t headers[TRANSPORT_MAX_HEADERS];

    partitions_t *ledger; /* the source topic's partitions; per-partition user state feed_part_t */
    /* A kafka feed producing exactly once: the transport commits the offsets in its
     * transactions (txn_owned: the feed stores none itself) and calls src.rewind when what
     * it produced since the last commit is void. in_revoke: inside the revoke callback. */
    transport_source_t src;
    char txn_id[600];
    bool txn_owned, in_revoke;
    atomic_int s_kafka_mode; /* -1: not a kafka feed; 0 at-least-once; 1 exactly once */

    feed_delivery_t *pool;
    size_t n_pool;
    feed_msg_t *msg_store;
    feed_delivery_t *free_list;
    feed_delivery_t *filling;
    feed_delivery_t *wait_head, *wait_tail;
    uint64_t pending;  /* messages held */
    uint64_t hard_max; /* never hold more than this */
    /* Memory held (feed_memory_plan): payload of held messages + buffers of deliveries in use
     * against held_bytes_max; buffers kept on the free list (for reuse without malloc) up to
     * bufs_free_max, beyond which a released delivery's buffer is freed. */
    uint64_t held_bytes, held_bytes_max;
    uint64_t buf_inuse, buf_free_bytes, bufs_free_max;
    size_t batch_hint; /* encoded size of the last batch closed: a new buffer's first size */
    bool paused;
    bool repause;
    uint64_t full_since; /* when the feed became full (0: not full) */
    unsigned dlq_active; /* deliveries being dead-lettered */
    unsigned seed;

    /* metrics */
    metrics_counter_t *m_consumed, *m_filtered, *m_dead, *m_rewound, *m_fetch_restarts;
    metrics_gauge_t *m_lag, *m_pending, *m_assigned;
    metrics_histogram_t *m_latency;
    uint64_t lat_prev[METRICS_MAX_BUCKETS + 1]; /* feed_latency_window's last counts */
    /* Levels for feed_get_stats (other threads read them); the counts of events are the
     * counters above and in epm[], the only ones (feed_get_stats reads them). */
    atomic_uint_fast64_t s_pending;
    atomic_uint s_up;
    atomic_bool s_paused;
};

static inline int64_t now_wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- functions ---- */

/* feed_consume.c */
/* A message is finished (acked, dead-lettered or abandoned at shutdown); done: its offset may
 * be committed. */
void feed_msg_finish(feed_t *f, feed_msg_t *m, bool done);
void feed_store_cb(evutil_socket_t fd, short what, void *arg);
/* Flow control after the amount held changed: stop polling, pause, resume. */
void feed_update_pause(feed_t *f);
void feed_poll(feed_t *f);
void feed_poll_cb(evutil_socket_t fd, short what, void *arg);
void feed_kick_cb(evutil_socket_t fd, short what, void *arg);
void feed_lag_cb(evutil_socket_t fd, short what, void *arg);
void feed_on_rebalance(void *owner, kafka_rebalance_kind_t kind,
                       const rd_kafka_topic_partition_list_t *parts);
/* The transport_source_t of a kafka feed producing exactly once (feed-int.h src). */
void feed_source_init(feed_t *f);

/* feed_delivery.c */
extern const endpoint_events_t feed_endpoint_events;
/* A free delivery from the pool, ready to fill; NULL when all are in use. */
feed_delivery_t *feed_delivery_alloc(feed_t *f);
/* Back to the pool; its messages are finished (done: committable). */
void feed_delivery_release(feed_t *f, feed_delivery_t *d, bool done);
/* Ends the batch being filled and dispatches it. */
void feed_close_filling(feed_t *f);
/* Sends what waits for endpoint capacity, in order. */
void feed_drain_waiting(feed_t *f);
/* The delivery's timer: batch deadline, retry, or DLQ produce retry. */
void feed_delivery_timer(evutil_socket_t fd, short what, void *arg);

/* feed_dlq.c */
void feed_dead_letter(feed_t *f, feed_delivery_t *d, int status, const char *reason,
                      const char *endpoint, const uint8_t *excerpt, size_t excerpt_len);
void feed_dlq_continue(feed_t *f, feed_delivery_t *d);
void feed_on_dlq_delivery(void *owner, void *opaque, const rd_kafka_message_t *rkm);

/* feed_metrics.c */
void feed_metrics_init(feed_t *f);
void feed_metrics_remove(feed_t *f);

#endif
