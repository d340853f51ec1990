/* The connection layer under the stream transports: one bufferevent to host:port, either a
 * plain socket or TLS (bufferevent_openssl) with SNI and certificate-name verification, like
 * Redis' connection interface with socket and TLS implementations. The transports above it
 * (HTTP/2, frames) never look at which one they got, except to check ALPN. */
#ifndef NDD_ADAPTER_CONN_H
#define NDD_ADAPTER_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/bufferevent.h>
#include <openssl/ssl.h>

/* The most bytes one read or write call on a connection moves (libevent's default: 16 KiB). */
#define CONN_MAX_IO (1u << 20)

typedef struct conn_opts {
    const char *host;
    const char *port;
    bool tls;
    SSL_CTX *ssl_ctx;            /* required with tls */
    const char *sni;             /* NULL: host */
    const char *endpoint;        /* for error texts */
    uint32_t connect_timeout_ms; /* 0: 5000 */
} conn_opts_t;

/* Creates the bufferevent and starts a non-blocking connect (name resolution is a blocking
 * getaddrinfo: endpoints are configured by address or by names in /etc/hosts / a local
 * resolver). The caller sets callbacks and waits for BEV_EVENT_CONNECTED (after the TLS
 * handshake for TLS). NULL with the reason in err. */
struct bufferevent *conn_open(struct event_base *base, const conn_opts_t *o, char *err,
                              size_t errlen);

/* Called once BEV_EVENT_CONNECTED arrived: clears the connect timeouts, sets TCP_NODELAY. */
void conn_established(struct bufferevent *bev);

/* One line saying why an event (BEV_EVENT_ERROR/EOF/TIMEOUT) ended the connection, with the
 * TLS verification result or the OpenSSL error when there is one and the endpoint name, e.g.
 * "certificate verify failed: unable to get local issuer certificate (endpoint tls://h:p)". */
const char *conn_describe_event(struct bufferevent *bev, short what, bool connecting,
                                const char *endpoint, char *buf, size_t len);

/* The SSL of a TLS connection, NULL for a plain socket. */
SSL *conn_ssl(struct bufferevent *bev);

#endif
