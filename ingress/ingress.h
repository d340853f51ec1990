/* ndd-ingress: the gateway for sources that cannot write Kafka (docs/ingress.md). One event
 * loop runs every listener; each listener kind is one file defining its
 * ingress_listener_kind_t (name, metrics label, checks, start/stop) and one row in
 * ingress_table.h (docs/contributing.md, "Adding an ingress listener"):
 *   ingress_h2.c     HTTP/2 (h2c and TLS/ALPN h2): message copies, and VES over HTTP/2
 *   ingress_ves.c    VES REST over HTTP/1.1 (httpd.c), and the VES handling both share
 *   ingress_hvves.c  HV-VES: WTP frames over TCP or TLS
 * The shared part (ingress.c) owns the producer and answers a listener only from the
 * delivery report: 202 means Kafka acknowledged the record. */
#ifndef NDD_INGRESS_H
#define NDD_INGRESS_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/listener.h>

#include "daemon.h"
#include "h2server.h"
#include "kafka.h"
#include "metrics.h"

struct event_base;
typedef struct ingress ingress_t;

#define INGRESS_MAX_LISTENERS 8           /* rows of a listener table */
#define INGRESS_LISTENER_SETTINGS_MAX 256 /* bytes of one listener's own settings */

typedef struct ingress_settings {
    daemon_settings_t common;
    const char *listen;
    int64_t ves_port; /* -1: the VES HTTP/1.1 listener is off */
    bool ves_tls;
    const char *tls_cert, *tls_key, *tls_ca;
    bool tls_client_cert; /* mTLS on every TLS listener (HV-VES requires it with TLS) */
    const char *copy_topic_prefix;
    int64_t max_body, max_in_flight;
    int64_t produce_timeout_ms;
    int64_t max_in_flight_bytes; /* bytes of the records awaiting acknowledgement */
    int64_t idle_timeout_ms;     /* HTTP/1.1, HTTP/2, HV-VES: nothing moved this long: closed */
    int64_t frame_timeout_ms, max_buffered; /* HV-VES and TCP copies (ingress_guard.h) */
    bool ves_cert_basic_auth; /* VES HTTP/1.1 over TLS: a client certificate or basic auth */
    const char *ves_user, *ves_password;
    config_list_t ves_routes; /* "domain=topic" */
    const char *ves_topic_prefix;
    /* The settings a listener describes itself (ingress_listener_kind_t.specs), by its row
     * in the listener table: ingress_own_settings. */
    union {
        max_align_t align;
        unsigned char bytes[INGRESS_LISTENER_SETTINGS_MAX];
    } own[INGRESS_MAX_LISTENERS];
} ingress_settings_t;

typedef struct produced produced_t;

/* One record (or one request's records) awaiting acknowledgement: done runs from the delivery
 * report once per record produced with it. */
typedef struct ingress_ack ingress_ack_t;
struct ingress_ack {
    void (*done)(ingress_ack_t *a, const rd_kafka_message_t *rkm);
};

/* A listener's row in the listener table (ingress_table.h): the index of its metrics and the
 * `transport` label of every ndd_ingress_* family it counts in. The built-in rows have names
 * (INGRESS_T_H2_COPY, ...); a listener added by a table of its own asks
 * ingress_listener_index. */
typedef int ingress_transport_t;
typedef struct ingress_metrics {
    metrics_counter_t *received[INGRESS_MAX_LISTENERS];
    metrics_counter_t *received_bytes[INGRESS_MAX_LISTENERS];
    metrics_counter_t *acked[INGRESS_MAX_LISTENERS];
    metrics_family_t *dropped;                                         /* transport, reason */
    metrics_family_t *produce_errors;                                  /* transport, reason */
    metrics_family_t *requests;                                        /* transport, status_code */
    metrics_counter_t *requests_by_status[INGRESS_MAX_LISTENERS][500]; /* children, 100..599 */
    metrics_histogram_t *ack_latency[INGRESS_MAX_LISTENERS];
    metrics_histogram_t *travel; /* HV-VES: lastEpochMicrosec to acknowledgement */
    metrics_gauge_t *in_flight;
    metrics_family_t *buffered_input;  /* transport: input a byte-stream listener holds */
    metrics_family_t *closed_by_bound; /* transport, reason */
} ingress_metrics_t;

/* One listener kind: everything the shared part knows of a listener. */
typedef struct ingress_listener_kind ingress_listener_kind_t;
struct ingress_listener_kind {
    const char *name;  /* "h2": the listener table of --check-config, log lines */
    const char *label; /* the `transport` label of its metrics: "h2-copy" */
    bool (*enabled)(const ingress_settings_t *S);
    /* Optional: it listens with TLS (then tls.cert-file and tls.key-file are required). */
    bool (*tls)(const ingress_settings_t *S);
    /* Optional: its own rules across settings, checked by --check-config and at start; -1
     * with the reason in err. Called whether it is enabled or not. */
    int (*check)(const ingress_settings_t *S, char *err, size_t errlen);
    /* Optional: a listener whose state this one uses (the HTTP/2 listener serves VES through
     * the VES listener's handler). It is started first, and started (its own port off) when
     * this one is enabled. */
    const ingress_listener_kind_t *needs;
    /* Optional: its own settings, keys of ndd-ingress's config map (--help, environment,
     * config file, ndd.json's roles.ingress) like every other: rows whose `at` is
     * CONFIG_AT(its own settings struct, field), that struct at most
     * INGRESS_LISTENER_SETTINGS_MAX bytes; read with ingress_own_settings. */
    const config_spec_t *specs;
    size_t n_specs;
    /* Observes ndd_ingress_message_travel_seconds (events carrying their send time). */
    bool travel;
    /* start returns the listener's state (NULL with err), stop frees it. */
    void *(*start)(ingress_t *g, char *err, size_t errlen);
    void (*stop)(void *l);
};

/* The table (ingress_table.c): the rows of NDD_INGRESS_LISTENERS (ingress_table.h), NULL ended.
 * A test may link a table of its own in place of ingress_table.c. */
extern const ingress_listener_kind_t *const ingress_listeners[];
#define INGRESS_LISTENER_DECLARE(k, id) extern const ingress_listener_kind_t k;
#define INGRESS_LISTENER_ROW(k, id) &k,
#define INGRESS_LISTENER_ID(k, id) id,
/* Defines ingress_listeners from a row list (a macro taking X, calling X(kind, id) per row). */
#define INGRESS_LISTENER_TABLE(ROWS)                                                               \
    const ingress_listener_kind_t *const ingress_listeners[] = {ROWS(INGRESS_LISTENER_ROW) NULL};

/* The row of k in the listener table (its metrics' index); -1 when it is not in it. */
ingress_transport_t ingress_listener_index(const ingress_listener_kind_t *k);
/* The listener k's own settings (its .specs' struct) in S. */
const void *ingress_own_settings(const ingress_settings_t *S, const ingress_listener_kind_t *k);
/* The `transport` label of row t. */
const char *ingress_label(ingress_transport_t t);

#define INGRESS_MAX_ON_ROOM 4

struct ingress {
    daemon_t *d;
    const ingress_settings_t *S;
    struct event_base *base;
    kafka_producer_t *prod;
    SSL_CTX *tls;    /* ALPN h2: the HTTP/2 listener */
    SSL_CTX *tls_h1; /* ALPN http/1.1 (VES over HTTPS) or none (HV-VES) */
    ingress_metrics_t m;
    int64_t in_flight, in_flight_bytes;
    produced_t *free_produced;
    produced_t *oldest, *newest; /* records awaiting acknowledgement, oldest first */
    SSL_CTX *tls_ves; /* VES HTTP/1.1 with ves.cert-basic-auth: the certificate optional */
    void *ves_h2;     /* the VES handler state, shared with the HTTP/2 listener */
    /* Called after every delivery batch: listeners paused by a full queue resume here. */
    struct {
        void (*fn)(void *arg);
        void *arg;
    } on_room[INGRESS_MAX_ON_ROOM];
};

/* Registers (removes) a listener's resume callback: 0, or -1 when the table is full. */
int ingress_on_room_add(ingress_t *g, void (*fn)(void *), void *arg);
void ingress_on_room_remove(ingress_t *g, void (*fn)(void *), void *arg);

/* Produce one record whose acknowledgement a reply waits for. value is borrowed (alive until
 * done ran) unless copy. KAFKA_PRODUCE_FULL also when in_flight reached max-in-flight. */
kafka_produce_result_t ingress_produce(ingress_t *g, ingress_transport_t t, const char *topic,
                                       const void *key, size_t klen, const void *value, size_t vlen,
                                       rd_kafka_headers_t *hdrs, bool copy, ingress_ack_t *a);
/* True while Kafka has not acknowledged a record for produce-timeout: the HTTP listeners then
 * answer 503 without producing (what they answer 503 for is never written). */
bool ingress_kafka_stalled(ingress_t *g);
/* Room for one more record of vlen bytes (max-in-flight, max-in-flight-bytes). */
bool ingress_has_room(const ingress_t *g, size_t vlen);
void ingress_dropped(ingress_t *g, ingress_transport_t t, const char *reason);
void ingress_request_done(ingress_t *g, ingress_transport_t t, int status);
/* The topic of a domain by a "domain=topic" route list, else prefix + domain; into out. */
const char *ingress_route(const config_list_t *routes, const char *prefix, const char *domain,
                          size_t dlen, char *out, size_t outlen);
int64_t ingress_now_us(void);
/* A "domain=topic" route list well formed (a check hook's helper); -1 naming key in err. */
int ingress_check_routes(const config_list_t *l, const char *key, char *err, size_t errlen);
/* A TCP listener on the ingress's listen address and port for one of its listeners; NULL
 * with err naming the address when it cannot be bound. */
struct evconnlistener *ingress_listen(ingress_t *g, long long port, evconnlistener_cb cb, void *arg,
                                      char *err, size_t errlen);

/* The daemon's check hook and its run (main.c). */
int ingress_check(daemon_t *d, FILE *out, char *err, size_t errlen);
int ingress_run(daemon_t *d, const ingress_settings_t *S);

/* The ingress role (ingress_role.c): ndd-ingress's main and ndd run it. */
struct daemon_role;
extern const struct daemon_role ingress_role;

#include "ingress_table.h" /* the built-in rows and their names */

#endif
