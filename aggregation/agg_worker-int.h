/* The worker's types, shared by agg_worker.c (the loop) and agg_metrics.c (its series); not
 * for other users, who see agg_worker.h. */
#ifndef NDD_AGG_WORKER_INT_H
#define NDD_AGG_WORKER_INT_H

#include "agg_filter.h"
#include "agg_worker.h"
#include "buf.h"
#include "codec.h"
#include "filter.h"
#include "kafka_txn.h"
#include "kafka_wake.h"
#include "partitions.h"

#define AGG_MAX_PARTITIONS 65536
#define AGG_REASON_PRODUCE "produce-refused"
/* A slot's frame buffer is kept for the next copy up to this size; a larger one (a copy with a
 * body near max-body) is freed, so the pool holds at most slots x this when idle. */
#define AGG_FRAME_KEEP (64u * 1024u)

typedef enum agg_slot_state {
    AGG_SLOT_FREE = 0,
    AGG_SLOT_NEW,
    AGG_SLOT_READY,
    AGG_SLOT_PRODUCED,
} agg_slot_state_t;

typedef enum agg_dest {
    AGG_DEST_MAIN = 0,
    AGG_DEST_DLQ,
} agg_dest_t;

typedef struct agg_slot {
    rd_kafka_message_t *src;  /* consumed record; value and key are produced from it */
    rd_kafka_headers_t *hdrs; /* prepared headers (READY), NULL otherwise */
    buf_t frame;              /* the MAIN value in the frame form (framed), kept across uses */
    struct agg_slot *next;    /* free list or FIFO link */
    uint64_t ticket;          /* partitions_track ticket */
    int64_t t_produce_ns;
    int64_t offset; /* of the consumed record (src is released early in the frame form) */
    uint32_t epoch; /* partition epoch at take time; a revoke bumps it */
    int32_t partition;
    uint8_t state;
    uint8_t dest;
    uint8_t body_dropped; /* DLQ retry without the value (it was too large) */
    uint8_t framed;       /* MAIN record whose value is `frame` (no headers) */
    uint16_t fkey_len;    /* the key inside `frame`, at fkey_off */
    uint32_t fkey_off;
    int8_t reason; /* codec_reason_t of a DLQ record, -1 for produce-refused */
} agg_slot_t;

/* What aggregation keeps per partition beyond the ledger's bookkeeping (zeroed at every new
 * epoch of the partition). */
typedef struct agg_part {
    uint64_t seq; /* @agg-seq of the last record produced from this partition */
    /* exactly once: where an aborted transaction rewinds to (offset + 1; 0: nothing read in
     * this epoch) and the @agg-seq there; the commit's scratch (first offset in the FIFO,
     * MAIN records prepared but not produced). */
    int64_t from;
    uint64_t seq_from;
    int64_t fifo_first;
    uint32_t fifo_main;
} agg_part_t;

typedef struct agg_metrics {
    metrics_counter_t *in_msgs, *in_bytes, *out_msgs, *out_bytes, *filtered, *unmatched;
    metrics_counter_t *dlq[CODEC_REASON__COUNT + 1]; /* last: produce-refused */
    metrics_counter_t *produce_errors, *reload_ok, *reload_err, *pauses;
    metrics_histogram_t *latency;
    metrics_gauge_t *inflight, *lag, *paused, *assigned;
} agg_metrics_t;

struct agg_worker {
    agg_config_t cfg;
    char in_topic[256], group[256], main_topic[256], dlq_topic[256], client_id[256];
    char member_id[512]; /* group.instance.id, when static membership applies */
    kafka_consumer_t *consumer;
    kafka_producer_t *producer;

    agg_slot_t *slots;
    uint32_t n_slots;
    agg_slot_t *free_list;
    uint32_t n_free;
    agg_slot_t *fifo_head, *fifo_tail; /* NEW/READY slots in consumption order */
    uint32_t fifo_len;

    partitions_t *ledger; /* the in-topic's partitions: epochs, offset trackers, stores */

    filter_slot_t *filter;
    agg_filter_file_t filter_file; /* loads and reloads the filter file into filter */

    kafka_wake_t wake; /* readable when the consumer or the producer has work */
    int64_t dr_now_ns; /* clock of this poll's delivery reports (0: not read yet) */
    uint64_t dr_msgs, dr_bytes, in_msgs, in_bytes; /* counts of this poll, added after it */
    kafka_gate_t gate;                             /* backpressure: pause after a long stall */
    bool backlog;         /* the last poll filled its room: more is probably waiting */
    int64_t dry_since_ms; /* since when polls return nothing after a backlog */
    uint64_t kicks;
    bool fatal;
    /* exactly once (kafka_txn.h) */
    bool eos;
    bool txn_open;        /* begun: records of this worker go into it */
    bool txn_failed;      /* a record of it failed: abort and rewind */
    bool txn_rebuild;     /* fatal: the pair is made again (kafka_pair_rebuild) */
    bool txn_init;        /* init_transactions still to do (after a rebuild) */
    int64_t txn_due_ms;   /* next commit */
    int64_t txn_retry_ms; /* next attempt of a rebuild or init that failed */
    uint64_t txn_commits, txn_aborts;
    kafka_txn_pair_t *txn; /* the bounded commit, its metrics (kafka_txn.h) */
    char txn_id[800];
    agg_metrics_t m;  /* the only count of each event: agg_worker_stats reads these */
    agg_stats_t base; /* what the counters held when this worker was made (same registry) */
};

/* agg_metrics.c */
int agg_metrics_init(agg_worker_t *w);
/* The counters as they are now (agg_worker_stats takes w->base off). */
agg_stats_t agg_counters(const agg_worker_t *w);

#endif
