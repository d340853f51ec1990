/* An HTTP/2 server on nghttp2 and libevent bufferevents: h2c with prior knowledge (what h2load
 * and most NF clients speak) and TLS with ALPN "h2" (mTLS when the SSL_CTX asks for client
 * certificates). Written for ndd-ingress and meant for the admin API too: it knows nothing of
 * what a request means, it hands each complete request (headers + body) to one callback and
 * sends the response the callback gives, now or later (a deferred response: ndd-ingress
 * answers only after Kafka acknowledged the record).
 *
 * Memory of one connection is bounded, whatever the client does:
 *   - at most max_streams requests at once (SETTINGS_MAX_CONCURRENT_STREAMS; a client that
 *     opens more gets RST_STREAM REFUSED_STREAM from nghttp2),
 *   - each request body at most max_body bytes (beyond it: 413 and the stream is reset), and
 *     the stream window is max_body too, so a flooding client is stopped by flow control,
 *   - pending output at most out_max bytes: nghttp2_session_mem_send is pulled only while the
 *     socket's output buffer is under that, and while it is over it the connection is not
 *     read either, so a client that stops reading cannot make the server queue responses,
 *     SETTINGS or PING acknowledgements without bound.
 * So a connection holds at most max_streams * (max_body + header bytes) + out_max.
 *
 * Threading: a server belongs to the thread running its event_base. */
#ifndef NDD_H2SERVER_H
#define NDD_H2SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

struct event_base;

typedef struct h2server h2server_t;
typedef struct h2server_stream h2server_stream_t;

#define H2SERVER_MAX_HEADERS 80 /* request header fields kept (pseudo-headers included) */

typedef struct h2server_field {
    const char *name; /* lower case, as HTTP/2 carries it */
    size_t name_len;
    const char *value;
    size_t value_len;
} h2server_field_t;

/* One complete request. Everything points into the stream and stays valid until the
 * response is sent (h2server_respond) or the stream is released. */
typedef struct h2server_request {
    const char *method; /* NUL-terminated */
    const char *path;   /* NUL-terminated, with the query */
    size_t n_fields;    /* regular header fields (no pseudo-headers) */
    h2server_field_t fields[H2SERVER_MAX_HEADERS];
    const uint8_t *body;
    size_t body_len;
    const char *peer;     /* "ip:port" */
    const SSL *ssl;       /* the TLS session (client certificate), NULL for h2c */
    bool too_many_fields; /* more fields than H2SERVER_MAX_HEADERS were sent (dropped) */
} h2server_request_t;

/* Called once per complete request. The callback (now or later, from the server's thread)
 * calls h2server_respond exactly once for s. */
typedef void (*h2server_request_fn)(void *arg, h2server_stream_t *s, const h2server_request_t *req);

typedef struct h2server_options {
    const char *bind_addr;  /* NULL: "127.0.0.1" */
    uint16_t port;          /* 0: ephemeral (h2server_port) */
    SSL_CTX *ssl_ctx;       /* non-NULL: TLS; ALPN must select "h2" (the caller's context
                               offers it, tls_config_t.alpn = "h2") */
    uint32_t max_streams;   /* 0: 100 */
    size_t max_body;        /* 0: 1 MiB */
    size_t out_max;         /* 0: 256 KiB */
    size_t max_connections; /* 0: 1024; more wait in the kernel's backlog */
    int idle_timeout_s;     /* 0: 60; a connection with nothing to read this long is closed */
    h2server_request_fn on_request;
    void *arg;
    /* Optional: the answer to a request whose body exceeds max_body, chosen by its path, for
     * a protocol whose clients expect an error body of their own (VES: ONAP's SVC2000 JSON).
     * Sets *content_type, *body and *len (static, or arg's until the next call); NULL: a
     * text/plain 413. */
    void (*too_large)(void *arg, const char *path, const char **content_type, const char **body,
                      size_t *len);
} h2server_options_t;

h2server_t *h2server_new(struct event_base *base, const h2server_options_t *opts, char *err,
                         size_t errlen);
/* A server without a listener of its own: its connections come from h2server_adopt (the
 * HTTP server, httpd.c, serves HTTP/1.1 and HTTP/2 on one port and hands over the HTTP/2
 * connections). opts->bind_addr, port and ssl_ctx are not used. */
h2server_t *h2server_new_detached(struct event_base *base, const h2server_options_t *opts,
                                  char *err, size_t errlen);
/* Takes over an accepted, non-blocking connection: ssl is NULL (h2c) or a server session on
 * fd whose handshake is done and selected ALPN "h2"; data/len are the bytes already read from
 * it (the start of the client's connection preface; nothing after a TLS handshake). fd and
 * ssl belong to the server from here, on failure too. 0, or -1 when refused (max_connections
 * reached, out of memory, or the bytes are not HTTP/2). */
int h2server_adopt(h2server_t *s, int fd, SSL *ssl, const char *peer, const void *data, size_t len);
/* Closes every connection; pending streams are dropped (a deferred response still to come
 * must not be sent afterwards: stop the producers of responses first). */
void h2server_free(h2server_t *s);
uint16_t h2server_port(const h2server_t *s);
/* Bytes the server holds now: request bodies being received or awaiting their response plus
 * pending output (for the memory-bound test and a gauge). */
size_t h2server_buffered_bytes(const h2server_t *s);

typedef struct h2server_header {
    const char *name;
    const char *value;
} h2server_header_t;

/* Sends the response of s (the body is copied). May be called after the client reset or
 * closed the stream (or the connection): then it only releases s. 0, or -1 when the
 * response could not be queued (s is released either way). */
int h2server_respond(h2server_stream_t *s, int status, const h2server_header_t *hdrs, size_t n_hdrs,
                     const void *body, size_t body_len);

/* Memory that belongs to the connection of s, H2SERVER_CONN_MEMO_BYTES of it: zero when the
 * connection opens, kept across its streams, wiped (OPENSSL_cleanse) when it closes; NULL once
 * the connection is gone. For what the owner worked out about the connection's client (the
 * HTTP server's httpd_req_conn_memo: ndd-admin's last verified token), so a client's next
 * request need not work it out again. Only from the server's thread. */
#define H2SERVER_CONN_MEMO_BYTES 256
void *h2server_stream_memo(h2server_stream_t *s);

#endif
