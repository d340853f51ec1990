/* The HV-VES listener (docs/ingress.md, "HV-VES"): WTP frames over TCP, or TLS with client
 * certificates (hvves.tls needs tls.client-cert, as HV-VES requires). Per frame (wtp.c): a
 * bad magic byte or a payload over hvves.max-payload closes the connection; an unknown
 * version or payload type, a payload that is not a VesEvent, or a header that fails the
 * validation (hvves_event.c) skips the frame and counts it by cause. A valid event goes to the
 * topic of its domain (hvves.routes, like HV-VES's streams_publishes; else hvves.topic-prefix +
 * domain, or skipped as "unrouted" when the prefix is empty), key = the serialised
 * CommonEventHeader, value = the payload, as HV-VES writes it.
 *
 * WTP has no acknowledgement, so nothing is dropped for want of room: when Kafka's queue is
 * full the connection stops being read (TCP pushes back on the client) and resumes on the next
 * delivery report.
 *
 * Bounds (docs/ingress.md, "Bounds"): a connection's input by a read watermark of one largest
 * frame; all connections' input together by hvves.max-buffered (past it the connection stalled
 * longest inside a frame is closed, or when none is, the one that read is paused until input
 * is released); a frame must be complete hvves.frame-timeout after its first byte, and a
 * connection that reads nothing for idle-timeout is closed. Connections waiting for Kafka are
 * exempt from both timeouts and from eviction: their frames are complete and accepted. */
#include "hvves_event.h"
#include "ingress.h"
#include "wtp.h"

#include <malloc.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/listener.h>

#include "log.h"
#include "tls.h"

typedef struct hvconn hvconn_t;

typedef struct hvl {
    ingress_t *g;
    struct evconnlistener *lst;
    hvves_arena_t arena;
    hvconn_t *conns;
    size_t n_blocked, n_paused;
    size_t held;      /* input bytes of every connection (hvves.max-buffered) */
    size_t held_high; /* the most held since memory was last given back */
    bool trim_due;
    struct event *sweep; /* 250 ms: frame and idle timeouts */
    metrics_gauge_t *held_gauge;
    metrics_counter_t *closed_frame, *closed_idle, *closed_evicted;
} hvl_t;

struct hvconn {
    hvl_t *l;
    struct bufferevent *bev;
    bool blocked; /* waiting for room in Kafka's queue */
    bool paused;  /* waiting for the listener's input to fall under hvves.max-buffered */
    bool eof;     /* the client closed or failed: closed once its complete frames are produced */
    size_t held;  /* its input's bytes, as counted in l->held */
    int64_t last_read_ms, partial_since_ms; /* partial: 0 when no frame is part-way in */
    hvconn_t *next, *prev;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void conn_unpause_all(hvl_t *l);

/* Re-counts a connection's input after a read or a drain. */
static void conn_account(hvconn_t *c)
{
    size_t now = evbuffer_get_length(bufferevent_get_input(c->bev));
    hvl_t *l = c->l;
    l->held = l->held - c->held + now;
    c->held = now;
    if (l->held > l->held_high)
        l->held_high = l->held;
    if (!now)
        c->partial_since_ms = 0;
    else if (!c->partial_since_ms && !c->blocked)
        c->partial_since_ms = mono_ms();
}

static void conn_close(hvconn_t *c)
{
    hvl_t *l = c->l;
    l->held -= c->held;
    if (c->paused)
        l->n_paused--;
    if (c->blocked)
        l->n_blocked--;
    if (c->prev)
        c->prev->next = c->next;
    else
        l->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    bufferevent_free(c->bev);
    free(c);
    if (l->n_paused && l->held < (size_t)l->g->S->hvves_max_buffered)
        conn_unpause_all(l);
}

/* One complete VesEvent frame: 0 when consumed (produced or skipped), 1 when Kafka is full. */
static int on_event(hvconn_t *c, const wtp_frame_t *f)
{
    hvl_t *l = c->l;
    ingress_t *g = l->g;
    hvves_event_t ev;
    hvves_reason_t r = hvves_event_decode(&l->arena, f->payload, f->payload_len, &ev);
    if (r != HVVES_OK) {
        ingress_dropped(g, INGRESS_T_HVVES, hvves_reason_name(r));
        log_debug("HV-VES frame skipped: %s%s%s", hvves_reason_name(r), ev.field ? ": " : "",
                  ev.field ? ev.field : "");
        return 0;
    }
    char topic[256];
    if (!ingress_route(&g->S->hvves_routes, g->S->hvves_topic_prefix, ev.domain, strlen(ev.domain),
                       topic, sizeof topic)) {
        ingress_dropped(g, INGRESS_T_HVVES, "unrouted");
        return 0;
    }
    kafka_produce_result_t pr = ingress_produce(g, INGRESS_T_HVVES, topic, ev.key, ev.key_len,
                                                f->payload, f->payload_len, NULL, true, NULL);
    if (pr == KAFKA_PRODUCE_FULL)
        return 1;
    if (pr != KAFKA_PRODUCE_OK) {
        ingress_dropped(g, INGRESS_T_HVVES, "produce-refused");
        return 0;
    }
    int64_t travel = ingress_now_us() - (int64_t)ev.last_epoch_us;
    if (travel >= 0)
        metrics_histogram_observe(g->m.travel, (double)travel / 1e6);
    return 0;
}

/* Produces the complete frames in c's input; 1 when c was closed (a bad frame, or the end of
 * a connection whose client had closed it). */
static int conn_process(hvconn_t *c)
{
    hvl_t *l = c->l;
    ingress_t *g = l->g;
    struct evbuffer *in = bufferevent_get_input(c->bev);
    for (;;) {
        size_t len = evbuffer_get_length(in);
        if (!len)
            break;
        size_t want = len < WTP_HEADER_SIZE ? len : WTP_HEADER_SIZE;
        wtp_frame_t f;
        const uint8_t *p = evbuffer_pullup(in, (ssize_t)want);
        wtp_result_t r = wtp_parse(p, want, (uint32_t)g->S->hvves_max_payload, &f);
        if (r == WTP_NEED_MORE && want == WTP_HEADER_SIZE) {
            /* Header complete: wait for (or pull up) the whole frame. */
            if (len < f.size)
                break;
            p = evbuffer_pullup(in, (ssize_t)f.size);
            r = wtp_parse(p, f.size, (uint32_t)g->S->hvves_max_payload, &f);
        }
        if (r == WTP_NEED_MORE)
            break;
        if (r == WTP_BAD_MAGIC || r == WTP_TOO_BIG) {
            ingress_dropped(g, INGRESS_T_HVVES, wtp_result_name(r));
            log_warn("HV-VES connection closed: %s", wtp_result_name(r));
            conn_close(c);
            return 1;
        }
        if (r == WTP_FRAME) {
            if (on_event(c, &f)) {
                if (!c->blocked) {
                    c->blocked = true;
                    l->n_blocked++;
                    bufferevent_disable(c->bev, EV_READ);
                }
                c->partial_since_ms = 0; /* a complete frame, held for Kafka: not stalled */
                conn_account(c);
                return 0;
            }
        } else {
            ingress_dropped(g, INGRESS_T_HVVES, wtp_result_name(r));
        }
        metrics_counter_inc(g->m.received[INGRESS_T_HVVES]);
        metrics_counter_add(g->m.received_bytes[INGRESS_T_HVVES], f.payload_len);
        evbuffer_drain(in, f.size);
        c->partial_since_ms = 0; /* the next frame's clock starts with its bytes */
    }
    if (c->blocked) {
        c->blocked = false;
        l->n_blocked--;
        if (!c->paused)
            bufferevent_enable(c->bev, EV_READ);
    }
    conn_account(c);
    if (c->eof) {
        conn_close(c); /* its last frames are produced; a partial one is dropped with it */
        return 1;
    }
    if (l->n_paused && l->held < (size_t)g->S->hvves_max_buffered)
        conn_unpause_all(l);
    return 0;
}

static void on_room(void *arg)
{
    hvl_t *l = arg;
    if (!l->n_blocked || !ingress_has_room(l->g, 0))
        return;
    hvconn_t *c = l->conns;
    while (c) {
        hvconn_t *next = c->next;
        if (c->blocked)
            conn_process(c);
        c = next;
    }
}

static void conn_unpause_all(hvl_t *l)
{
    for (hvconn_t *c = l->conns; c && l->n_paused; c = c->next)
        if (c->paused) {
            c->paused = false;
            l->n_paused--;
            if (c->partial_since_ms) /* the pause was the listener's, not the sender's */
                c->partial_since_ms = mono_ms();
            if (!c->blocked)
                bufferevent_enable(c->bev, EV_READ);
        }
}

/* The connection that has been part-way through a frame longest (not one waiting for Kafka):
 * a sender stalled inside a frame, what hvves.max-buffered evicts first. */
static hvconn_t *stalled_longest(hvl_t *l)
{
    hvconn_t *best = NULL;
    for (hvconn_t *c = l->conns; c; c = c->next)
        if (!c->blocked && !c->paused && c->partial_since_ms &&
            (!best || c->partial_since_ms < best->partial_since_ms))
            best = c;
    return best;
}

/* Over hvves.max-buffered: close stalled senders, oldest first, until under it; when none is
 * left, pause c (it holds input the others may release). 1 when c itself was closed. */
static int enforce_listener_bound(hvl_t *l, hvconn_t *c)
{
    size_t max = (size_t)l->g->S->hvves_max_buffered;
    while (l->held > max) {
        hvconn_t *v = stalled_longest(l);
        if (!v) {
            if (!c->paused) {
                c->paused = true;
                l->n_paused++;
                bufferevent_disable(c->bev, EV_READ);
            }
            return 0;
        }
        metrics_counter_inc(l->closed_evicted);
        ingress_dropped(l->g, INGRESS_T_HVVES, "evicted");
        log_warn("HV-VES connection closed: %zu bytes held by the listener (hvves.max-buffered "
                 "%zu), this one part-way through a frame for %lld ms",
                 l->held, max, (long long)(mono_ms() - v->partial_since_ms));
        bool self = v == c;
        conn_close(v);
        if (self)
            return 1;
    }
    return 0;
}

static void conn_read(struct bufferevent *bev, void *arg)
{
    hvconn_t *c = arg;
    c->last_read_ms = mono_ms();
    if (c->blocked)
        conn_account(c);
    else if (conn_process(c))
        return;
    enforce_listener_bound(c->l, c);
}

/* Every 250 ms: frame-completion and idle timeouts (one scan instead of a timer per
 * connection), and the held-bytes gauge. */
static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    hvl_t *l = arg;
    const ingress_settings_t *S = l->g->S;
    int64_t now = mono_ms();
    hvconn_t *c = l->conns;
    while (c) {
        hvconn_t *next = c->next;
        if (!c->blocked && !c->paused && c->partial_since_ms &&
            now - c->partial_since_ms >= S->hvves_frame_timeout_ms) {
            metrics_counter_inc(l->closed_frame);
            ingress_dropped(l->g, INGRESS_T_HVVES, "frame-timeout");
            log_warn("HV-VES connection closed: a frame not complete %lld ms after its first "
                     "byte (%zu bytes in; hvves.frame-timeout)",
                     (long long)(now - c->partial_since_ms), c->held);
            conn_close(c);
        } else if (!c->blocked && !c->paused && now - c->last_read_ms >= S->idle_timeout_ms) {
            metrics_counter_inc(l->closed_idle);
            log_info("HV-VES connection closed: nothing read for %lld ms (idle-timeout)",
                     (long long)(now - c->last_read_ms));
            conn_close(c);
        }
        c = next;
    }
    metrics_gauge_set(l->held_gauge, (double)l->held);
    /* Input buffers are many small blocks, which free() keeps in the heap: once a good part of
     * what clients made the listener hold is released, give the pages back to the system (the
     * memory a client made NDD take goes when it goes). */
    if (l->trim_due) { /* on the next sweep: libevent frees a closed buffer after the turn */
        malloc_trim(0);
        l->trim_due = false;
    }
    if (l->held_high - l->held >= (8u << 20)) {
        l->trim_due = true;
        l->held_high = l->held;
    }
}

static void conn_event(struct bufferevent *bev, short what, void *arg)
{
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)) {
        hvconn_t *c = arg;
        /* Frames already in are still produced before the connection goes (when it waits for
         * Kafka, once room came: conn_process closes it then). */
        c->eof = true;
        bufferevent_disable(c->bev, EV_READ);
        if (!c->blocked)
            conn_process(c);
    }
}

static void on_accept(struct evconnlistener *lst, evutil_socket_t fd, struct sockaddr *sa,
                      int salen, void *arg)
{
    hvl_t *l = arg;
    ingress_t *g = l->g;
    hvconn_t *c = calloc(1, sizeof *c);
    if (!c) {
        evutil_closesocket(fd);
        return;
    }
    c->l = l;
    if (g->S->hvves_tls) {
        char err[256];
        SSL *ssl = tls_server_ssl_new(g->tls_h1, err, sizeof err);
        c->bev = ssl ? bufferevent_openssl_socket_new(g->base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                                      BEV_OPT_CLOSE_ON_FREE)
                     : NULL;
    } else {
        c->bev = bufferevent_socket_new(g->base, fd, BEV_OPT_CLOSE_ON_FREE);
    }
    if (!c->bev) {
        evutil_closesocket(fd);
        free(c);
        return;
    }
    c->next = l->conns;
    if (l->conns)
        l->conns->prev = c;
    l->conns = c;
    c->last_read_ms = mono_ms();
    bufferevent_setcb(c->bev, conn_read, NULL, conn_event, c);
    bufferevent_setwatermark(c->bev, EV_READ, 0,
                             (size_t)g->S->hvves_max_payload + WTP_HEADER_SIZE + 65536);
    bufferevent_enable(c->bev, EV_READ);
}

static bool hv_enabled(const ingress_settings_t *S)
{
    return S->hvves_port >= 0;
}

static void hv_stop(void *p)
{
    hvl_t *l = p;
    if (l->lst)
        evconnlistener_free(l->lst);
    if (l->sweep)
        event_free(l->sweep);
    while (l->conns)
        conn_close(l->conns);
    ingress_on_room_remove(l->g, on_room, l);
    hvves_arena_free(&l->arena);
    free(l);
}

static void *hv_start(ingress_t *g, char *err, size_t errlen)
{
    hvl_t *l = calloc(1, sizeof *l);
    if (!l || hvves_arena_init(&l->arena, (size_t)g->S->hvves_max_payload)) {
        free(l);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    l->g = g;
    if (!(l->lst = ingress_listen(g, (long long)g->S->hvves_port, on_accept, l, err, errlen))) {
        hvves_arena_free(&l->arena);
        free(l);
        return NULL;
    }
    metrics_registry_t *r = g->d->metrics;
    metrics_family_t *hf =
        metrics_gauge_new(r, "ndd_ingress_hvves_buffered_bytes",
                          "HV-VES: input bytes all connections hold (hvves.max-buffered)", NULL);
    metrics_family_t *cf = metrics_counter_new(r, "ndd_ingress_hvves_closed_total",
                                               "HV-VES connections closed by a bound", "reason");
    struct timeval tv = {0, 250000};
    if (!hf || !cf || !(l->sweep = event_new(g->base, -1, EV_PERSIST, on_sweep, l)) ||
        event_add(l->sweep, &tv)) {
        snprintf(err, errlen, "cannot set up the HV-VES timeouts");
        hv_stop(l);
        return NULL;
    }
    l->held_gauge = metrics_gauge_labels(hf);
    l->closed_frame = metrics_counter_labels(cf, "frame-timeout");
    l->closed_idle = metrics_counter_labels(cf, "idle-timeout");
    l->closed_evicted = metrics_counter_labels(cf, "max-buffered");
    ingress_on_room_add(g, on_room, l);
    log_info("HV-VES (%s) on %s port %lld", g->S->hvves_tls ? "TLS, client certificates" : "TCP",
             g->S->listen, (long long)g->S->hvves_port);
    return l;
}

const ingress_listener_kind_t ingress_listener_hvves = {
    .name = "hv-ves", .enabled = hv_enabled, .start = hv_start, .stop = hv_stop};
