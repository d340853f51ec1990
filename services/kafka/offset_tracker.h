/* Per-partition low-water mark for at-least-once processing.
 *
 * A consumer "takes" offsets in increasing order as records arrive, finishes them in any
 * order (delivery reports of different produces come back out of order), and may store only
 * the offset below which every taken record is done. The tracker answers that in O(1)
 * amortised: taken records sit in a ring in take order, each take returns a ticket (its
 * position in take order) that finds the slot directly, and the head advances past finished
 * slots. Gaps between taken offsets (compaction, transaction markers, filtered records that
 * were never taken) are fine: the low-water mark is "last contiguous done + 1".
 *
 * Memory is bounded: the window from the oldest pending record to the newest taken one holds
 * at most max_inflight records (finished records behind a pending one still count: the
 * tracker must remember them); the ring grows by doubling up to that, and a take beyond it
 * fails with OFFSET_TRACKER_FULL (the caller pauses the partition and retries once the oldest
 * is done). Not thread-safe: one owner thread. */
#ifndef NDD_OFFSET_TRACKER_H
#define NDD_OFFSET_TRACKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum offset_tracker_rc {
    OFFSET_TRACKER_OK = 0,
    OFFSET_TRACKER_FULL = 1,   /* max_inflight records pending: done some first */
    OFFSET_TRACKER_ORDER = -1, /* offset not above the last taken one (seek: reset first) */
    OFFSET_TRACKER_STALE = -2, /* unknown ticket: from before a reset, or done twice */
    OFFSET_TRACKER_NOMEM = -3,
} offset_tracker_rc_t;

typedef struct offset_tracker {
    int64_t *offsets; /* ring of taken offsets, cap entries */
    uint8_t *done;    /* ring of done flags */
    uint32_t cap;     /* power of two, <= max rounded up */
    uint32_t max_inflight;
    uint64_t head;      /* ticket of the oldest pending record */
    uint64_t tail;      /* ticket the next take gets; pending = tail - head */
    int64_t last_taken; /* -1 before the first take */
    int64_t low_water;  /* next offset that may be stored; -1 while nothing is done */
} offset_tracker_t;

/* max_inflight >= 1. The ring starts small and grows on demand. Returns 0 or -1 (no memory). */
int offset_tracker_init(offset_tracker_t *t, uint32_t max_inflight);
void offset_tracker_free(offset_tracker_t *t);

/* Records that `offset` was taken; *ticket identifies it for offset_tracker_done(). */
offset_tracker_rc_t offset_tracker_take(offset_tracker_t *t, int64_t offset, uint64_t *ticket);
/* Marks a taken record finished. OK, or STALE for a ticket this tracker no longer knows. */
offset_tracker_rc_t offset_tracker_done(offset_tracker_t *t, uint64_t ticket);
/* Takes and finishes at once an offset that needs no asynchronous work (a filtered-out record):
 * with nothing pending it moves the low-water mark straight past it. */
offset_tracker_rc_t offset_tracker_skip(offset_tracker_t *t, int64_t offset);

/* The offset to store (every taken offset below it is done), or -1 when nothing is done yet. */
static inline int64_t offset_tracker_low_water(const offset_tracker_t *t)
{
    return t->low_water;
}
/* Records in the window (oldest pending .. newest taken), done or not. */
static inline size_t offset_tracker_pending(const offset_tracker_t *t)
{
    return (size_t)(t->tail - t->head);
}
static inline bool offset_tracker_full(const offset_tracker_t *t)
{
    return t->tail - t->head >= t->max_inflight;
}
/* Forgets every pending record (revoked partition, seek). Tickets handed out before become
 * STALE; the next take may be any offset. Keeps the memory. */
void offset_tracker_reset(offset_tracker_t *t);

#endif
