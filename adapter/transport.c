/* What every transport shares: the binding of the transport table's rows to their
 * implementations, HTTP status and Retry-After rules, and opening a stream connection. */
#include "transport.h"
#include "conn.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each row of the transport table (services/copy/transport_desc.c) bound to the code that
 * implements it: a new transport is its file (adapter/transport_<name>.c) and one line here. */
typedef struct transport_binding {
    const transport_desc_t *desc;
    const transport_ops_t *ops;
} transport_binding_t;

static transport_binding_t transport_bindings[TRANSPORT_MAX] = {
    {&transport_desc_http2, &transport_h2_ops},
    {&transport_desc_tcp, &transport_tcp_ops},
    {&transport_desc_tls, &transport_tcp_ops}, /* tcp with a TLS connection layer */
    {&transport_desc_file, &transport_file_ops},
    {&transport_desc_kafka, &transport_kafka_ops}, /* produce to a topic */
};
/* Rows in use: the built-in ones above, then those registered, up to the first empty slot
 * (no count to keep in step with the list). */
static size_t transport_binding_rows(void)
{
    size_t n = 0;
    while (n < TRANSPORT_MAX && transport_bindings[n].desc)
        n++;
    return n;
}

int transport_bind(const transport_desc_t *d, const transport_ops_t *ops, char *err, size_t errlen)
{
    if (!d || !ops || !ops->create || !ops->send) {
        snprintf(err, errlen, "a binding needs a transport row and its operations");
        return -1;
    }
    if (transport_ops_for(d)) {
        snprintf(err, errlen, "transport \"%s\" is already bound", d->name);
        return -1;
    }
    if (transport_binding_rows() == TRANSPORT_MAX) {
        snprintf(err, errlen, "transport bindings full (%d)", TRANSPORT_MAX);
        return -1;
    }
    transport_bindings[transport_binding_rows()] = (transport_binding_t){d, ops};
    return 0;
}

const transport_ops_t *transport_ops_for(const transport_desc_t *d)
{
    for (size_t i = 0; i < transport_binding_rows(); i++)
        if (transport_bindings[i].desc == d)
            return transport_bindings[i].ops;
    return NULL;
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

struct bufferevent *transport_conn_open(struct event_base *evb, const transport_config_t *cfg,
                                        bufferevent_data_cb readcb, bufferevent_data_cb writecb,
                                        bufferevent_event_cb eventcb, void *arg, char *err,
                                        size_t errlen)
{
    conn_opts_t o = {.host = cfg->host,
                     .port = cfg->port,
                     .tls = cfg->use_tls,
                     .ssl_ctx = cfg->ssl_ctx,
                     .sni = cfg->sni,
                     .endpoint = cfg->endpoint,
                     .connect_timeout_ms = cfg->connect_timeout_ms};
    struct bufferevent *bev = conn_open(evb, &o, err, errlen);
    if (bev) {
        bufferevent_setcb(bev, readcb, writecb, eventcb, arg);
        bufferevent_enable(bev, EV_READ | EV_WRITE);
    }
    return bev;
}
