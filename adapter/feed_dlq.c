/* Dead-lettering: a delivery that cannot be delivered (refused by the endpoint, retries
 * exhausted, undecodable, too big) goes to the feed's DLQ topic message by message, each the
 * original record plus @dlq-* headers saying why; its offsets are committable only once Kafka
 * acknowledged every DLQ record (docs/adapter.md). */
#include "feed-int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

/* ---- dead-letter topic ---- */

void feed_dead_letter(feed_t *f, feed_delivery_t *d, int status, const char *reason,
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

void feed_dlq_continue(feed_t *f, feed_delivery_t *d)
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

void feed_on_dlq_delivery(void *owner, void *opaque, const rd_kafka_message_t *rkm)
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
