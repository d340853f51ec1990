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
