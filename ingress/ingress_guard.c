/* The guard of a byte-stream listener (ingress_guard.h). */
#include "ingress_guard.h"
#include "clock.h"

#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>

#include "log.h"
#include "tls.h"

/* Whether to log this close: at most one line a second per listener, the next one saying how
 * many went unlogged (they are all counted in ndd_ingress_connections_closed_total). */
static bool log_close(ingress_guard_t *gd)
{
    int64_t now = mono_now_ms();
    if (now - gd->logged_ms < 1000) {
        gd->unlogged++;
        return false;
    }
    gd->logged_ms = now;
    return true;
}

/* Closes c for a bound: counted (counter, and as dropped for `dropped` unless NULL), logged at
 * `level` at most once a second (log_close) with what the connection did and how many closes
 * went unlogged, then closed by the listener. */
static void __attribute__((format(printf, 7, 8)))
close_by_bound(ingress_guard_t *gd, ingress_guard_conn_t *c, metrics_counter_t *counter,
               const char *dropped, const char *bound, log_level_t level, const char *fmt, ...)
{
    metrics_counter_inc(counter);
    if (dropped)
        ingress_dropped(gd->g, gd->t, dropped);
    if (log_close(gd)) {
        char did[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(did, sizeof did, fmt, ap);
        va_end(ap);
        log_write(level, __FILE__, __LINE__,
                  "%s connection closed: %s (%s; %zu more closes by a bound not logged)",
                  ingress_label(gd->t), did, bound, gd->unlogged);
        gd->unlogged = 0;
    }
    gd->close(c, bound);
}

static void account(ingress_guard_t *gd, ingress_guard_conn_t *gc, size_t len)
{
    gd->held = gd->held - gc->held + len;
    gc->held = len;
    if (gd->held > gd->held_high)
        gd->held_high = gd->held;
    if (!len)
        gc->partial_since_ms = 0;
    else if (!gc->partial_since_ms && !gc->waiting)
        gc->partial_since_ms = mono_now_ms();
}

static void unpause_all(ingress_guard_t *gd)
{
    for (ingress_guard_conn_t *c = gd->conns; c && gd->n_paused; c = c->next)
        if (c->paused) {
            c->paused = false;
            gd->n_paused--;
            if (c->partial_since_ms) /* the pause was the listener's, not the sender's */
                c->partial_since_ms = mono_now_ms();
            gd->pause(c, false);
        }
}

void ingress_guard_add(ingress_guard_t *gd, ingress_guard_conn_t *gc)
{
    *gc = (ingress_guard_conn_t){.last_read_ms = mono_now_ms(), .next = gd->conns};
    if (gd->conns)
        gd->conns->prev = gc;
    gd->conns = gc;
}

void ingress_guard_remove(ingress_guard_t *gd, ingress_guard_conn_t *gc)
{
    gd->held -= gc->held;
    gc->held = 0;
    if (gc->paused)
        gd->n_paused--;
    if (gc->prev)
        gc->prev->next = gc->next;
    else if (gd->conns == gc)
        gd->conns = gc->next;
    if (gc->next)
        gc->next->prev = gc->prev;
    gc->next = gc->prev = NULL;
    if (gd->n_paused && gd->held < gd->max)
        unpause_all(gd);
}

void ingress_guard_read(ingress_guard_t *gd, ingress_guard_conn_t *gc, size_t len)
{
    gc->last_read_ms = mono_now_ms();
    account(gd, gc, len);
}

void ingress_guard_drained(ingress_guard_t *gd, ingress_guard_conn_t *gc, size_t len)
{
    gc->partial_since_ms = 0; /* the next frame's clock starts with its bytes */
    account(gd, gc, len);
    if (gd->n_paused && gd->held < gd->max)
        unpause_all(gd);
}

/* The connection part-way through a frame longest, not waiting for Kafka nor paused. */
static ingress_guard_conn_t *stalled_longest(ingress_guard_t *gd)
{
    ingress_guard_conn_t *best = NULL;
    for (ingress_guard_conn_t *c = gd->conns; c; c = c->next)
        if (!c->waiting && !c->paused && c->partial_since_ms &&
            (!best || c->partial_since_ms < best->partial_since_ms))
            best = c;
    return best;
}

int ingress_guard_enforce(ingress_guard_t *gd, ingress_guard_conn_t *gc)
{
    while (gd->held > gd->max) {
        ingress_guard_conn_t *v = stalled_longest(gd);
        if (!v) {
            if (!gc->paused) {
                gc->paused = true;
                gd->n_paused++;
                gd->pause(gc, true);
            }
            return 0;
        }
        bool self = v == gc;
        close_by_bound(gd, v, gd->closed_evicted, "evicted", "max-buffered", LOG_LEVEL_WARN,
                       "the listener holds %zu bytes (max-buffered %zu), this one part-way "
                       "through a frame for %lld ms",
                       gd->held, gd->max, (long long)(mono_now_ms() - v->partial_since_ms));
        if (self)
            return 1;
    }
    return 0;
}

static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    ingress_guard_t *gd = arg;
    int64_t now = mono_now_ms(), idle_ms = gd->g->S->idle_timeout_ms;
    if (gd->trim_due) { /* a turn after the closes: libevent frees a buffer after the turn */
        malloc_trim(0);
        gd->trim_due = false;
    }
    for (ingress_guard_conn_t *c = gd->conns, *next; c; c = next) {
        next = c->next;
        if (c->waiting || c->paused)
            continue;
        if (c->partial_since_ms && now - c->partial_since_ms >= gd->frame_timeout_ms) {
            close_by_bound(gd, c, gd->closed_frame, "frame-timeout", "frame-timeout",
                           LOG_LEVEL_WARN,
                           "a frame not complete %lld ms after its first byte, %zu bytes in",
                           (long long)(now - c->partial_since_ms), c->held);
        } else if (now - c->last_read_ms >= idle_ms) {
            close_by_bound(gd, c, gd->closed_idle, NULL, "idle-timeout", LOG_LEVEL_INFO,
                           "nothing read for %lld ms", (long long)(now - c->last_read_ms));
        }
    }
    if (gd->unlogged && now - gd->logged_ms >= 1000) {
        log_warn("%s: %zu more connections closed by a bound (frame-timeout, idle-timeout, "
                 "max-buffered) in the last second",
                 ingress_label(gd->t), gd->unlogged);
        gd->unlogged = 0;
        gd->logged_ms = now;
    }
    metrics_gauge_set(gd->held_gauge, (double)gd->held);
    if (gd->held_high - gd->held >= (8u << 20)) {
        gd->trim_due = true;
        gd->held_high = gd->held;
    }
}

static int ingress_guard_init(ingress_guard_t *gd, ingress_t *g, ingress_transport_t t, size_t max,
                              int64_t frame_timeout_ms,
                              void (*close)(ingress_guard_conn_t *, const char *),
                              void (*pause)(ingress_guard_conn_t *, bool), char *err, size_t errlen)
{
    *gd = (ingress_guard_t){.g = g,
                            .t = t,
                            .max = max,
                            .frame_timeout_ms = frame_timeout_ms,
                            .close = close,
                            .pause = pause};
    const char *tn = ingress_label(t);
    gd->held_gauge = metrics_gauge_labels(g->m.buffered_input, tn);
    gd->closed_frame = metrics_counter_labels(g->m.closed_by_bound, tn, "frame-timeout");
    gd->closed_idle = metrics_counter_labels(g->m.closed_by_bound, tn, "idle-timeout");
    gd->closed_evicted = metrics_counter_labels(g->m.closed_by_bound, tn, "max-buffered");
    struct timeval tv = {0, 250000};
    if (!gd->held_gauge || !gd->closed_frame || !gd->closed_idle || !gd->closed_evicted ||
        !(gd->sweep = event_new(g->base, -1, EV_PERSIST, on_sweep, gd)) ||
        event_add(gd->sweep, &tv)) {
        snprintf(err, errlen, "cannot set up the %s connection timeouts", tn);
        return -1;
    }
    return 0;
}

static void ingress_guard_free(ingress_guard_t *gd)
{
    if (gd->sweep)
        event_free(gd->sweep);
    gd->sweep = NULL;
}

/* ---- the byte-stream listener ---- */

int ingress_stream_start(ingress_stream_t *s, ingress_t *g, ingress_transport_t t, long long port,
                         evconnlistener_cb on_accept, void (*on_room)(void *), void *arg,
                         void (*close)(ingress_guard_conn_t *, const char *),
                         void (*pause)(ingress_guard_conn_t *, bool), char *err, size_t errlen)
{
    *s = (ingress_stream_t){.on_room = on_room, .arg = arg};
    if (!(s->lst = ingress_listen(g, port, on_accept, arg, err, errlen)))
        return -1;
    if (ingress_guard_init(&s->guard, g, t, (size_t)g->S->max_buffered, g->S->frame_timeout_ms,
                           close, pause, err, errlen)) {
        ingress_stream_stop(s, NULL);
        return -1;
    }
    if (ingress_on_room_add(g, on_room, arg)) {
        snprintf(err, errlen, "%s: too many listeners waiting for Kafka's room", ingress_label(t));
        ingress_stream_stop(s, NULL);
        return -1;
    }
    return 0;
}

void ingress_stream_stop(ingress_stream_t *s, void (*close)(ingress_guard_conn_t *, const char *))
{
    if (s->lst)
        evconnlistener_free(s->lst);
    s->lst = NULL;
    while (close && s->guard.conns)
        close(s->guard.conns, "stopping");
    if (s->guard.g)
        ingress_on_room_remove(s->guard.g, s->on_room, s->arg);
    ingress_guard_free(&s->guard);
}

struct bufferevent *ingress_stream_bev(ingress_t *g, evutil_socket_t fd, bool tls)
{
    struct bufferevent *bev = NULL;
    if (tls) {
        char err[256];
        SSL *ssl = tls_server_ssl_new(g->tls_h1, err, sizeof err);
        bev = ssl ? bufferevent_openssl_socket_new(g->base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                                   BEV_OPT_CLOSE_ON_FREE)
                  : NULL;
    } else {
        bev = bufferevent_socket_new(g->base, fd, BEV_OPT_CLOSE_ON_FREE);
    }
    if (!bev)
        evutil_closesocket(fd);
    return bev;
}
