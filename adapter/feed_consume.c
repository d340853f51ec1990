/* The Kafka side of a feed: the partition ledger (partitions.h), rebalances, polling and
 * taking records (egress filter, encoding into the batch being filled), giving records back
 * when the feed is full, restarting idle fetches, flow control and consumer lag. */
#include "feed-int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "log.h"

/* ---- partitions and offsets ---- */

/* A message is finished (acked, dead-lettered or abandoned at shutdown). Its ack goes into the
 * ledger; the caller stores the offsets once for the whole delivery (feed_delivery_release):
 * a store is a librdkafka list and a partition lookup under its lock, worth doing per batch. */
void feed_msg_finish(feed_t *f, feed_msg_t *m, bool done)
{
    /* An ack of a partition revoked or re-assigned since is dropped by the ledger (stale):
     * the partition's owner reads the record again from the committed offset. */
    if (done && !f->closing)
        (void)partitions_ack(f->ledger, m->partition, m->epoch, m->ticket);
    if (m->rkm)
        rd_kafka_message_destroy(m->rkm);
    m->rkm = NULL;
}

void feed_store_cb(evutil_socket_t fd, short what, void *arg)
{
    feed_t *f = arg;
    f->store_due = false;
    if (!f->closing && !f->txn_owned) /* exactly once: the transactions carry the offsets */
        partitions_store(f->ledger, f->kc, f->cfg->source_topic);
}

/* Flow control. When the feed holds max_pending messages it first just stops polling: the
 * messages wait in librdkafka's bounded prefetch queue, and polling resumes at half without
 * any refetch. Only when that lasts FEED_PAUSE_AFTER_MS (every endpoint full or down for a
 * while) are the partitions paused, so the loop can keep polling for rebalances and group
 * liveness without receiving messages. (Pausing at every short congestion would cost a
 * refetch and a fetch.wait.max.ms stall per cycle: pause drops the prefetched messages.) */
void feed_update_pause(feed_t *f)
{
    if (f->closing)
        return;
    bool full = f->pending >= f->cfg->delivery.max_pending ||
                f->held_bytes + f->buf_inuse >= f->held_bytes_max || f->free_list == NULL;
    uint64_t now =
        full || f->full_since ? (uint64_t)mono_now_ms() : 0; /* called per ack: no clock if idle */
    if (full && !f->full_since) {
        f->full_since = now;
    } else if (!full && f->full_since && f->pending <= f->cfg->delivery.max_pending / 2 &&
               f->held_bytes + f->buf_inuse <= f->held_bytes_max / 2) {
        f->full_since = 0;
        event_active(f->poll_ev, 0, 0);
    }
    bool want = f->stopping || (f->full_since && now - f->full_since >= FEED_PAUSE_AFTER_MS);
    if (want && !f->paused) {
        kafka_consumer_pause_all(f->kc);
        f->paused = true;
        log_debug("feed %s: partitions paused (%" PRIu64 " pending%s)", f->cfg->name, f->pending,
                  f->wait_head ? ", endpoints full or down" : "");
    } else if (!want && f->paused) {
        kafka_consumer_resume_all(f->kc);
        f->paused = false;
        log_debug("feed %s: partitions resumed", f->cfg->name);
        event_active(f->poll_ev, 0, 0);
    }
    atomic_store_explicit(&f->s_paused, f->paused, memory_order_relaxed);
    metrics_gauge_set(f->m_pending, (double)f->pending);
    atomic_store_explicit(&f->s_pending, f->pending, memory_order_relaxed);
}

/* ---- consuming ---- */

void feed_on_rebalance(void *owner, kafka_rebalance_kind_t kind,
                       const rd_kafka_topic_partition_list_t *parts)
{
    feed_t *f = owner;
    if (kind != KAFKA_REBALANCE_ASSIGNED && f->txn_owned && !f->closing && f->src.revoked &&
        f->src.transport) {
        /* before the partitions go: their open transaction must not commit later */
        f->in_revoke = true;
        f->src.revoked(f->src.transport);
        f->in_revoke = false;
    }
    for (int i = 0; i < parts->cnt; i++) {
        const rd_kafka_topic_partition_t *tp = &parts->elems[i];
        if (strcmp(tp->topic, f->cfg->source_topic))
            continue;
        if (kind != KAFKA_REBALANCE_ASSIGNED) {
            partitions_revoke(f->ledger, tp->partition);
            continue;
        }
        /* A partition already ours keeps its pending records (librdkafka fetches on from
         * where it is); a new one starts a new epoch with no rewind outstanding. */
        partitions_rc_t rc = partitions_assign(f->ledger, tp->partition);
        if (rc == PARTITIONS_KEPT)
            log_warn("feed %s: %s/%" PRId32 " assigned again while already assigned; kept",
                     f->cfg->name, tp->topic, tp->partition);
        else if (rc != PARTITIONS_OK)
            log_error("feed %s: cannot track partition %s/%" PRId32 ": %s", f->cfg->name, tp->topic,
                      tp->partition,
                      rc == PARTITIONS_RANGE ? "partition id above the limit" : "out of memory");
    }
    metrics_gauge_set(f->m_assigned, (double)partitions_n_assigned(f->ledger));
    log_info("feed %s: %d partition(s) of %s %s", f->cfg->name, parts->cnt, f->cfg->source_topic,
             kind == KAFKA_REBALANCE_ASSIGNED  ? "assigned"
             : kind == KAFKA_REBALANCE_REVOKED ? "revoked (pending acks dropped)"
                                               : "lost (pending acks dropped)");
    if (kind == KAFKA_REBALANCE_ASSIGNED && f->paused)
        f->repause = true;
}

/* ---- exactly once (the kafka transport's transport_source_t) ---- */

static rd_kafka_t *feed_src_consumer(void *ctx)
{
    return kafka_consumer_handle(((feed_t *)ctx)->kc);
}

/* The ledger's low-water mark of every assigned partition: every record below it is done
 * (acked: produced in this or an earlier transaction; filtered; dead-lettered). */
static rd_kafka_topic_partition_list_t *feed_src_offsets(void *ctx)
{
    feed_t *f = ctx;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);
    for (int32_t p = partitions_next_assigned(f->ledger, -1); p >= 0;
         p = partitions_next_assigned(f->ledger, p)) {
        int64_t lw = partitions_low_water(f->ledger, p);
        if (lw >= 0)
            rd_kafka_topic_partition_list_add(l, f->cfg->source_topic, p)->offset = lw;
    }
    return l;
}

/* What was produced since the last commit is void: every delivery held is dropped (not
 * committable; a delivery being dead-lettered finishes, its ack is stale), each assigned
 * partition starts a new epoch and is sought back to its committed offset, so its records
 * are taken and produced again, once, in a later transaction. Inside a revoke the partitions
 * are going: their next owner reads from the committed offsets, no seek. */
static void feed_src_rewind(void *ctx, const char *reason)
{
    feed_t *f = ctx;
    if (f->closing)
        return;
    if (f->filling) {
        evtimer_del(&f->filling->timer);
        f->filling = NULL;
    }
    f->wait_head = f->wait_tail = NULL;
    size_t dropped = 0;
    for (size_t i = 0; i < f->n_pool; i++) {
        feed_delivery_t *d = &f->pool[i];
        if (d->state == D_FREE || d->state == D_DLQ)
            continue;
        dropped += d->n;
        feed_delivery_release(f, d, false);
    }
    rd_kafka_t *rk = kafka_consumer_handle(f->kc);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);
    for (int32_t p = partitions_next_assigned(f->ledger, -1); p >= 0;
         p = partitions_next_assigned(f->ledger, p))
        rd_kafka_topic_partition_list_add(l, f->cfg->source_topic, p);
    if (!f->in_revoke && l->cnt > 0) {
        rd_kafka_resp_err_t e = rd_kafka_committed(rk, l, 5000);
        for (int i = 0; i < l->cnt; i++) {
            rd_kafka_topic_partition_t *tp = &l->elems[i];
            (void)partitions_revoke(f->ledger, tp->partition);
            (void)partitions_assign(f->ledger, tp->partition); /* a new epoch: acks stale */
            if (e || tp->err || tp->offset < 0)
                tp->offset = RD_KAFKA_OFFSET_BEGINNING; /* none committed: as auto.offset.reset */
        }
        rd_kafka_error_t *se = rd_kafka_seek_partitions(rk, l, 0);
        if (se) {
            log_error("feed %s: cannot rewind %s to its committed offsets: %s", f->cfg->name,
                      f->cfg->source_topic, rd_kafka_error_string(se));
            rd_kafka_error_destroy(se);
        }
    }
    rd_kafka_topic_partition_list_destroy(l);
    metrics_counter_add(f->m_rewound, dropped);
    if (f->in_revoke)
        log_info("feed %s: %zu record(s) held dropped (their next owner reads them): %s",
                 f->cfg->name, dropped, reason);
    else
        log_warn("feed %s: rewound to the committed offsets (%zu record(s) held dropped): %s",
                 f->cfg->name, dropped, reason);
    feed_update_pause(f);
    event_active(f->poll_ev, 0, 0);
}

static void feed_src_mode(void *ctx, bool exactly_once)
{
    feed_t *f = ctx;
    f->txn_owned = exactly_once;
    atomic_store_explicit(&f->s_kafka_mode, exactly_once ? 1 : 0, memory_order_relaxed);
    if (!exactly_once && !f->store_due) { /* at-least-once: the feed stores its offsets */
        f->store_due = true;
        event_active(f->store_ev, 0, 0);
    }
}

void feed_source_init(feed_t *f)
{
    f->src = (transport_source_t){.ctx = f,
                                  .txn_id = f->txn_id,
                                  .consumer = feed_src_consumer,
                                  .offsets = feed_src_offsets,
                                  .rewind = feed_src_rewind,
                                  .mode = feed_src_mode};
    f->txn_owned = true; /* until the transport says which mode is in effect */
}

/* Gives back a message we cannot hold: rewinds its partition so it is fetched again. The seek
 * is asynchronous (timeout 0): it bumps the partition's fetch version at once, so nothing
 * fetched before it is returned by a later poll, and the loop never blocks on the broker
 * thread (a blocking seek timed out under load and left the partition where it was). */
static void feed_rewind(feed_t *f, feed_part_t *fp, rd_kafka_message_t *rkm)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, rd_kafka_topic_name(rkm->rkt), rkm->partition)->offset =
        rkm->offset;
    rd_kafka_error_t *e = rd_kafka_seek_partitions(kafka_consumer_handle(f->kc), l, 0);
    if (e) {
        log_error("feed %s: cannot rewind %s/%" PRId32 " to %" PRId64 ": %s", f->cfg->name,
                  rd_kafka_topic_name(rkm->rkt), rkm->partition, rkm->offset,
                  rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
        fp->rewinding = false; /* no seek: dropping what follows would stall the partition */
    } else {
        fp->rewinding = true;
        fp->rewound = rkm->offset;
        metrics_counter_inc(f->m_rewound);
    }
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_message_destroy(rkm);
}

/* Once a record is encoded, the header list librdkafka parsed for the codec (a malloc per
 * header, ~20 per copy) is dead weight until the ack: freed now, in the order it was made,
 * the next record's parse reuses the same chunks from malloc's per-thread cache instead of
 * going through the arenas (measured with callgrind: -19 % instructions per TCP copy), and
 * the held memory per record shrinks. librdkafka keeps the raw header bytes: a later
 * rd_kafka_message_headers (the dead-letter path) parses them again. */
static void feed_drop_parsed_headers(rd_kafka_message_t *rkm)
{
    rd_kafka_headers_t *h = NULL;
    if (rd_kafka_message_detach_headers(rkm, &h) == RD_KAFKA_RESP_ERR_NO_ERROR && h)
        rd_kafka_headers_destroy(h);
}

/* A record is taken only while its partition is still ours, when it is not behind an
 * outstanding rewind and not taken already; one that is not is destroyed here (NULL). */
static feed_part_t *feed_take_admit(feed_t *f, rd_kafka_message_t *rkm)
{
    int32_t part = rkm->partition;
    feed_part_t *fp =
        partitions_assigned(f->ledger, part) ? partitions_user(f->ledger, part) : NULL;
    if (!fp) {
        rd_kafka_message_destroy(rkm);
        return NULL;
    }
    if (fp->rewinding) {
        if (rkm->offset > fp->rewound) {
            /* Behind an outstanding rewind: fetched again after the seek. */
            rd_kafka_message_destroy(rkm);
            return NULL;
        }
        fp->rewinding = false; /* the rewound record is back (or an earlier position was sought) */
    }
    if (rkm->offset <= partitions_last_taken(f->ledger, part)) {
        /* Already taken (held or done): a refetch after a seek to a position behind it. Taking
         * it again is impossible (the tracker wants increasing offsets) and rewinding to it
         * would loop forever; the held copy is the one delivered. */
        log_debug("feed %s: skipping %s/%" PRId32 "/%" PRId64 ", already taken", f->cfg->name,
                  f->cfg->source_topic, rkm->partition, rkm->offset);
        rd_kafka_message_destroy(rkm);
        return NULL;
    }
    return fp;
}

static codec_reason_t feed_take_decode(feed_t *f, rd_kafka_message_t *rkm, codec_msg_t *m,
                                       codec_error_t *cerr)
{
    if (!f->cfg->encoding->raw)
        return codec_decode_main_limited(m, rkm, NULL, cerr);
    /* Not a message copy (xDRs, VES / HV-VES events): the key and the value are handed on; a
     * filter sees the record's headers and a JSON value's top-level members. */
    if (f->filter) {
        codec_fields_raw(m, rkm);
    } else {
        memset(m, 0, sizeof *m);
        m->key = (codec_slice_t){rkm->key, rkm->key_len};
        m->body = (codec_slice_t){rkm->payload ? rkm->payload : "", rkm->len};
    }
    return CODEC_OK;
}

/* A record the egress filter drops is done at once (skipped in the ledger, so the offsets
 * after it can be committed); true when it was dropped and destroyed. */
static bool feed_take_filter(feed_t *f, rd_kafka_message_t *rkm, const codec_msg_t *m)
{
    int rule;
    if (filter_eval(f->filter, m, &rule) != FILTER_DROP)
        return false;
    partitions_skip(f->ledger, rkm->partition, rkm->offset);
    if (!f->txn_owned)
        partitions_store(f->ledger, f->kc, f->cfg->source_topic);
    metrics_counter_inc(f->m_filtered);
    rd_kafka_message_destroy(rkm);
    return true;
}

/* Tracks the record in the ledger; when the feed is full or the ledger refuses it, gives it
 * back (rewinds its partition, which destroys it) and returns false. */
static bool feed_take_track(feed_t *f, feed_part_t *fp, rd_kafka_message_t *rkm, uint64_t *ticket)
{
    if (f->pending >= f->hard_max || !f->free_list) {
        feed_rewind(f, fp, rkm);
        f->repause = true;
        return false;
    }
    partitions_rc_t trc = partitions_track(f->ledger, rkm->partition, rkm->offset, ticket);
    if (trc != PARTITIONS_OK) {
        log_warn("feed %s: partition ledger refused %s/%" PRId32 "/%" PRId64 " (%d); rewinding",
                 f->cfg->name, f->cfg->source_topic, rkm->partition, rkm->offset, (int)trc);
        feed_rewind(f, fp, rkm);
        f->repause = true;
        return false;
    }
    return true;
}

/* MAIN holds validated copies; anything else is still never dropped silently. */
static void feed_take_undecodable(feed_t *f, feed_msg_t fm, codec_reason_t cr,
                                  const codec_error_t *cerr)
{
    feed_delivery_t *d = feed_delivery_alloc(f);
    fm.d = d;
    d->msgs[d->n++] = fm;
    char why[300];
    snprintf(why, sizeof why, "undecodable copy: %s: %s (%s)", codec_reason_name(cr), cerr->field,
             cerr->detail);
    feed_dead_letter(f, d, 0, why, NULL, NULL, 0);
}

/* The delivery records are encoded into until it is full or its batch_ms runs out; NULL when
 * none is free. */
static feed_delivery_t *feed_take_open_batch(feed_t *f)
{
    feed_delivery_t *d = feed_delivery_alloc(f);
    if (!d)
        return NULL;
    /* A buffer freed at release (the idle pool is small) would otherwise grow from 256 bytes by
     * doubling, realloc copying it each time (measured: 1,600 instructions per TCP copy in
     * memcpy); sized once like the last batch instead. */
    if (f->batch_hint > d->buf.cap)
        (void)buf_reserve(&d->buf, f->batch_hint); /* on failure the encoder reports */
    f->cfg->encoding->begin_batch(&d->batch, &d->buf, f->cfg->delivery.batch_max);
    f->filling = d;
    if (f->cfg->delivery.batch_max > 1 && f->cfg->delivery.batch_ms > 0) {
        uint32_t bm = f->cfg->delivery.batch_ms;
        struct timeval tv = {bm / 1000, (bm % 1000) * 1000};
        evtimer_add(&d->timer, &tv);
    }
    return d;
}

/* Refused by the encoding, or too big for an empty request: it can never be sent, so it is
 * dead-lettered alone (the records batched before it are sent without it). */
static void feed_take_refuse(feed_t *f, feed_delivery_t *d, feed_msg_t fm, encoding_result_t r)
{
    const char *why = r == ENCODING_REFUSED && d->batch.refused
                          ? d->batch.refused
                          : "message too big for one request (delivery.max_request_bytes)";
    if (d->n == 0) {
        f->filling = NULL;
        evtimer_del(&d->timer);
    } else {
        feed_close_filling(f);
        d = feed_delivery_alloc(f);
    }
    fm.d = d;
    d->msgs[0] = fm;
    d->n = 1;
    feed_dead_letter(f, d, 0, why, NULL, NULL, 0);
}

/* A record that does not fit in the batch being filled closes it and goes into a new one. */
static void feed_take_encode(feed_t *f, rd_kafka_message_t *rkm, const codec_msg_t *m,
                             feed_msg_t fm)
{
    const encoding_t *enc = f->cfg->encoding;
    for (int attempt = 0; attempt < 2; attempt++) {
        feed_delivery_t *d = f->filling ? f->filling : feed_take_open_batch(f);
        if (!d)
            break; /* feed_take_track saw a free delivery; unreachable */
        encoding_result_t r = enc->add(&d->batch, m);
        if (r == ENCODING_OK) {
            if (!m->framed)
                feed_drop_parsed_headers(rkm);
            fm.d = d;
            d->msgs[d->n++] = fm;
            if (d->n >= f->cfg->delivery.batch_max)
                feed_close_filling(f);
            return;
        }
        if (r == ENCODING_FULL && d->n > 0) {
            feed_close_filling(f);
            continue;
        }
        feed_take_refuse(f, d, fm, r);
        return;
    }
}

static void feed_take(feed_t *f, rd_kafka_message_t *rkm)
{
    feed_part_t *fp = feed_take_admit(f, rkm);
    if (!fp)
        return;
    metrics_counter_inc(f->m_consumed);
    codec_msg_t m;
    codec_error_t cerr;
    codec_reason_t cr = feed_take_decode(f, rkm, &m, &cerr);
    if (cr == CODEC_OK && f->filter && feed_take_filter(f, rkm, &m))
        return;
    uint64_t ticket;
    if (!feed_take_track(f, fp, rkm, &ticket))
        return;
    f->pending++;
    f->held_bytes += rkm->len;
    feed_msg_t fm = {.rkm = rkm,
                     .partition = rkm->partition,
                     .epoch = partitions_epoch(f->ledger, rkm->partition),
                     .ticket = ticket,
                     .ts_us = cr == CODEC_OK ? m.timestamp_us : 0};
    if (cr != CODEC_OK)
        feed_take_undecodable(f, fm, cr, &cerr);
    else
        feed_take_encode(f, rkm, &m, fm);
}

/* librdkafka 2.0 stops fetching a partition whose prefetch queue is full and looks at it
 * again only when its broker thread wakes up: on network or op activity, else after up to a
 * second. Catching up a backlog with a small prefetch would run in bursts of one queue per
 * second. So when the feed finds the queue empty while the cached high watermark says there
 * is more, it seeks (asynchronously) the partitions to their current positions: the seek op
 * wakes the broker thread, which fetches again. Nothing is skipped (the position is the next
 * record the feed has not taken; anything fetched meanwhile is dropped by the seek's version
 * and fetched again), and the delay doubles while kicks bring nothing, so a slow broker is
 * never flooded with restarted fetches.
 * The cached high watermark is only as new as the last fetch response: when that response
 * held everything up to the end of the log and filled the queue, later records are unknown
 * and the watermark says "nothing more" while the fetcher sleeps (seen as a ~1 s stall of a
 * steady 3,000 copies/s feed after a burst). So after a run of about a queue's worth of
 * records (kick_any), the kick restarts every assigned partition regardless. */
void feed_kick_cb(evutil_socket_t fd, short what, void *arg)
{
    feed_t *f = arg;
    if (f->stopping || f->closing || f->paused || f->full_since ||
        metrics_counter_get(f->m_consumed) != f->kick_consumed)
        return;
    rd_kafka_t *rk = kafka_consumer_handle(f->kc);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);
    for (int32_t p = partitions_next_assigned(f->ledger, -1); p >= 0;
         p = partitions_next_assigned(f->ledger, p))
        rd_kafka_topic_partition_list_add(l, f->cfg->source_topic, p);
    rd_kafka_topic_partition_list_t *seek = rd_kafka_topic_partition_list_new(8);
    if (l->cnt > 0 && rd_kafka_position(rk, l) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        for (int i = 0; i < l->cnt; i++) {
            int64_t lo, hi;
            if (l->elems[i].offset < 0)
                continue;
            if (!f->kick_any &&
                (rd_kafka_get_watermark_offsets(rk, f->cfg->source_topic, l->elems[i].partition,
                                                &lo, &hi) != RD_KAFKA_RESP_ERR_NO_ERROR ||
                 hi <= l->elems[i].offset))
                continue;
            rd_kafka_topic_partition_list_add(seek, f->cfg->source_topic, l->elems[i].partition)
                ->offset = l->elems[i].offset;
        }
    }
    if (seek->cnt > 0) {
        rd_kafka_error_t *e = rd_kafka_seek_partitions(rk, seek, 0); /* 0: asynchronous */
        if (e) {
            log_warn("feed %s: cannot restart the fetch of %s: %s", f->cfg->name,
                     f->cfg->source_topic, rd_kafka_error_string(e));
            rd_kafka_error_destroy(e);
        }
        f->kick_ms = f->kick_ms * 2 > FEED_KICK_MAX_MS ? FEED_KICK_MAX_MS : f->kick_ms * 2;
        metrics_counter_inc(f->m_fetch_restarts);
    }
    f->kick_any = false;
    rd_kafka_topic_partition_list_destroy(seek);
    rd_kafka_topic_partition_list_destroy(l);
}

static void feed_arm_kick(feed_t *f)
{
    if (f->paused || f->full_since || partitions_n_assigned(f->ledger) == 0 ||
        evtimer_pending(f->kick_ev, NULL))
        return;
    f->kick_consumed = metrics_counter_get(f->m_consumed);
    /* After a queue's worth the fetcher has most likely stopped at the bound: restart it at
     * once (each millisecond waited is a millisecond of the feed's throughput lost). */
    uint32_t ms = f->kick_any ? 0 : f->kick_ms;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(f->kick_ev, &tv);
}

void feed_poll(feed_t *f)
{
    if (f->stopping || f->closing)
        return;
    if (f->full_since && !f->paused) {
        feed_update_pause(f); /* full: leave messages in librdkafka's queue for now */
        return;
    }
    size_t budget = FEED_POLL_BUDGET;
    rd_kafka_message_t *msgs[FEED_POLL_CHUNK];
    while (budget > 0) {
        size_t room = f->hard_max > f->pending ? (size_t)(f->hard_max - f->pending) : 0;
        size_t want = room < FEED_POLL_CHUNK ? room : FEED_POLL_CHUNK;
        if (want == 0) {
            /* Still serve rebalances and group heartbeats: nothing is fetched while paused. */
            want = 1;
        }
        size_t n = kafka_consumer_poll_batch(f->kc, msgs, want, 0);
        if (f->repause) {
            f->repause = false;
            kafka_consumer_pause_all(f->kc);
            f->paused = true;
        }
        if (n == 0) {
            if (budget == FEED_POLL_BUDGET) {
                /* Half a queue's worth: at the bound the fetcher stopped before the run ended. */
                if (f->run_bytes * 2 >= f->prefetch_bytes || f->run_msgs * 2 >= f->prefetch_msgs)
                    f->kick_any = true;
                f->run_bytes = f->run_msgs = 0;
                feed_arm_kick(f);
            }
            break;
        }
        f->kick_ms = FEED_KICK_MIN_MS;
        f->run_msgs += n;
        for (size_t i = 0; i < n; i++) {
            f->run_bytes += msgs[i]->len + msgs[i]->key_len;
            feed_take(f, msgs[i]);
        }
        budget -= n < budget ? n : budget;
        if (f->pending >= f->cfg->delivery.max_pending ||
            f->held_bytes + f->buf_inuse >= f->held_bytes_max)
            break;
    }
    if (f->filling && (f->cfg->delivery.batch_max == 1 || f->cfg->delivery.batch_ms == 0))
        feed_close_filling(f);
    feed_update_pause(f);
    if (budget == 0)
        event_active(f->poll_ev, 0, 0); /* more may be queued: the io event fires on edges */
}

void feed_poll_cb(evutil_socket_t fd, short what, void *arg)
{
    feed_poll(arg);
}

/* A paused feed fetches nothing, so librdkafka's cached high watermarks stop moving while
 * the source topic grows: the lag of a stalled feed (the case it matters most) would look
 * flat. Then each partition's high watermark is asked of the broker, within this budget per
 * lag update (every 2 s; the feed thread waits on it, but a paused feed only waits for its
 * endpoints); partitions beyond the budget keep their cached figure until the next update. */
#define FEED_LAG_QUERY_BUDGET_MS 250

static int64_t feed_lag_high(feed_t *f, rd_kafka_t *rk, int32_t part, int64_t *lo,
                             uint64_t deadline)
{
    int64_t hi = -1;
    uint64_t now = f->paused ? (uint64_t)mono_now_ms() : deadline;
    if (now < deadline &&
        rd_kafka_query_watermark_offsets(rk, f->cfg->source_topic, part, lo, &hi,
                                         (int)(deadline - now)) == RD_KAFKA_RESP_ERR_NO_ERROR)
        return hi;
    if (rd_kafka_get_watermark_offsets(rk, f->cfg->source_topic, part, lo, &hi) !=
        RD_KAFKA_RESP_ERR_NO_ERROR)
        return -1;
    return hi;
}

/* Messages of the source topic not yet delivered: per assigned partition, its high watermark
 * less the next offset the feed would take (the one after the last it took, which a rewind
 * or a seek does not make unknown; librdkafka's position before the first), plus what the
 * feed holds. */
static double feed_lag(feed_t *f)
{
    rd_kafka_t *rk = kafka_consumer_handle(f->kc);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);
    for (int32_t p = partitions_next_assigned(f->ledger, -1); p >= 0;
         p = partitions_next_assigned(f->ledger, p))
        rd_kafka_topic_partition_list_add(l, f->cfg->source_topic, p);
    double lag = 0;
    uint64_t deadline = f->paused ? (uint64_t)mono_now_ms() + FEED_LAG_QUERY_BUDGET_MS : 0;
    if (l->cnt > 0 && rd_kafka_position(rk, l) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        for (int i = 0; i < l->cnt; i++) {
            int32_t part = l->elems[i].partition;
            int64_t lo = 0, hi = feed_lag_high(f, rk, part, &lo, deadline);
            if (hi < 0)
                continue;
            int64_t taken = partitions_last_taken(f->ledger, part);
            int64_t pos = taken >= 0                ? taken + 1
                          : l->elems[i].offset >= 0 ? l->elems[i].offset
                                                    : lo;
            if (hi > pos)
                lag += (double)(hi - pos);
        }
    }
    rd_kafka_topic_partition_list_destroy(l);
    return lag + (double)f->pending;
}

void feed_lag_cb(evutil_socket_t fd, short what, void *arg)
{
    feed_t *f = arg;
    metrics_gauge_set(f->m_lag, feed_lag(f));
}
