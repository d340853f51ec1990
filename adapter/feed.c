/* The delivery engine of one feed (see feed.h for the guarantees).
 *
 * Everything below runs on the feed's thread except feed_start/feed_stop/feed_get_stats.
 * Units of work are "deliveries": one encoded request/frame holding 1..batch_max messages.
 * They come from a preallocated pool, their encode buffers keep their capacity between uses
 * (no per-message malloc after warm-up), and the Kafka messages they hold are the consumed
 * rd_kafka_message_t themselves (zero copies of bodies except the one into the encoding). */
#include "feed.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/event_struct.h>

#include "codec.h"
#include "endpoint.h"
#include "filter.h"
#include "log.h"
#include "offset_tracker.h"
#include "tls.h"

#define FEED_MAX_PARTITIONS 4096
#define FEED_POLL_CHUNK 64
#define FEED_POLL_BUDGET 2048
#define FEED_KICK_MIN_MS 5   /* first fetch restart after the prefetch ran dry */
#define FEED_KICK_MAX_MS 800 /* below librdkafka's own 1 s re-check */
#define FEED_EXCERPT_MAX 256
#define FEED_PAUSE_AFTER_MS 1000

typedef enum dstate {
    D_FREE = 0,
    D_FILLING,
    D_WAITING,
    D_IN_FLIGHT,
    D_RETRY_WAIT,
    D_DLQ,
} dstate_t;

typedef struct feed_delivery feed_delivery_t;

typedef struct feed_msg {
    rd_kafka_message_t *rkm;
    feed_delivery_t *d;
    int32_t partition;
    uint32_t gen;
    uint64_t ticket;
    int64_t ts_us;
    bool dlq_done;
    bool dlq_failed;
} feed_msg_t;

struct feed_delivery {
    feed_t *f;
    dstate_t state;
    buf_t buf;
    encoding_batch_t batch;
    feed_msg_t *msgs;
    unsigned n;
    unsigned attempts;
    uint64_t first_ms;
    endpoint_t *ep;
    struct event timer;
    /* dead-lettering */
    unsigned dlq_next, dlq_outstanding;
    int dlq_status;
    char dlq_reason[400];
    char dlq_endpoint[600];
    uint8_t excerpt[FEED_EXCERPT_MAX];
    size_t excerpt_len;
    size_t buf_counted; /* buf.cap as counted in the feed's buf_inuse / buf_free_bytes */
    feed_delivery_t *next;
};

typedef struct feed_part {
    bool known, assigned;
    uint32_t gen;
    /* A rewind of this partition is outstanding: the next record wanted is `rewound`. Later
     * records of the same poll (already past the seek) are dropped, not taken: taking one
     * would put last_taken above the rewound record, which would then be refused (ORDER) and
     * rewound forever, or be skipped by a second seek further on. -1: none. */
    int64_t rewound;
    offset_tracker_t tr;
} feed_part_t;

typedef struct feed_ep_metrics {
    metrics_counter_t *sent, *acked, *retried, *failed, *bytes;
    metrics_gauge_t *in_flight, *up;
    atomic_bool is_up; /* read by other threads (heartbeats) */
    const char *url;
} feed_ep_metrics_t;

struct feed {
    feed_config_t *cfg;
    feed_runtime_t rt;
    char brokers[512];
    pthread_t thread;
    bool thread_started;
    struct event_base *base;
    int wake[2]; /* [0] read end watched by the loop; kafka io events + stop requests */
    struct event *wake_ev, *tick_ev, *poll_ev, *drain_ev, *lag_ev, *kick_ev;
    uint64_t kick_consumed; /* s_consumed when the kick was armed */
    uint32_t kick_ms;       /* next kick delay: doubles while kicks bring nothing */
    atomic_bool stop_requested;
    atomic_uint drain_ms;
    bool stopping, closing;
    uint64_t drain_deadline_ms;

    kafka_consumer_t *kc;
    kafka_producer_t *dlq;
    rd_kafka_queue_t *cq;
    SSL_CTX *ssl;
    filter_t *filter;
    endpoint_set_t *eps;
    feed_ep_metrics_t *epm; /* per endpoint */
    kafka_prop_t *props;    /* feed defaults + the operator's kafka.* settings */
    char prop_vals[6][24];  /* values of the budget-derived defaults in props */
    transport_header_t headers[TRANSPORT_MAX_HEADERS];

    feed_part_t *parts;
    size_t n_parts;

    feed_delivery_t *pool;
    size_t n_pool;
    feed_msg_t *msg_store;
    feed_delivery_t *free_list;
    feed_delivery_t *filling;
    feed_delivery_t *wait_head, *wait_tail;
    uint64_t pending;  /* messages held */
    uint64_t hard_max; /* never hold more than this */
    /* Memory held (feed_memory_plan): payload of held messages + buffers of deliveries in use
     * against held_bytes_max; buffers kept on the free list (for reuse without malloc) up to
     * bufs_free_max, beyond which a released delivery's buffer is freed. */
    uint64_t held_bytes, held_bytes_max;
    uint64_t buf_inuse, buf_free_bytes, bufs_free_max;
    unsigned n_assigned; /* partitions of the source topic assigned now */
    bool paused;
    bool repause;
    uint64_t full_since; /* when the feed became full (0: not full) */
    unsigned dlq_active; /* deliveries being dead-lettered */
    unsigned seed;

    /* metrics */
    metrics_counter_t *m_consumed, *m_filtered, *m_dead, *m_rewound;
    metrics_gauge_t *m_lag, *m_pending, *m_assigned;
    metrics_histogram_t *m_latency;
    /* stats for feed_get_stats (other threads read them) */
    atomic_uint_fast64_t s_consumed, s_filtered, s_sent, s_acked, s_retried, s_dead, s_pending;
    atomic_uint_fast64_t s_rewound; /* records given back to librdkafka (seek) */
    atomic_uint s_up;
    atomic_bool s_paused;
};

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int64_t now_wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

#define STAT_ADD(f, field, n) atomic_fetch_add_explicit(&(f)->field, (n), memory_order_relaxed)

static void feed_dispatch(feed_t *f, feed_delivery_t *d);
static void feed_drain_waiting(feed_t *f);
static void feed_dlq_continue(feed_t *f, feed_delivery_t *d);

/* ---- partitions and offsets ---- */

static feed_part_t *feed_part(feed_t *f, int32_t p, bool create)
{
    if (p < 0 || p >= FEED_MAX_PARTITIONS)
        return NULL;
    if ((size_t)p >= f->n_parts) {
        if (!create)
            return NULL;
        size_t nn = (size_t)p + 1;
        feed_part_t *np = realloc(f->parts, nn * sizeof *np);
        if (!np)
            return NULL;
        memset(np + f->n_parts, 0, (nn - f->n_parts) * sizeof *np);
        f->parts = np;
        f->n_parts = nn;
    }
    feed_part_t *fp = &f->parts[p];
    if (!fp->known) {
        if (!create)
            return NULL;
        if (offset_tracker_init(&fp->tr, (uint32_t)f->hard_max) != 0)
            return NULL;
        fp->known = true;
        fp->rewound = -1;
    }
    return fp;
}

static void feed_store(feed_t *f, int32_t partition, feed_part_t *fp)
{
    int64_t next;
    if (offset_tracker_advanced(&fp->tr, &next))
        kafka_consumer_store(f->kc, f->cfg->source_topic, partition, next);
}

/* A message is finished (acked, dead-lettered or abandoned at shutdown). */
static void feed_msg_finish(feed_t *f, feed_msg_t *m, bool done)
{
    if (done && !f->closing) {
        feed_part_t *fp = feed_part(f, m->partition, false);
        if (fp && fp->assigned && fp->gen == m->gen &&
            offset_tracker_done(&fp->tr, m->ticket) == OFFSET_TRACKER_OK)
            feed_store(f, m->partition, fp);
    }
    if (m->rkm)
        rd_kafka_message_destroy(m->rkm);
    m->rkm = NULL;
}

/* Flow control. When the feed holds max_pending messages it first just stops polling: the
 * messages wait in librdkafka's bounded prefetch queue, and polling resumes at half without
 * any refetch. Only when that lasts FEED_PAUSE_AFTER_MS (every endpoint full or down for a
 * while) are the partitions paused, so the loop can keep polling for rebalances and group
 * liveness without receiving messages. (Pausing at every short congestion would cost a
 * refetch and a fetch.wait.max.ms stall per cycle: pause drops the prefetched messages.) */
static void feed_update_pause(feed_t *f)
{
    if (f->closing)
        return;
    bool full = f->pending >= f->cfg->delivery.max_pending ||
                f->held_bytes + f->buf_inuse >= f->held_bytes_max || f->free_list == NULL;
    uint64_t now = full || f->full_since ? now_ms() : 0; /* called per ack: no clock if idle */
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

/* ---- deliveries ---- */

static feed_delivery_t *feed_delivery_alloc(feed_t *f)
{
    feed_delivery_t *d = f->free_list;
    if (!d)
        return NULL;
    f->free_list = d->next;
    d->next = NULL;
    f->buf_free_bytes -= d->buf_counted;
    f->buf_inuse += d->buf_counted;
    d->state = D_FILLING;
    d->n = 0;
    d->attempts = 0;
    d->first_ms = 0;
    d->ep = NULL;
    d->dlq_next = d->dlq_outstanding = 0;
    d->dlq_status = 0;
    d->dlq_reason[0] = d->dlq_endpoint[0] = 0;
    d->excerpt_len = 0;
    buf_reset(&d->buf);
    return d;
}

/* Brings the feed's count of in-use buffer bytes up to date with d's buffer (it grows while a
 * batch is encoded). */
static void feed_delivery_count_buf(feed_t *f, feed_delivery_t *d)
{
    f->buf_inuse += d->buf.cap - d->buf_counted;
    d->buf_counted = d->buf.cap;
}

static void feed_delivery_release(feed_t *f, feed_delivery_t *d, bool done)
{
    if (d->state == D_DLQ)
        f->dlq_active--;
    for (unsigned i = 0; i < d->n; i++) {
        if (d->msgs[i].rkm)
            f->held_bytes -= d->msgs[i].rkm->len;
        feed_msg_finish(f, &d->msgs[i], done);
    }
    f->pending -= d->n;
    d->n = 0;
    evtimer_del(&d->timer);
    feed_delivery_count_buf(f, d);
    f->buf_inuse -= d->buf_counted;
    if (f->buf_free_bytes + d->buf_counted > f->bufs_free_max) {
        buf_free(&d->buf); /* keeps the pool's idle memory bounded; the next use reallocates */
        d->buf_counted = 0;
    }
    f->buf_free_bytes += d->buf_counted;
    d->state = D_FREE;
    d->next = f->free_list;
    f->free_list = d;
}

static void feed_close_filling(feed_t *f)
{
    feed_delivery_t *d = f->filling;
    if (!d)
        return;
    f->filling = NULL;
    evtimer_del(&d->timer);
    if (f->cfg->encoding->end_batch(&d->batch) != ENCODING_OK || d->n == 0) {
        /* Nothing encoded: nothing to send (cannot happen with n > 0). */
        feed_delivery_release(f, d, true);
        return;
    }
    feed_delivery_count_buf(f, d);
    feed_dispatch(f, d);
}

static bool feed_try_send(feed_t *f, feed_delivery_t *d)
{
    endpoint_t *ep = endpoint_set_pick(f->eps);
    if (!ep)
        return false;
    const uint8_t *p = d->buf.data + d->batch.start;
    size_t len = d->buf.len - d->batch.start;
    if (endpoint_send(ep, p, len, d) != 0)
        return false;
    d->state = D_IN_FLIGHT;
    d->ep = ep;
    if (d->attempts++ == 0)
        d->first_ms = now_ms();
    feed_ep_metrics_t *em = endpoint_user(ep);
    metrics_counter_add(em->sent, d->n);
    metrics_counter_add(em->bytes, len);
    metrics_gauge_set(em->in_flight, endpoint_in_flight(ep));
    STAT_ADD(f, s_sent, d->n);
    return true;
}

static void feed_dispatch(feed_t *f, feed_delivery_t *d)
{
    d->state = D_WAITING;
    if (f->wait_head || !feed_try_send(f, d)) {
        if (d->state != D_WAITING)
            return;
        d->next = NULL;
        if (f->wait_tail)
            f->wait_tail->next = d;
        else
            f->wait_head = d;
        f->wait_tail = d;
        feed_update_pause(f);
    }
}

static void feed_drain_waiting(feed_t *f)
{
    while (f->wait_head) {
        feed_delivery_t *d = f->wait_head;
        if (!feed_try_send(f, d))
            break;
        f->wait_head = d->next;
        if (!f->wait_head)
            f->wait_tail = NULL;
        d->next = NULL;
    }
    feed_update_pause(f);
}

/* ---- dead-letter topic ---- */

static void feed_dead_letter(feed_t *f, feed_delivery_t *d, int status, const char *reason,
                             const char *endpoint, const uint8_t *excerpt, size_t excerpt_len)
{
    d->state = D_DLQ;
    f->dlq_active++;
    d->dlq_status = status;
    snprintf(d->dlq_reason, sizeof d->dlq_reason, "%s", reason);
    snprintf(d->dlq_endpoint, sizeof d->dlq_endpoint, "%s", endpoint ? endpoint : "");
    if (excerpt_len > FEED_EXCERPT_MAX)
        excerpt_len = FEED_EXCERPT_MAX;
    if (excerpt && excerpt_len)
        memcpy(d->excerpt, excerpt, excerpt_len);
    d->excerpt_len = excerpt ? excerpt_len : 0;
    d->dlq_next = 0;
    for (unsigned i = 0; i < d->n; i++) {
        d->msgs[i].dlq_done = false;
        d->msgs[i].dlq_failed = false;
    }
    log_warn("feed %s: %u message(s) to dead-letter topic %s: %s%s%s (status %d)", f->cfg->name,
             d->n, f->cfg->dlq_topic, reason, endpoint ? " endpoint " : "",
             endpoint ? endpoint : "", status);
    feed_dlq_continue(f, d);
}

static void feed_dlq_continue(feed_t *f, feed_delivery_t *d)
{
    while (d->dlq_next < d->n) {
        feed_msg_t *m = &d->msgs[d->dlq_next];
        if (m->dlq_done) {
            d->dlq_next++;
            continue;
        }
        rd_kafka_message_t *rkm = m->rkm;
        rd_kafka_headers_t *orig = NULL;
        rd_kafka_headers_t *h;
        if (rd_kafka_message_headers(rkm, &orig) == RD_KAFKA_RESP_ERR_NO_ERROR && orig)
            h = rd_kafka_headers_copy(orig);
        else
            h = rd_kafka_headers_new(8);
        char num[32], origin[400];
        rd_kafka_header_add(h, "@dlq-reason", -1, d->dlq_reason, -1);
        snprintf(num, sizeof num, "%d", d->dlq_status);
        rd_kafka_header_add(h, "@dlq-status", -1, num, -1);
        rd_kafka_header_add(h, "@dlq-feed", -1, f->cfg->name, -1);
        if (d->dlq_endpoint[0])
            rd_kafka_header_add(h, "@dlq-endpoint", -1, d->dlq_endpoint, -1);
        if (d->excerpt_len)
            rd_kafka_header_add(h, "@dlq-body-excerpt", -1, d->excerpt, (ssize_t)d->excerpt_len);
        snprintf(origin, sizeof origin, "%s/%" PRId32 "/%" PRId64, rd_kafka_topic_name(rkm->rkt),
                 rkm->partition, rkm->offset);
        rd_kafka_header_add(h, "@dlq-origin", -1, origin, -1);
        snprintf(num, sizeof num, "%" PRId64, now_wall_us());
        rd_kafka_header_add(h, "@dlq-timestamp-us", -1, num, -1);
        rd_kafka_resp_err_t kerr = 0;
        kafka_produce_result_t r =
            kafka_produce(f->dlq, f->cfg->dlq_topic, RD_KAFKA_PARTITION_UA, rkm->key, rkm->key_len,
                          rkm->payload, rkm->len, h, KAFKA_VALUE_BORROW, m, &kerr);
        if (r != KAFKA_PRODUCE_OK) {
            rd_kafka_headers_destroy(h);
            if (r == KAFKA_PRODUCE_ERROR)
                log_error("feed %s: cannot produce to dead-letter topic %s (%s/%" PRId32 "/%" PRId64
                          "): %s; retrying in 1 s",
                          f->cfg->name, f->cfg->dlq_topic, rd_kafka_topic_name(rkm->rkt),
                          rkm->partition, rkm->offset, rd_kafka_err2str(kerr));
            struct timeval tv = {r == KAFKA_PRODUCE_ERROR ? 1 : 0, 100000};
            evtimer_add(&d->timer, &tv);
            return;
        }
        d->dlq_outstanding++;
        d->dlq_next++;
    }
}

static void feed_on_dlq_delivery(void *owner, void *opaque, const rd_kafka_message_t *rkm)
{
    feed_t *f = owner;
    feed_msg_t *m = opaque;
    feed_delivery_t *d = m->d;
    d->dlq_outstanding--;
    if (f->closing)
        return;
    if (rkm->err) {
        log_error("feed %s: dead-letter produce to %s failed: %s; retrying", f->cfg->name,
                  f->cfg->dlq_topic, rd_kafka_err2str(rkm->err));
        m->dlq_failed = true;
    } else {
        m->dlq_done = true;
        metrics_counter_inc(f->m_dead);
        STAT_ADD(f, s_dead, 1);
    }
    if (d->dlq_outstanding > 0 || d->dlq_next < d->n)
        return;
    bool all = true;
    for (unsigned i = 0; i < d->n; i++)
        all &= d->msgs[i].dlq_done;
    if (all) {
        feed_delivery_release(f, d, true);
        feed_drain_waiting(f);
        return;
    }
    d->dlq_next = 0;
    struct timeval tv = {1, 0};
    evtimer_add(&d->timer, &tv);
}

/* ---- endpoint events ---- */

static void feed_on_ack(void *owner, endpoint_t *ep, void *cookie, int status)
{
    feed_t *f = owner;
    feed_delivery_t *d = cookie;
    if (f->closing)
        return;
    feed_ep_metrics_t *em = endpoint_user(ep);
    metrics_counter_add(em->acked, d->n);
    metrics_gauge_set(em->in_flight, endpoint_in_flight(ep));
    STAT_ADD(f, s_acked, d->n);
    int64_t now = now_wall_us();
    for (unsigned i = 0; i < d->n; i++)
        if (d->msgs[i].ts_us > 0 && now >= d->msgs[i].ts_us)
            metrics_histogram_observe(f->m_latency, (double)(now - d->msgs[i].ts_us) / 1e6);
    feed_delivery_release(f, d, true);
    feed_drain_waiting(f);
}

static void feed_on_fail(void *owner, endpoint_t *ep, void *cookie, const transport_failure_t *fl)
{
    feed_t *f = owner;
    feed_delivery_t *d = cookie;
    if (f->closing)
        return;
    feed_ep_metrics_t *em = endpoint_user(ep);
    metrics_counter_add(em->failed, d->n);
    metrics_gauge_set(em->in_flight, endpoint_in_flight(ep));
    if (!fl->retryable) {
        feed_dead_letter(f, d, fl->status, fl->reason, endpoint_name(ep), fl->body, fl->body_len);
        return;
    }
    uint64_t elapsed = now_ms() - d->first_ms;
    if (elapsed >= f->cfg->delivery.retry_max_ms) {
        char why[400];
        snprintf(why, sizeof why, "retries exhausted after %u attempts in %" PRIu64 " ms: %s",
                 d->attempts, elapsed, fl->reason);
        feed_dead_letter(f, d, fl->status, why, endpoint_name(ep), fl->body, fl->body_len);
        return;
    }
    metrics_counter_add(em->retried, d->n);
    STAT_ADD(f, s_retried, d->n);
    uint32_t delay = fl->retry_after_ms;
    if (!delay)
        delay = endpoint_backoff_ms(f->cfg->delivery.retry_initial_ms,
                                    f->cfg->delivery.retry_backoff_max_ms, d->attempts, &f->seed);
    uint64_t left = f->cfg->delivery.retry_max_ms - elapsed;
    if (delay > left)
        delay = (uint32_t)left;
    if (d->attempts == 1 || d->attempts % 10 == 0)
        log_info("feed %s: retrying %u message(s) in %u ms (attempt %u): %s", f->cfg->name, d->n,
                 delay, d->attempts + 1, fl->reason);
    d->state = D_RETRY_WAIT;
    d->ep = NULL;
    struct timeval tv = {delay / 1000, (delay % 1000) * 1000};
    evtimer_add(&d->timer, &tv);
}

static void feed_on_capacity(void *owner)
{
    feed_t *f = owner;
    if (!f->closing)
        feed_drain_waiting(f);
}

static void feed_on_state(void *owner, endpoint_t *ep, bool up)
{
    feed_t *f = owner;
    feed_ep_metrics_t *em = endpoint_user(ep);
    metrics_gauge_set(em->up, up ? 1 : 0);
    atomic_store_explicit(&em->is_up, up, memory_order_relaxed);
    if (f->rt.events && !f->closing) {
        char res[800];
        snprintf(res, sizeof res, "%s/%s", f->cfg->name, em->url);
        if (up)
            events_alarm_clear(f->rt.events, "endpoint-down", res);
        else
            events_alarm_raise(f->rt.events, "endpoint-down", res, EVENTS_MAJOR,
                               "endpoint connection lost; reconnecting with backoff");
    }
    atomic_store_explicit(&f->s_up, endpoint_set_up_count(f->eps), memory_order_relaxed);
}

static const endpoint_events_t FEED_EP_EVENTS = {feed_on_ack, feed_on_fail, feed_on_capacity,
                                                 feed_on_state};

/* The delivery's timer: batch deadline, retry, or DLQ produce retry. */
static void feed_delivery_timer(evutil_socket_t fd, short what, void *arg)
{
    feed_delivery_t *d = arg;
    feed_t *f = d->f;
    if (f->closing)
        return;
    switch (d->state) {
    case D_FILLING:
        if (f->filling == d)
            feed_close_filling(f);
        break;
    case D_RETRY_WAIT:
        feed_dispatch(f, d);
        break;
    case D_DLQ:
        feed_dlq_continue(f, d);
        break;
    default:
        break;
    }
}

/* ---- consuming ---- */

static void feed_on_rebalance(void *owner, kafka_rebalance_kind_t kind,
                              const rd_kafka_topic_partition_list_t *parts)
{
    feed_t *f = owner;
    for (int i = 0; i < parts->cnt; i++) {
        const rd_kafka_topic_partition_t *tp = &parts->elems[i];
        if (strcmp(tp->topic, f->cfg->source_topic))
            continue;
        feed_part_t *fp = feed_part(f, tp->partition, true);
        if (!fp) {
            log_error("feed %s: cannot track partition %s/%" PRId32, f->cfg->name, tp->topic,
                      tp->partition);
            continue;
        }
        fp->gen++;
        fp->rewound = -1;
        offset_tracker_reset(&fp->tr);
        bool now_assigned = kind == KAFKA_REBALANCE_ASSIGNED;
        if (now_assigned != fp->assigned)
            f->n_assigned = now_assigned ? f->n_assigned + 1 : f->n_assigned - 1;
        fp->assigned = now_assigned;
    }
    metrics_gauge_set(f->m_assigned, (double)f->n_assigned);
    log_info("feed %s: %d partition(s) of %s %s", f->cfg->name, parts->cnt, f->cfg->source_topic,
             kind == KAFKA_REBALANCE_ASSIGNED  ? "assigned"
             : kind == KAFKA_REBALANCE_REVOKED ? "revoked (pending acks dropped)"
                                               : "lost (pending acks dropped)");
    if (kind == KAFKA_REBALANCE_ASSIGNED && f->paused)
        f->repause = true;
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
        fp->rewound = -1; /* no seek: dropping what follows would stall the partition */
    } else {
        fp->rewound = rkm->offset;
        STAT_ADD(f, s_rewound, 1);
        metrics_counter_inc(f->m_rewound);
    }
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_message_destroy(rkm);
}

static void feed_take(feed_t *f, rd_kafka_message_t *rkm)
{
    feed_part_t *fp = feed_part(f, rkm->partition, false);
    if (!fp || !fp->assigned) {
        rd_kafka_message_destroy(rkm);
        return;
    }
    if (fp->rewound >= 0) {
        if (rkm->offset > fp->rewound) {
            /* Behind an outstanding rewind: fetched again after the seek. */
            rd_kafka_message_destroy(rkm);
            return;
        }
        fp->rewound = -1; /* the rewound record is back (or an earlier position was sought) */
    }
    if (rkm->offset <= fp->tr.last_taken) {
        /* Already taken (held or done): a refetch after a seek to a position behind it. Taking
         * it again is impossible (the tracker wants increasing offsets) and rewinding to it
         * would loop forever; the held copy is the one delivered. */
        log_debug("feed %s: skipping %s/%" PRId32 "/%" PRId64 ", already taken", f->cfg->name,
                  f->cfg->source_topic, rkm->partition, rkm->offset);
        rd_kafka_message_destroy(rkm);
        return;
    }
    STAT_ADD(f, s_consumed, 1);
    metrics_counter_inc(f->m_consumed);
    codec_msg_t m;
    codec_error_t cerr;
    codec_reason_t cr = codec_decode(&m, rkm, &cerr);
    if (cr == CODEC_OK && f->filter) {
        int rule;
        if (filter_eval(f->filter, &m, &rule) == FILTER_DROP) {
            offset_tracker_skip(&fp->tr, rkm->offset);
            feed_store(f, rkm->partition, fp);
            metrics_counter_inc(f->m_filtered);
            STAT_ADD(f, s_filtered, 1);
            rd_kafka_message_destroy(rkm);
            return;
        }
    }
    if (f->pending >= f->hard_max || !f->free_list) {
        feed_rewind(f, fp, rkm);
        f->repause = true;
        return;
    }
    uint64_t ticket;
    offset_tracker_rc_t trc = offset_tracker_take(&fp->tr, rkm->offset, &ticket);
    if (trc != OFFSET_TRACKER_OK) {
        log_warn("feed %s: offset tracker refused %s/%" PRId32 "/%" PRId64 " (%d); rewinding",
                 f->cfg->name, f->cfg->source_topic, rkm->partition, rkm->offset, (int)trc);
        feed_rewind(f, fp, rkm);
        f->repause = true;
        return;
    }
    f->pending++;
    f->held_bytes += rkm->len;
    feed_msg_t fm = {.rkm = rkm,
                     .partition = rkm->partition,
                     .gen = fp->gen,
                     .ticket = ticket,
                     .ts_us = cr == CODEC_OK ? m.timestamp_us : 0};
    if (cr != CODEC_OK) {
        /* MAIN holds validated copies; anything else is still never dropped silently. */
        feed_delivery_t *d = feed_delivery_alloc(f);
        fm.d = d;
        d->msgs[d->n++] = fm;
        char why[300];
        snprintf(why, sizeof why, "undecodable copy: %s: %s (%s)", codec_reason_name(cr),
                 cerr.field, cerr.detail);
        feed_dead_letter(f, d, 0, why, NULL, NULL, 0);
        return;
    }
    const encoding_t *enc = f->cfg->encoding;
    for (int attempt = 0; attempt < 2; attempt++) {
        feed_delivery_t *d = f->filling;
        if (!d) {
            d = feed_delivery_alloc(f);
            if (!d)
                break; /* checked above; unreachable */
            enc->begin_batch(&d->batch, &d->buf, f->cfg->delivery.batch_max);
            f->filling = d;
            if (f->cfg->delivery.batch_max > 1 && f->cfg->delivery.batch_ms > 0) {
                uint32_t bm = f->cfg->delivery.batch_ms;
                struct timeval tv = {bm / 1000, (bm % 1000) * 1000};
                evtimer_add(&d->timer, &tv);
            }
        }
        encoding_result_t r = enc->add(&d->batch, &m);
        if (r == ENCODING_OK) {
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
        /* Too big for an empty request: it can never be sent. */
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
        feed_dead_letter(f, d, 0, "message too big for one request (delivery.max_request_bytes)",
                         NULL, NULL, 0);
        return;
    }
}

/* librdkafka 2.0 stops fetching a partition whose prefetch queue is full and looks at it
 * again only when its broker thread wakes up: on network or op activity, else after up to a
 * second. Catching up a backlog with a small prefetch would run in bursts of one queue per
 * second. So when the feed finds the queue empty while the cached high watermark says there
 * is more, it seeks (asynchronously) the partitions to their current positions: the seek op
 * wakes the broker thread, which fetches again. Nothing is skipped (the position is the next
 * record the feed has not taken; anything fetched meanwhile is dropped by the seek's version
 * and fetched again), and the delay doubles while kicks bring nothing, so a slow broker is
 * never flooded with restarted fetches. */
static void feed_kick_cb(evutil_socket_t fd, short what, void *arg)
{
    feed_t *f = arg;
    if (f->stopping || f->closing || f->paused || f->full_since ||
        atomic_load_explicit(&f->s_consumed, memory_order_relaxed) != f->kick_consumed)
        return;
    rd_kafka_t *rk = kafka_consumer_handle(f->kc);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);
    for (size_t p = 0; p < f->n_parts; p++)
        if (f->parts[p].assigned)
            rd_kafka_topic_partition_list_add(l, f->cfg->source_topic, (int32_t)p);
    rd_kafka_topic_partition_list_t *seek = rd_kafka_topic_partition_list_new(8);
    if (l->cnt > 0 && rd_kafka_position(rk, l) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        for (int i = 0; i < l->cnt; i++) {
            int64_t lo, hi;
            if (l->elems[i].offset < 0 ||
                rd_kafka_get_watermark_offsets(rk, f->cfg->source_topic, l->elems[i].partition, &lo,
                                               &hi) != RD_KAFKA_RESP_ERR_NO_ERROR ||
                hi <= l->elems[i].offset)
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
    }
    rd_kafka_topic_partition_list_destroy(seek);
    rd_kafka_topic_partition_list_destroy(l);
}

static void feed_arm_kick(feed_t *f)
{
    if (f->paused || f->full_since || f->n_assigned == 0 || evtimer_pending(f->kick_ev, NULL))
        return;
    f->kick_consumed = atomic_load_explicit(&f->s_consumed, memory_order_relaxed);
    struct timeval tv = {f->kick_ms / 1000, (f->kick_ms % 1000) * 1000};
    evtimer_add(f->kick_ev, &tv);
}

static void feed_poll(feed_t *f)
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
            if (budget == FEED_POLL_BUDGET)
                feed_arm_kick(f);
            break;
        }
        f->kick_ms = FEED_KICK_MIN_MS;
        for (size_t i = 0; i < n; i++)
            feed_take(f, msgs[i]);
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

static void feed_poll_cb(evutil_socket_t fd, short what, void *arg)
{
    feed_poll(arg);
}

static void feed_finish(feed_t *f)
{
    event_base_loopbreak(f->base);
}

static void feed_drain_check(evutil_socket_t fd, short what, void *arg)
{
    feed_t *f = arg;
    /* With no endpoint up and nothing being dead-lettered, nothing more can complete:
     * waiting for the deadline would only delay the stop (what is held is consumed again). */
    bool stuck = endpoint_set_up_count(f->eps) == 0 && f->dlq_active == 0;
    if (f->pending == 0 || stuck || now_ms() >= f->drain_deadline_ms) {
        if (f->pending)
            log_warn("feed %s: stopping with %" PRIu64
                     " unacknowledged message(s); they are not committed and will be "
                     "consumed again",
                     f->cfg->name, f->pending);
        feed_finish(f);
    }
}

static void feed_wake_cb(evutil_socket_t fd, short what, void *arg)
{
    feed_t *f = arg;
    char b[256];
    while (read(fd, b, sizeof b) > 0)
        ;
    if (atomic_load(&f->stop_requested) && !f->stopping) {
        f->stopping = true;
        if (f->filling)
            feed_close_filling(f);
        feed_update_pause(f);
        f->drain_deadline_ms = now_ms() + atomic_load(&f->drain_ms);
        struct timeval tv = {0, 20000};
        event_add(f->drain_ev, &tv);
        feed_drain_check(-1, 0, f);
        return;
    }
    feed_poll(f);
}

static void feed_tick_cb(evutil_socket_t fd, short what, void *arg)
{
    feed_t *f = arg;
    kafka_producer_poll(f->dlq, 0);
    feed_poll(f);
}

static double feed_lag(feed_t *f)
{
    rd_kafka_t *rk = kafka_consumer_handle(f->kc);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);
    for (size_t p = 0; p < f->n_parts; p++)
        if (f->parts[p].assigned)
            rd_kafka_topic_partition_list_add(l, f->cfg->source_topic, (int32_t)p);
    double lag = 0;
    if (l->cnt > 0 && rd_kafka_position(rk, l) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        for (int i = 0; i < l->cnt; i++) {
            int64_t lo, hi;
            if (rd_kafka_get_watermark_offsets(rk, f->cfg->source_topic, l->elems[i].partition, &lo,
                                               &hi) != RD_KAFKA_RESP_ERR_NO_ERROR ||
                hi < 0)
                continue;
            int64_t pos = l->elems[i].offset >= 0 ? l->elems[i].offset : lo;
            if (hi > pos)
                lag += (double)(hi - pos);
        }
    }
    rd_kafka_topic_partition_list_destroy(l);
    return lag + (double)f->pending;
}

static void feed_lag_cb(evutil_socket_t fd, short what, void *arg)
{
    feed_t *f = arg;
    metrics_gauge_set(f->m_lag, feed_lag(f));
}

/* ---- thread ---- */

static void *feed_thread(void *arg)
{
    feed_t *f = arg;
    char tn[16];
    snprintf(tn, sizeof tn, "feed-%.10s", f->cfg->name);
    pthread_setname_np(pthread_self(), tn);
    endpoint_set_start(f->eps);
    event_base_dispatch(f->base);

    /* Shutdown: nothing is reported to the engine any more; what is held is not committed. */
    f->closing = true;
    for (size_t i = 0; f->rt.events && i < f->cfg->n_endpoints; i++) {
        char res[800];
        snprintf(res, sizeof res, "%s/%s", f->cfg->name, f->epm[i].url);
        events_alarm_clear(f->rt.events, "endpoint-down", res); /* the feed is gone */
    }
    endpoint_set_free(f->eps);
    f->eps = NULL;
    kafka_producer_close(f->dlq, 5000);
    f->dlq = NULL;
    if (f->cq) {
        rd_kafka_queue_io_event_enable(f->cq, -1, NULL, 0);
        rd_kafka_queue_destroy(f->cq);
        f->cq = NULL;
    }
    for (size_t i = 0; i < f->n_pool; i++)
        for (unsigned j = 0; j < f->pool[i].n; j++)
            feed_msg_finish(f, &f->pool[i].msgs[j], false);
    kafka_consumer_close(f->kc); /* commits the stored low-water marks */
    f->kc = NULL;
    return NULL;
}

/* ---- metrics ---- */

static void feed_metrics_init(feed_t *f)
{
    metrics_registry_t *r = f->rt.metrics;
    const char *n = f->cfg->name;
    metrics_family_t *fc = metrics_counter_new(r, "ndd_adapter_consumed_messages_total",
                                               "Copies read from the feed's source topic", "feed");
    metrics_family_t *ff =
        metrics_counter_new(r, "ndd_adapter_filtered_messages_total",
                            "Copies dropped by the feed's egress filter", "feed");
    metrics_family_t *fd =
        metrics_counter_new(r, "ndd_adapter_dead_lettered_messages_total",
                            "Copies written to the feed's dead-letter topic", "feed");
    metrics_family_t *fw = metrics_counter_new(
        r, "ndd_adapter_rewound_messages_total",
        "Copies given back because the feed was full (sought again, consumed again)", "feed");
    metrics_family_t *fl = metrics_gauge_new(
        r, "ndd_adapter_consumer_lag_messages",
        "Messages of the source topic not yet delivered by the feed (fetch lag + pending)", "feed");
    metrics_family_t *fp = metrics_gauge_new(r, "ndd_adapter_pending_messages",
                                             "Messages held by the feed (batching, in flight, "
                                             "retrying, dead-lettering)",
                                             "feed");
    metrics_family_t *fa = metrics_gauge_new(
        r, "ndd_adapter_assigned_partitions",
        "Partitions of the source topic this process consumes for the feed now", "feed");
    metrics_family_t *fh = metrics_histogram_new(
        r, "ndd_adapter_e2e_latency_seconds",
        "From the copy's @timestamp-us to the endpoint's acknowledgement", "feed",
        metrics_latency_buckets_seconds, metrics_latency_buckets_seconds_n);
    f->m_consumed = fc ? metrics_counter_labels(fc, n) : NULL;
    f->m_filtered = ff ? metrics_counter_labels(ff, n) : NULL;
    f->m_dead = fd ? metrics_counter_labels(fd, n) : NULL;
    f->m_rewound = fw ? metrics_counter_labels(fw, n) : NULL;
    f->m_lag = fl ? metrics_gauge_labels(fl, n) : NULL;
    f->m_pending = fp ? metrics_gauge_labels(fp, n) : NULL;
    f->m_assigned = fa ? metrics_gauge_labels(fa, n) : NULL;
    if (f->m_assigned)
        metrics_gauge_set(f->m_assigned, 0);
    f->m_latency = fh ? metrics_histogram_labels(fh, n) : NULL;

    metrics_family_t *es =
        metrics_counter_new(r, "ndd_adapter_sent_messages_total",
                            "Messages handed to an endpoint (each attempt)", "feed,endpoint");
    metrics_family_t *ea =
        metrics_counter_new(r, "ndd_adapter_acked_messages_total",
                            "Messages acknowledged by an endpoint", "feed,endpoint");
    metrics_family_t *er =
        metrics_counter_new(r, "ndd_adapter_retried_messages_total",
                            "Messages scheduled for another attempt", "feed,endpoint");
    metrics_family_t *ef = metrics_counter_new(r, "ndd_adapter_failed_messages_total",
                                               "Messages whose attempt failed", "feed,endpoint");
    metrics_family_t *eb = metrics_counter_new(
        r, "ndd_adapter_sent_bytes_total", "Encoded bytes handed to an endpoint", "feed,endpoint");
    metrics_family_t *ei =
        metrics_gauge_new(r, "ndd_adapter_in_flight_requests",
                          "Requests or frames awaiting acknowledgement", "feed,endpoint");
    metrics_family_t *eu = metrics_gauge_new(r, "ndd_adapter_endpoint_up",
                                             "1 while the endpoint is connected", "feed,endpoint");
    for (size_t i = 0; i < f->cfg->n_endpoints; i++) {
        const char *e = f->cfg->endpoints[i].url;
        feed_ep_metrics_t *m = &f->epm[i];
        m->sent = es ? metrics_counter_labels(es, n, e) : NULL;
        m->acked = ea ? metrics_counter_labels(ea, n, e) : NULL;
        m->retried = er ? metrics_counter_labels(er, n, e) : NULL;
        m->failed = ef ? metrics_counter_labels(ef, n, e) : NULL;
        m->bytes = eb ? metrics_counter_labels(eb, n, e) : NULL;
        m->url = e;
        m->in_flight = ei ? metrics_gauge_labels(ei, n, e) : NULL;
        m->up = eu ? metrics_gauge_labels(eu, n, e) : NULL;
        if (m->up)
            metrics_gauge_set(m->up, 0);
    }
}

static void feed_metrics_remove(feed_t *f)
{
    static const char *const names[] = {"ndd_adapter_consumed_messages_total",
                                        "ndd_adapter_filtered_messages_total",
                                        "ndd_adapter_dead_lettered_messages_total",
                                        "ndd_adapter_consumer_lag_messages",
                                        "ndd_adapter_pending_messages",
                                        "ndd_adapter_assigned_partitions",
                                        "ndd_adapter_rewound_messages_total",
                                        "ndd_adapter_sent_messages_total",
                                        "ndd_adapter_acked_messages_total",
                                        "ndd_adapter_retried_messages_total",
                                        "ndd_adapter_failed_messages_total",
                                        "ndd_adapter_sent_bytes_total",
                                        "ndd_adapter_in_flight_requests",
                                        "ndd_adapter_endpoint_up"};
    metrics_registry_t *r = f->rt.metrics;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        /* Re-declaring with the same shape returns the existing family. */
        metrics_family_t *fam = NULL;
        bool ep = i >= 7; /* the per-endpoint families come last */
        if (strstr(names[i], "_total"))
            fam = metrics_counter_new(r, names[i], "", ep ? "feed,endpoint" : "feed");
        else
            fam = metrics_gauge_new(r, names[i], "", ep ? "feed,endpoint" : "feed");
        if (fam)
            metrics_family_remove_matching(fam, "feed", f->cfg->name);
    }
    metrics_family_t *fh =
        metrics_histogram_new(r, "ndd_adapter_e2e_latency_seconds", "", "feed",
                              metrics_latency_buckets_seconds, metrics_latency_buckets_seconds_n);
    if (fh)
        metrics_family_remove_matching(fh, "feed", f->cfg->name);
}

/* ---- lifecycle ---- */

enum { FEED_PROP_BOTH = 0, FEED_PROP_CONSUMER, FEED_PROP_PRODUCER };

/* Which client a librdkafka property belongs to (by name; anything unknown goes to both). */
static int feed_prop_kind(const char *k)
{
    static const char *const consumer[] = {"queued.",
                                           "session.timeout",
                                           "heartbeat.",
                                           "auto.commit",
                                           "auto.offset",
                                           "enable.auto",
                                           "fetch.",
                                           "max.poll",
                                           "group.",
                                           "partition.assignment",
                                           "isolation.level",
                                           "check.crcs",
                                           "enable.partition.eof",
                                           "max.partition.fetch",
                                           "offset.",
                                           "coordinator.",
                                           NULL};
    static const char *const producer[] = {"queue.buffering.",
                                           "linger.",
                                           "batch.",
                                           "acks",
                                           "enable.idempotence",
                                           "message.timeout",
                                           "compression.",
                                           "retries",
                                           "retry.",
                                           "delivery.",
                                           "request.required.acks",
                                           "partitioner",
                                           "sticky.partitioning",
                                           "transaction",
                                           NULL};
    for (size_t i = 0; consumer[i]; i++)
        if (!strncmp(k, consumer[i], strlen(consumer[i])))
            return FEED_PROP_CONSUMER;
    for (size_t i = 0; producer[i]; i++)
        if (!strncmp(k, producer[i], strlen(producer[i])))
            return FEED_PROP_PRODUCER;
    return FEED_PROP_BOTH;
}

static void feed_free(feed_t *f)
{
    if (!f)
        return;
    if (f->eps) {
        f->closing = true;
        endpoint_set_free(f->eps);
    }
    if (f->dlq)
        kafka_producer_close(f->dlq, 1000);
    if (f->pool) {
        for (size_t i = 0; i < f->n_pool; i++) {
            for (unsigned j = 0; j < f->pool[i].n; j++)
                if (f->pool[i].msgs[j].rkm)
                    rd_kafka_message_destroy(f->pool[i].msgs[j].rkm);
            evtimer_del(&f->pool[i].timer);
            buf_free(&f->pool[i].buf);
        }
    }
    if (f->cq)
        rd_kafka_queue_destroy(f->cq);
    if (f->kc)
        kafka_consumer_close(f->kc);
    free(f->pool);
    free(f->msg_store);
    for (size_t p = 0; p < f->n_parts; p++)
        if (f->parts[p].known)
            offset_tracker_free(&f->parts[p].tr);
    free(f->parts);
    filter_release(f->filter);
    if (f->ssl)
        tls_ctx_free(f->ssl);
    struct event *evs[] = {f->wake_ev, f->tick_ev, f->poll_ev, f->drain_ev, f->lag_ev, f->kick_ev};
    for (size_t i = 0; i < 6; i++)
        if (evs[i])
            event_free(evs[i]);
    if (f->wake[0] > 0)
        close(f->wake[0]);
    if (f->wake[1] > 0)
        close(f->wake[1]);
    if (f->base)
        event_base_free(f->base);
    if (f->cfg && f->rt.metrics)
        feed_metrics_remove(f);
    free(f->epm);
    free(f->props);
    feed_config_free(f->cfg);
    free(f);
}

void feed_memory_plan(unsigned mb, feed_memory_plan_t *out)
{
    /* The budget B: half for what the feed holds (payload of the messages being batched, in
     * flight or retried, each pinning its librdkafka fetch buffer, plus their encoded
     * requests), an eighth for one fetch response, a sixteenth for the prefetch of each
     * partition (three partitions: 3/16), a sixteenth (at least 1 MiB) for the DLQ producer's
     * queue (only used while dead-lettering), an eighth for idle request buffers kept for reuse (so
     * that steady traffic reuses them instead of a malloc and free per request). */
    uint64_t b = (uint64_t)(mb ? mb : 6) << 20;
    uint64_t s16 = b / 16 < (64u << 10) ? (64u << 10) : b / 16;
    if (s16 > (128u << 20))
        s16 = 128u << 20; /* librdkafka caps fetch.max.bytes and receive buffers */
    /* librdkafka refuses fetch.max.bytes below message.max.bytes (1,000,000 by default). */
    uint64_t fetch = 2 * s16 < (1u << 20) ? (1u << 20) : 2 * s16;
    out->fetch_max_bytes = (unsigned)fetch;
    out->partition_fetch_bytes = (unsigned)s16;
    out->receive_max_bytes = (unsigned)(fetch + (512u << 10));
    out->queued_max_kbytes = (unsigned)(s16 >> 10);
    /* Tiny messages cost librdkafka ~200 bytes of bookkeeping each: bound the count too. */
    out->queued_min_messages = (unsigned)(s16 / 256);
    out->dlq_buffer_kbytes = (unsigned)((b / 16) >> 10) < 1024 ? 1024 : (unsigned)((b / 16) >> 10);
    out->held_bytes_max = b / 2;
    out->idle_buffer_bytes = b / 8;
}

feed_t *feed_start(feed_config_t *cfg, const feed_runtime_t *rt, char *err, size_t errlen)
{
    feed_t *f = calloc(1, sizeof *f);
    if (!f) {
        feed_config_free(cfg);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    f->cfg = cfg;
    f->rt = *rt;
    if (!f->rt.metrics)
        f->rt.metrics = metrics_default_registry();
    snprintf(f->brokers, sizeof f->brokers, "%s", rt->brokers ? rt->brokers : "");
    f->rt.brokers = f->brokers;
    f->seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)f;
    f->wake[0] = f->wake[1] = -1;
    const feed_delivery_config_t *dc = &cfg->delivery;
    f->hard_max = (uint64_t)dc->max_pending * 2;
    char e2[400];

    f->epm = calloc(cfg->n_endpoints, sizeof *f->epm);
    f->base = event_base_new();
    if (!f->epm || !f->base || pipe2(f->wake, O_NONBLOCK | O_CLOEXEC) != 0) {
        snprintf(err, errlen, "feed %s: cannot create its event loop", cfg->name);
        goto fail;
    }
    feed_metrics_init(f);
    if (cfg->filter_json) {
        f->filter = filter_compile(cfg->filter_json, e2, sizeof e2);
        if (!f->filter) {
            snprintf(err, errlen, "feed %s: filter: %s", cfg->name, e2);
            goto fail;
        }
    }
    bool need_tls = false;
    for (size_t i = 0; i < cfg->n_endpoints; i++)
        need_tls |= cfg->endpoints[i].u.tls;
    if (need_tls) {
        tls_config_t tc = {.ca_file = cfg->ca_file[0] ? cfg->ca_file : NULL,
                           .cert_file = cfg->cert_file[0] ? cfg->cert_file : NULL,
                           .key_file = cfg->key_file[0] ? cfg->key_file : NULL,
                           .key_password_file =
                               cfg->key_password_file[0] ? cfg->key_password_file : NULL,
                           .insecure_no_verify = !cfg->verify,
                           .alpn = cfg->transport == TRANSPORT_HTTP2 ? "h2" : NULL};
        f->ssl = tls_client_ctx_new(&tc, e2, sizeof e2);
        if (!f->ssl) {
            snprintf(err, errlen, "feed %s: TLS: %s", cfg->name, e2);
            goto fail;
        }
        if (!cfg->verify)
            log_warn("feed %s: TLS peer verification is OFF (tls.verify=false)", cfg->name);
    }

    /* Deliveries: enough for hard_max single-message requests or fewer batches. */
    size_t nb = dc->batch_max;
    f->n_pool = (size_t)(f->hard_max / nb) + 64;
    if (f->n_pool > f->hard_max + 64)
        f->n_pool = f->hard_max + 64;
    f->pool = calloc(f->n_pool, sizeof *f->pool);
    f->msg_store = calloc(f->n_pool * nb, sizeof *f->msg_store);
    if (!f->pool || !f->msg_store) {
        snprintf(err, errlen, "feed %s: out of memory for %zu deliveries", cfg->name, f->n_pool);
        goto fail;
    }
    for (size_t i = f->n_pool; i-- > 0;) {
        feed_delivery_t *d = &f->pool[i];
        d->f = f;
        d->msgs = &f->msg_store[i * nb];
        buf_init(&d->buf, 0, dc->max_request_bytes);
        evtimer_assign(&d->timer, f->base, feed_delivery_timer, d);
        d->next = f->free_list;
        f->free_list = d;
    }

    endpoint_opts_t eo = {.backoff_initial_ms = dc->backoff_initial_ms,
                          .backoff_max_ms = dc->backoff_max_ms,
                          .fail_threshold = dc->fail_threshold};
    f->eps = endpoint_set_new(f->base, &eo, &FEED_EP_EVENTS, f);
    if (!f->eps) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < cfg->n_headers; i++) {
        f->headers[i].name = cfg->header_names[i];
        f->headers[i].value = cfg->header_values[i];
    }
    for (size_t i = 0; i < cfg->n_endpoints; i++) {
        feed_endpoint_config_t *ec = &cfg->endpoints[i];
        transport_config_t tc = {.kind = cfg->transport,
                                 .feed = cfg->name,
                                 .endpoint = ec->url,
                                 .host = ec->u.host,
                                 .port = ec->u.port,
                                 .use_tls = ec->u.tls,
                                 .ssl_ctx = f->ssl,
                                 .sni = cfg->sni[0] ? cfg->sni : NULL,
                                 .max_in_flight = dc->max_in_flight,
                                 .timeout_ms = dc->timeout_ms,
                                 .connect_timeout_ms = dc->timeout_ms,
                                 .out_buf_max = 1u << 20,
                                 .path = cfg->path[0] ? cfg->path : ec->u.path,
                                 .method = cfg->method,
                                 .content_type = cfg->encoding->content_type,
                                 .n_headers = cfg->n_headers,
                                 .fire_and_forget = dc->fire_and_forget};
        memcpy(tc.headers, f->headers, sizeof tc.headers);
        endpoint_t *ep = endpoint_set_add(f->eps, &tc, ec->weight, e2, sizeof e2);
        if (!ep) {
            snprintf(err, errlen, "feed %s: endpoint %s: %s", cfg->name, ec->url, e2);
            goto fail;
        }
        endpoint_set_user(ep, &f->epm[i]);
    }

    /* Feed defaults first, the operator's kafka.* settings after them (they win): librdkafka's
     * own defaults (64 MiB prefetch per partition, 50 MiB fetches, 100 MiB receive buffers)
     * would let one feed grow past what ten may use; the budget sizes them all. */
    feed_memory_plan_t mp;
    feed_memory_plan(dc->memory_mb ? dc->memory_mb : rt->feed_memory_mb, &mp);
    f->held_bytes_max = mp.held_bytes_max;
    f->bufs_free_max = mp.idle_buffer_bytes;
    snprintf(f->prop_vals[0], sizeof f->prop_vals[0], "%u", mp.queued_max_kbytes);
    snprintf(f->prop_vals[1], sizeof f->prop_vals[1], "%u", mp.queued_min_messages);
    snprintf(f->prop_vals[2], sizeof f->prop_vals[2], "%u", mp.fetch_max_bytes);
    snprintf(f->prop_vals[3], sizeof f->prop_vals[3], "%u", mp.partition_fetch_bytes);
    snprintf(f->prop_vals[4], sizeof f->prop_vals[4], "%u", mp.receive_max_bytes);
    snprintf(f->prop_vals[5], sizeof f->prop_vals[5], "%u", mp.dlq_buffer_kbytes);
    enum { NDEF = 7 };
    size_t nprops = rt->n_kafka_props + NDEF;
    f->props = calloc(nprops, sizeof *f->props);
    if (!f->props) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    f->props[0] = (kafka_prop_t){"queued.max.messages.kbytes", f->prop_vals[0]};
    f->props[1] = (kafka_prop_t){"queued.min.messages", f->prop_vals[1]};
    f->props[2] = (kafka_prop_t){"fetch.max.bytes", f->prop_vals[2]};
    f->props[3] = (kafka_prop_t){"max.partition.fetch.bytes", f->prop_vals[3]};
    f->props[4] = (kafka_prop_t){"receive.message.max.bytes", f->prop_vals[4]};
    f->props[5] = (kafka_prop_t){"queue.buffering.max.kbytes", f->prop_vals[5]};
    /* librdkafka 2.0 backs a partition's fetcher off for fetch.error.backoff.ms (500 ms) when
     * its prefetch queue is full; with a small queue that is a stall per refill. */
    f->props[6] = (kafka_prop_t){"fetch.error.backoff.ms", "10"};
    for (size_t i = 0; i < rt->n_kafka_props; i++)
        f->props[i + NDEF] = rt->kafka_props[i];
    kafka_prop_t consumer_props[256], producer_props[256];
    size_t ncp = 0, npp = 0;
    for (size_t i = 0; i < nprops && ncp < 256 && npp < 256; i++) {
        /* Each client gets its own kind of property only (no CONFWARN noise). */
        int kind = feed_prop_kind(f->props[i].key);
        if (kind != FEED_PROP_PRODUCER)
            consumer_props[ncp++] = f->props[i];
        if (kind != FEED_PROP_CONSUMER)
            producer_props[npp++] = f->props[i];
    }
    kafka_producer_opts_t po = {.brokers = f->brokers,
                                .client_id = "ndd-adapter-dlq",
                                .props = producer_props,
                                .n_props = npp,
                                .on_delivery = feed_on_dlq_delivery,
                                .owner = f};
    f->dlq = kafka_producer_new(&po, e2, sizeof e2);
    if (!f->dlq) {
        snprintf(err, errlen, "feed %s: dead-letter producer: %s", cfg->name, e2);
        goto fail;
    }
    const char *topics[1] = {cfg->source_topic};
    kafka_consumer_opts_t co = {.brokers = f->brokers,
                                .group_id = cfg->group_id,
                                .client_id = "ndd-adapter",
                                .topics = topics,
                                .n_topics = 1,
                                .cooperative = false,
                                .props = consumer_props,
                                .n_props = ncp,
                                .on_rebalance = feed_on_rebalance,
                                .owner = f};
    f->kc = kafka_consumer_new(&co, e2, sizeof e2);
    if (!f->kc) {
        snprintf(err, errlen, "feed %s: consumer: %s", cfg->name, e2);
        goto fail;
    }
    /* Wake the loop when the consumer queue becomes non-empty (edge): we then poll it dry. */
    f->cq = rd_kafka_queue_get_consumer(kafka_consumer_handle(f->kc));
    if (f->cq)
        rd_kafka_queue_io_event_enable(f->cq, f->wake[1], "k", 1);

    f->wake_ev = event_new(f->base, f->wake[0], EV_READ | EV_PERSIST, feed_wake_cb, f);
    f->tick_ev = event_new(f->base, -1, EV_PERSIST, feed_tick_cb, f);
    f->poll_ev = event_new(f->base, -1, 0, feed_poll_cb, f);
    f->drain_ev = event_new(f->base, -1, EV_PERSIST, feed_drain_check, f);
    f->lag_ev = event_new(f->base, -1, EV_PERSIST, feed_lag_cb, f);
    f->kick_ev = evtimer_new(f->base, feed_kick_cb, f);
    f->kick_ms = FEED_KICK_MIN_MS;
    if (!f->wake_ev || !f->tick_ev || !f->poll_ev || !f->drain_ev || !f->lag_ev || !f->kick_ev) {
        snprintf(err, errlen, "feed %s: out of memory", cfg->name);
        goto fail;
    }
    event_add(f->wake_ev, NULL);
    struct timeval tick = {0, 50000}, lag = {2, 0};
    event_add(f->tick_ev, &tick);
    event_add(f->lag_ev, &lag);
    if (pthread_create(&f->thread, NULL, feed_thread, f) != 0) {
        snprintf(err, errlen, "feed %s: cannot start its thread", cfg->name);
        goto fail;
    }
    f->thread_started = true;
    log_info("feed %s: started (group %s, topic %s, %zu endpoint(s), %s over %s, DLQ %s)",
             cfg->name, cfg->group_id, cfg->source_topic, cfg->n_endpoints, cfg->encoding->name,
             transport_kind_name(cfg->transport), cfg->dlq_topic);
    return f;
fail:
    feed_free(f);
    return NULL;
}

void feed_stop(feed_t *f, uint32_t drain_ms)
{
    if (!f)
        return;
    if (f->thread_started) {
        atomic_store(&f->drain_ms, drain_ms);
        atomic_store(&f->stop_requested, true);
        char c = 's';
        if (write(f->wake[1], &c, 1) < 0 && errno != EAGAIN)
            log_error("feed %s: cannot wake its thread: %s", f->cfg->name, strerror(errno));
        pthread_join(f->thread, NULL);
    }
    log_info("feed %s: stopped", f->cfg->name);
    feed_free(f);
}

const feed_config_t *feed_get_config(const feed_t *f)
{
    return f->cfg;
}

void feed_get_stats(const feed_t *f, feed_stats_t *o)
{
    feed_t *m = (feed_t *)f;
    o->consumed = atomic_load_explicit(&m->s_consumed, memory_order_relaxed);
    o->filtered = atomic_load_explicit(&m->s_filtered, memory_order_relaxed);
    o->sent = atomic_load_explicit(&m->s_sent, memory_order_relaxed);
    o->acked = atomic_load_explicit(&m->s_acked, memory_order_relaxed);
    o->retried = atomic_load_explicit(&m->s_retried, memory_order_relaxed);
    o->dead_lettered = atomic_load_explicit(&m->s_dead, memory_order_relaxed);
    o->rewound = atomic_load_explicit(&m->s_rewound, memory_order_relaxed);
    o->pending = atomic_load_explicit(&m->s_pending, memory_order_relaxed);
    o->endpoints_up = atomic_load_explicit(&m->s_up, memory_order_relaxed);
    o->paused = atomic_load_explicit(&m->s_paused, memory_order_relaxed);
}

bool feed_endpoint_state(const feed_t *f, size_t i, const char **url, bool *up)
{
    if (i >= f->cfg->n_endpoints)
        return false;
    *url = f->cfg->endpoints[i].url;
    *up = atomic_load_explicit(&f->epm[i].is_up, memory_order_relaxed);
    return true;
}
