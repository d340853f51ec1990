/* Kafka transactions for a consume -> produce pair: see kafka_txn.h. */
#include "kafka_txn.h"

#include <stdio.h>
#include <string.h>

#define KAFKA_TXN_STR_(x) #x
#define KAFKA_TXN_STR(x) KAFKA_TXN_STR_(x)

const char *kafka_txn_id(char *out, size_t size, const char *group, const char *what,
                         const char *instance)
{
    snprintf(out, size, "%.200s/%.250s/%.250s", group ? group : "-", what ? what : "-",
             instance && *instance ? instance : "-");
    return out;
}

size_t kafka_txn_props(kafka_prop_t *out, const char *txn_id)
{
    out[0] = (kafka_prop_t){"transactional.id", txn_id};
    out[1] = (kafka_prop_t){"transaction.timeout.ms", KAFKA_TXN_STR(KAFKA_TXN_TIMEOUT_MS)};
    /* Below the transaction timeout: a record that cannot be written fails the transaction
     * (abortable) before the broker aborts it and fences the producer. */
    out[2] = (kafka_prop_t){"message.timeout.ms", "50000"};
    return KAFKA_TXN_N_PROPS;
}

bool kafka_txn_unsupported(rd_kafka_resp_err_t e)
{
    switch (e) {
    case RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE:
    case RD_KAFKA_RESP_ERR__NOT_IMPLEMENTED:
    case RD_KAFKA_RESP_ERR_UNSUPPORTED_VERSION:
    case RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_INVALID_TRANSACTION_TIMEOUT:
        return true;
    default:
        return false;
    }
}

kafka_txn_rc_t kafka_txn_classify(const rd_kafka_error_t *e)
{
    if (!e)
        return KAFKA_TXN_OK;
    /* Retriable (a timeout of a call whose request is still going) is treated as abortable
     * when librdkafka allows the abort, else as fatal: a caller never retries a half-done
     * commit, whose outcome it cannot know. */
    return rd_kafka_error_txn_requires_abort(e) ? KAFKA_TXN_ABORT : KAFKA_TXN_REBUILD;
}

/* Fills err from e, destroys e and returns what it asks for. */
static kafka_txn_rc_t kafka_txn_fail(rd_kafka_error_t *e, const char *what, char *err,
                                     size_t errlen)
{
    if (!e)
        return KAFKA_TXN_OK;
    kafka_txn_rc_t rc = kafka_txn_classify(e);
    if (err)
        snprintf(err, errlen, "transaction %s: %.300s (%.60s)", what, rd_kafka_error_string(e),
                 rd_kafka_error_name(e));
    rd_kafka_error_destroy(e);
    return rc;
}

kafka_txn_rc_t kafka_txn_init(rd_kafka_t *producer, int timeout_ms, bool *unsupported, char *err,
                              size_t errlen)
{
    rd_kafka_error_t *e = rd_kafka_init_transactions(producer, timeout_ms);
    if (unsupported)
        *unsupported = e && kafka_txn_unsupported(rd_kafka_error_code(e));
    /* An init that failed leaves nothing to abort: the producer is made again. */
    return kafka_txn_fail(e, "init", err, errlen) ? KAFKA_TXN_REBUILD : KAFKA_TXN_OK;
}

kafka_txn_rc_t kafka_txn_begin(rd_kafka_t *producer, char *err, size_t errlen)
{
    /* begin fails only when the producer is in a state where nothing can be produced */
    return kafka_txn_fail(rd_kafka_begin_transaction(producer), "begin", err, errlen)
               ? KAFKA_TXN_REBUILD
               : KAFKA_TXN_OK;
}

kafka_txn_rc_t kafka_txn_commit(rd_kafka_t *producer, rd_kafka_t *consumer,
                                const rd_kafka_topic_partition_list_t *offsets, char *err,
                                size_t errlen)
{
    if (offsets && offsets->cnt > 0) {
        rd_kafka_consumer_group_metadata_t *g = rd_kafka_consumer_group_metadata(consumer);
        if (!g) {
            if (err)
                snprintf(err, errlen, "transaction send offsets: no consumer group metadata");
            return KAFKA_TXN_ABORT;
        }
        /* -1: the rest of the transaction's timeout, as librdkafka recommends (a shorter
         * wait can desynchronise its state when a request fails). */
        rd_kafka_error_t *e = rd_kafka_send_offsets_to_transaction(producer, offsets, g, -1);
        rd_kafka_consumer_group_metadata_destroy(g);
        if (e)
            return kafka_txn_fail(e, "send offsets", err, errlen);
    }
    return kafka_txn_fail(rd_kafka_commit_transaction(producer, -1), "commit", err, errlen);
}

kafka_txn_rc_t kafka_txn_abort(rd_kafka_t *producer, char *err, size_t errlen)
{
    return kafka_txn_fail(rd_kafka_abort_transaction(producer, -1), "abort", err, errlen)
               ? KAFKA_TXN_REBUILD
               : KAFKA_TXN_OK;
}

int kafka_txn_seek(rd_kafka_t *consumer, const rd_kafka_topic_partition_list_t *offsets, char *err,
                   size_t errlen)
{
    if (!offsets || offsets->cnt == 0)
        return 0;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_copy(offsets);
    if (!l) {
        snprintf(err, errlen, "seek: out of memory");
        return -1;
    }
    rd_kafka_error_t *e = rd_kafka_seek_partitions(consumer, l, 5000);
    int rc = 0;
    if (e) {
        snprintf(err, errlen, "seek: %.300s", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
        rc = -1;
    }
    for (int i = 0; !rc && i < l->cnt; i++)
        if (l->elems[i].err) {
            snprintf(err, errlen, "seek %.200s [%d] to %lld: %.200s", l->elems[i].topic,
                     (int)l->elems[i].partition, (long long)l->elems[i].offset,
                     rd_kafka_err2str(l->elems[i].err));
            rc = -1;
        }
    rd_kafka_topic_partition_list_destroy(l);
    return rc;
}
