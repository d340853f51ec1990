/* Frame transport for tcp:// and tls:// endpoints (the connection layer in conn.c gives a
 * plain or a TLS bufferevent; this file does not care which).
 *
 * Each send() is one complete DATA frame built by the frame encoding. The transport gives it
 * the next frame id of this connection (ids restart at 1 on every connection, strictly
 * increasing) and sets the ack-requested flag, then waits for the endpoint's ACK frame:
 * an ACK with id N acknowledges every frame <= N (cumulative); a NACK rejects exactly one
 * frame with a status. Frames in flight are a FIFO ring bounded by max_in_flight.
 *
 * fire_and_forget: no ACK is requested; a frame counts as acknowledged once its last byte
 * left the process (handed to the kernel). Weaker: whatever the endpoint had not processed
 * when it crashes is lost.
 *
 * pcap stream (an encoding of pcap records, the synthetic one, in fire-and-forget mode,
 * docs/synthetic.md): the
 * connection carries a pcap file header, then only the records' bodies (the copies' pcap
 * records), no NDD framing, so that `nc host port | tshark -r -` or any libpcap reader takes it
 * as it is; acknowledged once written, as fire-and-forget frames are. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "conn.h"
#include "clock.h"
#include "encoding.h"
#include "frame.h"
#include "synthetic.h"
#include "log.h"
#include "transport.h"

/* The operations, defined with the descriptor at the end of this file. */
static const transport_ops_t transport_tcp_ops;

typedef struct ftx_slot {
    uint64_t id;
    void *cookie;
    uint64_t end_bytes; /* stream position just after this frame */
    int64_t sent_ms;
    bool dead; /* NACKed: already reported, waiting to leave the ring head */
} ftx_slot_t;

typedef struct ftx {
    transport_stream_t s; /* first: the connection, its state and its teardown */
    frame_parser_t parser;
    ftx_slot_t *ring;
    unsigned cap, head, count, live; /* live = count minus dead */
    uint64_t next_id;
    uint64_t bytes_queued;
    struct event *tick; /* ack-timeout check */
    bool pcap;          /* a pcap stream: header, then the records' bodies only */
} ftx_t;

static ftx_slot_t *ftx_at(ftx_t *t, unsigned i)
{
    return &t->ring[(t->head + i) % t->cap];
}

static void ftx_pop_dead(ftx_t *t)
{
    while (t->count > 0 && ftx_at(t, 0)->dead) {
        t->head = (t->head + 1) % t->cap;
        t->count--;
    }
}

/* Acknowledges every frame at the head of the ring that `pred` accepts. */
static void ftx_ack_upto_id(ftx_t *t, uint64_t id)
{
    while (t->count > 0) {
        ftx_slot_t *s = ftx_at(t, 0);
        if (!s->dead && s->id > id)
            break;
        void *cookie = s->cookie;
        bool dead = s->dead;
        t->head = (t->head + 1) % t->cap;
        t->count--;
        if (!dead) {
            t->live--;
            t->s.ev.on_ack(t->s.owner, cookie, 0);
        }
        if (t->s.state != STREAM_UP)
            return;
    }
}

static void ftx_ack_written(ftx_t *t)
{
    uint64_t written = t->bytes_queued - evbuffer_get_length(bufferevent_get_output(t->s.bev));
    while (t->count > 0 && t->s.state == STREAM_UP) {
        ftx_slot_t *s = ftx_at(t, 0);
        if (s->end_bytes > written)
            break;
        void *cookie = s->cookie;
        t->head = (t->head + 1) % t->cap;
        t->count--;
        t->live--;
        t->s.ev.on_ack(t->s.owner, cookie, 0);
    }
}

static void ftx_nack(ftx_t *t, uint64_t id, int status, const codec_slice_t *reason)
{
    for (unsigned i = 0; i < t->count; i++) {
        ftx_slot_t *s = ftx_at(t, i);
        if (s->id != id)
            continue;
        if (s->dead)
            return;
        s->dead = true;
        t->live--;
        char why[320];
        snprintf(why, sizeof why, "NACK %d from %s: %.*s", status, t->s.cfg.endpoint,
                 reason->ptr ? (int)(reason->len > 200 ? 200 : reason->len) : 0,
                 reason->ptr ? reason->ptr : "");
        transport_failure_t f = {.status = status,
                                 .retryable = status == 0 || transport_status_retryable(status),
                                 .reason = why,
                                 .body = (const uint8_t *)reason->ptr,
                                 .body_len = reason->ptr ? reason->len : 0};
        t->s.ev.on_fail(t->s.owner, s->cookie, &f);
        ftx_pop_dead(t);
        return;
    }
    log_warn("feed %s: endpoint %s sent NACK for unknown frame id %" PRIu64, t->s.cfg.feed,
             t->s.cfg.endpoint, id);
}

static void ftx_readcb(struct bufferevent *bev, void *arg)
{
    ftx_t *t = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    t->s.busy = true;
    while (t->s.state == STREAM_UP) {
        size_t have = evbuffer_get_length(in);
        if (have < FRAME_HEADER_LEN)
            break;
        /* Peek at the header to pull up exactly one frame (acks are tiny). */
        uint8_t hb[FRAME_HEADER_LEN];
        evbuffer_copyout(in, hb, sizeof hb);
        frame_header_t h;
        frame_header_read(hb, &h);
        size_t need = FRAME_HEADER_LEN + (size_t)h.payload_len;
        if (h.payload_len > t->parser.max_payload)
            need = FRAME_HEADER_LEN; /* let the parser report the bad length */
        if (have < need)
            break;
        const uint8_t *p = evbuffer_pullup(in, (ssize_t)need);
        frame_t f;
        size_t used = 0;
        frame_status_t st = frame_parse(&t->parser, p, need, &f, &used);
        if (st == FRAME_NEED_MORE)
            break;
        if (st == FRAME_ERROR) {
            char why[320];
            snprintf(why, sizeof why, "protocol error from %s: %s", t->s.cfg.endpoint,
                     t->parser.error);
            transport_stream_schedule_close(&t->s, why);
            break;
        }
        if (f.hdr.type == FRAME_TYPE_ACK) {
            if (!t->s.cfg.fire_and_forget)
                ftx_ack_upto_id(t, f.hdr.id);
        } else if (f.hdr.type == FRAME_TYPE_NACK) {
            ftx_nack(t, f.hdr.id, f.nack_status, &f.nack_reason);
        } else {
            log_debug("feed %s: endpoint %s sent a %s frame; ignored", t->s.cfg.feed,
                      t->s.cfg.endpoint, frame_type_name(f.hdr.type));
        }
        evbuffer_drain(in, used);
    }
    t->s.busy = false;
    if (t->s.state == STREAM_UP && t->s.ev.on_writable && t->count < t->cap)
        t->s.ev.on_writable(t->s.owner);
}

static void ftx_writecb(struct bufferevent *bev, void *arg)
{
    ftx_t *t = arg;
    if (t->s.state != STREAM_UP)
        return;
    t->s.busy = true;
    if (t->s.cfg.fire_and_forget)
        ftx_ack_written(t);
    t->s.busy = false;
    if (t->s.state == STREAM_UP && t->s.ev.on_writable)
        t->s.ev.on_writable(t->s.owner);
}

static void ftx_eventcb(struct bufferevent *bev, short what, void *arg)
{
    ftx_t *t = arg;
    if (what & BEV_EVENT_CONNECTED) {
        conn_established(bev);
        t->s.state = STREAM_UP;
        t->next_id = 0;
        t->bytes_queued = 0;
        frame_parser_init(&t->parser, 0, false);
        bufferevent_setwatermark(bev, EV_WRITE, t->s.cfg.out_buf_max / 2, 0);
        bufferevent_enable(bev, EV_READ | EV_WRITE);
        if (t->pcap) {
            uint8_t fh[24];
            synth_pcap_file_header(fh);
            bufferevent_write(bev, fh, sizeof fh);
            t->bytes_queued = sizeof fh;
        }
        log_info("feed %s: connected to %s (%s%s%s)", t->s.cfg.feed, t->s.cfg.endpoint,
                 t->pcap ? "pcap stream" : "frames", t->s.cfg.use_tls ? " over TLS" : "",
                 t->s.cfg.fire_and_forget ? ", fire-and-forget" : "");
        t->s.ev.on_up(t->s.owner);
        return;
    }
    transport_stream_lost(&t->s, what);
}

/* The teardown's part here (transport_stream_close): every frame not yet reported fails. */
static void ftx_drop(transport_stream_t *st, const char *reason)
{
    ftx_t *t = (ftx_t *)st;
    unsigned n = t->count;
    unsigned head = t->head;
    t->count = 0;
    t->live = 0;
    t->head = 0;
    for (unsigned i = 0; i < n; i++) {
        ftx_slot_t *s = &t->ring[(head + i) % t->cap];
        if (s->dead)
            continue;
        transport_failure_t f = {.status = 0, .retryable = true, .reason = reason};
        t->s.ev.on_fail(t->s.owner, s->cookie, &f);
    }
}

static void ftx_tickcb(evutil_socket_t fd, short what, void *arg)
{
    ftx_t *t = arg;
    if (t->s.state != STREAM_UP || t->count == 0)
        return;
    ftx_slot_t *s = ftx_at(t, 0);
    int64_t now = mono_now_ms();
    if (now - s->sent_ms > t->s.cfg.timeout_ms) {
        char why[320];
        snprintf(why, sizeof why, "no ACK for frame %" PRIu64 " within %u ms (endpoint %s)", s->id,
                 t->s.cfg.timeout_ms, t->s.cfg.endpoint);
        transport_stream_close(&t->s, why);
    }
}

static transport_t *ftx_create(struct event_base *base, const transport_config_t *cfg,
                               const transport_events_t *ev, void *owner, char *err, size_t errlen)
{
    ftx_t *t = (ftx_t *)transport_stream_new(sizeof *t, &transport_tcp_ops, base, cfg, ev, owner,
                                             err, errlen);
    if (!t)
        return NULL;
    t->s.drop = ftx_drop;
    t->s.readcb = ftx_readcb;
    t->s.writecb = ftx_writecb;
    t->s.eventcb = ftx_eventcb;
    t->pcap =
        cfg->fire_and_forget && cfg->encoding && (cfg->encoding->form & ENCODING_FORM_PCAP_RECORDS);
    t->cap = t->s.cfg.max_in_flight;
    t->ring = calloc(t->cap, sizeof *t->ring);
    t->tick = event_new(base, -1, EV_PERSIST, ftx_tickcb, t);
    if (!t->ring || !t->tick) {
        snprintf(err, errlen, "out of memory");
        transport_tcp_ops.destroy(&t->s.base);
        return NULL;
    }
    uint32_t every = t->s.cfg.timeout_ms / 4;
    if (every < 20)
        every = 20;
    if (every > 1000)
        every = 1000;
    struct timeval tv = {every / 1000, (every % 1000) * 1000};
    event_add(t->tick, &tv);
    frame_parser_init(&t->parser, 0, false);
    return &t->s.base;
}

static int ftx_connect(transport_t *base)
{
    return transport_stream_connect((transport_stream_t *)base);
}

static unsigned ftx_capacity(const transport_t *base)
{
    const ftx_t *t = (const ftx_t *)base;
    if (t->s.state != STREAM_UP)
        return 0;
    if (evbuffer_get_length(bufferevent_get_output(t->s.bev)) >= t->s.cfg.out_buf_max)
        return 0;
    return t->cap - t->count;
}

static void ftx_push(ftx_t *t, void *cookie, uint64_t id)
{
    ftx_slot_t *s = ftx_at(t, t->count);
    s->id = id;
    s->cookie = cookie;
    s->end_bytes = t->bytes_queued;
    s->sent_ms = mono_now_ms();
    s->dead = false;
    t->count++;
    t->live++;
}

/* A pcap stream: the bodies of the frame's records (each a run of pcap records) are written
 * by reference, without the frame around them. */
static int ftx_send_pcap(ftx_t *t, const uint8_t *payload, size_t len, void *cookie)
{
    frame_parser_t p;
    frame_t fr;
    size_t used;
    frame_parser_init(&p, 0, false);
    if (frame_parse(&p, payload, len, &fr, &used) != FRAME_OK || used != len ||
        fr.hdr.type != FRAME_TYPE_DATA) {
        log_error("feed %s: endpoint %s: payload is not a synthetic DATA frame; refused",
                  t->s.cfg.feed, t->s.cfg.endpoint);
        return -1;
    }
    struct evbuffer *out = bufferevent_get_output(t->s.bev);
    frame_record_iter_t it;
    frame_record_t rec;
    size_t n = 0;
    frame_records(&fr, &it);
    while (frame_record_next(&it, &rec)) {
        if (evbuffer_add_reference(out, rec.body.ptr, rec.body.len, NULL, NULL) < 0) {
            transport_stream_schedule_close(&t->s, "out of memory queueing pcap records");
            return -1; /* the stream is torn down: no partial batch survives */
        }
        n += rec.body.len;
    }
    t->bytes_queued += n;
    ftx_push(t, cookie, ++t->next_id);
    return 0;
}

static int ftx_send(transport_t *base, const uint8_t *payload, size_t len, void *cookie)
{
    ftx_t *t = (ftx_t *)base;
    if (ftx_capacity(base) == 0)
        return -1;
    if (len < FRAME_HEADER_LEN || buf_rd_be32(payload) != FRAME_MAGIC) {
        log_error("feed %s: endpoint %s: payload is not a DATA frame (%zu bytes); refused",
                  t->s.cfg.feed, t->s.cfg.endpoint, len);
        return -1;
    }
    if (t->pcap)
        return ftx_send_pcap(t, payload, len, cookie);
    /* The frame's id and flags are set in the owner's buffer itself (they differ per
     * connection; a retry on another connection sets them again), and the whole frame is
     * referenced, not copied: one contiguous piece, so that over TLS it leaves as full-size
     * records instead of a 16-byte record for the header and then the payload. The buffer
     * stays valid until this frame is acked or failed and is in flight on one connection at
     * a time; a teardown frees the socket buffer before failing anything. */
    uint8_t *hdr = (uint8_t *)(uintptr_t)payload;
    uint64_t id = ++t->next_id;
    frame_set_id(hdr, id);
    uint16_t flags = (uint16_t)((hdr[FRAME_OFF_FLAGS] << 8) | hdr[FRAME_OFF_FLAGS + 1]);
    if (t->s.cfg.fire_and_forget)
        flags &= (uint16_t)~FRAME_FLAG_ACK_REQUESTED;
    else
        flags |= FRAME_FLAG_ACK_REQUESTED;
    frame_set_flags(hdr, flags);
    struct evbuffer *out = bufferevent_get_output(t->s.bev);
    if (evbuffer_add_reference(out, payload, len, NULL, NULL) < 0) {
        transport_stream_schedule_close(&t->s, "out of memory queueing a frame");
        t->next_id--;
        return -1;
    }
    t->bytes_queued += len;
    ftx_push(t, cookie, id);
    return 0;
}

static unsigned ftx_in_flight(const transport_t *base)
{
    return ((const ftx_t *)base)->live;
}

static void ftx_destroy(transport_t *base)
{
    ftx_t *t = (ftx_t *)base;
    if (t->tick)
        event_free(t->tick);
    free(t->ring);
    transport_stream_free(&t->s);
}

static const transport_ops_t transport_tcp_ops = {
    .name = "tcp",
    .create = ftx_create,
    .connect = ftx_connect,
    .send = ftx_send,
    .capacity = ftx_capacity,
    .in_flight = ftx_in_flight,
    .is_up = transport_stream_is_up,
    .disconnect = transport_stream_disconnect,
    .destroy = ftx_destroy,
};

/* ---- the descriptor: this transport as feeds, the admin and the schema see it ---- */

const transport_desc_t transport_desc_tcp = {
    .name = "tcp",
    .url_example = "tcp://probe.example:5000",
    .schemes = {{"tcp", false, NULL}},
    .url_form = TRANSPORT_URL_NETWORK,
    .url_path = TRANSPORT_PATH_NONE,
    .fire_and_forget = true,
    .encodings = {"frame", "synthetic"},
    .ops = &transport_tcp_ops,
};

const transport_desc_t transport_desc_tls = {
    .name = "tls",
    .url_example = "tls://probe.example:5001",
    .sections = TRANSPORT_SECTION_TLS,
    .schemes = {{"tls", true, NULL}},
    .url_form = TRANSPORT_URL_NETWORK,
    .url_path = TRANSPORT_PATH_NONE,
    .fire_and_forget = true,
    .encodings = {"frame", "synthetic"},
    .ops = &transport_tcp_ops,
};
