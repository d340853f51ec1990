/* The delivery side of a feed. Units of work are "deliveries": one encoded request/frame
 * holding 1..batch_max messages. They come from a preallocated pool, their encode buffers keep
 * their capacity between uses (no per-message malloc after warm-up), and the Kafka messages
 * they hold are the consumed rd_kafka_message_t themselves (zero copies of bodies except the
 * one into the encoding). Here: the pool, closing batches, dispatch to the endpoints in order,
 * acknowledgements, failures and retries with backoff (dead-lettering is feed_dlq.c). */
#include "feed-int.h"

#include <inttypes.h>
#include <stdio.h>

#include "log.h"

static void feed_dispatch(feed_t *f, feed_delivery_t *d);

/* ---- deliveries ---- */

feed_delivery_t *feed_delivery_alloc(feed_t *f)
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

void feed_delivery_release(feed_t *f, feed_delivery_t *d, bool done)
{
    if (d->state == D_DLQ)
        f->dlq_active--;
    for (unsigned i = 0; i < d->n; i++) {
        if (d->msgs[i].rkm)
            f->held_bytes -= d->msgs[i].rkm->len;
        feed_msg_finish(f, &d->msgs[i], done);
    }
    if (done && !f->closing && d->n > 0 && !f->store_due) {
        f->store_due = true; /* stored after this loop turn's other acks (feed_store_cb) */
        event_active(f->store_ev, 0, 0);
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

void feed_close_filling(feed_t *f)
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
    f->batch_hint = d->buf.len;
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
        d->first_ms = (uint64_t)mono_now_ms();
    feed_ep_metrics_t *em = endpoint_user(ep);
    metrics_counter_add(em->sent, d->n);
    metrics_counter_add(em->bytes, len);
    metrics_gauge_set(em->in_flight, endpoint_in_flight(ep));
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

void feed_drain_waiting(feed_t *f)
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
    uint64_t elapsed = (uint64_t)mono_now_ms() - d->first_ms;
    if (elapsed >= f->cfg->delivery.retry_max_ms) {
        char why[400];
        snprintf(why, sizeof why, "retries exhausted after %u attempts in %" PRIu64 " ms: %s",
                 d->attempts, elapsed, fl->reason);
        feed_dead_letter(f, d, fl->status, why, endpoint_name(ep), fl->body, fl->body_len);
        return;
    }
    metrics_counter_add(em->retried, d->n);
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

static void feed_on_state(void *owner, endpoint_t *ep, bool up, const char *reason)
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
        else /* the transport's own words: a refused connection, a full disk and its space */
            events_alarm_raise(f->rt.events, "endpoint-down", res, EVENTS_MAJOR,
                               reason && *reason ? reason : "endpoint down; retrying with backoff");
    }
    atomic_store_explicit(&f->s_up, endpoint_set_up_count(f->eps), memory_order_relaxed);
}

const endpoint_events_t feed_endpoint_events = {feed_on_ack, feed_on_fail, feed_on_capacity,
                                                feed_on_state};

void feed_delivery_timer(evutil_socket_t fd, short what, void *arg)
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
