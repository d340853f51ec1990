/* The TCP/TLS copy listener (docs/ingress.md, "Copies over TCP and TLS"): message copies in
 * NDD binary frames (services/copy/frame.h, what ndd-adapter's tcp and tls transports send),
 * over TCP or TLS (mTLS with tls.client-cert). Each record of a DATA frame is one copy: its
 * headers are the copy's Kafka headers, its key and body the record's. Every record is
 * decoded by the codec as the HTTP/2 listener decodes a request (codec_decode_parts); a valid
 * copy is produced to <copy.topic-prefix><NF type> keyed by its correlation id, a refused one
 * to the dead-letter topic (copy.dlq-topic) with the @dlq-* headers naming reason and field,
 * and logged with the connection, frame id and record index.
 *
 * A frame asking for an acknowledgement gets ACK once Kafka acknowledged every record of it
 * (the dead letters included), NACK 503 "kafka-unavailable" when one was not acknowledged;
 * answers go in frame order (ACK is cumulative). A frame the parser refuses (bad magic,
 * version, length over tcp.max-frame, a malformed record, an id that does not increase) closes
 * the connection, logged with the parser's reason.
 *
 * Memory of a connection is bounded: its input by a read watermark of one largest frame, its
 * frames awaiting acknowledgement by tcp.max-pending (reading stops while that many wait), and
 * its output by reading stopping while more than 64 KiB of answers are unread. When Kafka's
 * queue is full the frame's remaining records wait (reading stops; TCP pushes back) and
 * resume on the next delivery report. The body is copied once, by librdkafka, as HV-VES's. */
#include "codec.h"
#include "frame.h"
#include "ingress.h"
#include "ingress_guard.h"

#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>

#include "log.h"

/* The listener's own settings (its .specs, at the end of this file: keys of ndd-ingress's
 * config map like every other). */
typedef struct tcp_settings {
    int64_t port; /* -1: off */
    bool tls;
    int64_t max_frame, max_pending;
    const char *dlq_topic;
} tcp_settings_t;

static const tcp_settings_t *tcp_own(const ingress_settings_t *S);

#define OUT_HIGH (64u * 1024u)

typedef struct tconn tconn_t;
typedef struct tlisten tlisten_t;

/* One DATA frame awaiting its records' acknowledgements. */
typedef struct pend {
    ingress_ack_t ack; /* done runs once per record produced with it */
    tconn_t *c;
    uint64_t id;
    bool want_ack, submitted, failed;
    uint32_t outstanding;
} pend_t;

struct tlisten {
    ingress_t *g;
    ingress_stream_t st; /* the socket, the guard (frame-timeout, idle-timeout, max-buffered)
                          * and the open connections */
    uint64_t next_conn;
};

struct tconn {
    ingress_guard_conn_t gc; /* first: the guard's list links the open connections */
    tlisten_t *l;
    struct bufferevent *bev; /* NULL once closed while records are still outstanding */
    char peer[64];
    frame_parser_t parser;
    pend_t *ring; /* tcp.max-pending slots */
    buf_t ob;     /* one ACK or NACK being built */
    size_t head, n;
    /* The frame being produced when Kafka's queue filled: its size and the records done. */
    size_t cur_size;
    uint32_t cur_done;
    bool blocked; /* waiting for room in Kafka's queue, for acknowledgements or for the client */
    uint32_t outstanding;
};

static size_t max_pending(const tconn_t *c)
{
    return (size_t)tcp_own(c->l->g->S)->max_pending;
}

/* Closes the socket now; the state goes when its last record's report came. quiet: the
 * guard logged it (it rate-limits its closes). */
static void conn_close_as(tconn_t *c, const char *why, bool quiet)
{
    if (c->bev) {
        if (quiet)
            log_debug("copy connection %s closed: %s", c->peer, why);
        else
            log_info("copy connection %s closed: %s", c->peer, why);
        ingress_guard_remove(&c->l->st.guard, &c->gc);
        bufferevent_free(c->bev);
        c->bev = NULL;
    }
    if (!c->outstanding) {
        buf_free(&c->ob);
        free(c->ring);
        free(c);
    }
}

static void conn_close(tconn_t *c, const char *why)
{
    conn_close_as(c, why, false);
}

static bool conn_process(tconn_t *c);

/* Answers the frames at the head whose records are all acknowledged, in frame order. */
static void conn_answer(tconn_t *c)
{
    while (c->n) {
        pend_t *p = &c->ring[c->head];
        if (!p->submitted || p->outstanding)
            break;
        if (p->want_ack && c->bev) {
            struct evbuffer *out = bufferevent_get_output(c->bev);
            static const char why[] = "kafka-unavailable";
            buf_reset(&c->ob);
            if (p->failed ? frame_build_nack(&c->ob, p->id, 503, why, sizeof why - 1)
                          : frame_build_ack(&c->ob, p->id))
                break;
            evbuffer_add(out, c->ob.data, c->ob.len);
        }
        c->head = (c->head + 1) % max_pending(c);
        c->n--;
    }
}

static void pend_done(ingress_ack_t *a, const rd_kafka_message_t *rkm)
{
    pend_t *p = (pend_t *)a;
    tconn_t *c = p->c;
    if (rkm->err)
        p->failed = true;
    p->outstanding--;
    c->outstanding--;
    if (!c->bev) {
        if (!c->outstanding)
            conn_close(c, "gone");
        return;
    }
    conn_answer(c);
}

/* Produces record i of the frame (a copy, or its dead letter). 1 when Kafka's queue is full. */
static int produce_record(tconn_t *c, pend_t *p, const frame_record_t *rec, uint32_t i)
{
    ingress_t *g = c->l->g;
    rd_kafka_headers_t *h = rd_kafka_headers_new(rec->header_count ? rec->header_count : 1);
    frame_header_iter_t hi;
    codec_slice_t name, value;
    frame_headers(rec, &hi);
    while (frame_header_next(&hi, &name, &value))
        rd_kafka_header_add(h, (const char *)name.ptr, (ssize_t)name.len, value.ptr,
                            (ssize_t)value.len);
    codec_msg_t m;
    codec_error_t ce;
    char topic[192];
    const void *key;
    size_t klen;
    bool bad = codec_decode_parts(&m, rec->key.ptr, rec->key.len, rec->body.ptr, rec->body.len, h,
                                  &ce) != CODEC_OK;
    if (bad) {
        char origin[160];
        snprintf(origin, sizeof origin, "tcp:%s/frame %llu/record %u", c->peer,
                 (unsigned long long)p->id, i);
        if (codec_dlq_headers(h, &ce, origin)) {
            rd_kafka_headers_destroy(h);
            return 1; /* out of memory: retried on the next report */
        }
        snprintf(topic, sizeof topic, "%s", tcp_own(g->S)->dlq_topic);
        key = rec->key.ptr;
        klen = rec->key.len;
    } else {
        snprintf(topic, sizeof topic, "%s%s", g->S->copy_topic_prefix, codec_nf_name(m.nf));
        key = m.key.ptr;
        klen = m.key.len;
    }
    kafka_produce_result_t pr = ingress_produce(g, INGRESS_T_TCP_COPY, topic, key, klen,
                                                rec->body.ptr, rec->body.len, h, true, &p->ack);
    if (pr == KAFKA_PRODUCE_FULL) {
        rd_kafka_headers_destroy(h);
        return 1;
    }
    metrics_counter_inc(g->m.received[INGRESS_T_TCP_COPY]);
    metrics_counter_add(g->m.received_bytes[INGRESS_T_TCP_COPY], rec->body.len);
    if (bad) {
        ingress_dropped(g, INGRESS_T_TCP_COPY, codec_reason_name(ce.reason));
        log_warn("copy connection %s, frame %llu, record %u: %s (field %s: %s): dead-lettered",
                 c->peer, (unsigned long long)p->id, i, codec_reason_name(ce.reason), ce.field,
                 ce.detail);
    }
    if (pr != KAFKA_PRODUCE_OK) {
        rd_kafka_headers_destroy(h);
        ingress_dropped(g, INGRESS_T_TCP_COPY, "produce-refused");
        log_warn("copy connection %s, frame %llu, record %u: produce to %s refused", c->peer,
                 (unsigned long long)p->id, i, topic);
        p->failed = true;
        return 0;
    }
    p->outstanding++;
    c->outstanding++;
    return 0;
}

/* Produces the records of the frame at the head of the input from cur_done on. 1 when full. */
static int frame_produce(tconn_t *c, const frame_t *f)
{
    pend_t *p = &c->ring[(c->head + c->n - 1) % max_pending(c)];
    frame_record_iter_t it;
    frame_record_t rec;
    frame_records(f, &it);
    for (uint32_t i = 0; frame_record_next(&it, &rec); i++) {
        if (i < c->cur_done)
            continue;
        if (produce_record(c, p, &rec, i))
            return 1;
        c->cur_done = i + 1;
    }
    p->submitted = true;
    return 0;
}

static void set_blocked(tconn_t *c, bool b)
{
    if (c->blocked == b)
        return;
    /* Blocked, the connection is exempt from the guard's timeouts: it waits for Kafka (a
     * client that does not read its answers meets the write timeout, idle-timeout, instead). */
    c->blocked = c->gc.waiting = b;
    if (b) {
        c->gc.partial_since_ms = 0;
        bufferevent_disable(c->bev, EV_READ);
    } else if (!c->gc.paused) {
        bufferevent_enable(c->bev, EV_READ);
    }
}

static void guard_close(ingress_guard_conn_t *gc, const char *why)
{
    conn_close_as((tconn_t *)gc, why, true);
}

/* At stop (ingress_stream_stop): no record is outstanding any more. */
static void conn_stop(ingress_guard_conn_t *gc, const char *why)
{
    tconn_t *c = (tconn_t *)gc;
    c->outstanding = 0;
    conn_close(c, why);
}

static void guard_pause(ingress_guard_conn_t *gc, bool on)
{
    tconn_t *c = (tconn_t *)gc;
    if (on)
        bufferevent_disable(c->bev, EV_READ);
    else if (!c->blocked)
        bufferevent_enable(c->bev, EV_READ);
}

static bool conn_process(tconn_t *c)
{
    ingress_t *g = c->l->g;
    struct evbuffer *in = bufferevent_get_input(c->bev);
    for (;;) {
        frame_t f;
        if (c->cur_size) {
            /* Resuming a frame already parsed (and its id checked): parse it again unchecked. */
            frame_parser_t again;
            size_t used;
            frame_parser_init(&again, (uint32_t)tcp_own(g->S)->max_frame, false);
            const uint8_t *d = evbuffer_pullup(in, (ssize_t)c->cur_size);
            frame_parse(&again, d, c->cur_size, &f, &used);
        } else {
            if (c->n >= max_pending(c) ||
                evbuffer_get_length(bufferevent_get_output(c->bev)) > OUT_HIGH) {
                set_blocked(c, true); /* resumed by a report (on_room) or the output draining */
                return true;
            }
            size_t len = evbuffer_get_length(in), used = 0;
            if (len < FRAME_HEADER_LEN)
                break;
            frame_header_t fh;
            frame_header_read(evbuffer_pullup(in, FRAME_HEADER_LEN), &fh);
            size_t want = (size_t)FRAME_HEADER_LEN + fh.payload_len;
            /* Until the whole frame is in, its header alone is parsed (an oversized or bad
             * header is refused at once): no pull-up per read of a large frame. */
            size_t have = len < want ? FRAME_HEADER_LEN : want;
            const uint8_t *d = evbuffer_pullup(in, (ssize_t)have);
            frame_status_t st = frame_parse(&c->parser, d, have, &f, &used);
            if (st == FRAME_NEED_MORE)
                break;
            if (st == FRAME_ERROR) {
                ingress_dropped(g, INGRESS_T_TCP_COPY, "bad-frame");
                log_warn("copy connection %s: frame %llu refused: %s", c->peer,
                         (unsigned long long)c->parser.frames + 1, c->parser.error);
                conn_close(c, c->parser.error);
                return false;
            }
            if (f.hdr.type != FRAME_TYPE_DATA) {
                ingress_dropped(g, INGRESS_T_TCP_COPY, "bad-frame");
                log_warn("copy connection %s: frame %llu is %s, not DATA", c->peer,
                         (unsigned long long)f.hdr.id, frame_type_name(f.hdr.type));
                conn_close(c, "not a DATA frame");
                return false;
            }
            pend_t *p = &c->ring[(c->head + c->n) % max_pending(c)];
            *p = (pend_t){.ack.done = pend_done,
                          .c = c,
                          .id = f.hdr.id,
                          .want_ack = f.hdr.flags & FRAME_FLAG_ACK_REQUESTED};
            c->n++;
            c->cur_size = used;
            c->cur_done = 0;
        }
        if (frame_produce(c, &f)) {
            set_blocked(c, true);
            return true;
        }
        evbuffer_drain(in, c->cur_size);
        c->cur_size = 0;
        ingress_guard_drained(&c->l->st.guard, &c->gc, evbuffer_get_length(in));
        conn_answer(c);
    }
    set_blocked(c, false);
    return true;
}

static void on_room(void *arg)
{
    tlisten_t *l = arg;
    for (ingress_guard_conn_t *gc = l->st.guard.conns, *next; gc; gc = next) {
        next = gc->next;
        tconn_t *c = (tconn_t *)gc;
        if (c->blocked && ingress_has_room(l->g, 0))
            conn_process(c);
    }
}

static void conn_read(struct bufferevent *bev, void *arg)
{
    tconn_t *c = arg;
    ingress_guard_read(&c->l->st.guard, &c->gc, evbuffer_get_length(bufferevent_get_input(bev)));
    if (!c->blocked && !conn_process(c))
        return; /* closed */
    ingress_guard_enforce(&c->l->st.guard, &c->gc);
}

static void conn_write(struct bufferevent *bev, void *arg)
{
    tconn_t *c = arg;
    if (c->blocked)
        conn_process(c);
}

static void conn_event(struct bufferevent *bev, short what, void *arg)
{
    tconn_t *c = arg;
    if (what & BEV_EVENT_ERROR)
        return conn_close(c, "connection error");
    if (what & (BEV_EVENT_EOF | BEV_EVENT_TIMEOUT)) {
        /* Frames already in are still produced before the connection goes. */
        if (c->blocked || conn_process(c))
            conn_close(c, what & BEV_EVENT_TIMEOUT ? "answers not read for idle-timeout"
                                                   : "closed by the peer");
    }
}

static void on_accept(struct evconnlistener *lst, evutil_socket_t fd, struct sockaddr *sa,
                      int salen, void *arg)
{
    tlisten_t *l = arg;
    ingress_t *g = l->g;
    tconn_t *c = calloc(1, sizeof *c);
    pend_t *ring = calloc((size_t)tcp_own(g->S)->max_pending, sizeof *ring);
    if (!c || !ring || buf_init(&c->ob, 128, 256)) {
        if (c)
            buf_free(&c->ob);
        free(c);
        free(ring);
        evutil_closesocket(fd);
        return;
    }
    c->l = l;
    c->ring = ring;
    frame_parser_init(&c->parser, (uint32_t)tcp_own(g->S)->max_frame, true);
    char host[48] = "?";
    int port = 0;
    if (sa->sa_family == AF_INET) {
        struct sockaddr_in *s4 = (struct sockaddr_in *)sa;
        evutil_inet_ntop(AF_INET, &s4->sin_addr, host, sizeof host);
        port = ntohs(s4->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;
        evutil_inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof host);
        port = ntohs(s6->sin6_port);
    }
    snprintf(c->peer, sizeof c->peer, "#%llu %s:%d", (unsigned long long)++l->next_conn, host,
             port);
    if (!(c->bev = ingress_stream_bev(g, fd, tcp_own(g->S)->tls))) {
        buf_free(&c->ob);
        free(ring);
        free(c);
        return;
    }
    ingress_guard_add(&l->st.guard, &c->gc);
    bufferevent_setcb(c->bev, conn_read, conn_write, conn_event, c);
    /* A client that stops reading its answers: closed when they have not moved for
     * idle-timeout. */
    struct timeval wtv = {(time_t)(g->S->idle_timeout_ms / 1000),
                          (suseconds_t)(g->S->idle_timeout_ms % 1000) * 1000};
    bufferevent_set_timeouts(c->bev, NULL, &wtv);
    bufferevent_setwatermark(c->bev, EV_READ, 0,
                             (size_t)tcp_own(g->S)->max_frame + FRAME_HEADER_LEN + 65536);
    bufferevent_setwatermark(c->bev, EV_WRITE, OUT_HIGH / 2, 0);
    bufferevent_enable(c->bev, EV_READ);
}

static bool tcp_enabled(const ingress_settings_t *S)
{
    return tcp_own(S)->port >= 0;
}

static void tcp_stop(void *p)
{
    tlisten_t *l = p;
    ingress_stream_stop(&l->st, conn_stop);
    free(l);
}

static void *tcp_start(ingress_t *g, char *err, size_t errlen)
{
    tlisten_t *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    l->g = g;
    if (ingress_stream_start(&l->st, g, INGRESS_T_TCP_COPY, (long long)tcp_own(g->S)->port,
                             on_accept, on_room, l, guard_close, guard_pause, err, errlen)) {
        free(l);
        return NULL;
    }
    log_info("copies over %s on %s port %lld", tcp_own(g->S)->tls ? "TLS" : "TCP", g->S->listen,
             (long long)tcp_own(g->S)->port);
    return l;
}

static bool tcp_tls(const ingress_settings_t *S)
{
    return tcp_own(S)->tls;
}

/* clang-format off */
static const config_spec_t tcp_specs[] = {
    {"tcp.port", CONFIG_INT, "-1", "copies in NDD binary frames over TCP or TLS (-1: off)", 0,
     CONFIG_AT(tcp_settings_t, port), -1, 65535},
    {"tcp.tls", CONFIG_BOOL, "false", "the copy listener over TLS (mTLS with tls.client-cert)", 0,
     CONFIG_AT(tcp_settings_t, tls), 0, 0},
    {"tcp.max-frame", CONFIG_BYTES, "4MiB", "largest binary frame payload (bigger: connection "
     "closed)", 0, CONFIG_AT(tcp_settings_t, max_frame), 1024, 64 << 20},
    {"tcp.max-pending", CONFIG_INT, "64", "frames of a connection awaiting Kafka (more: reading "
     "paused)", 0, CONFIG_AT(tcp_settings_t, max_pending), 1, 4096},
    {"copy.dlq-topic", CONFIG_STRING, "ndd.dlq.ingress", "dead-letter topic of refused copies "
     "over TCP/TLS", 0, CONFIG_AT(tcp_settings_t, dlq_topic), 0, 0},
};
/* clang-format on */

static const tcp_settings_t *tcp_own(const ingress_settings_t *S)
{
    return ingress_own_settings(S, &ingress_listener_tcp);
}

const ingress_listener_kind_t ingress_listener_tcp = {
    .name = "tcp",
    .label = "tcp-copy",
    .enabled = tcp_enabled,
    .tls = tcp_tls,
    .specs = tcp_specs,
    .n_specs = sizeof tcp_specs / sizeof tcp_specs[0],
    .start = tcp_start,
    .stop = tcp_stop,
};
