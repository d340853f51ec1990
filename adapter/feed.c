/* One feed's lifecycle (see feed.h for the guarantees): feed_start builds its clients,
 * endpoints, pool of deliveries and event loop and starts its thread; feed_stop drains and
 * joins it. Everything else runs on the feed's thread: the Kafka side is feed_consume.c, the
 * delivery side feed_delivery.c and feed_dlq.c, metrics feed_metrics.c (feed-int.h). */
#include "feed-int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "log.h"
#include "tls.h"

/* ---- the loop ---- */

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
    if (f->pending == 0 || stuck || (uint64_t)mono_now_ms() >= f->drain_deadline_ms) {
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
        f->drain_deadline_ms = (uint64_t)mono_now_ms() + atomic_load(&f->drain_ms);
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

/* The source positions of a delivery's records (a transport's cookie is its delivery). */
static size_t feed_cookie_positions(void *cookie, transport_pos_t *out, size_t max)
{
    const feed_delivery_t *d = cookie;
    size_t n = 0;
    for (unsigned i = 0; i < d->n && n < max; i++)
        if (d->msgs[i].rkm)
            out[n++] = (transport_pos_t){d->msgs[i].partition, d->msgs[i].rkm->offset};
    return n;
}

/* The i-th source record of a delivery (the kafka transport's pass-through: key, headers). */
static const rd_kafka_message_t *feed_cookie_record(void *cookie, size_t i)
{
    const feed_delivery_t *d = cookie;
    return i < d->n ? d->msgs[i].rkm : NULL;
}

/* ---- thread ---- */

static void *feed_thread(void *arg)
{
    feed_t *f = arg;
    char tn[16];
    snprintf(tn, sizeof tn, "feed-%.10s", f->cfg->name);
    pthread_setname_np(pthread_self(), tn);
    const encoding_t *enc = f->cfg->encoding;
    char eerr[300];
    if (enc->thread_start &&
        enc->thread_start(f->cfg->encoding_options, f->cfg->name, f->rt.metrics, eerr, sizeof eerr))
        log_error("feed %s: encoding %s: %s (defaults used)", f->cfg->name, enc->name, eerr);
    endpoint_set_start(f->eps);
    event_base_dispatch(f->base);
    /* The loop may have ended with this turn's store still queued (store_ev). */
    if (!f->txn_owned)
        partitions_store(f->ledger, f->kc, f->cfg->source_topic);

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
    if (enc->thread_stop)
        enc->thread_stop();
    return NULL;
}

/* ---- lifecycle ---- */

/* The consumer got a new librdkafka handle after a fatal error (kafka_consumer_rebuild): the
 * wake-up queue of the old one is released before it goes, and the new one's watched. */
static void feed_on_consumer_rebuild(void *owner, kafka_consumer_t *c, kafka_rebuild_phase_t phase)
{
    feed_t *f = owner;
    if (phase == KAFKA_REBUILD_BEFORE) {
        if (f->cq) {
            rd_kafka_queue_io_event_enable(f->cq, -1, NULL, 0);
            rd_kafka_queue_destroy(f->cq);
            f->cq = NULL;
        }
        return;
    }
    f->cq = rd_kafka_queue_get_consumer(kafka_consumer_handle(c));
    if (f->cq)
        rd_kafka_queue_io_event_enable(f->cq, f->wake[1], "k", 1);
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
    partitions_free(f->ledger);
    filter_release(f->filter);
    if (f->ssl)
        tls_ctx_free(f->ssl);
    struct event *evs[] = {f->wake_ev, f->tick_ev, f->poll_ev, f->drain_ev,
                           f->lag_ev,  f->kick_ev, f->store_ev};
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
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
     * requests), a quarter for librdkafka's prefetch queue (one queue for all partitions of
     * the group consumer), an eighth for one fetch response, a sixteenth (at least 1 MiB) for
     * the DLQ producer's queue (only used while dead-lettering) and a sixteenth for idle
     * request buffers kept for reuse (so steady traffic reuses them instead of a malloc and
     * free per request).
     * The prefetch holds two fetch responses: librdkafka 2.0 stops fetching once the queue
     * reaches its bound and looks again only up to a second later, so with a queue smaller
     * than one response every response stopped the fetcher (measured: a feed drained a
     * backlog at ~6,300 copies/s with a 384 KiB queue under 1 MiB responses, 23,000-29,000
     * with this split, for +3.5 MiB of RSS; docs/adapter.md). */
    uint64_t b = (uint64_t)(mb ? mb : 5) << 20;
    uint64_t fetch = b / 8 < (64u << 10) ? (64u << 10) : b / 8;
    if (fetch > (64u << 20))
        fetch = 64u << 20; /* librdkafka caps fetch.max.bytes and receive buffers */
    uint64_t part = fetch / 2;
    out->fetch_max_bytes = (unsigned)fetch;
    /* librdkafka refuses fetch.max.bytes below message.max.bytes (the consumer's own, which
     * bounds nothing else it does: its requests are small). */
    out->message_max_bytes = (unsigned)fetch;
    out->partition_fetch_bytes = (unsigned)part;
    /* The broker returns at least one whole record batch, whatever fetch.max.bytes says, and
     * a producer's batch may reach the topic's max.message.bytes (1,000,012 by default): a
     * smaller receive buffer would refuse such a response and stall the feed. */
    out->receive_max_bytes = (unsigned)((fetch < 1048576 ? 1048576 : fetch) + (512u << 10));
    out->queued_max_kbytes = (unsigned)((2 * fetch) >> 10);
    /* Tiny messages cost librdkafka ~200 bytes of bookkeeping each: bound the count too. */
    out->queued_min_messages = (unsigned)((2 * fetch) / 256);
    out->dlq_buffer_kbytes = (unsigned)((b / 16) >> 10) < 1024 ? 1024 : (unsigned)((b / 16) >> 10);
    out->held_bytes_max = b / 2;
    out->idle_buffer_bytes = b / 16;
}

/* Each feed_open_* step below writes its error to err and returns false; feed_start then
 * frees everything built so far in one place (feed_free), so no step cleans up after itself. */

static bool feed_open_loop(feed_t *f, char *err, size_t errlen)
{
    f->epm = calloc(f->cfg->n_endpoints, sizeof *f->epm);
    f->base = event_base_new();
    if (!f->epm || !f->base || pipe2(f->wake, O_NONBLOCK | O_CLOEXEC) != 0) {
        snprintf(err, errlen, "feed %s: cannot create its event loop", f->cfg->name);
        return false;
    }
    return true;
}

static bool feed_open_filter(feed_t *f, char *err, size_t errlen)
{
    const feed_config_t *cfg = f->cfg;
    if (!cfg->filter_json)
        return true;
    char e2[400];
    f->filter = filter_compile(cfg->filter_json, e2, sizeof e2);
    if (!f->filter) {
        snprintf(err, errlen, "feed %s: filter: %s", cfg->name, e2);
        return false;
    }
    return true;
}

/* One client context for all of the feed's TLS endpoints. */
static bool feed_open_tls(feed_t *f, char *err, size_t errlen)
{
    const feed_config_t *cfg = f->cfg;
    bool need_tls = false;
    for (size_t i = 0; i < cfg->n_endpoints; i++)
        need_tls |= cfg->endpoints[i].u.tls;
    if (!need_tls)
        return true;
    tls_config_t tc = {.ca_file = cfg->ca_file[0] ? cfg->ca_file : NULL,
                       .cert_file = cfg->cert_file[0] ? cfg->cert_file : NULL,
                       .key_file = cfg->key_file[0] ? cfg->key_file : NULL,
                       .key_password_file =
                           cfg->key_password_file[0] ? cfg->key_password_file : NULL,
                       .insecure_no_verify = !cfg->verify,
                       .alpn = cfg->transport->alpn};
    char e2[400];
    f->ssl = tls_client_ctx_new(&tc, e2, sizeof e2);
    if (!f->ssl) {
        snprintf(err, errlen, "feed %s: TLS: %s", cfg->name, e2);
        return false;
    }
    if (!cfg->verify)
        log_warn("feed %s: TLS peer verification is OFF (tls.verify=false)", cfg->name);
    return true;
}

/* Deliveries: enough for hard_max single-message requests or fewer batches, all allocated
 * here so that taking a record never allocates one. */
static bool feed_open_pool(feed_t *f, char *err, size_t errlen)
{
    const feed_delivery_config_t *dc = &f->cfg->delivery;
    size_t nb = dc->batch_max;
    f->n_pool = (size_t)(f->hard_max / nb) + 64;
    if (f->n_pool > f->hard_max + 64)
        f->n_pool = f->hard_max + 64;
    f->pool = calloc(f->n_pool, sizeof *f->pool);
    f->msg_store = calloc(f->n_pool * nb, sizeof *f->msg_store);
    f->ledger = partitions_new((uint32_t)f->hard_max, FEED_MAX_PARTITIONS, sizeof(feed_part_t));
    if (!f->pool || !f->msg_store || !f->ledger) {
        snprintf(err, errlen, "feed %s: out of memory for %zu deliveries", f->cfg->name, f->n_pool);
        return false;
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
    return true;
}

/* A transport that can deliver exactly once does, unless the feed turns it off; it then needs
 * a transactional id and the consumer as its source (before the endpoints are added). */
static void feed_open_exactly_once(feed_t *f)
{
    const feed_config_t *cfg = f->cfg;
    bool eo_capable = cfg->transport->exactly_once;
    if (eo_capable && cfg->n_endpoints == 1 &&
        !json_is_false(json_object_get(cfg->transport_options, "exactly_once"))) {
        /* One transactional producer per feed and instance (the offsets of one consumer go
         * into one producer's transactions): a restarted instance fences its predecessor. */
        char member[512];
        const char *id = kafka_group_instance_id(member, sizeof member, f->rt.instance,
                                                 "ndd-adapter", cfg->name, NULL, f->rt.http_port);
        char host[256] = "localhost";
        if (!id && gethostname(host, sizeof host - 1) != 0)
            snprintf(host, sizeof host, "localhost");
        host[sizeof host - 1] = 0;
        if (id)
            snprintf(f->txn_id, sizeof f->txn_id, "ndd-feed.%s", id);
        else /* no stable instance: unique, so two processes never fence each other */
            snprintf(f->txn_id, sizeof f->txn_id, "ndd-feed.%.200s.%.250s.%d", cfg->name, host,
                     (int)getpid());
        feed_source_init(f);
    } else if (eo_capable && cfg->n_endpoints > 1) {
        log_warn("feed %s: %zu %s endpoints: at-least-once (exactly once takes one)", cfg->name,
                 cfg->n_endpoints, cfg->transport->name);
    }
    if (eo_capable)
        atomic_store(&f->s_kafka_mode, 0);
}

static bool feed_open_endpoint(feed_t *f, size_t i, char *err, size_t errlen)
{
    const feed_config_t *cfg = f->cfg;
    const feed_delivery_config_t *dc = &cfg->delivery;
    const feed_endpoint_config_t *ec = &cfg->endpoints[i];
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
                             .encoding = cfg->encoding,
                             .n_headers = cfg->n_headers,
                             .fire_and_forget = dc->fire_and_forget,
                             .options = cfg->transport_options,
                             .positions = feed_cookie_positions,
                             .record = feed_cookie_record,
                             .metrics = f->rt.metrics,
                             .source = f->src.ctx ? &f->src : NULL};
    memcpy(tc.headers, f->headers, sizeof tc.headers);
    char e2[400];
    endpoint_t *ep = endpoint_set_add(f->eps, &tc, ec->weight, e2, sizeof e2);
    if (!ep) {
        snprintf(err, errlen, "feed %s: endpoint %s: %s", cfg->name, ec->url, e2);
        return false;
    }
    endpoint_set_user(ep, &f->epm[i]);
    return true;
}

static bool feed_open_endpoints(feed_t *f, char *err, size_t errlen)
{
    const feed_config_t *cfg = f->cfg;
    const feed_delivery_config_t *dc = &cfg->delivery;
    endpoint_opts_t eo = {.backoff_initial_ms = dc->backoff_initial_ms,
                          .backoff_max_ms = dc->backoff_max_ms,
                          .fail_threshold = dc->fail_threshold};
    f->eps = endpoint_set_new(f->base, &eo, &feed_endpoint_events, f);
    if (!f->eps) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    for (size_t i = 0; i < cfg->n_headers; i++) {
        f->headers[i].name = cfg->header_names[i];
        f->headers[i].value = cfg->header_values[i];
    }
    atomic_init(&f->s_kafka_mode, -1);
    feed_open_exactly_once(f);
    for (size_t i = 0; i < cfg->n_endpoints; i++)
        if (!feed_open_endpoint(f, i, err, errlen))
            return false;
    return true;
}

/* f->props: the budget-derived defaults, then the operator's kafka.* settings; bounded so that
 * each client's share of them is an array on the stack (feed_open_kafka). */
enum { FEED_KAFKA_DEFAULT_PROPS = 10, FEED_KAFKA_PROPS_MAX = 256 };

/* Feed defaults first, the operator's kafka.* settings after them (they win): librdkafka's
 * own defaults (64 MiB prefetch per partition, 50 MiB fetches, 100 MiB receive buffers) would
 * let one feed grow past what ten may use; the budget sizes them all. */
static bool feed_plan_kafka_props(feed_t *f, size_t *nprops_out, char *err, size_t errlen)
{
    feed_memory_plan_t mp;
    unsigned mb = f->cfg->delivery.memory_mb;
    feed_memory_plan(mb ? mb : f->rt.feed_memory_mb, &mp);
    f->held_bytes_max = mp.held_bytes_max;
    f->bufs_free_max = mp.idle_buffer_bytes;
    f->prefetch_bytes = (uint64_t)mp.queued_max_kbytes << 10;
    f->prefetch_msgs = mp.queued_min_messages;
    snprintf(f->prop_vals[0], sizeof f->prop_vals[0], "%u", mp.queued_max_kbytes);
    snprintf(f->prop_vals[1], sizeof f->prop_vals[1], "%u", mp.queued_min_messages);
    snprintf(f->prop_vals[2], sizeof f->prop_vals[2], "%u", mp.fetch_max_bytes);
    snprintf(f->prop_vals[3], sizeof f->prop_vals[3], "%u", mp.partition_fetch_bytes);
    snprintf(f->prop_vals[4], sizeof f->prop_vals[4], "%u", mp.receive_max_bytes);
    snprintf(f->prop_vals[5], sizeof f->prop_vals[5], "%u", mp.dlq_buffer_kbytes);
    snprintf(f->prop_vals[6], sizeof f->prop_vals[6], "%u", mp.message_max_bytes);
    size_t nprops = f->rt.n_kafka_props + FEED_KAFKA_DEFAULT_PROPS;
    f->props = calloc(nprops, sizeof *f->props);
    if (!f->props) {
        snprintf(err, errlen, "out of memory");
        return false;
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
    /* Generic in librdkafka, but only the consumer's may be this small (DLQ records are not). */
    f->props[7] = (kafka_prop_t){"consumer.message.max.bytes", f->prop_vals[6]};
    /* A fetch answered at the first byte brought one to three copies at 1,000 copies/s: a
     * wake-up of the broker thread and of the feed per copy or two, which made a copy cost
     * ~70 us of CPU there against ~9 us on a backlog. Waiting for 64 KiB or 10 ms (as the
     * aggregation does) halves that at 1,000/s (~14,000 -> ~25,000 copies per CPU-second) and
     * adds at most 10 ms to a copy's trip at low rates; at 8,000/s 64 KiB come in ~2.5 ms.
     * An operator's --kafka.fetch.* comes after these and wins. */
    f->props[8] = (kafka_prop_t){"fetch.min.bytes", "65536"};
    f->props[9] = (kafka_prop_t){"fetch.wait.max.ms", "10"};
    for (size_t i = 0; i < f->rt.n_kafka_props; i++)
        f->props[i + FEED_KAFKA_DEFAULT_PROPS] = f->rt.kafka_props[i];
    if (nprops > FEED_KAFKA_PROPS_MAX) {
        snprintf(err, errlen, "feed %s: more than %d kafka properties", f->cfg->name,
                 FEED_KAFKA_PROPS_MAX - FEED_KAFKA_DEFAULT_PROPS);
        return false;
    }
    *nprops_out = nprops;
    return true;
}

static bool feed_open_dlq_producer(feed_t *f, const kafka_prop_t *props, size_t n_props, char *err,
                                   size_t errlen)
{
    kafka_producer_opts_t po = {.brokers = f->brokers,
                                .client_id = "ndd-adapter-dlq",
                                .props = props,
                                .n_props = n_props,
                                .on_delivery = feed_on_dlq_delivery,
                                .owner = f};
    char e2[400];
    f->dlq = kafka_producer_new(&po, e2, sizeof e2);
    if (!f->dlq) {
        snprintf(err, errlen, "feed %s: dead-letter producer: %s", f->cfg->name, e2);
        return false;
    }
    return true;
}

static bool feed_open_consumer(feed_t *f, const kafka_prop_t *props, size_t n_props, char *err,
                               size_t errlen)
{
    const feed_config_t *cfg = f->cfg;
    const char *topics[1] = {cfg->source_topic};
    char member[512]; /* carries a hash of the source topic (kafka_group_instance_id) */
    kafka_consumer_opts_t co = {
        .brokers = f->brokers,
        .group_id = cfg->group_id,
        .client_id = "ndd-adapter",
        .topics = topics,
        .n_topics = 1,
        .cooperative = false,
        .instance_id = kafka_group_instance_id(member, sizeof member, f->rt.instance, "ndd-adapter",
                                               cfg->name, cfg->source_topic, f->rt.http_port),
        .props = props,
        .n_props = n_props,
        .on_rebalance = feed_on_rebalance,
        .on_rebuild = feed_on_consumer_rebuild,
        .owner = f};
    char e2[400];
    f->kc = kafka_consumer_new(&co, e2, sizeof e2);
    if (!f->kc) {
        snprintf(err, errlen, "feed %s: consumer: %s", cfg->name, e2);
        return false;
    }
    /* Wake the loop when the consumer queue becomes non-empty (edge): we then poll it dry. */
    f->cq = rd_kafka_queue_get_consumer(kafka_consumer_handle(f->kc));
    if (f->cq)
        rd_kafka_queue_io_event_enable(f->cq, f->wake[1], "k", 1);
    return true;
}

static bool feed_open_kafka(feed_t *f, char *err, size_t errlen)
{
    size_t nprops;
    if (!feed_plan_kafka_props(f, &nprops, err, errlen))
        return false;
    /* Each client gets its own kind of property only (no CONFWARN noise, no refusal). */
    kafka_prop_t consumer_props[FEED_KAFKA_PROPS_MAX], producer_props[FEED_KAFKA_PROPS_MAX];
    size_t ncp = kafka_props_split(f->props, nprops, KAFKA_CLIENT_CONSUMER, consumer_props);
    size_t npp = kafka_props_split(f->props, nprops, KAFKA_CLIENT_PRODUCER, producer_props);
    return feed_open_dlq_producer(f, producer_props, npp, err, errlen) &&
           feed_open_consumer(f, consumer_props, ncp, err, errlen);
}

static bool feed_open_events(feed_t *f, char *err, size_t errlen)
{
    f->wake_ev = event_new(f->base, f->wake[0], EV_READ | EV_PERSIST, feed_wake_cb, f);
    f->tick_ev = event_new(f->base, -1, EV_PERSIST, feed_tick_cb, f);
    f->poll_ev = event_new(f->base, -1, 0, feed_poll_cb, f);
    f->drain_ev = event_new(f->base, -1, EV_PERSIST, feed_drain_check, f);
    f->lag_ev = event_new(f->base, -1, EV_PERSIST, feed_lag_cb, f);
    f->kick_ev = evtimer_new(f->base, feed_kick_cb, f);
    f->store_ev = event_new(f->base, -1, 0, feed_store_cb, f);
    f->kick_ms = FEED_KICK_MIN_MS;
    if (!f->wake_ev || !f->tick_ev || !f->poll_ev || !f->drain_ev || !f->lag_ev || !f->kick_ev ||
        !f->store_ev) {
        snprintf(err, errlen, "feed %s: out of memory", f->cfg->name);
        return false;
    }
    event_add(f->wake_ev, NULL);
    struct timeval tick = {0, 50000}, lag = {2, 0};
    event_add(f->tick_ev, &tick);
    event_add(f->lag_ev, &lag);
    return true;
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
    f->hard_max = (uint64_t)cfg->delivery.max_pending * 2;

    if (!feed_open_loop(f, err, errlen))
        goto fail;
    feed_metrics_init(f);
    if (!feed_open_filter(f, err, errlen) || !feed_open_tls(f, err, errlen) ||
        !feed_open_pool(f, err, errlen) || !feed_open_endpoints(f, err, errlen) ||
        !feed_open_kafka(f, err, errlen) || !feed_open_events(f, err, errlen))
        goto fail;
    if (pthread_create(&f->thread, NULL, feed_thread, f) != 0) {
        snprintf(err, errlen, "feed %s: cannot start its thread", cfg->name);
        goto fail;
    }
    f->thread_started = true;
    log_info("feed %s: started (group %s, topic %s, %zu endpoint(s), %s over %s, DLQ %s)",
             cfg->name, cfg->group_id, cfg->source_topic, cfg->n_endpoints, cfg->encoding->name,
             cfg->transport->name, cfg->dlq_topic);
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
    o->consumed = metrics_counter_get(m->m_consumed);
    o->filtered = metrics_counter_get(m->m_filtered);
    o->dead_lettered = metrics_counter_get(m->m_dead);
    o->rewound = metrics_counter_get(m->m_rewound);
    o->sent = o->acked = o->retried = 0;
    for (size_t e = 0; e < f->cfg->n_endpoints; e++) {
        /* Two endpoints on one host:port share their series: count each series once. */
        size_t k = 0;
        while (k < e && m->epm[k].sent != m->epm[e].sent)
            k++;
        if (k < e)
            continue;
        o->sent += metrics_counter_get(m->epm[e].sent);
        o->acked += metrics_counter_get(m->epm[e].acked);
        o->retried += metrics_counter_get(m->epm[e].retried);
    }
    o->pending = atomic_load_explicit(&m->s_pending, memory_order_relaxed);
    o->endpoints_up = atomic_load_explicit(&m->s_up, memory_order_relaxed);
    o->paused = atomic_load_explicit(&m->s_paused, memory_order_relaxed);
    o->kafka_exactly_once = atomic_load_explicit(&m->s_kafka_mode, memory_order_relaxed);
    o->lag = metrics_gauge_value(m->m_lag);
}

bool feed_endpoint_state(const feed_t *f, size_t i, const char **url, bool *up)
{
    if (i >= f->cfg->n_endpoints)
        return false;
    *url = f->cfg->endpoints[i].url;
    *up = atomic_load_explicit(&f->epm[i].is_up, memory_order_relaxed);
    return true;
}

int feed_assigned(const feed_t *f)
{
    return kafka_consumer_assignment_size(f->kc);
}
