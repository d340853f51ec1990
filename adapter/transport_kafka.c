/* Kafka transport for kafka://host:port/topic endpoints: a feed's records, after its egress
 * filter, produced to a topic (docs/kafka-feed.md).
 *
 * A send() is one DATA frame built by the frame encoding; every record of it becomes one Kafka
 * message with the record's key and headers, produced to the topic with librdkafka's
 * murmur2 partitioner (a key always lands in the same partition, as a Java producer would put
 * it) by an idempotent producer (acks=all, no reordering or duplicates from librdkafka's own
 * retries), so the order of a key's records is kept. The bodies are NOT copied: librdkafka
 * references the frame, which the feed keeps until the batch is acked or failed.
 *
 * The acknowledgement of a batch is the delivery report of its last outstanding message: when
 * every message of the frame is acknowledged by the brokers (acks=all: durable) the batch is
 * acked and the feed's ledger stores the consumed offsets (at-least-once). A message refused for
 * good (too large, topic or cluster authorization failed, invalid record) fails its batch as not
 * retryable, so the feed dead-letters it with the broker's reason; any other error fails it as
 * retryable. The cluster unreachable (every broker down) or a fatal idempotence error tears the
 * producer down: the in-flight batches fail (retryable) and on_down pauses the feed as for the
 * other transports; connect() makes a new producer.
 *
 * librdkafka's delivery reports arrive through its main queue, which signals a pipe the feed
 * thread's event loop watches (rd_kafka_queue_io_event_enable): every callback runs on that
 * thread, as the transport contract requires. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <librdkafka/rdkafka.h>

#include "frame.h"
#include "log.h"
#include "transport.h"

typedef enum ktx_state { KTX_DOWN = 0, KTX_CONNECTING, KTX_UP } ktx_state_t;

/* One batch (one send()) in flight: its messages outstanding and its first error. */
typedef struct ktx_slot {
    void *cookie;
    uint32_t left;           /* messages not yet reported */
    rd_kafka_resp_err_t err; /* first error of its messages; 0: none */
    bool used;
    bool ready; /* every message reported while send() still held it: report from the loop */
    char reason[640];
} ktx_slot_t;

typedef struct ktx {
    transport_t base;
    struct event_base *evb;
    transport_config_t cfg;
    transport_events_t ev;
    void *owner;
    ktx_state_t state;
    char topic[250];
    char bootstrap[128];
    rd_kafka_t *rk;
    rd_kafka_topic_t *rkt;
    rd_kafka_queue_t *mainq;
    int pipefd[2];
    struct event *io_ev;     /* the main queue's signal pipe readable */
    struct event *check_ev;  /* deferred work: the first metadata check, a pending teardown */
    struct event *report_ev; /* batches whose messages were all reported during send() */
    ktx_slot_t *slots;
    unsigned cap, live;
    bool down_pending; /* every broker down / fatal error: tear down from the loop */
    bool in_poll;      /* inside rd_kafka_poll: the producer cannot be destroyed now */
    char down_reason[640];
} ktx_t;

static void ktx_teardown(ktx_t *t, const char *reason);

/* Errors a retry cannot fix: the batch goes to the feed's DLQ with the reason. */
static bool ktx_err_permanent(rd_kafka_resp_err_t e)
{
    switch (e) {
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
    case RD_KAFKA_RESP_ERR_INVALID_MSG:
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
        return true;
    default:
        return false;
    }
}

static void ktx_slot_report(ktx_t *t, ktx_slot_t *s)
{
    void *cookie = s->cookie;
    rd_kafka_resp_err_t e = s->err;
    s->used = false;
    s->ready = false;
    t->live--;
    if (!e) {
        t->ev.on_ack(t->owner, cookie, 0);
        return;
    }
    transport_failure_t f = {.status = 0, .retryable = !ktx_err_permanent(e), .reason = s->reason};
    t->ev.on_fail(t->owner, cookie, &f);
}

static void ktx_slot_error(ktx_t *t, ktx_slot_t *s, rd_kafka_resp_err_t e, int32_t partition)
{
    if (s->err)
        return;
    s->err = e;
    snprintf(s->reason, sizeof s->reason, "kafka topic %.200s [%" PRId32 "] at %s: %.100s (%.60s)",
             t->topic, partition, t->bootstrap, rd_kafka_err2str(e), rd_kafka_err2name(e));
}

static void ktx_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    ktx_t *t = opaque;
    ktx_slot_t *s = m->_private;
    if (t->state == KTX_DOWN || !s || !s->used || !s->left)
        return;
    if (m->err)
        ktx_slot_error(t, s, m->err, m->partition);
    if (--s->left == 0)
        ktx_slot_report(t, s);
}

static void ktx_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    ktx_t *t = opaque;
    char fatal[256];
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        rd_kafka_resp_err_t fe = rd_kafka_fatal_error(rk, fatal, sizeof fatal);
        snprintf(t->down_reason, sizeof t->down_reason,
                 "kafka %s: fatal producer error %.60s: %.200s", t->bootstrap,
                 rd_kafka_err2name(fe), fatal);
    } else if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
        snprintf(t->down_reason, sizeof t->down_reason, "kafka %s: all brokers down: %.200s",
                 t->bootstrap, reason);
    } else {
        log_warn("feed %s: kafka %s: %s: %s", t->cfg.feed, t->bootstrap,
                 rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
        return;
    }
    /* never from inside a poll that a send or an ack callback is in: from the loop */
    if (!t->down_pending) {
        t->down_pending = true;
        event_active(t->check_ev, 0, 0);
    }
}

static void ktx_report_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    ktx_t *t = arg;
    for (unsigned i = 0; i < t->cap && t->state == KTX_UP; i++)
        if (t->slots[i].used && t->slots[i].ready)
            ktx_slot_report(t, &t->slots[i]);
}

static void ktx_io_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    ktx_t *t = arg;
    char b[64];
    while (read(fd, b, sizeof b) > 0)
        ;
    if (t->rk) {
        t->in_poll = true;
        rd_kafka_poll(t->rk, 0); /* delivery reports and errors, on this thread */
        t->in_poll = false;
    }
    if (t->state == KTX_UP && t->ev.on_writable && t->live < t->cap)
        t->ev.on_writable(t->owner);
}

/* The topic's metadata: proves the cluster answers and the topic exists before the feed sends
 * (a bounded wait on the feed thread, once per connect). */
static void ktx_check_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    ktx_t *t = arg;
    if (t->down_pending) {
        t->down_pending = false;
        ktx_teardown(t, t->down_reason);
        return;
    }
    if (t->state != KTX_CONNECTING || !t->rk)
        return;
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(t->rk, 0, t->rkt, &md, 3000);
    char why[640] = "";
    if (e)
        snprintf(why, sizeof why, "kafka %s: topic %.250s: metadata: %.150s", t->bootstrap,
                 t->topic, rd_kafka_err2str(e));
    else if (md->topic_cnt != 1 || md->topics[0].err || md->topics[0].partition_cnt < 1)
        snprintf(why, sizeof why, "kafka %s: topic %.250s: %.150s", t->bootstrap, t->topic,
                 md->topic_cnt == 1 && md->topics[0].err ? rd_kafka_err2str(md->topics[0].err)
                                                         : "no partitions");
    if (md)
        rd_kafka_metadata_destroy(md);
    if (why[0]) {
        ktx_teardown(t, why);
        return;
    }
    t->state = KTX_UP;
    log_info("feed %s: producing to kafka topic %s at %s (idempotent, acks=all)", t->cfg.feed,
             t->topic, t->bootstrap);
    t->ev.on_up(t->owner);
}

/* Frees the producer after purging what it holds: after this librdkafka references no payload
 * and runs no callback, so the in-flight batches can be failed and their frames reused. */
static void ktx_producer_free(ktx_t *t)
{
    if (!t->rk)
        return;
    rd_kafka_purge(t->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT |
                              RD_KAFKA_PURGE_F_NON_BLOCKING);
    if (t->rkt)
        rd_kafka_topic_destroy(t->rkt);
    if (t->mainq) {
        rd_kafka_queue_io_event_enable(t->mainq, -1, NULL, 0);
        rd_kafka_queue_destroy(t->mainq);
    }
    rd_kafka_destroy(t->rk);
    t->rk = NULL;
    t->rkt = NULL;
    t->mainq = NULL;
}

static void ktx_teardown(ktx_t *t, const char *reason)
{
    if (t->state == KTX_DOWN)
        return;
    t->state = KTX_DOWN;
    ktx_producer_free(t);
    for (unsigned i = 0; i < t->cap; i++) {
        ktx_slot_t *s = &t->slots[i];
        if (!s->used)
            continue;
        s->used = false;
        s->ready = false;
        t->live--;
        transport_failure_t f = {.status = 0, .retryable = true, .reason = reason};
        t->ev.on_fail(t->owner, s->cookie, &f);
    }
    log_warn("feed %s: kafka transport down: %s", t->cfg.feed, reason);
    t->ev.on_down(t->owner, reason);
}

/* The operator's librdkafka properties for the target cluster (kafka.config: TLS, SASL),
 * applied after NDD's own so security settings come from the feed. */
static int ktx_conf_apply(rd_kafka_conf_t *c, const json_t *opts, char *err, size_t errlen)
{
    const json_t *props = opts ? json_object_get(opts, "config") : NULL;
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)props, k, v)
    {
        if (!json_is_string(v) ||
            rd_kafka_conf_set(c, k, json_string_value(v), err, errlen) != RD_KAFKA_CONF_OK) {
            if (!json_is_string(v))
                snprintf(err, errlen, "kafka.config.%s: must be a string", k);
            return -1;
        }
    }
    return 0;
}

static int ktx_producer_new(ktx_t *t, char *err, size_t errlen)
{
    char e[256];
    char tmo[32], linger[16];
    snprintf(tmo, sizeof tmo, "%u", t->cfg.timeout_ms < 10000 ? 10000 : t->cfg.timeout_ms);
    snprintf(linger, sizeof linger, "%d", 5);
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    const char *kv[][2] = {
        {"bootstrap.servers", t->bootstrap},
        {"enable.idempotence", "true"}, /* acks=all, in order, no duplicates from retries */
        {"acks", "all"},
        {"partitioner", "murmur2_random"}, /* by key, as the Java client: key order kept */
        {"message.timeout.ms", tmo},
        {"linger.ms", linger},
        {"queue.buffering.max.messages", "1000000"}, /* the feed bounds what is in flight */
        {"queue.buffering.max.kbytes", "1048576"},
        {"client.id", "ndd-adapter"},
    };
    for (size_t i = 0; i < sizeof kv / sizeof *kv; i++)
        if (rd_kafka_conf_set(c, kv[i][0], kv[i][1], e, sizeof e) != RD_KAFKA_CONF_OK) {
            snprintf(err, errlen, "kafka %s: %s", kv[i][0], e);
            rd_kafka_conf_destroy(c);
            return -1;
        }
    if (ktx_conf_apply(c, t->cfg.options, e, sizeof e)) {
        snprintf(err, errlen, "feed %s: %s", t->cfg.feed, e);
        rd_kafka_conf_destroy(c);
        return -1;
    }
    rd_kafka_conf_set_opaque(c, t);
    rd_kafka_conf_set_dr_msg_cb(c, ktx_dr_cb);
    rd_kafka_conf_set_error_cb(c, ktx_error_cb);
    t->rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, e, sizeof e);
    if (!t->rk) {
        snprintf(err, errlen, "kafka producer for %s: %.200s", t->bootstrap, e);
        rd_kafka_conf_destroy(c);
        return -1;
    }
    t->rkt = rd_kafka_topic_new(t->rk, t->topic, NULL);
    t->mainq = rd_kafka_queue_get_main(t->rk);
    if (!t->rkt || !t->mainq) {
        snprintf(err, errlen, "kafka topic %s: %s", t->topic,
                 rd_kafka_err2str(rd_kafka_last_error()));
        ktx_producer_free(t);
        return -1;
    }
    rd_kafka_queue_io_event_enable(t->mainq, t->pipefd[1], "1", 1);
    return 0;
}

static void ktx_destroy(transport_t *base);

static transport_t *ktx_create(struct event_base *base, const transport_config_t *cfg,
                               const transport_events_t *ev, void *owner, char *err, size_t errlen)
{
    const char *topic = cfg->path && cfg->path[0] == '/' ? cfg->path + 1 : cfg->path;
    if (!topic || !*topic || strlen(topic) > 249 || strchr(topic, '/')) {
        snprintf(err, errlen, "endpoint %s: kafka://host:port/topic names one topic",
                 cfg->endpoint);
        return NULL;
    }
    ktx_t *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    t->base.ops = &transport_kafka_ops;
    t->evb = base;
    t->cfg = *cfg;
    t->ev = *ev;
    t->owner = owner;
    t->pipefd[0] = t->pipefd[1] = -1;
    snprintf(t->topic, sizeof t->topic, "%s", topic);
    snprintf(t->bootstrap, sizeof t->bootstrap, "%.100s:%.20s", cfg->host, cfg->port);
    t->cap = cfg->max_in_flight ? cfg->max_in_flight : 100;
    t->slots = calloc(t->cap, sizeof *t->slots);
    if (!t->slots || pipe2(t->pipefd, O_NONBLOCK | O_CLOEXEC) < 0) {
        snprintf(err, errlen, "kafka transport: %s", t->slots ? strerror(errno) : "out of memory");
        ktx_destroy(&t->base);
        return NULL;
    }
    t->io_ev = event_new(base, t->pipefd[0], EV_READ | EV_PERSIST, ktx_io_cb, t);
    t->check_ev = event_new(base, -1, 0, ktx_check_cb, t);
    t->report_ev = event_new(base, -1, 0, ktx_report_cb, t);
    if (!t->io_ev || !t->check_ev || !t->report_ev || event_add(t->io_ev, NULL) < 0) {
        snprintf(err, errlen, "out of memory");
        ktx_destroy(&t->base);
        return NULL;
    }
    return &t->base;
}

static int ktx_connect(transport_t *base)
{
    ktx_t *t = (ktx_t *)base;
    if (t->state != KTX_DOWN)
        return 0;
    char err[400];
    t->state = KTX_CONNECTING;
    t->down_pending = false;
    if (ktx_producer_new(t, err, sizeof err)) {
        snprintf(t->down_reason, sizeof t->down_reason, "%.400s", err);
        t->down_pending = true;
    }
    event_active(t->check_ev, 0, 0); /* the result through the loop, as for the other ones */
    return 0;
}

static unsigned ktx_capacity(const transport_t *base)
{
    const ktx_t *t = (const ktx_t *)base;
    return t->state == KTX_UP ? t->cap - t->live : 0;
}

static int ktx_send(transport_t *base, const uint8_t *payload, size_t len, void *cookie)
{
    ktx_t *t = (ktx_t *)base;
    if (ktx_capacity(base) == 0)
        return -1;
    frame_parser_t p;
    frame_t fr;
    size_t used = 0;
    frame_parser_init(&p, 0, false);
    if (frame_parse(&p, payload, len, &fr, &used) != FRAME_OK || used != len ||
        fr.hdr.type != FRAME_TYPE_DATA) {
        log_error("feed %s: kafka topic %s: payload is not a DATA frame (%zu bytes); refused",
                  t->cfg.feed, t->topic, len);
        return -1;
    }
    ktx_slot_t *s = NULL;
    for (unsigned i = 0; i < t->cap && !s; i++)
        if (!t->slots[i].used)
            s = &t->slots[i];
    *s = (ktx_slot_t){.cookie = cookie, .used = true, .left = 1}; /* 1: held while producing */
    t->live++;
    frame_record_iter_t it;
    frame_record_t rec;
    frame_records(&fr, &it);
    while (frame_record_next(&it, &rec)) {
        rd_kafka_headers_t *hdrs = NULL;
        if (rec.header_count) {
            hdrs = rd_kafka_headers_new(rec.header_count);
            frame_header_iter_t hi;
            codec_slice_t n, v;
            frame_headers(&rec, &hi);
            while (frame_header_next(&hi, &n, &v))
                rd_kafka_header_add(hdrs, n.ptr, (ssize_t)n.len, v.ptr, (ssize_t)v.len);
        }
        /* no F_COPY: the body and key are referenced until the delivery report */
        rd_kafka_resp_err_t e =
            rd_kafka_producev(t->rk, RD_KAFKA_V_RKT(t->rkt), RD_KAFKA_V_MSGFLAGS(0),
                              RD_KAFKA_V_KEY(rec.key.len ? (void *)rec.key.ptr : NULL, rec.key.len),
                              RD_KAFKA_V_VALUE((void *)rec.body.ptr, rec.body.len),
                              RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_OPAQUE(s), RD_KAFKA_V_END);
        if (e) {
            if (hdrs)
                rd_kafka_headers_destroy(hdrs); /* not taken on failure */
            ktx_slot_error(t, s, e, RD_KAFKA_PARTITION_UA);
            break; /* the rest of the batch is not produced: it fails as one */
        }
        s->left++;
    }
    /* the hold: reported now only if every message is already reported (or none produced) */
    if (--s->left == 0) { /* reported from the loop, never from inside send() */
        s->ready = true;
        event_active(t->report_ev, 0, 0);
    }
    return 0;
}

static unsigned ktx_in_flight(const transport_t *base)
{
    return ((const ktx_t *)base)->live;
}

static bool ktx_is_up(const transport_t *base)
{
    return ((const ktx_t *)base)->state == KTX_UP;
}

static void ktx_disconnect(transport_t *base, const char *reason)
{
    ktx_t *t = (ktx_t *)base;
    if (t->in_poll) { /* from an ack/fail callback: librdkafka forbids destroy in a callback */
        if (!t->down_pending && t->state != KTX_DOWN) {
            snprintf(t->down_reason, sizeof t->down_reason, "%s", reason);
            t->down_pending = true;
            event_active(t->check_ev, 0, 0);
        }
        return;
    }
    ktx_teardown(t, reason);
}

static void ktx_destroy(transport_t *base)
{
    ktx_t *t = (ktx_t *)base;
    ktx_producer_free(t);
    if (t->io_ev)
        event_free(t->io_ev);
    if (t->check_ev)
        event_free(t->check_ev);
    if (t->report_ev)
        event_free(t->report_ev);
    if (t->pipefd[0] >= 0)
        close(t->pipefd[0]);
    if (t->pipefd[1] >= 0)
        close(t->pipefd[1]);
    free(t->slots);
    free(t);
}

const transport_ops_t transport_kafka_ops = {
    .name = "kafka",
    .create = ktx_create,
    .connect = ktx_connect,
    .send = ktx_send,
    .capacity = ktx_capacity,
    .in_flight = ktx_in_flight,
    .is_up = ktx_is_up,
    .disconnect = ktx_disconnect,
    .destroy = ktx_destroy,
};
