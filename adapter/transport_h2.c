/* HTTP/2 transport: one nghttp2 client session per connection (h2c prior knowledge, or TLS
 * with ALPN h2), many concurrent streams up to min(peer SETTINGS_MAX_CONCURRENT_STREAMS,
 * configured max_in_flight).
 *
 * Backpressure: nghttp2_session_mem_send is pulled only while the socket's output buffer is
 * under out_buf_max; the write-low-watermark callback pulls again once it drained. Requests
 * therefore never pile up in an unbounded queue: the number of streams is capped by a
 * preallocated slot table and the bytes waiting for the socket by out_buf_max. (DATA frames
 * are written by h2_send_data inside mem_send, so one pull may pass out_buf_max by the DATA
 * of the requests already submitted: bounded by max_in_flight x the request size.)
 *
 * nghttp2 forbids calling mem_send/mem_recv (or freeing the session) from inside its own
 * callbacks, and our callbacks call the owner, who may call send()/disconnect() again: while
 * inside nghttp2 (t->s.busy) a send only submits, and a teardown is deferred to the loop. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/event_struct.h>
#include <nghttp2/nghttp2.h>

#include "buf.h"
#include "conn.h"
#include "log.h"
#include "mempool.h"
#include "tls.h"
#include "transport.h"

#define H2_EXCERPT_MAX 256
/* The operations, defined with the descriptor at the end of this file. */
static const transport_ops_t transport_h2_ops;

/* Bytes of freed nghttp2 blocks a connection keeps for reuse: a window of 100-256 streams
 * holds about 1 KiB each (stream, queued frames, header copies). */
#define H2_MEM_CACHED (256u * 1024)
#define H2_MAX_NV (8 + TRANSPORT_MAX_HEADERS)
/* Room made at the end of the output buffer when a frame does not fit: the frames of many
 * requests in one 64 KiB allocation (libevent rounds a chain with its header up to a power of
 * two, hence a little less). Left to libevent, a chain holds at most 4 KiB, so every request
 * body took a malloc and a free of its own, and a writev piece. */
#define H2_OUT_CHAIN (64u * 1024 - 128)

typedef struct h2 h2_t;

typedef struct h2_req {
    h2_t *t;
    void *cookie;
    bool active;   /* slot in use (until the stream is closed by nghttp2) */
    bool reported; /* ack/fail already delivered for this cookie */
    const uint8_t *data;
    size_t len, off; /* off: bytes handed to nghttp2's DATA frames so far */
    size_t sent;     /* bytes written to the socket buffer (h2_send_data) */
    int32_t stream_id;
    int status;
    uint32_t retry_after_ms;
    /* In the connection's timeout queue (sent, not yet reported), oldest first. */
    bool queued;
    uint64_t deadline_ms;
    struct h2_req *q_prev, *q_next;
    size_t excerpt_len;
    uint8_t excerpt[H2_EXCERPT_MAX];
    char clen[24];
    struct h2_req *next_free;
} h2_req_t;

struct h2 {
    transport_stream_t s; /* first: the connection, its state and its teardown; s.busy: inside
                           * nghttp2 mem_recv/mem_send */
    nghttp2_session *sess;
    /* nghttp2 allocates a stream, its frames and a copy of its fields per request and frees
     * them at the answer: free lists in front of malloc, as for ndd-admin's server
     * (services/base/mempool.h), instead of glibc's arena once its 7-block cache is full. */
    mempool_t *mem;
    nghttp2_mem ngmem;
    /* Free bytes known to be at the end of the output buffer's last chain (a lower bound kept
     * by h2_out_add; 0 when unknown). Only a hint: libevent decides where bytes go. */
    size_t out_room;
    bool goaway;
    h2_req_t *reqs;
    h2_req_t *free_list;
    unsigned n_reqs;
    unsigned active;        /* slots in use */
    unsigned refill_at;     /* window full: no new stream until active falls to this */
    int rcvlowat;           /* the socket's SO_RCVLOWAT as last set (1: the default) */
    bool read_since_tick;   /* answers read since lowat_ev last fired */
    struct event *lowat_ev; /* bounds how long answers may wait under the mark */
    struct timeval tv_lowat;
    unsigned pending; /* requests not yet reported */
    /* Request timeouts: every request has the same timeout and is queued in the order it was
     * sent, so the oldest one is due first and one timer at its deadline serves them all (a
     * libevent timer per request was an event_add and an event_del per copy, ~500
     * instructions). The timer is re-armed lazily: it may fire with nothing due. */
    h2_req_t *q_head, *q_tail;
    struct event *timeout_ev;
    bool timeout_armed;
    char authority[300];
    char scheme[8];
    nghttp2_nv nv[H2_MAX_NV];
    size_t n_nv; /* without content-length */
};

static nghttp2_nv h2_nv(const char *name, const char *value)
{
    nghttp2_nv nv = {(uint8_t *)name, (uint8_t *)value, strlen(name), strlen(value),
                     NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE};
    return nv;
}

/* How many bytes the kernel holds back before it wakes us to read (SO_RCVLOWAT): what the
 * feed is waiting for, counted as H2_FRAME_MIN bytes per answer, the smallest frame there is
 * (a HEADERS or an RST_STREAM on its stream). Endpoints answer as they read, in small writes,
 * and waking for each handful of answers was a sleep and a wake-up of the feed's thread per
 * 4-5 copies at full rate, a tenth of its CPU (h2_lowat_update says how much is waited for).
 * Streams the endpoint never answers owe nothing: answers already received could wait under
 * the mark for those streams' timeouts and then time out too, to be sent again. So the mark is
 * bounded in time: a tick every H2_LOWAT_WAIT_MS (at most a quarter of the request timeout)
 * that saw no read drops it, and what waited is read at once; the tick runs only while the
 * mark is up. It delays acknowledgements, never deliveries. Plain sockets only: over TLS,
 * records already decrypted into the session would wait for bytes that may never come. */
#define H2_FRAME_MIN 9
#define H2_LOWAT_WAIT_MS 2

static void h2_set_rcvlowat(h2_t *t, int want)
{
    if (want < 1)
        want = 1;
    if (t->s.cfg.use_tls || !t->s.bev || want == t->rcvlowat)
        return;
    evutil_socket_t fd = bufferevent_getfd(t->s.bev);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &want, sizeof want) != 0)
        return; /* only costs wake-ups, as before */
    t->rcvlowat = want;
    if (want == 1) {
        evtimer_del(t->lowat_ev);
    } else if (!evtimer_pending(t->lowat_ev, NULL)) {
        t->read_since_tick = false;
        evtimer_add(t->lowat_ev, &t->tv_lowat);
    }
}

static void h2_lowat_tick(evutil_socket_t fd, short what, void *arg)
{
    h2_t *t = arg;
    if (t->rcvlowat <= 1 || !t->s.bev)
        return;
    if (!t->read_since_tick) {
        h2_set_rcvlowat(t, 1); /* epoll reports at once what waited under the mark */
        return;
    }
    t->read_since_tick = false;
    evtimer_add(t->lowat_ev, &t->tv_lowat);
}

/* The mark for what is in flight now, set at the end of each read, write and timeout rather
 * than per stream: a full window waits for a quarter of it; otherwise for the answers of every
 * open stream, so that a batch of requests is answered into one wake-up instead of the two or
 * three writes an endpoint splits its answers into (at 8,000 copies/s the feed thread woke
 * ~3,000 times a second, ~20 us each). A mark above what is owed (a stream ended between two
 * updates) or answers stuck behind streams that are never answered wait at most for the tick.
 * Raised only when it at least doubles: one system call per batch, not per request. */
static void h2_lowat_update(h2_t *t)
{
    unsigned owe = t->refill_at && t->active > t->refill_at ? t->active - t->refill_at : t->active;
    int want = owe > 1 ? (int)(H2_FRAME_MIN * owe) : 1;
    if (want < t->rcvlowat || want >= 2 * t->rcvlowat)
        h2_set_rcvlowat(t, want);
}

/* A coarse monotonic clock (a read of the kernel's tick, no system call): timeouts are
 * milliseconds to seconds long, and a tick's error (a few ms) is immaterial to them. */
static uint64_t h2_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void h2_arm_timeout(h2_t *t, uint64_t in_ms)
{
    struct timeval tv = {(time_t)(in_ms / 1000), (suseconds_t)(in_ms % 1000) * 1000};
    if (evtimer_add(t->timeout_ev, &tv) == 0)
        t->timeout_armed = true;
}

static void h2_q_push(h2_t *t, h2_req_t *r)
{
    r->deadline_ms = h2_now_ms() + t->s.cfg.timeout_ms;
    r->queued = true;
    r->q_next = NULL;
    r->q_prev = t->q_tail;
    if (t->q_tail)
        t->q_tail->q_next = r;
    else
        t->q_head = r;
    t->q_tail = r;
    if (!t->timeout_armed)
        h2_arm_timeout(t, t->s.cfg.timeout_ms);
}

static void h2_q_unlink(h2_t *t, h2_req_t *r)
{
    if (!r->queued)
        return;
    r->queued = false;
    if (r->q_prev)
        r->q_prev->q_next = r->q_next;
    else
        t->q_head = r->q_next;
    if (r->q_next)
        r->q_next->q_prev = r->q_prev;
    else
        t->q_tail = r->q_prev;
    r->q_prev = r->q_next = NULL;
}

static void h2_req_release(h2_t *t, h2_req_t *r)
{
    h2_q_unlink(t, r);
    r->active = false;
    r->cookie = NULL;
    r->data = NULL;
    r->next_free = t->free_list;
    t->free_list = r;
    t->active--;
}

/* The stream window in use: the configured slots, or fewer if the peer allows fewer. */
static unsigned h2_window(const h2_t *t)
{
    uint32_t peer =
        nghttp2_session_get_remote_settings(t->sess, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
    return peer < t->n_reqs ? peer : t->n_reqs;
}

/* Delivers the outcome of a request to the owner (once). */
static void h2_report(h2_t *t, h2_req_t *r, int status, bool ok, bool retryable, const char *reason)
{
    if (r->reported)
        return;
    r->reported = true;
    h2_q_unlink(t, r); /* nothing left to time out */
    t->pending--;
    void *cookie = r->cookie;
    if (ok) {
        t->s.ev.on_ack(t->s.owner, cookie, status);
        return;
    }
    transport_failure_t f = {.status = status,
                             .retryable = retryable,
                             .retry_after_ms = r->retry_after_ms,
                             .reason = reason,
                             .body = r->excerpt_len ? r->excerpt : NULL,
                             .body_len = r->excerpt_len};
    t->s.ev.on_fail(t->s.owner, cookie, &f);
}

/* Appends to the output buffer, making room for many frames at once when these do not fit.
 * The last chain's free space only shrinks by what is added here: written bytes are taken
 * from the front, and a buffer written out completely loses its chains, which h2_flush sees
 * (an empty buffer) and forgets the room it knew. */
static int h2_out_add(h2_t *t, struct evbuffer *out, const void *p, size_t n)
{
    if (t->out_room < n) {
        size_t want = n > H2_OUT_CHAIN ? n : H2_OUT_CHAIN;
        t->out_room = evbuffer_expand(out, want) == 0 ? want : 0;
    }
    if (evbuffer_add(out, p, n) < 0)
        return -1;
    t->out_room = t->out_room > n ? t->out_room - n : 0;
    return 0;
}

/* Pulls frames from nghttp2 into the socket buffer while it is under its limit. */
static void h2_flush(h2_t *t)
{
    if (t->s.busy || t->s.state != STREAM_UP || !t->sess)
        return;
    struct evbuffer *out = bufferevent_get_output(t->s.bev);
    if (evbuffer_get_length(out) == 0)
        t->out_room = 0;
    t->s.busy = true;
    while (evbuffer_get_length(out) < t->s.cfg.out_buf_max) {
        const uint8_t *p;
        ssize_t n = nghttp2_session_mem_send(t->sess, &p);
        if (n < 0) {
            char why[200];
            snprintf(why, sizeof why, "HTTP/2 send error: %s (endpoint %s)",
                     nghttp2_strerror((int)n), t->s.cfg.endpoint);
            t->s.busy = false;
            transport_stream_schedule_close(&t->s, why);
            return;
        }
        if (n == 0)
            break;
        if (h2_out_add(t, out, p, (size_t)n) < 0) {
            t->s.busy = false;
            transport_stream_schedule_close(&t->s, "out of memory queueing HTTP/2 frames");
            return;
        }
    }
    t->s.busy = false;
    if (!nghttp2_session_want_read(t->sess) && !nghttp2_session_want_write(t->sess) &&
        evbuffer_get_length(out) == 0) {
        char why[200];
        snprintf(why, sizeof why, "HTTP/2 session finished (endpoint %s)", t->s.cfg.endpoint);
        transport_stream_schedule_close(&t->s, why);
    }
}

/* ---- nghttp2 callbacks ---- */

static ssize_t h2_read_body(nghttp2_session *s, int32_t sid, uint8_t *buf, size_t length,
                            uint32_t *flags, nghttp2_data_source *src, void *ud)
{
    h2_req_t *r = src->ptr;
    if (!r->active || r->reported)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* resets the stream: owner gave up */
    size_t n = r->len - r->off;
    if (n > length)
        n = length;
    /* No copy into nghttp2's frame buffer: h2_send_data writes the frame header and the body
     * straight into the socket buffer (one copy of the body fewer per request). */
    *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
    r->off += n;
    if (r->off == r->len)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

/* Called by nghttp2_session_mem_send right after h2_read_body packed the frame, for the
 * same stream, so r->data is still the owner's request. */
static int h2_send_data(nghttp2_session *s, nghttp2_frame *frame, const uint8_t *framehd,
                        size_t length, nghttp2_data_source *src, void *ud)
{
    h2_t *t = ud;
    h2_req_t *r = src->ptr;
    if (!r->active || r->reported || r->sent + length > r->len)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    struct evbuffer *out = bufferevent_get_output(t->s.bev);
    if (h2_out_add(t, out, framehd, 9) < 0 || h2_out_add(t, out, r->data + r->sent, length) < 0)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    r->sent += length;
    /* We never ask for padding; were nghttp2 to add some, it must still be sent. */
    static const uint8_t zeros[256];
    if (frame->data.padlen > 1 && h2_out_add(t, out, zeros, frame->data.padlen - 1) < 0)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    return 0;
}

static int h2_on_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name,
                        size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                        void *ud)
{
    if (frame->hd.type != NGHTTP2_HEADERS)
        return 0;
    h2_req_t *r = nghttp2_session_get_stream_user_data(s, frame->hd.stream_id);
    if (!r)
        return 0;
    if (namelen == 7 && !memcmp(name, ":status", 7)) {
        int st = 0;
        for (size_t i = 0; i < valuelen && i < 3; i++)
            st = st * 10 + (value[i] - '0');
        /* 1xx are interim: the final status overwrites them. */
        r->status = st;
    } else if (namelen == 11 && !memcmp(name, "retry-after", 11)) {
        r->retry_after_ms = transport_parse_retry_after((const char *)value, valuelen);
    }
    return 0;
}

static int h2_on_data_chunk(nghttp2_session *s, uint8_t flags, int32_t sid, const uint8_t *data,
                            size_t len, void *ud)
{
    h2_req_t *r = nghttp2_session_get_stream_user_data(s, sid);
    if (!r || (r->status >= 200 && r->status < 300))
        return 0; /* success bodies (e.g. an echo) are not kept */
    size_t room = H2_EXCERPT_MAX - r->excerpt_len;
    if (len > room)
        len = room;
    memcpy(r->excerpt + r->excerpt_len, data, len);
    r->excerpt_len += len;
    return 0;
}

static int h2_on_stream_close(nghttp2_session *s, int32_t sid, uint32_t error_code, void *ud)
{
    h2_t *t = ud;
    h2_req_t *r = nghttp2_session_get_stream_user_data(s, sid);
    if (!r || !r->active)
        return 0;
    int status = r->status;
    if (status >= 200 && status < 300 && error_code == NGHTTP2_NO_ERROR) {
        h2_report(t, r, status, true, false, NULL);
    } else if (status >= 200) {
        char why[160];
        snprintf(why, sizeof why, "HTTP %d from %s", status, t->s.cfg.endpoint);
        h2_report(t, r, status, false, transport_status_retryable(status), why);
    } else {
        char why[200];
        snprintf(why, sizeof why, "stream reset before a response: %s (endpoint %s)",
                 nghttp2_http2_strerror(error_code), t->s.cfg.endpoint);
        h2_report(t, r, 0, false, true, why);
    }
    h2_req_release(t, r);
    if (t->goaway && t->active == 0) {
        char why[200];
        snprintf(why, sizeof why, "peer sent GOAWAY (endpoint %s)", t->s.cfg.endpoint);
        transport_stream_schedule_close(&t->s, why);
    } else if (t->s.ev.on_writable && t->s.state == STREAM_UP) {
        if (t->refill_at && t->active <= t->refill_at)
            t->refill_at = 0;
        if (!t->refill_at)
            t->s.ev.on_writable(t->s.owner);
    }
    return 0;
}

static int h2_on_frame_recv(nghttp2_session *s, const nghttp2_frame *frame, void *ud)
{
    h2_t *t = ud;
    if (frame->hd.type == NGHTTP2_GOAWAY) {
        t->goaway = true;
        log_warn("feed %s: endpoint %s sent GOAWAY (%s); draining %u streams and reconnecting",
                 t->s.cfg.feed, t->s.cfg.endpoint, nghttp2_http2_strerror(frame->goaway.error_code),
                 t->active);
        if (t->active == 0) {
            char why[200];
            snprintf(why, sizeof why, "peer sent GOAWAY (endpoint %s)", t->s.cfg.endpoint);
            transport_stream_schedule_close(&t->s, why);
        }
    }
    return 0;
}

/* ---- libevent callbacks ---- */

static void h2_readcb(struct bufferevent *bev, void *arg)
{
    h2_t *t = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    if (t->s.state == STREAM_CONNECTING)
        return; /* a server may talk first: read it once the session exists */
    if (t->s.state != STREAM_UP) {
        evbuffer_drain(in, evbuffer_get_length(in));
        return;
    }
    t->s.busy = true;
    t->read_since_tick = true;
    while (evbuffer_get_length(in) > 0) {
        struct evbuffer_iovec v[8];
        int n = evbuffer_peek(in, -1, NULL, v, 8);
        size_t used = 0;
        for (int i = 0; i < n && i < 8; i++) {
            ssize_t rv = nghttp2_session_mem_recv(t->sess, v[i].iov_base, v[i].iov_len);
            if (rv < 0) {
                char why[200];
                snprintf(why, sizeof why, "HTTP/2 protocol error from %s: %s", t->s.cfg.endpoint,
                         nghttp2_strerror((int)rv));
                t->s.busy = false;
                evbuffer_drain(in, evbuffer_get_length(in));
                transport_stream_schedule_close(&t->s, why);
                return;
            }
            used += (size_t)rv;
        }
        evbuffer_drain(in, used);
        if (t->s.state != STREAM_UP)
            break;
    }
    t->s.busy = false;
    h2_lowat_update(t);
    h2_flush(t);
}

static void h2_writecb(struct bufferevent *bev, void *arg)
{
    h2_t *t = arg;
    h2_flush(t);
    if (t->s.state == STREAM_UP && t->s.ev.on_writable)
        t->s.ev.on_writable(t->s.owner);
    h2_lowat_update(t);
}

static int h2_on_error(nghttp2_session *s, int lib_error_code, const char *msg, size_t len,
                       void *ud)
{
    h2_t *t = ud;
    log_warn("feed %s: endpoint %s: HTTP/2 protocol error: %.*s", t->s.cfg.feed, t->s.cfg.endpoint,
             (int)len, msg);
    return 0;
}

static int h2_session_start(h2_t *t, char *why, size_t whylen)
{
    nghttp2_session_callbacks *cbs;
    if (nghttp2_session_callbacks_new(&cbs) != 0) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    nghttp2_session_callbacks_set_on_header_callback(cbs, h2_on_header);
    nghttp2_session_callbacks_set_send_data_callback(cbs, h2_send_data);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, h2_on_data_chunk);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, h2_on_stream_close);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, h2_on_frame_recv);
    nghttp2_session_callbacks_set_error_callback2(cbs, h2_on_error);
    int rv = nghttp2_session_client_new3(&t->sess, cbs, t, NULL, &t->ngmem);
    nghttp2_session_callbacks_del(cbs);
    if (rv != 0) {
        snprintf(why, whylen, "nghttp2 session: %s", nghttp2_strerror(rv));
        return -1;
    }
    /* Large receive windows: echo endpoints send the body back and must not stall. */
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
                                   {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20}};
    nghttp2_submit_settings(t->sess, NGHTTP2_FLAG_NONE, iv, 2);
    nghttp2_session_set_local_window_size(t->sess, NGHTTP2_FLAG_NONE, 0, 1 << 24);
    return 0;
}

static void h2_eventcb(struct bufferevent *bev, short what, void *arg)
{
    h2_t *t = arg;
    if (what & BEV_EVENT_CONNECTED) {
        char why[320];
        conn_established(bev);
        if (t->s.cfg.use_tls && !tls_alpn_is(conn_ssl(bev), "h2")) {
            snprintf(why, sizeof why,
                     "TLS endpoint %s did not negotiate ALPN h2 (HTTP/2 over TLS needs it)",
                     t->s.cfg.endpoint);
            transport_stream_close(&t->s, why);
            return;
        }
        if (h2_session_start(t, why, sizeof why) < 0) {
            transport_stream_close(&t->s, why);
            return;
        }
        t->s.state = STREAM_UP;
        t->goaway = false;
        bufferevent_setwatermark(bev, EV_WRITE, t->s.cfg.out_buf_max / 2, 0);
        bufferevent_enable(bev, EV_READ | EV_WRITE);
        log_info("feed %s: connected to %s (HTTP/2%s)", t->s.cfg.feed, t->s.cfg.endpoint,
                 t->s.cfg.use_tls ? " over TLS" : ", h2c");
        h2_flush(t);
        if (t->s.state == STREAM_UP)
            t->s.ev.on_up(t->s.owner);
        if (t->s.state == STREAM_UP && t->s.bev &&
            evbuffer_get_length(bufferevent_get_input(t->s.bev)))
            h2_readcb(t->s.bev, t);
        return;
    }
    transport_stream_lost(&t->s, what);
}

/* The teardown's part here (transport_stream_close, the socket is gone): the session goes and
 * every unreported request fails (retryable). */
static void h2_drop(transport_stream_t *st, const char *reason)
{
    h2_t *t = (h2_t *)st;
    t->goaway = false;
    if (t->sess) {
        nghttp2_session_del(t->sess);
        t->sess = NULL;
    }
    /* Release every slot before reporting so the owner sees consistent counts. */
    for (unsigned i = 0; i < t->n_reqs; i++) {
        h2_req_t *r = &t->reqs[i];
        if (r->active && !r->reported) {
            r->excerpt_len = 0;
            r->status = 0;
            h2_report(t, r, 0, false, true, reason);
        }
        if (r->active)
            h2_req_release(t, r);
    }
    t->pending = 0;
    t->refill_at = 0;
    t->rcvlowat = 1; /* the next connection's socket starts at the default */
    evtimer_del(t->lowat_ev);
}

/* Fails every request whose deadline has passed (oldest first) and re-arms for the next. A
 * report may send (the owner refills) or tear the connection down (which empties the queue):
 * the queue's head is read again after each. */
static void h2_timeoutcb(evutil_socket_t fd, short what, void *arg)
{
    h2_t *t = arg;
    t->timeout_armed = false;
    uint64_t now = h2_now_ms();
    bool any = false;
    while (t->q_head && t->q_head->deadline_ms <= now) {
        h2_req_t *r = t->q_head;
        h2_q_unlink(t, r);
        if (!r->active || r->reported)
            continue;
        char why[160];
        snprintf(why, sizeof why, "timeout after %u ms (endpoint %s)", t->s.cfg.timeout_ms,
                 t->s.cfg.endpoint);
        if (t->sess && r->stream_id > 0)
            nghttp2_submit_rst_stream(t->sess, NGHTTP2_FLAG_NONE, r->stream_id, NGHTTP2_CANCEL);
        r->excerpt_len = 0;
        h2_report(t, r, 0, false, true, why);
        any = true;
    }
    if (any) {
        h2_flush(t);
        h2_lowat_update(t); /* the RSTs closed the streams */
    }
    if (t->q_head && !t->timeout_armed)
        h2_arm_timeout(t, t->q_head->deadline_ms > now ? t->q_head->deadline_ms - now : 0);
}

/* ---- ops ---- */

static transport_t *h2_create(struct event_base *base, const transport_config_t *cfg,
                              const transport_events_t *ev, void *owner, char *err, size_t errlen)
{
    h2_t *t = (h2_t *)transport_stream_new(sizeof *t, &transport_h2_ops, base, cfg, ev, owner, err,
                                           errlen);
    if (!t)
        return NULL;
    t->s.drop = h2_drop;
    t->s.readcb = h2_readcb;
    t->s.writecb = h2_writecb;
    t->s.eventcb = h2_eventcb;
    if (!t->s.cfg.method)
        t->s.cfg.method = "POST";
    if (!t->s.cfg.path)
        t->s.cfg.path = "/";
    if (!t->s.cfg.content_type)
        t->s.cfg.content_type = "application/json";
    t->n_reqs = t->s.cfg.max_in_flight;
    t->reqs = calloc(t->n_reqs, sizeof *t->reqs);
    t->mem = mempool_new(H2_MEM_CACHED);
    if (t->mem)
        mempool_nghttp2_mem(t->mem, &t->ngmem);
    t->lowat_ev = evtimer_new(base, h2_lowat_tick, t);
    t->timeout_ev = evtimer_new(base, h2_timeoutcb, t);
    t->rcvlowat = 1;
    uint32_t wait_ms =
        t->s.cfg.timeout_ms / 4 < H2_LOWAT_WAIT_MS ? t->s.cfg.timeout_ms / 4 : H2_LOWAT_WAIT_MS;
    t->tv_lowat = (struct timeval){0, (suseconds_t)wait_ms * 1000};
    if (!t->reqs || !t->lowat_ev || !t->timeout_ev || !t->mem) {
        snprintf(err, errlen, "out of memory");
        transport_h2_ops.destroy(&t->s.base);
        return NULL;
    }
    for (unsigned i = t->n_reqs; i-- > 0;) {
        h2_req_t *r = &t->reqs[i];
        r->t = t;
        r->next_free = t->free_list;
        t->free_list = r;
    }
    if (cfg->authority)
        snprintf(t->authority, sizeof t->authority, "%s", cfg->authority);
    else if (strchr(cfg->host, ':'))
        snprintf(t->authority, sizeof t->authority, "[%s]:%s", cfg->host, cfg->port);
    else
        snprintf(t->authority, sizeof t->authority, "%s:%s", cfg->host, cfg->port);
    strcpy(t->scheme, cfg->use_tls ? "https" : "http");
    size_t n = 0;
    t->nv[n++] = h2_nv(":method", t->s.cfg.method);
    t->nv[n++] = h2_nv(":scheme", t->scheme);
    t->nv[n++] = h2_nv(":authority", t->authority);
    t->nv[n++] = h2_nv(":path", t->s.cfg.path);
    t->nv[n++] = h2_nv("content-type", t->s.cfg.content_type);
    for (size_t i = 0; i < cfg->n_headers && n < H2_MAX_NV - 1; i++)
        t->nv[n++] = h2_nv(cfg->headers[i].name, cfg->headers[i].value);
    t->n_nv = n;
    return &t->s.base;
}

static int h2_connect(transport_t *base)
{
    return transport_stream_connect((transport_stream_t *)base);
}

static unsigned h2_capacity(const transport_t *base)
{
    const h2_t *t = (const h2_t *)base;
    if (t->s.state != STREAM_UP || t->goaway || !t->sess)
        return 0;
    if (evbuffer_get_length(bufferevent_get_output(t->s.bev)) >= t->s.cfg.out_buf_max)
        return 0;
    if (t->refill_at && t->active > t->refill_at)
        return 0;
    unsigned cap = h2_window(t);
    return t->active >= cap ? 0 : cap - t->active;
}

static int h2_send(transport_t *base, const uint8_t *payload, size_t len, void *cookie)
{
    h2_t *t = (h2_t *)base;
    if (h2_capacity(base) == 0 || !t->free_list)
        return -1;
    h2_req_t *r = t->free_list;
    t->free_list = r->next_free;
    r->active = true;
    r->reported = false;
    r->cookie = cookie;
    r->data = payload;
    r->len = len;
    r->off = 0;
    r->sent = 0;
    r->status = 0;
    r->retry_after_ms = 0;
    r->excerpt_len = 0;
    buf_format_u64(r->clen, len); /* snprintf was 2 % of a one-copy request's instructions */
    t->active++;
    t->pending++;
    nghttp2_nv nva[H2_MAX_NV];
    memcpy(nva, t->nv, t->n_nv * sizeof *nva);
    nva[t->n_nv] = h2_nv("content-length", r->clen);
    nghttp2_data_provider dp = {.source.ptr = r, .read_callback = h2_read_body};
    int32_t sid = nghttp2_submit_request(t->sess, NULL, nva, t->n_nv + 1, &dp, r);
    if (sid < 0) {
        log_warn("feed %s: endpoint %s: cannot submit a request: %s", t->s.cfg.feed,
                 t->s.cfg.endpoint, nghttp2_strerror(sid));
        r->reported = true;
        t->pending--;
        h2_req_release(t, r);
        return -1;
    }
    r->stream_id = sid;
    h2_q_push(t, r);
    /* Once the window is full, new streams wait until a quarter of it has been answered
     * (silly-window avoidance, as TCP does for its window): refilled one stream per answer,
     * a saturated window settles into a write and a wake-up of both sides per copy, the
     * largest cost of a copy at full rate. Below saturation the window never fills and
     * nothing waits. */
    unsigned window = h2_window(t);
    if (t->active >= window) {
        t->refill_at = window - (window + 3) / 4;
        h2_lowat_update(t);
    }
    h2_flush(t);
    return 0;
}

static unsigned h2_in_flight(const transport_t *base)
{
    return ((const h2_t *)base)->pending;
}

static void h2_destroy(transport_t *base)
{
    h2_t *t = (h2_t *)base;
    if (t->sess)
        nghttp2_session_del(t->sess);
    free(t->reqs);
    if (t->lowat_ev)
        event_free(t->lowat_ev);
    if (t->timeout_ev)
        event_free(t->timeout_ev);
    if (t->mem)
        mempool_free_all(t->mem); /* after the session: it gave its blocks back */
    transport_stream_free(&t->s);
}

static const transport_ops_t transport_h2_ops = {
    .name = "http2",
    .create = h2_create,
    .connect = h2_connect,
    .send = h2_send,
    .capacity = h2_capacity,
    .in_flight = h2_in_flight,
    .is_up = transport_stream_is_up,
    .disconnect = transport_stream_disconnect,
    .destroy = h2_destroy,
};

/* ---- the descriptor: this transport as feeds, the admin and the schema see it ---- */

const transport_desc_t transport_desc_http2 = {
    .name = "http2",
    .url_example = "https://probe.example:8443/ingest",
    .sections = TRANSPORT_SECTION_TLS | TRANSPORT_SECTION_HTTP,
    .schemes = {{"http", false, "80"}, {"https", true, "443"}},
    .url_form = TRANSPORT_URL_NETWORK,
    .url_path = TRANSPORT_PATH_OPTIONAL,
    .alpn = "h2", /* https://; http:// is h2c with prior knowledge */
    .encodings = {"json", "frame", "passthrough", "xdr-jsonl"},
    .ops = &transport_h2_ops,
};
