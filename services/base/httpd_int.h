/* Private to services/base/httpd*.c: the server object and the connection guard
 * (httpd_guard.c) that httpd.c calls. Not for use outside these files. */
#ifndef NDD_HTTPD_INT_H
#define NDD_HTTPD_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <event2/event.h>
#include <event2/http.h>

#include "httpd.h"

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
    struct evhttp *http;
    struct evhttp_bound_socket *sock;
    uint16_t port;
    SSL_CTX *ssl_ctx;
    size_t max_conn;
    _Atomic size_t nconn; /* written on the server thread, read by httpd_connections() */
    bool listener_paused;
    bool freeing;
    metrics_registry_t *reg;
    buf_t scrape;
    httpd_route_t *routes;
    size_t nroutes;
    pthread_mutex_t mu; /* ready + reason: set from other threads */
    bool ready;
    char reason[256];
    /* the guard (httpd_guard.c) */
    int header_timeout_s;
    size_t max_body;
    size_t max_per_client;
    size_t probe_reserve;
    size_t nreserve;
    httpd_conn_t *conns; /* every connection, newest first */
    httpd_conn_t **hash; /* by bufferevent */
    size_t hash_mask;
    int64_t warned_ms;
    httpd_error_fn errfn;
    void *errarg;
};

/* evhttp_set_bevcb callback: the connection's bufferevent, watched by the guard. */
struct bufferevent *httpd_guard_bev(struct event_base *base, void *arg);
/* A request was read whole and is about to be handled: its connection is in service (not
 * evicted, no deadline) until the reply is sent. Returns true when the connection was
 * admitted from the probe reserve (only /healthz and /readyz, then close). */
bool httpd_guard_request(httpd_t *h, struct evhttp_request *ev);
int httpd_guard_init(httpd_t *h);
void httpd_guard_free(httpd_t *h);
/* The error body in the server's format (httpd_set_error_format). */
void httpd_error_body(httpd_t *h, int status, const char *message, buf_t *out);

#endif
