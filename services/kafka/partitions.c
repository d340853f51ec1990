/* The partition ledger: see partitions.h. */
#include "partitions.h"

#include <stdlib.h>
#include <string.h>

#include "kafka.h"
#include "offset_tracker.h"

typedef struct partition {
    bool assigned;
    bool dirty;   /* on the dirty list: its safe offset may have moved since the last store */
    bool paused;  /* a track was refused FULL; cleared when room is made */
    bool tracker; /* tr is initialised (at the first track or skip) */
    uint32_t epoch;
    int64_t marked; /* partitions_mark's offset in this epoch, -1: none */
    int64_t stored; /* last offset stored in this epoch, -1: none */
    offset_tracker_t tr;
    /* user_size bytes of the owner's state follow (aligned for any scalar) */
    _Alignas(max_align_t) unsigned char user[];
} partition_t;

struct partitions {
    partition_t **parts; /* by id; NULL until a partition's first assignment */
    int32_t n_parts;     /* entries in parts */
    int32_t max_partitions;
    uint32_t max_inflight;
    size_t user_size;
    int32_t *dirty; /* ids of dirty partitions, at most n_parts */
    size_t n_dirty;
    size_t n_assigned;
    uint64_t stale_acks;
};

partitions_t *partitions_new(uint32_t max_inflight, int32_t max_partitions, size_t user_size)
{
    if (max_partitions <= 0)
        return NULL;
    partitions_t *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    l->max_partitions = max_partitions;
    l->max_inflight = max_inflight ? max_inflight : 1;
    l->user_size = user_size;
    return l;
}

void partitions_free(partitions_t *l)
{
    if (!l)
        return;
    for (int32_t i = 0; i < l->n_parts; i++) {
        if (l->parts[i] && l->parts[i]->tracker)
            offset_tracker_free(&l->parts[i]->tr);
        free(l->parts[i]);
    }
    free(l->parts);
    free(l->dirty);
    free(l);
}

static partition_t *partitions_get(const partitions_t *l, int32_t partition)
{
    if (partition < 0 || partition >= l->n_parts)
        return NULL;
    return l->parts[partition];
}

/* The partition's entry, created (and the table and dirty list grown) when missing. */
static partition_t *partitions_make(partitions_t *l, int32_t partition)
{
    if (partition >= l->n_parts) {
        /* Doubling keeps growth amortised; sparse ids cost a pointer per id below them. */
        int64_t n = l->n_parts ? (int64_t)l->n_parts * 2 : 8;
        if (n <= partition)
            n = (int64_t)partition + 1;
        if (n > l->max_partitions)
            n = l->max_partitions;
        partition_t **np = realloc(l->parts, sizeof(*np) * (size_t)n);
        if (!np)
            return NULL;
        l->parts = np;
        int32_t *nd = realloc(l->dirty, sizeof(*nd) * (size_t)n);
        if (!nd)
            return NULL;
        l->dirty = nd;
        memset(np + l->n_parts, 0, sizeof(*np) * (size_t)(n - l->n_parts));
        l->n_parts = (int32_t)n;
    }
    partition_t *p = l->parts[partition];
    if (!p) {
        p = calloc(1, sizeof(*p) + l->user_size);
        if (!p)
            return NULL;
        p->marked = -1;
        p->stored = -1;
        l->parts[partition] = p;
    }
    return p;
}

static void partitions_set_dirty(partitions_t *l, int32_t partition, partition_t *p)
{
    if (p->dirty)
        return;
    p->dirty = true;
    l->dirty[l->n_dirty++] = partition; /* each id at most once: n_dirty <= n_parts */
}

/* Forgets the pending work of the partition and starts a new epoch. */
static void partitions_new_epoch(partitions_t *l, partition_t *p)
{
    p->epoch++;
    if (p->tracker)
        offset_tracker_reset(&p->tr);
    p->paused = false;
    p->marked = -1;
    p->stored = -1;
    memset(p->user, 0, l->user_size);
    /* A dirty flag left set stays on the list; the store finds nothing new and clears it. */
}

partitions_rc_t partitions_assign(partitions_t *l, int32_t partition)
{
    if (partition < 0 || partition >= l->max_partitions)
        return PARTITIONS_RANGE;
    partition_t *p = partitions_make(l, partition);
    if (!p)
        return PARTITIONS_NOMEM;
    if (p->assigned)
        return PARTITIONS_KEPT;
    partitions_new_epoch(l, p);
    p->assigned = true;
    l->n_assigned++;
    return PARTITIONS_OK;
}

partitions_rc_t partitions_revoke(partitions_t *l, int32_t partition)
{
    partition_t *p = partitions_get(l, partition);
    if (!p || !p->assigned)
        return PARTITIONS_STALE;
    partitions_new_epoch(l, p);
    p->assigned = false;
    l->n_assigned--;
    return PARTITIONS_OK;
}

static partitions_rc_t partitions_rc(offset_tracker_rc_t rc)
{
    switch (rc) {
    case OFFSET_TRACKER_OK:
        return PARTITIONS_OK;
    case OFFSET_TRACKER_FULL:
        return PARTITIONS_FULL;
    case OFFSET_TRACKER_ORDER:
        return PARTITIONS_ORDER;
    case OFFSET_TRACKER_STALE:
        return PARTITIONS_STALE;
    case OFFSET_TRACKER_NOMEM:
        break;
    }
    return PARTITIONS_NOMEM;
}

/* The assigned partition with its tracker ready, or NULL with *rc set. */
static partition_t *partitions_tracking(partitions_t *l, int32_t partition, partitions_rc_t *rc)
{
    partition_t *p = partitions_get(l, partition);
    if (!p || !p->assigned) {
        *rc = PARTITIONS_STALE;
        return NULL;
    }
    if (!p->tracker) {
        if (offset_tracker_init(&p->tr, l->max_inflight)) {
            *rc = PARTITIONS_NOMEM;
            return NULL;
        }
        p->tracker = true;
    }
    return p;
}

partitions_rc_t partitions_track(partitions_t *l, int32_t partition, int64_t offset,
                                 uint64_t *ticket)
{
    partitions_rc_t rc;
    partition_t *p = partitions_tracking(l, partition, &rc);
    if (!p)
        return rc;
    rc = partitions_rc(offset_tracker_take(&p->tr, offset, ticket));
    if (rc == PARTITIONS_FULL)
        p->paused = true;
    return rc;
}

partitions_rc_t partitions_skip(partitions_t *l, int32_t partition, int64_t offset)
{
    partitions_rc_t rc;
    partition_t *p = partitions_tracking(l, partition, &rc);
    if (!p)
        return rc;
    rc = partitions_rc(offset_tracker_skip(&p->tr, offset));
    if (rc == PARTITIONS_FULL) {
        p->paused = true;
    } else if (rc == PARTITIONS_OK) {
        p->paused = p->paused && offset_tracker_full(&p->tr);
        partitions_set_dirty(l, partition, p);
    }
    return rc;
}

partitions_rc_t partitions_ack(partitions_t *l, int32_t partition, uint32_t epoch, uint64_t ticket)
{
    partition_t *p = partitions_get(l, partition);
    /* An acknowledgement of a partition revoked or re-assigned since: its record is read
     * again by the partition's owner from the committed offset. */
    if (!p || !p->assigned || p->epoch != epoch || !p->tracker ||
        offset_tracker_done(&p->tr, ticket) != OFFSET_TRACKER_OK) {
        l->stale_acks++;
        return PARTITIONS_STALE;
    }
    if (p->paused && !offset_tracker_full(&p->tr))
        p->paused = false;
    partitions_set_dirty(l, partition, p);
    return PARTITIONS_OK;
}

partitions_rc_t partitions_mark(partitions_t *l, int32_t partition, uint32_t epoch,
                                int64_t next_offset)
{
    partition_t *p = partitions_get(l, partition);
    if (!p || !p->assigned || p->epoch != epoch)
        return PARTITIONS_STALE;
    if (next_offset > p->marked) {
        p->marked = next_offset;
        partitions_set_dirty(l, partition, p);
    }
    return PARTITIONS_OK;
}

size_t partitions_store_each(partitions_t *l, partitions_store_fn fn, void *arg)
{
    size_t stored = 0, kept = 0;
    for (size_t i = 0; i < l->n_dirty; i++) {
        int32_t id = l->dirty[i];
        partition_t *p = l->parts[id];
        if (!p->assigned) {
            p->dirty = false;
            continue;
        }
        int64_t next = p->tracker ? offset_tracker_low_water(&p->tr) : -1;
        if (p->marked > next)
            next = p->marked;
        if (next < 0 || next <= p->stored) {
            p->dirty = false;
            continue;
        }
        if (fn(arg, id, next) != 0) {
            l->dirty[kept++] = id; /* offered again at the next store */
            continue;
        }
        p->stored = next;
        p->dirty = false;
        stored++;
    }
    l->n_dirty = kept;
    return stored;
}

typedef struct partitions_to_consumer {
    kafka_consumer_t *c;
    const char *topic;
} partitions_to_consumer_t;

static int partitions_store_consumer(void *arg, int32_t partition, int64_t next_offset)
{
    partitions_to_consumer_t *t = arg;
    return kafka_consumer_store(t->c, t->topic, partition, next_offset);
}

size_t partitions_store(partitions_t *l, kafka_consumer_t *c, const char *topic)
{
    if (l->n_dirty == 0 || !c)
        return 0;
    partitions_to_consumer_t t = {c, topic};
    return partitions_store_each(l, partitions_store_consumer, &t);
}

/* ---- queries ---- */

bool partitions_assigned(const partitions_t *l, int32_t partition)
{
    const partition_t *p = partitions_get(l, partition);
    return p && p->assigned;
}

uint32_t partitions_epoch(const partitions_t *l, int32_t partition)
{
    const partition_t *p = partitions_get(l, partition);
    return p ? p->epoch : 0;
}

size_t partitions_pending(const partitions_t *l, int32_t partition)
{
    const partition_t *p = partitions_get(l, partition);
    return p && p->tracker ? offset_tracker_pending(&p->tr) : 0;
}

int64_t partitions_low_water(const partitions_t *l, int32_t partition)
{
    const partition_t *p = partitions_get(l, partition);
    return p && p->tracker ? offset_tracker_low_water(&p->tr) : -1;
}

int64_t partitions_last_taken(const partitions_t *l, int32_t partition)
{
    const partition_t *p = partitions_get(l, partition);
    return p && p->tracker ? p->tr.last_taken : -1;
}

int64_t partitions_stored(const partitions_t *l, int32_t partition)
{
    const partition_t *p = partitions_get(l, partition);
    return p ? p->stored : -1;
}

bool partitions_paused(const partitions_t *l, int32_t partition)
{
    const partition_t *p = partitions_get(l, partition);
    return p && p->assigned && p->paused;
}

void *partitions_user(const partitions_t *l, int32_t partition)
{
    partition_t *p = partitions_get(l, partition);
    return p ? p->user : NULL;
}

size_t partitions_n_assigned(const partitions_t *l)
{
    return l->n_assigned;
}

int32_t partitions_next_assigned(const partitions_t *l, int32_t after)
{
    for (int32_t i = after < 0 ? 0 : after + 1; i < l->n_parts; i++)
        if (l->parts[i] && l->parts[i]->assigned)
            return i;
    return -1;
}

uint64_t partitions_stale_acks(const partitions_t *l)
{
    return l->stale_acks;
}
