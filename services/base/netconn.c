/* Server-side socket I/O, plain or TLS (netconn.h). */
#include "netconn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <openssl/err.h>

#include "tls.h"

int netconn_init(netconn_t *nc, struct event_base *base, evutil_socket_t fd,
                 event_callback_fn on_read, event_callback_fn on_write, void *arg)
{
    *nc = (netconn_t){.fd = fd};
    nc->rev = event_new(base, fd, EV_READ | EV_PERSIST, on_read, arg);
    nc->wev = event_new(base, fd, EV_WRITE | EV_PERSIST, on_write, arg);
    if (nc->rev && nc->wev)
        return 0;
    netconn_release(nc);
    return -1;
}

/* Partial writes and a retried write from another address: the owner's output buffer may
 * move or grow between a write that wanted the socket and its retry. */
static void tls_modes(SSL *ssl)
{
    SSL_set_mode(ssl, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_ENABLE_PARTIAL_WRITE);
}

int netconn_tls_accept(netconn_t *nc, SSL_CTX *ctx, char *err, size_t errlen)
{
    nc->ssl = tls_server_ssl_new(ctx, err, errlen);
    if (!nc->ssl)
        return -1;
    if (SSL_set_fd(nc->ssl, nc->fd) != 1) {
        snprintf(err, errlen, "SSL_set_fd failed");
        SSL_free(nc->ssl);
        nc->ssl = NULL;
        return -1;
    }
    tls_modes(nc->ssl);
    SSL_set_accept_state(nc->ssl);
    return 0;
}

void netconn_tls_adopt(netconn_t *nc, SSL *ssl)
{
    nc->ssl = ssl;
    tls_modes(ssl);
}

int netconn_handshake(netconn_t *nc, char *err, size_t errlen)
{
    int r = SSL_do_handshake(nc->ssl);
    if (r == 1) {
        netconn_want_write(nc, false);
        netconn_want_read(nc, true);
        return 1;
    }
    switch (SSL_get_error(nc->ssl, r)) {
    case SSL_ERROR_WANT_READ:
        netconn_want_write(nc, false);
        netconn_want_read(nc, true);
        return 0;
    case SSL_ERROR_WANT_WRITE:
        netconn_want_read(nc, false);
        netconn_want_write(nc, true);
        return 0;
    default:
        tls_last_error(err, errlen);
        return -1;
    }
}

ssize_t netconn_read(netconn_t *nc, void *p, size_t n)
{
    if (!nc->ssl) {
        ssize_t r = recv(nc->fd, p, n, 0);
        if (r < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? NETCONN_AGAIN : -1;
        return r;
    }
    int r = SSL_read(nc->ssl, p, n > 0x40000000 ? 0x40000000 : (int)n);
    if (r > 0)
        return r;
    switch (SSL_get_error(nc->ssl, r)) {
    case SSL_ERROR_WANT_READ:
        return NETCONN_AGAIN;
    case SSL_ERROR_WANT_WRITE:
        nc->read_wants_write = true;
        netconn_want_write(nc, true);
        return NETCONN_AGAIN;
    case SSL_ERROR_ZERO_RETURN:
        return 0;
    default:
        ERR_clear_error();
        return -1;
    }
}

ssize_t netconn_write(netconn_t *nc, const void *p, size_t n)
{
    if (!nc->ssl) {
        ssize_t w = send(nc->fd, p, n, MSG_NOSIGNAL);
        if (w < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? NETCONN_AGAIN : -1;
        return w;
    }
    int w = SSL_write(nc->ssl, p, n > 0x40000000 ? 0x40000000 : (int)n);
    if (w > 0)
        return w;
    switch (SSL_get_error(nc->ssl, w)) {
    case SSL_ERROR_WANT_WRITE:
        return NETCONN_AGAIN;
    case SSL_ERROR_WANT_READ:
        nc->write_wants_read = true;
        netconn_want_read(nc, true);
        return NETCONN_AGAIN;
    default:
        ERR_clear_error();
        return -1;
    }
}

bool netconn_pending(const netconn_t *nc)
{
    return nc->ssl && SSL_pending(nc->ssl) > 0;
}

void netconn_want_read(netconn_t *nc, bool on)
{
    if (on == nc->rev_on)
        return;
    if (on)
        event_add(nc->rev, NULL);
    else
        event_del(nc->rev);
    nc->rev_on = on;
}

void netconn_want_write(netconn_t *nc, bool on)
{
    if (on == nc->wev_on)
        return;
    if (on)
        event_add(nc->wev, NULL);
    else
        event_del(nc->wev);
    nc->wev_on = on;
}

void netconn_release(netconn_t *nc)
{
    if (nc->rev)
        event_free(nc->rev);
    if (nc->wev)
        event_free(nc->wev);
    nc->rev = nc->wev = NULL;
    nc->rev_on = nc->wev_on = false;
}

void netconn_close(netconn_t *nc, bool polite)
{
    netconn_release(nc);
    if (nc->ssl) {
        if (polite)
            (void)SSL_shutdown(nc->ssl); /* best effort close_notify */
        else
            SSL_set_quiet_shutdown(nc->ssl, 1);
        SSL_free(nc->ssl);
        nc->ssl = NULL;
    }
    if (nc->fd >= 0)
        evutil_closesocket(nc->fd);
    nc->fd = -1;
}

void netconn_peer_name(const struct sockaddr *sa, char *ip, size_t iplen, char *peer,
                       size_t peerlen)
{
    unsigned port = 0;
    snprintf(ip, iplen, "?");
    if (sa->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, ip, (socklen_t)iplen);
        port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, ip, (socklen_t)iplen);
        port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
    }
    snprintf(peer, peerlen, "%s:%u", ip, port);
}
