/* Private to services/base/httpd*.c: the server object, a connection, a request, and the
 * calls between httpd.c (API, routing, replies, life cycle), httpd_conn.c (HTTP/1.1 on a
 * socket: reading, parsing, writing, and the connection guard's deadlines), httpd_admit.c
 * (the guard's admission at accept) and httpd_h2.c (HTTP/2 on the same port, by h2server.c).
 * Not for use outside these files. */
#ifndef NDD_HTTPD_INT_H
#define NDD_HTTPD_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "h2server.h"
#include "httpd.h"

#define HTTPD_MAX_FIELDS H2SERVER_MAX_HEADERS /* request header fields, both protocols */
#define HTTPD_RESP_HDRS 4096                  /* bytes of handler-added response headers */

typedef struct httpd_route {
    char method[12]; /* "*" = any */
    char *pattern;   /* without the trailing '*' */
    size_t plen;
    bool prefix;
    httpd_handler_fn fn;
    void *arg;
} httpd_route_t;

typedef struct httpd_conn httpd_conn_t;

struct httpd {
    struct event_base *base;
    struct evconnlistener *lst;
    uint16_t port;
    SSL_CTX *ssl_ctx;
    size_t max_conn;
    _Atomic size_t nconn; /* written on the server thread, read by httpd_connections() */
    bool freeing;
    metrics_registry_t *reg;
    buf_t scrape;
    httpd_route_t *routes;
    size_t nroutes;
    pthread_mutex_t mu; /* ready + reason: set from other threads */
    bool ready;
    char reason[256];
    char detail[2048]; /* lines after the first of /readyz (ndd: one per role) */
    /* limits and the guard (httpd_conn.c) */
    int request_timeout_s;
    int header_timeout_s;
    size_t max_header;
    size_t max_body;
    size_t max_per_client;
    size_t probe_reserve;
    size_t nreserve;
    bool no_builtins;
    unsigned evict_pass; /* httpd_conn.c evictable(): which admission's look marked a connection */
    httpd_conn_t *conns; /* every HTTP/1.1 connection, newest first */
    int64_t warned_ms;
    httpd_error_fn errfn;
    void *errarg;
    /* the Date header, rendered once a second */
    time_t date_at;
    char date[40];
    /* input buffers freed since the last malloc_trim (httpd_note_freed) */
    size_t trim_bytes;
    struct event *trim_ev;
    /* HTTP/2 connections, handed over by httpd_conn.c (httpd_h2.c) */
    h2server_t *h2;
};

/* One request of either protocol, on the stack of the code that dispatches it. Everything
 * points into the connection's input (HTTP/1.1) or the stream (HTTP/2). */
struct httpd_req {
    httpd_t *h;
    httpd_conn_t *c;       /* HTTP/1.1 */
    h2server_stream_t *st; /* HTTP/2 */
    const char *method;
    const char *path;  /* decoded */
    const char *uri;   /* the raw request target */
    const char *query; /* the raw query string, NULL without '?' */
    const h2server_field_t *fields;
    size_t nfields;
    const char *body;
    size_t body_len;
    const char *peer;
    bool head;
    bool replied;
    bool close; /* HTTP/1.1: close the connection after this reply */
    int minor;  /* HTTP/1.x */
    char *pathalloc;
    size_t resp_hdrs_len;
    httpd_later_t *later; /* httpd_req_later: the handler answers later */
    /* not cleared per request (httpd_req_init): */
    char resp_hdrs[HTTPD_RESP_HDRS]; /* "Name: value\r\n" ... */
    char pathbuf[256];
};

/* A request answered later (httpd_req_later). While its handler runs it points to the request
 * (req); after, to the connection (c, HTTP/1.1) or the stream (st, HTTP/2) waiting for the
 * answer, with what the reply needs of the request; neither when the client is gone. */
struct httpd_later {
    httpd_req_t *req;
    httpd_conn_t *c;
    h2server_stream_t *st;
    bool head, close;
    int minor;
    size_t hdrs_len;
    char hdrs[256];
};

/* Clears what a new request needs cleared (not its buffers). */
void httpd_req_init(httpd_req_t *req, httpd_t *h);
/* Routes and answers a request (httpd.c). */
void httpd_dispatch(httpd_req_t *req);
/* Sets up req's fields common to both protocols: decodes the path of uri. -1 on OOM. */
int httpd_req_begin(httpd_req_t *req, const char *uri);
void httpd_req_end(httpd_req_t *req);
/* After the handler: a request it answers later becomes the connection's (c) or the
 * stream's (st) waiting answer, returned; NULL when there is none. */
httpd_later_t *httpd_req_later_detach(httpd_req_t *req, httpd_conn_t *c, h2server_stream_t *st);
const char *httpd_reason_phrase(int status);
/* A connection gave back a large buffer of n bytes: once enough of them went, the heap is
 * trimmed (shortly after, so a flood of closing connections costs one trim). */
void httpd_note_freed(httpd_t *h, size_t n);
/* The Date header value of now. */
const char *httpd_date(httpd_t *h);

/* httpd_conn.c */
void *httpd_conn_memo(httpd_conn_t *c);
void httpd_conn_accept(httpd_t *h, evutil_socket_t fd, const struct sockaddr *sa, int salen);
void httpd_conn_close_all(httpd_t *h);
/* The answer req->c waited for (httpd_later_reply): written, sent, and the connection read on. */
void httpd_conn_later_reply(httpd_req_t *req, int status, const char *content_type,
                            const void *body, size_t len);
SSL *httpd_conn_ssl(httpd_conn_t *c);
/* Writes the reply of an HTTP/1.1 request to its connection's output. */
void httpd_conn_reply(httpd_req_t *req, int status, const char *content_type, const void *body,
                      size_t len);

/* httpd_h2.c */
int httpd_h2_init(httpd_t *h, char *err, size_t errlen);
void httpd_h2_free(httpd_t *h);
/* Hands a connection to HTTP/2: fd and ssl are owned by the HTTP/2 side from here. */
int httpd_h2_adopt(httpd_t *h, evutil_socket_t fd, SSL *ssl, const char *peer, const void *data,
                   size_t len);
void httpd_h2_reply(httpd_req_t *req, int status, const char *content_type, const void *body,
                    size_t len);

#endif
