#include "transport.h"
#include "conn.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const transport_ops_t *transport_ops_for(transport_kind_t kind)
{
    switch (kind) {
    case TRANSPORT_HTTP2:
        return &transport_h2_ops;
    case TRANSPORT_TCP:
    case TRANSPORT_TLS:
        return &transport_tcp_ops;
    }
    return NULL;
}

const char *transport_kind_name(transport_kind_t kind)
{
    switch (kind) {
    case TRANSPORT_HTTP2:
        return "http2";
    case TRANSPORT_TCP:
        return "tcp";
    case TRANSPORT_TLS:
        return "tls";
    }
    return "?";
}

int transport_kind_parse(const char *name, transport_kind_t *out)
{
    if (!name)
        return -1;
    if (!strcmp(name, "http2"))
        *out = TRANSPORT_HTTP2;
    else if (!strcmp(name, "tcp"))
        *out = TRANSPORT_TCP;
    else if (!strcmp(name, "tls"))
        *out = TRANSPORT_TLS;
    else
        return -1;
    return 0;
}

int transport_url_parse(const char *url, transport_url_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *sep = url ? strstr(url, "://") : NULL;
    if (!sep) {
        snprintf(err, errlen, "endpoint URL \"%s\": missing scheme (http, https, tcp, tls)",
                 url ? url : "");
        return -1;
    }
    size_t sl = (size_t)(sep - url);
    const char *def_port;
    if (sl == 4 && !strncmp(url, "http", 4)) {
        out->kind = TRANSPORT_HTTP2;
        def_port = "80";
    } else if (sl == 5 && !strncmp(url, "https", 5)) {
        out->kind = TRANSPORT_HTTP2;
        out->tls = true;
        def_port = "443";
    } else if (sl == 3 && !strncmp(url, "tcp", 3)) {
        out->kind = TRANSPORT_TCP;
        def_port = NULL;
    } else if (sl == 3 && !strncmp(url, "tls", 3)) {
        out->kind = TRANSPORT_TLS;
        out->tls = true;
        def_port = NULL;
    } else {
        snprintf(err, errlen, "endpoint URL \"%s\": unknown scheme \"%.*s\"", url, (int)sl, url);
        return -1;
    }
    const char *h = sep + 3;
    const char *hend;
    const char *rest;
    if (*h == '[') {
        hend = strchr(h, ']');
        if (!hend) {
            snprintf(err, errlen, "endpoint URL \"%s\": unterminated [IPv6] address", url);
            return -1;
        }
        h++;
        rest = hend + 1;
    } else {
        hend = h + strcspn(h, ":/");
        rest = hend;
    }
    size_t hl = (size_t)(hend - h);
    if (hl == 0 || hl >= sizeof out->host) {
        snprintf(err, errlen, "endpoint URL \"%s\": empty or too long host", url);
        return -1;
    }
    memcpy(out->host, h, hl);
    if (*rest == ':') {
        rest++;
        size_t pl = strspn(rest, "0123456789");
        if (pl == 0 || pl >= sizeof out->port || atoi(rest) <= 0 || atoi(rest) > 65535) {
            snprintf(err, errlen, "endpoint URL \"%s\": bad port", url);
            return -1;
        }
        memcpy(out->port, rest, pl);
        rest += pl;
    } else if (def_port) {
        strcpy(out->port, def_port);
    } else {
        snprintf(err, errlen, "endpoint URL \"%s\": a port is required", url);
        return -1;
    }
    if (out->kind == TRANSPORT_HTTP2) {
        const char *p = *rest ? rest : "/";
        if (*p != '/' || strlen(p) >= sizeof out->path) {
            snprintf(err, errlen, "endpoint URL \"%s\": bad path", url);
            return -1;
        }
        strcpy(out->path, p);
    } else if (*rest && strcmp(rest, "/")) {
        snprintf(err, errlen, "endpoint URL \"%s\": a %s endpoint has no path", url,
                 transport_kind_name(out->kind));
        return -1;
    }
    return 0;
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
                                        char *err, size_t errlen)
{
    conn_opts_t o = {.host = cfg->host,
                     .port = cfg->port,
                     .tls = cfg->use_tls,
                     .ssl_ctx = cfg->ssl_ctx,
                     .sni = cfg->sni,
                     .endpoint = cfg->endpoint,
                     .connect_timeout_ms = cfg->connect_timeout_ms};
    return conn_open(evb, &o, err, errlen);
}
