/* Kafka transactions for a consume -> produce pair: see kafka_txn.h. */
#include "kafka_txn.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "kafka-int.h"
#include "log.h"

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

/* Whether rk (may be NULL) has a fatal error (err filled with what and why). A transactional
 * call on a fatal producer (begin, commit, abort) can wait forever (librdkafka GitHub issue
 * #4420), and offsets sent with a fenced consumer's group metadata can only be refused,
 * possibly after a wait on the group coordinator that ignores the call's timeout (#5456):
 * neither is called. */
static bool kafka_txn_fatal(rd_kafka_t *rk, const char *what, char *err, size_t errlen)
{
    char reason[256];
    rd_kafka_resp_err_t fe = rk ? rd_kafka_fatal_error(rk, reason, sizeof reason) : 0;
    if (!fe)
        return false;
    if (err)
        snprintf(err, errlen, "transaction %s: %s has a fatal error: %.200s (%.60s)", what,
                 rd_kafka_type(rk) == RD_KAFKA_CONSUMER ? "the consumer" : "the producer", reason,
                 rd_kafka_err2name(fe));
    return true;
}

kafka_txn_rc_t kafka_txn_begin(rd_kafka_t *producer, char *err, size_t errlen)
{
    if (kafka_txn_fatal(producer, "begin", err, errlen))
        return KAFKA_TXN_REBUILD;
    /* begin fails only when the producer is in a state where nothing can be produced */
    return kafka_txn_fail(rd_kafka_begin_transaction(producer), "begin", err, errlen)
               ? KAFKA_TXN_REBUILD
               : KAFKA_TXN_OK;
}

/* The checks before a commit: a fatal producer is rebuilt, a fenced consumer's transaction is
 * aborted (the healthy producer aborts; the consumer's next poll rebuilds it). *g gets the
 * consumer's group metadata when offsets are to be sent. OK: go on. */
static kafka_txn_rc_t kafka_txn_commit_check(rd_kafka_t *producer, rd_kafka_t *consumer,
                                             const rd_kafka_topic_partition_list_t *offsets,
                                             rd_kafka_consumer_group_metadata_t **g, char *err,
                                             size_t errlen)
{
    *g = NULL;
    if (kafka_txn_fatal(producer, "commit", err, errlen))
        return KAFKA_TXN_REBUILD;
    /* even without offsets: the records read again by its rebuilt consumer would be committed
     * twice */
    if (kafka_txn_fatal(consumer, "commit", err, errlen))
        return KAFKA_TXN_ABORT;
    if (!offsets || offsets->cnt == 0)
        return KAFKA_TXN_OK;
    if (!(*g = rd_kafka_consumer_group_metadata(consumer))) {
        if (err)
            snprintf(err, errlen, "transaction send offsets: no consumer group metadata");
        return KAFKA_TXN_ABORT;
    }
    return KAFKA_TXN_OK;
}

/* Send offsets (g not NULL) and commit, each with what is left until deadline_ms (at least
 * 1 ms: -1 would be unbounded for the commit, which librdkafka caps by nothing). *stage says
 * which call runs (0 send offsets, 1 commit), for the log of a call that hangs. */
static kafka_txn_rc_t kafka_txn_send_commit(rd_kafka_t *producer,
                                            const rd_kafka_topic_partition_list_t *offsets,
                                            const rd_kafka_consumer_group_metadata_t *g,
                                            int64_t deadline_ms, atomic_int *stage, char *err,
                                            size_t errlen)
{
    if (g) {
        int64_t left = deadline_ms - mono_now_ms();
        rd_kafka_error_t *e =
            rd_kafka_send_offsets_to_transaction(producer, offsets, g, left > 0 ? (int)left : 1);
        if (e)
            return kafka_txn_fail(e, "send offsets", err, errlen);
    }
    atomic_store(stage, 1);
    int64_t left = deadline_ms - mono_now_ms();
    return kafka_txn_fail(rd_kafka_commit_transaction(producer, left > 0 ? (int)left : 1), "commit",
                          err, errlen);
}

kafka_txn_rc_t kafka_txn_commit(rd_kafka_t *producer, rd_kafka_t *consumer,
                                const rd_kafka_topic_partition_list_t *offsets, char *err,
                                size_t errlen)
{
    rd_kafka_consumer_group_metadata_t *g;
    kafka_txn_rc_t rc = kafka_txn_commit_check(producer, consumer, offsets, &g, err, errlen);
    if (rc != KAFKA_TXN_OK)
        return rc;
    atomic_int stage = 0;
    rc = kafka_txn_send_commit(producer, offsets, g, mono_now_ms() + KAFKA_TXN_CALL_MS, &stage, err,
                               errlen);
    if (g)
        rd_kafka_consumer_group_metadata_destroy(g);
    return rc;
}

kafka_txn_rc_t kafka_txn_abort(rd_kafka_t *producer, char *err, size_t errlen)
{
    if (kafka_txn_fatal(producer, "abort", err, errlen))
        return KAFKA_TXN_REBUILD;
    /* -1 would wait without bound for the records in flight and the coordinator's answer */
    return kafka_txn_fail(rd_kafka_abort_transaction(producer, KAFKA_TXN_CALL_MS), "abort", err,
                          errlen)
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

void kafka_txn_mode_info(json_t *info, bool exactly_once, int transaction_ms)
{
    json_object_set_new(info, "kafka_mode",
                        json_string(exactly_once ? "exactly-once" : "at-least-once"));
    if (exactly_once)
        json_object_set_new(info, "transaction_ms", json_integer(transaction_ms));
}

/* ---- a pair's bounded commit (kafka_txn.h) ---- */

/* Waited beyond the call's own timeout for librdkafka to report it (a result it classifies is
 * better than a rebuild). */
#define KAFKA_TXN_GRACE_MS 1000

typedef struct kafka_txn_call {
    kafka_txn_pair_t *pair;
    pthread_cond_t cv;
    rd_kafka_t *producer;
    rd_kafka_topic_partition_list_t *offsets; /* a copy */
    rd_kafka_consumer_group_metadata_t *g;    /* NULL: no offsets */
    int64_t deadline_ms;
    atomic_int stage; /* 0 send offsets, 1 commit */
    /* under pair->mu */
    bool done, abandoned;
    rd_kafka_t *retire; /* the set-aside handle: destroyed once the call returned */
    kafka_txn_rc_t rc;
    char err[512];
} kafka_txn_call_t;

struct kafka_txn_pair {
    pthread_mutex_t mu;
    kafka_txn_call_t *stuck;  /* abandoned by the worker, its handle still the producer's */
    kafka_txn_call_t *aside;  /* abandoned, its handle set aside */
    kafka_txn_call_t *aside2; /* a second one (kafka_txn_pair_take_handle only) */
    bool freed;               /* the owner is gone: the last stuck call frees the pair */
    bool told_waiting;        /* "a second commit hangs" logged */
    int call_ms;
    char who[128], txn_id[256], group[256], topic[256];
    _Atomic uint64_t committed, aborted, timed_out, rebuilds;
    metrics_counter_t *m_committed, *m_aborted, *m_timed_out, *m_rebuilds;
    metrics_histogram_t *m_commit;
};

static void kafka_txn_call_free(kafka_txn_call_t *c)
{
    if (c->offsets)
        rd_kafka_topic_partition_list_destroy(c->offsets);
    if (c->g)
        rd_kafka_consumer_group_metadata_destroy(c->g);
    pthread_cond_destroy(&c->cv);
    free(c);
}

/* The end of a call the worker gave up on: destroys its set-aside handle (nothing is queued on
 * it: the worker had every record acknowledged before the call) and frees what is left. */
static void kafka_txn_call_orphan(kafka_txn_call_t *c)
{
    kafka_txn_pair_t *t = c->pair;
    rd_kafka_t *retire = c->retire;
    if (t->stuck == c)
        t->stuck = NULL;
    if (t->aside == c)
        t->aside = NULL;
    if (t->aside2 == c)
        t->aside2 = NULL;
    t->told_waiting = false;
    bool free_pair = t->freed && !t->stuck && !t->aside && !t->aside2;
    /* logged under the lock: once it is released the owner may free the pair */
    log_warn("%s: the transaction call that timed out returned (transactional.id %s): %s", t->who,
             t->txn_id,
             c->err[0] ? c->err
                       : "no error: the coordinator completed it before the rebuilt pair's "
                         "init_transactions fenced it");
    pthread_mutex_unlock(&t->mu);
    if (retire)
        rd_kafka_destroy(retire);
    kafka_txn_call_free(c);
    if (free_pair) {
        pthread_mutex_destroy(&t->mu);
        free(t);
    }
}

static void *kafka_txn_call_thread(void *arg)
{
    kafka_txn_call_t *c = arg;
    char err[512] = "";
    kafka_txn_rc_t rc = kafka_txn_send_commit(c->producer, c->offsets, c->g, c->deadline_ms,
                                              &c->stage, err, sizeof err);
    kafka_txn_pair_t *t = c->pair;
    pthread_mutex_lock(&t->mu);
    c->rc = rc;
    snprintf(c->err, sizeof c->err, "%s", err);
    c->done = true;
    if (c->abandoned) {
        kafka_txn_call_orphan(c); /* unlocks */
        return NULL;
    }
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

/* Starts the call's thread (detached). 0, or an errno. */
static int kafka_txn_call_start(kafka_txn_call_t *c)
{
    pthread_attr_t attr;
    pthread_t th;
    int e = pthread_attr_init(&attr);
    if (e)
        return e;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    e = pthread_create(&th, &attr, kafka_txn_call_thread, c);
    pthread_attr_destroy(&attr);
    return e;
}

/* Waits for the call until its deadline plus the grace: true when it finished (c still the
 * worker's to free), false when abandoned (the pair's stuck call; its thread frees it, so c is
 * not touched after: *stage says which call hung). */
static bool kafka_txn_call_wait(kafka_txn_pair_t *t, kafka_txn_call_t *c, int *stage)
{
    int64_t until = c->deadline_ms + KAFKA_TXN_GRACE_MS;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t left = until - mono_now_ms();
    ts.tv_sec += left / 1000;
    ts.tv_nsec += (left % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&t->mu);
    while (!c->done && pthread_cond_timedwait(&c->cv, &t->mu, &ts) != ETIMEDOUT)
        ;
    bool done = c->done;
    if (!done) {
        *stage = atomic_load(&c->stage);
        c->abandoned = true;
        t->stuck = c;
    }
    pthread_mutex_unlock(&t->mu);
    return done;
}

static kafka_txn_call_t *kafka_txn_call_new(kafka_txn_pair_t *t, rd_kafka_t *producer,
                                            const rd_kafka_topic_partition_list_t *offsets,
                                            rd_kafka_consumer_group_metadata_t *g)
{
    kafka_txn_call_t *c = calloc(1, sizeof *c);
    pthread_condattr_t ca;
    if (!c || pthread_condattr_init(&ca)) {
        free(c);
        return NULL;
    }
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int e = pthread_cond_init(&c->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (e) {
        free(c);
        return NULL;
    }
    c->pair = t;
    c->producer = producer;
    c->g = g;
    if (g && !(c->offsets = rd_kafka_topic_partition_list_copy(offsets))) {
        c->g = NULL;
        kafka_txn_call_free(c);
        return NULL;
    }
    return c;
}

/* The records of the transaction acknowledged on the worker's own thread (their delivery
 * callbacks are the worker's), by deadline_ms: else ABORT, nothing was committed yet. */
static kafka_txn_rc_t kafka_txn_pair_flush(kafka_txn_pair_t *t, rd_kafka_t *producer,
                                           int64_t deadline_ms, char *err, size_t errlen)
{
    int64_t left;
    while (rd_kafka_outq_len(producer) > 0 && (left = deadline_ms - mono_now_ms()) > 0)
        rd_kafka_flush(producer, (int)(left < 100 ? left : 100));
    int n = rd_kafka_outq_len(producer);
    if (n == 0)
        return KAFKA_TXN_OK;
    if (err)
        snprintf(err, errlen, "transaction commit: %d records not acknowledged after %d ms", n,
                 t->call_ms);
    return KAFKA_TXN_ABORT;
}

/* A call abandoned at its deadline: logged with the pair and the call that hangs. */
static void kafka_txn_pair_timed_out(kafka_txn_pair_t *t, int stage, char *err, size_t errlen)
{
    const char *what = stage ? "commit_transaction" : "send_offsets_to_transaction";
    atomic_fetch_add(&t->timed_out, 1);
    if (t->m_timed_out)
        metrics_counter_inc(t->m_timed_out);
    log_error("%s: transaction call %s did not return within %d ms (transactional.id %s, group "
              "%s, topic %s): the pair is rebuilt, its stuck producer set aside, the records "
              "read again from the committed offsets",
              t->who, what, t->call_ms + KAFKA_TXN_GRACE_MS, t->txn_id, t->group, t->topic);
    if (err)
        snprintf(err, errlen, "transaction %s: timed out after %d ms", what,
                 t->call_ms + KAFKA_TXN_GRACE_MS);
}

kafka_txn_rc_t kafka_txn_pair_commit(kafka_txn_pair_t *t, rd_kafka_t *producer,
                                     rd_kafka_t *consumer,
                                     const rd_kafka_topic_partition_list_t *offsets, char *err,
                                     size_t errlen)
{
    int64_t t0 = mono_now_ms(), deadline = t0 + t->call_ms;
    pthread_mutex_lock(&t->mu);
    bool stuck = t->stuck && t->stuck->producer == producer, full = t->aside && t->aside2;
    pthread_mutex_unlock(&t->mu);
    if (stuck || full) {
        if (err)
            snprintf(err, errlen, "transaction commit: %s",
                     stuck ? "an earlier commit of this producer still hangs: rebuild the pair"
                           : "two earlier commits still hang inside librdkafka");
        return stuck ? KAFKA_TXN_REBUILD : KAFKA_TXN_ABORT;
    }
    rd_kafka_consumer_group_metadata_t *g;
    kafka_txn_rc_t rc = kafka_txn_commit_check(producer, consumer, offsets, &g, err, errlen);
    if (rc == KAFKA_TXN_OK)
        rc = kafka_txn_pair_flush(t, producer, deadline, err, errlen);
    kafka_txn_call_t *c = rc == KAFKA_TXN_OK ? kafka_txn_call_new(t, producer, offsets, g) : NULL;
    if (rc != KAFKA_TXN_OK || !c) {
        if (g)
            rd_kafka_consumer_group_metadata_destroy(g);
        if (rc == KAFKA_TXN_OK && err) /* out of memory: nothing was sent */
            snprintf(err, errlen, "transaction commit: out of memory");
        return rc == KAFKA_TXN_OK ? KAFKA_TXN_ABORT : rc;
    }
    c->deadline_ms = deadline;
    int e = kafka_txn_call_start(c);
    if (e) {
        if (err)
            snprintf(err, errlen, "transaction commit: no thread: %s", strerror(e));
        kafka_txn_call_free(c);
        return KAFKA_TXN_ABORT;
    }
    int stage = 0;
    if (!kafka_txn_call_wait(t, c, &stage)) {
        kafka_txn_pair_timed_out(t, stage, err, errlen);
        return KAFKA_TXN_REBUILD;
    }
    rc = c->rc;
    if (rc != KAFKA_TXN_OK && err)
        snprintf(err, errlen, "%s", c->err);
    kafka_txn_call_free(c);
    if (rc == KAFKA_TXN_OK) {
        atomic_fetch_add(&t->committed, 1);
        if (t->m_committed)
            metrics_counter_inc(t->m_committed);
        if (t->m_commit)
            metrics_histogram_observe(t->m_commit, (double)(mono_now_ms() - t0) / 1e3);
    }
    return rc;
}

kafka_txn_rc_t kafka_txn_pair_abort(kafka_txn_pair_t *t, rd_kafka_t *producer, char *err,
                                    size_t errlen)
{
    atomic_fetch_add(&t->aborted, 1);
    if (t->m_aborted)
        metrics_counter_inc(t->m_aborted);
    return kafka_txn_abort(producer, err, errlen);
}

int kafka_txn_pair_rebuild(kafka_txn_pair_t *t, kafka_producer_t *producer,
                           kafka_consumer_t *consumer)
{
    pthread_mutex_lock(&t->mu);
    bool stuck = t->stuck && t->stuck->producer == kafka_producer_handle(producer);
    if (stuck && t->aside) {
        /* at most one handle set aside: wait for the first stuck call to return */
        if (!t->told_waiting)
            log_error("%s: a second transaction call hangs (transactional.id %s) while the first "
                      "is still inside librdkafka: the pair waits for the first to return",
                      t->who, t->txn_id);
        t->told_waiting = true;
        pthread_mutex_unlock(&t->mu);
        return -1;
    }
    pthread_mutex_unlock(&t->mu);
    if (!stuck) {
        if (kafka_pair_rebuild(producer, consumer))
            return -1;
    } else {
        rd_kafka_t *old;
        int rc = kafka_pair_rebuild_set_aside(producer, consumer, &old);
        if (!old)
            return -1;
        pthread_mutex_lock(&t->mu);
        kafka_txn_call_t *c = t->stuck;
        if (c && c->producer == old) { /* still inside: its thread destroys the handle */
            c->retire = old;
            t->aside = c;
            t->stuck = NULL;
            old = NULL;
        }
        pthread_mutex_unlock(&t->mu);
        if (old) /* it returned meanwhile; nothing is queued on it */
            rd_kafka_destroy(old);
        if (rc)
            return -1; /* the consumer's rebuild is retried by its next poll */
    }
    kafka_txn_pair_count_rebuild(t);
    return 0;
}

kafka_txn_rc_t kafka_txn_pair_recover(kafka_txn_pair_t *t, kafka_producer_t *producer,
                                      kafka_consumer_t *consumer, kafka_txn_rc_t rc, bool txn_open,
                                      int (*rewind)(void *owner), void *owner, const char *why)
{
    char e2[512] = "";
    if (rc == KAFKA_TXN_ABORT && txn_open &&
        kafka_txn_pair_abort(t, kafka_producer_handle(producer), e2, sizeof e2) != KAFKA_TXN_OK)
        rc = KAFKA_TXN_REBUILD;
    if (rc == KAFKA_TXN_ABORT) {
        for (int i = 0; i < 100 && kafka_producer_outq_len(producer) > 0; i++)
            kafka_producer_poll(producer, 10); /* the purged records' reports */
        if (kafka_consumer_fatal_error(consumer, NULL, 0)) {
            /* no rewind: a fenced consumer cannot seek, and its rebuild reads from the
             * committed offsets anyway */
            log_warn("%s: %s; transaction aborted, the consumer is fenced: made again by its "
                     "next poll, reading from the committed offsets",
                     t->who, why);
            return KAFKA_TXN_OK;
        }
        if (rewind(owner) == 0) {
            log_warn("%s: %s; transaction aborted, read again from the last committed offsets",
                     t->who, why);
            return KAFKA_TXN_OK;
        }
    }
    log_warn("%s: %s%s%s; consumer and producer made again, reading from the committed offsets",
             t->who, why, e2[0] ? "; " : "", e2);
    return KAFKA_TXN_REBUILD;
}

bool kafka_txn_pair_take_handle(kafka_txn_pair_t *t, rd_kafka_t *rk)
{
    pthread_mutex_lock(&t->mu);
    kafka_txn_call_t *c = t->stuck;
    bool take = c && c->producer == rk;
    if (take) {
        c->retire = rk;
        *(t->aside ? &t->aside2 : &t->aside) = c;
        t->stuck = NULL;
    }
    pthread_mutex_unlock(&t->mu);
    return take;
}

void kafka_txn_pair_count_rebuild(kafka_txn_pair_t *t)
{
    atomic_fetch_add(&t->rebuilds, 1);
    if (t->m_rebuilds)
        metrics_counter_inc(t->m_rebuilds);
}

kafka_txn_pair_stats_t kafka_txn_pair_stats(kafka_txn_pair_t *t)
{
    pthread_mutex_lock(&t->mu);
    uint64_t aside = (t->aside != NULL) + (t->aside2 != NULL);
    pthread_mutex_unlock(&t->mu);
    return (kafka_txn_pair_stats_t){.committed = atomic_load(&t->committed),
                                    .aborted = atomic_load(&t->aborted),
                                    .timed_out = atomic_load(&t->timed_out),
                                    .rebuilds = atomic_load(&t->rebuilds),
                                    .set_aside = aside};
}

/* The pair's counters, <prefix>_kafka_<name>: the first two always, the others unless the
 * owner counts commits itself (own_commit_metrics). */
static const struct {
    const char *name, *help;
} kafka_txn_counters[] = {
    {"transactions_timed_out_total",
     "Transaction commits that did not return in time (the pair is rebuilt)"},
    {"pair_rebuilds_total",
     "Transactional consumer+producer pairs made again after a fatal error or a hung call"},
    {"transactions_committed_total", "Transactions committed (records and offsets together)"},
    {"transactions_aborted_total",
     "Transactions aborted (their records read again from the committed offsets)"},
};

static metrics_counter_t *kafka_txn_counter(const kafka_txn_pair_opts_t *o, size_t i)
{
    char full[160];
    snprintf(full, sizeof full, "%s_kafka_%s", o->metric_prefix, kafka_txn_counters[i].name);
    metrics_family_t *f =
        metrics_counter_new(o->metrics, full, kafka_txn_counters[i].help, o->label);
    if (!f)
        return NULL;
    return o->label ? metrics_counter_labels(f, o->label_value) : metrics_counter_labels(f);
}

static int kafka_txn_pair_metrics(kafka_txn_pair_t *t, const kafka_txn_pair_opts_t *o)
{
    if (!o->metrics || !o->metric_prefix)
        return 0;
    t->m_timed_out = kafka_txn_counter(o, 0);
    t->m_rebuilds = kafka_txn_counter(o, 1);
    if (o->own_commit_metrics)
        return t->m_timed_out && t->m_rebuilds ? 0 : -1;
    t->m_committed = kafka_txn_counter(o, 2);
    t->m_aborted = kafka_txn_counter(o, 3);
    static const double b[] = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 5, 30};
    char full[160];
    snprintf(full, sizeof full, "%s_kafka_transactions_commit_seconds", o->metric_prefix);
    metrics_family_t *f = metrics_histogram_new(
        o->metrics, full,
        "Time a worker waited for a transaction's acknowledgements, offsets and commit", o->label,
        b, sizeof b / sizeof *b);
    t->m_commit = !f         ? NULL
                  : o->label ? metrics_histogram_labels(f, o->label_value)
                             : metrics_histogram_labels(f);
    return t->m_committed && t->m_aborted && t->m_timed_out && t->m_rebuilds && t->m_commit ? 0
                                                                                            : -1;
}

void kafka_txn_pair_metrics_remove(metrics_registry_t *r, const char *prefix, const char *label,
                                   const char *value)
{
    for (size_t i = 0; i < 2; i++) { /* the owner removes its own commit metrics */
        char full[160];
        snprintf(full, sizeof full, "%s_kafka_%s", prefix, kafka_txn_counters[i].name);
        metrics_family_t *f = metrics_counter_new(r, full, kafka_txn_counters[i].help, label);
        if (f)
            metrics_family_remove_matching(f, label, value);
    }
}

kafka_txn_pair_t *kafka_txn_pair_new(const kafka_txn_pair_opts_t *o)
{
    kafka_txn_pair_t *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    if (pthread_mutex_init(&t->mu, NULL)) {
        free(t);
        return NULL;
    }
    t->call_ms = o->call_ms > 0 ? o->call_ms : KAFKA_TXN_CALL_MS;
    snprintf(t->who, sizeof t->who, "%s", o->who ? o->who : "kafka");
    snprintf(t->txn_id, sizeof t->txn_id, "%s", o->txn_id ? o->txn_id : "-");
    snprintf(t->group, sizeof t->group, "%s", o->group ? o->group : "-");
    snprintf(t->topic, sizeof t->topic, "%s", o->topic ? o->topic : "-");
    if (kafka_txn_pair_metrics(t, o)) {
        kafka_txn_pair_free(t, NULL);
        return NULL;
    }
    return t;
}

void kafka_txn_pair_free(kafka_txn_pair_t *t, kafka_producer_t *producer)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->mu);
    bool stuck = producer && t->stuck && t->stuck->producer == kafka_producer_handle(producer);
    pthread_mutex_unlock(&t->mu);
    rd_kafka_t *old = NULL;
    /* the producer's close must not destroy the handle a stuck call is inside */
    if (stuck && kafka_pair_rebuild_set_aside(producer, NULL, &old) == 0 && old) {
        pthread_mutex_lock(&t->mu);
        if (t->stuck && t->stuck->producer == old) {
            t->stuck->retire = old;
            old = NULL;
        }
        pthread_mutex_unlock(&t->mu);
        if (old)
            rd_kafka_destroy(old);
    }
    pthread_mutex_lock(&t->mu);
    t->freed = true;
    bool later = t->stuck || t->aside || t->aside2;
    pthread_mutex_unlock(&t->mu);
    if (later)
        return; /* the last stuck call frees it (kafka_txn_call_orphan) */
    pthread_mutex_destroy(&t->mu);
    free(t);
}
