/* The HTTP/2 server (h2server.h): one nghttp2 server session per accepted connection, read and
 * written through netconn (plain or TLS, the HTTP/1.1 server's socket I/O too), a stream
 * object per request that collects the header fields and the body and is handed to the
 * request callback once END_STREAM came.
 *
 * No bufferevent: a read is one recv() into a buffer on the stack that nghttp2 parses in
 * place, and the frames nghttp2 produces in one flush are gathered in one buffer and written
 * with one send() (one TLS record per 16 KiB); only what the socket does not take is kept, in
 * the connection's output queue. A bufferevent read was ioctl(FIONREAD) + readv() into an
 * evbuffer and re-armed its timeout each time, per request.
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

#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <nghttp2/nghttp2.h>
#include <openssl/crypto.h>

#include "h2check.h"
#include "log.h"
#include "mempool.h"
#include "netconn.h"
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
    bool malformed; /* reset with PROTOCOL_ERROR: nothing more of it is looked at */
    h2check_t check;
    char *hdr; /* "name\0value\0" pairs */
    size_t hdr_len, hdr_cap;
    size_t n_fields;             /* regular fields in hdr (their offsets: field_at) */
    bool too_many_fields;        /* more than H2SERVER_MAX_HEADERS came (not kept) */
    uint32_t method_at, path_at; /* 1 + the offset of :method's and :path's value, 0: none */
    uint8_t *body;
    size_t body_len, body_cap;
    uint8_t *resp; /* response body being sent (its buffer kept in the pool when small) */
    size_t resp_len, resp_off, resp_cap;
    h2server_stream_t *next, *prev; /* the connection's streams (or the server's pool) */
    h2server_request_t req;
    /* Where each regular field's name starts in hdr (hdr may move while fields come); after
     * req so that stream_new's clearing does not cover it: only the first n_fields count. */
    uint32_t field_at[H2SERVER_MAX_HEADERS];
};

struct h2conn {
    h2server_t *srv;
    netconn_t nc;
    nghttp2_session *sess;
    char peer[64];
    bool in_ng;       /* inside mem_recv/mem_send */
    bool closing;     /* flush the output, then free */
    bool handshaking; /* TLS handshake under way: no session yet */
    bool flush_pending;
    struct event *flush_ev; /* responses given outside a read: one flush per loop turn */
    struct event *timer;    /* the idle limit, looked at lazily (last_io_ms) */
    int64_t last_io_ms;     /* the last read or write that moved bytes */
    /* Frames the socket did not take at once, sent before any newer frame. Empty in the
     * common case: a flush's frames are written straight from the server's gather buffer. */
    struct evbuffer *out;
    h2server_stream_t *streams;
    h2conn_t *next, *prev;
    _Alignas(max_align_t) unsigned char memo[H2SERVER_CONN_MEMO_BYTES]; /* h2server_stream_memo */
};

#define GATHER_BYTES 65536
#define READ_BYTES 16384 /* a TLS record's payload at most: one SSL_read fills it */
#define READS_PER_TURN 16

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
    /* nghttp2's own allocations (a stream, its queued frames, its decoded fields per
     * request), for every session of this server: free lists instead of malloc, at most
     * MEM_CACHED bytes kept. */
    mempool_t *mem;
    nghttp2_mem ngmem;
    /* Where one flush gathers nghttp2's frames to write them in one send(): a connection's
     * flush never runs inside another's (one thread, nghttp2 callbacks never flush), so one
     * buffer serves every connection. */
    uint8_t gather[GATHER_BYTES];
};

#define POOL_MAX 256
#define MEM_CACHED (1u << 20)
#define POOL_HDR_MAX 4096
#define POOL_RESP_MAX 4096

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
    h2server_t *srv = st->srv;
    if (srv && srv->n_pool < POOL_MAX && st->hdr_cap <= POOL_HDR_MAX) {
        if (st->resp_cap > POOL_RESP_MAX) {
            free(st->resp);
            st->resp = NULL;
            st->resp_cap = 0;
        }
        st->next = srv->pool;
        srv->pool = st;
        srv->n_pool++;
        return;
    }
    free(st->resp);
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
        st->resp = NULL;
        st->resp_cap = 0;
    } else {
        srv->pool = st->next;
        srv->n_pool--;
    }
    /* Everything but the request record, which stream_dispatch fills (it is 2.6 KB: clearing
     * it per request was the largest memset of the copy path). */
    char *hdr = st->hdr;
    size_t hdr_cap = st->hdr_cap;
    uint8_t *resp = st->resp;
    size_t resp_cap = st->resp_cap;
    memset(st, 0, offsetof(h2server_stream_t, req));
    st->hdr = hdr;
    st->hdr_cap = hdr_cap;
    st->resp = resp;
    st->resp_cap = resp_cap;
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
        if (body_len > st->resp_cap) {
            uint8_t *nb = malloc(body_len);
            if (!nb)
                return -1;
            free(st->resp);
            st->resp = nb;
            st->resp_cap = body_len;
        }
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

/* RFC 9113 §8.1.1: a malformed request's stream is reset with PROTOCOL_ERROR; nothing of it
 * reaches the owner. Its memory goes when nghttp2 closes the stream (on_stream_close). */
static int stream_malformed(h2server_stream_t *st, const char *why)
{
    h2conn_t *c = st->conn;
    st->malformed = true;
    log_debug("h2server: %s: stream %d: malformed request: %s", c->peer, (int)st->id, why);
    c->srv->buffered -= st->body_cap;
    free(st->body);
    st->body = NULL;
    st->body_len = st->body_cap = 0;
    return nghttp2_submit_rst_stream(c->sess, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_PROTOCOL_ERROR)
               ? NGHTTP2_ERR_CALLBACK_FAILURE
               : 0;
}

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

static int on_header(nghttp2_session *sess, const nghttp2_frame *f, nghttp2_rcbuf *name_buf,
                     nghttp2_rcbuf *value_buf, uint8_t flags, void *user)
{
    h2server_stream_t *st = nghttp2_session_get_stream_user_data(sess, f->hd.stream_id);
    if (!st || st->malformed || f->hd.type != NGHTTP2_HEADERS)
        return 0;
    nghttp2_vec nm = nghttp2_rcbuf_get_buf(name_buf), val = nghttp2_rcbuf_get_buf(value_buf);
    const uint8_t *name = nm.base, *value = val.base;
    size_t namelen = nm.len, valuelen = val.len;
    /* A static name is one of HPACK's static table: nghttp2 hands those out as static
     * buffers. */
    const char *why = h2check_field(&st->check, name, namelen, nghttp2_rcbuf_is_static(name_buf),
                                    value, valuelen, f->headers.cat != NGHTTP2_HCAT_REQUEST);
    if (why)
        return stream_malformed(st, why);
    /* Kept: the regular fields (up to H2SERVER_MAX_HEADERS), :method and :path, each as
     * "name\0value\0" with its place noted, so stream_dispatch need not look for them. The
     * header list size is bounded by SETTINGS_MAX_HEADER_LIST_SIZE already. */
    uint32_t *note = NULL;
    if (name[0] == ':') {
        if (namelen == 7 && !memcmp(name, ":method", 7))
            note = &st->method_at;
        else if (namelen == 5 && !memcmp(name, ":path", 5))
            note = &st->path_at;
        else
            return 0;
    } else if (st->n_fields == H2SERVER_MAX_HEADERS) {
        st->too_many_fields = true;
        return 0;
    }
    size_t at = st->hdr_len;
    if (reserve(&st->hdr, &st->hdr_len, &st->hdr_cap, namelen + valuelen + 2, 1 << 17))
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    st->hdr_len += namelen + valuelen + 2;
    memcpy(st->hdr + at, name, namelen);
    st->hdr[at + namelen] = 0;
    memcpy(st->hdr + at + namelen + 1, value, valuelen);
    st->hdr[at + namelen + 1 + valuelen] = 0;
    if (note) {
        *note = (uint32_t)(at + namelen + 2);
    } else {
        st->req.fields[st->n_fields].name_len = namelen;
        st->req.fields[st->n_fields].value_len = valuelen;
        st->field_at[st->n_fields++] = (uint32_t)at;
    }
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
    if (!st || st->too_big || st->malformed)
        return 0;
    const char *why = h2check_data(&st->check, len, false);
    if (why)
        return stream_malformed(st, why);
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
    r->n_fields = st->n_fields;
    r->too_many_fields = st->too_many_fields;
    r->method = st->method_at ? st->hdr + st->method_at - 1 : "";
    r->path = st->path_at ? st->hdr + st->path_at - 1 : "";
    for (size_t i = 0; i < st->n_fields; i++) {
        r->fields[i].name = st->hdr + st->field_at[i];
        r->fields[i].value = r->fields[i].name + r->fields[i].name_len + 1;
    }
    r->body = st->body ? st->body : (const uint8_t *)"";
    r->body_len = st->body_len;
    r->peer = c->peer;
    r->ssl = c->nc.ssl;
    st->handed = true;
    c->srv->o.on_request(c->srv->o.arg, st, r);
}

static int on_frame_recv(nghttp2_session *sess, const nghttp2_frame *f, void *user)
{
    h2conn_t *c = user;
    if (f->hd.type != NGHTTP2_DATA && f->hd.type != NGHTTP2_HEADERS)
        return 0;
    h2server_stream_t *st = nghttp2_session_get_stream_user_data(sess, f->hd.stream_id);
    if (!st || st->malformed)
        return 0;
    bool end = f->hd.flags & NGHTTP2_FLAG_END_STREAM;
    const char *why = NULL;
    if (f->hd.type == NGHTTP2_DATA)
        why = end ? h2check_data(&st->check, 0, true) : NULL;
    else if (f->headers.cat == NGHTTP2_HCAT_REQUEST)
        why = h2check_headers_end(&st->check, end);
    else
        why = h2check_trailers_end(&st->check, end);
    if (why)
        return stream_malformed(st, why);
    if (end && !st->responded && !st->handed)
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

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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
    if (c->timer)
        event_free(c->timer);
    if (c->out)
        evbuffer_free(c->out);
    OPENSSL_cleanse(c->memo, sizeof c->memo); /* the owner may keep a credential there */
    netconn_close(&c->nc, c->closing && !c->handshaking);
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

/* Sends what the output queue holds, as far as the socket takes it. -1: the connection
 * failed (the caller frees it). */
static int out_send(h2conn_t *c)
{
    size_t len;
    while ((len = evbuffer_get_length(c->out)) > 0) {
        /* TLS: at most a record's worth per write, the same bytes first on a retry. */
        if (len > READ_BYTES)
            len = READ_BYTES;
        const uint8_t *p = evbuffer_pullup(c->out, (ssize_t)len);
        ssize_t w = p ? netconn_write(&c->nc, p, len) : -1;
        if (w == NETCONN_AGAIN)
            return 0;
        if (w < 0)
            return -1;
        evbuffer_drain(c->out, (size_t)w);
        c->last_io_ms = mono_ms();
    }
    return 0;
}

/* Writes p straight to the socket when nothing is queued before it; what the socket does not
 * take is queued. -1: the connection failed. */
static int out_put(h2conn_t *c, const uint8_t *p, size_t n)
{
    while (n && evbuffer_get_length(c->out) == 0) {
        ssize_t w = netconn_write(&c->nc, p, n);
        if (w == NETCONN_AGAIN)
            break;
        if (w < 0)
            return -1;
        p += w;
        n -= (size_t)w;
        c->last_io_ms = mono_ms();
    }
    return n && evbuffer_add(c->out, p, n) ? -1 : 0;
}

/* Sends the queue, then pulls frames from nghttp2 while the queue is under out_max, gathering
 * them to write them in as few sends as they fit in; arms the events for what remains. -1
 * when c was freed. */
static int conn_flush(h2conn_t *c)
{
    if (c->in_ng || !c->sess)
        return 0;
    h2server_t *s = c->srv;
    bool failed = out_send(c) != 0;
    c->in_ng = true;
    while (!failed) {
        size_t gathered = 0;
        bool more = false; /* nghttp2 may have more, held back by the bound */
        while (!failed && !(more = evbuffer_get_length(c->out) + gathered >= s->o.out_max)) {
            const uint8_t *p;
            ssize_t n = nghttp2_session_mem_send(c->sess, &p);
            if (n < 0) {
                c->closing = true;
                break;
            }
            if (n == 0)
                break;
            if (gathered + (size_t)n > sizeof s->gather) {
                failed = out_put(c, s->gather, gathered) != 0;
                gathered = 0;
            }
            if ((size_t)n > sizeof s->gather) {
                failed = failed || out_put(c, p, (size_t)n) != 0;
            } else {
                memcpy(s->gather + gathered, p, (size_t)n);
                gathered += (size_t)n;
            }
        }
        if (gathered && !failed)
            failed = out_put(c, s->gather, gathered) != 0;
        /* All written and nghttp2 held back frames for the bound: pull again, since no write
         * event would come for an empty queue. */
        if (!more || evbuffer_get_length(c->out))
            break;
    }
    c->in_ng = false;
    if (failed) {
        log_debug("h2server: %s: write failed, closed", c->peer);
        conn_free(c);
        return -1;
    }
    size_t queued = evbuffer_get_length(c->out);
    netconn_want_write(&c->nc, (queued && !c->nc.write_wants_read) || c->nc.read_wants_write);
    /* Over the bound: stop reading until the client took some of it (nghttp2 acknowledges
     * SETTINGS and PINGs into its own queue: a client that floods them and does not read would
     * otherwise grow it). A TLS write waiting for a read keeps the read event. */
    if (queued >= s->o.out_max || c->closing)
        netconn_want_read(&c->nc, c->nc.write_wants_read);
    else
        netconn_want_read(&c->nc, true);
    if (!nghttp2_session_want_read(c->sess) && !nghttp2_session_want_write(c->sess))
        c->closing = true;
    if (c->closing && queued == 0) {
        conn_free(c);
        return -1;
    }
    return 0;
}

/* Reads and parses what the socket holds: one recv() per READ_BYTES, fewer than that means
 * the socket is drained (epoll is level-triggered: more data wakes the loop again), at most
 * READS_PER_TURN of them so that one busy client does not hold the loop. -1 when c was
 * freed. */
static int conn_input(h2conn_t *c)
{
    uint8_t buf[READ_BYTES];
    for (int i = 0; i < READS_PER_TURN; i++) {
        if (c->closing || evbuffer_get_length(c->out) >= c->srv->o.out_max)
            return 0;
        ssize_t n = netconn_read(&c->nc, buf, sizeof buf);
        if (n == NETCONN_AGAIN)
            return 0;
        if (n <= 0) {
            log_debug("h2server: %s: %s", c->peer, n ? "read failed" : "closed by the client");
            conn_free(c);
            return -1;
        }
        c->last_io_ms = mono_ms();
        c->in_ng = true;
        ssize_t r = nghttp2_session_mem_recv(c->sess, buf, (size_t)n);
        c->in_ng = false;
        if (r < 0) {
            log_debug("h2server: %s: %s", c->peer, nghttp2_strerror((int)r));
            conn_free(c);
            return -1;
        }
        if (conn_flush(c))
            return -1;
        if ((size_t)n < sizeof buf && !netconn_pending(&c->nc))
            return 0;
    }
    return 0;
}

static int conn_session(h2conn_t *c)
{
    nghttp2_session_callbacks *cb;
    if (nghttp2_session_callbacks_new(&cb))
        return -1;
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback2(cb, on_header);
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
    /* RFC 9113's checks of a request's fields and body are h2check's (one pass per field);
     * nghttp2's own were an eighth of a small read's instructions. */
    nghttp2_option_set_no_http_messaging(opt, 1);
    int rc = nghttp2_session_server_new3(&c->sess, cb, c, opt, &c->srv->ngmem);
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

/* The session, once the connection is ready for HTTP/2 (accepted h2c, or TLS with ALPN h2
 * done): nghttp2's SETTINGS go out at once. -1 when c was freed. */
static int conn_start(h2conn_t *c)
{
    if (c->nc.ssl && !tls_alpn_is(c->nc.ssl, "h2")) {
        log_debug("h2server: %s: TLS client did not negotiate ALPN h2", c->peer);
        conn_free(c);
        return -1;
    }
    if (conn_session(c)) {
        log_warn("h2server: %s: cannot start an HTTP/2 session (out of memory)", c->peer);
        conn_free(c);
        return -1;
    }
    return conn_flush(c);
}

static int conn_handshake(h2conn_t *c)
{
    char e[256];
    int r = netconn_handshake(&c->nc, e, sizeof e);
    if (r == 0)
        return 0;
    if (r < 0) {
        log_debug("h2server: %s: TLS handshake failed: %s", c->peer, e);
        conn_free(c);
        return -1;
    }
    c->handshaking = false;
    c->last_io_ms = mono_ms();
    if (conn_start(c))
        return -1;
    /* The first request may have come with the handshake's last flight. */
    return netconn_pending(&c->nc) ? conn_input(c) : 0;
}

static void conn_on_read(evutil_socket_t fd, short what, void *arg)
{
    h2conn_t *c = arg;
    if (c->handshaking) {
        conn_handshake(c);
        return;
    }
    if (c->nc.write_wants_read) {
        c->nc.write_wants_read = false;
        if (conn_flush(c))
            return;
    }
    conn_input(c);
}

static void conn_on_write(evutil_socket_t fd, short what, void *arg)
{
    h2conn_t *c = arg;
    if (c->handshaking) {
        conn_handshake(c);
        return;
    }
    if (c->nc.read_wants_write) {
        c->nc.read_wants_write = false;
        if (conn_input(c))
            return;
    }
    if (conn_flush(c))
        return;
    /* Bytes TLS decrypted while the output was over its bound wake no read event. */
    if (netconn_pending(&c->nc))
        conn_input(c);
}

/* The deferred flush of responses given outside a read (h2server_respond). */
static void conn_flush_cb(evutil_socket_t fd, short what, void *arg)
{
    h2conn_t *c = arg;
    c->flush_pending = false;
    conn_on_write(fd, what, c);
}

static void timer_add(h2conn_t *c, int64_t ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    event_add(c->timer, &tv);
}

/* The idle limit: no byte moved either way for idle_timeout_s (a stalled TLS handshake, a
 * client gone quiet, one that stopped reading). Armed once and moved on lazily, instead of
 * re-arming a timeout on every read. */
static void conn_on_timer(evutil_socket_t fd, short what, void *arg)
{
    h2conn_t *c = arg;
    int64_t limit = (int64_t)c->srv->o.idle_timeout_s * 1000;
    int64_t idle = mono_ms() - c->last_io_ms;
    if (idle >= limit) {
        log_debug("h2server: %s: idle for %d s, closed", c->peer, c->srv->o.idle_timeout_s);
        conn_free(c);
        return;
    }
    timer_add(c, limit - idle);
}

/* A connection on fd (ssl: a session whose handshake is done, or NULL), linked into the
 * server; NULL (fd and ssl closed) when out of memory. */
static h2conn_t *conn_new(h2server_t *s, evutil_socket_t fd, SSL *ssl, const char *peer)
{
    h2conn_t *c = calloc(1, sizeof *c);
    if (c) {
        c->nc.fd = -1;
        c->out = evbuffer_new();
        c->flush_ev = event_new(s->base, -1, 0, conn_flush_cb, c);
        c->timer = event_new(s->base, -1, 0, conn_on_timer, c);
    }
    if (!c || !c->out || !c->flush_ev || !c->timer ||
        netconn_init(&c->nc, s->base, fd, conn_on_read, conn_on_write, c)) {
        log_warn("h2server: %s: cannot take a new connection (out of memory)", peer);
        if (c) {
            if (c->out)
                evbuffer_free(c->out);
            if (c->flush_ev)
                event_free(c->flush_ev);
            if (c->timer)
                event_free(c->timer);
            free(c);
        }
        if (ssl)
            SSL_free(ssl);
        evutil_closesocket(fd);
        return NULL;
    }
    if (ssl)
        netconn_tls_adopt(&c->nc, ssl);
    c->srv = s;
    snprintf(c->peer, sizeof c->peer, "%s", peer);
    /* Frames of separate flushes (deferred responses) must not wait for the client's delayed
     * ACK of the previous ones. */
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->n_conns++;
    c->last_io_ms = mono_ms();
    timer_add(c, (int64_t)s->o.idle_timeout_s * 1000);
    return c;
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
                      void *arg)
{
    h2server_t *s = arg;
    char ip[INET6_ADDRSTRLEN], peer[64];
    netconn_peer_name(sa, ip, sizeof ip, peer, sizeof peer);
    h2conn_t *c = conn_new(s, fd, NULL, peer);
    if (!c)
        return;
    if (s->n_conns == s->o.max_connections)
        evconnlistener_disable(s->lst);
    if (s->o.ssl_ctx) {
        char err[256];
        if (netconn_tls_accept(&c->nc, s->o.ssl_ctx, err, sizeof err)) {
            log_error("h2server: %s: TLS: %s", c->peer, err);
            conn_free(c);
            return;
        }
        c->handshaking = true;
        netconn_want_read(&c->nc, true); /* the client speaks first */
        return;
    }
    conn_start(c);
}

static void *ng_malloc(size_t n, void *pool)
{
    return mempool_alloc(pool, n);
}

static void ng_free(void *ptr, void *pool)
{
    mempool_free(pool, ptr);
}

static void *ng_calloc(size_t nmemb, size_t n, void *pool)
{
    return mempool_calloc(pool, nmemb, n);
}

static void *ng_realloc(void *ptr, size_t n, void *pool)
{
    return mempool_realloc(pool, ptr, n);
}

/* A server with the documented defaults filled in and no listener: what both h2server_new
 * and h2server_new_detached start from. */
static h2server_t *h2server_alloc(struct event_base *base, const h2server_options_t *opts,
                                  char *err, size_t errlen)
{
    h2server_t *s = calloc(1, sizeof *s);
    if (!s || !(s->mem = mempool_new(MEM_CACHED))) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->ngmem = (nghttp2_mem){s->mem, ng_malloc, ng_free, ng_calloc, ng_realloc};
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
        mempool_free_all(s->mem);
        free(s);
        return NULL;
    }
    s->lst = evconnlistener_new_bind(base, on_accept, s, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE,
                                     1024, (struct sockaddr *)&ss, sslen);
    if (!s->lst) {
        snprintf(err, errlen, "cannot listen on %s: %s", spec, strerror(errno));
        mempool_free_all(s->mem);
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
    if (s->n_conns >= s->o.max_connections) {
        if (ssl)
            SSL_free(ssl);
        evutil_closesocket(fd);
        return -1;
    }
    h2conn_t *c = conn_new(s, fd, ssl, peer ? peer : "?");
    if (!c)
        return -1;
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
    if (conn_flush(c))
        return 0; /* taken, and already gone (the client's bytes ended it) */
    /* Bytes TLS decrypted along with the handshake wake no read event. */
    if (netconn_pending(&c->nc))
        conn_input(c);
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
        free(st->resp);
        free(st->hdr);
        free(st);
    }
    mempool_free_all(s->mem); /* after the sessions: they gave their blocks back */
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
        n += evbuffer_get_length(c->out);
    return n;
}
