/* The guard of a byte-stream listener (HV-VES, copies over TCP): what a client may make the
 * listener hold and for how long (docs/ingress.md, "Bounds").
 *   - frame-timeout: a frame must be complete this long after its first byte;
 *   - idle-timeout: a connection that reads nothing this long is closed;
 *   - max-buffered: the input all the listener's connections hold together. Past it the
 *     connection part-way through a frame longest is closed (a sender stalled inside a frame),
 *     or, when none is, the connection that read is paused until input is released.
 * A connection waiting for Kafka (its frames complete and accepted) is exempt from all three.
 * Memory released by closed connections is given back to the system (malloc_trim) once a good
 * part of what the listener held is gone. One 250 ms timer per listener does the sweeping. */
#ifndef NDD_INGRESS_GUARD_H
#define NDD_INGRESS_GUARD_H

#include "ingress.h"

typedef struct ingress_guard_conn ingress_guard_conn_t;
struct ingress_guard_conn {
    size_t held;                            /* its input bytes, as counted in the guard */
    int64_t last_read_ms, partial_since_ms; /* partial: 0 when no frame is part-way in */
    bool waiting;                           /* for Kafka: exempt (the listener sets it) */
    bool paused;                            /* by the guard: over max-buffered */
    ingress_guard_conn_t *next, *prev;
};

typedef struct ingress_guard {
    ingress_t *g;
    ingress_transport_t t;
    size_t max;
    int64_t frame_timeout_ms;
    size_t held, held_high, n_paused;
    bool trim_due;
    int64_t logged_ms; /* closes are logged at most once a second (a flood of stalled */
    size_t unlogged;   /* senders must not flood the log): those not logged since */
    ingress_guard_conn_t *conns;
    struct event *sweep;
    /* The listener's: close the connection (it calls ingress_guard_remove), and stop or
     * resume reading it (pause on when the guard pauses it). */
    void (*close)(ingress_guard_conn_t *gc, const char *why);
    void (*pause)(ingress_guard_conn_t *gc, bool on);
    metrics_gauge_t *held_gauge;
    metrics_counter_t *closed_frame, *closed_idle, *closed_evicted;
} ingress_guard_t;

void ingress_guard_add(ingress_guard_t *gd, ingress_guard_conn_t *gc);
void ingress_guard_remove(ingress_guard_t *gd, ingress_guard_conn_t *gc);
/* After a read: the connection's input is len bytes. */
void ingress_guard_read(ingress_guard_t *gd, ingress_guard_conn_t *gc, size_t len);
/* After frames were taken from the input (now len bytes): what is left starts a new frame. */
void ingress_guard_drained(ingress_guard_t *gd, ingress_guard_conn_t *gc, size_t len);
/* max-buffered after gc read: 1 when gc itself was closed. */
int ingress_guard_enforce(ingress_guard_t *gd, ingress_guard_conn_t *gc);

/* What a byte-stream listener is besides its protocol: the listening socket, its guard (with
 * the list of open connections, ingress_guard_conn_t first in each) and its resume callback
 * for room in Kafka's queue (ingress_on_room_add). */
typedef struct ingress_stream {
    struct evconnlistener *lst;
    ingress_guard_t guard;
    void (*on_room)(void *arg);
    void *arg;
} ingress_stream_t;

/* Listens on port (on_accept(…, arg) per connection), sets up the guard for listener t and
 * registers on_room(arg). 0, or -1 with err (what was set up is undone). */
int ingress_stream_start(ingress_stream_t *s, ingress_t *g, ingress_transport_t t, long long port,
                         evconnlistener_cb on_accept, void (*on_room)(void *), void *arg,
                         void (*close)(ingress_guard_conn_t *, const char *),
                         void (*pause)(ingress_guard_conn_t *, bool), char *err, size_t errlen);
/* Stops listening and closes every open connection with close(gc, "stopping") (which removes
 * it from the guard), then frees the guard. The producer is closed first (ingress_run): no
 * record is outstanding any more. */
void ingress_stream_stop(ingress_stream_t *s, void (*close)(ingress_guard_conn_t *, const char *));
/* The bufferevent of an accepted socket: TLS (server side, g->tls_h1) or plain. NULL, the
 * socket closed, when it cannot be made. */
struct bufferevent *ingress_stream_bev(ingress_t *g, evutil_socket_t fd, bool tls);

#endif
