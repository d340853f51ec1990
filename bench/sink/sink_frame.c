/* ndd-sink: the binary frame over TCP and TLS. Every DATA frame with the ack-requested flag
 * is acknowledged (one cumulative ACK per read, or after the injected delay); a fault
 * status answers a NACK for exactly that frame (any pending ACK is flushed first, so an ACK
 * never covers a frame NACKed after it). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>

#include "frame.h"
#include "log.h"
#include "sink.h"
#include "tls.h"

/* Stop reading from a client that does not read its ACKs past this much queued output. */
#define FRAME_OUT_HIGH (4u << 20)

typedef struct frame_conn {
    sink_conn_t c; /* first: a sink_conn_t * is a frame_conn_t * */
    frame_parser_t parser;
    bool ack_pending;
    uint64_t ack_id;
    struct event *ack_timer;
    bool timer_armed;
    buf_t out; /* one ACK / NACK being built */
    bool tls_up;
    bool closing; /* close once the output (a last ACK) is written */
} frame_conn_t;

static void frame_conn_close(sink_conn_t *c)
{
    frame_conn_t *fc = (frame_conn_t *)c;
    sink_conn_remove(c->sink, c);
    if (fc->ack_timer)
        event_free(fc->ack_timer);
    if (c->bev)
        bufferevent_free(c->bev);
    buf_free(&fc->out);
    free(fc);
}

static void write_out(frame_conn_t *fc)
{
    if (fc->out.len) {
        bufferevent_write(fc->c.bev, fc->out.data, fc->out.len);
        buf_reset(&fc->out);
    }
    if (evbuffer_get_length(bufferevent_get_output(fc->c.bev)) > FRAME_OUT_HIGH)
        bufferevent_disable(fc->c.bev, EV_READ);
}

static void flush_ack(frame_conn_t *fc)
{
    if (!fc->ack_pending)
        return;
    if (fc->timer_armed) {
        event_del(fc->ack_timer);
        fc->timer_armed = false;
    }
    frame_build_ack(&fc->out, fc->ack_id);
    fc->ack_pending = false;
    write_out(fc);
}

static void close_after_flush(frame_conn_t *fc)
{
    if (evbuffer_get_length(bufferevent_get_output(fc->c.bev)) == 0) {
        frame_conn_close(&fc->c);
        return;
    }
    fc->closing = true;
    bufferevent_disable(fc->c.bev, EV_READ);
    bufferevent_setwatermark(fc->c.bev, EV_WRITE, 0, 0);
}

static void ack_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    frame_conn_t *fc = arg;
    fc->timer_armed = false;
    flush_ack(fc);
}

typedef struct count_ctx {
    sink_t *s;
    sink_transport_t t;
} count_ctx_t;

/* Handles one DATA frame; returns -1 when the connection must close. */
static int on_data(frame_conn_t *fc, const frame_t *f)
{
    sink_t *s = fc->c.sink;
    sink_tstats_t *ts = &s->stats.t[fc->c.transport];
    sink_verdict_t v;
    sink_fault_next(&s->fault, sink_now_s(), &v);
    if (v.drop) {
        log_info("sink: fault injection: closing %s connection %s at frame %llu unanswered",
                 sink_transport_name(fc->c.transport), fc->c.peer, (unsigned long long)f->hdr.id);
        return -1;
    }
    ts->requests++;
    ts->bytes += f->hdr.payload_len;
    if (v.status && (v.status < 200 || v.status > 299)) {
        char reason[64];
        int n = snprintf(reason, sizeof reason, "fault injection: status %d", v.status);
        ts->rejected++;
        flush_ack(fc);
        frame_build_nack(&fc->out, f->hdr.id, (uint16_t)v.status, reason, (size_t)n);
        write_out(fc);
        return 0;
    }
    frame_record_iter_t it;
    frame_record_t r;
    frame_records(f, &it);
    while (frame_record_next(&it, &r)) {
        sink_record_info_t info;
        sink_frame_record_info(&r, &info);
        sink_count_record(s, fc->c.transport, &info);
    }
    if (f->hdr.flags & FRAME_FLAG_ACK_REQUESTED) {
        fc->ack_pending = true;
        fc->ack_id = f->hdr.id;
        if (v.delay_ms > 0 && !fc->timer_armed) {
            struct timeval tv = {v.delay_ms / 1000, (v.delay_ms % 1000) * 1000};
            event_add(fc->ack_timer, &tv);
            fc->timer_armed = true;
        }
    }
    return 0;
}

static void frame_read_cb(struct bufferevent *bev, void *arg)
{
    frame_conn_t *fc = arg;
    sink_t *s = fc->c.sink;
    struct evbuffer *in = bufferevent_get_input(bev);
    for (;;) {
        size_t avail = evbuffer_get_length(in);
        if (avail == 0)
            break;
        uint8_t hdr[FRAME_HEADER_LEN];
        size_t n = avail < sizeof hdr ? avail : sizeof hdr;
        evbuffer_copyout(in, hdr, n);
        frame_t f;
        size_t used;
        /* The header alone first: a bad or oversized header fails before any wait. */
        frame_status_t st = frame_parse(&fc->parser, hdr, n, &f, &used);
        if (st == FRAME_NEED_MORE && n == FRAME_HEADER_LEN) {
            frame_header_t h;
            frame_header_read(hdr, &h);
            size_t total = FRAME_HEADER_LEN + (size_t)h.payload_len;
            if (avail >= total)
                st =
                    frame_parse(&fc->parser, evbuffer_pullup(in, (ssize_t)total), total, &f, &used);
        }
        if (st == FRAME_NEED_MORE)
            break;
        if (st == FRAME_ERROR) {
            s->stats.t[fc->c.transport].protocol_errors++;
            log_warn("sink: %s connection %s: %s; closing", sink_transport_name(fc->c.transport),
                     fc->c.peer, fc->parser.error);
            /* The frames before the bad one were counted: acknowledge them first, or the
             * sender would send them again. */
            flush_ack(fc);
            close_after_flush(fc);
            return;
        }
        int rc = 0;
        if (f.hdr.type == FRAME_TYPE_DATA)
            rc = on_data(fc, &f);
        else
            log_warn("sink: %s connection %s sent a %s frame (id %llu); ignored",
                     sink_transport_name(fc->c.transport), fc->c.peer, frame_type_name(f.hdr.type),
                     (unsigned long long)f.hdr.id);
        evbuffer_drain(in, used);
        if (rc != 0) {
            /* Dropped: the frames before it stay acknowledged, this one gets nothing. */
            flush_ack(fc);
            close_after_flush(fc);
            return;
        }
    }
    if (fc->ack_pending && !fc->timer_armed)
        flush_ack(fc);
    sink_check_done(s);
}

static void frame_write_cb(struct bufferevent *bev, void *arg)
{
    frame_conn_t *fc = arg;
    if (fc->closing) {
        if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
            frame_conn_close(&fc->c);
        return;
    }
    /* Output drained below the low watermark: read again. */
    bufferevent_enable(bev, EV_READ);
}

static void frame_event_cb(struct bufferevent *bev, short what, void *arg)
{
    frame_conn_t *fc = arg;
    if (what & BEV_EVENT_CONNECTED) {
        fc->tls_up = true;
        bufferevent_set_timeouts(bev, NULL, NULL);
        return;
    }
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)) {
        if ((what & BEV_EVENT_ERROR) && !sink_conn_log_tls_error(&fc->c, bev) &&
            EVUTIL_SOCKET_ERROR() != 0 && EVUTIL_SOCKET_ERROR() != ECONNRESET)
            log_warn("sink: %s connection %s: %s", sink_transport_name(fc->c.transport), fc->c.peer,
                     evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
        frame_conn_close(&fc->c);
    }
}

void sink_frame_accept(sink_t *s, sink_transport_t t, int fd, const char *peer)
{
    frame_conn_t *fc = calloc(1, sizeof *fc);
    if (!fc) {
        log_error("sink: out of memory accepting %s connection %s", sink_transport_name(t), peer);
        close(fd);
        return;
    }
    fc->c.sink = s;
    fc->c.transport = t;
    fc->c.close = frame_conn_close;
    snprintf(fc->c.peer, sizeof fc->c.peer, "%s", peer);
    frame_parser_init(&fc->parser, (uint32_t)s->cfg.max_body, true);
    buf_init(&fc->out, 0, 1u << 16);
    fc->ack_timer = evtimer_new(s->base, ack_timer_cb, fc);
    fc->c.bev = sink_conn_bev_new(s, fd, t == SINK_TLS ? s->ssl_frame : NULL);
    if (!fc->c.bev || !fc->ack_timer) {
        log_error("sink: cannot set up %s connection %s", sink_transport_name(t), peer);
        if (!fc->c.bev)
            close(fd);
        if (fc->ack_timer)
            event_free(fc->ack_timer);
        if (fc->c.bev)
            bufferevent_free(fc->c.bev);
        buf_free(&fc->out);
        free(fc);
        return;
    }
    sink_conn_add(s, &fc->c);
    sink_conn_start(&fc->c, frame_read_cb, frame_write_cb, frame_event_cb, fc, FRAME_OUT_HIGH);
}
