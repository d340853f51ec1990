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

#include <librdkafka/rdkafka.h>

#include "kafka.h"

typedef enum kafka_txn_rc {
    KAFKA_TXN_OK = 0,
    KAFKA_TXN_ABORT = 1,
    KAFKA_TXN_REBUILD = 2,
} kafka_txn_rc_t;

/* Longest wait of init_transactions (a blocking call on the worker's thread). */
#define KAFKA_TXN_INIT_MS 10000
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
 * anything but KAFKA_TXN_OK. */

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

#endif
