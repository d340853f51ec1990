/* The shared part of ndd-ingress (ingress.h): the listener table, the producer and its
 * delivery reports on the event loop, the metrics, routing by domain, and the check hook.
 *
 * Delivery reports: librdkafka signals its main queue on a pipe (rd_kafka_queue_io_event_
 * enable) that the event loop watches, so a 202 goes out as soon as the broker acknowledged,
 * without a polling timer's latency; a 100 ms timer is the safety net. Records have no message
 * timeout (what was accepted is written); while the broker is away the HTTP listeners answer
 * 503 without producing (ingress_kafka_stalled) and the others stop reading. */
#include "ingress.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "log.h"
#include "tls.h"

static size_t listener_rows(void)
{
    size_t n = 0;
    while (n < INGRESS_MAX_LISTENERS && ingress_listeners[n])
        n++;
    return n;
}

ingress_transport_t ingress_listener_index(const ingress_listener_kind_t *k)
{
    for (size_t i = 0; i < listener_rows(); i++)
        if (ingress_listeners[i] == k)
            return (ingress_transport_t)i;
    return -1;
}

const void *ingress_own_settings(const ingress_settings_t *S, const ingress_listener_kind_t *k)
{
    ingress_transport_t t = ingress_listener_index(k);
    return t >= 0 ? S->own[t].bytes : NULL;
}

const char *ingress_label(ingress_transport_t t)
{
    return t >= 0 && (size_t)t < listener_rows() ? ingress_listeners[t]->label : "?";
}

int64_t ingress_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

struct evconnlistener *ingress_listen(ingress_t *g, long long port, evconnlistener_cb cb, void *arg,
                                      char *err, size_t errlen)
{
    char spec[160];
    snprintf(spec, sizeof spec, strchr(g->S->listen, ':') ? "[%s]:%lld" : "%s:%lld", g->S->listen,
             port);
    struct sockaddr_storage ss;
    int sl = sizeof ss;
    struct evconnlistener *lst = NULL;
    /* A backlog of 1,024: a wave of reconnecting sources after a network blip must not
     * overflow the accept queue (a dropped SYN costs its source a 1 s retransmit). */
    if (evutil_parse_sockaddr_port(spec, (struct sockaddr *)&ss, &sl) == 0)
        lst = evconnlistener_new_bind(g->base, cb, arg, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE,
                                      1024, (struct sockaddr *)&ss, sl);
    if (!lst)
        snprintf(err, errlen, "cannot listen on %s: %s", spec, strerror(errno));
    return lst;
}

const char *ingress_route(const config_list_t *routes, const char *prefix, const char *domain,
                          size_t dlen, char *out, size_t outlen)
{
    for (size_t i = 0; routes && i < routes->n; i++) {
        const char *r = routes->items[i], *eq = strchr(r, '=');
        if (eq && (size_t)(eq - r) == dlen && !memcmp(r, domain, dlen)) {
            snprintf(out, outlen, "%s", eq + 1);
            return out;
        }
    }
    if (!prefix || !*prefix)
        return NULL; /* only the listed domains are routed */
    size_t pl = strlen(prefix);
    if (pl + dlen < outlen) { /* per event: memcpy, not snprintf */
        memcpy(out, prefix, pl);
        memcpy(out + pl, domain, dlen);
        out[pl + dlen] = 0;
    } else {
        snprintf(out, outlen, "%s%.*s", prefix, (int)dlen, domain);
    }
    return out;
}

/* Per-record state of a produced record: the listener's ack and when it was produced. Reused
 * through a free list (at most max-in-flight exist): no allocation per record once warm. */
struct produced {
    ingress_ack_t *ack;
    ingress_transport_t t;
    int64_t at_us;
    size_t bytes;
    produced_t *next, *prev; /* the free list (next), or the in-flight list (oldest first) */
};

bool ingress_has_room(const ingress_t *g, size_t vlen)
{
    /* One record is always let in, however large: else one above max-in-flight-bytes would
     * wait for ever. */
    return g->in_flight == 0 || (g->in_flight < g->S->max_in_flight &&
                                 g->in_flight_bytes + (int64_t)vlen <= g->S->max_in_flight_bytes);
}

/* Records are never timed out (message.timeout.ms 0: what was accepted is written, however long
 * Kafka is away), so a stalled broker shows as an old unacknowledged record. */
bool ingress_kafka_stalled(ingress_t *g)
{
    return g->oldest && ingress_now_us() - g->oldest->at_us > g->S->produce_timeout_ms * 1000;
}

static void inflight_unlink(ingress_t *g, produced_t *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else
        g->oldest = p->next;
    if (p->next)
        p->next->prev = p->prev;
    else
        g->newest = p->prev;
}

kafka_produce_result_t ingress_produce(ingress_t *g, ingress_transport_t t, const char *topic,
                                       const void *key, size_t klen, const void *value, size_t vlen,
                                       rd_kafka_headers_t *hdrs, bool copy, ingress_ack_t *a)
{
    if (!ingress_has_room(g, vlen)) {
        metrics_counter_inc(
            metrics_counter_labels(g->m.produce_errors, ingress_label(t), "queue-full"));
        return KAFKA_PRODUCE_FULL;
    }
    produced_t *p = g->free_produced;
    if (p)
        g->free_produced = p->next;
    else if (!(p = malloc(sizeof *p)))
        return KAFKA_PRODUCE_ERROR;
    *p = (produced_t){a, t, ingress_now_us(), vlen, NULL, NULL};
    rd_kafka_resp_err_t err = 0;
    kafka_produce_result_t r =
        kafka_produce(g->prod, topic, RD_KAFKA_PARTITION_UA, key, klen, value, vlen, hdrs,
                      copy ? KAFKA_VALUE_COPY : KAFKA_VALUE_BORROW, p, &err);
    if (r != KAFKA_PRODUCE_OK) {
        p->next = g->free_produced;
        g->free_produced = p;
        metrics_counter_inc(
            metrics_counter_labels(g->m.produce_errors, ingress_label(t),
                                   r == KAFKA_PRODUCE_FULL ? "queue-full" : "produce-refused"));
        log_debug("produce to %s refused: %s", topic, rd_kafka_err2str(err));
        return r;
    }
    g->in_flight++;
    g->in_flight_bytes += (int64_t)vlen;
    p->prev = g->newest;
    if (g->newest)
        g->newest->next = p;
    else
        g->oldest = p;
    g->newest = p;
    metrics_gauge_set(g->m.in_flight, (double)g->in_flight);
    return r;
}

static void on_delivery(void *owner, void *opaque, const rd_kafka_message_t *rkm)
{
    ingress_t *g = owner;
    produced_t *p = opaque;
    inflight_unlink(g, p);
    g->in_flight--;
    g->in_flight_bytes -= (int64_t)p->bytes;
    metrics_gauge_set(g->m.in_flight, (double)g->in_flight);
    if (rkm->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        metrics_counter_inc(g->m.acked[p->t]);
        metrics_histogram_observe(g->m.ack_latency[p->t],
                                  (double)(ingress_now_us() - p->at_us) / 1e6);
    } else {
        metrics_counter_inc(metrics_counter_labels(
            g->m.produce_errors, ingress_label(p->t),
            rkm->err == RD_KAFKA_RESP_ERR__MSG_TIMED_OUT ? "timed-out" : "broker-refused"));
        log_debug("record to %s not acknowledged: %s", rd_kafka_topic_name(rkm->rkt),
                  rd_kafka_err2str(rkm->err));
    }
    if (p->ack)
        p->ack->done(p->ack, rkm);
    p->next = g->free_produced;
    g->free_produced = p;
}

void ingress_dropped(ingress_t *g, ingress_transport_t t, const char *reason)
{
    metrics_counter_inc(metrics_counter_labels(g->m.dropped, ingress_label(t), reason));
}

void ingress_request_done(ingress_t *g, ingress_transport_t t, int status)
{
    /* The child of each (transport, status) is looked up once (the label lookup and its
     * snprintf cost more than the rest of the metrics of a request). */
    metrics_counter_t **slot =
        status >= 100 && status < 600 ? &g->m.requests_by_status[t][status - 100] : NULL;
    if (slot && *slot) {
        metrics_counter_inc(*slot);
        return;
    }
    char code[8];
    snprintf(code, sizeof code, "%d", status);
    metrics_counter_t *c = metrics_counter_labels(g->m.requests, ingress_label(t), code);
    if (slot)
        *slot = c;
    metrics_counter_inc(c);
}

static int metrics_setup(ingress_t *g)
{
    metrics_registry_t *r = g->d->metrics;
    metrics_family_t *rx = metrics_counter_new(
        r, "ndd_ingress_messages_received_total",
        "messages received (copies, VES events, HV-VES frames), valid or not", "transport");
    metrics_family_t *rxb = metrics_counter_new(
        r, "ndd_ingress_messages_received_bytes_total",
        "bytes of the messages received (HV-VES: WTP payload bytes)", "transport");
    metrics_family_t *ack = metrics_counter_new(r, "ndd_ingress_messages_acked_total",
                                                "records Kafka acknowledged", "transport");
    g->m.dropped = metrics_counter_new(r, "ndd_ingress_messages_dropped_total",
                                       "messages refused or skipped, by cause", "transport,reason");
    g->m.produce_errors = metrics_counter_new(r, "ndd_ingress_produce_errors_total",
                                              "records Kafka did not take or did not acknowledge",
                                              "transport,reason");
    g->m.requests =
        metrics_counter_new(r, "ndd_ingress_requests_total", "HTTP requests answered, by status",
                            "transport,status_code");
    double b[16];
    metrics_buckets_exponential(0.0005, 2, 16, b);
    metrics_family_t *lat =
        metrics_histogram_new(r, "ndd_ingress_message_ack_seconds",
                              "time from receipt to Kafka's acknowledgement", "transport", b, 16);
    double tb[16];
    metrics_buckets_exponential(0.001, 2, 16, tb);
    metrics_family_t *travel = metrics_histogram_new(
        r, "ndd_ingress_message_travel_seconds",
        "HV-VES: from the event's lastEpochMicrosec to Kafka's acknowledgement", "transport", tb,
        16);
    metrics_family_t *inf = metrics_gauge_new(r, "ndd_ingress_messages_in_flight",
                                              "records produced, acknowledgement to come", NULL);
    g->m.buffered_input = metrics_gauge_new(
        r, "ndd_ingress_buffered_input_bytes",
        "HV-VES and TCP copies: input bytes a listener's connections hold (max-buffered)",
        "transport");
    g->m.closed_by_bound = metrics_counter_new(r, "ndd_ingress_connections_closed_total",
                                               "HV-VES and TCP copy connections closed by a bound",
                                               "transport,reason");
    if (!rx || !rxb || !ack || !g->m.dropped || !g->m.produce_errors || !g->m.requests || !lat ||
        !travel || !inf || !g->m.buffered_input || !g->m.closed_by_bound)
        return -1;
    for (ingress_transport_t t = 0; (size_t)t < listener_rows(); t++) {
        g->m.received[t] = metrics_counter_labels(rx, ingress_label(t));
        g->m.received_bytes[t] = metrics_counter_labels(rxb, ingress_label(t));
        g->m.acked[t] = metrics_counter_labels(ack, ingress_label(t));
        g->m.ack_latency[t] = metrics_histogram_labels(lat, ingress_label(t));
        if (ingress_listeners[t]->travel) /* one listener's events carry their send time */
            g->m.travel = metrics_histogram_labels(travel, ingress_label(t));
    }
    g->m.in_flight = metrics_gauge_labels(inf);
    return 0;
}

int ingress_on_room_add(ingress_t *g, void (*fn)(void *), void *arg)
{
    for (size_t i = 0; i < INGRESS_MAX_ON_ROOM; i++)
        if (!g->on_room[i].fn) {
            g->on_room[i].fn = fn;
            g->on_room[i].arg = arg;
            return 0;
        }
    return -1;
}

void ingress_on_room_remove(ingress_t *g, void (*fn)(void *), void *arg)
{
    for (size_t i = 0; i < INGRESS_MAX_ON_ROOM; i++)
        if (g->on_room[i].fn == fn && g->on_room[i].arg == arg)
            g->on_room[i].fn = NULL;
}

static void serve_reports(ingress_t *g)
{
    kafka_producer_poll(g->prod, 0);
    for (size_t i = 0; i < INGRESS_MAX_ON_ROOM; i++)
        if (g->on_room[i].fn)
            g->on_room[i].fn(g->on_room[i].arg);
}

static void on_pipe(evutil_socket_t fd, short what, void *arg)
{
    char b[64];
    while (read(fd, b, sizeof b) > 0)
        ;
    serve_reports(arg);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    ingress_t *g = arg;
    serve_reports(g);
    char why[256];
    if (kafka_producer_fatal_error(g->prod, why, sizeof why)) {
        log_error("producer fatal error: %s; stopping", why);
        event_base_loopbreak(g->base);
    }
    if (*g->d->stop)
        event_base_loopbreak(g->base);
}

int ingress_check_routes(const config_list_t *l, const char *key, char *err, size_t errlen)
{
    for (size_t i = 0; i < l->n; i++) {
        const char *eq = strchr(l->items[i], '=');
        if (!eq || eq == l->items[i] || !eq[1]) {
            snprintf(err, errlen, "%s: \"%s\" is not domain=topic", key, l->items[i]);
            return -1;
        }
    }
    return 0;
}

int ingress_check(daemon_t *d, FILE *out, char *err, size_t errlen)
{
    const ingress_settings_t *S = d->def->settings;
    bool any_tls = false;
    for (size_t i = 0; i < listener_rows(); i++) {
        const ingress_listener_kind_t *k = ingress_listeners[i];
        any_tls |= k->enabled(S) && k->tls && k->tls(S);
        if (k->check && k->check(S, err, errlen))
            return -1;
    }
    if (any_tls && (!S->tls_cert || !S->tls_key)) {
        snprintf(err, errlen, "tls.cert-file and tls.key-file are required with a TLS listener");
        return -1;
    }
    if (S->tls_client_cert && !S->tls_ca) {
        snprintf(err, errlen, "tls.client-cert needs tls.ca-file");
        return -1;
    }
    if (out)
        for (size_t i = 0; i < listener_rows(); i++)
            fprintf(out, "listener %s: %s\n", ingress_listeners[i]->name,
                    ingress_listeners[i]->enabled(S) ? "on" : "off");
    return 0;
}

/* Starts row i unless it runs already, the listener it needs first: started when enabled or
 * needed by one that is (wanted). 0, or -1 with the listener named in err. */
typedef struct listeners_run {
    void *state[INGRESS_MAX_LISTENERS];
    size_t order[INGRESS_MAX_LISTENERS], n; /* rows in the order they started */
} listeners_run_t;

static int listener_start(ingress_t *g, listeners_run_t *run, size_t i, bool wanted, char *err,
                          size_t errlen)
{
    void **state = run->state;
    const ingress_listener_kind_t *k = ingress_listeners[i];
    if (state[i] || !(wanted || k->enabled(g->S)))
        return 0;
    ingress_transport_t need = k->needs ? ingress_listener_index(k->needs) : -1;
    if (need >= 0 && listener_start(g, run, (size_t)need, true, err, errlen))
        return -1;
    char why[400];
    if (!(state[i] = k->start(g, why, sizeof why))) {
        snprintf(err, errlen, "listener %s: %s", k->name, why);
        return -1;
    }
    run->order[run->n++] = i;
    return 0;
}

/* What ingress_run starts beside the listeners' state, for ingress_shutdown to free: the
 * pipe libkafka signals delivery reports on, its event, and the tick. */
typedef struct ingress_loop {
    listeners_run_t run;
    int pfd[2];
    struct event *pev, *tick;
} ingress_loop_t;

/* The producer every listener writes through. -1 when it cannot be made (said on stderr). */
static int ingress_producer_start(ingress_t *g)
{
    daemon_t *d = g->d;
    char err[512] = "";
    /* No message timeout: a record accepted from a client is written however long Kafka is
     * away (HV-VES and TCP have no acknowledgement to fail, and a 503 must mean "not written":
     * a record timed out in flight may still be written). Listeners stop taking input instead:
     * max-in-flight, max-in-flight-bytes, and for HTTP ingress_kafka_stalled. */
    kafka_prop_t props[64];
    size_t np = 0;
    for (size_t i = 0; i < d->n_props && np < 63; i++)
        props[np++] = d->props[i];
    /* Last, so that a kafka.message.timeout.ms pass-through cannot take it back. */
    props[np++] = (kafka_prop_t){"message.timeout.ms", "0"};
    kafka_producer_opts_t po = {.brokers = d->brokers,
                                .client_id = "ndd-ingress",
                                .props = props,
                                .n_props = np,
                                .on_delivery = on_delivery,
                                .owner = g};
    g->prod = kafka_producer_new(&po, err, sizeof err);
    if (!g->prod) {
        fprintf(stderr, "ndd-ingress: producer: %s\n", err);
        return -1;
    }
    return 0;
}

/* The listeners' TLS contexts when tls.cert-file is set. -1 when one cannot be made (said on
 * stderr; those made are freed by ingress_shutdown). */
static int ingress_tls_start(ingress_t *g)
{
    const ingress_settings_t *S = g->S;
    char err[512] = "";
    if (!S->tls_cert)
        return 0;
    /* One context per ALPN: a client offering "h2,http/1.1" must get h2 from the HTTP/2
     * listener and http/1.1 from the VES one (httpd). */
    tls_config_t tc = {.cert_file = S->tls_cert,
                       .key_file = S->tls_key,
                       .ca_file = S->tls_ca,
                       .require_client_cert = S->tls_client_cert,
                       .alpn = "h2"};
    g->tls = tls_server_ctx_new(&tc, err, sizeof err);
    tc.alpn = "http/1.1";
    g->tls_h1 = g->tls ? tls_server_ctx_new(&tc, err, sizeof err) : NULL;
    /* ves.cert-basic-auth: the certificate is asked for and verified when sent, but not
     * required (basic auth then decides), as ONAP's certBasicAuth. */
    if (g->tls_h1 && S->ves_cert_basic_auth) {
        tc.require_client_cert = true;
        if ((g->tls_ves = tls_server_ctx_new(&tc, err, sizeof err)))
            SSL_CTX_set_verify(g->tls_ves, SSL_VERIFY_PEER, NULL);
    }
    if (!g->tls || !g->tls_h1 || (S->ves_cert_basic_auth && !g->tls_ves)) {
        fprintf(stderr, "ndd-ingress: TLS: %s\n", err);
        return -1;
    }
    return 0;
}

/* The loop's own events: delivery reports served as soon as libkafka has them (through a
 * pipe; without one, by the tick alone), and the tick that also watches the stop flag. */
static void ingress_events_start(ingress_t *g, ingress_loop_t *L)
{
    if (pipe2(L->pfd, O_NONBLOCK | O_CLOEXEC) == 0) {
        rd_kafka_queue_t *q = rd_kafka_queue_get_main(kafka_producer_handle(g->prod));
        rd_kafka_queue_io_event_enable(q, L->pfd[1], "1", 1);
        rd_kafka_queue_destroy(q);
        L->pev = event_new(g->base, L->pfd[0], EV_READ | EV_PERSIST, on_pipe, g);
        event_add(L->pev, NULL);
    }
    L->tick = event_new(g->base, -1, EV_PERSIST, on_tick, g);
    struct timeval tv = {0, 100000};
    event_add(L->tick, &tv);
}

/* Every enabled listener, in table order. -1 at the first that cannot start (said on
 * stderr; those started are stopped by ingress_shutdown). */
static int ingress_listeners_start(ingress_t *g, listeners_run_t *run)
{
    char err[512] = "";
    for (size_t i = 0; i < listener_rows(); i++)
        if (listener_start(g, run, i, false, err, sizeof err)) {
            fprintf(stderr, "ndd-ingress: %s\n", err);
            return -1;
        }
    return 0;
}

/* Frees whatever ingress_run started, on every path out. */
static void ingress_shutdown(ingress_t *g, ingress_loop_t *L)
{
    /* The producer first: its last delivery reports answer requests the listeners hold. */
    if (g->prod) {
        int left = kafka_producer_close(g->prod, 5000);
        if (left)
            log_warn("%d records not acknowledged at shutdown", left);
    }
    /* In the reverse of their start: a listener stops before the one it needs. */
    for (size_t k = L->run.n; k-- > 0;)
        ingress_listeners[L->run.order[k]]->stop(L->run.state[L->run.order[k]]);
    if (L->pev)
        event_free(L->pev);
    if (L->tick)
        event_free(L->tick);
    if (L->pfd[0] >= 0) {
        close(L->pfd[0]);
        close(L->pfd[1]);
    }
    while (g->free_produced) {
        produced_t *p = g->free_produced;
        g->free_produced = p->next;
        free(p);
    }
    tls_ctx_free(g->tls);
    tls_ctx_free(g->tls_h1);
    tls_ctx_free(g->tls_ves);
    if (g->base)
        event_base_free(g->base);
}

int ingress_run(daemon_t *d, const ingress_settings_t *S)
{
    ingress_t g = {.d = d, .S = S};
    ingress_loop_t L = {.pfd = {-1, -1}};
    int rc = 1;
    g.base = event_base_new();
    if (!g.base || metrics_setup(&g)) {
        fprintf(stderr, "ndd-ingress: cannot set up the event loop or metrics\n");
        goto out;
    }
    if (ingress_producer_start(&g) || ingress_tls_start(&g))
        goto out;
    ingress_events_start(&g, &L);
    if (ingress_listeners_start(&g, &L.run))
        goto out;
    daemon_hold(d, DAEMON_COND_CONFIG, true);
    daemon_hold(d, DAEMON_COND_PARTITIONS, true);
    log_info("ndd-ingress running");
    event_base_dispatch(g.base);
    daemon_not_ready(d, "stopping");
    rc = 0;
out:
    ingress_shutdown(&g, &L);
    return rc;
}
