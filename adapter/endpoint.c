#include "endpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "log.h"

struct endpoint {
    endpoint_set_t *set;
    transport_t *t;
    char name[512];
    const char *feed;
    unsigned weight;
    long current; /* smooth WRR state */
    bool up;
    bool ever_acked;   /* since the last (re)connect: resets the backoff */
    unsigned attempts; /* consecutive failed connects */
    unsigned consecutive_failures;
    struct event *reconnect;
    void *user;
};

struct endpoint_set {
    struct event_base *base;
    endpoint_opts_t opts;
    endpoint_events_t ev;
    void *owner;
    endpoint_t **eps;
    size_t n, cap;
    unsigned seed;
    bool freeing;
};

uint32_t endpoint_backoff_ms(uint32_t initial, uint32_t max, unsigned attempt, unsigned *seed)
{
    uint64_t d = initial;
    for (unsigned i = 1; i < attempt && d < max; i++)
        d *= 2;
    if (d > max)
        d = max;
    uint64_t half = d / 2;
    return (uint32_t)(half + (d - half ? (uint64_t)rand_r(seed) % (d - half + 1) : 0));
}

static void ep_on_ack(void *o, void *cookie, int status)
{
    endpoint_t *ep = o;
    ep->consecutive_failures = 0;
    if (!ep->ever_acked) {
        ep->ever_acked = true;
        ep->attempts = 0;
    }
    ep->set->ev.on_ack(ep->set->owner, ep, cookie, status);
}

static void ep_on_fail(void *o, void *cookie, const transport_failure_t *f)
{
    endpoint_t *ep = o;
    endpoint_set_t *s = ep->set;
    bool take_out = false;
    if (f->retryable && !s->freeing) {
        ep->consecutive_failures++;
        take_out = ep->up && ep->consecutive_failures >= s->opts.fail_threshold;
    } else if (!f->retryable) {
        ep->consecutive_failures = 0; /* the endpoint answered: it is alive */
    }
    s->ev.on_fail(s->owner, ep, cookie, f);
    if (take_out && ep->up) {
        char why[600];
        snprintf(why, sizeof why, "%u consecutive failures, last: %s", ep->consecutive_failures,
                 f->reason ? f->reason : "?");
        transport_disconnect(ep->t, why);
    }
}

static void ep_on_up(void *o)
{
    endpoint_t *ep = o;
    ep->up = true;
    ep->consecutive_failures = 0;
    ep->ever_acked = false;
    if (ep->attempts > 0)
        log_info("feed %s: endpoint %s is up again after %u failed attempts", ep->feed, ep->name,
                 ep->attempts);
    ep->set->ev.on_state(ep->set->owner, ep, true, NULL);
    ep->set->ev.on_capacity(ep->set->owner);
}

static void ep_on_down(void *o, const char *reason)
{
    endpoint_t *ep = o;
    endpoint_set_t *s = ep->set;
    bool was_up = ep->up;
    ep->up = false;
    ep->current = 0;
    if (s->freeing)
        return;
    ep->attempts++;
    uint32_t delay = endpoint_backoff_ms(s->opts.backoff_initial_ms, s->opts.backoff_max_ms,
                                         ep->attempts, &s->seed);
    if (was_up || ep->attempts == 1 || ep->attempts % 10 == 0)
        log_warn("feed %s: endpoint %s down: %s; reconnect #%u in %u ms", ep->feed, ep->name,
                 reason, ep->attempts, delay);
    else
        log_debug("feed %s: endpoint %s still down: %s; reconnect #%u in %u ms", ep->feed, ep->name,
                  reason, ep->attempts, delay);
    struct timeval tv = {delay / 1000, (delay % 1000) * 1000};
    event_add(ep->reconnect, &tv);
    if (was_up)
        s->ev.on_state(s->owner, ep, false, reason);
}

static void ep_on_writable(void *o)
{
    endpoint_t *ep = o;
    ep->set->ev.on_capacity(ep->set->owner);
}

static const transport_events_t EP_TRANSPORT_EVENTS = {ep_on_ack, ep_on_fail, ep_on_up, ep_on_down,
                                                       ep_on_writable};

static void ep_reconnect_cb(evutil_socket_t fd, short what, void *arg)
{
    endpoint_t *ep = arg;
    transport_connect(ep->t);
}

endpoint_set_t *endpoint_set_new(struct event_base *base, const endpoint_opts_t *opts,
                                 const endpoint_events_t *ev, void *owner)
{
    endpoint_set_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->base = base;
    if (opts)
        s->opts = *opts;
    if (!s->opts.backoff_initial_ms)
        s->opts.backoff_initial_ms = 100;
    if (!s->opts.backoff_max_ms)
        s->opts.backoff_max_ms = 10000;
    if (!s->opts.fail_threshold)
        s->opts.fail_threshold = 5;
    s->ev = *ev;
    s->owner = owner;
    s->seed = (unsigned)time(NULL) ^ (unsigned)getpid() ^ (unsigned)(uintptr_t)s;
    return s;
}

endpoint_t *endpoint_set_add(endpoint_set_t *s, const transport_config_t *cfg, unsigned weight,
                             char *err, size_t errlen)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 4;
        endpoint_t **ne = realloc(s->eps, nc * sizeof *ne);
        if (!ne) {
            snprintf(err, errlen, "out of memory");
            return NULL;
        }
        s->eps = ne;
        s->cap = nc;
    }
    endpoint_t *ep = calloc(1, sizeof *ep);
    if (!ep) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ep->set = s;
    ep->weight = weight ? weight : 1;
    ep->feed = cfg->feed ? cfg->feed : "?";
    snprintf(ep->name, sizeof ep->name, "%s", cfg->endpoint);
    ep->reconnect = evtimer_new(s->base, ep_reconnect_cb, ep);
    const transport_ops_t *ops = transport_ops_for(cfg->kind);
    if (!ops)
        snprintf(err, errlen, "transport \"%s\" has no implementation in this build",
                 cfg->kind ? cfg->kind->name : "?");
    ep->t = ep->reconnect && ops ? ops->create(s->base, cfg, &EP_TRANSPORT_EVENTS, ep, err, errlen)
                                 : NULL;
    if (!ep->t) {
        if (ep->reconnect)
            event_free(ep->reconnect);
        free(ep);
        return NULL;
    }
    s->eps[s->n++] = ep;
    return ep;
}

void endpoint_set_start(endpoint_set_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        transport_connect(s->eps[i]->t);
}

endpoint_t *endpoint_set_pick(endpoint_set_t *s)
{
    long total = 0;
    endpoint_t *best = NULL;
    for (size_t i = 0; i < s->n; i++) {
        endpoint_t *ep = s->eps[i];
        if (!ep->up || transport_capacity(ep->t) == 0)
            continue;
        ep->current += ep->weight;
        total += ep->weight;
        if (!best || ep->current > best->current)
            best = ep;
    }
    if (best)
        best->current -= total;
    return best;
}

int endpoint_send(endpoint_t *ep, const uint8_t *payload, size_t len, void *cookie)
{
    return transport_send(ep->t, payload, len, cookie);
}

unsigned endpoint_set_up_count(const endpoint_set_t *s)
{
    unsigned n = 0;
    for (size_t i = 0; i < s->n; i++)
        n += s->eps[i]->up;
    return n;
}

void endpoint_set_free(endpoint_set_t *s)
{
    if (!s)
        return;
    s->freeing = true;
    for (size_t i = 0; i < s->n; i++) {
        endpoint_t *ep = s->eps[i];
        transport_disconnect(ep->t, "feed stopping");
    }
    for (size_t i = 0; i < s->n; i++) {
        endpoint_t *ep = s->eps[i];
        transport_destroy(ep->t);
        event_free(ep->reconnect);
        free(ep);
    }
    free(s->eps);
    free(s);
}

const char *endpoint_name(const endpoint_t *ep)
{
    return ep->name;
}
unsigned endpoint_in_flight(const endpoint_t *ep)
{
    return transport_in_flight(ep->t);
}
void endpoint_set_user(endpoint_t *ep, void *user)
{
    ep->user = user;
}
void *endpoint_user(const endpoint_t *ep)
{
    return ep->user;
}
