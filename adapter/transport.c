/* What every transport shares: a row's implementation, HTTP status and Retry-After rules, and
 * opening a stream connection. */
#include "transport.h"
#include "conn.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const transport_ops_t *transport_ops_for(const transport_desc_t *d)
{
    return d ? d->ops : NULL;
}

bool transport_status_retryable(int status)
{
    return status >= 500 || status == 408 || status == 429;
}

uint32_t transport_parse_retry_after(const char *v, size_t len)
{
    size_t i = 0;
    while (i < len && (v[i] == ' ' || v[i] == '\t'))
        i++;
    if (i == len || !isdigit((unsigned char)v[i]))
        return 0;
    uint64_t s = 0;
    while (i < len && isdigit((unsigned char)v[i])) {
        s = s * 10 + (uint64_t)(v[i] - '0');
        if (s > 86400)
            s = 86400; /* a day is plenty; keeps the product in range */
        i++;
    }
    while (i < len && (v[i] == ' ' || v[i] == '\t'))
        i++;
    if (i != len)
        return 0;
    return (uint32_t)(s * 1000);
}

/* ---- stream transports ---- */

/* The one place that turns a transport_config_t into conn_open options. */
static struct bufferevent *stream_open(transport_stream_t *s, char *err, size_t errlen)
{
    const transport_config_t *cfg = &s->cfg;
    conn_opts_t o = {.host = cfg->host,
                     .port = cfg->port,
                     .tls = cfg->use_tls,
                     .ssl_ctx = cfg->ssl_ctx,
                     .sni = cfg->sni,
                     .endpoint = cfg->endpoint,
                     .connect_timeout_ms = cfg->connect_timeout_ms};
    struct bufferevent *bev = conn_open(s->evb, &o, err, errlen);
    if (bev) {
        bufferevent_setcb(bev, s->readcb, s->writecb, s->eventcb, s);
        bufferevent_enable(bev, EV_READ | EV_WRITE);
    }
    return bev;
}

static void stream_close_evcb(evutil_socket_t fd, short what, void *arg)
{
    transport_stream_t *s = arg;
    if (s->state == STREAM_CLOSING)
        transport_stream_close(s, s->close_reason);
}

transport_stream_t *transport_stream_new(size_t size, const transport_ops_t *ops,
                                         struct event_base *evb, const transport_config_t *cfg,
                                         const transport_events_t *ev, void *owner, char *err,
                                         size_t errlen)
{
    if (cfg->use_tls && !cfg->ssl_ctx) {
        snprintf(err, errlen, "endpoint %s: TLS needs a TLS context", cfg->endpoint);
        return NULL;
    }
    transport_stream_t *s = calloc(1, size);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->base.ops = ops;
    s->evb = evb;
    s->cfg = *cfg;
    s->ev = *ev;
    s->owner = owner;
    if (!s->cfg.max_in_flight)
        s->cfg.max_in_flight = 100;
    if (!s->cfg.timeout_ms)
        s->cfg.timeout_ms = 5000;
    if (!s->cfg.out_buf_max)
        s->cfg.out_buf_max = 1u << 20;
    s->close_ev = event_new(evb, -1, 0, stream_close_evcb, s);
    if (!s->close_ev) {
        snprintf(err, errlen, "out of memory");
        free(s);
        return NULL;
    }
    return s;
}

int transport_stream_connect(transport_stream_t *s)
{
    if (s->state != STREAM_DOWN)
        return 0;
    char err[320];
    s->bev = stream_open(s, err, sizeof err);
    s->state = STREAM_CONNECTING;
    if (!s->bev) /* reported through the loop like any other connect failure */
        transport_stream_schedule_close(s, err);
    return 0;
}

void transport_stream_schedule_close(transport_stream_t *s, const char *reason)
{
    if (s->state == STREAM_CLOSING || s->state == STREAM_DOWN)
        return;
    snprintf(s->close_reason, sizeof s->close_reason, "%s", reason);
    s->state = STREAM_CLOSING;
    event_active(s->close_ev, 0, 0);
}

void transport_stream_close(transport_stream_t *s, const char *reason)
{
    if (s->state == STREAM_DOWN)
        return;
    s->state = STREAM_DOWN;
    /* The socket buffer may reference the owner's payloads: free it before failing them. */
    if (s->bev) {
        bufferevent_free(s->bev);
        s->bev = NULL;
    }
    s->drop(s, reason);
    s->ev.on_down(s->owner, reason);
}

void transport_stream_disconnect(transport_t *base, const char *reason)
{
    transport_stream_t *s = (transport_stream_t *)base;
    if (s->state == STREAM_DOWN)
        return;
    if (s->busy) {
        transport_stream_schedule_close(s, reason);
        return;
    }
    transport_stream_close(s, reason);
}

void transport_stream_lost(transport_stream_t *s, short what)
{
    char why[320];
    conn_describe_event(s->bev, what, s->state == STREAM_CONNECTING, s->cfg.endpoint, why,
                        sizeof why);
    transport_stream_disconnect(&s->base, why);
}

bool transport_stream_is_up(const transport_t *base)
{
    return ((const transport_stream_t *)base)->state == STREAM_UP;
}

void transport_stream_free(transport_stream_t *s)
{
    if (s->bev)
        bufferevent_free(s->bev);
    if (s->close_ev)
        event_free(s->close_ev);
    free(s);
}
