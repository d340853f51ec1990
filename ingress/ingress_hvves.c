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
 * frame; frame-timeout, idle-timeout and the listener's max-buffered by ingress_guard.h. */
#include "hvves_event.h"
#include "ingress.h"
#include "ingress_guard.h"
#include "wtp.h"

#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>

#include "log.h"

/* The listener's own settings (its .specs, at the end of this file: keys of ndd-ingress's
 * config map like every other). */
typedef struct hvves_settings {
    int64_t port; /* -1: off */
    bool tls;
    config_list_t routes; /* "domain=topic" */
    const char *topic_prefix;
    int64_t max_payload;
} hvves_settings_t;
static const hvves_settings_t *hvves_own(const ingress_settings_t *S);

typedef struct hvconn hvconn_t;

typedef struct hvl {
    ingress_t *g;
    ingress_stream_t st; /* the socket, the guard (frame-timeout, idle-timeout, max-buffered)
                          * and the connections */
    hvves_arena_t arena;
    size_t n_blocked;
} hvl_t;

struct hvconn {
    ingress_guard_conn_t gc; /* first: the guard's list links the connections */
    hvl_t *l;
    struct bufferevent *bev;
    bool blocked; /* waiting for room in Kafka's queue */
    bool eof;     /* the client closed or failed: closed once its complete frames are produced */
};

static hvconn_t *conn_of(ingress_guard_conn_t *gc)
{
    return (hvconn_t *)gc;
}

static size_t in_len(const hvconn_t *c)
{
    return evbuffer_get_length(bufferevent_get_input(c->bev));
}

static void conn_close(hvconn_t *c)
{
    hvl_t *l = c->l;
    if (c->blocked)
        l->n_blocked--;
    bufferevent_free(c->bev);
    ingress_guard_remove(&l->st.guard, &c->gc);
    free(c);
}

static void guard_close(ingress_guard_conn_t *gc, const char *why)
{
    conn_close(conn_of(gc));
}

static void guard_pause(ingress_guard_conn_t *gc, bool on)
{
    hvconn_t *c = conn_of(gc);
    if (on)
        bufferevent_disable(c->bev, EV_READ);
    else if (!c->blocked && !c->eof)
        bufferevent_enable(c->bev, EV_READ);
}

static void set_blocked(hvconn_t *c, bool b)
{
    if (c->blocked == b)
        return;
    c->blocked = c->gc.waiting = b;
    if (b) {
        c->l->n_blocked++;
        c->gc.partial_since_ms = 0; /* a complete frame, held for Kafka: not stalled */
        bufferevent_disable(c->bev, EV_READ);
    } else {
        c->l->n_blocked--;
        guard_pause(&c->gc, c->gc.paused);
    }
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
    if (!ingress_route(&hvves_own(g->S)->routes, hvves_own(g->S)->topic_prefix, ev.domain,
                       strlen(ev.domain), topic, sizeof topic)) {
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
        wtp_result_t r = wtp_parse(p, want, (uint32_t)hvves_own(g->S)->max_payload, &f);
        if (r == WTP_NEED_MORE && want == WTP_HEADER_SIZE) {
            /* Header complete: wait for (or pull up) the whole frame. */
            if (len < f.size)
                break;
            p = evbuffer_pullup(in, (ssize_t)f.size);
            r = wtp_parse(p, f.size, (uint32_t)hvves_own(g->S)->max_payload, &f);
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
                set_blocked(c, true);
                ingress_guard_drained(&l->st.guard, &c->gc, in_len(c));
                return 0;
            }
        } else {
            ingress_dropped(g, INGRESS_T_HVVES, wtp_result_name(r));
        }
        metrics_counter_inc(g->m.received[INGRESS_T_HVVES]);
        metrics_counter_add(g->m.received_bytes[INGRESS_T_HVVES], f.payload_len);
        evbuffer_drain(in, f.size);
    }
    set_blocked(c, false);
    ingress_guard_drained(&l->st.guard, &c->gc, in_len(c));
    if (c->eof) {
        conn_close(c); /* its last frames are produced; a partial one is dropped with it */
        return 1;
    }
    return 0;
}

static void on_room(void *arg)
{
    hvl_t *l = arg;
    if (!l->n_blocked || !ingress_has_room(l->g, 0))
        return;
    for (ingress_guard_conn_t *gc = l->st.guard.conns, *next; gc; gc = next) {
        next = gc->next;
        if (conn_of(gc)->blocked)
            conn_process(conn_of(gc));
    }
}

static void conn_read(struct bufferevent *bev, void *arg)
{
    hvconn_t *c = arg;
    ingress_guard_read(&c->l->st.guard, &c->gc, in_len(c));
    if (!c->blocked && conn_process(c))
        return;
    ingress_guard_enforce(&c->l->st.guard, &c->gc);
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
    if (!(c->bev = ingress_stream_bev(g, fd, hvves_own(g->S)->tls))) {
        free(c);
        return;
    }
    ingress_guard_add(&l->st.guard, &c->gc);
    bufferevent_setcb(c->bev, conn_read, NULL, conn_event, c);
    bufferevent_setwatermark(c->bev, EV_READ, 0,
                             (size_t)hvves_own(g->S)->max_payload + WTP_HEADER_SIZE + 65536);
    bufferevent_enable(c->bev, EV_READ);
}

static bool hv_enabled(const ingress_settings_t *S)
{
    return hvves_own(S)->port >= 0;
}

static void hv_stop(void *p)
{
    hvl_t *l = p;
    ingress_stream_stop(&l->st, guard_close);
    hvves_arena_free(&l->arena);
    free(l);
}

static void *hv_start(ingress_t *g, char *err, size_t errlen)
{
    hvl_t *l = calloc(1, sizeof *l);
    if (!l || hvves_arena_init(&l->arena, (size_t)hvves_own(g->S)->max_payload)) {
        free(l);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    l->g = g;
    if (ingress_stream_start(&l->st, g, INGRESS_T_HVVES, (long long)hvves_own(g->S)->port,
                             on_accept, on_room, l, guard_close, guard_pause, err, errlen)) {
        hvves_arena_free(&l->arena);
        free(l);
        return NULL;
    }
    log_info("HV-VES (%s) on %s port %lld",
             hvves_own(g->S)->tls ? "TLS, client certificates" : "TCP", g->S->listen,
             (long long)hvves_own(g->S)->port);
    return l;
}

static bool hvves_tls(const ingress_settings_t *S)
{
    return hvves_own(S)->tls;
}

static int hvves_check(const ingress_settings_t *S, char *err, size_t errlen)
{
    if (hvves_own(S)->tls && hvves_own(S)->port >= 0 && !S->tls_client_cert) {
        snprintf(err, errlen, "hvves.tls needs tls.client-cert (HV-VES over TLS is mutual TLS)");
        return -1;
    }
    return ingress_check_routes(&hvves_own(S)->routes, "hvves.routes", err, errlen);
}

/* clang-format off */
static const config_spec_t hvves_own_specs[] = {
    {"hvves.port", CONFIG_INT, "-1", "HV-VES (WTP over TCP) listener (-1: off)", 0,
     CONFIG_AT(hvves_settings_t, port), -1, 65535},
    {"hvves.tls", CONFIG_BOOL, "false", "HV-VES over TLS (needs tls.client-cert)", 0,
     CONFIG_AT(hvves_settings_t, tls), 0, 0},
    {"hvves.routes", CONFIG_LIST, "perf3gpp=HV_VES_PERF3GPP", "domain=topic for HV-VES events "
     "(HV-VES's streams_publishes)", 0, CONFIG_AT(hvves_settings_t, routes), 0, 0},
    {"hvves.topic-prefix", CONFIG_STRING, "", "topic of an unlisted HV-VES domain: prefix + "
     "domain (empty: skipped as unrouted)", 0, CONFIG_AT(hvves_settings_t, topic_prefix), 0, 0},
    {"hvves.max-payload", CONFIG_BYTES, "1MiB", "largest WTP payload (bigger: connection closed)",
     0, CONFIG_AT(hvves_settings_t, max_payload), 64, 64 << 20},
};
/* clang-format on */

static const hvves_settings_t *hvves_own(const ingress_settings_t *S)
{
    return ingress_own_settings(S, &ingress_listener_hvves);
}

const ingress_listener_kind_t ingress_listener_hvves = {
    .name = "hv-ves",
    .label = "hv-ves",
    .enabled = hv_enabled,
    .tls = hvves_tls,
    .check = hvves_check,
    .travel = true, /* lastEpochMicrosec: ndd_ingress_message_travel_seconds */
    .specs = hvves_own_specs,
    .n_specs = sizeof hvves_own_specs / sizeof hvves_own_specs[0],
    .start = hv_start,
    .stop = hv_stop,
};
