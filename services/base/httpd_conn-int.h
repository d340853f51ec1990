/* Private to services/base/httpd_conn.c and httpd_admit.c: an HTTP/1.1 connection, and the
 * calls between reading and serving it (httpd_conn.c) and admitting it at accept
 * (httpd_admit.c, the per-client and global caps and the probe reserve). */
#ifndef NDD_HTTPD_CONN_INT_H
#define NDD_HTTPD_CONN_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "httpd_int.h"
#include "netconn.h"

#define GUARD_RESERVE_TIMEOUT_S 2 /* a probe-reserve connection's whole request */
#define GUARD_NEW_GRACE_MS 250    /* a new connection's time for its first request to arrive */
#define GUARD_EVICT_PEEKS 16      /* sockets one admission looks into, at most */

typedef enum {
    HC_HANDSHAKE, /* TLS handshake under way */
    HC_IDLE,      /* no byte of a request yet (new, or keep-alive after a reply) */
    HC_HEADER,    /* reading a header */
    HC_BODY       /* header read, body incomplete */
} hc_state_t;

typedef struct field_off {
    uint32_t name, name_len, value, value_len;
} field_off_t;

struct httpd_conn {
    httpd_t *h;
    netconn_t nc; /* the socket, its TLS session and its two events */
    struct event *timer;
    httpd_conn_t *next, *prev;
    char addr[64]; /* the client's address: the per-client cap */
    char peer[80]; /* "ip:port" */
    hc_state_t state;
    bool serving;         /* a reply is being sent */
    bool reserve;         /* admitted past the caps: probes only */
    bool request_pending; /* a whole request was waiting in the socket at admission */
    bool partial_waiting; /* not read yet, but part of a request is waiting: a slow client */
    unsigned spared_pass; /* evictable(): spared as too new in pass h->evict_pass */
    bool closing;         /* close once the output is sent */
    bool linger;          /* ... after reading what the client still sends (an error reply) */
    bool lingering;       /* reply sent, write side shut: input is read and dropped */
    bool fresh;           /* no request yet: the HTTP/2 preface may come */
    httpd_later_t *later; /* a request waiting for its answer (httpd_req_later): not read */
    int64_t since_ms;     /* when the current state began: the eviction order */
    int64_t req_start_ms;
    int64_t deadline_ms; /* 0: none */
    int64_t last_io_ms;
    int64_t timer_at_ms; /* 0: not armed */
    char *in;
    size_t in_len, in_cap, in_off;
    size_t scan_off; /* where the search for the header's end resumes (from in_off) */
    /* the header of the request at in_off, once read whole */
    bool have_header;
    size_t hdr_len;
    int64_t content_length;
    bool chunked, expect_continue;
    char *out;
    size_t out_len, out_off, out_cap;
    _Alignas(max_align_t) unsigned char memo[HTTPD_CONN_MEMO_BYTES]; /* httpd_req_conn_memo */
};

/* A guard event: logged as a warning at most every GUARD_WARN_EVERY_MS, else at debug. */
void httpd_conn_warn_limited(httpd_t *h, const char *what, const httpd_conn_t *c);
/* Closes c and frees it (unlinked from the server's list). */
void httpd_conn_free(httpd_conn_t *c);
/* Admits a new connection under the caps (httpd_admit.c): may evict a waiting connection, or
 * admit c from the probe reserve. false: c was closed. */
bool httpd_conn_admit(httpd_conn_t *c);

#endif
