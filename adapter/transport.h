/* The one interface every egress transport implements (HTTP/2, TCP frames, TLS frames, files,
 * Kafka). A transport is one file, adapter/transport_<name>.c, holding its descriptor
 * (services/copy/transport_desc.h: name, URL schemes, options, capabilities) whose .ops are the
 * callbacks below, and one row in services/copy/transport_table.h (docs/contributing.md).
 *
 * A transport is ONE connection to ONE endpoint, driven by the event_base of the feed thread
 * that owns it (no locks: every call and every callback happens on that thread). It takes an
 * encoded payload (an HTTP request body, or a complete DATA frame) with an opaque cookie and
 * later reports exactly one of ack(cookie) or fail(cookie) for it. The payload bytes are NOT
 * copied by send(): they must stay valid and unchanged until that report (the feed keeps the
 * encoded batch for retries anyway).
 *
 * Callbacks may run from inside transport_send()/transport_disconnect() only for the
 * documented cases (disconnect fails the in-flight requests synchronously); otherwise they run
 * from the event loop. After transport_destroy() no callback runs. */
#ifndef NDD_ADAPTER_TRANSPORT_H
#define NDD_ADAPTER_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <jansson.h>
#include <openssl/ssl.h>

#include "metrics.h"
#include "encoding.h"
#include "transport_table.h" /* the built-in descriptors */
#include "transport_url.h"   /* transport_desc_t, transport_url_t, transport_url_parse */

/* ---- types ---- */

typedef struct transport_header {
    const char *name; /* lowercase HTTP field name */
    const char *value;
} transport_header_t;

/* Where one record of a sent payload came from (transport_config_t.positions). */
typedef struct transport_pos {
    int32_t partition;
    int64_t offset;
} transport_pos_t;

/* The feed behind a kafka transport that produces exactly once (docs/kafka-feed.md,
 * "Guarantees"): the transport commits the feed's consumed offsets in its transactions, so
 * the feed stores none itself while mode() says exactly-once. Every call on the feed's
 * thread; NULL for the other transports and where exactly-once is off. */
typedef struct transport transport_t;

typedef struct transport_source {
    void *ctx;
    const char *txn_id; /* transactional.id: stable per feed and adapter instance */
    struct rd_kafka_s *(*consumer)(void *ctx); /* the feed's consumer (its group metadata) */
    /* The next offset of every assigned source partition below which every record is done
     * (acked, filtered, dead-lettered); a new list, NULL when there is none. */
    struct rd_kafka_topic_partition_list_s *(*offsets)(void *ctx);
    /* What was produced since the last commit is void (the transaction aborted, the
     * producer was fenced): the feed drops every delivery it holds and reads its partitions
     * again from their committed offsets. The transport has forgotten its in-flight sends. */
    void (*rewind)(void *ctx, const char *reason);
    /* The mode in effect: true, the transport commits the offsets; false (the cluster cannot
     * do transactions), the feed stores them after each ack (at-least-once). */
    void (*mode)(void *ctx, bool exactly_once);
    /* Set by the transport: called by the feed in its revoke callback, before its
     * partitions go (the open transaction is aborted and the feed rewound). */
    void (*revoked)(transport_t *t);
    transport_t *transport;
} transport_source_t;

/* Everything a transport needs. Strings are borrowed: they must outlive the transport. */
typedef struct transport_config {
    const transport_desc_t *kind; /* the row of the transport table (transport_desc.h) */
    const char *feed;             /* for log lines */
    const char *endpoint;         /* the URL as configured, for log lines and reasons */
    const char *host;             /* connect target; also SNI / certificate name for TLS */
    const char *port;
    bool use_tls;     /* https:// or tls:// */
    SSL_CTX *ssl_ctx; /* client context (verify on by default), required when use_tls */
    const char *sni;  /* overrides host for SNI and certificate name; NULL: host */

    unsigned max_in_flight; /* requests/frames awaiting their ack on this connection (cap) */
    uint32_t timeout_ms;    /* per request (h2) / oldest unacked frame (tcp, tls) */
    uint32_t connect_timeout_ms;
    size_t out_buf_max; /* bytes queued for the socket before the transport stops pulling */

    /* HTTP/2 */
    const char *path;         /* :path */
    const char *method;       /* :method, e.g. POST */
    const char *authority;    /* :authority; NULL: host:port */
    const char *content_type; /* from the encoding */
    /* The feed's encoding: a transport that writes batches its own way (a pcap stream, files,
     * one record per frame record) asks its form (encoding_t.form), never its name. NULL:
     * the batches are sent as they are. */
    const encoding_t *encoding;
    size_t n_headers;
    transport_header_t headers[TRANSPORT_MAX_HEADERS];

    /* TCP / TLS frames: ack when the frame left the process instead of waiting for the
     * endpoint's ACK frame (weaker: a crash of the endpoint loses what it had buffered). */
    bool fire_and_forget;

    /* The transport's own settings (feed_config_t.transport_options); NULL: none. */
    const json_t *options;
    /* Source positions of the records of a send()'s cookie, into out[0..max); returns how
     * many (the file transport's manifest). NULL: unknown. */
    size_t (*positions)(void *cookie, transport_pos_t *out, size_t max);
    /* The i-th source record of a send()'s cookie (its key and headers), NULL past the last:
     * a transport that hands on a record as it is (kafka with "passthrough"). NULL: none. */
    const struct rd_kafka_message_s *(*record)(void *cookie, size_t i);
    /* The feed's registry for a transport's own families (label feed: the file transport's);
     * NULL: metrics_default_registry(). */
    metrics_registry_t *metrics;
    /* kafka: the feed whose offsets go into the transactions (exactly once); NULL: none. */
    transport_source_t *source;
} transport_config_t;

/* Why a request failed. */
typedef struct transport_failure {
    int status;              /* HTTP status or NACK status; 0 for a transport-level failure */
    bool retryable;          /* 5xx, 408, 429, timeouts, connection loss, refused streams */
    uint32_t retry_after_ms; /* from Retry-After (seconds) on 429/503; 0 when absent */
    const char *reason;      /* one line, e.g. "HTTP 503", "timeout after 5000 ms" */
    const uint8_t *body;     /* excerpt of the response body (HTTP), may be NULL */
    size_t body_len;
} transport_failure_t;

/* Owner callbacks. */
typedef struct transport_events {
    void (*on_ack)(void *owner, void *cookie, int status);
    void (*on_fail)(void *owner, void *cookie, const transport_failure_t *f);
    /* Connected and ready for send(). */
    void (*on_up)(void *owner);
    /* The connection is gone (or could not be made); every in-flight request has been
     * failed (retryable) before this is called. */
    void (*on_down)(void *owner, const char *reason);
    /* More capacity became available (a write buffer drained, streams completed). */
    void (*on_writable)(void *owner);
} transport_events_t;

typedef struct transport_ops {
    const char *name;
    transport_t *(*create)(struct event_base *base, const transport_config_t *cfg,
                           const transport_events_t *ev, void *owner, char *err, size_t errlen);
    /* Starts connecting; the result arrives as on_up or on_down. */
    int (*connect)(transport_t *t);
    /* 0: accepted (exactly one ack/fail later). -1: not accepted now (not up, full); nothing
     * is reported for it. */
    int (*send)(transport_t *t, const uint8_t *payload, size_t len, void *cookie);
    /* How many send() calls would be accepted now (0 when not up). */
    unsigned (*capacity)(const transport_t *t);
    unsigned (*in_flight)(const transport_t *t);
    bool (*is_up)(const transport_t *t);
    /* Closes the connection: fails every in-flight request (retryable, synchronously), then
     * calls on_down. No-op when not connected. */
    void (*disconnect)(transport_t *t, const char *reason);
    /* Frees everything without any callback; in-flight cookies are simply forgotten. */
    void (*destroy)(transport_t *t);
    /* Optional: removes a stopped feed's series of the transport's own metric families (the
     * adapter calls it once the feed's transports are gone). NULL: it has none. */
    void (*metrics_remove)(metrics_registry_t *r, const char *feed);
} transport_ops_t;

/* Every implementation starts its struct with this. */
struct transport {
    const transport_ops_t *ops;
};

/* ---- functions ---- */

/* The implementation of a row of the transport table (its descriptor's ops); NULL when it has
 * none (a row described but not implemented: the feed is refused with the reason). */
const transport_ops_t *transport_ops_for(const transport_desc_t *d);

/* ---- what the stream transports (HTTP/2, TCP/TLS frames) share ---- */

typedef enum transport_stream_state {
    STREAM_DOWN = 0,
    STREAM_CONNECTING,
    STREAM_UP,
    STREAM_CLOSING /* a teardown is scheduled on the loop */
} transport_stream_state_t;

typedef struct transport_stream transport_stream_t;

/* One connection's life, the same for every stream transport: its configuration with the
 * defaults filled in, the socket, the state, and the teardown deferred to the loop when it is
 * asked for from where it must not run. A stream transport's struct starts with it. */
struct transport_stream {
    transport_t base;
    struct event_base *evb;
    transport_config_t cfg;
    transport_events_t ev;
    void *owner;
    struct bufferevent *bev;
    transport_stream_state_t state;
    /* Inside a callback that must not be re-entered (the transport reporting to its owner,
     * or inside nghttp2): a disconnect asked for now is deferred to the loop. */
    bool busy;
    struct event *close_ev;
    char close_reason[320];
    /* The transport's part of a teardown, once the socket is freed: fail (retryable) every
     * request not yet reported and forget its connection state. on_down follows. */
    void (*drop)(transport_stream_t *s, const char *reason);
    bufferevent_data_cb readcb, writecb;
    bufferevent_event_cb eventcb;
};

/* Allocates a stream transport's struct of `size` bytes (zeroed) and fills its stream part:
 * the configuration with its defaults (max_in_flight 100, timeout 5000 ms, out_buf_max
 * 1 MiB), the callbacks and the deferred-teardown event. NULL with the reason in err (TLS
 * without a context, out of memory). */
transport_stream_t *transport_stream_new(size_t size, const transport_ops_t *ops,
                                         struct event_base *evb, const transport_config_t *cfg,
                                         const transport_events_t *ev, void *owner, char *err,
                                         size_t errlen);
/* Starts connecting (when down); a failure to start is reported through the loop as any
 * other connect failure. Always 0 (transport_ops_t.connect). */
int transport_stream_connect(transport_stream_t *s);
/* Tears the connection down on the loop's next turn (once; not when already down). */
void transport_stream_schedule_close(transport_stream_t *s, const char *reason);
/* Tears it down now: frees the socket, then drop() fails what is in flight, then on_down. */
void transport_stream_close(transport_stream_t *s, const char *reason);
/* transport_ops_t.disconnect: deferred while busy, else at once. */
void transport_stream_disconnect(transport_t *base, const char *reason);
/* A bufferevent event other than CONNECTED: the connection is gone, with the reason. */
void transport_stream_lost(transport_stream_t *s, short what);
/* transport_ops_t.is_up. */
bool transport_stream_is_up(const transport_t *base);
/* Frees the socket, the event and the struct, without any callback (the transport frees its
 * own members first). */
void transport_stream_free(transport_stream_t *s);

/* Whether an HTTP status is worth retrying (5xx, 408, 429). */
bool transport_status_retryable(int status);
/* Retry-After header value (delta-seconds only; HTTP-dates are treated as absent) -> ms. */
uint32_t transport_parse_retry_after(const char *v, size_t len);

static inline int transport_connect(transport_t *t)
{
    return t->ops->connect(t);
}
static inline int transport_send(transport_t *t, const uint8_t *p, size_t n, void *cookie)
{
    return t->ops->send(t, p, n, cookie);
}
static inline unsigned transport_capacity(const transport_t *t)
{
    return t->ops->capacity(t);
}
static inline unsigned transport_in_flight(const transport_t *t)
{
    return t->ops->in_flight(t);
}
static inline bool transport_is_up(const transport_t *t)
{
    return t->ops->is_up(t);
}
static inline void transport_disconnect(transport_t *t, const char *reason)
{
    t->ops->disconnect(t, reason);
}
static inline void transport_destroy(transport_t *t)
{
    if (t)
        t->ops->destroy(t);
}

#endif
