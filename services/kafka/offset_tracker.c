/* Per-partition low-water mark: see offset_tracker.h. */
#include "offset_tracker.h"

#include <stdlib.h>
#include <string.h>

#define OFFSET_TRACKER_INITIAL_CAP 64u

static uint32_t offset_tracker_round_pow2(uint32_t v)
{
    uint32_t c = 1;
    while (c < v && c < (1u << 31))
        c <<= 1;
    return c;
}

int offset_tracker_init(offset_tracker_t *t, uint32_t max_inflight)
{
    memset(t, 0, sizeof(*t));
    if (max_inflight == 0)
        max_inflight = 1;
    t->max_inflight = max_inflight;
    uint32_t limit = offset_tracker_round_pow2(max_inflight);
    t->cap = limit < OFFSET_TRACKER_INITIAL_CAP ? limit : OFFSET_TRACKER_INITIAL_CAP;
    t->offsets = malloc(sizeof(*t->offsets) * t->cap);
    t->done = calloc(t->cap, 1);
    if (!t->offsets || !t->done) {
        offset_tracker_free(t);
        return -1;
    }
    t->last_taken = -1;
    t->low_water = -1;
    return 0;
}

void offset_tracker_free(offset_tracker_t *t)
{
    free(t->offsets);
    free(t->done);
    t->offsets = NULL;
    t->done = NULL;
    t->cap = 0;
}

/* Doubles the ring, keeping every pending entry at its ticket's new position. */
static int offset_tracker_grow(offset_tracker_t *t)
{
    uint32_t ncap = t->cap * 2;
    int64_t *no = malloc(sizeof(*no) * ncap);
    uint8_t *nd = calloc(ncap, 1);
    if (!no || !nd) {
        free(no);
        free(nd);
        return -1;
    }
    for (uint64_t k = t->head; k < t->tail; k++) {
        no[k & (ncap - 1)] = t->offsets[k & (t->cap - 1)];
        nd[k & (ncap - 1)] = t->done[k & (t->cap - 1)];
    }
    free(t->offsets);
    free(t->done);
    t->offsets = no;
    t->done = nd;
    t->cap = ncap;
    return 0;
}

offset_tracker_rc_t offset_tracker_take(offset_tracker_t *t, int64_t offset, uint64_t *ticket)
{
    if (offset < 0 || offset <= t->last_taken)
        return OFFSET_TRACKER_ORDER;
    uint64_t pending = t->tail - t->head;
    if (pending >= t->max_inflight)
        return OFFSET_TRACKER_FULL;
    if (pending >= t->cap && offset_tracker_grow(t))
        return OFFSET_TRACKER_NOMEM;
    uint32_t slot = (uint32_t)(t->tail & (t->cap - 1));
    t->offsets[slot] = offset;
    t->done[slot] = 0;
    *ticket = t->tail++;
    t->last_taken = offset;
    return OFFSET_TRACKER_OK;
}

offset_tracker_rc_t offset_tracker_done(offset_tracker_t *t, uint64_t ticket)
{
    if (ticket < t->head || ticket >= t->tail)
        return OFFSET_TRACKER_STALE;
    uint32_t mask = t->cap - 1;
    if (t->done[ticket & mask])
        return OFFSET_TRACKER_STALE;
    t->done[ticket & mask] = 1;
    /* Each entry is passed once by the head: amortised O(1) per done. */
    while (t->head < t->tail && t->done[t->head & mask]) {
        t->low_water = t->offsets[t->head & mask] + 1;
        t->done[t->head & mask] = 0;
        t->head++;
    }
    return OFFSET_TRACKER_OK;
}

offset_tracker_rc_t offset_tracker_skip(offset_tracker_t *t, int64_t offset)
{
    if (offset < 0 || offset <= t->last_taken)
        return OFFSET_TRACKER_ORDER;
    if (t->tail == t->head) {
        t->last_taken = offset;
        t->low_water = offset + 1;
        return OFFSET_TRACKER_OK;
    }
    uint64_t ticket;
    offset_tracker_rc_t rc = offset_tracker_take(t, offset, &ticket);
    if (rc != OFFSET_TRACKER_OK)
        return rc;
    return offset_tracker_done(t, ticket);
}

void offset_tracker_reset(offset_tracker_t *t)
{
    /* Tickets keep counting up, so every ticket handed out before is now below head: STALE. */
    for (uint64_t k = t->head; k < t->tail; k++)
        t->done[k & (t->cap - 1)] = 0;
    t->head = t->tail;
    t->last_taken = -1;
    t->low_water = -1;
}
