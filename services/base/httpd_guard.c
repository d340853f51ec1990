/* The connection guard of the HTTP server (httpd.h): what keeps one slow or hostile client
 * from making /healthz, /readyz, /metrics and the admin API unreachable (a "slowloris":
 * many connections, each sending a partial request and then one byte now and then).
 *
 * libevent 2.1's evhttp has one timeout that restarts with every byte and no hook when a
 * request begins, so the guard watches each connection's input buffer itself (an evbuffer
 * callback sees every byte before evhttp parses it): the first byte of a request arms a
 * deadline for its header, the blank line ending the header re-arms it for the body by its
 * Content-Length, and the request reaching its handler disarms it. A deadline that passes
 * closes the connection. Admission happens when a connection is accepted, by client address:
 * over a cap, the connection waiting longest without a request in service is evicted (see
 * httpd.h for the rules and docs/observability.md for why eviction and a probe reserve were
 * chosen over a separate probe listener).
 *
 * The same watch on the output side turns libevent's own error pages (the only text/html
 * NDD ever sends: 413 for a body over the limit, 400, 431, 501) into the server's JSON error
 * body before they leave. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/listener.h>

#include "httpd_int.h"
#include "log.h"

#define GUARD_BODY_RATE (64 * 1024) /* bytes/s a body must average, past header_timeout_s */
#define GUARD_RESERVE_TIMEOUT_S 2   /* a probe-reserve connection's whole request */
#define GUARD_WARN_EVERY_MS 10000

typedef enum {
    GC_IDLE,   /* no byte of a request yet (new, or keep-alive after a reply) */
    GC_HEADER, /* reading the header */
    GC_BODY,   /* reading a body of known length */
    GC_CHUNKED /* reading a chunked body (its end is seen by evhttp) */
} guard_state_t;

struct httpd_conn {
    httpd_t *h;
    struct bufferevent *bev;
    struct evhttp_connection *evcon; /* NULL until attached */
    struct event *deadline;
    struct evbuffer_cb_entry *in_cb, *out_cb;
    httpd_conn_t *next, *prev; /* h->conns */
    httpd_conn_t *hnext;       /* h->hash */
    char addr[64];
    guard_state_t state;
    bool serving; /* a request is in its handler or its reply is being sent */
    bool reserve; /* admitted past the caps: probes only */
    bool out_watch, rewriting;
    bool request_pending; /* a whole request header was waiting in the socket at admission */
    int64_t since_ms;     /* when the current state began: the eviction order */
    /* header scan */
    char line[48];
    size_t line_len;
    int64_t content_length; /* -1: none seen */
    bool chunked;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static size_t hash_of(const httpd_t *h, const struct bufferevent *bev)
{
    uintptr_t v = (uintptr_t)bev;
    return (size_t)((v >> 4) ^ (v >> 12)) & h->hash_mask;
}

static httpd_conn_t *conn_find(httpd_t *h, const struct bufferevent *bev)
{
    for (httpd_conn_t *c = h->hash[hash_of(h, bev)]; c; c = c->hnext)
        if (c->bev == bev)
            return c;
    return NULL;
}

static void arm(httpd_conn_t *c, int seconds, int64_t extra_ms)
{
    int64_t ms = (int64_t)seconds * 1000 + extra_ms;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
    event_add(c->deadline, &tv);
}

static void warn_limited(httpd_t *h, const char *what, const httpd_conn_t *c)
{
    int64_t now = mono_ms();
    if (now - h->warned_ms < GUARD_WARN_EVERY_MS) {
        log_debug("httpd: port %u: %s (%s)", h->port, what, c->addr);
        return;
    }
    h->warned_ms = now;
    log_warn("httpd: port %u: %s (client %s, %zu connections open; logged at most every %d s)",
             h->port, what, c->addr, (size_t)h->nconn, GUARD_WARN_EVERY_MS / 1000);
}

/* Closes the connection now. Only from an event callback of the loop (never from inside
 * evhttp or a bufferevent callback of this connection). */
static void conn_drop(httpd_conn_t *c)
{
    if (c->evcon)
        evhttp_connection_free(c->evcon); /* conn_closed frees c */
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    httpd_conn_t *c = arg;
    if (c->serving) {
        arm(c, 1, 0); /* a pipelined request waits for the reply before it; look again */
        return;
    }
    warn_limited(c->h,
                 c->state == GC_IDLE ? "connection closed: no request in time"
                                     : "connection closed: request not read whole by its deadline",
                 c);
    conn_drop(c);
}

/* ---- input: where each request begins and where its header ends ---- */

static void header_line_done(httpd_conn_t *c)
{
    size_t n = c->line_len < sizeof c->line ? c->line_len : sizeof c->line - 1;
    c->line[n] = '\0';
    if (strncasecmp(c->line, "content-length:", 15) == 0)
        c->content_length = strtoll(c->line + 15, NULL, 10);
    else if (strncasecmp(c->line, "transfer-encoding:", 18) == 0 &&
             !strcasestr(c->line, "identity"))
        c->chunked = true;
}

static void header_end(httpd_conn_t *c)
{
    httpd_t *h = c->h;
    c->since_ms = mono_ms();
    if (c->chunked) {
        c->state = GC_CHUNKED;
        arm(c, h->header_timeout_s, (int64_t)h->max_body * 1000 / GUARD_BODY_RATE);
    } else if (c->content_length > 0) {
        c->state = GC_BODY;
        arm(c, h->header_timeout_s, c->content_length * 1000 / GUARD_BODY_RATE);
    } else {
        c->state = GC_IDLE; /* whole: evhttp dispatches it now */
        c->since_ms = mono_ms();
    }
}

static void request_start(httpd_conn_t *c)
{
    c->state = GC_HEADER;
    c->line_len = 0;
    c->content_length = -1;
    c->chunked = false;
    c->since_ms = mono_ms();
    if (!c->reserve)
        arm(c, c->h->header_timeout_s, 0);
}

/* Follows new input bytes through the states of the connection's requests. */
static void scan(httpd_conn_t *c, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (c->state == GC_BODY) {
            size_t take = n - i;
            if ((int64_t)take > c->content_length)
                take = (size_t)c->content_length;
            c->content_length -= (int64_t)take;
            i += take - 1;
            if (c->content_length == 0) {
                c->state = GC_IDLE;
                c->since_ms = mono_ms();
            }
            continue;
        }
        if (c->state == GC_CHUNKED)
            return; /* evhttp finds its end; the deadline bounds it */
        if (c->state == GC_IDLE) {
            if (ch == '\r' || ch == '\n')
                continue;
            request_start(c);
        }
        if (ch == '\r')
            continue; /* lines end in CRLF or LF */
        if (ch == '\n') {
            if (c->line_len == 0)
                header_end(c);
            else
                header_line_done(c);
            c->line_len = 0;
        } else {
            if (c->line_len < sizeof c->line - 1)
                c->line[c->line_len] = ch;
            c->line_len++;
        }
    }
}

static void on_input(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
    httpd_conn_t *c = arg;
    if (!info->n_added)
        return;
    c->request_pending = false; /* read now: the states below say the rest */
    size_t len = evbuffer_get_length(buf);
    size_t n = info->n_added < len ? info->n_added : len;
    struct evbuffer_ptr p;
    if (evbuffer_ptr_set(buf, &p, len - n, EVBUFFER_PTR_SET) != 0)
        return;
    char tmp[1024];
    while (n) {
        if (c->state == GC_BODY && c->content_length > 0) {
            size_t skip = (int64_t)n < c->content_length ? n : (size_t)c->content_length;
            c->content_length -= (int64_t)skip;
            if (c->content_length == 0) {
                c->state = GC_IDLE;
                c->since_ms = mono_ms();
            }
            n -= skip;
            if (n && evbuffer_ptr_set(buf, &p, skip, EVBUFFER_PTR_ADD) != 0)
                return;
            continue;
        }
        if (c->state == GC_CHUNKED)
            return;
        size_t k = n < sizeof tmp ? n : sizeof tmp;
        ev_ssize_t got = evbuffer_copyout_from(buf, &p, tmp, k);
        if (got <= 0)
            return;
        scan(c, tmp, (size_t)got);
        n -= (size_t)got;
        if (n && evbuffer_ptr_set(buf, &p, (size_t)got, EVBUFFER_PTR_ADD) != 0)
            return;
    }
}

/* ---- output: libevent's HTML error pages become the JSON error body ---- */

static void on_output(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
    httpd_conn_t *c = arg;
    if (c->rewriting || !info->n_added)
        return;
    if (info->orig_size == 0)
        c->out_watch = true; /* a response starts at the front */
    if (!c->out_watch)
        return;
    struct evbuffer_ptr e = evbuffer_search(buf, "\r\n\r\n", 4, NULL);
    size_t len = evbuffer_get_length(buf);
    if (e.pos < 0) {
        if (len > 4096)
            c->out_watch = false;
        return;
    }
    size_t hl = (size_t)e.pos + 4;
    char head[2048];
    if (hl >= sizeof head) {
        c->out_watch = false;
        return;
    }
    evbuffer_copyout(buf, head, hl);
    head[hl] = '\0';
    /* libevent's own pages are errors; a handler's HTML (ndd-gui-api serves the console's
     * index.html) is a success and passes untouched. */
    if (strncmp(head, "HTTP/1.", 7) != 0 || atoi(head + 9) < 400 ||
        !strcasestr(head, "\r\nContent-Type: text/html")) {
        c->out_watch = false; /* one of ours */
        return;
    }
    const char *clh = strcasestr(head, "\r\nContent-Length:");
    size_t cl = clh ? (size_t)strtoull(clh + 17, NULL, 10) : 0;
    if (len < hl + cl)
        return; /* libevent adds the page after the header */
    c->out_watch = false;
    int status = atoi(head + 9);
    char status_line[128];
    size_t sl = strcspn(head, "\r");
    snprintf(status_line, sizeof status_line, "%.*s", (int)sl, head);
    const char *reason = strchr(status_line + 9, ' ');
    buf_t body;
    buf_init(&body, 0, 4096);
    char msg[160];
    if (status == 413)
        snprintf(msg, sizeof msg, "request body exceeds the limit of %zu bytes", c->h->max_body);
    else
        snprintf(msg, sizeof msg, "%s", reason ? reason + 1 : httpd_status_kind(status));
    httpd_error_body(c->h, status, msg, &body);
    c->rewriting = true;
    evbuffer_drain(buf, hl + cl);
    evbuffer_add_printf(buf,
                        "%s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                        "Connection: close\r\n\r\n",
                        status_line, body.len);
    evbuffer_add(buf, body.data, body.len);
    c->rewriting = false;
    buf_free(&body);
    log_info("httpd: port %u: %s: %s", c->h->port, c->addr, status_line);
}

/* ---- admission ---- */

static void conn_closed(struct evhttp_connection *evcon, void *arg)
{
    httpd_conn_t *c = arg;
    httpd_t *h = c->h;
    if (h->nconn)
        h->nconn--;
    if (c->reserve && h->nreserve)
        h->nreserve--;
    if (c->prev)
        c->prev->next = c->next;
    else
        h->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    httpd_conn_t **pp = &h->hash[hash_of(h, c->bev)];
    while (*pp && *pp != c)
        pp = &(*pp)->hnext;
    if (*pp)
        *pp = c->hnext;
    if (c->in_cb)
        evbuffer_remove_cb_entry(bufferevent_get_input(c->bev), c->in_cb);
    if (c->out_cb)
        evbuffer_remove_cb_entry(bufferevent_get_output(c->bev), c->out_cb);
    event_free(c->deadline);
    free(c);
    log_debug("httpd: port %u: connection closed, %zu open", h->port, (size_t)h->nconn);
    if (h->listener_paused && !h->freeing && h->nconn < h->max_conn + h->probe_reserve && h->sock) {
        evconnlistener_enable(evhttp_bound_socket_get_listener(h->sock));
        h->listener_paused = false;
    }
}

/* The connection to evict for a new one, of addr (NULL: of any address): never one with a
 * request in service; first those part-way through a request (a slow client's), oldest first,
 * then idle ones, oldest first. Partial requests go first because a probe's connection is
 * idle between its accept and its request (one packet), while a slowloris's sits on a
 * partial header: a flood of new slow connections then evicts its own kind, not the probe. */
static bool whole_request_waiting(const httpd_conn_t *c);

static httpd_conn_t *evictable(httpd_t *h, const httpd_conn_t *except, const char *addr)
{
    httpd_conn_t *best;
again:
    best = NULL;
    for (httpd_conn_t *x = h->conns; x; x = x->next) {
        if (x == except || x->serving || x->reserve || !x->evcon || x->request_pending)
            continue;
        if (addr && strcmp(x->addr, addr) != 0)
            continue;
        bool partial = x->state != GC_IDLE, best_partial = best && best->state != GC_IDLE;
        if (!best || (partial && !best_partial) ||
            (partial == best_partial && x->since_ms <= best->since_ms))
            best = x;
    }
    /* An idle pick may be a probe whose request arrived after its admission and is not read
     * yet (a burst of accepts runs before any read): looked at again, it is spared. Each
     * look marks one connection, so this ends. */
    if (best && best->state == GC_IDLE && whole_request_waiting(best)) {
        best->request_pending = true;
        goto again;
    }
    return best;
}

/* A probe or a scrape sends its whole request in one packet, usually there before the
 * connection is even admitted: such a connection is about to be in service, so no newer
 * connection may evict it before its first read (plain TCP only; TLS bytes are opaque). */
static bool whole_request_waiting(const httpd_conn_t *c)
{
    evutil_socket_t fd = bufferevent_getfd(c->bev);
    if (c->h->ssl_ctx || fd < 0)
        return false;
    char peek[2048];
    ssize_t n = recv(fd, peek, sizeof peek - 1, MSG_PEEK | MSG_DONTWAIT);
    if (n <= 0)
        return false;
    peek[n] = '\0';
    return strstr(peek, "\r\n\r\n") != NULL || strstr(peek, "\n\n") != NULL;
}

static void admit(httpd_conn_t *c)
{
    httpd_t *h = c->h;
    c->request_pending = whole_request_waiting(c);
    size_t same = 0, normal = 0;
    for (httpd_conn_t *x = h->conns; x; x = x->next) {
        if (x == c || x->reserve)
            continue;
        normal++;
        if (strcmp(x->addr, c->addr) == 0)
            same++;
    }
    if (same >= h->max_per_client) {
        httpd_conn_t *v = evictable(h, c, c->addr);
        if (!v)
            goto reserve;
        warn_limited(h, "connection cap per client reached: its oldest waiting connection closed",
                     c);
        conn_drop(v);
        normal--;
    }
    if (normal >= h->max_conn) {
        httpd_conn_t *v = evictable(h, c, NULL);
        if (!v)
            goto reserve;
        warn_limited(h, "connection cap reached: the oldest waiting connection closed", v);
        conn_drop(v);
    }
    return;
reserve:
    if (h->nreserve < h->probe_reserve) {
        c->reserve = true;
        h->nreserve++;
        arm(c, GUARD_RESERVE_TIMEOUT_S, 0);
        warn_limited(h, "connection caps full of requests in service: admitted for probes only", c);
        return;
    }
    warn_limited(h, "connection caps and probe reserve full: new connection closed", c);
    conn_drop(c);
}

/* Runs right after evhttp has built the connection around the bufferevent made by
 * httpd_guard_bev (before its first read): the bufferevent's callback argument is then the
 * evhttp_connection. httpd_guard_bev took a reference on the bufferevent so it is still
 * valid here even if evhttp already dropped the connection. */
static void guard_attach(evutil_socket_t fd, short what, void *arg)
{
    httpd_conn_t *c = arg;
    httpd_t *h = c->h;
    struct bufferevent *bev = c->bev;
    void *cbarg = NULL;
    bufferevent_getcb(bev, NULL, NULL, NULL, &cbarg);
    if (cbarg && !h->freeing) {
        c->evcon = cbarg;
        evhttp_connection_set_closecb(c->evcon, conn_closed, c);
        /* evhttp writes a reply's headers and body as separate segments: with Nagle on, a
         * reply larger than one segment waits for the client's delayed ACK (40 ms), so a
         * 37 KB list answered at ~70/s on an idle server. */
        int one = 1, sfd = bufferevent_getfd(bev);
        if (sfd >= 0)
            (void)setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        char *a = NULL;
        ev_uint16_t port = 0;
        evhttp_connection_get_peer(c->evcon, &a, &port);
        snprintf(c->addr, sizeof c->addr, "%s", a ? a : "?");
        c->since_ms = mono_ms();
        admit(c);
    } else {
        conn_closed(NULL, c);
    }
    bufferevent_decref(bev);
}

struct bufferevent *httpd_guard_bev(struct event_base *base, void *arg)
{
    httpd_t *h = arg;
    struct bufferevent *bev;
    if (h->ssl_ctx) {
        SSL *ssl = SSL_new(h->ssl_ctx);
        if (!ssl) {
            log_error("httpd: port %u: SSL_new failed", h->port);
            return NULL;
        }
        bev = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                             BEV_OPT_CLOSE_ON_FREE);
    } else {
        bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    }
    if (!bev)
        return NULL;
    httpd_conn_t *c = calloc(1, sizeof *c);
    if (c)
        c->deadline = event_new(base, -1, 0, on_deadline, c);
    if (!c || !c->deadline) {
        /* Not guarded: the connection is served, only the caps cannot see it. */
        log_warn("httpd: port %u: cannot track a new connection (out of memory)", h->port);
        free(c);
        return bev;
    }
    c->h = h;
    c->bev = bev;
    c->content_length = -1;
    c->in_cb = evbuffer_add_cb(bufferevent_get_input(bev), on_input, c);
    c->out_cb = evbuffer_add_cb(bufferevent_get_output(bev), on_output, c);
    if (event_base_once(base, -1, EV_TIMEOUT, guard_attach, c, NULL) != 0) {
        log_warn("httpd: port %u: cannot track a new connection", h->port);
        evbuffer_remove_cb_entry(bufferevent_get_input(bev), c->in_cb);
        evbuffer_remove_cb_entry(bufferevent_get_output(bev), c->out_cb);
        event_free(c->deadline);
        free(c);
        return bev;
    }
    bufferevent_incref(bev);
    c->next = h->conns;
    if (h->conns)
        h->conns->prev = c;
    h->conns = c;
    size_t b = hash_of(h, bev);
    c->hnext = h->hash[b];
    h->hash[b] = c;
    h->nconn++;
    /* Admission decides at attach; this only keeps the descriptors bounded meanwhile. */
    if (h->nconn >= h->max_conn + h->probe_reserve + 16 && !h->listener_paused && h->sock) {
        evconnlistener_disable(evhttp_bound_socket_get_listener(h->sock));
        h->listener_paused = true;
        log_warn("httpd: port %u: %zu connections open; new ones wait", h->port, (size_t)h->nconn);
    }
    return bev;
}

static void on_complete(struct evhttp_request *ev, void *arg)
{
    httpd_conn_t *c = arg;
    c->serving = false;
    if (c->state == GC_IDLE)
        c->since_ms = mono_ms();
}

bool httpd_guard_request(httpd_t *h, struct evhttp_request *ev)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(ev);
    httpd_conn_t *c = evcon ? conn_find(h, evhttp_connection_get_bufferevent(evcon)) : NULL;
    if (!c)
        return false;
    c->serving = true;
    if (c->state == GC_IDLE || c->state == GC_CHUNKED || c->reserve)
        event_del(c->deadline);
    if (c->state == GC_CHUNKED) {
        c->state = GC_IDLE;
        c->since_ms = mono_ms();
    }
    evhttp_request_set_on_complete_cb(ev, on_complete, c);
    return c->reserve;
}

int httpd_guard_init(httpd_t *h)
{
    size_t n = 64;
    while (n < 2 * (h->max_conn + h->probe_reserve))
        n *= 2;
    h->hash = calloc(n, sizeof *h->hash);
    if (!h->hash)
        return -1;
    h->hash_mask = n - 1;
    return 0;
}

void httpd_guard_free(httpd_t *h)
{
    free(h->hash);
    h->hash = NULL;
}
