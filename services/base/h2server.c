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
#include "clock.h"
#include "h2server-int.h"

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

#include "log.h"
#include "tls.h"

static void conn_free(h2conn_t *c);
static int conn_flush(h2conn_t *c);

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
            h2stream_release(st);
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
        c->last_io_ms = mono_now_ms();
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
        c->last_io_ms = mono_now_ms();
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
        c->last_io_ms = mono_now_ms();
        c->in_ng = true;
        ssize_t r = nghttp2_session_mem_recv(c->sess, buf, (size_t)n);
        c->in_ng = false;
        if (r < 0) {
            log_debug("h2server: %s: %s", c->peer, nghttp2_strerror((int)r));
            conn_free(c);
            return -1;
        }
        if ((size_t)n < sizeof buf && !netconn_pending(&c->nc)) {
            /* Drained: the answers leave at the end of this loop turn, after every other
             * connection that was readable has been read. Sent right here, each response
             * woke its client while the other requests of the turn still waited, and a client
             * on the same cores then preempted the server mid-turn (on 2 cores, ~0.2 times
             * per read); sent together, one wake-up finds the client already running. */
            if (!c->flush_pending) {
                c->flush_pending = true;
                event_active(c->flush_ev, EV_WRITE, 1);
            }
            return 0;
        }
        if (conn_flush(c))
            return -1;
    }
    return 0;
}

static int conn_session(h2conn_t *c)
{
    nghttp2_session_callbacks *cb;
    if (nghttp2_session_callbacks_new(&cb))
        return -1;
    h2stream_callbacks(cb);
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
    c->last_io_ms = mono_now_ms();
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
    int64_t idle = mono_now_ms() - c->last_io_ms;
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
    c->last_io_ms = mono_now_ms();
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
    mempool_nghttp2_mem(s->mem, &s->ngmem);
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

size_t h2server_buffered_bytes(const h2server_t *s)
{
    size_t n = s->buffered;
    for (const h2conn_t *c = s->conns; c; c = c->next)
        n += evbuffer_get_length(c->out);
    return n;
}
