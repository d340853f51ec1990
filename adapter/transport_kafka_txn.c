/* Exactly once for the Kafka transport (docs/kafka-feed.md, "Guarantees"): the open
 * transaction, its commit with the feed's offsets, its abort and the rewind after it, the
 * offsets-only commits of a feed whose records are all filtered out, and the records a broker
 * refused for good inside a transaction (dead-lettered on their replay instead of aborting
 * every replay the same way). The producer and the sends are in transport_kafka.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "transport_kafka-int.h"

/* The in-flight sends are void (their transaction aborted or the producer is gone): no
 * report for them, the feed's rewind takes their records again. */
void ktx_forget(ktx_t *t)
{
    for (unsigned i = 0; i < t->cap; i++)
        t->slots[i].used = t->slots[i].ready = false;
    t->live = 0;
    t->txn_open = t->committing = t->abort_pending = false;
    t->txn_records = 0;
    if (t->commit_ev)
        evtimer_del(t->commit_ev);
}

/* Remembers the source positions of a batch refused for good in the open transaction (a ring:
 * past KTX_POISON_MAX the oldest is overwritten). Out of memory or without positions the batch
 * is not remembered: its replay fails and aborts again (retried, never lost). */
void ktx_poison_add(ktx_t *t, const ktx_slot_t *s)
{
    if (!t->cfg.positions)
        return;
    if (!t->poison) {
        if (!(t->poison = malloc(KTX_POISON_MAX * sizeof *t->poison)))
            return;
        for (unsigned j = 0; j < KTX_POISON_MAX; j++)
            t->poison[j] = (transport_pos_t){.partition = -1, .offset = -1}; /* free */
    }
    if (!t->pos_scratch && !(t->pos_scratch = calloc(KTX_POS_MAX, sizeof *t->pos_scratch)))
        return;
    size_t n = t->cfg.positions(s->cookie, t->pos_scratch, KTX_POS_MAX);
    for (size_t i = 0; i < n; i++) {
        if (t->poison[t->poison_next].offset < 0)
            t->n_poison++;
        t->poison[t->poison_next] = t->pos_scratch[i];
        t->poison_next = (t->poison_next + 1) % KTX_POISON_MAX;
    }
    snprintf(t->poison_reason, sizeof t->poison_reason,
             "%.500s (refused for good in a transaction, which was aborted; dead-lettered on "
             "its replay)",
             s->reason);
}

/* true: a record of the batch was refused for good before; its positions are forgotten (the
 * batch is dead-lettered). Called only while something is remembered. */
bool ktx_poison_take(ktx_t *t, void *cookie)
{
    if (!t->poison || !t->pos_scratch)
        return false;
    size_t n = t->cfg.positions(cookie, t->pos_scratch, KTX_POS_MAX);
    bool hit = false;
    for (size_t i = 0; i < n && t->n_poison; i++)
        for (unsigned j = 0; j < KTX_POISON_MAX; j++) {
            transport_pos_t *q = &t->poison[j];
            if (q->offset >= 0 && q->offset == t->pos_scratch[i].offset &&
                q->partition == t->pos_scratch[i].partition) {
                *q = (transport_pos_t){.partition = -1, .offset = -1};
                t->n_poison--;
                hit = true;
            }
        }
    return hit;
}

/* A transaction that cannot commit: aborted (its records are never visible to read_committed
 * consumers), the in-flight sends forgotten and the feed rewound to its committed offsets.
 * When the abort itself fails (fatal: fenced, or the cluster gone) the producer is made
 * again, which rewinds too (kafka_txn.h, "Recovery"). */
void ktx_txn_abort(ktx_t *t, bool abortable, char *reason, size_t rlen)
{
    char why[400];
    if (abortable && kafka_txn_abort(t->rk, why, sizeof why) == KAFKA_TXN_OK) {
        if (t->m_aborted)
            metrics_counter_inc(t->m_aborted);
        ktx_forget(t);
        /* the purged messages' reports: served now, ignored, before a slot is reused */
        t->ignore_drs = true;
        rd_kafka_flush(t->rk, KTX_TXN_WAIT_MS);
        t->ignore_drs = false;
        log_warn("feed %s: %s; aborted, produced again from the last committed offsets",
                 t->cfg.feed, reason);
        t->src->rewind(t->src->ctx, reason);
        if (t->state == KTX_UP && t->ev.on_writable)
            t->ev.on_writable(t->owner);
        return;
    }
    if (abortable)
        snprintf(reason + strlen(reason), rlen - strlen(reason), "; %.150s", why);
    ktx_teardown(t, reason); /* a new producer: init_transactions fences what was left */
}

/* Commits the open transaction once every send of it is reported: the feed's committable
 * offsets go into it first, so records and offsets are visible together. */
kafka_txn_rc_t ktx_commit_offsets(ktx_t *t, char *reason, size_t rlen)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    evtimer_del(t->commit_ev);
    rd_kafka_topic_partition_list_t *offs = t->src->offsets(t->src->ctx);
    char why[400];
    /* bounded: a commit that hangs asks for a new producer (ktx_txn_abort: teardown) */
    kafka_txn_rc_t rc =
        kafka_txn_pair_commit(t->txn, t->rk, t->src->consumer(t->src->ctx), offs, why, sizeof why);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (rc == KAFKA_TXN_OK && t->m_commit)
        metrics_histogram_observe(t->m_commit, (double)(t1.tv_sec - t0.tv_sec) +
                                                   (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    if (rc != KAFKA_TXN_OK)
        snprintf(reason, rlen, "kafka %s: topic %.200s: %.400s", t->bootstrap, t->topic, why);
    if (t->last_offs)
        rd_kafka_topic_partition_list_destroy(t->last_offs);
    t->last_offs = rc ? NULL : offs; /* NULL: unknown, the next idle check commits */
    if (rc && offs)
        rd_kafka_topic_partition_list_destroy(offs);
    return rc;
}

/* Offsets and commit; counted when it worked, else the failure is handled (abort or a new
 * producer) and false returned. */
static bool ktx_commit_counted(ktx_t *t)
{
    char reason[640];
    kafka_txn_rc_t rc = ktx_commit_offsets(t, reason, sizeof reason);
    if (rc != KAFKA_TXN_OK) {
        ktx_txn_abort(t, rc == KAFKA_TXN_ABORT, reason, sizeof reason);
        return false;
    }
    if (t->m_committed)
        metrics_counter_inc(t->m_committed);
    return true;
}

static void ktx_commit(ktx_t *t)
{
    if (!ktx_commit_counted(t))
        return;
    t->txn_open = t->committing = false;
    t->txn_records = 0;
    if (t->ev.on_writable)
        t->ev.on_writable(t->owner);
}

/* The commit interval has passed, the last report of a committing transaction is in, or a
 * message failed (abort). Never from inside a poll: from the loop. */
void ktx_commit_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    ktx_t *t = arg;
    if (t->state != KTX_UP || !t->eos || !t->txn_open)
        return;
    if (t->abort_pending) {
        char reason[640];
        snprintf(reason, sizeof reason, "kafka %s: transaction aborted: a message failed: %.400s",
                 t->bootstrap, t->txn_reason);
        ktx_txn_abort(t, true, reason, sizeof reason);
        return;
    }
    t->committing = true; /* capacity 0 until it is committed */
    if (t->live == 0)
        ktx_commit(t);
}

/* Whether the feed's committable offsets moved since the last commit. */
static bool ktx_offsets_moved(ktx_t *t)
{
    rd_kafka_topic_partition_list_t *o = t->src->offsets(t->src->ctx);
    bool moved = !t->last_offs ? o && o->cnt > 0 : !o || o->cnt != t->last_offs->cnt;
    for (int i = 0; o && !moved && i < o->cnt; i++) {
        const rd_kafka_topic_partition_t *p = rd_kafka_topic_partition_list_find(
            t->last_offs, o->elems[i].topic, o->elems[i].partition);
        moved = !p || p->offset != o->elems[i].offset;
    }
    if (o)
        rd_kafka_topic_partition_list_destroy(o);
    return moved;
}

/* No transaction open: commit the offsets that moved without records (filtered out). */
void ktx_idle_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    ktx_t *t = arg;
    if (t->state != KTX_UP || !t->eos || t->txn_open || t->live || !ktx_offsets_moved(t))
        return;
    if (kafka_txn_begin(t->rk, NULL, 0) != KAFKA_TXN_OK)
        return; /* a send will find the producer's state and make it again */
    t->txn_open = t->committing = true;
    ktx_commit(t);
}

/* The feed's partitions are being revoked: the open transaction is aborted (its records
 * would otherwise be produced again by the partitions' next owner) and the feed drops what
 * it holds; the partitions' next owner reads from the last committed offsets. */
void ktx_revoked(transport_t *base)
{
    ktx_t *t = (ktx_t *)base;
    char reason[640];
    if (t->state == KTX_UP && t->eos && t->txn_open) {
        /* commit what is produced: the last reports first (their acks reach the ledger) */
        t->committing = true;
        t->in_poll = true;
        rd_kafka_flush(t->rk, KTX_TXN_WAIT_MS);
        t->in_poll = false;
        if (t->state != KTX_UP)
            return; /* torn down meanwhile: rewound */
        if (t->live > 0 || t->abort_pending) {
            snprintf(reason, sizeof reason,
                     "kafka %s: partitions revoked with %u send(s) unreported%s", t->bootstrap,
                     t->live, t->abort_pending ? " or failed" : "");
            ktx_txn_abort(t, true, reason, sizeof reason);
            return;
        }
        if (!ktx_commit_counted(t))
            return;
        ktx_forget(t); /* nothing in flight: only the transaction state */
    }
    /* What the feed holds of the revoked partitions is no longer ours to produce. */
    if (t->state == KTX_UP && !t->eos)
        return; /* at-least-once: the feed's usual revoke */
    snprintf(reason, sizeof reason, "partitions revoked (rebalance)");
    t->src->rewind(t->src->ctx, reason);
}
