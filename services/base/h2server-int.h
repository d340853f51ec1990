/* h2server's internals, shared by its two files: h2server.c (connections: socket I/O,
 * the nghttp2 session, the listener) and h2server_stream.c (streams: the nghttp2 callbacks
 * that collect a request, the checks, the hand-over to the owner and the response). */
#ifndef NDD_H2SERVER_INT_H
#define NDD_H2SERVER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <nghttp2/nghttp2.h>

#include "h2check.h"
#include "h2server.h"
#include "mempool.h"
#include "netconn.h"

typedef struct h2conn h2conn_t;

struct h2server_stream {
    h2conn_t *conn;  /* NULL once the connection is gone */
    h2server_t *srv; /* for the pool: set while the server lives */
    int32_t id;
    bool closed;    /* nghttp2 closed the stream (or the connection went away) */
    bool handed;    /* given to on_request: the owner must respond */
    bool responded; /* a response was submitted (or 413 by the server itself) */
    bool too_big;
    bool malformed;            /* answered 400: nothing more of it is looked at */
    const char *malformed_why; /* which check it failed (a constant string) */
    h2check_t check;
    char *hdr; /* "name\0value\0" pairs */
    size_t hdr_len, hdr_cap;
    size_t n_fields;             /* regular fields in hdr (their offsets: field_at) */
    bool too_many_fields;        /* more than H2SERVER_MAX_HEADERS came (not kept) */
    uint32_t method_at, path_at; /* 1 + the offset of :method's and :path's value, 0: none */
    uint8_t *body;
    size_t body_len, body_cap;
    uint8_t *resp; /* response body being sent (its buffer kept in the pool when small) */
    size_t resp_len, resp_off, resp_cap;
    h2server_stream_t *next, *prev; /* the connection's streams (or the server's pool) */
    h2server_request_t req;
    /* Where each regular field's name starts in hdr (hdr may move while fields come); after
     * req so that stream_new's clearing does not cover it: only the first n_fields count. */
    uint32_t field_at[H2SERVER_MAX_HEADERS];
};

struct h2conn {
    h2server_t *srv;
    netconn_t nc;
    nghttp2_session *sess;
    char peer[64];
    bool in_ng;       /* inside mem_recv/mem_send */
    bool closing;     /* flush the output, then free */
    bool handshaking; /* TLS handshake under way: no session yet */
    bool flush_pending;
    struct event *flush_ev; /* responses given outside a read: one flush per loop turn */
    struct event *timer;    /* the idle limit, looked at lazily (last_io_ms) */
    int64_t last_io_ms;     /* the last read or write that moved bytes */
    /* Frames the socket did not take at once, sent before any newer frame. Empty in the
     * common case: a flush's frames are written straight from the server's gather buffer. */
    struct evbuffer *out;
    h2server_stream_t *streams;
    h2conn_t *next, *prev;
    _Alignas(max_align_t) unsigned char memo[H2SERVER_CONN_MEMO_BYTES]; /* h2server_stream_memo */
};

#define GATHER_BYTES 65536
#define READ_BYTES 16384 /* a TLS record's payload at most: one SSL_read fills it */
#define READS_PER_TURN 16

struct h2server {
    struct event_base *base;
    struct evconnlistener *lst;
    h2server_options_t o;
    uint16_t port;
    size_t n_conns;
    size_t buffered; /* bodies held */
    h2conn_t *conns;
    /* Released streams kept for the next requests (their header buffer too): no calloc of
     * a stream and its request record per request once warm. At most POOL_MAX, each header
     * buffer at most POOL_HDR_MAX: a burst's streams are not all kept, so after it the idle
     * server holds at most 256 * (~2.7 KB stream + 4 KiB headers), under 2 MiB, whatever the
     * number of connections was; 256 is more than one connection's default max_streams (100),
     * so a busy connection or a few draw from the pool without reaching malloc. */
    h2server_stream_t *pool;
    size_t n_pool;
    /* nghttp2's own allocations (a stream, its queued frames, its decoded fields per
     * request), for every session of this server: free lists instead of malloc, at most
     * MEM_CACHED bytes kept. */
    mempool_t *mem;
    nghttp2_mem ngmem;
    /* Where one flush gathers nghttp2's frames to write them in one send(): a connection's
     * flush never runs inside another's (one thread, nghttp2 callbacks never flush), so one
     * buffer serves every connection. */
    uint8_t gather[GATHER_BYTES];
};

#define POOL_MAX 256
#define MEM_CACHED (1u << 20)
#define POOL_HDR_MAX 4096
#define POOL_RESP_MAX 4096

/* h2server_stream.c */

/* Gives a stream back (to the server's pool when it is small enough, else to free()) and
 * unlinks it from its connection. */
void h2stream_release(h2server_stream_t *st);

/* The callbacks a session needs to collect requests into streams (the connection is the
 * session's user data). */
void h2stream_callbacks(nghttp2_session_callbacks *cb);

#endif
