/* ndd-sink: HTTP/2 server (h2c prior knowledge, and TLS with ALPN h2) on nghttp2 and
 * libevent. Any path; a request with a body is one delivery: its records are counted and it
 * is answered 200, or with the injected fault (status, delay, drop).
 *
 * Bounds: SETTINGS_MAX_CONCURRENT_STREAMS = --max-streams; a request body above --max-body
 * is answered 413; the bodies buffered on one connection are capped (CONN_BUFFER_MAX): a
 * stream that would pass it is reset with REFUSED_STREAM (the client may retry it). Stream
 * objects are pooled per connection, so steady traffic allocates nothing per request. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <nghttp2/nghttp2.h>

#include "log.h"
#include "sink.h"
#include "tls.h"

#define H2_OUT_HIGH (4u << 20)
#define CONN_BUFFER_MAX (256u << 20)
#define STREAM_POOL_MAX 64
#define STREAM_BODY_INITIAL 4096

typedef struct h2_conn h2_conn_t;

typedef struct h2_stream {
    int32_t id;
    h2_conn_t *conn;
    buf_t body;
    bool too_big;
    char ctype[96];
    struct event *delay_ev;
    int status;
    int retry_after_s;
    char resp[256]; /* error body */
    size_t resp_len, resp_off;
    struct h2_stream *next; /* pool, or the connection's list of live streams */
    struct h2_stream *prev;
} h2_stream_t;

struct h2_conn {
    sink_conn_t c; /* first */
    nghttp2_session *sess;
    h2_stream_t *live; /* streams with a request in progress or a delayed answer */
    h2_stream_t *pool;
    size_t npool;
    size_t buffered; /* body bytes held by live streams */
    bool drop;       /* fault: close without answering, after the current read */
    bool closing;
    buf_t infos; /* sink_record_info_t of the request being counted (reused) */
};

static void h2_conn_close(sink_conn_t *c);

static h2_stream_t *stream_get(h2_conn_t *hc, int32_t id)
{
    h2_stream_t *st = hc->pool;
    if (st) {
        hc->pool = st->next;
        hc->npool--;
        buf_reset(&st->body);
    } else {
        st = calloc(1, sizeof *st);
        if (!st)
            return NULL;
        buf_init(&st->body, 0, hc->c.sink->cfg.max_body);
    }
    st->id = id;
    st->conn = hc;
    st->too_big = false;
    st->ctype[0] = '\0';
    st->status = 0;
    st->retry_after_s = 0;
    st->resp_len = st->resp_off = 0;
    st->prev = NULL;
    st->next = hc->live;
    if (hc->live)
        hc->live->prev = st;
    hc->live = st;
    return st;
}

static void stream_put(h2_conn_t *hc, h2_stream_t *st)
{
    if (st->delay_ev) {
        event_free(st->delay_ev);
        st->delay_ev = NULL;
    }
    hc->buffered -= st->body.len;
    if (st->prev)
        st->prev->next = st->next;
    else
        hc->live = st->next;
    if (st->next)
        st->next->prev = st->prev;
    /* Keep small buffers for reuse; give big ones back. */
    if (hc->npool < STREAM_POOL_MAX && st->body.cap <= (1u << 20)) {
        buf_reset(&st->body);
        st->next = hc->pool;
        hc->pool = st;
        hc->npool++;
    } else {
        buf_free(&st->body);
        free(st);
    }
}

/* Drives nghttp2's output into the bufferevent. */
static int h2_flush(h2_conn_t *hc)
{
    for (;;) {
        const uint8_t *data;
        ssize_t n = nghttp2_session_mem_send(hc->sess, &data);
        if (n < 0) {
            log_warn("sink: %s connection %s: nghttp2 send: %s",
                     sink_transport_name(hc->c.transport), hc->c.peer, nghttp2_strerror((int)n));
            return -1;
        }
        if (n == 0)
            break;
        if (bufferevent_write(hc->c.bev, data, (size_t)n) != 0)
            return -1;
        if (evbuffer_get_length(bufferevent_get_output(hc->c.bev)) > H2_OUT_HIGH) {
            /* The client is not reading: stop reading it too until it catches up. */
            bufferevent_disable(hc->c.bev, EV_READ);
            break;
        }
    }
    return 0;
}

static ssize_t resp_read_cb(nghttp2_session *session, int32_t stream_id, uint8_t *buf,
                            size_t length, uint32_t *data_flags, nghttp2_data_source *source,
                            void *user_data)
{
    h2_stream_t *st = source->ptr;
    size_t left = st->resp_len - st->resp_off;
    size_t n = left < length ? left : length;
    memcpy(buf, st->resp + st->resp_off, n);
    st->resp_off += n;
    if (st->resp_off == st->resp_len)
        *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

static void respond(h2_stream_t *st)
{
    h2_conn_t *hc = st->conn;
    char status[8], ra[16], clen[24];
    nghttp2_nv nv[4];
    size_t n = 0;
    snprintf(status, sizeof status, "%d", st->status);
    nv[n++] = (nghttp2_nv){(uint8_t *)":status", (uint8_t *)status, 7, strlen(status),
                           NGHTTP2_NV_FLAG_NONE};
    snprintf(clen, sizeof clen, "%zu", st->resp_len);
    nv[n++] = (nghttp2_nv){(uint8_t *)"content-length", (uint8_t *)clen, 14, strlen(clen),
                           NGHTTP2_NV_FLAG_NONE};
    if (st->resp_len)
        nv[n++] = (nghttp2_nv){(uint8_t *)"content-type", (uint8_t *)"application/json", 12, 16,
                               NGHTTP2_NV_FLAG_NONE};
    if (st->retry_after_s > 0) {
        snprintf(ra, sizeof ra, "%d", st->retry_after_s);
        nv[n++] = (nghttp2_nv){(uint8_t *)"retry-after", (uint8_t *)ra, 11, strlen(ra),
                               NGHTTP2_NV_FLAG_NONE};
    }
    nghttp2_data_provider prd = {.source.ptr = st, .read_callback = resp_read_cb};
    int rv = nghttp2_submit_response(hc->sess, st->id, nv, n, st->resp_len ? &prd : NULL);
    if (rv != 0)
        log_warn("sink: %s connection %s stream %d: cannot respond: %s",
                 sink_transport_name(hc->c.transport), hc->c.peer, st->id, nghttp2_strerror(rv));
}

static void delay_cb(evutil_socket_t fd, short what, void *arg)
{
    h2_stream_t *st = arg;
    h2_conn_t *hc = st->conn;
    respond(st);
    if (h2_flush(hc) != 0)
        h2_conn_close(&hc->c);
}

static void collect_info(void *arg, const sink_record_info_t *info)
{
    buf_append((buf_t *)arg, info, sizeof *info);
}

/* A complete request: count, decide, answer. */
static void on_request(h2_stream_t *st)
{
    h2_conn_t *hc = st->conn;
    sink_t *s = hc->c.sink;
    sink_tstats_t *ts = &s->stats.t[hc->c.transport];
    ts->requests++;
    ts->bytes += st->body.len;
    if (st->too_big) {
        st->status = 413;
        st->resp_len = (size_t)snprintf(st->resp, sizeof st->resp,
                                        "{\"error\":\"body above %zu bytes\"}", s->cfg.max_body);
        ts->protocol_errors++;
        respond(st);
        return;
    }
    sink_verdict_t v;
    sink_fault_next(&s->fault, sink_now_s(), &v);
    if (v.drop) {
        log_info("sink: fault injection: closing %s connection %s at stream %d unanswered",
                 sink_transport_name(hc->c.transport), hc->c.peer, st->id);
        hc->drop = true;
        return;
    }
    if (v.status && (v.status < 200 || v.status > 299)) {
        ts->rejected++;
        st->status = v.status;
        st->retry_after_s = v.retry_after_s;
        st->resp_len = (size_t)snprintf(st->resp, sizeof st->resp,
                                        "{\"error\":\"fault injection: status %d\"}", v.status);
    } else {
        char err[192];
        buf_reset(&hc->infos);
        long n = sink_body_records(st->body.data ? st->body.data : (const uint8_t *)"",
                                   st->body.len, st->ctype[0] ? st->ctype : NULL, collect_info,
                                   &hc->infos, err, sizeof err);
        if (n < 0 || hc->infos.len != (size_t)n * sizeof(sink_record_info_t)) {
            ts->protocol_errors++;
            st->status = 400;
            st->resp_len = (size_t)snprintf(st->resp, sizeof st->resp, "{\"error\":\"%s\"}",
                                            n < 0 ? err : "too many records in one body");
            log_warn("sink: %s connection %s stream %d: %s", sink_transport_name(hc->c.transport),
                     hc->c.peer, st->id, n < 0 ? err : "too many records in one body");
        } else {
            const sink_record_info_t *infos = (const sink_record_info_t *)hc->infos.data;
            for (long i = 0; i < n; i++)
                sink_count_record(s, hc->c.transport, &infos[i]);
            st->status = v.status ? v.status : 200;
        }
    }
    if (v.delay_ms > 0) {
        st->delay_ev = evtimer_new(s->base, delay_cb, st);
        if (st->delay_ev) {
            struct timeval tv = {v.delay_ms / 1000, (v.delay_ms % 1000) * 1000};
            event_add(st->delay_ev, &tv);
            return;
        }
    }
    respond(st);
}

static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    h2_conn_t *hc = user_data;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    h2_stream_t *st = stream_get(hc, frame->hd.stream_id);
    if (!st)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* resets this stream only */
    nghttp2_session_set_stream_user_data(session, frame->hd.stream_id, st);
    return 0;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user_data)
{
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    h2_stream_t *st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (!st)
        return 0;
    if (namelen == 12 && memcmp(name, "content-type", 12) == 0) {
        size_t n = valuelen < sizeof st->ctype - 1 ? valuelen : sizeof st->ctype - 1;
        memcpy(st->ctype, value, n);
        st->ctype[n] = '\0';
    }
    return 0;
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t stream_id,
                         const uint8_t *data, size_t len, void *user_data)
{
    h2_conn_t *hc = user_data;
    h2_stream_t *st = nghttp2_session_get_stream_user_data(session, stream_id);
    if (!st || st->too_big)
        return 0;
    if (hc->buffered + len > CONN_BUFFER_MAX) {
        log_warn("sink: %s connection %s: %u MiB of request bodies buffered; refusing stream %d",
                 sink_transport_name(hc->c.transport), hc->c.peer, CONN_BUFFER_MAX >> 20,
                 stream_id);
        nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_REFUSED_STREAM);
        st->too_big = true;
        return 0;
    }
    if (buf_append(&st->body, data, len) != 0) {
        /* Past --max-body: keep reading (flow control) but answer 413 at the end. */
        st->too_big = true;
        hc->buffered -= st->body.len;
        buf_reset(&st->body);
        return 0;
    }
    hc->buffered += len;
    return 0;
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    if ((frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) ||
        !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    h2_stream_t *st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (st)
        on_request(st);
    /* A drop fault stops here: nothing after this request on the connection is read. */
    return st && st->conn->drop ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code,
                           void *user_data)
{
    h2_conn_t *hc = user_data;
    h2_stream_t *st = nghttp2_session_get_stream_user_data(session, stream_id);
    if (st) {
        nghttp2_session_set_stream_user_data(session, stream_id, NULL);
        stream_put(hc, st);
    }
    return 0;
}

static void h2_conn_close(sink_conn_t *c)
{
    h2_conn_t *hc = (h2_conn_t *)c;
    sink_conn_remove(c->sink, c);
    /* Streams first: nghttp2_session_del calls on_stream_close for the open ones. */
    if (hc->sess)
        nghttp2_session_del(hc->sess);
    while (hc->live)
        stream_put(hc, hc->live);
    while (hc->pool) {
        h2_stream_t *st = hc->pool;
        hc->pool = st->next;
        buf_free(&st->body);
        free(st);
    }
    if (c->bev)
        bufferevent_free(c->bev);
    buf_free(&hc->infos);
    free(hc);
}

static void h2_read_cb(struct bufferevent *bev, void *arg)
{
    h2_conn_t *hc = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t len = evbuffer_get_length(in);
    if (len == 0)
        return;
    const uint8_t *data = evbuffer_pullup(in, -1);
    ssize_t rv = nghttp2_session_mem_recv(hc->sess, data, len);
    if (hc->drop) {
        h2_conn_close(&hc->c);
        return;
    }
    if (rv < 0) {
        hc->c.sink->stats.t[hc->c.transport].protocol_errors++;
        log_warn("sink: %s connection %s: HTTP/2 error: %s; closing",
                 sink_transport_name(hc->c.transport), hc->c.peer, nghttp2_strerror((int)rv));
        h2_conn_close(&hc->c);
        return;
    }
    evbuffer_drain(in, len);
    if (h2_flush(hc) != 0) {
        h2_conn_close(&hc->c);
        return;
    }
    sink_t *s = hc->c.sink;
    if (!nghttp2_session_want_read(hc->sess) && !nghttp2_session_want_write(hc->sess) &&
        evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
        h2_conn_close(&hc->c);
    }
    sink_check_done(s);
}

static void h2_write_cb(struct bufferevent *bev, void *arg)
{
    h2_conn_t *hc = arg;
    bufferevent_enable(bev, EV_READ);
    if (h2_flush(hc) != 0 ||
        (!nghttp2_session_want_read(hc->sess) && !nghttp2_session_want_write(hc->sess) &&
         evbuffer_get_length(bufferevent_get_output(bev)) == 0))
        h2_conn_close(&hc->c);
}

static int h2_start(h2_conn_t *hc)
{
    sink_t *s = hc->c.sink;
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, s->cfg.max_streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1u << 20},
    };
    if (nghttp2_submit_settings(hc->sess, NGHTTP2_FLAG_NONE, iv, 2) != 0)
        return -1;
    /* A large connection window: many streams in flight without WINDOW_UPDATE stalls. */
    nghttp2_session_set_local_window_size(hc->sess, NGHTTP2_FLAG_NONE, 0, 64 << 20);
    return h2_flush(hc);
}

static void h2_event_cb(struct bufferevent *bev, short what, void *arg)
{
    h2_conn_t *hc = arg;
    if (what & BEV_EVENT_CONNECTED) {
        /* TLS handshake done: HTTP/2 only if ALPN said so. */
        bufferevent_set_timeouts(bev, NULL, NULL);
        SSL *ssl = bufferevent_openssl_get_ssl(bev);
        if (!ssl || !tls_alpn_is(ssl, "h2")) {
            log_warn("sink: h2tls connection %s did not negotiate ALPN h2; closing", hc->c.peer);
            hc->c.sink->stats.t[hc->c.transport].protocol_errors++;
            h2_conn_close(&hc->c);
            return;
        }
        if (h2_start(hc) != 0)
            h2_conn_close(&hc->c);
        return;
    }
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)) {
        if (what & BEV_EVENT_ERROR)
            sink_conn_log_tls_error(&hc->c, bev);
        h2_conn_close(&hc->c);
    }
}

void sink_h2_accept(sink_t *s, sink_transport_t t, int fd, const char *peer)
{
    h2_conn_t *hc = calloc(1, sizeof *hc);
    if (!hc) {
        log_error("sink: out of memory accepting %s connection %s", sink_transport_name(t), peer);
        close(fd);
        return;
    }
    hc->c.sink = s;
    hc->c.transport = t;
    hc->c.close = h2_conn_close;
    snprintf(hc->c.peer, sizeof hc->c.peer, "%s", peer);
    buf_init(&hc->infos, 0, 10000 * sizeof(sink_record_info_t));

    nghttp2_session_callbacks *cbs;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
    int rv = nghttp2_session_server_new(&hc->sess, cbs, hc);
    nghttp2_session_callbacks_del(cbs);
    hc->c.bev = sink_conn_bev_new(s, fd, t == SINK_H2TLS ? s->ssl_h2 : NULL);
    if (rv != 0 || !hc->c.bev) {
        log_error("sink: cannot set up %s connection %s", sink_transport_name(t), peer);
        if (!hc->c.bev)
            close(fd);
        sink_conn_add(s, &hc->c);
        h2_conn_close(&hc->c);
        return;
    }
    sink_conn_add(s, &hc->c);
    sink_conn_start(&hc->c, h2_read_cb, h2_write_cb, h2_event_cb, hc, H2_OUT_HIGH);
    if (t == SINK_H2 && h2_start(hc) != 0)
        h2_conn_close(&hc->c);
}
