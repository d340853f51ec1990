/* ndd-sink: a third-party endpoint for benchmarks and fault tests (docs/encodings.md,
 * "ndd-sink"). One thread, one libevent loop: HTTP/2 (h2c and TLS+ALPN), the binary frame
 * over TCP and TLS, and the metrics/control HTTP/1.1 port.
 *
 * Everything is bounded: connections (--max-connections), concurrent HTTP/2 streams per
 * connection, a request body (--max-body), a frame payload (--max-body), the sequence window
 * (--seq-window bits), the latency histogram (fixed buckets). */
#ifndef NDD_SINK_H
#define NDD_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/bufferevent.h>
#include <openssl/ssl.h>

#include "buf.h"
#include "metrics.h"

/* Seconds a TLS client has to complete its handshake. */
#define SINK_TLS_HANDSHAKE_S 10
/* Bytes read per wake-up at most (libevent's default is 16 KiB). */
#define SINK_MAX_SINGLE_READ (256 * 1024)

struct event_base;
struct event;
struct evconnlistener;
struct bufferevent;

typedef enum sink_transport {
    SINK_H2 = 0, /* h2c, prior knowledge */
    SINK_H2TLS,  /* HTTP/2 over TLS, ALPN h2 */
    SINK_TCP,    /* binary frames over TCP */
    SINK_TLS,    /* binary frames over TLS */
    SINK__TRANSPORTS
} sink_transport_t;

/* ---- statistics (sink_stats.c) ---- */

/* Log-linear latency histogram in microseconds: 16 sub-buckets per power of two, so any
 * quantile is within ~6 % of the true value; fixed size, no allocation. */
#define SINK_LAT_SUB 16
#define SINK_LAT_POW 40 /* up to 2^40 µs (~12 days) */
typedef struct sink_latency {
    uint64_t counts[SINK_LAT_POW * SINK_LAT_SUB];
    uint64_t n;
    uint64_t max_us;
    double sum_us;
    uint64_t negative; /* timestamps in the future (clock skew), counted as 0 */
} sink_latency_t;

/* Which sequence numbers were seen: a bitmap ring of `bits` bits (a multiple of 64) over
 * [base, base + bits). A number past the window slides it, and the numbers slid out unseen
 * are counted as missing for good; a number below the base is "out of window" (it cannot be
 * told from a duplicate). */
typedef struct sink_seqwin {
    uint64_t *words;
    size_t nwords;
    uint64_t base; /* multiple of 64 */
    bool started;
    uint64_t min_seen, max_seen;
    uint64_t unique;
    uint64_t duplicates;
    uint64_t out_of_window;
    uint64_t missing_slid; /* unseen numbers that left the window */
} sink_seqwin_t;

typedef struct sink_tstats {
    uint64_t records;  /* records accepted (acknowledged) */
    uint64_t requests; /* HTTP requests or DATA frames */
    uint64_t rejected; /* requests/frames answered with a fault status */
    uint64_t bytes;    /* body / payload bytes received */
    uint64_t connections_total;
    uint64_t connections_open;
    uint64_t protocol_errors;
} sink_tstats_t;

typedef struct sink_stats {
    sink_tstats_t t[SINK__TRANSPORTS];
    sink_seqwin_t seq;
    sink_latency_t lat;
    uint64_t unsequenced;   /* records without a sequence number (raw bodies) */
    uint64_t expect;        /* --expect, 0 when not given */
    double start_s;         /* wall clock at start */
    double first_s, last_s; /* first and last accepted record */
} sink_stats_t;

int sink_seqwin_init(sink_seqwin_t *w, size_t bits);
void sink_seqwin_free(sink_seqwin_t *w);
/* Records one sequence number; returns true when it was new (not a duplicate). */
bool sink_seqwin_add(sink_seqwin_t *w, uint64_t seq);
/* Unseen numbers in [min_seen, max_seen] (slid out or still in the window). */
uint64_t sink_seqwin_gaps(const sink_seqwin_t *w);

void sink_latency_add(sink_latency_t *l, int64_t us);
/* q in [0,1]; 0 when empty. Upper bound of the bucket holding the quantile. */
double sink_latency_quantile_us(const sink_latency_t *l, double q);

int sink_stats_init(sink_stats_t *s, size_t seq_window_bits, uint64_t expect);
void sink_stats_free(sink_stats_t *s);
/* The summary document (one JSON object, no newline) appended to out. */
int sink_stats_summary(const sink_stats_t *s, buf_t *out);
double sink_now_s(void);
int64_t sink_now_us(void);

/* ---- message bodies (sink_body.c) ---- */

/* What the sink learns of one record. */
typedef struct sink_record_info {
    bool has_seq;
    uint64_t seq;
    bool has_ts;
    int64_t ts_us;
} sink_record_info_t;

typedef void (*sink_record_fn)(void *arg, const sink_record_info_t *info);

/* An HTTP body: a JSON envelope, a JSON array of envelopes, NDJSON envelopes, or a binary
 * frame (content type application/vnd.ndd.frame); anything else is one raw record without a
 * sequence number. Calls fn once per record. Returns the number of records, or -1 when the
 * body claims to be an NDD encoding but is malformed (why in err). */
long sink_body_records(const uint8_t *body, size_t len, const char *content_type, sink_record_fn fn,
                       void *arg, char *err, size_t errlen);

/* @seq and @timestamp-us of one frame record. */
struct frame_record;
void sink_frame_record_info(const struct frame_record *r, sink_record_info_t *info);

/* ---- fault injection (sink_fault.c) ---- */

typedef struct sink_fault {
    int status;          /* answer this status instead of success; 0 = off */
    int64_t status_left; /* requests left to answer with it; -1 = until status_until */
    double status_until; /* wall clock end, 0 = by count only */
    int retry_after_s;   /* Retry-After on 429/503 responses, 0 = none */
    int delay_ms;        /* delay before answering; 0 = off */
    int64_t delay_left;  /* requests left to delay; -1 = until delay_until / forever */
    double delay_until;
    int64_t drop_left;   /* requests to answer by closing the connection */
    double refuse_until; /* listeners closed until then */
} sink_fault_t;

/* What to do with the next request (consumes one unit of each active count). */
typedef struct sink_verdict {
    int status; /* 0 = success */
    int retry_after_s;
    int delay_ms;
    bool drop; /* close the connection without an answer */
} sink_verdict_t;

void sink_fault_next(sink_fault_t *f, double now, sink_verdict_t *v);
/* Applies a control document (POST /control). Returns 0 or -1 with err. The refuse
 * duration, if any, is returned in *refuse_s (0 when absent) for the caller to act on;
 * *close_now is set when {"close":true} without a count asks to close every connection. */
int sink_fault_apply_json(sink_fault_t *f, const char *json, size_t len, double now,
                          double *refuse_s, bool *close_now, char *err, size_t errlen);
int sink_fault_to_json(const sink_fault_t *f, double now, buf_t *out);

/* ---- the sink ---- */

typedef struct sink_conn sink_conn_t;

typedef struct sink_listener {
    struct sink *sink;
    sink_transport_t transport;
    uint16_t port; /* the bound port (after an ephemeral bind) */
    struct evconnlistener *lev;
} sink_listener_t;

typedef struct sink_config {
    const char *bind_addr;
    int port[SINK__TRANSPORTS]; /* -1 = off, 0 = ephemeral */
    int metrics_port;           /* -1 = off */
    const char *cert_file, *key_file, *ca_file, *key_password_file;
    bool require_client_cert;
    size_t max_connections;
    size_t max_body;
    uint32_t max_streams;
    size_t seq_window_bits;
    uint64_t expect;
    const char *summary_file;
    bool exit_on_expect; /* stop (and write the summary) once expect unique records arrived */
} sink_config_t;

typedef struct sink {
    sink_config_t cfg;
    struct event_base *base;
    SSL_CTX *ssl_h2;    /* TLS with ALPN h2 */
    SSL_CTX *ssl_frame; /* TLS without ALPN */
    sink_listener_t listeners[SINK__TRANSPORTS];
    struct event *refuse_timer;
    sink_stats_t stats;
    sink_fault_t fault;
    sink_conn_t *conns; /* all open data connections (doubly linked) */
    size_t nconns;
    void *httpd;
    /* metrics */
    metrics_registry_t *reg;
    metrics_histogram_t *m_latency;
    bool stopping;
} sink_t;

/* A data connection: the common head of an HTTP/2 or frame connection. */
struct sink_conn {
    sink_t *sink;
    sink_transport_t transport;
    struct bufferevent *bev;
    sink_conn_t *prev, *next;
    void (*close)(sink_conn_t *c); /* frees everything of the connection */
    char peer[64];
};

const char *sink_transport_name(sink_transport_t t);
/* Registers/unregisters a connection (counts and the close-all list). */
void sink_conn_add(sink_t *s, sink_conn_t *c);
void sink_conn_remove(sink_t *s, sink_conn_t *c);
/* The bufferevent of an accepted connection on fd: TLS (server side, handshake pending) when
 * ctx is given, plain TCP otherwise. NULL on failure; fd is then still open. */
struct bufferevent *sink_conn_bev_new(sink_t *s, int fd, SSL_CTX *ctx);
/* Starts a set-up connection's I/O: the callbacks (arg: the connection), writes are awaited
 * below out_high / 2, both directions on, and a TLS client gets SINK_TLS_HANDSHAKE_S to
 * finish its handshake (no idle limit after it). */
void sink_conn_start(sink_conn_t *c, bufferevent_data_cb readcb, bufferevent_data_cb writecb,
                     bufferevent_event_cb eventcb, void *arg, size_t out_high);
/* On BEV_EVENT_ERROR: logs the TLS error that ended c (a client closing without close_notify
 * is common and harmless: debug level). false when TLS reported none. */
bool sink_conn_log_tls_error(const sink_conn_t *c, struct bufferevent *bev);
/* One accepted record (after the verdict said success). */
void sink_count_record(sink_t *s, sink_transport_t t, const sink_record_info_t *info);
/* Stops the loop when --exit-on-expect is met. */
void sink_check_done(sink_t *s);

/* HTTP/2 and frame connections (sink_h2.c, sink_frame.c): accept callbacks. */
void sink_h2_accept(sink_t *s, sink_transport_t t, int fd, const char *peer);
void sink_frame_accept(sink_t *s, sink_transport_t t, int fd, const char *peer);

#endif
