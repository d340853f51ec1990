#include "conn.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/bufferevent_ssl.h>
#include <event2/util.h>
#include <openssl/err.h>
#include <openssl/x509.h>

#include "tls.h"

struct bufferevent *conn_open(struct event_base *base, const conn_opts_t *o, char *err,
                              size_t errlen)
{
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(o->host, o->port, &hints, &ai);
    if (rc != 0 || !ai) {
        snprintf(err, errlen, "cannot resolve %s:%s: %s (endpoint %s)", o->host, o->port,
                 gai_strerror(rc), o->endpoint);
        return NULL;
    }
    struct bufferevent *bev = NULL;
    if (o->tls) {
        if (!o->ssl_ctx) {
            snprintf(err, errlen, "TLS endpoint %s without a TLS context", o->endpoint);
            freeaddrinfo(ai);
            return NULL;
        }
        char terr[256];
        SSL *ssl = tls_client_ssl_new(o->ssl_ctx, o->sni ? o->sni : o->host, terr, sizeof terr);
        if (!ssl) {
            snprintf(err, errlen, "TLS setup for %s: %s", o->endpoint, terr);
            freeaddrinfo(ai);
            return NULL;
        }
        bev = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                             BEV_OPT_CLOSE_ON_FREE);
        if (!bev) {
            SSL_free(ssl);
        } else {
            /* A clean TLS close_notify is not required from endpoints that just close. */
            bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
        }
    } else {
        bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    }
    if (!bev) {
        snprintf(err, errlen, "cannot create a connection to %s", o->endpoint);
        freeaddrinfo(ai);
        return NULL;
    }
    /* libevent moves at most 16 KiB per read or write call by default: a 54 KiB frame of 16
     * copies took four writev calls (four trips through the TCP stack), and h2c's responses
     * were read in 16 KiB pieces. A plain socket moves up to CONN_MAX_IO per call instead:
     * the kernel takes what fits in the socket buffer, the rest waits for the next writable
     * event as before, and the memory queued is still bounded by the transports' out_buf_max.
     * Not over TLS: libevent's TLS writer calls SSL_write once per buffer piece and, with
     * partial writes enabled (tls.c), goes on to the next piece after a partial one, so a
     * piece must not exceed one record (16 KiB): then each call is one full-size record. */
    if (!o->tls) {
        (void)bufferevent_set_max_single_write(bev, CONN_MAX_IO);
        (void)bufferevent_set_max_single_read(bev, CONN_MAX_IO);
    }
    uint32_t cto = o->connect_timeout_ms ? o->connect_timeout_ms : 5000;
    struct timeval tv = {cto / 1000, (cto % 1000) * 1000};
    bufferevent_set_timeouts(bev, &tv, &tv);
    if (bufferevent_socket_connect(bev, ai->ai_addr, (int)ai->ai_addrlen) < 0) {
        snprintf(err, errlen, "connect to %s failed: %s", o->endpoint, strerror(errno));
        bufferevent_free(bev);
        freeaddrinfo(ai);
        return NULL;
    }
    freeaddrinfo(ai);
    return bev;
}

void conn_established(struct bufferevent *bev)
{
    bufferevent_set_timeouts(bev, NULL, NULL);
    evutil_socket_t fd = bufferevent_getfd(bev);
    if (fd >= 0) {
        int one = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
}

SSL *conn_ssl(struct bufferevent *bev)
{
    return bufferevent_openssl_get_ssl(bev);
}

const char *conn_describe_event(struct bufferevent *bev, short what, bool connecting,
                                const char *endpoint, char *buf, size_t len)
{
    SSL *ssl = bev ? bufferevent_openssl_get_ssl(bev) : NULL;
    if (ssl) {
        long vr = SSL_get_verify_result(ssl);
        /* A failed handshake leaves the reason the chain was refused in the verify result. */
        if (vr != X509_V_OK) {
            snprintf(buf, len, "certificate verify failed: %s (endpoint %s)",
                     X509_verify_cert_error_string(vr), endpoint);
            return buf;
        }
        unsigned long e = bufferevent_get_openssl_error(bev);
        if (e) {
            char es[200];
            ERR_error_string_n(e, es, sizeof es);
            snprintf(buf, len, "TLS error %s: %s (endpoint %s)",
                     connecting ? "during handshake" : "on connection", es, endpoint);
            return buf;
        }
    }
    int se = EVUTIL_SOCKET_ERROR();
    if (what & BEV_EVENT_TIMEOUT)
        snprintf(buf, len, "%s timed out (endpoint %s)", connecting ? "connect" : "connection",
                 endpoint);
    else if (what & BEV_EVENT_EOF)
        snprintf(buf, len, "connection closed by peer (endpoint %s)", endpoint);
    else if (connecting)
        snprintf(buf, len, "connect failed: %s (endpoint %s)",
                 se ? evutil_socket_error_to_string(se) : "unknown error", endpoint);
    else
        snprintf(buf, len, "connection error: %s (endpoint %s)",
                 se ? evutil_socket_error_to_string(se) : "unknown error", endpoint);
    return buf;
}
