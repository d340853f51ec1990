/* ndd-correlation worker loop: see corr_worker.h and docs/correlation.md.
 *
 * A consumed copy is decoded and given to the engine at once, then its librdkafka message is
 * released: the engine keeps what an xDR needs (ids, path, timestamps, sizes), never the
 * body. xDRs leave through the emit callback (encoded into one reusable buffer, copied by
 * librdkafka) to the XDR topic.
 *
 * Offsets. A partition's offset may be stored only when (a) no open transaction has a copy
 * below it (the engine's low-water mark) and (b) every xDR or dead-letter record emitted from
 * copies below it was acknowledged. (b) is kept with checkpoints: every checkpoint_ms the
 * worker seals the current period, recording min(next offset, low water) of each partition;
 * every produce counts against the period it was made in. A sealed checkpoint is applied
 * (its offsets stored) once every produce of it and of all earlier periods is acknowledged.
 * An xDR emitted after a seal belongs to a transaction that was open at the seal (first copy
 * at or above the recorded low water) or opened later, so the recorded offsets never pass a
 * copy whose xDR is not acknowledged. A kill -9 therefore loses no xDR: the restart re-reads
 * from below every transaction whose xDR was not safely written. */
#include "corr_worker.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "codec.h"
#include "kafka_txn.h"
#include "log.h"
#include "partitions.h"
#include "worker_stats.h"
#include "worker_control.h"
#include "xdr.h"

#define CORR_MAX_PARTITIONS 65536
#define CORR_RING 64                /* checkpoints awaiting acknowledgements, at most */
#define CORR_OUT_MAX (256u * 1024u) /* an xDR's text is at most 4 KiB (str_area), escaped x6 */
#define CORR_PAUSE_AFTER_MS 200
#define CORR_REASON_REFUSED "correlation-refused"
#define CORR_KIND_XDR 0u
#define CORR_KIND_DLQ 1u

/* What correlation keeps per partition beyond the ledger's bookkeeping (assignment, the
 * epoch checkpoints carry, the stored offset): the range of copies processed in the current
 * epoch (zeroed by the ledger at every new epoch). */
typedef struct corr_span {
    bool seen;    /* a copy was processed in this epoch: base and next are set */
    int64_t base; /* first offset processed since the assignment */
    int64_t next; /* offset after the last copy processed */
    /* exactly once: the last committed offset + 1 and its processed offset (0: unknown), and
     * the offset below which copies read again emit no xDR (0: none) */
    int64_t c_low, c_next, replay_to;
} corr_span_t;

/* One partition's safe offset as recorded at a seal. */
typedef struct corr_mark {
    int32_t partition;
    uint32_t epoch;
    int64_t offset;
} corr_mark_t;

typedef struct corr_ckpt {
    uint64_t unacked; /* produces of this period not acknowledged yet */
    bool sealed;
    bool failed; /* a produce of this period was not written: never apply it */
    corr_mark_t *marks;
    size_t n_marks, cap_marks;
} corr_ckpt_t;

typedef struct corr_metrics {
    metrics_counter_t *in_msgs, *in_bytes, *xdr_msgs, *xdr_bytes, *produce_errors, *pauses;
    metrics_counter_t *correlated, *xdrs_emitted, *checkpoints, *stores;
    metrics_counter_t *dlq[CODEC_REASON__COUNT + 1]; /* last: correlation-refused */
    metrics_gauge_t *unacked, *uncommitted, *paused, *assigned, *lag, *memory;
} corr_metrics_t;

struct corr_worker {
    corr_config_t cfg;
    char main_topic[256], xdr_topic[256], dlq_topic[256], group[256], client_id[256];
    char member_id[512]; /* group.instance.id, when static membership applies */
    kafka_consumer_t *consumer;
    kafka_producer_t *producer;
    correlate_t *engine;
    correlate_metrics_t *kpi;
    codec_msg_t msg; /* decode target (large: kept out of the stack) */
    buf_t out;       /* the xDR being encoded */

    partitions_t *ledger; /* MAIN's partitions: assignment, epochs, stored offsets */

    corr_ckpt_t ring[CORR_RING];
    uint64_t ck_head; /* oldest checkpoint not applied */
    uint64_t ck_cur;  /* the open period (not sealed); ck_head <= ck_cur */
    bool changed;     /* something was consumed or produced since the last seal */

    volatile sig_atomic_t *stop;
    int64_t now_us; /* monotonic clock of the current poll, for the engine */
    /* The engine expires at engine_timeout_us (fixed at creation); the live timeout is
     * applied by handing correlate_expire a clock advanced by the difference. */
    int64_t engine_timeout_us, timeout_us;
    bool hide_subscriber;
    /* false until the first copy of a consumer poll: that poll may have waited up to 100 ms
     * for it, so the clock is read again there (a transaction's age counts from its arrival,
     * never from before it). */
    bool clock_fresh;
    kafka_gate_t gate;
    bool fatal;
    bool closing; /* the stop path sealed and drained: rebalances must not seal again */
    uint64_t dlq_logged;
    uint64_t unacked; /* xDR and dead-letter records produced, acknowledgement to come */
    /* exactly once (kafka_txn.h) */
    bool eos, txn_open, txn_failed, txn_rebuild, txn_init;
    int64_t txn_due_ms, txn_retry_ms;
    uint64_t txn_records;
    bool in_add;            /* inside correlate_add: an xDR is completed by a copy ... */
    int64_t add_off;        /* ... at this offset, */
    int64_t add_replay_to;  /* ... silent below this one (read again: committed already) */
    uint64_t replay_silent; /* xDRs not emitted again */
    char txn_id[800];
    kafka_txn_pair_t *txn; /* the bounded commit, its metrics (kafka_txn.h) */
    corr_metrics_t m;      /* the only count of each event: corr_worker_stats reads these */
    corr_stats_t base;     /* what the counters held when this worker was made (same registry) */
};

static int corr_txn_begin(corr_worker_t *w);

/* ---- small helpers ---- */

static int64_t corr_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- metrics ---- */

static int corr_metrics_init(corr_worker_t *w)
{
    metrics_registry_t *r = w->cfg.metrics;
    corr_metrics_t *m = &w->m;
    metrics_family_t *f;
#define CORR_COUNTER(field, name, help)                                                            \
    do {                                                                                           \
        if (!(f = metrics_counter_new(r, name, help, NULL)) ||                                     \
            !(m->field = metrics_counter_labels(f)))                                               \
            return -1;                                                                             \
    } while (0)
#define CORR_GAUGE(field, name, help)                                                              \
    do {                                                                                           \
        if (!(f = metrics_gauge_new(r, name, help, NULL)) ||                                       \
            !(m->field = metrics_gauge_labels(f)))                                                 \
            return -1;                                                                             \
    } while (0)
    CORR_COUNTER(in_msgs, "ndd_correlation_messages_consumed_total", "Copies consumed from MAIN");
    CORR_COUNTER(in_bytes, "ndd_correlation_messages_consumed_bytes_total",
                 "Value bytes of the copies consumed from MAIN");
    CORR_COUNTER(xdr_msgs, "ndd_correlation_xdrs_produced_total",
                 "xDRs written to the XDR topic and acknowledged");
    CORR_COUNTER(xdr_bytes, "ndd_correlation_xdrs_produced_bytes_total",
                 "Value bytes of the xDRs written to the XDR topic and acknowledged");
    CORR_COUNTER(produce_errors, "ndd_correlation_produce_errors_total",
                 "xDR or dead-letter records the broker refused (the worker stops)");
    CORR_COUNTER(correlated, "ndd_correlation_messages_correlated_total",
                 "Copies the correlation engine accepted (the others are dead-lettered)");
    CORR_COUNTER(xdrs_emitted, "ndd_correlation_xdrs_emitted_total",
                 "xDRs handed to the producer (acknowledged ones: xdrs_produced)");
    CORR_COUNTER(checkpoints, "ndd_correlation_checkpoints_total",
                 "Checkpoints whose offsets were applied (all their records acknowledged)");
    CORR_COUNTER(stores, "ndd_correlation_offsets_stored_total",
                 "Times a partition's stored offset advanced");
    CORR_COUNTER(pauses, "ndd_correlation_consumer_pauses_total",
                 "Times consumption was paused because too many records awaited acknowledgement");
    CORR_GAUGE(unacked, "ndd_correlation_messages_in_flight",
               "xDR and dead-letter records produced whose acknowledgement is still to come");
    CORR_GAUGE(uncommitted, "ndd_correlation_messages_uncommitted",
               "Copies processed above the stored offsets: what a crash would re-read");
    CORR_GAUGE(paused, "ndd_correlation_consumer_paused",
               "1 while consumption is paused (backpressure)");
    CORR_GAUGE(assigned, "ndd_correlation_partitions_assigned", "MAIN partitions assigned");
    CORR_GAUGE(lag, "ndd_correlation_consumer_lag_messages",
               "Records behind the end of the assigned MAIN partitions (librdkafka statistics)");
    CORR_GAUGE(memory, "ndd_correlation_transaction_table_bytes",
               "Bytes allocated for the open-transaction tables");
    if (!(f = metrics_counter_new(r, "ndd_correlation_messages_dead_lettered_total",
                                  "Copies sent to the dead-letter topic, by reason", "reason")))
        return -1;
    for (int i = 1; i < CODEC_REASON__COUNT; i++)
        if (!(m->dlq[i] = metrics_counter_labels(f, codec_reason_name((codec_reason_t)i))))
            return -1;
    if (!(m->dlq[CODEC_REASON__COUNT] = metrics_counter_labels(f, CORR_REASON_REFUSED)))
        return -1;
    return 0;
#undef CORR_COUNTER
#undef CORR_GAUGE
}

/* The counters as they are now. Another worker on the same registry (a test making workers
 * one after another) shares the series, so what it counted before this worker was made is
 * taken off (corr_worker_stats). */
static corr_stats_t corr_counters(const corr_worker_t *w)
{
    const corr_metrics_t *m = &w->m;
    corr_stats_t s = {
        .consumed = metrics_counter_get(m->in_msgs),
        .correlated = metrics_counter_get(m->correlated),
        .xdrs = metrics_counter_get(m->xdrs_emitted),
        .xdrs_acked = metrics_counter_get(m->xdr_msgs),
        .produce_failures = metrics_counter_get(m->produce_errors),
        .pauses = metrics_counter_get(m->pauses),
        .checkpoints = metrics_counter_get(m->checkpoints),
        .stores = metrics_counter_get(m->stores),
    };
    for (int i = 1; i <= CODEC_REASON__COUNT; i++)
        s.dead_lettered += metrics_counter_get(m->dlq[i]);
    return s;
}

/* Gauges and engine KPIs that are not updated per record. */
static void corr_metrics_refresh(corr_worker_t *w)
{
    correlate_metrics_update(w->kpi, w->engine);
    uint64_t uncommitted = 0;
    int assigned = 0;
    for (int32_t i = partitions_next_assigned(w->ledger, -1); i >= 0;
         i = partitions_next_assigned(w->ledger, i)) {
        const corr_span_t *p = partitions_user(w->ledger, i);
        assigned++;
        int64_t stored = partitions_stored(w->ledger, i);
        int64_t from = stored >= 0 ? stored : p->base;
        if (p->seen && p->next > from)
            uncommitted += (uint64_t)(p->next - from);
    }
    metrics_gauge_set(w->m.uncommitted, (double)uncommitted);
    metrics_gauge_set(w->m.assigned, assigned);
    metrics_gauge_set(w->m.unacked, (double)w->unacked);
    metrics_gauge_set(w->m.memory, (double)correlate_stats(w->engine).memory_bytes);
}

/* Consumer statistics: the consumer lag summed over our MAIN partitions. */
static void corr_on_stats(void *owner, const char *json, size_t len)
{
    corr_worker_t *w = owner;
    int64_t lag = kafka_stats_consumer_lag(json, len, w->main_topic);
    if (lag >= 0)
        metrics_gauge_set(w->m.lag, (double)lag);
}

/* ---- checkpoints ---- */

/* Closes the current period, recording each assigned partition's safe offset. When the ring
 * is full the period simply goes on (coarser, still safe). */
static void corr_seal(corr_worker_t *w)
{
    if (w->ck_cur - w->ck_head + 1 >= CORR_RING)
        return;
    corr_ckpt_t *ck = &w->ring[w->ck_cur % CORR_RING];
    size_t n = 0;
    for (int32_t i = partitions_next_assigned(w->ledger, -1); i >= 0;
         i = partitions_next_assigned(w->ledger, i))
        n += ((const corr_span_t *)partitions_user(w->ledger, i))->seen;
    if (n > ck->cap_marks) {
        corr_mark_t *mk = realloc(ck->marks, n * sizeof(*mk));
        if (!mk)
            return; /* try again at the next seal */
        ck->marks = mk;
        ck->cap_marks = n;
    }
    ck->n_marks = 0;
    for (int32_t i = partitions_next_assigned(w->ledger, -1); i >= 0;
         i = partitions_next_assigned(w->ledger, i)) {
        const corr_span_t *p = partitions_user(w->ledger, i);
        if (!p->seen)
            continue;
        ck->marks[ck->n_marks++] =
            (corr_mark_t){.partition = i,
                          .epoch = partitions_epoch(w->ledger, i),
                          .offset = correlate_committable(w->engine, i, p->next)};
    }
    ck->sealed = true;
    w->ck_cur++;
    corr_ckpt_t *next = &w->ring[w->ck_cur % CORR_RING];
    next->unacked = 0;
    next->sealed = false;
    next->failed = false;
    next->n_marks = 0;
    w->changed = false;
}

/* Applies, oldest first, every sealed checkpoint whose produces (and those of all earlier
 * periods) are acknowledged. */
static void corr_advance(corr_worker_t *w)
{
    while (w->ck_head < w->ck_cur) {
        corr_ckpt_t *ck = &w->ring[w->ck_head % CORR_RING];
        if (!ck->sealed || ck->unacked > 0 || ck->failed || w->fatal)
            break;
        /* A mark from before a revoke/assign of its partition is stale (the ledger drops
         * it): the new owner (perhaps us again) starts from the committed offset. */
        for (size_t i = 0; i < ck->n_marks; i++)
            partitions_mark(w->ledger, ck->marks[i].partition, ck->marks[i].epoch,
                            ck->marks[i].offset);
        ck->sealed = false;
        ck->n_marks = 0;
        metrics_counter_inc(w->m.checkpoints);
        w->ck_head++;
    }
    metrics_counter_add(w->m.stores, partitions_store(w->ledger, w->consumer, w->main_topic));
}

/* ---- producing ---- */

static void *corr_opaque(uint64_t gen, unsigned kind)
{
    return (void *)(uintptr_t)(((gen << 1) | kind) + 1);
}

static void corr_on_delivery(void *owner, void *msg_opaque, const rd_kafka_message_t *rkm)
{
    corr_worker_t *w = owner;
    uintptr_t v = (uintptr_t)msg_opaque;
    if (!v)
        return;
    v -= 1;
    unsigned kind = (unsigned)(v & 1u);
    corr_ckpt_t *ck = &w->ring[(v >> 1) % CORR_RING];
    ck->unacked--;
    w->unacked--;
    if (rkm->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (kind == CORR_KIND_XDR) {
            metrics_counter_inc(w->m.xdr_msgs);
            metrics_counter_add(w->m.xdr_bytes, rkm->len);
        }
        return;
    }
    ck->failed = true;
    if (rkm->err == RD_KAFKA_RESP_ERR__PURGE_QUEUE || rkm->err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT)
        return; /* shutdown gave up on it: its checkpoint is never applied */
    if (w->eos) {
        /* its transaction is aborted and the copies read again: nothing lost */
        metrics_counter_inc(w->m.produce_errors);
        if (!w->txn_failed)
            log_warn("correlation: record refused by %s: %s; its transaction will be aborted",
                     rkm->rkt ? rd_kafka_topic_name(rkm->rkt) : "-", rd_kafka_err2str(rkm->err));
        w->txn_failed = true;
        return;
    }
    /* message.timeout.ms is infinite, so this is a permanent refusal (too large, topic gone,
     * not authorised). Its period is never applied and no later offset is stored: a restart
     * re-reads the copies and emits the record again. */
    metrics_counter_inc(w->m.produce_errors);
    log_error("correlation: %s record (key %.*s) refused by %s: %s; stopping without storing "
              "further offsets",
              kind == CORR_KIND_XDR ? "xDR" : "dead-letter",
              (int)(rkm->key_len > 64 ? 64 : rkm->key_len), rkm->key ? (const char *)rkm->key : "",
              rkm->rkt ? rd_kafka_topic_name(rkm->rkt) : "-", rd_kafka_err2str(rkm->err));
    w->fatal = true;
}

/* Hands one record to librdkafka (value copied), counting it against the open period. When
 * the producer queue is full it serves acknowledgements until there is room: the xDR exists
 * only now (its slot in the engine is gone), so it is never dropped. Returns 0, or -1 when
 * the record was refused or a stop was asked while the broker stayed unreachable. */
static int corr_produce(corr_worker_t *w, const char *topic, const void *key, size_t key_len,
                        const void *value, size_t value_len, rd_kafka_headers_t *hdrs,
                        unsigned kind, rd_kafka_resp_err_t *err)
{
    int64_t waited_since = 0;
    bool warned = false;
    if (w->eos && !w->txn_open && corr_txn_begin(w)) {
        *err = RD_KAFKA_RESP_ERR__STATE;
        return -1;
    }
    for (;;) {
        uint64_t gen = w->ck_cur;
        kafka_produce_result_t r =
            kafka_produce(w->producer, topic, RD_KAFKA_PARTITION_UA, key, key_len, value, value_len,
                          hdrs, KAFKA_VALUE_COPY, corr_opaque(gen, kind), err);
        if (r == KAFKA_PRODUCE_OK) {
            w->ring[gen % CORR_RING].unacked++;
            w->unacked++;
            w->txn_records++;
            w->changed = true;
            return 0;
        }
        if (r == KAFKA_PRODUCE_ERROR)
            return -1;
        int64_t now = mono_now_ms();
        if (!waited_since)
            waited_since = now;
        if (!warned && now - waited_since >= 5000) {
            log_warn("correlation: producer queue full for 5 s (%" PRIu64
                     " records unacknowledged): is the broker reachable?",
                     w->unacked);
            warned = true;
        }
        if (w->cfg.on_tick)
            w->cfg.on_tick(w->cfg.tick_arg); /* heartbeats and the produce alarm go on */
        if (w->stop && *w->stop && now - waited_since >= w->cfg.shutdown_timeout_ms) {
            *err = RD_KAFKA_RESP_ERR__TIMED_OUT;
            return -1;
        }
        kafka_producer_poll(w->producer, 10);
    }
}

/* The engine's emit callback: one finished transaction. */
static void corr_on_xdr(void *opaque, const xdr_t *x)
{
    corr_worker_t *w = opaque;
    correlate_metrics_observe(w->kpi, x);
    if (w->fatal)
        return; /* stopping: nothing is stored any more, the restart emits it again */
    if (w->eos && w->in_add && w->add_off < w->add_replay_to) {
        w->replay_silent++; /* completed by a copy read again: committed before */
        return;
    }
    if (w->eos && w->txn_rebuild)
        return; /* not committed: its copies are read again once the pair is made again */
    xdr_t shown;
    if (w->hide_subscriber && (x->s[XDR_S_SUPI].ptr || x->s[XDR_S_GPSI].ptr)) {
        shown = *x; /* shallow: the slices still point into the engine's slot */
        shown.s[XDR_S_SUPI] = (codec_slice_t){0};
        shown.s[XDR_S_GPSI] = (codec_slice_t){0};
        x = &shown;
    }
    buf_reset(&w->out);
    int rc = w->cfg.format == CORR_FORMAT_BINARY ? xdr_encode_binary(x, &w->out)
                                                 : xdr_encode_json(x, &w->out);
    const codec_slice_t *id = &x->s[XDR_S_CORRELATION_ID];
    rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
    if (rc == 0 && corr_produce(w, w->xdr_topic, id->ptr, id->len, w->out.data, w->out.len, NULL,
                                CORR_KIND_XDR, &e) == 0) {
        metrics_counter_inc(w->m.xdrs_emitted);
        return;
    }
    metrics_counter_inc(w->m.produce_errors);
    log_error("correlation: xDR %.*s (%s [%d], first copy at offset %" PRId64
              ") could not be written to %s: %s; stopping without storing further offsets",
              (int)(id->len > 128 ? 128 : id->len), id->ptr ? id->ptr : "", w->main_topic,
              (int)x->partition, x->first_offset, w->xdr_topic,
              rc ? "encoding larger than the output buffer" : rd_kafka_err2str(e));
    w->fatal = true;
}

/* Sends a copy that cannot be correlated to the dead-letter topic: the original key, value
 * and headers plus the @dlq-* headers (docs/message-format.md, "Dead-letter records"). */
static void corr_dead_letter(corr_worker_t *w, const rd_kafka_message_t *m,
                             const codec_error_t *cerr, const char *reason_override)
{
    int32_t part = m->partition;
    long long off = (long long)m->offset;
    int idx = reason_override ? CODEC_REASON__COUNT : (int)cerr->reason;
    metrics_counter_inc(w->m.dlq[idx]);
    uint64_t logged = w->dlq_logged++;
    if (logged < 10 || logged % 10000 == 0)
        log_warn("correlation: %s [%d] offset %lld to %s: %s %s: %s (%" PRIu64 " so far)",
                 w->main_topic, (int)part, off, w->dlq_topic,
                 reason_override ? reason_override : codec_reason_name(cerr->reason), cerr->field,
                 cerr->detail, logged + 1);

    char origin[300];
    codec_format_origin(origin, sizeof(origin), w->main_topic, part, m->offset);
    const void *value = m->payload;
    size_t value_len = m->len;
    for (int attempt = 0; attempt < 2; attempt++) {
        rd_kafka_headers_t *src = NULL, *h;
        if (rd_kafka_message_headers(m, &src) == RD_KAFKA_RESP_ERR_NO_ERROR && src)
            h = rd_kafka_headers_copy(src);
        else
            h = rd_kafka_headers_new(8);
        if (!h || codec_dlq_headers(h, cerr, origin) ||
            (reason_override &&
             codec_headers_set(h, CODEC_DLQ_REASON, reason_override, strlen(reason_override))) ||
            (attempt && codec_headers_set(h, "@dlq-body-dropped", "too-large", 9))) {
            if (h)
                rd_kafka_headers_destroy(h);
            log_error("correlation: out of memory building the dead-letter record of %s [%d] "
                      "offset %lld; stopping",
                      w->main_topic, (int)part, off);
            w->fatal = true;
            return;
        }
        rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
        if (corr_produce(w, w->dlq_topic, m->key, m->key_len, value, value_len, h, CORR_KIND_DLQ,
                         &e) == 0)
            return;
        rd_kafka_headers_destroy(h);
        metrics_counter_inc(w->m.produce_errors);
        if (e == RD_KAFKA_RESP_ERR__TIMED_OUT)
            break;
        /* Refused before queueing (most likely larger than message.max.bytes): retry once
         * without the value. */
        value = NULL;
        value_len = 0;
        log_warn("correlation: dead-letter record of %s [%d] offset %lld refused by %s: %s; "
                 "retrying without its value",
                 w->main_topic, (int)part, off, w->dlq_topic, rd_kafka_err2str(e));
    }
    log_error("correlation: %s [%d] offset %lld could not be written to %s; stopping without "
              "storing further offsets",
              w->main_topic, (int)part, off, w->dlq_topic);
    w->fatal = true;
}

/* ---- exactly once (kafka_txn.h) ---- */

/* The metadata of a committed offset: the offset after the last copy processed. Copies between
 * the committed offset (the first copy of the oldest open transaction) and it are read again
 * after a restart or an abort to rebuild the open transactions; the xDRs they complete were
 * committed already and are not emitted again. */
#define CORR_META "ndd-processed="

static rd_kafka_topic_partition_list_t *corr_txn_offsets(corr_worker_t *w)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);
    for (int32_t i = partitions_next_assigned(w->ledger, -1); l && i >= 0;
         i = partitions_next_assigned(w->ledger, i)) {
        const corr_span_t *p = partitions_user(w->ledger, i);
        if (!p->seen)
            continue;
        int64_t low = correlate_committable(w->engine, i, p->next);
        if (low + 1 == p->c_low && p->next == p->c_next)
            continue; /* nothing moved since the last commit */
        char meta[48];
        int n = snprintf(meta, sizeof meta, CORR_META "%" PRId64, p->next);
        rd_kafka_topic_partition_t *t = rd_kafka_topic_partition_list_add(l, w->main_topic, i);
        t->offset = low;
        if ((t->metadata = malloc((size_t)n))) { /* freed with the list */
            memcpy(t->metadata, meta, (size_t)n);
            t->metadata_size = (size_t)n;
        }
    }
    return l;
}

/* The processed offset of a committed offset's metadata; 0 when it has none. */
static int64_t corr_txn_meta(const rd_kafka_topic_partition_t *t)
{
    size_t k = sizeof CORR_META - 1;
    char s[48];
    if (!t->metadata || t->metadata_size <= k || t->metadata_size >= sizeof s ||
        memcmp(t->metadata, CORR_META, k))
        return 0;
    memcpy(s, t->metadata, t->metadata_size);
    s[t->metadata_size] = 0;
    return strtoll(s + k, NULL, 10);
}

/* After an abort: the open transactions are dropped, each partition starts a new epoch and
 * the consumer seeks back to the last committed offset (or the first copy read since the
 * assignment); the copies read again up to the committed processed offset emit nothing. */
static int corr_txn_rewind(corr_worker_t *w)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);
    if (!l)
        return -1;
    for (int32_t i = partitions_next_assigned(w->ledger, -1); i >= 0;
         i = partitions_next_assigned(w->ledger, i)) {
        corr_span_t s = *(corr_span_t *)partitions_user(w->ledger, i);
        correlate_drain_partition(w->engine, i, CORRELATE_DRAIN_HANDOVER);
        partitions_revoke(w->ledger, i);
        partitions_assign(w->ledger, i);
        corr_span_t *p = partitions_user(w->ledger, i);
        p->c_low = s.c_low;
        p->c_next = p->replay_to = s.c_next;
        int64_t to = s.c_low > 0 ? s.c_low - 1 : s.seen ? s.base : -1;
        if (to >= 0)
            rd_kafka_topic_partition_list_add(l, w->main_topic, i)->offset = to;
    }
    char why[512];
    int rc = kafka_txn_seek(kafka_consumer_handle(w->consumer), l, why, sizeof why);
    if (rc)
        log_warn("correlation: rewind after an abort: %s", why);
    rd_kafka_topic_partition_list_destroy(l);
    return rc;
}

static int corr_txn_rewind_cb(void *w)
{
    return corr_txn_rewind(w);
}

/* A transactional call failed (kafka_txn.h, "Recovery"): abort and rewind, or (fatal, or the
 * abort or the rewind failed) the pair is made again from the committed offsets. */
static void corr_txn_recover(corr_worker_t *w, kafka_txn_rc_t rc, const char *why)
{
    bool open = w->txn_open;
    w->txn_open = w->txn_failed = false;
    w->txn_records = 0;
    if (kafka_txn_pair_recover(w->txn, w->producer, w->consumer, rc, open, corr_txn_rewind_cb, w,
                               why) != KAFKA_TXN_OK)
        w->txn_rebuild = true;
}

static int corr_txn_begin(corr_worker_t *w)
{
    char why[512];
    if (kafka_txn_begin(kafka_producer_handle(w->producer), why, sizeof why) != KAFKA_TXN_OK) {
        log_warn("correlation: %s; the pair is made again", why);
        w->txn_rebuild = true;
        return -1;
    }
    w->txn_open = true;
    return 0;
}

/* Commits the open transaction with the offsets (and processed offsets) of what it holds. */
static void corr_txn_commit(corr_worker_t *w)
{
    if (w->txn_failed) {
        corr_txn_recover(w, KAFKA_TXN_ABORT, "a record of the transaction failed");
        return;
    }
    rd_kafka_topic_partition_list_t *offs = corr_txn_offsets(w);
    if (!offs || (offs->cnt == 0 && !w->txn_records) || (!w->txn_open && corr_txn_begin(w))) {
        if (offs)
            rd_kafka_topic_partition_list_destroy(offs);
        return;
    }
    char why[512];
    kafka_txn_rc_t rc =
        kafka_txn_pair_commit(w->txn, kafka_producer_handle(w->producer),
                              kafka_consumer_handle(w->consumer), offs, why, sizeof why);
    if (rc == KAFKA_TXN_OK) {
        w->txn_open = false;
        w->txn_records = 0;
        for (int i = 0; i < offs->cnt; i++) {
            corr_span_t *p = partitions_assigned(w->ledger, offs->elems[i].partition)
                                 ? partitions_user(w->ledger, offs->elems[i].partition)
                                 : NULL;
            if (p) {
                p->c_low = offs->elems[i].offset + 1;
                p->c_next = corr_txn_meta(&offs->elems[i]);
            }
        }
        metrics_counter_inc(w->m.checkpoints);
    } else {
        corr_txn_recover(w, rc, why);
    }
    rd_kafka_topic_partition_list_destroy(offs);
}

/* The committed offsets of newly assigned partitions and their processed offsets (where the
 * replay that rebuilds the open transactions stops being silent). */
static void corr_txn_assigned(corr_worker_t *w, const rd_kafka_topic_partition_list_t *parts)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_copy(parts);
    if (!l)
        return;
    rd_kafka_resp_err_t e = rd_kafka_committed(kafka_consumer_handle(w->consumer), l, 10000);
    if (e)
        log_warn("correlation: committed offsets of the assigned partitions: %s; xDRs completed "
                 "before the last commit may be emitted again",
                 rd_kafka_err2str(e));
    for (int i = 0; !e && i < l->cnt; i++) {
        if (strcmp(l->elems[i].topic, w->main_topic) || l->elems[i].offset < 0)
            continue;
        corr_span_t *p = partitions_user(w->ledger, l->elems[i].partition);
        if (!p || !partitions_assigned(w->ledger, l->elems[i].partition))
            continue;
        p->c_low = l->elems[i].offset + 1;
        p->c_next = p->replay_to = corr_txn_meta(&l->elems[i]);
    }
    rd_kafka_topic_partition_list_destroy(l);
}

/* Whether the pair can work: after a fatal error it is made again and its transactions
 * initialised, retried every second while the cluster does not answer. */
static bool corr_txn_ready(corr_worker_t *w)
{
    if (!w->txn_rebuild && !w->txn_init)
        return true;
    int64_t now = mono_now_ms();
    if (now < w->txn_retry_ms)
        return false;
    w->txn_retry_ms = now + 1000;
    if (w->txn_rebuild) {
        w->txn_open = false;
        w->txn_records = 0;
        if (kafka_txn_pair_rebuild(w->txn, w->producer, w->consumer))
            return false;
        w->txn_rebuild = false;
        w->txn_init = true;
    }
    char why[512], fe[256];
    if (kafka_txn_init(kafka_producer_handle(w->producer), KAFKA_TXN_INIT_MS, NULL, why,
                       sizeof why) != KAFKA_TXN_OK) {
        w->txn_rebuild = kafka_producer_fatal_error(w->producer, fe, sizeof fe) != 0;
        log_warn("correlation: %s (transactional.id %s); retried", why, w->txn_id);
        return false;
    }
    w->txn_init = false;
    w->txn_due_ms = mono_now_ms() + w->cfg.transaction_ms;
    return true;
}

/* ---- consuming ---- */

static void corr_on_message(void *owner, rd_kafka_message_t *m)
{
    corr_worker_t *w = owner;
    metrics_counter_inc(w->m.in_msgs);
    metrics_counter_add(w->m.in_bytes, m->len);
    corr_span_t *p = partitions_assigned(w->ledger, m->partition)
                         ? partitions_user(w->ledger, m->partition)
                         : NULL;
    if (!p || w->fatal) {
        /* Not ours (any more), or stopping: not processed, its offset is not stored. */
        rd_kafka_message_destroy(m);
        return;
    }
    if (!w->clock_fresh) {
        w->now_us = corr_now_us();
        w->clock_fresh = true;
    }
    codec_error_t cerr;
    if (codec_decode_main_limited(&w->msg, m, &w->cfg.limits, &cerr) != CODEC_OK) {
        corr_dead_letter(w, m, &cerr, NULL);
    } else if ((w->in_add = true, w->add_off = m->offset, w->add_replay_to = p->replay_to,
                correlate_add(w->engine, &w->msg, m->partition, m->offset, w->now_us) != 0)) {
        memset(&cerr, 0, sizeof(cerr));
        cerr.reason = CODEC_ERR_BAD_VALUE;
        snprintf(cerr.field, sizeof(cerr.field), "partition");
        snprintf(cerr.detail, sizeof(cerr.detail),
                 "the correlation engine refused the copy (partition %d above max-partitions, or "
                 "out of memory)",
                 (int)m->partition);
        corr_dead_letter(w, m, &cerr, CORR_REASON_REFUSED);
    } else {
        metrics_counter_inc(w->m.correlated);
    }
    w->in_add = false;
    if (p->replay_to && m->offset + 1 >= p->replay_to) {
        log_info("correlation: %s [%d] read again up to offset %" PRId64 " (committed before); "
                 "%" PRIu64 " completed xDRs not emitted again so far",
                 w->main_topic, (int)m->partition, p->replay_to, w->replay_silent);
        p->replay_to = 0;
    }
    if (!p->seen) {
        p->seen = true;
        p->base = m->offset;
        p->next = m->offset + 1;
    } else if (m->offset >= p->next) {
        p->next = m->offset + 1;
    }
    w->changed = true;
    rd_kafka_message_destroy(m);
}

/* ---- rebalance ---- */

static void corr_on_rebalance(void *owner, kafka_rebalance_kind_t kind,
                              const rd_kafka_topic_partition_list_t *parts)
{
    corr_worker_t *w = owner;
    if (w->eos && kind != KAFKA_REBALANCE_ASSIGNED && !w->closing) {
        if (kind == KAFKA_REBALANCE_REVOKED && w->cfg.revoke_mode == CORRELATE_DRAIN_EMIT)
            for (int i = 0; i < parts->cnt; i++)
                if (strcmp(parts->elems[i].topic, w->main_topic) == 0)
                    correlate_drain_partition(w->engine, parts->elems[i].partition,
                                              CORRELATE_DRAIN_EMIT);
        /* what is produced goes over with its offsets, or (lost, or the commit failed) is
         * aborted and read again by the next owner */
        if (kind == KAFKA_REBALANCE_REVOKED && !w->txn_rebuild && !w->txn_init)
            corr_txn_commit(w); /* aborts instead when the consumer is fenced */
        else if (w->txn_open)
            corr_txn_recover(w, KAFKA_TXN_ABORT, "partitions lost");
    } else if (!w->eos && kind == KAFKA_REBALANCE_REVOKED && !w->fatal && !w->closing) {
        /* Last chance to hand finished work over: with EMIT the open transactions become
         * "revoked" xDRs now; then the acknowledgements get a short time, the period is
         * sealed (with HANDOVER its offsets still sit below the open transactions) and every
         * safe checkpoint is stored for the commit that follows this callback. */
        if (w->cfg.revoke_mode == CORRELATE_DRAIN_EMIT)
            for (int i = 0; i < parts->cnt; i++)
                if (strcmp(parts->elems[i].topic, w->main_topic) == 0)
                    correlate_drain_partition(w->engine, parts->elems[i].partition,
                                              CORRELATE_DRAIN_EMIT);
        int left = w->unacked ? kafka_producer_flush(w->producer, w->cfg.revoke_flush_ms) : 0;
        if (left)
            log_warn("correlation: revoke: %d records still unacknowledged after %d ms; the next "
                     "owner re-reads from the last safe offset (duplicates possible)",
                     left, w->cfg.revoke_flush_ms);
        corr_advance(w);
        corr_seal(w);
        corr_advance(w);
    }
    for (int i = 0; i < parts->cnt; i++) {
        if (strcmp(parts->elems[i].topic, w->main_topic) != 0)
            continue;
        int32_t pid = parts->elems[i].partition;
        bool assign = kind == KAFKA_REBALANCE_ASSIGNED;
        partitions_rc_t rc = assign ? partitions_assign(w->ledger, pid) : PARTITIONS_OK;
        if (rc == PARTITIONS_KEPT) {
            /* Already ours (a repeated assignment): librdkafka keeps fetching from where it
             * is, so the open transactions and the processed range stay valid; handing them
             * over would let the low water pass copies whose xDR was never emitted. */
            log_warn("correlation: %s [%d] assigned again while already assigned; kept",
                     w->main_topic, (int)pid);
            continue;
        }
        if (rc != PARTITIONS_OK) {
            log_error("correlation: cannot track %s [%d]: %s", w->main_topic, (int)pid,
                      rc == PARTITIONS_RANGE ? "partition id above the limit" : "out of memory");
            w->fatal = true;
            continue;
        }
        /* Whatever the engine still holds for the partition is handed over: the offset
         * committed for it is at most its low water, so its next reader rebuilds it. */
        size_t n = correlate_drain_partition(w->engine, pid, CORRELATE_DRAIN_HANDOVER);
        if (n)
            log_info("correlation: %s [%d] %s: %zu open transactions handed over", w->main_topic,
                     (int)pid,
                     assign ? "assigned" : (kind == KAFKA_REBALANCE_LOST ? "lost" : "revoked"), n);
        /* A revoke moves the epoch on: marks sealed before it are dropped as stale. */
        if (!assign)
            partitions_revoke(w->ledger, pid);
    }
    if (w->eos && kind == KAFKA_REBALANCE_ASSIGNED)
        corr_txn_assigned(w, parts);
    corr_metrics_refresh(w);
}

/* ---- life cycle ---- */

/* Exactly once: the transactional.id (stable for this instance, so a restart fences the one
 * it replaces) and its producer properties into pdefs (room for KAFKA_TXN_N_PROPS). Returns
 * how many. */
static size_t corr_txn_setup(corr_worker_t *w, kafka_prop_t *pdefs)
{
    char inst[512];
    w->eos = w->cfg.exactly_once;
    if (!w->eos)
        return 0;
    if (!kafka_group_instance_id(inst, sizeof inst, w->cfg.instance, "ndd-correlation", NULL, NULL,
                                 w->cfg.http_port))
        snprintf(inst, sizeof inst, "pid%ld", (long)getpid());
    kafka_txn_id(w->txn_id, sizeof w->txn_id, w->group, w->main_topic, inst);
    kafka_txn_pair_opts_t to = {.txn_id = w->txn_id,
                                .group = w->group,
                                .topic = w->main_topic,
                                .who = "correlation",
                                .call_ms = w->cfg.transaction_call_ms,
                                .metrics = w->cfg.metrics,
                                .metric_prefix = "ndd_correlation"};
    if (!(w->txn = kafka_txn_pair_new(&to)))
        return (size_t)-1;
    w->txn_init = true;
    return kafka_txn_props(pdefs, w->txn_id);
}

/* The line that says what the worker does. */
static void corr_log_started(const corr_worker_t *w, const char *member)
{
    log_info("correlation: consuming %s in group %s (%s%s), xDRs (%s) to %s, dead letters to %s; "
             "timeout %" PRId64 " ms, at most %u open transactions per partition, %s rebalancing "
             "(%s on revoke), %s%s",
             w->main_topic, w->group, member ? "static member " : "dynamic member",
             member ? member : "", w->cfg.format == CORR_FORMAT_BINARY ? "binary" : "json",
             w->xdr_topic, w->dlq_topic, w->timeout_us / 1000,
             w->cfg.engine.max_open ? w->cfg.engine.max_open : CORRELATE_DEFAULT_MAX_OPEN,
             w->cfg.cooperative ? "cooperative" : "eager",
             w->cfg.revoke_mode == CORRELATE_DRAIN_EMIT ? "emit" : "hand over",
             w->eos ? "exactly once: transactions, transactional.id " : "at-least-once",
             w->eos ? w->txn_id : "");
}

/* The worker's own copy of the settings (their strings copied into w, so the caller's may go).
 * 0, or -1 with err (w is then still the caller's to free). */
static int corr_config_take(corr_worker_t *w, const corr_config_t *cfg, char *err, size_t errlen)
{
    w->cfg = *cfg;
    /* The values come filled from the settings (correlation/main.c's spec table holds the
     * defaults, once): a zero here is a caller's mistake, not a request for a default. */
    if (!cfg->batch || !cfg->max_unacked || cfg->checkpoint_ms <= 0 ||
        cfg->shutdown_timeout_ms <= 0 || cfg->revoke_flush_ms < 0 || !cfg->main_topic ||
        !cfg->xdr_topic || !cfg->dlq_topic || !cfg->group || !cfg->client_id) {
        snprintf(err, errlen,
                 "correlation: batch, max_unacked, checkpoint_ms, "
                 "shutdown_timeout_ms, the topics, group and client id must be set");
        return -1;
    }
    if (!w->cfg.metrics)
        w->cfg.metrics = metrics_default_registry();
#define CORR_NAME(field) snprintf(w->field, sizeof(w->field), "%s", cfg->field)
    CORR_NAME(main_topic);
    CORR_NAME(xdr_topic);
    CORR_NAME(dlq_topic);
    CORR_NAME(group);
    CORR_NAME(client_id);
#undef CORR_NAME
    w->cfg.main_topic = w->main_topic;
    w->cfg.xdr_topic = w->xdr_topic;
    w->cfg.dlq_topic = w->dlq_topic;
    w->cfg.group = w->group;
    w->cfg.client_id = w->client_id;
    return 0;
}

/* Metrics, the partition ledger, the output buffer and the correlation engine. 0, or -1 with
 * err (the caller frees w, which releases what was made). */
static int corr_state_open(corr_worker_t *w, const corr_config_t *cfg, char *err, size_t errlen)
{
    if (corr_metrics_init(w) || !(w->kpi = correlate_metrics_new(w->cfg.metrics, "all"))) {
        snprintf(err, errlen, "correlation: metrics registration failed");
        return -1;
    }
    w->base = corr_counters(w);
    /* Correlation tracks no single records (its safe offsets come from the checkpoints,
     * partitions_mark): the ledger's window is never used. */
    w->ledger = partitions_new(1, CORR_MAX_PARTITIONS, sizeof(corr_span_t));
    if (!w->ledger || buf_init(&w->out, 4096, CORR_OUT_MAX)) {
        snprintf(err, errlen, "correlation: out of memory");
        return -1;
    }
    correlate_config_t ec = cfg->engine;
    w->timeout_us = ec.timeout_us > 0 ? ec.timeout_us : CORRELATE_DEFAULT_TIMEOUT_US;
    w->engine_timeout_us =
        w->timeout_us > CORR_TIMEOUT_CEILING_US ? w->timeout_us : CORR_TIMEOUT_CEILING_US;
    ec.timeout_us = w->engine_timeout_us;
    ec.emit = corr_on_xdr;
    ec.opaque = w;
    char why[256];
    w->engine = correlate_new(&ec, why, sizeof(why));
    if (!w->engine) {
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    return 0;
}

corr_worker_t *corr_worker_new(const corr_config_t *cfg, char *err, size_t errlen)
{
    if (!cfg->brokers) {
        snprintf(err, errlen, "correlation: brokers are required");
        return NULL;
    }
    corr_worker_t *w = calloc(1, sizeof(*w));
    if (!w) {
        snprintf(err, errlen, "correlation: out of memory");
        return NULL;
    }
    if (corr_config_take(w, cfg, err, errlen)) {
        free(w);
        return NULL;
    }
    if (corr_state_open(w, cfg, err, errlen))
        goto fail;

    /* MAIN is read read_committed (librdkafka's default, said here): with the aggregation's
     * exactly-once only committed copies are read. */
    const kafka_prop_t cdefs[] = {{"statistics.interval.ms", "5000"},
                                  {"isolation.level", "read_committed"},
                                  /* exactly once: offsets go only into transactions */
                                  {"enable.auto.commit", "false"}};
    kafka_prop_t pdefs[KAFKA_TXN_N_PROPS];
    size_t npdefs = corr_txn_setup(w, pdefs);
    if (npdefs == (size_t)-1) {
        snprintf(err, errlen, "correlation: out of memory or metrics registration failed");
        goto fail;
    }
    if (w->eos && cfg->transaction_ms <= 0) {
        snprintf(err, errlen, "correlation: exactly-once needs transaction-ms > 0");
        goto fail;
    }
    kafka_pair_opts_t ko = {.brokers = cfg->brokers,
                            .client_id = w->client_id,
                            .group_id = w->group,
                            .topic = w->main_topic,
                            .cooperative = cfg->cooperative,
                            .instance_id = kafka_group_instance_id(
                                w->member_id, sizeof(w->member_id), cfg->instance,
                                "ndd-correlation", NULL, w->main_topic, cfg->http_port),
                            .props = cfg->props,
                            .n_props = cfg->n_props,
                            .producer_defaults = pdefs,
                            .n_producer_defaults = npdefs,
                            .consumer_defaults = cdefs,
                            .n_consumer_defaults = w->eos ? 3 : 2,
                            .on_delivery = corr_on_delivery,
                            .on_rebalance = corr_on_rebalance,
                            .on_consumer_stats = corr_on_stats,
                            .owner = w};
    if (kafka_pair_new(&ko, &w->producer, &w->consumer, err, errlen))
        goto fail;
    corr_log_started(w, ko.instance_id);
    if (w->eos)
        (void)corr_txn_ready(w); /* init_transactions now; retried by the loop when it failed */
    return w;
fail:
    corr_worker_free(w);
    return NULL;
}

/* Consumption stops while max_unacked records await acknowledgement: first by not polling
 * for data, then (after CORR_PAUSE_AFTER_MS) by pausing the partitions (kafka_gate_t), so the
 * consumer can still be polled for rebalances. */
static bool corr_room(corr_worker_t *w)
{
    bool room = w->unacked < w->cfg.max_unacked;
    if (worker_control_backpressure(&w->gate, w->consumer, room, CORR_PAUSE_AFTER_MS, w->m.paused,
                                    w->m.pauses) == KAFKA_GATE_PAUSED) {
        if (w->gate.log_due)
            log_info("correlation: paused (%" PRIu64 " records unacknowledged; %" PRIu64
                     " pauses so far)",
                     w->unacked, w->gate.pauses);
    }
    return room;
}

int corr_worker_run(corr_worker_t *w, volatile sig_atomic_t *stop)
{
    w->stop = stop;
    int64_t next_seal = 0, next_refresh = 0;
    const int64_t seal_us = (int64_t)w->cfg.checkpoint_ms * 1000;
    while (!*stop && !w->fatal) {
        kafka_producer_poll(w->producer, 0);
        w->now_us = corr_now_us();
        w->clock_fresh = false;
        if (w->cfg.on_tick)
            w->cfg.on_tick(w->cfg.tick_arg);
        /* Expiry compares now - first copy against the engine's timeout only, so advancing
         * the clock by (engine timeout - live timeout) expires exactly at the live timeout. */
        if (w->eos && !corr_txn_ready(w)) {
            kafka_producer_poll(w->producer, 100);
            continue;
        }
        correlate_expire(w->engine, w->now_us + (w->engine_timeout_us - w->timeout_us));
        if (w->eos && (w->txn_failed || w->now_us / 1000 >= w->txn_due_ms)) {
            corr_txn_commit(w);
            w->txn_due_ms = w->now_us / 1000 + w->cfg.transaction_ms;
        } else if (!w->eos && w->now_us >= next_seal) {
            if (w->changed)
                corr_seal(w);
            next_seal = w->now_us + seal_us;
        }
        if (!w->eos)
            corr_advance(w);
        if (w->now_us >= next_refresh) {
            corr_metrics_refresh(w);
            next_refresh = w->now_us + 200000;
        }
        if (corr_room(w)) {
            /* With records in flight, come back soon for their acknowledgements. */
            kafka_consumer_poll_each(w->consumer, w->cfg.batch, w->unacked ? 5 : 100,
                                     corr_on_message, w);
            continue;
        }
        kafka_producer_poll(w->producer, 10);
        if (w->gate.paused)
            kafka_consumer_poll_each(w->consumer, w->cfg.batch, 0, corr_on_message, w);
    }

    int rc = w->fatal ? -1 : 0;
    correlate_stats_t es = correlate_stats(w->engine);
    log_info("correlation: stopping (%" PRIu64 " open transactions, %" PRIu64
             " records unacknowledged)",
             es.open, w->unacked);
    kafka_consumer_pause_all(w->consumer);
    if (w->eos && !w->fatal && !w->txn_rebuild && !w->txn_init) {
        /* EMIT: the open transactions' xDRs go into the last transaction; HANDOVER: its
         * offsets stay below them, the next start rebuilds them */
        if (w->cfg.shutdown_mode == CORRELATE_DRAIN_EMIT)
            correlate_drain_all(w->engine, CORRELATE_DRAIN_EMIT);
        corr_txn_commit(w);
        correlate_drain_all(w->engine, CORRELATE_DRAIN_HANDOVER);
    } else if (!w->fatal) {
        corr_advance(w);
        if (w->cfg.shutdown_mode == CORRELATE_DRAIN_EMIT) {
            correlate_drain_all(w->engine, CORRELATE_DRAIN_EMIT);
            corr_seal(w);
        } else {
            /* Sealed before the drop: the offsets stay below the open transactions, so the
             * next start rebuilds them. */
            corr_seal(w);
            correlate_drain_all(w->engine, CORRELATE_DRAIN_HANDOVER);
        }
        int left = kafka_producer_flush(w->producer, w->cfg.shutdown_timeout_ms);
        if (left)
            log_warn("correlation: %d records not acknowledged within %d ms; their offsets are "
                     "not committed (the copies will be read again)",
                     left, w->cfg.shutdown_timeout_ms);
        corr_advance(w);
    }
    w->closing = true;
    corr_metrics_refresh(w);
    kafka_txn_pair_free(w->txn, w->producer);
    w->txn = NULL;
    kafka_txn_pair_free(w->txn, w->producer);
    kafka_pair_close(&w->producer, &w->consumer, 0); /* commits the stored offsets */
    es = correlate_stats(w->engine);
    corr_stats_t st = corr_worker_stats(w);
    log_info("correlation: stopped: consumed %" PRIu64 ", correlated %" PRIu64 ", xDRs %" PRIu64
             " (complete %" PRIu64 ", timeout %" PRIu64 ", evicted %" PRIu64 ", revoked %" PRIu64
             "), acknowledged %" PRIu64 ", dead-lettered %" PRIu64 ", handed over %" PRIu64,
             st.consumed, st.correlated, st.xdrs, es.emitted[XDR_COMPLETE], es.emitted[XDR_TIMEOUT],
             es.emitted[XDR_EVICTED], es.emitted[XDR_REVOKED], st.xdrs_acked, st.dead_lettered,
             es.handed_over);
    return rc;
}

corr_stats_t corr_worker_stats(const corr_worker_t *w)
{
    corr_stats_t s = corr_counters(w);
    /* every member up to unacked is a total */
    _Static_assert(sizeof(corr_stats_t) == 11 * sizeof(uint64_t), "corr_stats_t: uint64_t only");
    worker_stats_since((uint64_t *)(void *)&s, (const uint64_t *)(const void *)&w->base,
                       WORKER_STATS_COUNTERS(corr_stats_t, unacked));
    s.unacked = w->unacked;
    s.uncommitted = (uint64_t)metrics_gauge_value(w->m.uncommitted);
    return s;
}

correlate_stats_t corr_worker_engine_stats(const corr_worker_t *w)
{
    return correlate_stats(w->engine);
}

int64_t corr_worker_set_timeout_us(corr_worker_t *w, int64_t timeout_us)
{
    if (timeout_us < 1000)
        timeout_us = 1000;
    if (timeout_us > w->engine_timeout_us)
        timeout_us = w->engine_timeout_us;
    w->timeout_us = timeout_us;
    return timeout_us;
}

bool corr_worker_exactly_once(const corr_worker_t *w, int *transaction_ms)
{
    if (transaction_ms)
        *transaction_ms = w->eos ? w->cfg.transaction_ms : 0;
    return w->eos;
}

int64_t corr_worker_timeout_us(const corr_worker_t *w)
{
    return w->timeout_us;
}

void corr_worker_set_subscriber(corr_worker_t *w, bool extract)
{
    w->hide_subscriber = !extract;
}

void corr_worker_free(corr_worker_t *w)
{
    if (!w)
        return;
    kafka_pair_close(&w->producer, &w->consumer, 0);
    correlate_free(w->engine);
    correlate_metrics_free(w->kpi);
    for (int i = 0; i < CORR_RING; i++)
        free(w->ring[i].marks);
    partitions_free(w->ledger);
    buf_free(&w->out);
    free(w);
}

int corr_worker_assigned(void *w)
{
    return kafka_consumer_assignment_size(((corr_worker_t *)w)->consumer);
}
