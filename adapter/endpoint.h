/* The endpoints of one feed: one transport connection each, smooth weighted round-robin
 * (nginx's algorithm: evenly interleaved, exact ratios) over the endpoints that are up and
 * have room, failover (a down endpoint simply stops being picked), reconnection with
 * exponential backoff and full jitter, and taking an endpoint out after consecutive failures.
 * Runs on the feed's thread; no locks. */
#ifndef NDD_ADAPTER_ENDPOINT_H
#define NDD_ADAPTER_ENDPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport.h"

typedef struct endpoint endpoint_t;
typedef struct endpoint_set endpoint_set_t;

typedef struct endpoint_events {
    void (*on_ack)(void *owner, endpoint_t *ep, void *cookie, int status);
    void (*on_fail)(void *owner, endpoint_t *ep, void *cookie, const transport_failure_t *f);
    /* An endpoint came up or gained room: waiting work can be sent. */
    void (*on_capacity)(void *owner);
    /* An endpoint changed state (for metrics, logs and alarms); why it went down (the
     * transport's reason, e.g. a full disk with its free space), NULL when it came up. */
    void (*on_state)(void *owner, endpoint_t *ep, bool up, const char *reason);
} endpoint_events_t;

typedef struct endpoint_opts {
    uint32_t backoff_initial_ms; /* first reconnect delay; 0: 100 */
    uint32_t backoff_max_ms;     /* cap; 0: 10000 */
    unsigned fail_threshold;     /* consecutive retryable failures that take it out; 0: 5 */
} endpoint_opts_t;

endpoint_set_t *endpoint_set_new(struct event_base *base, const endpoint_opts_t *opts,
                                 const endpoint_events_t *ev, void *owner);
/* Adds an endpoint (its transport is created here; cfg strings must outlive the set).
 * weight >= 1. Returns the endpoint or NULL with err. */
endpoint_t *endpoint_set_add(endpoint_set_t *s, const transport_config_t *cfg, unsigned weight,
                             char *err, size_t errlen);
/* Starts connecting every endpoint. */
void endpoint_set_start(endpoint_set_t *s);
/* The next endpoint by smooth WRR among those up with capacity; NULL when none. */
endpoint_t *endpoint_set_pick(endpoint_set_t *s);
/* Sends through ep; 0 or -1 (not accepted, nothing reported). */
int endpoint_send(endpoint_t *ep, const uint8_t *payload, size_t len, void *cookie);
unsigned endpoint_set_up_count(const endpoint_set_t *s);
/* Closes every connection and frees everything. The in-flight requests are failed (as
 * retryable) through on_fail while it runs; no callback runs after it returns. */
void endpoint_set_free(endpoint_set_t *s);

const char *endpoint_name(const endpoint_t *ep);
unsigned endpoint_in_flight(const endpoint_t *ep);
/* Free slot for the owner's per-endpoint data (metrics handles). */
void endpoint_set_user(endpoint_t *ep, void *user);
void *endpoint_user(const endpoint_t *ep);
/* Backoff before the next reconnect attempt number `attempt` (1-based): a uniformly random
 * value in [d/2, d] with d = min(max, initial * 2^(attempt-1)). Exposed for tests. */
uint32_t endpoint_backoff_ms(uint32_t initial, uint32_t max, unsigned attempt, unsigned *seed);

#endif
