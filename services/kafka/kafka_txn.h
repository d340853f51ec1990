/* Kafka transactions for a consume -> produce pair (exactly once): one place for the calls
 * and the recovery rules every transactional producer of NDD follows. The Kafka feed
 * (adapter/transport_kafka*.c), the aggregation (NF topic -> MAIN) and the correlation
 * (MAIN -> XDR) use it; none keeps its own copy.
 *
 * The unit is one pair: a consumer and the producer that writes what is made from its
 * records. A transaction holds the pair's records and the consumer's offsets (sent with the
 * consumer's group metadata, so a member fenced out of its group cannot commit): committed
 * together, or neither is visible to read_committed readers.
 *
 * Recovery. Every call returns what the caller must do next:
 *  - KAFKA_TXN_OK: done.
 *  - KAFKA_TXN_ABORT: the transaction can be aborted (a record failed, the group moved on,
 *    a timeout librdkafka can recover from): kafka_txn_abort(), then rewind the consumer to
 *    the offsets of the last committed transaction (kafka_txn_seek()) and produce again.
 *  - KAFKA_TXN_REBUILD: fatal (fenced by a newer instance with the same transactional.id, or
 *    the abort itself failed): a new producer, and a new consumer (it starts from the
 *    committed offsets). Its init_transactions aborts whatever the old one left open.
 * Nothing is lost (the offsets move only with a committed transaction) and nothing appears
 * twice in committed data (an aborted transaction's records are invisible). */
#ifndef NDD_KAFKA_TXN_H
#define NDD_KAFKA_TXN_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>
#include <librdkafka/rdkafka.h>

#include "kafka.h"
#include "metrics.h"

typedef enum kafka_txn_rc {
    KAFKA_TXN_OK = 0,
    KAFKA_TXN_ABORT = 1,
    KAFKA_TXN_REBUILD = 2,
} kafka_txn_rc_t;

/* Longest wait of init_transactions (a blocking call on the worker's thread). */
#define KAFKA_TXN_INIT_MS 10000
/* Longest wait of a pair's commit (kafka_txn_pair_commit: the acknowledgements, send offsets and
 * commit together) and of an abort. Above a 20 s broker pause plus the records'
 * acknowledgements, below the transaction timeout (the broker would abort it and fence the
 * producer). A commit that does not finish in it asks for a rebuild: its outcome is unknown,
 * and the next producer's init_transactions completes or aborts it. */
#define KAFKA_TXN_CALL_MS 30000
/* transaction.timeout.ms of the daemons' pairs: how long a transaction left open by a crash
 * blocks read_committed readers when no instance with the same transactional.id comes back
 * to abort it. Their message.timeout.ms is 10 s below it, so a record that cannot be written
 * fails (abortable: produced again) before the broker times the transaction out (which would
 * fence the producer: a rebuild). */
#define KAFKA_TXN_TIMEOUT_MS 60000

/* "<group>/<what>/<instance>" into out: what is the topic read or the worker's name, instance
 * the daemon's stable instance id. The same across restarts of the same instance, so a
 * restarted instance fences its zombie; different between instances. */
const char *kafka_txn_id(char *out, size_t size, const char *group, const char *what,
                         const char *instance);

/* The producer properties of a transactional pair (transactional.id, transaction.timeout.ms,
 * message.timeout.ms), appended to out (room for KAFKA_TXN_N_PROPS). Returns the count. */
#define KAFKA_TXN_N_PROPS 3
size_t kafka_txn_props(kafka_prop_t *out, const char *txn_id);

/* Whether init_transactions failing with e says the cluster cannot (or will not let us) do
 * transactions: the caller then runs at-least-once instead of retrying forever. */
bool kafka_txn_unsupported(rd_kafka_resp_err_t e);

/* Each call: err (may be NULL) gets "<what>: <librdkafka's reason> (<error name>)" on
 * anything but KAFKA_TXN_OK. Begin, commit and abort on a producer with a fatal error call
 * nothing and return KAFKA_TXN_REBUILD (librdkafka may wait forever there); a commit for a
 * consumer with one (fenced) calls nothing and returns KAFKA_TXN_ABORT (its next poll
 * rebuilds the consumer, kafka.h, which reads the transaction's records again). Commit and abort
 * wait KAFKA_TXN_CALL_MS at most where librdkafka honours it; send_offsets may not (librdkafka
 * GitHub issues #5456, #5511: its coordinator request ignores the timeout), so a worker commits
 * with kafka_txn_pair_commit. */

/* Registers the transactional.id (fences an earlier producer with it, aborts what it left).
 * *unsupported (may be NULL) is set when kafka_txn_unsupported says so. */
kafka_txn_rc_t kafka_txn_init(rd_kafka_t *producer, int timeout_ms, bool *unsupported, char *err,
                              size_t errlen);
kafka_txn_rc_t kafka_txn_begin(rd_kafka_t *producer, char *err, size_t errlen);
/* Sends offsets (when not NULL and not empty) with consumer's group metadata into the open
 * transaction, then commits it. Every record produced in it must have been handed to
 * librdkafka; the commit waits for their acknowledgements. */
kafka_txn_rc_t kafka_txn_commit(rd_kafka_t *producer, rd_kafka_t *consumer,
                                const rd_kafka_topic_partition_list_t *offsets, char *err,
                                size_t errlen);
/* Aborts the open transaction: OK, or REBUILD when the abort failed. The records in flight are
 * purged: their delivery reports come with _PURGE_QUEUE / _PURGE_INFLIGHT, served by the
 * caller's next poll. */
kafka_txn_rc_t kafka_txn_abort(rd_kafka_t *producer, char *err, size_t errlen);
/* What a failed transactional call asks for (does not destroy e). */
kafka_txn_rc_t kafka_txn_classify(const rd_kafka_error_t *e);

/* Rewinds the consumer's fetch positions to offsets (those of the last committed transaction
 * of each partition, or the first offset read since the assignment): local to the client,
 * no broker round trip, so it works while the cluster is away. Records fetched before are
 * dropped by librdkafka. 0 or -1 (err filled). */
int kafka_txn_seek(rd_kafka_t *consumer, const rd_kafka_topic_partition_list_t *offsets, char *err,
                   size_t errlen);

/* A worker's delivery mode into its heartbeat "info" (the admin's /status shows it):
 * "kafka_mode": "exactly-once" with "transaction_ms", or "at-least-once". */
void kafka_txn_mode_info(json_t *info, bool exactly_once, int transaction_ms);

/* ---- a pair's bounded commit ---- */

/* One transactional pair's commit runner, metrics and set-aside handle. Send offsets + commit
 * run on a thread started for each commit while the worker waits on a condition variable with
 * a deadline: a thread per call (tens of microseconds beside a commit's milliseconds) needs no
 * cancellation, and a call that never returns does not hold up the next one. Before it the
 * worker waits for its records' acknowledgements itself (kafka_producer_flush semantics: its
 * delivery callbacks run on its own thread), so nothing of the worker runs on the helper.
 *
 * A call past its deadline: the worker gets KAFKA_TXN_REBUILD ("timed out", logged with the
 * transactional.id, group, topic and the call that hung, counted) and rebuilds the pair with
 * kafka_txn_pair_rebuild: the stuck producer handle is set aside (the helper destroys it once
 * the call returns, off the worker thread), the consumer rebuilt (LOST to the owner, pending
 * work dropped uncommitted, read again from the committed offsets).
 *
 * Bounded memory: at most one handle of a pair is set aside. Should the next commit hang too
 * while the first is still inside librdkafka, the pair is not rebuilt again: the worker waits
 * (kafka_txn_pair_rebuild returns -1, retried every second, logged once) until the first call
 * returns and frees its place, so a pair holds at most two producer handles. */
typedef struct kafka_txn_pair kafka_txn_pair_t;

typedef struct kafka_txn_pair_opts {
    const char *txn_id; /* for the log: the pair's transactional.id, group and topic read */
    const char *group;
    const char *topic;
    const char *who; /* log prefix, e.g. "aggregation SCP" */
    int call_ms;     /* the bound; 0: KAFKA_TXN_CALL_MS */
    /* Metrics (NULL registry: none): <prefix>_kafka_transactions_{committed,aborted,
     * timed_out}_total, <prefix>_kafka_pair_rebuilds_total and the histogram
     * <prefix>_kafka_transactions_commit_seconds, labelled label=label_value (NULL: none). */
    metrics_registry_t *metrics;
    const char *metric_prefix;
    const char *label;
    const char *label_value;
    /* true: the owner counts commits, aborts and the commit time itself (the Kafka feed's
     * transport): only the timed_out and pair_rebuilds counters are registered */
    bool own_commit_metrics;
} kafka_txn_pair_opts_t;

typedef struct kafka_txn_pair_stats {
    uint64_t committed, aborted, timed_out, rebuilds;
    uint64_t set_aside; /* set-aside handles whose call is still inside librdkafka */
} kafka_txn_pair_stats_t;

/* NULL when out of memory or the metrics could not be registered. */
kafka_txn_pair_t *kafka_txn_pair_new(const kafka_txn_pair_opts_t *o);
/* Frees the runner, before the pair's producer is closed: a call still stuck inside the
 * producer's handle keeps that handle (the producer gets a new one, so its close does not
 * destroy a handle in use) and frees the runner when it returns. NULL is a no-op. */
void kafka_txn_pair_free(kafka_txn_pair_t *t, kafka_producer_t *producer);
/* kafka_txn_commit, bounded: the worker waits call_ms at most (plus a second for librdkafka to
 * report its own timeout), counted as committed or timed out. */
kafka_txn_rc_t kafka_txn_pair_commit(kafka_txn_pair_t *t, rd_kafka_t *producer,
                                     rd_kafka_t *consumer,
                                     const rd_kafka_topic_partition_list_t *offsets, char *err,
                                     size_t errlen);
/* kafka_txn_abort, counted. */
kafka_txn_rc_t kafka_txn_pair_abort(kafka_txn_pair_t *t, rd_kafka_t *producer, char *err,
                                    size_t errlen);
/* kafka_pair_rebuild, or (a commit of it timed out) the same with the stuck handle set aside.
 * Counted. 0, or -1 (retry later: see "Bounded memory"). */
int kafka_txn_pair_rebuild(kafka_txn_pair_t *t, kafka_producer_t *producer,
                           kafka_consumer_t *consumer);
/* The recovery rules ("Recovery", above) for a worker's pair after a call returned rc: with
 * KAFKA_TXN_ABORT the open transaction (txn_open) is aborted and the purged records' reports
 * served (the owner's delivery callback runs), then, unless the consumer is fenced (its next
 * poll rebuilds it and reads from the committed offsets), rewind(owner) takes the consumer
 * back to the committed offsets (0, or -1 when it failed). Logged with the pair's who and why.
 * KAFKA_TXN_OK: the pair works on; KAFKA_TXN_REBUILD: make it again (kafka_txn_pair_rebuild). */
kafka_txn_rc_t kafka_txn_pair_recover(kafka_txn_pair_t *t, kafka_producer_t *producer,
                                      kafka_consumer_t *consumer, kafka_txn_rc_t rc, bool txn_open,
                                      int (*rewind)(void *owner), void *owner, const char *why);
/* For an owner that makes its producer handles itself (the Kafka feed's transport): true when a
 * timed-out commit is still inside rk, which the pair then owns (destroyed once the call
 * returns; the owner drops it without destroying it); false: destroy it yourself. Up to two
 * handles are held so; while two are, kafka_txn_pair_commit starts nothing and returns
 * KAFKA_TXN_ABORT. */
bool kafka_txn_pair_take_handle(kafka_txn_pair_t *t, rd_kafka_t *rk);
/* Counts a rebuild the owner did itself (the Kafka feed's transport makes a new transactional
 * producer after a teardown). */
void kafka_txn_pair_count_rebuild(kafka_txn_pair_t *t);
/* Removes the children labelled label=value of the timed_out and pair_rebuilds counters of
 * prefix (a deleted feed whose owner counts its commits itself). */
void kafka_txn_pair_metrics_remove(metrics_registry_t *r, const char *prefix, const char *label,
                                   const char *value);
kafka_txn_pair_stats_t kafka_txn_pair_stats(kafka_txn_pair_t *t);

#endif
