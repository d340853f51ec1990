/* One server-side connection's socket I/O, plain or TLS behind the same calls: what the HTTP
 * server (httpd_conn.c, HTTP/1.1) and the HTTP/2 server (h2server.c) both read and write
 * through. It owns the socket, the TLS session and the two libevent events that wait on the
 * socket; the owner keeps its own buffers and decides when to read or write.
 *
 * TLS turns the direction around at times (a read that needs a write, a renegotiation; a write
 * that needs a read): netconn_read / netconn_write arm the other event themselves and set
 * read_wants_write / write_wants_read, and the owner's callbacks retry the operation that
 * asked when that event fires.
 *
 * Threading: a connection belongs to the thread running its event_base. */
#ifndef NDD_NETCONN_H
#define NDD_NETCONN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <event2/event.h>
#include <event2/util.h>
#include <openssl/ssl.h>

struct event;
struct event_base;

typedef struct netconn {
    evutil_socket_t fd; /* -1 once handed on or closed */
    SSL *ssl;           /* NULL: plain TCP */
    struct event *rev, *wev;
    bool rev_on, wev_on;
    bool read_wants_write, write_wants_read; /* TLS */
} netconn_t;

#define NETCONN_AGAIN (-2)

/* Events for fd on base calling on_read / on_write with arg; no TLS yet (netconn_tls_accept).
 * 0, or -1 (out of memory: nothing is left to free, fd is not closed). */
int netconn_init(netconn_t *nc, struct event_base *base, evutil_socket_t fd,
                 event_callback_fn on_read, event_callback_fn on_write, void *arg);
/* Makes nc the server side of a TLS connection whose handshake is still to come
 * (netconn_handshake). 0, or -1 with the reason in err. */
int netconn_tls_accept(netconn_t *nc, SSL_CTX *ctx, char *err, size_t errlen);
/* Takes over ssl, a session on nc->fd whose handshake is done (handed on by another server). */
void netconn_tls_adopt(netconn_t *nc, SSL *ssl);

/* Advances the TLS handshake: 1 done, 0 waiting for the socket (the right event is armed),
 * -1 failed (the reason is in err). */
int netconn_handshake(netconn_t *nc, char *err, size_t errlen);

/* Bytes read (> 0), 0 at the end of the stream, NETCONN_AGAIN, or -1 (failed). */
ssize_t netconn_read(netconn_t *nc, void *p, size_t n);
/* Bytes written (> 0), NETCONN_AGAIN, or -1 (failed). A TLS write that returned NETCONN_AGAIN
 * is retried with the same bytes first (they may have moved: the session accepts that). */
ssize_t netconn_write(netconn_t *nc, const void *p, size_t n);
/* Whether a TLS session holds bytes already decrypted (no read event comes for them). */
bool netconn_pending(const netconn_t *nc);

/* Arms or disarms the read / write event; only a change reaches epoll. */
void netconn_want_read(netconn_t *nc, bool on);
void netconn_want_write(netconn_t *nc, bool on);

struct sockaddr;
/* The client's address as text: ip (at least INET6_ADDRSTRLEN bytes) and "ip:port" in peer;
 * "?" for a family other than IPv4 and IPv6. */
void netconn_peer_name(const struct sockaddr *sa, char *ip, size_t iplen, char *peer,
                       size_t peerlen);

/* Frees the events, the TLS session (a close_notify first when polite) and closes the socket. */
void netconn_close(netconn_t *nc, bool polite);
/* Frees the events only; the socket and the session are the caller's (it hands them on). */
void netconn_release(netconn_t *nc);

#endif
