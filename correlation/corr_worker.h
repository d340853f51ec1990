/* The ndd-correlation worker: consume MAIN in its own consumer group, decode each copy, feed
 * the correlation engine (correlation/correlate.h), produce every xDR to the XDR topic (keyed by
 * correlation id, idempotent producer), send undecodable copies to the dead-letter topic, and
 * store a partition's offset only when it is below every open transaction of the partition
 * AND every xDR / dead-letter record emitted before it was acknowledged by the broker.
 * One thread runs corr_worker_run(); the metrics it updates are read by the HTTP thread.
 * Design: docs/correlation.md. */
#ifndef NDD_CORR_WORKER_H
#define NDD_CORR_WORKER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "correlate.h"
#include "kafka.h"
#include "metrics.h"

/* Value layout of the records on the XDR topic (docs/xdr.md). */
typedef enum corr_format {
    CORR_FORMAT_JSON = 0,
    CORR_FORMAT_BINARY,
} corr_format_t;

/* Filled from ndd-correlation's settings (corr_setup_worker): the defaults are the spec
 * table's, written once; corr_worker_new refuses a zero where a value is needed. */
typedef struct corr_config {
    const char *brokers;
    const char *main_topic;
    const char *xdr_topic;
    const char *dlq_topic;
    const char *group;
    const char *client_id;
    /* Static group membership (group.instance.id) from the instance name, else host, service
     * and HTTP port: a restarted worker takes its partitions back at once instead of waiting
     * for the dead member's session to time out. NULL and port <= 0: dynamic membership. */
    const char *instance;
    int http_port;
    const kafka_prop_t *props; /* kafka.* pass-through: "consumer.X" / "producer.X" go to one
                                  client only (as X), anything else to both */
    size_t n_props;
    corr_format_t format;
    /* Engine settings: max_open, timeout_us, str_area, max_partitions, preallocate, expect,
     * subscriber. emit/opaque are the worker's own (ignored here). */
    correlate_config_t engine;
    /* What happens to the open transactions of a revoked partition, and of every partition
     * at a clean stop. HANDOVER (default, 0): dropped; the stored offset stays at or below
     * their first copy, so whoever reads the partition next rebuilds them. EMIT: emitted as
     * incomplete xDRs ("revoked") before the partition goes. */
    correlate_drain_t revoke_mode;
    correlate_drain_t shutdown_mode;
    uint32_t batch;          /* copies taken per consumer poll */
    uint32_t max_unacked;    /* xDR + DLQ records not yet acknowledged before consumption
                                pauses */
    int checkpoint_ms;       /* how often an offset checkpoint is taken */
    bool cooperative;        /* cooperative-sticky rebalancing (only moved partitions are
                                revoked) instead of eager */
    int shutdown_timeout_ms; /* flush budget at stop */
    int revoke_flush_ms;     /* wait for acks before giving partitions up; 0: not at all */
    /* Exactly once (kafka_txn.h, docs/correlation.md): xDRs and offsets in one transaction,
     * committed every transaction_ms. */
    bool exactly_once;
    int transaction_ms;
    int transaction_call_ms;     /* longest wait of a commit; 0: KAFKA_TXN_CALL_MS */
    metrics_registry_t *metrics; /* NULL: metrics_default_registry() */
    /* Called from the worker's thread on every loop turn and while it waits for room in the
     * producer queue (the control path: ndd.config changes, heartbeats, alarms). May call
     * corr_worker_set_*; must not block. NULL: none. */
    void (*on_tick)(void *arg);
    void *tick_arg;
    codec_limits_t limits; /* of the copies read from MAIN (max-body) */
} corr_config_t;

/* Longest timeout a live change may set (the admin's bound for timeout_ms): the engine runs
 * with max(this, the start timeout) and the worker shifts the clock it hands to the expiry
 * (docs/correlation.md, "Control path"). */
#define CORR_TIMEOUT_CEILING_US (600LL * 1000 * 1000)

/* Totals since the worker was made, read from its metrics (the registry holds the only
 * count of each event, docs/observability.md); unacked and uncommitted are levels now. */
typedef struct corr_stats {
    uint64_t consumed;      /* copies taken from MAIN */
    uint64_t correlated;    /* copies accepted by the engine */
    uint64_t dead_lettered; /* records acknowledged on the dead-letter topic */
    uint64_t xdrs;          /* xDRs handed to the producer */
    uint64_t xdrs_acked;    /* xDRs acknowledged by the broker */
    uint64_t produce_failures;
    uint64_t pauses;
    uint64_t checkpoints; /* checkpoints whose offsets were applied */
    uint64_t stores;      /* offsets stored (partition advances) */
    uint64_t unacked;     /* records produced, acknowledgement still to come */
    uint64_t uncommitted; /* copies processed above the stored offsets (replay window) */
} corr_stats_t;

typedef struct corr_worker corr_worker_t;

/* Creates the engine, the producer and the consumer (subscribed to MAIN). NULL with a reason
 * in err (bad property, bad engine setting). */
corr_worker_t *corr_worker_new(const corr_config_t *cfg, char *err, size_t errlen);

/* Runs until *stop becomes non-zero, then stops: open transactions are handled per
 * shutdown_mode, acknowledgements are awaited up to the shutdown timeout, the offsets that
 * are safe are stored and committed, and the group is left. Returns 0 after a clean stop, -1
 * after a fatal error (an xDR or dead-letter record that could not be written, a fatal
 * producer error): from then on no offset is stored, so a restart re-reads and re-emits. */
int corr_worker_run(corr_worker_t *w, volatile sig_atomic_t *stop);

corr_stats_t corr_worker_stats(const corr_worker_t *w);
/* Partitions assigned to this member now (a corr_worker_t *; any thread; a round trip to
 * librdkafka's thread), -1 on error. For the readiness rule. */
int corr_worker_assigned(void *w);
correlate_stats_t corr_worker_engine_stats(const corr_worker_t *w);

/* Live settings (worker thread only, e.g. from on_tick). The timeout applies to every open
 * transaction at the next expiry, measured from its first copy as before; it is clamped to
 * 1 ms..max(CORR_TIMEOUT_CEILING_US, the start timeout). Returns the timeout now in force. */
int64_t corr_worker_set_timeout_us(corr_worker_t *w, int64_t timeout_us);
int64_t corr_worker_timeout_us(const corr_worker_t *w);
/* Whether the worker runs exactly once (transactions), with its commit interval in
 * *transaction_ms (may be NULL). For the heartbeat's "kafka_mode". */
bool corr_worker_exactly_once(const corr_worker_t *w, int *transaction_ms);
/* false: the xDRs leave without SUPI/GPSI (the engine still extracts them when it was
 * started with extraction on; turning it on live needs extraction on at start). */
void corr_worker_set_subscriber(corr_worker_t *w, bool extract);
/* Releases everything (after corr_worker_run returned, or instead of it). */
void corr_worker_free(corr_worker_t *w);

#endif
