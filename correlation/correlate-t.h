/* Types of the correlation engine (correlation/correlate.h; design: docs/xdr.md).
 *
 * One correlate_t serves one consume loop (one thread): every partition it is assigned has
 * its own bounded transaction table, so no state is shared across partitions or workers. */
#ifndef NDD_CORRELATE_T_H
#define NDD_CORRELATE_T_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec-t.h"
#include "xdr.h"

/* Receives every finished xDR. The xdr_t and its slices are valid during the call only. */
typedef void (*correlate_emit_fn)(void *opaque, const xdr_t *x);

/* Which copies make a transaction complete, per NF type. */
typedef enum correlate_expect {
    /* Two copies of one side: rx-request + tx-response (the NF answered) or tx-request +
     * rx-response (the NF asked). Default for NRF, BSF, PCF, NON_NF. */
    CORRELATE_EXPECT_ENDPOINT = 0,
    /* All four copies (a proxy: SCP, SEPP). */
    CORRELATE_EXPECT_PROXY,
} correlate_expect_t;

/* What to do with the open transactions of a partition that is drained. */
typedef enum correlate_drain {
    /* Emit each as an incomplete xDR (completion "revoked"). */
    CORRELATE_DRAIN_EMIT = 0,
    /* Drop them, counting them as handed over: the caller stored offsets only up to the
     * partition's low-water mark, so the next owner re-reads and rebuilds them. */
    CORRELATE_DRAIN_HANDOVER,
} correlate_drain_t;

#define CORRELATE_DEFAULT_MAX_OPEN 100000u
#define CORRELATE_DEFAULT_TIMEOUT_US 5000000
#define CORRELATE_DEFAULT_STR_AREA 320u
#define CORRELATE_DEFAULT_MAX_PARTITIONS 4096u
#define CORRELATE_CHUNK_SLOTS 4096u

typedef struct correlate_config {
    uint32_t max_open;       /* open transactions per partition; 0: CORRELATE_DEFAULT_MAX_OPEN */
    int64_t timeout_us;      /* from the first copy's arrival; 0: 5 s */
    uint32_t str_area;       /* bytes of text kept per transaction (ids, FQDNs, path...); 0:
                                CORRELATE_DEFAULT_STR_AREA; at most 4096 */
    uint32_t max_partitions; /* partition ids 0..max-1 accepted; 0: 4096 */
    bool preallocate;        /* allocate max_open slots when a partition is first seen
                                (instead of CORRELATE_CHUNK_SLOTS at a time) */
    /* Keep each emitted transaction in its partition's low-water mark until the caller
     * confirms with correlate_ack(x->ticket) that its xDR was written (delivery report), so
     * offsets are never stored past an xDR still in flight. */
    bool hold_until_ack;
    uint32_t max_held; /* held xDRs per partition (extra slots); 0: max_open. When full, an
                          xDR is emitted with ticket 0 (not held) and counted as unheld. */
    bool expect_set;   /* false: defaults (SCP, SEPP proxy; the others endpoint) */
    correlate_expect_t expect[CODEC_NF__COUNT];
    xdr_subscriber_opts_t subscriber; /* zero: path and body, 4096 bytes of body */
    bool subscriber_set;              /* false: use the default above */
    correlate_emit_fn emit;
    void *opaque;
} correlate_config_t;

/* Totals since creation. */
typedef struct correlate_stats {
    uint64_t copies;     /* copies given to correlate_add and accepted */
    uint64_t rejected;   /* copies refused (bad partition, trigger unknown, out of memory) */
    uint64_t duplicates; /* copies of a trigger point a transaction already had */
    uint64_t emitted[XDR_COMPLETION__COUNT]; /* xDRs by completion */
    uint64_t handed_over;  /* open transactions dropped by a CORRELATE_DRAIN_HANDOVER */
    uint64_t truncated;    /* xDRs whose text did not fit the slot */
    uint64_t open;         /* open transactions now, all partitions */
    uint64_t held;         /* emitted xDRs waiting for correlate_ack, all partitions */
    uint64_t unheld;       /* xDRs emitted without a ticket because max_held was reached */
    uint64_t stale_acks;   /* correlate_ack calls with an unknown or old ticket */
    uint64_t partitions;   /* partitions with a table now */
    uint64_t memory_bytes; /* bytes allocated for tables now */
} correlate_stats_t;

typedef struct correlate correlate_t;

#endif
