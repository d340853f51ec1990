/* The HTTP/2 server (h2server.h): one nghttp2 server session per accepted connection on a
 * bufferevent (plain or bufferevent_openssl), a stream object per request that collects the
 * header fields and the body and is handed to the request callback once END_STREAM came.
 *
 * A stream lives until both nghttp2 closed it and the owner responded: a deferred response
 * may come after the client reset the stream or left, so the owner's h2server_respond is
 * what finally frees it. A connection that goes away detaches its held streams (conn NULL).
 *
 * nghttp2 forbids calling mem_send/mem_recv or freeing the session from inside its own
 * callbacks: the connection is only freed from libevent callbacks, never from nghttp2's.
 * libnghttp2 1.52 (Debian 12) has nghttp2_session_mem_send, not yet mem_send2. */
#include "h2server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <nghttp2/nghttp2.h>
#include <openssl/crypto.h>

#include "log.h"
#include "tls.h"

typedef struct h2conn h2conn_t;

struct h2server_stream {
    h2conn_t *conn;  /* NULL once the connection is gone */
    h2server_t *srv; /* for the pool: set while the server lives */
    int32_t id;
    bool closed;    /* nghttp2 closed the stream (or the connection went away) */
    bool handed;    /* given to on_request: the owner must respond */
    bool responded; /* a response was submitted (or 413 by the server itself) */
    bool too_big;
    char *hdr; /* "name\0value\0" pairs */
    size_t hdr_len, hdr_cap;
    size_t n_pairs;
    uint8_t *body;
    size_t body_len, body_cap;
    uint8_t *resp; /* response body being sent */
    size_t resp_len, resp_off;
    h2server_stream_t *next, *prev; /* the connection's streams (or the server's pool) */
    h2server_request_t req;
};

struct h2conn {
    h2server_t *srv;
    struct bufferevent *bev;
    nghttp2_session *sess;
    SSL *ssl;
    char peer[64];
    bool in_ng;   /* inside mem_recv/mem_send */
    bool closing; /* flush the output, then free */
    bool reading; /* EV_READ enabled on bev (enable/disable only on a change) */
    bool flush_pending;
    struct event *flush_ev; /* responses given outside a read: one flush per loop turn */
    /* h2c only: the frames of one flush, written to the socket by conn_flush itself while the
     * bufferevent's output is empty. Adding them to that output instead armed its write event
     * (two epoll_ctl and one more epoll_wait round per response); only what the socket does
     * not take at once goes there. Empty between flushes. */
    struct evbuffer *stage;
    h2server_stream_t *streams;
    h2conn_t *next, *prev;
    _Alignas(max_align_t) unsigned char memo[H2SERVER_CONN_MEMO_BYTES]; /* h2server_stream_memo */
};

struct h2server {
    struct event_base *base;
    struct evconnlistener *lst;
    h2server_options_t o;
    uint16_t port;
    size_t n_conns;
    size_t buffered; /* bodies held */
    h2conn_t *conns;
    /* Released streams kept for the next requests (their header buffer too): no calloc of
     * a stream and its request record per request once warm. At most POOL_MAX, each header
     * buffer at most POOL_HDR_MAX: a burst's streams are not all kept, so after it the idle
     * server holds at most 256 * (~2.7 KB stream + 4 KiB headers), under 2 MiB, whatever the
     * number of connections was; 256 is more than one connection's default max_streams (100),
     * so a busy connection or a few draw from the pool without reaching malloc. */
    h2server_stream_t *pool;
    size_t n_pool;
};

#define POOL_MAX 256
#define POOL_HDR_MAX 4096

static void conn_free(h2conn_t *c);
static int conn_flush(h2conn_t *c);

/* ---- streams ---- */

static void stream_release(h2server_stream_t *st)
{
    if (st->conn) {
        h2conn_t *c = st->conn;
        c->srv->buffered -= st->body_cap;
        if (st->prev)
            st->prev->next = st->next;
        else
            c->streams = st->next;
        if (st->next)
            st->next->prev = st->prev;
        if (c->sess && !st->closed)
            nghttp2_session_set_stream_user_data(c->sess, st->id, NULL);
    }
    free(st->body);
    free(st->resp);
    h2server_t *srv = st->srv;
    if (srv && srv->n_pool < POOL_MAX && st->hdr_cap <= POOL_HDR_MAX) {
        st->next = srv->pool;
        srv->pool = st;
        srv->n_pool++;
        return;
    }
    free(st->hdr);
    free(st);
}

/* A stream for a new request: from the pool (its header buffer kept) or new. */
static h2server_stream_t *stream_new(h2server_t *srv)
{
    h2server_stream_t *st = srv->pool;
    if (!st) {
        st = malloc(sizeof *st);
        if (!st)
            return NULL;
        st->hdr = NULL;
        st->hdr_cap = 0;
    } else {
        srv->pool = st->next;
        srv->n_pool--;
    }
    /* Everything but the request record, which stream_dispatch fills (it is 2.6 KB: clearing
     * it per request was the largest memset of the copy path). */
    char *hdr = st->hdr;
    size_t hdr_cap = st->hdr_cap;
    memset(st, 0, offsetof(h2server_stream_t, req));
    st->hdr = hdr;
    st->hdr_cap = hdr_cap;
    st->srv = srv;
    return st;
}

/* Room for n more bytes at *buf + *len (capacity doubling, at most limit); 0 or -1. */
static int reserve(char **buf, size_t *len, size_t *cap, size_t n, size_t limit)
{
    if (*len + n > limit)
        return -1;
    if (*len + n > *cap) {
        size_t nc = *cap ? *cap : 256;
        while (nc < *len + n)
            nc *= 2;
        if (nc > limit)
            nc = limit;
        char *nb = realloc(*buf, nc);
        if (!nb)
            return -1;
        *buf = nb;
        *cap = nc;
    }
    return 0;
}

static int append(char **buf, size_t *len, size_t *cap, const void *p, size_t n, size_t limit)
{
    if (reserve(buf, len, cap, n, limit))
        return -1;
    memcpy(*buf + *len, p, n);
    *len += n;
    return 0;
}

static ssize_t resp_read(nghttp2_session *sess, int32_t id, uint8_t *out, size_t len,
                         uint32_t *flags, nghttp2_data_source *src, void *user)
{
    h2server_stream_t *st = src->ptr;
    size_t n = st->resp_len - st->resp_off;
    if (n > len)
        n = len;
    if (n)
        memcpy(out, st->resp + st->resp_off, n);
    st->resp_off += n;
    if (st->resp_off == st->resp_len)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

static int stream_submit(h2server_stream_t *st, int status, const h2server_header_t *hdrs,
                         size_t n_hdrs, const void *body, size_t body_len)
{
    h2conn_t *c = st->conn;
    nghttp2_nv nv[32];
    char code[8];
    if (status >= 100 && status <= 999) {
        code[0] = (char)('0' + status / 100);
        code[1] = (char)('0' + status / 10 % 10);
        code[2] = (char)('0' + status % 10);
        code[3] = 0;
    } else {
        snprintf(code, sizeof code, "%d", status);
    }
    size_t n = 0;
    nv[n++] =
        (nghttp2_nv){(uint8_t *)":status", (uint8_t *)code, 7, strlen(code), NGHTTP2_NV_FLAG_NONE};
    for (size_t i = 0; i < n_hdrs && n < 32; i++)
        nv[n++] = (nghttp2_nv){(uint8_t *)hdrs[i].name, (uint8_t *)hdrs[i].value,
                               strlen(hdrs[i].name), strlen(hdrs[i].value), NGHTTP2_NV_FLAG_NONE};
    if (body_len) {
        st->resp = malloc(body_len);
        if (!st->resp)
            return -1;
        memcpy(st->resp, body, body_len);
        st->resp_len = body_len;
    }
    nghttp2_data_provider dp = {.source.ptr = st, .read_callback = resp_read};
    st->responded = true;
    return nghttp2_submit_response(c->sess, st->id, nv, n, body_len ? &dp : NULL) == 0 ? 0 : -1;
}

int h2server_respond(h2server_stream_t *st, int status, const h2server_header_t *hdrs,
                     size_t n_hdrs, const void *body, size_t body_len)
{
    st->handed = false;
    if (!st->conn || st->closed || st->responded) {
        stream_release(st);
        return -1;
    }
    /* The request body is done with (Kafka acknowledged it): give its memory back now. */
    st->conn->srv->buffered -= st->body_cap;
    free(st->body);
    st->body = NULL;
    st->body_cap = st->body_len = 0;
    h2conn_t *c = st->conn;
    int rc = stream_submit(st, status, hdrs, n_hdrs, body, body_len);
    /* Inside a read (an immediate answer) conn_read flushes when nghttp2 is done; a deferred
     * answer (Kafka's acknowledgements come in batches) is flushed once per loop turn, so the
     * responses of one batch leave in one write instead of one each. */
    if (!c->in_ng && !c->flush_pending) {
        c->flush_pending = true;
        event_active(c->flush_ev, EV_WRITE, 1);
    }
    return rc;
}

bool h2server_stream_open(const h2server_stream_t *st)
{
    return st->conn && !st->closed;
}

void *h2server_stream_memo(h2server_stream_t *st)
{
    return st->conn ? st->conn->memo : NULL;
}

/* ---- nghttp2 callbacks ---- */

static int on_begin_headers(nghttp2_session *sess, const nghttp2_frame *f, void *user)
{
    h2conn_t *c = user;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    h2server_stream_t *st = stream_new(c->srv);
    if (!st)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    st->conn = c;
    st->id = f->hd.stream_id;
    st->next = c->streams;
    if (c->streams)
        c->streams->prev = st;
    c->streams = st;
    nghttp2_session_set_stream_user_data(sess, st->id, st);
    return 0;
}

static int on_header(nghttp2_session *sess, const nghttp2_frame *f, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user)
{
    h2server_stream_t *st = nghttp2_session_get_stream_user_data(sess, f->hd.stream_id);
    if (!st || f->hd.type != NGHTTP2_HEADERS)
        return 0;
    /* The header list size is bounded by SETTINGS_MAX_HEADER_LIST_SIZE already. */
    size_t at = st->hdr_len;
    if (reserve(&st->hdr, &st->hdr_len, &st->hdr_cap, namelen + valuelen + 2, 1 << 17))
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    st->hdr_len += namelen + valuelen + 2;
    memcpy(st->hdr + at, name, namelen);
    st->hdr[at + namelen] = 0;
    memcpy(st->hdr + at + namelen + 1, value, valuelen);
    st->hdr[at + namelen + 1 + valuelen] = 0;
    st->n_pairs++;
    /* The body buffer at its announced size: one allocation instead of a doubling series
     * (a longer body still grows it; above max_body it is refused in on_data). */
    if (namelen == 14 && !memcmp(name, "content-length", 14) && !st->body && valuelen <= 9) {
        size_t cl = 0;
        for (size_t i = 0; i < valuelen && value[i] >= '0' && value[i] <= '9'; i++)
            cl = cl * 10 + (size_t)(value[i] - '0');
        if (cl > 0 && cl <= st->conn->srv->o.max_body && (st->body = malloc(cl))) {
            st->body_cap = cl;
            st->conn->srv->buffered += cl;
        }
    }
    return 0;
}

static int on_data(nghttp2_session *sess, uint8_t flags, int32_t id, const uint8_t *data,
                   size_t len, void *user)
{
    h2conn_t *c = user;
    h2server_stream_t *st = nghttp2_session_get_stream_user_data(sess, id);
    if (!st || st->too_big)
        return 0;
    size_t cap0 = st->body_cap;
    if (append((char **)&st->body, &st->body_len, &st->body_cap, data, len, c->srv->o.max_body)) {
        /* Past the limit: answer 413 at once; what else comes for this stream is dropped. */
        st->too_big = true;
        c->srv->buffered -= cap0;
        free(st->body);
        st->body = NULL;
        st->body_len = st->body_cap = 0;
        static const char msg[] = "request body exceeds the size limit\n";
        stream_submit(st, 413, NULL, 0, msg, sizeof msg - 1);
        return 0;
    }
    c->srv->buffered += st->body_cap - cap0;
    return 0;
}

static void stream_dispatch(h2conn_t *c, h2server_stream_t *st)
{
    h2server_request_t *r = &st->req;
    r->n_fields = 0;
    r->too_many_fields = false;
    r->method = "";
    r->path = "";
    const char *p = st->hdr;
    for (size_t i = 0; i < st->n_pairs; i++) {
        size_t nl = strlen(p);
        const char *v = p + nl + 1;
        size_t vl = strlen(v);
        if (nl && p[0] == ':') {
            if (!strcmp(p, ":method"))
                r->method = v;
            else if (!strcmp(p, ":path"))
                r->path = v;
        } else if (r->n_fields < H2SERVER_MAX_HEADERS) {
            r->fields[r->n_fields++] = (h2server_field_t){p, nl, v, vl};
        } else {
            r->too_many_fields = true;
        }
        p = v + vl + 1;
    }
    r->body = st->body ? st->body : (const uint8_t *)"";
    r->body_len = st->body_len;
    r->peer = c->peer;
    r->ssl = c->ssl;
    st->handed = true;
    c->srv->o.on_request(c->srv->o.arg, st, r);
}

static int on_frame_recv(nghttp2_session *sess, const nghttp2_frame *f, void *user)
{
    h2conn_t *c = user;
    if ((f->hd.type != NGHTTP2_DATA && f->hd.type != NGHTTP2_HEADERS) ||
        !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    h2server_stream_t *st = nghttp2_session_get_stream_user_data(sess, f->hd.stream_id);
    if (st && !st->responded && !st->handed)
        stream_dispatch(c, st);
    return 0;
}

static int on_stream_close(nghttp2_session *sess, int32_t id, uint32_t code, void *user)
{
    h2server_stream_t *st = nghttp2_session_get_stream_user_data(sess, id);
    if (!st)
        return 0;
    st->closed = true;
    if (!st->handed)
        stream_release(st);
    return 0;
}

/* ---- connections ---- */

static void conn_free(h2conn_t *c)
{
    h2server_t *s = c->srv;
    while (c->streams) {
        h2server_stream_t *st = c->streams;
        c->streams = st->next;
        s->buffered -= st->body_cap;
        if (st->handed) { /* its owner still responds; then it is freed */
            st->conn = NULL;
            st->srv = NULL; /* not pooled: the server may be gone by then */
            st->closed = true;
        } else {
            st->conn = NULL;
            stream_release(st);
        }
    }
    if (c->sess)
        nghttp2_session_del(c->sess);
    if (c->flush_ev)
        event_free(c->flush_ev);
    if (c->stage)
        evbuffer_free(c->stage);
    OPENSSL_cleanse(c->memo, sizeof c->memo); /* the owner may keep a credential there */
    if (c->bev)
        bufferevent_free(c->bev); /* closes the socket (and frees the SSL) */
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    if (s->n_conns-- == s->o.max_connections && s->lst)
        evconnlistener_enable(s->lst);
    free(c);
}

/* Pulls frames from nghttp2 while the socket's output is under out_max. -1 when c was freed. */
static int conn_flush(h2conn_t *c)
{
    if (c->in_ng || !c->sess)
        return 0;
    struct evbuffer *out = bufferevent_get_output(c->bev);
    c->in_ng = true;
    for (;;) {
        /* Nothing queued before these frames (else they go behind it): write them ourselves. */
        struct evbuffer *dst = c->stage && evbuffer_get_length(out) == 0 ? c->stage : out;
        bool more = false; /* nghttp2 has more, held back by the bound */
        while (!(more = evbuffer_get_length(dst) >= c->srv->o.out_max)) {
            const uint8_t *p;
            ssize_t n = nghttp2_session_mem_send(c->sess, &p);
            if (n < 0) {
                c->closing = true;
                break;
            }
            if (n == 0)
                break;
            evbuffer_add(dst, p, (size_t)n);
        }
        if (dst != c->stage)
            break;
        evutil_socket_t fd = bufferevent_getfd(c->bev);
        while (evbuffer_get_length(dst) && evbuffer_write(dst, fd) > 0)
            ;
        /* The rest (the socket is full, or failed: the bufferevent's own write then reports
         * the error to conn_event) is the bufferevent's to send, moved, not copied; its write
         * callback (conn_write) pulls the next frames. All written and more to come: pull
         * again now, since no write callback would. */
        if (evbuffer_get_length(dst)) {
            evbuffer_add_buffer(out, dst);
            break;
        }
        if (!more)
            break;
    }
    c->in_ng = false;
    /* Over the bound: stop reading until the client took some of it (conn_write). */
    if (evbuffer_get_length(out) >= c->srv->o.out_max) {
        if (c->reading)
            bufferevent_disable(c->bev, EV_READ);
        c->reading = false;
    } else if (!c->closing && !c->reading) {
        bufferevent_enable(c->bev, EV_READ);
        c->reading = true;
    }
    if (!nghttp2_session_want_read(c->sess) && !nghttp2_session_want_write(c->sess))
        c->closing = true;
    if (c->closing && evbuffer_get_length(out) == 0) {
        conn_free(c);
        return -1;
    }
    return 0;
}

static void conn_read(struct bufferevent *bev, void *arg)
{
    h2conn_t *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t len;
    while ((len = evbuffer_get_contiguous_space(in)) > 0) {
        const uint8_t *p = evbuffer_pullup(in, (ssize_t)len);
        c->in_ng = true;
        ssize_t n = nghttp2_session_mem_recv(c->sess, p, len);
        c->in_ng = false;
        if (n < 0) {
            log_debug("h2server: %s: %s", c->peer, nghttp2_strerror((int)n));
            conn_free(c);
            return;
        }
        evbuffer_drain(in, (size_t)n);
        /* Stop taking input while the output is over its bound (nghttp2 acknowledges SETTINGS
         * and PINGs into its own queue: a client that floods them and does not read would
         * otherwise grow it). */
        if (evbuffer_get_length(bufferevent_get_output(bev)) >= c->srv->o.out_max)
            break;
        if (conn_flush(c) || c->closing)
            return;
    }
    conn_flush(c);
}

static void conn_write(struct bufferevent *bev, void *arg)
{
    h2conn_t *c = arg;
    if (conn_flush(c))
        return;
    /* Input left unread while the output was over its bound. */
    if (c->sess && !c->closing && evbuffer_get_length(bufferevent_get_input(bev)) &&
        evbuffer_get_length(bufferevent_get_output(bev)) < c->srv->o.out_max)
        conn_read(bev, c);
}

/* The deferred flush of responses given outside a read (h2server_respond). */
static void conn_flush_cb(evutil_socket_t fd, short what, void *arg)
{
    h2conn_t *c = arg;
    c->flush_pending = false;
    conn_write(c->bev, c);
}

static int conn_session(h2conn_t *c)
{
    if (!c->ssl && !(c->stage = evbuffer_new()))
        return -1;
    nghttp2_session_callbacks *cb;
    if (nghttp2_session_callbacks_new(&cb))
        return -1;
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    nghttp2_option *opt;
    nghttp2_option_new(&opt);
    /* Bound what nghttp2 itself may queue for a peer that does not read. */
    nghttp2_option_set_max_outbound_ack(opt, 64);
    /* A closed stream is not kept around as a node of RFC 7540's priority tree (nothing here
     * schedules by it): one allocation and tree work less per request. */
    nghttp2_option_set_no_closed_streams(opt, 1);
    int rc = nghttp2_session_server_new2(&c->sess, cb, c, opt);
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cb);
    if (rc)
        return -1;
    uint32_t win = c->srv->o.max_body > 0x7fffffff ? 0x7fffffff : (uint32_t)c->srv->o.max_body;
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, c->srv->o.max_streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, win < 65535 ? 65535 : win},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, 65536},
        /* RFC 9218: the client need not send RFC 7540 priorities, and nghttp2 then keeps no
         * dependency tree for a client that does not either. */
        {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},
    };
    if (nghttp2_submit_settings(c->sess, NGHTTP2_FLAG_NONE, iv, sizeof iv / sizeof iv[0]))
        return -1;
    /* The connection's receive window: 1 MiB instead of HTTP/2's 64 KiB, so many streams'
     * small bodies do not wait for a WINDOW_UPDATE every 32 KiB. Memory stays bounded by
     * the streams (max_streams, each at most max_body), not by this window. */
    return nghttp2_session_set_local_window_size(c->sess, NGHTTP2_FLAG_NONE, 0, 1 << 20) ? -1 : 0;
}

static void conn_event(struct bufferevent *bev, short what, void *arg)
{
    h2conn_t *c = arg;
    if (what & BEV_EVENT_CONNECTED) {
        if (c->ssl && !tls_alpn_is(c->ssl, "h2")) {
            log_debug("h2server: %s: TLS client did not negotiate ALPN h2", c->peer);
            conn_free(c);
            return;
        }
        if (conn_session(c)) {
            conn_free(c);
            return;
        }
        conn_flush(c);
        return;
    }
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
        conn_free(c);
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
                      void *arg)
{
    h2server_t *s = arg;
    h2conn_t *c = calloc(1, sizeof *c);
    if (!c) {
        evutil_closesocket(fd);
        return;
    }
    c->srv = s;
    char ip[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (sa->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, ip, sizeof ip);
        port = ntohs(((struct sockaddr_in *)sa)->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr, ip, sizeof ip);
        port = ntohs(((struct sockaddr_in6 *)sa)->sin6_port);
    }
    snprintf(c->peer, sizeof c->peer, "%s:%u", ip, port);
    if (s->o.ssl_ctx) {
        char err[256];
        c->ssl = tls_server_ssl_new(s->o.ssl_ctx, err, sizeof err);
        if (c->ssl)
            c->bev = bufferevent_openssl_socket_new(s->base, fd, c->ssl, BUFFEREVENT_SSL_ACCEPTING,
                                                    BEV_OPT_CLOSE_ON_FREE);
    } else {
        c->bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
    }
    if (!c->bev) {
        if (c->ssl)
            SSL_free(c->ssl);
        evutil_closesocket(fd);
        free(c);
        return;
    }
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    if (++s->n_conns == s->o.max_connections)
        evconnlistener_disable(s->lst);
    c->flush_ev = event_new(s->base, -1, 0, conn_flush_cb, c);
    if (!c->flush_ev) {
        conn_free(c);
        return;
    }
    bufferevent_setcb(c->bev, conn_read, conn_write, conn_event, c);
    bufferevent_setwatermark(c->bev, EV_WRITE, s->o.out_max / 2, 0);
    struct timeval tv = {s->o.idle_timeout_s, 0};
    bufferevent_set_timeouts(c->bev, &tv, NULL);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    c->reading = true;
    if (!c->ssl)
        conn_event(c->bev, BEV_EVENT_CONNECTED, c);
}

/* A server with the documented defaults filled in and no listener: what both h2server_new
 * and h2server_new_detached start from. */
static h2server_t *h2server_alloc(struct event_base *base, const h2server_options_t *opts,
                                  char *err, size_t errlen)
{
    h2server_t *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->base = base;
    s->o = *opts;
    if (!s->o.bind_addr)
        s->o.bind_addr = "127.0.0.1";
    if (!s->o.max_streams)
        s->o.max_streams = 100;
    if (!s->o.max_body)
        s->o.max_body = 1 << 20;
    if (!s->o.out_max)
        s->o.out_max = 256 << 10;
    if (!s->o.max_connections)
        s->o.max_connections = 1024;
    if (!s->o.idle_timeout_s)
        s->o.idle_timeout_s = 60;
    return s;
}

h2server_t *h2server_new(struct event_base *base, const h2server_options_t *opts, char *err,
                         size_t errlen)
{
    h2server_t *s = h2server_alloc(base, opts, err, errlen);
    if (!s)
        return NULL;
    struct sockaddr_storage ss;
    int sslen = sizeof ss;
    char spec[128];
    snprintf(spec, sizeof spec, strchr(s->o.bind_addr, ':') ? "[%s]:%u" : "%s:%u", s->o.bind_addr,
             (unsigned)s->o.port);
    if (evutil_parse_sockaddr_port(spec, (struct sockaddr *)&ss, &sslen)) {
        snprintf(err, errlen, "bad listen address %s", spec);
        free(s);
        return NULL;
    }
    s->lst = evconnlistener_new_bind(base, on_accept, s, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE,
                                     1024, (struct sockaddr *)&ss, sslen);
    if (!s->lst) {
        snprintf(err, errlen, "cannot listen on %s: %s", spec, strerror(errno));
        free(s);
        return NULL;
    }
    struct sockaddr_storage bound;
    socklen_t bl = sizeof bound;
    getsockname(evconnlistener_get_fd(s->lst), (struct sockaddr *)&bound, &bl);
    s->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                : ((struct sockaddr_in *)&bound)->sin_port);
    return s;
}

h2server_t *h2server_new_detached(struct event_base *base, const h2server_options_t *opts,
                                  char *err, size_t errlen)
{
    h2server_t *s = h2server_alloc(base, opts, err, errlen);
    if (s)
        s->o.ssl_ctx = NULL; /* adopted connections arrive with their TLS session made */
    return s;
}

int h2server_adopt(h2server_t *s, int fd, SSL *ssl, const char *peer, const void *data, size_t len)
{
    h2conn_t *c = s->n_conns < s->o.max_connections ? calloc(1, sizeof *c) : NULL;
    if (!c) {
        if (ssl)
            SSL_free(ssl);
        evutil_closesocket(fd);
        return -1;
    }
    c->srv = s;
    c->ssl = ssl;
    snprintf(c->peer, sizeof c->peer, "%s", peer ? peer : "?");
    c->bev = ssl ? bufferevent_openssl_socket_new(s->base, fd, ssl, BUFFEREVENT_SSL_OPEN,
                                                  BEV_OPT_CLOSE_ON_FREE)
                 : bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (!c->bev) {
        if (ssl)
            SSL_free(ssl);
        evutil_closesocket(fd);
        free(c);
        return -1;
    }
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->n_conns++;
    bufferevent_setcb(c->bev, conn_read, conn_write, conn_event, c);
    bufferevent_setwatermark(c->bev, EV_WRITE, s->o.out_max / 2, 0);
    struct timeval tv = {s->o.idle_timeout_s, 0};
    bufferevent_set_timeouts(c->bev, &tv, NULL);
    if (conn_session(c)) {
        conn_free(c);
        return -1;
    }
    if (len) {
        c->in_ng = true;
        ssize_t n = nghttp2_session_mem_recv(c->sess, data, len);
        c->in_ng = false;
        if (n < 0) {
            log_debug("h2server: %s: %s", c->peer, nghttp2_strerror((int)n));
            conn_free(c);
            return -1;
        }
    }
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    conn_flush(c);
    return 0;
}

void h2server_free(h2server_t *s)
{
    if (!s)
        return;
    if (s->lst)
        evconnlistener_free(s->lst);
    s->lst = NULL;
    while (s->conns)
        conn_free(s->conns);
    while (s->pool) {
        h2server_stream_t *st = s->pool;
        s->pool = st->next;
        free(st->hdr);
        free(st);
    }
    free(s);
}

uint16_t h2server_port(const h2server_t *s)
{
    return s->port;
}

size_t h2server_connections(const h2server_t *s)
{
    return s->n_conns;
}

size_t h2server_buffered_bytes(const h2server_t *s)
{
    size_t n = s->buffered;
    for (const h2conn_t *c = s->conns; c; c = c->next)
        n += evbuffer_get_length(bufferevent_get_output(c->bev));
    return n;
}
