/* libFuzzer target on the correlation engine (correlation/correlate.c), checked against a
 * reference model that keeps the same state the slow and obvious way.
 *
 * Input: one mode byte (bit 0: hold_until_ack with at most 3 held xDRs per partition), then
 * a sequence of 3-byte operations (b0 b1 b2), at most 1024 used; a trailing partial op is
 * ignored.
 *   b0 % 8 in 0..4  add a copy: correlation id "c<b1 % 48>", trigger 1 + (b2 & 3),
 *                   partition (b2 >> 2) & 3, NF type SCP when b2 & 0x10 else PCF
 *   b0 % 8 == 5     advance the clock by b1 * 50 ms, then correlate_expire
 *   b0 % 8 == 6     drain partition b1 & 3 (emit when b2 & 1, else hand over)
 *   b0 % 8 == 7     acknowledge held xDR number b2 % 3 of partition b1 & 3 (or, when there
 *                   is none, replay an old ticket, which must be refused)
 * The engine runs with max_open 6 per partition and a 1 s timeout, so evictions, timeouts
 * and index deletions (backward shift) happen constantly. After every operation the open
 * count (correlate_stats) and each partition's low-water offset must equal the model's, a
 * drain must report the partition's open count the model has (as must the hand-over drain of
 * every partition at the end of the input), and every emitted xDR must be the one
 * the model expects (same id, partition, completion, seen copies, first offset, ticket or
 * not); held xDRs count in the low-water mark until acknowledged. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "correlate.h"

#define FZ_IDS 48
#define FZ_PARTS 4
#define FZ_MAX_OPEN 6
#define FZ_TIMEOUT 1000000
#define FZ_MAX_HELD 3

typedef struct fz_txn {
    bool open;
    uint8_t seen;
    uint8_t nf;
    int64_t first_offset;
    int64_t opened;
    uint64_t order; /* arrival order within the partition */
} fz_txn_t;

typedef struct fz_expect {
    int part, id;
    xdr_completion_t how;
    uint8_t seen;
    int64_t first_offset;
    bool matched;
    int held; /* index in fz_held[part], or -1 when the xDR must come without a ticket */
} fz_expect_t;

typedef struct fz_held {
    bool used;
    int64_t first_offset;
    uint64_t ticket;
} fz_held_t;

static fz_txn_t fz_model[FZ_PARTS][FZ_IDS];
static fz_expect_t fz_queue[FZ_PARTS * FZ_IDS + 8];
static size_t fz_queued, fz_checked;
static uint64_t fz_order;
static bool fz_hold;
static fz_held_t fz_held[FZ_PARTS][FZ_MAX_HELD];
static uint64_t fz_stale_ticket;
static int fz_stale_part;

static uint8_t fz_expected(const fz_txn_t *t)
{
    const uint8_t all = 0x1e, rx = (1u << 1) | (1u << 4), tx = (1u << 2) | (1u << 3);
    if (t->nf == CODEC_NF_SCP)
        return all;
    bool r = t->seen & rx, x = t->seen & tx;
    return (r && !x) ? rx : (x && !r) ? tx : all;
}

static void fz_close(int p, int id, xdr_completion_t how)
{
    fz_txn_t *t = &fz_model[p][id];
    int h = -1;
    if (fz_hold && how != XDR_REVOKED) {
        for (int k = 0; k < FZ_MAX_HELD && h < 0; k++)
            if (!fz_held[p][k].used)
                h = k;
        if (h >= 0)
            fz_held[p][h] = (fz_held_t){true, t->first_offset, 0};
    }
    fz_queue[fz_queued++] = (fz_expect_t){p, id, how, t->seen, t->first_offset, false, h};
    t->open = false;
}

/* Emissions must follow the model in order within a partition; across partitions (expiry
 * walks them in the engine's own order) any interleaving is fine. */
static void fz_emit(void *opaque, const xdr_t *x)
{
    (void)opaque;
    fz_expect_t *e = NULL;
    for (size_t i = 0; i < fz_queued; i++) {
        if (!fz_queue[i].matched && fz_queue[i].part == x->partition) {
            e = &fz_queue[i];
            break;
        }
    }
    if (!e) {
        fprintf(stderr, "engine emitted an xDR the model did not expect\n");
        abort();
    }
    e->matched = true;
    fz_checked++;
    if ((e->held >= 0) != (x->ticket != 0)) {
        fprintf(stderr, "ticket %llx where the model says %s\n", (unsigned long long)x->ticket,
                e->held >= 0 ? "held" : "not held");
        abort();
    }
    if (e->held >= 0)
        fz_held[e->part][e->held].ticket = x->ticket;
    char cid[8];
    int n = snprintf(cid, sizeof cid, "c%d", e->id);
    if (x->completion != e->how || x->seen != e->seen || x->first_offset != e->first_offset ||
        x->s[XDR_S_CORRELATION_ID].len != (size_t)n ||
        memcmp(x->s[XDR_S_CORRELATION_ID].ptr, cid, (size_t)n) != 0) {
        fprintf(stderr,
                "xDR mismatch: got %.*s p%d %s seen %x off %lld, want %s p%d %s seen %x "
                "off %lld\n",
                (int)x->s[XDR_S_CORRELATION_ID].len, x->s[XDR_S_CORRELATION_ID].ptr, x->partition,
                xdr_completion_name(x->completion), x->seen, (long long)x->first_offset, cid,
                e->part, xdr_completion_name(e->how), e->seen, (long long)e->first_offset);
        abort();
    }
}

static int fz_oldest(int p)
{
    int best = -1;
    for (int i = 0; i < FZ_IDS; i++)
        if (fz_model[p][i].open && (best < 0 || fz_model[p][i].order < fz_model[p][best].order))
            best = i;
    return best;
}

static size_t fz_open(int p)
{
    size_t n = 0;
    for (int i = 0; i < FZ_IDS; i++)
        n += fz_model[p][i].open;
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    memset(fz_model, 0, sizeof fz_model);
    memset(fz_held, 0, sizeof fz_held);
    fz_queued = fz_checked = 0;
    fz_order = 0;
    fz_stale_ticket = 0;
    fz_hold = data[0] & 1;
    data++;
    size--;
    correlate_config_t cfg = {.max_open = FZ_MAX_OPEN,
                              .timeout_us = FZ_TIMEOUT,
                              .max_partitions = FZ_PARTS,
                              .hold_until_ack = fz_hold,
                              .max_held = FZ_MAX_HELD,
                              .emit = fz_emit};
    char err[128];
    correlate_t *c = correlate_new(&cfg, err, sizeof err);
    if (!c)
        abort();
    static codec_msg_t m;
    int64_t now = 0, offset[FZ_PARTS] = {0};

    for (size_t i = 0; i + 3 <= size && i < 3 * 1024; i += 3) {
        uint8_t op = data[i] % 8, b1 = data[i + 1], b2 = data[i + 2];
        fz_queued = fz_checked = 0;
        if (op <= 4) {
            int id = b1 % FZ_IDS, p = (b2 >> 2) & 3;
            codec_trigger_t trig = (codec_trigger_t)(1 + (b2 & 3));
            char cid[8];
            int n = snprintf(cid, sizeof cid, "c%d", id);
            memset(&m, 0, sizeof m);
            m.key = (codec_slice_t){cid, (size_t)n};
            m.meta[CODEC_META_CORRELATION_ID] = m.key;
            m.trigger = trig;
            m.nf = (b2 & 0x10) ? CODEC_NF_SCP : CODEC_NF_PCF;
            m.type = trig <= CODEC_TRIGGER_TX_REQUEST ? CODEC_MSG_REQUEST : CODEC_MSG_RESPONSE;
            m.timestamp_us = now;
            m.status = m.type == CODEC_MSG_RESPONSE ? 200 : 0;
            m.body = (codec_slice_t){"", 0};
            int64_t off = offset[p]++;
            /* Model first. */
            fz_txn_t *t = &fz_model[p][id];
            if (!t->open) {
                if (fz_open(p) >= FZ_MAX_OPEN) {
                    int old = fz_oldest(p);
                    fz_close(p, old, XDR_EVICTED);
                }
                *t = (fz_txn_t){.open = true,
                                .nf = (uint8_t)m.nf,
                                .first_offset = off,
                                .opened = now,
                                .order = fz_order++};
            }
            t->seen |= (uint8_t)(1u << trig);
            uint8_t want = fz_expected(t);
            if ((t->seen & want) == want)
                fz_close(p, id, XDR_COMPLETE);
            if (correlate_add(c, &m, p, off, now) != 0)
                abort();
        } else if (op == 5) {
            now += (int64_t)b1 * 50000;
            for (int p = 0; p < FZ_PARTS; p++) {
                int old;
                while ((old = fz_oldest(p)) >= 0 && now - fz_model[p][old].opened >= FZ_TIMEOUT)
                    fz_close(p, old, XDR_TIMEOUT);
            }
            if (correlate_expire(c, now) != fz_queued)
                abort();
        } else if (op == 6) {
            int p = b1 & 3;
            bool emit = b2 & 1;
            size_t open_before = fz_open(p);
            for (;;) {
                int old = fz_oldest(p);
                if (old < 0)
                    break;
                if (emit)
                    fz_close(p, old, XDR_REVOKED);
                else
                    fz_model[p][old].open = false;
            }
            if (correlate_drain_partition(
                    c, p, emit ? CORRELATE_DRAIN_EMIT : CORRELATE_DRAIN_HANDOVER) != open_before)
                abort();
            for (int k = 0; k < FZ_MAX_HELD; k++) {
                if (fz_held[p][k].used) {
                    fz_stale_ticket = fz_held[p][k].ticket;
                    fz_stale_part = p;
                }
                fz_held[p][k].used = false;
            }
        } else if (op == 7) {
            int p = b1 & 3, k = b2 % FZ_MAX_HELD;
            if (fz_held[p][k].used) {
                if (correlate_ack(c, p, fz_held[p][k].ticket) != 0)
                    abort();
                fz_held[p][k].used = false;
                fz_stale_ticket = fz_held[p][k].ticket;
                fz_stale_part = p;
            } else if (fz_stale_ticket && correlate_ack(c, fz_stale_part, fz_stale_ticket) != -1) {
                abort();
            }
        }
        if (fz_checked != fz_queued) {
            fprintf(stderr, "engine emitted %zu xDRs, model expected %zu\n", fz_checked, fz_queued);
            abort();
        }
        size_t open = 0;
        for (int p = 0; p < FZ_PARTS; p++)
            open += fz_open(p);
        if (correlate_stats(c).open != open)
            abort();
        for (int p = 0; p < FZ_PARTS; p++) {
            int old = fz_oldest(p);
            int64_t lw = old < 0 ? -1 : fz_model[p][old].first_offset;
            for (int k = 0; k < FZ_MAX_HELD; k++)
                if (fz_held[p][k].used && (lw < 0 || fz_held[p][k].first_offset < lw))
                    lw = fz_held[p][k].first_offset;
            if (correlate_low_water(c, p) != lw) {
                fprintf(stderr, "partition %d: low water %lld, model %lld\n", p,
                        (long long)correlate_low_water(c, p), (long long)lw);
                abort();
            }
        }
    }
    /* A hand-over emits nothing: each partition's count is what the model has open. */
    for (int p = 0; p < FZ_PARTS; p++)
        if (correlate_drain_partition(c, p, CORRELATE_DRAIN_HANDOVER) != fz_open(p))
            abort();
    correlate_free(c);
    return 0;
}
