/* Admission of a new HTTP/1.1 connection at accept (httpd_conn.c, "The guard"): by client
 * address under max_per_client, then under max_conn; over a cap the connection waiting longest
 * without a request in service is evicted (partial requests first), else the new one is
 * admitted from the probe reserve, else closed. */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "clock.h"
#include "httpd_conn-int.h"

typedef enum { WAITING_NOTHING, WAITING_PART, WAITING_WHOLE } waiting_t;

/* What sits unread in the socket of a connection not read yet. A probe or a scrape sends its
 * whole request in one packet, usually there before the connection is even admitted: such a
 * connection is about to be in service. Part of a request is a slow client's opening (plain
 * TCP only; TLS bytes are opaque: nothing). */
static waiting_t request_waiting(const httpd_conn_t *c)
{
    if (c->nc.ssl || c->nc.fd < 0)
        return WAITING_NOTHING;
    char peek[2048];
    ssize_t n = recv(c->nc.fd, peek, sizeof peek - 1, MSG_PEEK | MSG_DONTWAIT);
    if (n <= 0)
        return WAITING_NOTHING;
    peek[n] = '\0';
    if (strstr(peek, "\r\n\r\n") != NULL || strstr(peek, "\n\n") != NULL)
        return WAITING_WHOLE;
    return WAITING_PART;
}

static bool is_partial(const httpd_conn_t *x)
{
    return x->state == HC_HEADER || x->state == HC_BODY || x->partial_waiting;
}

/* The connection to evict for a new one, of addr (NULL: of any address): never one with a
 * request in service; first those part-way through a request (a slow client's), oldest first,
 * then idle ones, oldest first. Partial requests go first because a probe's connection is
 * idle between its accept and its request (one packet), while a slowloris's sits on a
 * partial header: a flood of new slow connections then evicts its own kind, not the probe.
 *
 * An idle pick not read yet is looked into first (a burst of accepts is admitted before any
 * of it is read): a whole request waiting spares it, part of one makes it partial, and with
 * nothing there it is spared while younger than GUARD_NEW_GRACE_MS (its request may still
 * be on the way) unless only such connections are left. Each look marks one connection, so
 * this ends; at most GUARD_EVICT_PEEKS looks per admission bound its cost under a flood. */
static httpd_conn_t *evictable(httpd_t *h, const httpd_conn_t *except, const char *addr)
{
    httpd_conn_t *best, *young = NULL;
    unsigned pass = ++h->evict_pass, peeks = 0;
    int64_t now = mono_now_ms();
again:
    best = NULL;
    for (httpd_conn_t *x = h->conns; x; x = x->next) {
        if (x == except || x->serving || x->later || x->reserve || x->request_pending ||
            x->spared_pass == pass)
            continue;
        if (addr && strcmp(x->addr, addr) != 0)
            continue;
        bool partial = is_partial(x);
        bool best_partial = best && is_partial(best);
        if (!best || (partial && !best_partial) ||
            (partial == best_partial && x->since_ms <= best->since_ms))
            best = x;
    }
    if (best && best->state == HC_IDLE && !best->partial_waiting && peeks < GUARD_EVICT_PEEKS) {
        peeks++;
        switch (request_waiting(best)) {
        case WAITING_WHOLE:
            best->request_pending = true;
            goto again;
        case WAITING_PART:
            best->partial_waiting = true;
            goto again; /* now ranked with the partial ones */
        case WAITING_NOTHING:
            if (now - best->since_ms < GUARD_NEW_GRACE_MS) {
                best->spared_pass = pass;
                if (!young)
                    young = best; /* the oldest of the new ones */
                goto again;
            }
            break;
        }
    }
    return best ? best : young;
}

bool httpd_conn_admit(httpd_conn_t *c)
{
    httpd_t *h = c->h;
    c->request_pending = request_waiting(c) == WAITING_WHOLE;
    size_t same = 0, normal = 0;
    for (httpd_conn_t *x = h->conns; x; x = x->next) {
        if (x == c || x->reserve)
            continue;
        normal++;
        if (strcmp(x->addr, c->addr) == 0)
            same++;
    }
    if (same >= h->max_per_client) {
        httpd_conn_t *v = evictable(h, c, c->addr);
        if (!v)
            goto reserve;
        httpd_conn_warn_limited(
            h, "connection cap per client reached: its oldest waiting connection closed", c);
        httpd_conn_free(v);
        normal--;
    }
    if (normal >= h->max_conn) {
        httpd_conn_t *v = evictable(h, c, NULL);
        if (!v)
            goto reserve;
        httpd_conn_warn_limited(h, "connection cap reached: the oldest waiting connection closed",
                                v);
        httpd_conn_free(v);
    }
    return true;
reserve:
    if (h->nreserve < h->probe_reserve) {
        c->reserve = true;
        h->nreserve++;
        c->deadline_ms = mono_now_ms() + GUARD_RESERVE_TIMEOUT_S * 1000;
        httpd_conn_warn_limited(
            h, "connection caps full of requests in service: admitted for probes only", c);
        return true;
    }
    httpd_conn_warn_limited(h, "connection caps and probe reserve full: new connection closed", c);
    httpd_conn_free(c);
    return false;
}
