/* The ndd-aggregation worker: consume one NF topic in a consumer group, decode, filter,
 * enrich, produce to MAIN (or the dead-letter topic), and store each consumed offset only
 * after the produce of that record was acknowledged. One thread runs agg_worker_run(); the
 * metrics it updates are read by the HTTP thread. Design: docs/aggregation.md. */
#ifndef NDD_AGG_WORKER_H
#define NDD_AGG_WORKER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "filter.h"
#include "kafka.h"
#include "metrics.h"

/* Filled from ndd-aggregation's settings (agg_setup_worker): the defaults are the spec
 * table's, written once; agg_worker_new refuses a zero where a value is needed. */
typedef struct agg_config {
    const char *brokers;
    const char *nf_type;  /* label of metrics, default topic and group */
    const char *in_topic; /* NULL: nf_type */
    const char *group;    /* NULL: "ndd-agg-<nf_type>" */
    const char *main_topic;
    const char *dlq_topic;
    const char *client_id;     /* NULL: "ndd-aggregation-<nf_type>" */
    const kafka_prop_t *props; /* kafka.* pass-through, applied to consumer and producer */
    size_t n_props;
    /* MAIN records in the frame form (docs/message-format.md): the value is one NDD frame
     * holding the key, every field and the body, and the record has no Kafka headers. */
    bool main_frame;
    uint32_t max_inflight; /* records consumed but not yet acknowledged */
    uint32_t batch;        /* records taken per consumer poll (at most max_inflight) */
    bool cooperative;      /* cooperative-sticky instead of eager rebalancing */
    /* The consumer's static group membership (kafka_group_instance_id): the instance setting
     * (NULL: none) and the HTTP port (<= 0: none); with neither, dynamic membership. */
    const char *instance;
    int http_port;
    /* Exactly once (kafka_txn.h): the MAIN/DLQ records and the consumed offsets in one Kafka
     * transaction, committed every transaction_ms; false: at-least-once (offsets committed
     * after the acknowledgements). */
    bool exactly_once;
    int transaction_ms;
    int transaction_call_ms; /* longest wait of a commit; 0: KAFKA_TXN_CALL_MS */
    int shutdown_timeout_ms; /* flush budget at stop */
    int revoke_flush_ms;     /* wait for acks before giving partitions up; 0: not at all */
    const char *filter_file; /* NULL: allow everything (or what filter_slot is given) */
    int filter_check_ms;     /* how often the file's mtime is checked */
    /* The ingress filter slot, owned by the caller (the control path swaps filters into it
     * from ndd.config); NULL: the worker makes its own. A filter_file is loaded into it. */
    filter_slot_t *filter_slot;
    /* Called on every loop iteration, on the worker's thread (control path: ndd.config
     * follower and ndd.events publisher); must not block. May be NULL. */
    void (*on_tick)(void *arg);
    void *tick_arg;
    metrics_registry_t *metrics; /* NULL: metrics_default_registry() */
    codec_limits_t limits;       /* of the copies consumed (max-body) */
} agg_config_t;

/* Totals since the worker was made, read from its metrics (the registry holds the only
 * count of each event, docs/observability.md); inflight is the slots in use now. */
typedef struct agg_stats {
    uint64_t consumed, produced, filtered, unmatched, dead_lettered, produce_failures;
    uint64_t filter_reloads, filter_reload_errors, pauses;
    uint64_t inflight;
} agg_stats_t;

typedef struct agg_worker agg_worker_t;

/* Whether the worker runs exactly once (transactions), with its commit interval in
 * *transaction_ms (may be NULL). For the heartbeat's "kafka_mode". */
bool agg_worker_exactly_once(const agg_worker_t *w, int *transaction_ms);

/* Creates the consumer (subscribed) and the producer, loads the filter file. NULL with a
 * reason in err (bad property, unreadable or invalid filter file). */
agg_worker_t *agg_worker_new(const agg_config_t *cfg, char *err, size_t errlen);

/* Runs until *stop becomes non-zero, then drains: stops consuming, waits up to the shutdown
 * timeout for acknowledgements, stores and commits the offsets of acknowledged records, and
 * leaves the group. *reload (may be NULL) non-zero asks for a filter reload (SIGHUP); the
 * worker clears it. Returns 0 after a clean stop, -1 after a fatal error (a record that could
 * not be written to MAIN nor to the dead-letter topic, or a fatal producer error): its offset
 * was not stored, so a restart retries it. */
int agg_worker_run(agg_worker_t *w, volatile sig_atomic_t *stop, volatile sig_atomic_t *reload);

agg_stats_t agg_worker_stats(const agg_worker_t *w);
/* Partitions assigned to this member now (an agg_worker_t *; any thread; a round trip to
 * librdkafka's thread), -1 on error. For the readiness rule. */
int agg_worker_assigned(void *w);
/* Releases everything (after agg_worker_run returned, or instead of it). */
void agg_worker_free(agg_worker_t *w);

#endif
