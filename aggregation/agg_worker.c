/* ndd-aggregation worker loop: see agg_worker.h and docs/aggregation.md.
 *
 * Every consumed record gets a slot from a fixed pool (the in-flight bound) and keeps its
 * librdkafka message alive until the MAIN/DLQ produce of it is acknowledged: the value is
 * produced by reference (zero copy) and the original headers are detached from the consumed
 * message and re-used for the produced one. A slot moves through
 *   NEW (consumed, in the FIFO) -> READY (decoded, headers prepared, offset taken)
 *   -> PRODUCED (owned by librdkafka) -> delivery report -> offset done -> slot free.
 * The FIFO keeps consumption order, so records of one key leave in the order they came.
 *
 * With main-format frame a MAIN record's value is instead one NDD frame built in the slot's own
 * buffer (kept across uses of the slot, so no allocation per copy): librdkafka's producer then
 * handles a record without headers, which costs it about a third of one with twenty
 * (docs/benchmarks.md), and every reader of MAIN skips the header parse too. */
#include "agg_worker-int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agg_filter.h"
#include "buf.h"
#include "clock.h"
#include "codec.h"
#include "filter.h"
#include "frame.h"
#include "kafka_txn.h"
#include "kafka_wake.h"
#include "log.h"
#include "partitions.h"
#include "worker_stats.h"
#include "worker_control.h"

/* ---- small helpers ---- */

static int64_t agg_now_ns(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static agg_slot_t *agg_slot_get(agg_worker_t *w)
{
    agg_slot_t *s = w->free_list;
    if (!s)
        return NULL;
    w->free_list = s->next;
    w->n_free--;
    s->next = NULL;
    return s;
}

static void agg_slot_put(agg_worker_t *w, agg_slot_t *s)
{
    if (s->src)
        rd_kafka_message_destroy(s->src);
    if (s->hdrs)
        rd_kafka_headers_destroy(s->hdrs);
    buf_t frame = s->frame;
    if (frame.cap > AGG_FRAME_KEEP)
        buf_free(&frame);
    buf_reset(&frame);
    memset(s, 0, sizeof(*s));
    s->frame = frame;
    s->next = w->free_list;
    w->free_list = s;
    w->n_free++;
}

static void agg_fifo_push(agg_worker_t *w, agg_slot_t *s)
{
    s->next = NULL;
    if (w->fifo_tail)
        w->fifo_tail->next = s;
    else
        w->fifo_head = s;
    w->fifo_tail = s;
    w->fifo_len++;
}

static agg_slot_t *agg_fifo_pop(agg_worker_t *w)
{
    agg_slot_t *s = w->fifo_head;
    if (!s)
        return NULL;
    w->fifo_head = s->next;
    if (!w->fifo_head)
        w->fifo_tail = NULL;
    s->next = NULL;
    w->fifo_len--;
    return s;
}

static uint32_t agg_inflight(const agg_worker_t *w)
{
    return w->n_slots - w->n_free;
}

/* Consumer statistics: the consumer lag summed over our topic's partitions. */
static void agg_on_stats(void *owner, const char *json, size_t len)
{
    agg_worker_t *w = owner;
    int64_t lag = kafka_stats_consumer_lag(json, len, w->in_topic);
    if (lag >= 0)
        metrics_gauge_set(w->m.lag, (double)lag);
}

/* ---- offsets ---- */

static void agg_store_offsets(agg_worker_t *w)
{
    partitions_store(w->ledger, w->consumer, w->in_topic);
}

/* ---- producing ---- */

static void agg_slot_done(agg_worker_t *w, agg_slot_t *s)
{
    /* An acknowledgement for a partition revoked since (epoch moved on) is dropped by the
     * ledger: its record will be consumed again by the new owner from the committed offset. */
    partitions_ack(w->ledger, s->partition, s->epoch, s->ticket);
}

/* Turns a slot into a dead-letter record: hdrs (owned by the slot) get the @dlq-* headers. */
static int agg_make_dlq(agg_worker_t *w, agg_slot_t *s, const codec_error_t *cerr,
                        const char *reason_override)
{
    char origin[300];
    codec_format_origin(origin, sizeof(origin), w->in_topic, s->partition, s->offset);
    if (codec_dlq_headers(s->hdrs, cerr, origin))
        return -1;
    if (reason_override &&
        codec_headers_set(s->hdrs, CODEC_DLQ_REASON, reason_override, strlen(reason_override)))
        return -1;
    s->dest = AGG_DEST_DLQ;
    s->reason = reason_override ? -1 : (int8_t)cerr->reason;
    return 0;
}

/* The retry ladder of a record whose produce failed with e, refused before queueing or
 * reported failed by its delivery report (message.timeout.ms is infinite, so that is a
 * permanent refusal: too large, topic gone, not authorised). A MAIN record goes to the DLQ
 * with the reason; a DLQ record is retried once without its value. Returns 0 when the slot
 * (its hdrs owned by it) is ready for the next attempt, -1 when the record can be written
 * nowhere: logged, w->fatal set, and its offset is never stored (a restart retries it). */
static int agg_retry_ladder(agg_worker_t *w, agg_slot_t *s, rd_kafka_resp_err_t e)
{
    metrics_counter_inc(w->m.produce_errors);
    if (s->framed && s->dest == AGG_DEST_MAIN)
        s->hdrs = rd_kafka_headers_new(8); /* dead-lettered in the frame form: value the frame */
    bool ok = s->hdrs != NULL;
    if (ok && s->dest == AGG_DEST_MAIN) {
        codec_error_t ce = {.reason = CODEC_ERR_BAD_VALUE};
        snprintf(ce.field, sizeof(ce.field), "value");
        snprintf(ce.detail, sizeof(ce.detail), "produce to %.64s refused: %.64s", w->main_topic,
                 rd_kafka_err2str(e));
        ok = agg_make_dlq(w, s, &ce, AGG_REASON_PRODUCE) == 0;
    } else if (ok && !s->body_dropped) {
        s->body_dropped = 1;
        const char *why = rd_kafka_err2name(e);
        ok = codec_headers_set(s->hdrs, "@dlq-body-dropped", why, strlen(why)) == 0;
    } else {
        ok = false;
    }
    if (ok)
        return 0;
    log_error("aggregation %s: record %s [%d] offset %lld could not be written to %s nor %s: "
              "%s; stopping without storing its offset",
              w->cfg.nf_type, w->in_topic, (int)s->partition, (long long)s->offset, w->main_topic,
              w->dlq_topic, rd_kafka_err2str(e));
    w->fatal = true;
    return -1;
}

static void agg_on_delivery(void *owner, void *msg_opaque, const rd_kafka_message_t *rkm)
{
    agg_worker_t *w = owner;
    agg_slot_t *s = msg_opaque;
    if (!s)
        return;
    if (rkm->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (s->dest == AGG_DEST_MAIN) {
            w->dr_msgs++;
            w->dr_bytes += rkm->len;
            if (!w->dr_now_ns)
                w->dr_now_ns =
                    agg_now_ns(CLOCK_MONOTONIC); /* the reports of one poll came together */
            metrics_histogram_observe(w->m.latency, (double)(w->dr_now_ns - s->t_produce_ns) / 1e9);
        } else {
            metrics_counter_inc(w->m.dlq[s->reason < 0 ? CODEC_REASON__COUNT : s->reason]);
        }
        agg_slot_done(w, s);
        agg_slot_put(w, s);
        return;
    }
    if (rkm->err == RD_KAFKA_RESP_ERR__PURGE_QUEUE ||
        rkm->err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT) {
        /* Shutdown gave up on it: not done, so its offset is not stored. */
        agg_slot_put(w, s);
        return;
    }
    if (w->eos) {
        /* Its transaction cannot commit: aborted, and the records produced again from the
         * last committed offsets (a record refused for good is retried, never lost). */
        metrics_counter_inc(w->m.produce_errors);
        if (!w->txn_failed)
            log_warn("aggregation %s: record %s [%d] offset %lld not written: %s; its "
                     "transaction will be aborted",
                     w->cfg.nf_type, w->in_topic, (int)s->partition, (long long)s->offset,
                     rd_kafka_err2str(rkm->err));
        w->txn_failed = true;
        agg_slot_put(w, s);
        return;
    }
    /* librdkafka keeps the headers it was given: the next attempt gets a copy. */
    rd_kafka_headers_t *h = NULL;
    if (s->framed && s->dest == AGG_DEST_MAIN)
        ; /* a frame has no headers: the ladder gives its dead-letter record new ones */
    else if (rd_kafka_message_headers(rkm, &h) == RD_KAFKA_RESP_ERR_NO_ERROR && h)
        s->hdrs = rd_kafka_headers_copy(h);
    else
        s->hdrs = rd_kafka_headers_new(8);
    if (agg_retry_ladder(w, s, rkm->err)) {
        agg_slot_put(w, s);
        return;
    }
    s->state = AGG_SLOT_READY;
    agg_fifo_push(w, s);
}

enum { AGG_WAIT = -1, AGG_FINISHED = 0, AGG_GO = 1 };

/* Sets an enrichment header. Most copies do not carry it yet (the decoder says so), and then
 * it is appended without scanning the list for an old value to replace. */
static int agg_header_put(rd_kafka_headers_t *h, const codec_msg_t *cm, codec_meta_t meta,
                          const char *value, size_t len)
{
    if (cm->meta[meta].ptr)
        return codec_headers_set_meta(h, meta, value, len);
    return rd_kafka_header_add(h, codec_meta_name(meta), -1, value, (ssize_t)len) ==
                   RD_KAFKA_RESP_ERR_NO_ERROR
               ? 0
               : -1;
}

/* Builds the frame form of a MAIN record into the slot: the decoded copy with the enrichment
 * fields set (the frame writes every field once, in the codec's order, so a value the copy
 * already carried is replaced, not repeated). The consumed record and its parsed headers are
 * released at once: the frame holds all the record needs, and librdkafka frees a fetch
 * response's buffer when its last record goes, so the in-flight copies no longer hold the
 * fetched bytes too (RSS). */
static int agg_frame(agg_slot_t *s, codec_msg_t *cm, const char *ts, size_t tlen, const char *seq,
                     size_t qlen, const char *origin, size_t olen)
{
    cm->meta[CODEC_META_AGG_TIMESTAMP] = (codec_slice_t){ts, tlen};
    cm->meta[CODEC_META_AGG_SEQ] = (codec_slice_t){seq, qlen};
    cm->meta[CODEC_META_ORIGIN] = (codec_slice_t){origin, olen};
    buf_reset(&s->frame);
    if (frame_build_copy(&s->frame, cm))
        return -1;
    /* The record ends with u32 key length | key | u32 body length | body. */
    s->fkey_len = (uint16_t)cm->key.len;
    s->fkey_off = (uint32_t)(s->frame.len - cm->body.len - 4 - cm->key.len);
    s->framed = 1;
    rd_kafka_headers_destroy(s->hdrs);
    s->hdrs = NULL;
    rd_kafka_message_destroy(s->src);
    s->src = NULL;
    return 0;
}

/* Decides what a NEW slot becomes: AGG_GO when it is READY to produce, AGG_FINISHED when
 * nothing is to be produced (filtered, or consumed before a revoke) and the caller frees it,
 * AGG_WAIT when it must wait (offset window full, or out of memory with w->fatal set). */
static int agg_prepare(agg_worker_t *w, agg_slot_t *s, const filter_t *flt, const char *ts,
                       size_t tlen)
{
    rd_kafka_message_t *m = s->src;
    if (!partitions_assigned(w->ledger, m->partition) ||
        partitions_epoch(w->ledger, m->partition) != s->epoch)
        return AGG_FINISHED; /* consumed before a revoke: the next owner reads it again */
    codec_msg_t cm;
    codec_error_t cerr;
    codec_reason_t r = codec_decode_limited(&cm, m, &w->cfg.limits, &cerr);
    if (r == CODEC_OK) {
        int rule;
        filter_action_t a = filter_eval(flt, &cm, &rule);
        if (rule == FILTER_RULE_DEFAULT && flt) {
            metrics_counter_inc(w->m.unmatched);
        }
        if (a == FILTER_DROP) {
            if (partitions_skip(w->ledger, m->partition, m->offset) == PARTITIONS_FULL)
                return AGG_WAIT;
            metrics_counter_inc(w->m.filtered);
            return AGG_FINISHED;
        }
    }
    partitions_rc_t rc = partitions_track(w->ledger, m->partition, m->offset, &s->ticket);
    if (rc == PARTITIONS_FULL)
        return AGG_WAIT;
    if (rc != PARTITIONS_OK) {
        /* Not above the last taken offset: a redelivery librdkafka should not make. Skip it
         * rather than produce it twice; its offset is covered by the later one. */
        log_warn("aggregation %s: %s [%d] offset %lld out of order (last %lld), skipped",
                 w->cfg.nf_type, w->in_topic, (int)m->partition, (long long)m->offset,
                 (long long)partitions_last_taken(w->ledger, m->partition));
        return AGG_FINISHED;
    }
    /* The original headers move to the produced record (no copy of their bytes). */
    rd_kafka_headers_t *h = NULL;
    if (rd_kafka_message_detach_headers(m, &h) != RD_KAFKA_RESP_ERR_NO_ERROR || !h)
        h = rd_kafka_headers_new(4);
    s->hdrs = h;
    if (r != CODEC_OK) {
        if (agg_make_dlq(w, s, &cerr, NULL))
            goto nomem;
        log_debug("aggregation %s: %s [%d] offset %lld to DLQ: %s %s: %s", w->cfg.nf_type,
                  w->in_topic, (int)m->partition, (long long)m->offset,
                  codec_reason_name(cerr.reason), cerr.field, cerr.detail);
    } else {
        char origin[300];
        int olen =
            codec_format_origin(origin, sizeof(origin), w->in_topic, m->partition, m->offset);
        char seq[BUF_DEC_MAX];
        agg_part_t *p = partitions_user(w->ledger, m->partition);
        size_t qlen = buf_format_u64(seq, p->seq + 1);
        if (w->cfg.main_frame) {
            if (agg_frame(s, &cm, ts, tlen, seq, qlen, origin, olen > 0 ? (size_t)olen : 0))
                goto nomem;
            p->seq++;
            s->dest = AGG_DEST_MAIN;
            s->state = AGG_SLOT_READY;
            return AGG_GO;
        }
        /* A copy keyed only by its key gets the header too; one with only the header gets
         * it as key at produce time (agg_produce_key), so MAIN records carry both. */
        if ((codec_msg_cid_needs_header(&cm) &&
             rd_kafka_header_add(h, codec_meta_name(CODEC_META_CORRELATION_ID), -1, cm.key.ptr,
                                 (ssize_t)cm.key.len) != RD_KAFKA_RESP_ERR_NO_ERROR) ||
            agg_header_put(h, &cm, CODEC_META_AGG_TIMESTAMP, ts, tlen) ||
            agg_header_put(h, &cm, CODEC_META_AGG_SEQ, seq, qlen) ||
            agg_header_put(h, &cm, CODEC_META_ORIGIN, origin, olen > 0 ? (size_t)olen : 0))
            goto nomem;
        p->seq++;
        s->dest = AGG_DEST_MAIN;
    }
    s->state = AGG_SLOT_READY;
    return AGG_GO;
nomem:
    /* Out of memory building headers: leave the offset pending and stop; a restart retries. */
    log_error("aggregation %s: out of memory preparing %s [%d] offset %lld", w->cfg.nf_type,
              w->in_topic, (int)m->partition, (long long)m->offset);
    w->fatal = true;
    return AGG_WAIT;
}

/* The key a slot is produced with: the consumed key, or for a MAIN copy that carried its
 * correlation id only as @correlation-id, that header's value (read from the headers the slot
 * holds now, so a retry with copied headers finds it too). librdkafka copies the key. */
static void agg_produce_key(const agg_slot_t *s, const void **key, size_t *len)
{
    if (s->framed) {
        *key = s->frame.data + s->fkey_off;
        *len = s->fkey_len;
        return;
    }
    const rd_kafka_message_t *m = s->src;
    *key = m->key;
    *len = m->key_len;
    if (m->key_len == 0 && s->dest == AGG_DEST_MAIN)
        (void)codec_headers_correlation_id(s->hdrs, key, len);
}

/* Hands a READY slot to librdkafka: AGG_GO when queued (librdkafka owns the slot until its
 * delivery report), AGG_WAIT when the queue is full, AGG_FINISHED when it can be written
 * nowhere (w->fatal is set; the caller frees it, its offset stays unstored). */
static int agg_produce(agg_worker_t *w, agg_slot_t *s, int64_t now_ns)
{
    rd_kafka_message_t *m = s->src;
    if (w->eos && !w->txn_open) {
        char why[512];
        if (kafka_txn_begin(kafka_producer_handle(w->producer), why, sizeof why)) {
            log_warn("aggregation %s: %s; the pair is made again", w->cfg.nf_type, why);
            w->txn_rebuild = true;
            return AGG_WAIT;
        }
        w->txn_open = true;
    }
    /* Ends: each refusal moves the record down the ladder, which refuses a third time. */
    for (;;) {
        const char *topic = s->dest == AGG_DEST_MAIN ? w->main_topic : w->dlq_topic;
        s->t_produce_ns = now_ns;
        rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
        const void *key;
        size_t key_len;
        agg_produce_key(s, &key, &key_len);
        const void *value = s->body_dropped ? NULL : s->framed ? s->frame.data : m->payload;
        size_t value_len = s->body_dropped ? 0 : s->framed ? s->frame.len : m->len;
        kafka_produce_result_t r =
            kafka_produce(w->producer, topic, RD_KAFKA_PARTITION_UA, key, key_len, value, value_len,
                          s->hdrs, KAFKA_VALUE_BORROW, s, &e);
        if (r == KAFKA_PRODUCE_OK) {
            s->hdrs = NULL; /* librdkafka owns them now */
            s->state = AGG_SLOT_PRODUCED;
            return AGG_GO;
        }
        if (r == KAFKA_PRODUCE_FULL)
            return AGG_WAIT;
        /* Refused before queueing (larger than message.max.bytes, ...). */
        if (agg_retry_ladder(w, s, e))
            return AGG_FINISHED;
    }
}

/* Works the FIFO in order until it is empty or something must wait. */
static void agg_process_fifo(agg_worker_t *w)
{
    if (!w->fifo_head)
        return;
    filter_t *flt = filter_slot_acquire(w->filter);
    int64_t now_us = agg_now_ns(CLOCK_REALTIME) / 1000, now_ns = agg_now_ns(CLOCK_MONOTONIC);
    /* One clock read per batch, so its @agg-timestamp-us text is formatted once per batch too. */
    char ts[BUF_DEC_MAX];
    size_t tlen = buf_format_i64(ts, now_us);
    while (w->fifo_head && !w->fatal && !w->txn_rebuild) {
        agg_slot_t *s = w->fifo_head;
        int r = AGG_GO;
        if (s->state == AGG_SLOT_NEW)
            r = agg_prepare(w, s, flt, ts, tlen);
        if (r == AGG_GO)
            r = agg_produce(w, s, now_ns);
        if (r == AGG_WAIT)
            break;
        agg_fifo_pop(w);
        if (r == AGG_FINISHED)
            agg_slot_put(w, s);
    }
    filter_release(flt);
}

/* ---- exactly once (kafka_txn.h) ---- */

/* The offsets a commit carries, per partition: the first record still in the FIFO (consumed,
 * not handed to librdkafka), else the one after the last taken; a partition whose offset did
 * not move since its last commit is left out. Every record below it is in the transaction
 * (or filtered out), and the commit waits for their acknowledgements. Also counts the MAIN
 * records prepared but not produced (their @agg-seq is not committed). NULL: out of memory. */
static rd_kafka_topic_partition_list_t *agg_txn_offsets(agg_worker_t *w)
{
    for (int32_t i = partitions_next_assigned(w->ledger, -1); i >= 0;
         i = partitions_next_assigned(w->ledger, i)) {
        agg_part_t *p = partitions_user(w->ledger, i);
        p->fifo_first = -1;
        p->fifo_main = 0;
    }
    for (agg_slot_t *s = w->fifo_head; s; s = s->next) {
        if (!partitions_assigned(w->ledger, s->partition) ||
            partitions_epoch(w->ledger, s->partition) != s->epoch)
            continue;
        agg_part_t *p = partitions_user(w->ledger, s->partition);
        if (p->fifo_first < 0)
            p->fifo_first = s->offset;
        if (s->state == AGG_SLOT_READY && s->dest == AGG_DEST_MAIN)
            p->fifo_main++;
    }
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);
    for (int32_t i = partitions_next_assigned(w->ledger, -1); l && i >= 0;
         i = partitions_next_assigned(w->ledger, i)) {
        const agg_part_t *p = partitions_user(w->ledger, i);
        int64_t last = partitions_last_taken(w->ledger, i);
        int64_t next = p->fifo_first >= 0 ? p->fifo_first : last >= 0 ? last + 1 : -1;
        if (next >= 0 && next + 1 != p->from)
            rd_kafka_topic_partition_list_add(l, w->in_topic, i)->offset = next;
    }
    return l;
}

/* After an abort: everything consumed since the last commit is forgotten (the FIFO, and a new
 * epoch of each partition, so late reports are dropped as stale) and the consumer seeks back
 * to where that commit left each partition. 0, or -1 when the seek failed. */
static int agg_txn_rewind(agg_worker_t *w)
{
    agg_slot_t *s;
    while ((s = agg_fifo_pop(w)))
        agg_slot_put(w, s);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);
    if (!l)
        return -1;
    for (int32_t i = partitions_next_assigned(w->ledger, -1); i >= 0;
         i = partitions_next_assigned(w->ledger, i)) {
        agg_part_t *p = partitions_user(w->ledger, i);
        int64_t from = p->from;
        uint64_t seq = p->seq_from;
        partitions_revoke(w->ledger, i);
        partitions_assign(w->ledger, i);
        p = partitions_user(w->ledger, i);
        p->from = from;
        p->seq = p->seq_from = seq;
        if (from > 0)
            rd_kafka_topic_partition_list_add(l, w->in_topic, i)->offset = from - 1;
    }
    char why[512];
    int rc = kafka_txn_seek(kafka_consumer_handle(w->consumer), l, why, sizeof why);
    if (rc)
        log_warn("aggregation %s: rewind after an abort: %s", w->cfg.nf_type, why);
    rd_kafka_topic_partition_list_destroy(l);
    return rc;
}

static int agg_txn_rewind_cb(void *w)
{
    return agg_txn_rewind(w);
}

/* A transactional call failed (kafka_txn.h, "Recovery"): abort and rewind, or (fatal, or the
 * abort or the rewind failed) the pair is made again from the committed offsets. */
static void agg_txn_recover(agg_worker_t *w, kafka_txn_rc_t rc, const char *why)
{
    w->txn_aborts++;
    bool open = w->txn_open;
    w->txn_open = w->txn_failed = false;
    if (kafka_txn_pair_recover(w->txn, w->producer, w->consumer, rc, open, agg_txn_rewind_cb, w,
                               why) != KAFKA_TXN_OK)
        w->txn_rebuild = true;
}

/* Commits the open transaction with the offsets of what it holds (begins one when only the
 * offsets moved: filtered records). */
static void agg_txn_commit(agg_worker_t *w)
{
    if (w->txn_failed) {
        agg_txn_recover(w, KAFKA_TXN_ABORT, "a record of the transaction failed");
        return;
    }
    rd_kafka_topic_partition_list_t *offs = agg_txn_offsets(w);
    if (!offs || (!w->txn_open && offs->cnt == 0)) {
        if (offs)
            rd_kafka_topic_partition_list_destroy(offs);
        return; /* nothing to commit (out of memory: at the next interval) */
    }
    rd_kafka_t *ph = kafka_producer_handle(w->producer);
    char why[512];
    kafka_txn_rc_t rc = w->txn_open ? KAFKA_TXN_OK : kafka_txn_begin(ph, why, sizeof why);
    if (rc == KAFKA_TXN_OK) {
        w->txn_open = true;
        rc = kafka_txn_pair_commit(w->txn, ph, kafka_consumer_handle(w->consumer), offs, why,
                                   sizeof why);
    }
    if (rc == KAFKA_TXN_OK && w->txn_failed) /* librdkafka committed despite a failed record */
        log_error("aggregation %s: transaction committed after a record failed", w->cfg.nf_type);
    if (rc == KAFKA_TXN_OK) {
        w->txn_open = false;
        w->txn_commits++;
        for (int i = 0; i < offs->cnt; i++) {
            agg_part_t *p = partitions_user(w->ledger, offs->elems[i].partition);
            if (p && partitions_assigned(w->ledger, offs->elems[i].partition)) {
                p->from = offs->elems[i].offset + 1;
                p->seq_from = p->seq - p->fifo_main;
            }
        }
    } else {
        agg_txn_recover(w, rc, why);
    }
    rd_kafka_topic_partition_list_destroy(offs);
}

/* Whether the pair can work: after a fatal error it is made again (kafka_pair_rebuild) and its
 * transactions initialised, retried every second while the cluster does not answer. */
static bool agg_txn_ready(agg_worker_t *w)
{
    if (!w->txn_rebuild && !w->txn_init)
        return true;
    int64_t now = mono_now_ms();
    if (now < w->txn_retry_ms)
        return false;
    w->txn_retry_ms = now + 1000;
    char why[512];
    if (w->txn_rebuild) {
        w->txn_open = false;
        if (kafka_txn_pair_rebuild(w->txn, w->producer, w->consumer))
            return false;
        agg_slot_t *s;
        while ((s = agg_fifo_pop(w)))
            agg_slot_put(w, s);
        w->txn_rebuild = false;
        w->txn_init = true;
    }
    if (kafka_txn_init(kafka_producer_handle(w->producer), KAFKA_TXN_INIT_MS, NULL, why,
                       sizeof why) != KAFKA_TXN_OK) {
        char fe[256];
        w->txn_rebuild = kafka_producer_fatal_error(w->producer, fe, sizeof fe) != 0;
        log_warn("aggregation %s: %s (transactional.id %s); retried", w->cfg.nf_type, why,
                 w->txn_id);
        return false;
    }
    w->txn_init = false;
    w->txn_due_ms = mono_now_ms() + w->cfg.transaction_ms;
    return true;
}

/* Every transaction_ms the open transaction is committed; a failed record aborts it at once. */
static void agg_txn_tick(agg_worker_t *w)
{
    int64_t now = mono_now_ms();
    if (!w->txn_failed && now < w->txn_due_ms)
        return;
    agg_txn_commit(w);
    w->txn_due_ms = now + w->cfg.transaction_ms;
}

/* The consumer was rebuilt after a fatal error (kafka.h): the wake-up pipe follows its handle. */
static void agg_on_consumer_rebuild(void *owner, kafka_consumer_t *c, kafka_rebuild_phase_t phase)
{
    agg_worker_t *w = owner;
    if (phase == KAFKA_REBUILD_BEFORE)
        kafka_wake_unwatch(&w->wake, kafka_consumer_handle(c));
    else
        kafka_wake_watch(&w->wake, kafka_consumer_handle(c), true);
}

/* ---- rebalance ---- */

static void agg_drop_partition_fifo(agg_worker_t *w, int32_t partition)
{
    agg_slot_t *keep_head = NULL, *keep_tail = NULL;
    uint32_t kept = 0;
    agg_slot_t *s;
    while ((s = agg_fifo_pop(w))) {
        if (s->partition == partition) {
            agg_slot_put(w, s);
            continue;
        }
        s->next = NULL;
        if (keep_tail)
            keep_tail->next = s;
        else
            keep_head = s;
        keep_tail = s;
        kept++;
    }
    w->fifo_head = keep_head;
    w->fifo_tail = keep_tail;
    w->fifo_len = kept;
}

static void agg_on_rebalance(void *owner, kafka_rebalance_kind_t kind,
                             const rd_kafka_topic_partition_list_t *parts)
{
    agg_worker_t *w = owner;
    if (w->eos && kind != KAFKA_REBALANCE_ASSIGNED && w->txn_open) {
        /* What is produced goes to the next owner with its offsets, or (lost: the group
         * moved on; or the commit failed) is aborted and read again by the next owner. */
        if (kind == KAFKA_REBALANCE_REVOKED)
            agg_txn_commit(w);
        else
            agg_txn_recover(w, KAFKA_TXN_ABORT, "partitions lost");
    } else if (!w->eos && kind == KAFKA_REBALANCE_REVOKED && w->producer) {
        /* Last chance to hand finished work to the next owner: give what librdkafka already
         * holds a short time to be acknowledged (each one left pending now would be written
         * again by the next owner: a duplicate), store, and let the commit that follows
         * carry it. Records not yet handed to librdkafka are simply dropped below. */
        int left = kafka_producer_flush(w->producer, w->cfg.revoke_flush_ms);
        if (left)
            log_warn("aggregation %s: revoke: %d records still unacknowledged after %d ms; "
                     "the next owner will write them again",
                     w->cfg.nf_type, left, w->cfg.revoke_flush_ms);
        agg_store_offsets(w);
    }
    for (int i = 0; i < parts->cnt; i++) {
        if (strcmp(parts->elems[i].topic, w->in_topic) != 0)
            continue;
        int32_t pid = parts->elems[i].partition;
        if (kind != KAFKA_REBALANCE_ASSIGNED) {
            /* The pending work of the partition is forgotten: acknowledgements still to
             * come carry the old epoch and are dropped by the ledger. */
            partitions_revoke(w->ledger, pid);
            agg_drop_partition_fifo(w, pid);
            continue;
        }
        partitions_rc_t rc = partitions_assign(w->ledger, pid);
        if (rc == PARTITIONS_KEPT) {
            /* Already ours (a repeated assignment): librdkafka keeps fetching from where it
             * is, so the pending work stays valid. Resetting here would drop the tracking of
             * records in flight while later offsets get committed past them. */
            log_warn("aggregation %s: %s [%d] assigned again while already assigned; kept",
                     w->cfg.nf_type, w->in_topic, (int)pid);
        } else if (rc != PARTITIONS_OK) {
            log_error("aggregation %s: cannot track %s [%d]: %s", w->cfg.nf_type, w->in_topic,
                      (int)pid,
                      rc == PARTITIONS_RANGE ? "partition id above the limit" : "out of memory");
            w->fatal = true;
        }
    }
    metrics_gauge_set(w->m.assigned, (double)partitions_n_assigned(w->ledger));
}

/* ---- backpressure ---- */

#define AGG_PAUSE_AFTER_MS 200

/* How many records the next poll may take: none while the FIFO is blocked (producer queue or
 * an offset window full) or max_inflight records await acknowledgement. A stall longer than
 * AGG_PAUSE_AFTER_MS pauses the partitions (kafka_gate_t: librdkafka's prefetch is bounded by
 * queued.max.messages.kbytes meanwhile). */
static uint32_t agg_backpressure(agg_worker_t *w)
{
    uint32_t inflight = agg_inflight(w);
    uint32_t room = 0;
    if (w->fifo_len == 0 && inflight < w->cfg.max_inflight) {
        room = w->cfg.max_inflight - inflight;
        if (room > w->cfg.batch)
            room = w->cfg.batch;
    }
    metrics_gauge_set(w->m.inflight, inflight);
    if (worker_control_backpressure(&w->gate, w->consumer, room > 0, AGG_PAUSE_AFTER_MS,
                                    w->m.paused, w->m.pauses) == KAFKA_GATE_PAUSED) {
        if (w->gate.log_due)
            log_info("aggregation %s: paused (%u in flight, %u waiting to be produced; %" PRIu64
                     " pauses so far)",
                     w->cfg.nf_type, inflight - w->fifo_len, w->fifo_len, w->gate.pauses);
    }
    return room;
}

/* ---- life cycle ---- */

/* Exactly once: the transactional.id, stable for this instance (its static member id), so a
 * restart fences the instance it replaces and aborts what that one left open; its producer
 * properties into pdefs (room for KAFKA_TXN_N_PROPS). Returns how many. */
static size_t agg_txn_setup(agg_worker_t *w, kafka_prop_t *pdefs)
{
    const agg_config_t *cfg = &w->cfg;
    char inst[512];
    w->eos = cfg->exactly_once;
    if (!w->eos)
        return 0;
    const char *id = kafka_group_instance_id(inst, sizeof inst, cfg->instance, "ndd-aggregation",
                                             NULL, NULL, cfg->http_port);
    if (!id) {
        log_warn("aggregation %s: exactly-once without an instance name or a fixed HTTP port: "
                 "the transactional.id changes at each start (a transaction left open by a "
                 "crash then waits for its timeout)",
                 cfg->nf_type);
        snprintf(inst, sizeof inst, "pid%ld", (long)getpid());
    }
    kafka_txn_id(w->txn_id, sizeof w->txn_id, w->group, w->in_topic, inst);
    char who[128];
    snprintf(who, sizeof who, "aggregation %s", cfg->nf_type);
    kafka_txn_pair_opts_t to = {.txn_id = w->txn_id,
                                .group = w->group,
                                .topic = w->in_topic,
                                .who = who,
                                .call_ms = cfg->transaction_call_ms,
                                .metrics = cfg->metrics,
                                .metric_prefix = "ndd_aggregation",
                                .label = "nf_type",
                                .label_value = cfg->nf_type};
    if (!(w->txn = kafka_txn_pair_new(&to)))
        return (size_t)-1;
    w->txn_init = true;
    return kafka_txn_props(pdefs, w->txn_id);
}

/* The worker's consumer (subscribed) and producer, transactional with exactly-once. 0 or -1
 * (err filled). */
static int agg_pair_open(agg_worker_t *w, char *err, size_t errlen)
{
    /* The producer's queue holds at most the in-flight records (plus slack for DLQ retries),
     * so QUEUE_FULL means the byte bound was hit. Client settings that cut librdkafka's CPU
     * per record were measured and none was kept (docs/aggregation.md, "Client settings"):
     * batching, compression and socket buffers moved the figure less than the machine's
     * noise. */
    char qmax[32];
    snprintf(qmax, sizeof(qmax), "%u", w->n_slots + 1000);
    kafka_prop_t pdefs[1 + KAFKA_TXN_N_PROPS] = {{"queue.buffering.max.messages", qmax}};
    size_t npdefs = agg_txn_setup(w, pdefs + 1);
    if (npdefs == (size_t)-1) {
        snprintf(err, errlen, "aggregation %s: out of memory or metrics registration failed",
                 w->cfg.nf_type);
        return -1;
    }
    npdefs++;
    /* Memory: what librdkafka prefetches beyond the in-flight records is bounded small (a
     * few fetch responses); a held record keeps its fetch response alive, so big responses
     * would multiply the in-flight bytes. Both can be overridden with kafka.consumer.*. */
    /* Steady rates: the broker answers a fetch once 64 KiB (about 19 copies of 3.4 kB) are
     * there or 10 ms passed, instead of at the first record. At 1,000 copies/s that cut the
     * fetches and the wake-ups they cause in every thread, 9,900 -> 16,300 copies per
     * CPU-second in bench/aggregation/steady.sh (alternating runs); on a backlog fetches are
     * full anyway. It adds at most 10 ms below ~2,000 copies/s. */
    const kafka_prop_t cdefs[] = {{"statistics.interval.ms", "5000"},
                                  {"queued.max.messages.kbytes", "4096"},
                                  {"fetch.max.bytes", "4194304"},
                                  {"fetch.min.bytes", "65536"},
                                  {"fetch.wait.max.ms", "10"},
                                  /* exactly once: offsets go only into transactions */
                                  {"enable.auto.commit", "false"}};
    kafka_pair_opts_t ko = {.brokers = w->cfg.brokers,
                            .client_id = w->client_id,
                            .group_id = w->group,
                            .topic = w->in_topic,
                            .cooperative = w->cfg.cooperative,
                            .instance_id = kafka_group_instance_id(
                                w->member_id, sizeof(w->member_id), w->cfg.instance,
                                "ndd-aggregation", w->cfg.nf_type, w->in_topic, w->cfg.http_port),
                            .props = w->cfg.props,
                            .n_props = w->cfg.n_props,
                            .producer_defaults = pdefs,
                            .n_producer_defaults = npdefs,
                            .consumer_defaults = cdefs,
                            .n_consumer_defaults = sizeof(cdefs) / sizeof(cdefs[0]) - !w->eos,
                            .on_consumer_rebuild = agg_on_consumer_rebuild,
                            .on_delivery = agg_on_delivery,
                            .on_rebalance = agg_on_rebalance,
                            .on_consumer_stats = agg_on_stats,
                            .owner = w};
    if (kafka_pair_new(&ko, &w->producer, &w->consumer, err, errlen))
        return -1;
    if (kafka_wake_init(&w->wake) ||
        kafka_wake_watch(&w->wake, kafka_consumer_handle(w->consumer), true)) {
        snprintf(err, errlen, "aggregation: cannot make the wake-up pipe: %s", strerror(errno));
        return -1;
    }
    if (w->eos && w->cfg.transaction_ms <= 0) {
        snprintf(err, errlen, "aggregation %s: exactly-once needs transaction-ms > 0",
                 w->cfg.nf_type);
        return -1;
    }
    if (w->eos)
        (void)agg_txn_ready(w); /* init_transactions now; retried by the loop when it failed */
    log_info(
        "aggregation %s: consuming %s in group %s (%s%s), producing to %s (dead letters to "
        "%s), max in-flight %u, batch %u, %s%s",
        w->cfg.nf_type, w->in_topic, w->group, ko.instance_id ? "static member " : "dynamic member",
        ko.instance_id ? ko.instance_id : "", w->main_topic, w->dlq_topic, w->cfg.max_inflight,
        w->cfg.batch, w->eos ? "exactly once: transactions, transactional.id " : "at-least-once",
        w->eos ? w->txn_id : "");
    return 0;
}

agg_worker_t *agg_worker_new(const agg_config_t *cfg, char *err, size_t errlen)
{
    if (!cfg->brokers || !cfg->nf_type || !*cfg->nf_type) {
        snprintf(err, errlen, "aggregation: brokers and nf-type are required");
        return NULL;
    }
    agg_worker_t *w = calloc(1, sizeof(*w));
    if (!w) {
        snprintf(err, errlen, "aggregation: out of memory");
        return NULL;
    }
    w->wake.fd[0] = w->wake.fd[1] = -1; /* closed by agg_worker_free even before the pipe */
    w->cfg = *cfg;
    /* The values come filled from the settings (aggregation/main.c's spec table holds the
     * defaults, once): a zero here is a caller's mistake, not a request for a default. */
    if (!cfg->max_inflight || !cfg->batch || cfg->shutdown_timeout_ms <= 0 ||
        cfg->filter_check_ms <= 0 || cfg->revoke_flush_ms < 0 || !cfg->main_topic ||
        !cfg->dlq_topic) {
        snprintf(err, errlen,
                 "aggregation: max_inflight, batch, shutdown_timeout_ms, "
                 "filter_check_ms, main_topic and dlq_topic must be set");
        free(w);
        return NULL;
    }
    if (w->cfg.batch > w->cfg.max_inflight)
        w->cfg.batch = w->cfg.max_inflight;
    if (!w->cfg.metrics)
        w->cfg.metrics = metrics_default_registry();
    snprintf(w->in_topic, sizeof(w->in_topic), "%s", cfg->in_topic ? cfg->in_topic : cfg->nf_type);
    if (cfg->group)
        snprintf(w->group, sizeof(w->group), "%s", cfg->group);
    else
        snprintf(w->group, sizeof(w->group), "ndd-agg-%s", cfg->nf_type);
    snprintf(w->main_topic, sizeof(w->main_topic), "%s", cfg->main_topic);
    snprintf(w->dlq_topic, sizeof(w->dlq_topic), "%s", cfg->dlq_topic);
    if (cfg->client_id)
        snprintf(w->client_id, sizeof(w->client_id), "%s", cfg->client_id);
    else
        snprintf(w->client_id, sizeof(w->client_id), "ndd-aggregation-%s", cfg->nf_type);
    w->cfg.in_topic = w->in_topic;
    w->cfg.group = w->group;
    w->cfg.main_topic = w->main_topic;
    w->cfg.dlq_topic = w->dlq_topic;
    w->cfg.client_id = w->client_id;

    if (agg_metrics_init(w)) {
        snprintf(err, errlen, "aggregation: metrics registration failed");
        goto fail;
    }
    w->base = agg_counters(w);
    /* The slot pool is the in-flight bound: max_inflight records plus one batch of room. */
    w->n_slots = w->cfg.max_inflight + w->cfg.batch;
    w->slots = calloc(w->n_slots, sizeof(*w->slots));
    w->filter = cfg->filter_slot ? cfg->filter_slot : filter_slot_new(NULL);
    if (!w->slots || !w->filter) {
        snprintf(err, errlen, "aggregation: out of memory");
        goto fail;
    }
    for (uint32_t i = w->n_slots; i-- > 0;) {
        (void)buf_init(&w->slots[i].frame, 0, (size_t)UINT32_MAX); /* allocates nothing */
        w->slots[i].next = w->free_list;
        w->free_list = &w->slots[i];
    }
    w->n_free = w->n_slots;
    w->ledger = partitions_new(w->cfg.max_inflight, AGG_MAX_PARTITIONS, sizeof(agg_part_t));
    if (!w->ledger) {
        snprintf(err, errlen, "aggregation: out of memory");
        goto fail;
    }
    w->filter_file = (agg_filter_file_t){
        .path = w->cfg.filter_file,
        .nf_type = w->cfg.nf_type,
        .check_ms = w->cfg.filter_check_ms,
        .slot = w->filter,
        .reload_ok = w->m.reload_ok,
        .reload_err = w->m.reload_err,
    };
    if (agg_filter_file_load(&w->filter_file, mono_now_ms(), err, errlen))
        goto fail;

    if (agg_pair_open(w, err, errlen))
        goto fail;
    return w;
fail:
    agg_worker_free(w);
    return NULL;
}

/* librdkafka 2.0.2 stops fetching for up to a second once its prefetch queue was full
 * (kafka_consumer_kick). When full polls were coming and the queue then stays dry for
 * AGG_DRY_MS, the broker still has a backlog that librdkafka is not fetching: wake it. */
#define AGG_DRY_MS 3
/* Longest wait before the delivery reports of records in flight are served. Longer than the
 * consumer's fetch wait (10 ms): while copies keep coming, the next fetch's wake-up serves
 * them, and this only fires once the traffic pauses. At 10 ms it fired after most fetches at
 * 1,000 copies/s, one wake-up in two of the worker (3,090 -> 1,660 per 15,000 copies). */
#define AGG_DR_WAIT_MS 30
static void agg_kick_if_starved(agg_worker_t *w, size_t got, uint32_t room)
{
    if (got >= room) {
        w->backlog = true;
        w->dry_since_ms = 0;
        return;
    }
    if (got > 0 || !w->backlog)
        return;
    int64_t now = mono_now_ms();
    if (!w->dry_since_ms) {
        w->dry_since_ms = now;
        return;
    }
    if (now - w->dry_since_ms >= AGG_DRY_MS) {
        kafka_consumer_kick(w->consumer, 200);
        w->kicks++;
        w->backlog = false;
        w->dry_since_ms = 0;
    }
}

/* Each consumed message enters the FIFO with the epoch of its partition at that moment
 * (poll_each hands it over before a later rebalance callback can change the epoch). */
static void agg_on_message(void *owner, rd_kafka_message_t *m)
{
    agg_worker_t *w = owner;
    w->in_msgs++; /* added to the metrics once per poll (agg_poll_counts) */
    w->in_bytes += m->len;
    bool ours = partitions_assigned(w->ledger, m->partition);
    agg_slot_t *s = NULL;
    if (!ours || strcmp(rd_kafka_topic_name(m->rkt), w->in_topic) != 0 || !(s = agg_slot_get(w))) {
        /* Not ours (any more), or no room (the poll asks for at most the free slots, so only
         * a message librdkafka returns despite a pause lands here): its offset is not stored,
         * it is consumed again after a restart or rebalance. */
        if (ours && !s)
            log_warn("aggregation %s: no slot for %s [%d] offset %lld", w->cfg.nf_type, w->in_topic,
                     (int)m->partition, (long long)m->offset);
        if (ours && !s && w->eos)
            w->txn_failed = true; /* a later offset must not be committed past it: rewind */
        rd_kafka_message_destroy(m);
        return;
    }
    agg_part_t *p = w->eos ? partitions_user(w->ledger, m->partition) : NULL;
    if (p && !p->from)
        p->from = m->offset + 1; /* where an abort rewinds to before the first commit */
    s->src = m;
    s->partition = m->partition;
    s->offset = m->offset;
    s->epoch = partitions_epoch(w->ledger, m->partition);
    s->state = AGG_SLOT_NEW;
    agg_fifo_push(w, s);
}

/* The counts of one poll go into the metrics at once (one atomic add each, not per record). */
static void agg_poll_counts(agg_worker_t *w)
{
    if (w->dr_msgs) {
        metrics_counter_add(w->m.out_msgs, w->dr_msgs);
        metrics_counter_add(w->m.out_bytes, w->dr_bytes);
        w->dr_msgs = w->dr_bytes = 0;
    }
    if (w->in_msgs) {
        metrics_counter_add(w->m.in_msgs, w->in_msgs);
        metrics_counter_add(w->m.in_bytes, w->in_bytes);
        w->in_msgs = w->in_bytes = 0;
    }
    w->dr_now_ns = 0;
}

static void agg_producer_poll(agg_worker_t *w, int timeout_ms)
{
    kafka_producer_poll(w->producer, timeout_ms);
    agg_poll_counts(w);
}

static size_t agg_consumer_poll(agg_worker_t *w, size_t max)
{
    size_t got = kafka_consumer_poll_each(w->consumer, max, 0, agg_on_message, w);
    agg_poll_counts(w);
    return got;
}

int agg_worker_run(agg_worker_t *w, volatile sig_atomic_t *stop, volatile sig_atomic_t *reload)
{
    while (!*stop && !w->fatal) {
        if (w->cfg.on_tick)
            w->cfg.on_tick(w->cfg.tick_arg);
        kafka_wake_drain(&w->wake); /* before serving the queues: no wake-up is lost */
        if (w->eos && !agg_txn_ready(w)) {
            agg_producer_poll(w, 100);
            continue;
        }
        agg_producer_poll(w, 0);
        if (w->eos)
            agg_txn_tick(w);
        else
            agg_store_offsets(w);
        agg_filter_file_poll(&w->filter_file, mono_now_ms(), reload);
        agg_process_fifo(w);

        uint32_t room = agg_backpressure(w);
        if (room > 0) {
            size_t got = agg_consumer_poll(w, room);
            agg_kick_if_starved(w, got, room);
            agg_process_fifo(w);
            /* Nothing to take: sleep until a record arrives (not a 1 ms poll while records
             * are in flight: at moderate rates those wake-ups were most of the CPU). After a
             * backlog, short sleeps keep the starvation check timely. Delivery reports do not
             * wake the worker: they are served at the next record's wake-up or within
             * AGG_DR_WAIT_MS while records are in flight (one wake-up per produce request
             * was half of the worker's wake-ups at 1,000 copies/s); offsets are committed
             * once a second anyway, and a full window waits in the producer poll below. */
            if (got == 0)
                kafka_wake_wait(&w->wake, w->backlog                      ? AGG_DRY_MS
                                          : agg_inflight(w) > w->fifo_len ? AGG_DR_WAIT_MS
                                                                          : 100);
            continue;
        }
        /* Stalled: wait for acknowledgements. While paused the consumer is still polled for
         * rebalances; a record it returns anyway takes one of the batch's spare slots. */
        agg_producer_poll(w, 10);
        if (w->gate.paused && w->n_free > 0)
            agg_consumer_poll(w, w->n_free);
    }

    /* Drain: nothing new is taken; what was handed to librdkafka gets up to the shutdown
     * timeout to be acknowledged, and exactly the acknowledged records are committed. */
    int rc = w->fatal ? -1 : 0;
    log_info("aggregation %s: stopping (%u in flight, %u waiting)", w->cfg.nf_type,
             agg_inflight(w) - w->fifo_len, w->fifo_len);
    kafka_consumer_pause_all(w->consumer);
    if (w->eos && !w->txn_rebuild && !w->txn_init)
        agg_txn_commit(w); /* what is produced, with its offsets; the rest is read again */
    agg_slot_t *s;
    while ((s = agg_fifo_pop(w)))
        agg_slot_put(w, s);
    int left = kafka_producer_flush(w->producer, w->cfg.shutdown_timeout_ms);
    agg_poll_counts(w);
    if (left)
        log_warn("aggregation %s: %d records not acknowledged within %d ms; their offsets are "
                 "not committed (they will be consumed again)",
                 w->cfg.nf_type, left, w->cfg.shutdown_timeout_ms);
    if (!w->eos)
        agg_store_offsets(w);
    kafka_wake_close(&w->wake);
    kafka_txn_pair_free(w->txn, w->producer);
    w->txn = NULL;
    kafka_pair_close(&w->producer, &w->consumer, 0); /* commits the stored offsets */
    agg_stats_t st = agg_worker_stats(w);
    log_info("aggregation %s: stopped: consumed %" PRIu64 ", produced %" PRIu64
             ", filtered %" PRIu64 ", dead-lettered %" PRIu64,
             w->cfg.nf_type, st.consumed, st.produced, st.filtered, st.dead_lettered);
    return rc;
}

bool agg_worker_exactly_once(const agg_worker_t *w, int *transaction_ms)
{
    if (transaction_ms)
        *transaction_ms = w->eos ? w->cfg.transaction_ms : 0;
    return w->eos;
}

agg_stats_t agg_worker_stats(const agg_worker_t *w)
{
    agg_stats_t s = agg_counters(w);
    /* every member up to inflight is a total */
    _Static_assert(sizeof(agg_stats_t) == 10 * sizeof(uint64_t), "agg_stats_t: uint64_t only");
    worker_stats_since((uint64_t *)(void *)&s, (const uint64_t *)(const void *)&w->base,
                       WORKER_STATS_COUNTERS(agg_stats_t, inflight));
    s.inflight = agg_inflight(w);
    return s;
}

void agg_worker_free(agg_worker_t *w)
{
    if (!w)
        return;
    kafka_wake_close(&w->wake);
    kafka_txn_pair_free(w->txn, w->producer);
    kafka_pair_close(&w->producer, &w->consumer, w->cfg.shutdown_timeout_ms);
    for (uint32_t i = 0; w->slots && i < w->n_slots; i++) {
        if (w->slots[i].src)
            rd_kafka_message_destroy(w->slots[i].src);
        if (w->slots[i].hdrs)
            rd_kafka_headers_destroy(w->slots[i].hdrs);
        buf_free(&w->slots[i].frame);
    }
    free(w->slots);
    partitions_free(w->ledger);
    if (w->filter != w->cfg.filter_slot)
        filter_slot_free(w->filter);
    free(w);
}

int agg_worker_assigned(void *w)
{
    return kafka_consumer_assignment_size(((agg_worker_t *)w)->consumer);
}
