/* The partition ledger: the bookkeeping behind NDD's at-least-once promise, for one consumer.
 *
 * Every daemon that consumes a topic and may commit a record's offset only once the work
 * made from it is safely done (aggregation: the MAIN/DLQ produce acknowledged; the adapter:
 * the delivery acknowledged by an endpoint; correlation: every xDR of the transactions below
 * a checkpoint acknowledged) keeps, per partition: whether it is assigned to us, an epoch
 * that a revoke or a new assignment moves on (work handed out before carries the old epoch,
 * and its acknowledgement is dropped as stale), an offset tracker (offset_tracker.h: the
 * low-water mark below which every taken record is done), the last offset stored, and
 * whether there is something new to store. This is that state, written once.
 *
 * Rebalances. partitions_assign() of a partition we do not own starts a new epoch with
 * nothing pending. Assigned again while we own it (a repeated assignment: librdkafka keeps
 * fetching from where it is), the state is kept: resetting would drop the tracking of records
 * in flight while later offsets get stored past them. partitions_revoke() forgets the pending
 * work and moves the epoch on: acknowledgements that come back later are dropped (STALE,
 * counted) and nothing is stored for the partition; its next owner re-reads from the last
 * committed offset.
 *
 * Storing. Offsets are taken with partitions_track() (FULL: the partition's window holds
 * max_inflight records, the caller waits or pauses), finished with partitions_ack() or, for a
 * record that needs no asynchronous work (filtered out), partitions_skip(). A user that
 * computes its own safe offset (correlation's checkpoints) hands it in with partitions_mark().
 * partitions_store() then yields (partition, next offset) once for each partition whose
 * low-water mark advanced since its last store; a partition is visited only when it has
 * something new (a dirty list, no scan of every partition).
 *
 * Each partition can carry user_size bytes of the daemon's own state (aggregation's sequence
 * number, the adapter's outstanding rewind, correlation's processed range), zeroed at every
 * new epoch. Partition ids are sparse-safe: the table of partitions grows on demand, a
 * partition's state is allocated at its first assignment. Not thread-safe: one owner thread
 * (the consumer's). */
#ifndef NDD_PARTITIONS_H
#define NDD_PARTITIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct kafka_consumer kafka_consumer_t;

typedef enum partitions_rc {
    PARTITIONS_OK = 0,
    PARTITIONS_FULL = 1,   /* track: max_inflight records pending in the partition */
    PARTITIONS_KEPT = 2,   /* assign: already ours, its state was kept */
    PARTITIONS_STALE = -1, /* not assigned, an old epoch, or a ticket already done / reset */
    PARTITIONS_ORDER = -2, /* track/skip: offset not above the last taken one */
    PARTITIONS_NOMEM = -3,
    PARTITIONS_RANGE = -4, /* partition id negative or not below max_partitions */
} partitions_rc_t;

typedef struct partitions partitions_t;

/* max_inflight: the window of one partition's tracker (>= 1). max_partitions: ids accepted
 * are 0 .. max_partitions-1. user_size: bytes of per-partition user state (0: none). NULL
 * when out of memory. */
partitions_t *partitions_new(uint32_t max_inflight, int32_t max_partitions, size_t user_size);
void partitions_free(partitions_t *l);

/* Rebalance. assign: OK (a new epoch, nothing pending, user state zeroed), KEPT (already
 * ours: state kept), NOMEM or RANGE. revoke: OK, or STALE when it was not ours. */
partitions_rc_t partitions_assign(partitions_t *l, int32_t partition);
partitions_rc_t partitions_revoke(partitions_t *l, int32_t partition);

/* Takes `offset` (increasing per partition); *ticket identifies it for partitions_ack with
 * the partition's epoch at this moment. OK, FULL (nothing taken; the partition is marked
 * paused until an ack makes room), ORDER, STALE (not assigned), NOMEM. */
partitions_rc_t partitions_track(partitions_t *l, int32_t partition, int64_t offset,
                                 uint64_t *ticket);
/* Takes and finishes at once a record that needs no asynchronous work; with nothing pending
 * the low-water mark moves straight past it. OK, FULL, ORDER, STALE, NOMEM. */
partitions_rc_t partitions_skip(partitions_t *l, int32_t partition, int64_t offset);
/* A tracked record is done. OK, or STALE (the partition was revoked or re-assigned since the
 * ticket was handed out, or the ticket is done already): dropped and counted. */
partitions_rc_t partitions_ack(partitions_t *l, int32_t partition, uint32_t epoch, uint64_t ticket);
/* A safe next offset computed by the caller for the given epoch: stored by the next
 * partitions_store when above the last one stored. OK or STALE (old epoch, not assigned). */
partitions_rc_t partitions_mark(partitions_t *l, int32_t partition, uint32_t epoch,
                                int64_t next_offset);

/* Calls fn(arg, partition, next_offset) once for each assigned partition whose safe offset
 * advanced since its last store, and remembers it as stored when fn returns 0 (otherwise it
 * is offered again next time). Returns how many were stored. */
typedef int (*partitions_store_fn)(void *arg, int32_t partition, int64_t next_offset);
size_t partitions_store_each(partitions_t *l, partitions_store_fn fn, void *arg);
/* partitions_store_each into the consumer's offset store (kafka_consumer_store) for topic. */
size_t partitions_store(partitions_t *l, kafka_consumer_t *c, const char *topic);

/* ---- queries ---- */
bool partitions_assigned(const partitions_t *l, int32_t partition);
/* The partition's current epoch (0 for a partition never assigned). */
uint32_t partitions_epoch(const partitions_t *l, int32_t partition);
/* Records in the partition's window (oldest pending .. newest taken, done or not). */
size_t partitions_pending(const partitions_t *l, int32_t partition);
/* The offset below which every taken record is done, -1 while none is. */
int64_t partitions_low_water(const partitions_t *l, int32_t partition);
/* The last offset taken (tracked or skipped) in this epoch, -1 before the first. */
int64_t partitions_last_taken(const partitions_t *l, int32_t partition);
/* The last offset handed to the store in this epoch, -1 before the first. */
int64_t partitions_stored(const partitions_t *l, int32_t partition);
/* True from a FULL track until an ack or skip makes room again (or a new epoch). */
bool partitions_paused(const partitions_t *l, int32_t partition);
/* The partition's user state (user_size bytes), NULL when it was never assigned. */
void *partitions_user(const partitions_t *l, int32_t partition);
/* Partitions assigned now. */
size_t partitions_n_assigned(const partitions_t *l);
/* Iterates the assigned partitions in increasing id: the first above `after` (-1 to start),
 * or -1 when there is none. */
int32_t partitions_next_assigned(const partitions_t *l, int32_t after);
/* Acknowledgements dropped as stale since creation. */
uint64_t partitions_stale_acks(const partitions_t *l);

#endif
