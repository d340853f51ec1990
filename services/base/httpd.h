/* A small HTTP server: every daemon's /metrics, /healthz and /readyz, and the base the admin
 * REST API is built on. HTTP/1.1 (keep-alive, pipelining) and HTTP/2 on the same port: h2c
 * with prior knowledge (a connection that opens with the HTTP/2 preface) and, on a TLS
 * listener, ALPN "h2" (the SSL_CTX offers "h2,http/1.1"; a client that negotiates nothing
 * speaks HTTP/1.1). Handlers see one request API for both.
 *
 * Built-in routes:
 *   GET /metrics  the registry given by httpd_set_metrics() (text format 0.0.4)
 *   GET /healthz  200 "ok" while the event loop runs
 *   GET /readyz   200 "ready" after httpd_set_ready(h, true); 503 with the reason text before
 * Extra routes (httpd_route): exact paths, or prefixes written with a trailing '*'
 * ("/api/v1/feeds*" matches /api/v1/feeds and /api/v1/feeds/f1); the longest pattern wins.
 * A path that matches no route: 404 with a JSON body. A path that matches only for other
 * methods: 405 with an Allow header. A body past the limit: 413. Every error the server
 * itself produces (413, 400, 431, 501) has the JSON body of httpd_set_error_format.
 *
 * Bounded, and guarded against slow clients (httpd_conn.c; docs/observability.md):
 *   - a request's header (and a TLS handshake) must be read whole within header_timeout_s
 *     (10 s) of its first byte, and its body within header_timeout_s more plus 1 s per 64 KiB of
 * Content-Length; a connection that trickles bytes is closed at that deadline, however often bytes
 * come (request_timeout_s restarts with every byte read or written: it bounds idle keep-alive
 * connections and slow readers only);
 *   - at most max_per_client connections from one client address, and max_connections in
 *     all. A new connection over either cap evicts a connection (of that address, or of any)
 *     without a request in service: the one part-way through a request longest, else the one
 *     idle longest. So a client that holds connections open with partial requests loses the
 *     oldest of them to every new one and cannot lock others out;
 *   - when nothing can be evicted (every connection is being served), probe_reserve more
 *     connections are admitted that may only ask GET /healthz or /readyz (anything else is
 *     503), must send the request within 2 s, and are closed after the reply: liveness and
 *     readiness still answer when the caps are full. Beyond that, new connections are closed.
 *   - max_header_bytes, max_body_bytes.
 * An HTTP/2 connection is counted and capped by the HTTP/2 side (h2server.c: at most
 * max_connections of them, closed after request_timeout_s without a byte, bodies bounded by
 * max_body_bytes and flow control); the guard above covers HTTP/1.1, which is what a
 * slowloris of partial headers speaks.
 *
 * Threading: an httpd_t belongs to the thread running its event_base. httpd_set_ready and
 * httpd_set_ready_reason may be called from any thread. httpd_thread_start() runs a server on
 * a thread of its own for daemons whose main loop is a Kafka poll loop. */
#ifndef NDD_HTTPD_H
#define NDD_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <openssl/ssl.h>

#include "buf.h"
#include "metrics.h"

struct event_base;

typedef struct httpd httpd_t;
typedef struct httpd_req httpd_req_t;
typedef struct httpd_thread httpd_thread_t;

typedef void (*httpd_handler_fn)(httpd_req_t *req, void *arg);

typedef struct httpd_options {
    const char *bind_addr;   /* "127.0.0.1", "0.0.0.0", "::"; NULL = "127.0.0.1" */
    uint16_t port;           /* 0 = ephemeral (see httpd_port) */
    SSL_CTX *ssl_ctx;        /* non-NULL: this listener speaks TLS (the caller keeps the
                                context alive while the server exists); NULL = plain */
    size_t max_connections;  /* 0 = 256 */
    int request_timeout_s;   /* 0 = 30 */
    size_t max_header_bytes; /* 0 = 16 KiB */
    size_t max_body_bytes;   /* 0 = 1 MiB */
    int header_timeout_s;    /* 0 = 10: the whole header, from its first byte */
    size_t max_per_client;   /* 0 = max_connections / 4, at least 16 (at most max_connections) */
    size_t probe_reserve;    /* 0 = 8 probe-only connections past the caps */
    bool no_builtin_routes;  /* no /metrics, /healthz, /readyz: a listener of one protocol
                                (ndd-ingress's VES) whose paths are all its handler's */
} httpd_options_t;

/* Formats the JSON body of an error the server produces itself (404, 405, 413, 431, ...):
 * kind is a short name of the status ("not found", "body too large"), message the detail.
 * The default writes {"error":{"status":N,"message":"..."}}; the admin writes its own Error
 * shape (docs/api.md). Appends to out. */
typedef void (*httpd_error_fn)(int status, const char *kind, const char *message, buf_t *out,
                               void *arg);

/* Plain HTTP on bind_addr:port with default limits. NULL with err on failure (bind error
 * names the address and port). */
httpd_t *httpd_new(struct event_base *base, const char *bind_addr, uint16_t port, char *err,
                   size_t errlen);
httpd_t *httpd_new_ex(struct event_base *base, const httpd_options_t *opts, char *err,
                      size_t errlen);
void httpd_free(httpd_t *h);
uint16_t httpd_port(const httpd_t *h);
/* HTTP/1.1 connections open now (any thread); HTTP/2 ones are the HTTP/2 side's. */
size_t httpd_connections(const httpd_t *h);

void httpd_set_metrics(httpd_t *h, metrics_registry_t *reg);
/* Before the first request (from the setup callback on a server thread). */
void httpd_set_error_format(httpd_t *h, httpd_error_fn fn, void *arg);
/* Thread-safe. Not ready by default; the reason is served in the 503 body. */
void httpd_set_ready(httpd_t *h, bool ready);
/* Lines that /readyz's body carries after its first ("ready" or the reason), ready or not:
 * ndd's readiness of each role. Cut at 2 KiB; NULL or "" for none. Any thread. */
void httpd_set_ready_detail(httpd_t *h, const char *detail);
void httpd_set_ready_reason(httpd_t *h, const char *reason);

/* method: "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS" or "*" (any).
 * A route registered later for the same method and pattern replaces the earlier one.
 * 0, or -1 on a bad method/pattern or OOM. */
int httpd_route(httpd_t *h, const char *method, const char *pattern, httpd_handler_fn fn,
                void *arg);

/* ---- in a handler ---- */
const char *httpd_req_method(const httpd_req_t *req); /* "GET", ... */
/* The decoded path without the query ("/api/v1/feeds/f1"). */
const char *httpd_req_path(const httpd_req_t *req);
/* The value of parameter name in the query string q ("a=1&b=x%20y", httpd_req_query_string;
 * NULL: none) percent-decoded ('+' a space) into out, cut to outlen - 1 bytes: 1 when name is
 * there ("" for a bare "name" or "name="), 0 when not. Names are compared decoded. */
int httpd_query_get(const char *q, const char *name, char *out, size_t outlen);
/* A request header (case-insensitive), NULL when absent. */
const char *httpd_req_header(const httpd_req_t *req, const char *name);
/* The request body (already bounded by max_body_bytes), NUL-terminated for convenience;
 * len may be NULL. Never NULL: an empty body is "". */
const char *httpd_req_body(httpd_req_t *req, size_t *len);
/* The peer address as "ip:port" (for logs and audit). */
const char *httpd_req_peer(const httpd_req_t *req);
/* The request target as sent, path and query still encoded ("/api/v1/feeds?limit=5"). */
const char *httpd_req_uri(const httpd_req_t *req);
/* The raw query string after '?', NULL without one. */
const char *httpd_req_query_string(const httpd_req_t *req);

/* Memory that belongs to the request's connection, HTTPD_CONN_MEMO_BYTES of it: zero when the
 * connection opens, kept across its requests, wiped (OPENSSL_cleanse) when it closes. A
 * handler keeps there what it worked out about the connection's client, so that the next
 * request of a keep-alive client need not work it out again (ndd-admin: the token it last
 * verified). For HTTP/2 it is the connection's, shared by its streams. */
#define HTTPD_CONN_MEMO_BYTES 256
void *httpd_req_conn_memo(httpd_req_t *req);

/* The TLS session of an HTTP/1.1 request's connection (to look at the client's certificate);
 * NULL on a plain connection and for HTTP/2. */
SSL *httpd_req_ssl(const httpd_req_t *req);

/* Adds a response header before a reply (e.g. Location, WWW-Authenticate). */
void httpd_resp_header(httpd_req_t *req, const char *name, const char *value);
/* Each request gets exactly one reply; a handler that returns without replying gets 500. */
void httpd_reply(httpd_req_t *req, int status, const char *content_type, const void *body,
                 size_t len);
void httpd_reply_text(httpd_req_t *req, int status, const char *text);
void httpd_reply_json(httpd_req_t *req, int status, const char *json_text);
/* Serialises and releases json (the reference is stolen). */
void httpd_reply_jansson(httpd_req_t *req, int status, json_t *json);
/* The error body of httpd_set_error_format (by default
 * {"error":{"status":<status>,"message":"<formatted>"}}). */
void httpd_reply_error(httpd_req_t *req, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- answering later ----
 * A handler whose answer depends on something that completes after it returns (ndd-ingress:
 * Kafka's delivery report) takes the request's answer with httpd_req_later and gives it with
 * httpd_later_reply, exactly once, from the server's thread: during the handler (then it is an
 * ordinary reply) or any time after. What the request pointed to (path, headers, body) is
 * gone when the handler returns: the handler copies what it needs.
 * One request per HTTP/1.1 connection waits for its answer: until it is given the connection
 * is not read (pipelined requests stay in the socket, TCP pushes back on the client), is
 * neither evicted nor closed by request_timeout_s or a deadline (it is in service). A client
 * that goes first leaves the handle valid: httpd_later_reply then only frees it. HTTP/2 streams
 * are answered through the HTTP/2 side (each stream its own, bounded by its stream limit). */
typedef struct httpd_later httpd_later_t;
/* NULL when out of memory (the handler then replies at once). */
httpd_later_t *httpd_req_later(httpd_req_t *req);
/* A response header of the later answer, before httpd_later_reply (256 bytes of them). */
void httpd_later_header(httpd_later_t *l, const char *name, const char *value);
/* Gives the answer and frees l. */
void httpd_later_reply(httpd_later_t *l, int status, const char *content_type, const void *body,
                       size_t len);

/* ---- a server on its own thread ---- */
/* Creates an event_base and the server on it, runs the loop on a new thread. The returned
 * object's server (httpd_thread_server) may be configured (routes, metrics) only before
 * the first request can matter; routes should be added via httpd_thread_start's setup
 * callback, which runs on the new thread before serving. NULL with err on failure. */
typedef int (*httpd_setup_fn)(httpd_t *h, void *arg);
httpd_thread_t *httpd_thread_start(const httpd_options_t *opts, httpd_setup_fn setup,
                                   void *setup_arg, char *err, size_t errlen);
httpd_t *httpd_thread_server(httpd_thread_t *t);
/* Stops the loop, joins the thread, frees server and base. */
void httpd_thread_stop(httpd_thread_t *t);

#endif
