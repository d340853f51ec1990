/* Correlation engine: partition-local, bounded transaction tables; docs/xdr.md. */
#include "correlate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define CORR_NIL UINT32_MAX
#define CORR_OPEN 0
#define CORR_HELD 1 /* emitted, in the FIFO (low-water mark) until correlate_ack */
#define CORR_ABSENT UINT16_MAX
#define CORR_NO_BYTES UINT32_MAX
#define CORR_MAX_STR_AREA 4096u
/* Text bytes kept free for fields that arrive with later copies (e.g. the producer FQDN on the
 * response) when a long path would otherwise take the whole area. */
#define CORR_PATH_RESERVE 96u
#define CORR_ALL_COPIES                                                                            \
    ((1u << CODEC_TRIGGER_RX_REQUEST) | (1u << CODEC_TRIGGER_TX_REQUEST) |                         \
     (1u << CODEC_TRIGGER_RX_RESPONSE) | (1u << CODEC_TRIGGER_TX_RESPONSE))
#define CORR_SIDE_RX ((1u << CODEC_TRIGGER_RX_REQUEST) | (1u << CODEC_TRIGGER_TX_RESPONSE))
#define CORR_SIDE_TX ((1u << CODEC_TRIGGER_TX_REQUEST) | (1u << CODEC_TRIGGER_RX_RESPONSE))

/* One open transaction. Text lives in str[] (str_area bytes): the correlation id at offset 0,
 * then the other fields in arrival order; service/operation/SUPI/GPSI found in the path point
 * into the stored path instead of taking room of their own. */
typedef struct corr_slot {
    uint32_t prev, next; /* FIFO links; next is also the free-list link */
    uint32_t hash;
    uint16_t dups; /* saturates */
    uint16_t gen;  /* bumped when the slot is freed: stale tickets do not match */
    uint32_t req_bytes, resp_bytes;
    uint16_t str_used;
    uint16_t status;
    uint8_t seen;
    uint8_t nf;
    uint8_t flags;
    uint8_t state; /* CORR_OPEN or CORR_HELD */
    int64_t first_offset;
    int64_t opened_us;
    int64_t ts[4]; /* by codec_trigger_t - 1 */
    uint16_t off[XDR_S__COUNT];
    uint16_t len[XDR_S__COUNT];
    char str[];
} corr_slot_t;

typedef struct corr_part {
    int32_t id;
    uint32_t active_pos; /* index in correlate_t.active */
    uint32_t open;
    uint32_t held;
    uint16_t epoch;      /* of this table's life: tickets from before a drain do not match */
    uint32_t head, tail; /* oldest, newest (open and held, in arrival order) */
    uint32_t free_head;
    uint32_t n_slots; /* slots allocated (all chunks) */
    uint32_t n_chunks;
    uint32_t chunk_slots;
    uint8_t **chunks;
    /* Hash index: (hash << 32) | (slot + 1); 0 is an empty entry. */
    uint64_t *index;
    uint32_t index_mask;
    uint32_t index_max; /* capacity ceiling: load stays <= 1/2 at max_open */
} corr_part_t;

struct correlate {
    correlate_config_t cfg;
    size_t stride;      /* bytes per slot */
    uint32_t cap_slots; /* per partition: max_open (+ max_held) */
    uint16_t next_epoch;
    corr_part_t **parts;
    int32_t *active;
    uint32_t n_active;
    correlate_stats_t st;
    xdr_t scratch;
};

/* ---- helpers ---- */

static uint32_t corr_hash(const char *p, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        h = (h ^ v) * 0xff51afd7ed558ccdull;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    uint64_t v = 0;
    memcpy(&v, p, n);
    h = (h ^ v) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 32;
    return (uint32_t)h;
}

static uint32_t pow2_at_least(uint64_t n)
{
    uint64_t p = 16;
    while (p < n)
        p <<= 1;
    return (uint32_t)p;
}

static inline corr_slot_t *slot_at(const correlate_t *c, const corr_part_t *p, uint32_t i)
{
    return (corr_slot_t *)(p->chunks[i / p->chunk_slots] +
                           (size_t)(i % p->chunk_slots) * c->stride);
}

/* ---- lifecycle ---- */

correlate_t *correlate_new(const correlate_config_t *cfg, char *err, size_t errlen)
{
    correlate_config_t k = *cfg;
    if (!k.max_open)
        k.max_open = CORRELATE_DEFAULT_MAX_OPEN;
    if (!k.timeout_us)
        k.timeout_us = CORRELATE_DEFAULT_TIMEOUT_US;
    if (!k.str_area)
        k.str_area = CORRELATE_DEFAULT_STR_AREA;
    if (!k.max_partitions)
        k.max_partitions = CORRELATE_DEFAULT_MAX_PARTITIONS;
    if (!k.max_held)
        k.max_held = k.max_open;
    if (!k.hold_until_ack)
        k.max_held = 0;
    if (!k.expect_set) {
        for (int i = 0; i < CODEC_NF__COUNT; i++)
            k.expect[i] = CORRELATE_EXPECT_ENDPOINT;
        k.expect[CODEC_NF_SCP] = CORRELATE_EXPECT_PROXY;
        k.expect[CODEC_NF_SEPP] = CORRELATE_EXPECT_PROXY;
    }
    if (!k.subscriber_set)
        k.subscriber = (xdr_subscriber_opts_t){.from_path = true, .from_body = true};
    if (!k.emit) {
        snprintf(err, errlen, "correlation: no emit callback");
        return NULL;
    }
    if (k.timeout_us < 0) {
        snprintf(err, errlen, "correlation: timeout must be positive");
        return NULL;
    }
    if (k.max_open > (1u << 30) || k.max_held > (1u << 30)) {
        snprintf(err, errlen, "correlation: max open transactions %u above %u per partition",
                 k.max_open, 1u << 30);
        return NULL;
    }
    if (k.str_area < CODEC_MAX_KEY + 16 || k.str_area > CORR_MAX_STR_AREA) {
        snprintf(err, errlen, "correlation: text area %u outside %u..%u bytes", k.str_area,
                 CODEC_MAX_KEY + 16, CORR_MAX_STR_AREA);
        return NULL;
    }
    if (k.max_partitions > (1u << 20)) {
        snprintf(err, errlen, "correlation: max partitions %u above %u", k.max_partitions,
                 1u << 20);
        return NULL;
    }
    correlate_t *c = calloc(1, sizeof *c);
    if (c) {
        c->parts = calloc(k.max_partitions, sizeof *c->parts);
        c->active = calloc(k.max_partitions, sizeof *c->active);
    }
    if (!c || !c->parts || !c->active) {
        if (c) {
            free(c->parts);
            free(c->active);
        }
        free(c);
        snprintf(err, errlen, "correlation: out of memory");
        return NULL;
    }
    c->cfg = k;
    c->cap_slots = k.max_open + k.max_held;
    c->next_epoch = 1;
    c->stride = (sizeof(corr_slot_t) + k.str_area + 7) & ~(size_t)7;
    c->st.memory_bytes = k.max_partitions * (sizeof *c->parts + sizeof *c->active);
    return c;
}

static void part_free(correlate_t *c, corr_part_t *p)
{
    for (uint32_t i = 0; i < p->n_chunks; i++)
        free(p->chunks[i]);
    c->st.memory_bytes -= (uint64_t)p->n_slots * c->stride;
    c->st.memory_bytes -= (uint64_t)(p->index_mask + 1) * sizeof *p->index;
    c->st.memory_bytes -=
        sizeof *p + (uint64_t)(c->cap_slots / p->chunk_slots + 1) * sizeof(uint8_t *);
    free(p->chunks);
    free(p->index);
    free(p);
}

void correlate_free(correlate_t *c)
{
    if (!c)
        return;
    for (uint32_t i = 0; i < c->n_active; i++)
        part_free(c, c->parts[c->active[i]]);
    free(c->parts);
    free(c->active);
    free(c);
}

static corr_part_t *part_get(correlate_t *c, int32_t id, bool create)
{
    if (id < 0 || (uint32_t)id >= c->cfg.max_partitions)
        return NULL;
    corr_part_t *p = c->parts[id];
    if (p || !create)
        return p;
    p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->id = id;
    p->epoch = c->next_epoch++;
    if (!c->next_epoch)
        c->next_epoch = 1; /* tickets are never 0 */
    p->head = p->tail = p->free_head = CORR_NIL;
    p->chunk_slots = c->cfg.preallocate ? c->cap_slots : CORRELATE_CHUNK_SLOTS;
    if (p->chunk_slots > c->cap_slots)
        p->chunk_slots = c->cap_slots;
    uint32_t max_chunks = c->cap_slots / p->chunk_slots + 1;
    p->chunks = calloc(max_chunks, sizeof *p->chunks);
    p->index_max = pow2_at_least(2 * (uint64_t)c->cfg.max_open);
    uint32_t cap = pow2_at_least(2 * (uint64_t)p->chunk_slots);
    p->index = calloc(cap, sizeof *p->index);
    if (!p->chunks || !p->index) {
        free(p->chunks);
        free(p->index);
        free(p);
        return NULL;
    }
    p->index_mask = cap - 1;
    c->st.memory_bytes +=
        sizeof *p + (uint64_t)max_chunks * sizeof *p->chunks + (uint64_t)cap * sizeof *p->index;
    p->active_pos = c->n_active;
    c->active[c->n_active++] = id;
    c->parts[id] = p;
    c->st.partitions++;
    return p;
}

/* ---- hash index ---- */

static uint32_t index_find(const correlate_t *c, const corr_part_t *p, uint32_t h, const char *cid,
                           size_t len, uint32_t *pos)
{
    uint32_t i = h & p->index_mask;
    for (;;) {
        uint64_t e = p->index[i];
        if (!e) {
            *pos = i;
            return CORR_NIL;
        }
        if ((uint32_t)(e >> 32) == h) {
            uint32_t si = (uint32_t)e - 1;
            const corr_slot_t *s = slot_at(c, p, si);
            if (s->len[XDR_S_CORRELATION_ID] == len && memcmp(s->str, cid, len) == 0) {
                *pos = i;
                return si;
            }
        }
        i = (i + 1) & p->index_mask;
    }
}

static void index_put(corr_part_t *p, uint32_t h, uint32_t si)
{
    uint32_t i = h & p->index_mask;
    while (p->index[i])
        i = (i + 1) & p->index_mask;
    p->index[i] = ((uint64_t)h << 32) | (si + 1);
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
static void index_del(corr_part_t *p, uint32_t h, uint32_t si)
{
    uint32_t mask = p->index_mask;
    uint32_t i = h & mask;
    uint64_t want = ((uint64_t)h << 32) | (si + 1);
    while (p->index[i] != want)
        i = (i + 1) & mask;
    p->index[i] = 0;
    uint32_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        uint64_t e = p->index[j];
        if (!e)
            return;
        uint32_t home = (uint32_t)(e >> 32) & mask;
        /* e may move to the hole at i unless its home lies cyclically in (i, j]. */
        bool stays = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            p->index[i] = e;
            p->index[j] = 0;
            i = j;
        }
    }
}

static int index_grow(correlate_t *c, corr_part_t *p)
{
    uint32_t cap = (p->index_mask + 1) * 2;
    uint64_t *n = calloc(cap, sizeof *n);
    if (!n)
        return -1;
    uint64_t *old = p->index;
    uint32_t old_cap = p->index_mask + 1;
    p->index = n;
    p->index_mask = cap - 1;
    for (uint32_t i = 0; i < old_cap; i++)
        if (old[i])
            index_put(p, (uint32_t)(old[i] >> 32), (uint32_t)old[i] - 1);
    free(old);
    c->st.memory_bytes += (uint64_t)(cap - old_cap) * sizeof *n;
    return 0;
}

/* ---- slots ---- */

static uint32_t slot_alloc(correlate_t *c, corr_part_t *p)
{
    if (p->free_head == CORR_NIL) {
        if (p->n_slots >= c->cap_slots)
            return CORR_NIL;
        uint32_t n = p->chunk_slots;
        if (n > c->cap_slots - p->n_slots)
            n = c->cap_slots - p->n_slots;
        uint8_t *chunk = malloc((size_t)n * c->stride);
        if (!chunk)
            return CORR_NIL;
        p->chunks[p->n_chunks++] = chunk;
        uint32_t base = p->n_slots;
        p->n_slots += n;
        c->st.memory_bytes += (uint64_t)n * c->stride;
        for (uint32_t i = n; i-- > 0;) {
            slot_at(c, p, base + i)->next = p->free_head;
            p->free_head = base + i;
        }
    }
    uint32_t si = p->free_head;
    p->free_head = slot_at(c, p, si)->next;
    return si;
}

static void fifo_unlink(correlate_t *c, corr_part_t *p, corr_slot_t *s)
{
    if (s->prev != CORR_NIL)
        slot_at(c, p, s->prev)->next = s->next;
    else
        p->head = s->next;
    if (s->next != CORR_NIL)
        slot_at(c, p, s->next)->prev = s->prev;
    else
        p->tail = s->prev;
}

static void slot_free(correlate_t *c, corr_part_t *p, uint32_t si)
{
    corr_slot_t *s = slot_at(c, p, si);
    fifo_unlink(c, p, s);
    s->gen++;
    s->state = CORR_OPEN;
    s->next = p->free_head;
    p->free_head = si;
}

/* Oldest transaction still open (held ones are skipped: at most max_held of them). */
static uint32_t oldest_open(const correlate_t *c, const corr_part_t *p)
{
    uint32_t si = p->head;
    while (si != CORR_NIL && slot_at(c, p, si)->state == CORR_HELD)
        si = slot_at(c, p, si)->next;
    return si;
}

static uint8_t expected_copies(const correlate_t *c, const corr_slot_t *s)
{
    if (c->cfg.expect[s->nf] == CORRELATE_EXPECT_PROXY)
        return CORR_ALL_COPIES;
    bool rx = s->seen & CORR_SIDE_RX, tx = s->seen & CORR_SIDE_TX;
    if (rx && !tx)
        return CORR_SIDE_RX;
    if (tx && !rx)
        return CORR_SIDE_TX;
    return CORR_ALL_COPIES; /* both sides seen: the NF acted as a proxy, wait for all four */
}

static int64_t slot_ts(const corr_slot_t *s, codec_trigger_t t)
{
    return (s->seen & (1u << t)) ? s->ts[t - 1] : XDR_NONE;
}

/* Emits the slot's xDR, then frees the slot or, with hold_until_ack, keeps it in the FIFO
 * (so in the low-water mark) until correlate_ack. */
static void slot_finish(correlate_t *c, corr_part_t *p, uint32_t si, xdr_completion_t how)
{
    corr_slot_t *s = slot_at(c, p, si);
    xdr_t *x = &c->scratch;
    for (int i = 0; i < XDR_S__COUNT; i++)
        x->s[i] = s->off[i] == CORR_ABSENT ? (codec_slice_t){0}
                                           : (codec_slice_t){s->str + s->off[i], s->len[i]};
    x->nf = (codec_nf_t)s->nf;
    x->completion = how;
    x->seen = s->seen;
    x->missing = expected_copies(c, s) & (uint8_t)~s->seen;
    x->flags = s->flags;
    x->status_code = s->status;
    x->duplicates = s->dups;
    x->ts_us[0] = XDR_NONE;
    for (int t = CODEC_TRIGGER_RX_REQUEST; t < CODEC_TRIGGER__COUNT; t++)
        x->ts_us[t] = slot_ts(s, (codec_trigger_t)t);
    int64_t a = x->ts_us[CODEC_TRIGGER_RX_REQUEST], b = x->ts_us[CODEC_TRIGGER_TX_RESPONSE];
    x->latency_rx_us = (a != XDR_NONE && b != XDR_NONE) ? b - a : XDR_NONE;
    a = x->ts_us[CODEC_TRIGGER_TX_REQUEST];
    b = x->ts_us[CODEC_TRIGGER_RX_RESPONSE];
    x->latency_tx_us = (a != XDR_NONE && b != XDR_NONE) ? b - a : XDR_NONE;
    x->request_bytes = s->req_bytes == CORR_NO_BYTES ? XDR_NONE : (int64_t)s->req_bytes;
    x->response_bytes = s->resp_bytes == CORR_NO_BYTES ? XDR_NONE : (int64_t)s->resp_bytes;
    x->partition = p->id;
    x->first_offset = s->first_offset;

    /* A revoked xDR is not held: its partition's table is about to go. */
    bool hold = c->cfg.hold_until_ack && how != XDR_REVOKED;
    if (hold && p->held >= c->cfg.max_held) {
        hold = false;
        c->st.unheld++;
    }
    x->ticket = hold ? ((uint64_t)p->epoch << 48) | ((uint64_t)s->gen << 32) | si : 0;

    c->st.emitted[how]++;
    if (s->flags & XDR_FLAG_TRUNCATED)
        c->st.truncated++;
    c->cfg.emit(c->cfg.opaque, x);

    /* Out of the index either way: a later copy with the same id opens a new transaction. */
    index_del(p, s->hash, si);
    p->open--;
    c->st.open--;
    if (hold) {
        s->state = CORR_HELD;
        p->held++;
        c->st.held++;
    } else {
        slot_free(c, p, si);
    }
}

/* ---- text fields ---- */

static void str_set(corr_slot_t *s, uint32_t area, xdr_str_t f, codec_slice_t v, size_t cap)
{
    if (!v.ptr || s->off[f] != CORR_ABSENT)
        return;
    size_t avail = area - s->str_used;
    size_t n = v.len;
    if (n > cap)
        n = cap;
    if (n > avail) {
        s->flags |= XDR_FLAG_TRUNCATED;
        return;
    }
    if (n < v.len)
        s->flags |= XDR_FLAG_TRUNCATED;
    memcpy(s->str + s->str_used, v.ptr, n);
    s->off[f] = s->str_used;
    s->len[f] = (uint16_t)n;
    s->str_used = (uint16_t)(s->str_used + n);
}

/* A field found inside the (full) path: point into the stored prefix when it is there. */
static void str_set_in_path(corr_slot_t *s, uint32_t area, xdr_str_t f, codec_slice_t v,
                            codec_slice_t path)
{
    if (!v.ptr || s->off[f] != CORR_ABSENT)
        return;
    size_t at = (size_t)(v.ptr - path.ptr);
    if (s->off[XDR_S_PATH] != CORR_ABSENT && at + v.len <= s->len[XDR_S_PATH]) {
        s->off[f] = (uint16_t)(s->off[XDR_S_PATH] + at);
        s->len[f] = (uint16_t)v.len;
        return;
    }
    str_set(s, area, f, v, SIZE_MAX);
}

static void absorb_text(correlate_t *c, corr_slot_t *s, const codec_msg_t *m)
{
    uint32_t area = c->cfg.str_area;
    static const struct {
        xdr_str_t f;
        codec_meta_t m;
    } metas[] = {
        {XDR_S_NF_INSTANCE, CODEC_META_NF_INSTANCE},
        {XDR_S_CONSUMER_ID, CODEC_META_CONSUMER_ID},
        {XDR_S_PRODUCER_ID, CODEC_META_PRODUCER_ID},
        {XDR_S_CONSUMER_FQDN, CODEC_META_CONSUMER_FQDN},
        {XDR_S_PRODUCER_FQDN, CODEC_META_PRODUCER_FQDN},
    };
    str_set(s, area, XDR_S_METHOD, m->method, SIZE_MAX);
    for (size_t i = 0; i < sizeof metas / sizeof metas[0]; i++)
        str_set(s, area, metas[i].f, m->meta[metas[i].m], SIZE_MAX);

    if (m->path.ptr && s->off[XDR_S_PATH] == CORR_ABSENT) {
        size_t avail = area - s->str_used;
        size_t cap = avail > CORR_PATH_RESERVE ? avail - CORR_PATH_RESERVE : 0;
        str_set(s, area, XDR_S_PATH, m->path, cap);
        codec_slice_t svc, op, supi = {0}, gpsi = {0};
        xdr_path_service(m->path.ptr, m->path.len, &svc, &op);
        str_set_in_path(s, area, XDR_S_SERVICE, svc, m->path);
        str_set_in_path(s, area, XDR_S_OPERATION, op, m->path);
        if (c->cfg.subscriber.from_path) {
            xdr_find_subscriber_path(m->path.ptr, m->path.len, &supi, &gpsi);
            str_set_in_path(s, area, XDR_S_SUPI, supi, m->path);
            str_set_in_path(s, area, XDR_S_GPSI, gpsi, m->path);
        }
    }
    if (c->cfg.subscriber.from_body && m->body.len > 0 &&
        (s->off[XDR_S_SUPI] == CORR_ABSENT || s->off[XDR_S_GPSI] == CORR_ABSENT)) {
        codec_slice_t supi = {0}, gpsi = {0};
        if (s->off[XDR_S_SUPI] != CORR_ABSENT)
            supi.ptr = ""; /* already known: do not search */
        if (s->off[XDR_S_GPSI] != CORR_ABSENT)
            gpsi.ptr = "";
        xdr_find_subscriber_body(m->body.ptr, m->body.len, c->cfg.subscriber.body_scan, &supi,
                                 &gpsi);
        if (s->off[XDR_S_SUPI] == CORR_ABSENT)
            str_set(s, area, XDR_S_SUPI, supi, SIZE_MAX);
        if (s->off[XDR_S_GPSI] == CORR_ABSENT)
            str_set(s, area, XDR_S_GPSI, gpsi, SIZE_MAX);
    }
}

/* ---- the engine ---- */

int correlate_add(correlate_t *c, const codec_msg_t *m, int32_t partition, int64_t offset,
                  int64_t now_us)
{
    codec_slice_t cid = m->key.ptr ? m->key : m->meta[CODEC_META_CORRELATION_ID];
    if (m->trigger <= CODEC_TRIGGER_UNKNOWN || m->trigger >= CODEC_TRIGGER__COUNT || !cid.ptr ||
        cid.len == 0 || cid.len > CODEC_MAX_KEY || (unsigned)m->nf >= CODEC_NF__COUNT) {
        c->st.rejected++;
        return -1;
    }
    corr_part_t *p = part_get(c, partition, true);
    if (!p) {
        c->st.rejected++;
        return -1;
    }
    uint32_t h = corr_hash(cid.ptr, cid.len);
    uint32_t pos;
    uint32_t si = index_find(c, p, h, cid.ptr, cid.len, &pos);
    corr_slot_t *s;
    if (si == CORR_NIL) {
        if (p->open >= c->cfg.max_open)
            slot_finish(c, p, oldest_open(c, p), XDR_EVICTED); /* oldest first, never dropped */
        if ((uint64_t)(p->open + 1) * 2 > (uint64_t)p->index_mask + 1 &&
            p->index_mask + 1 < p->index_max && index_grow(c, p) != 0) {
            c->st.rejected++;
            return -1;
        }
        si = slot_alloc(c, p);
        if (si == CORR_NIL) {
            c->st.rejected++;
            return -1;
        }
        s = slot_at(c, p, si);
        uint16_t gen = s->gen;
        memset(s, 0, sizeof *s);
        s->gen = gen;
        for (int i = 0; i < XDR_S__COUNT; i++)
            s->off[i] = CORR_ABSENT;
        s->hash = h;
        s->req_bytes = s->resp_bytes = CORR_NO_BYTES;
        s->nf = (uint8_t)m->nf;
        s->first_offset = offset;
        s->opened_us = now_us;
        memcpy(s->str, cid.ptr, cid.len);
        s->off[XDR_S_CORRELATION_ID] = 0;
        s->len[XDR_S_CORRELATION_ID] = (uint16_t)cid.len;
        s->str_used = (uint16_t)cid.len;
        index_put(p, h, si);
        s->next = CORR_NIL;
        s->prev = p->tail;
        if (p->tail != CORR_NIL)
            slot_at(c, p, p->tail)->next = si;
        else
            p->head = si;
        p->tail = si;
        p->open++;
        c->st.open++;
    } else {
        s = slot_at(c, p, si);
    }
    c->st.copies++;

    uint8_t bit = (uint8_t)(1u << m->trigger);
    if (s->seen & bit) {
        if (s->dups < UINT16_MAX)
            s->dups++;
        c->st.duplicates++;
        return 0;
    }
    s->seen |= bit;
    s->ts[m->trigger - 1] = m->timestamp_us;
    if (m->type == CODEC_MSG_REQUEST) {
        if (s->req_bytes == CORR_NO_BYTES)
            s->req_bytes = (uint32_t)m->body.len;
    } else {
        if (s->resp_bytes == CORR_NO_BYTES)
            s->resp_bytes = (uint32_t)m->body.len;
        if (!s->status)
            s->status = (uint16_t)m->status;
    }
    absorb_text(c, s, m);

    uint8_t want = expected_copies(c, s);
    if ((s->seen & want) == want)
        slot_finish(c, p, si, XDR_COMPLETE);
    return 0;
}

size_t correlate_expire(correlate_t *c, int64_t now_us)
{
    size_t n = 0;
    for (uint32_t i = 0; i < c->n_active; i++) {
        corr_part_t *p = c->parts[c->active[i]];
        uint32_t si = p->head;
        while (si != CORR_NIL) {
            corr_slot_t *s = slot_at(c, p, si);
            uint32_t next = s->next; /* slot_finish may unlink s, never next */
            if (s->state == CORR_OPEN) {
                if (now_us - s->opened_us < c->cfg.timeout_us)
                    break; /* arrival order: every later one is younger */
                slot_finish(c, p, si, XDR_TIMEOUT);
                n++;
            }
            si = next;
        }
    }
    return n;
}

int64_t correlate_low_water(const correlate_t *c, int32_t partition)
{
    if (partition < 0 || (uint32_t)partition >= c->cfg.max_partitions)
        return -1;
    const corr_part_t *p = c->parts[partition];
    if (!p || p->head == CORR_NIL)
        return -1;
    return slot_at(c, p, p->head)->first_offset;
}

int64_t correlate_committable(const correlate_t *c, int32_t partition, int64_t next_offset)
{
    int64_t lw = correlate_low_water(c, partition);
    return (lw >= 0 && lw < next_offset) ? lw : next_offset;
}

int correlate_ack(correlate_t *c, int32_t partition, uint64_t ticket)
{
    if (!ticket)
        return 0;
    corr_part_t *p = part_get(c, partition, false);
    uint32_t si = (uint32_t)ticket;
    if (!p || (uint16_t)(ticket >> 48) != p->epoch || si >= p->n_slots) {
        c->st.stale_acks++;
        return -1;
    }
    corr_slot_t *s = slot_at(c, p, si);
    if (s->state != CORR_HELD || s->gen != (uint16_t)(ticket >> 32)) {
        c->st.stale_acks++;
        return -1;
    }
    slot_free(c, p, si);
    p->held--;
    c->st.held--;
    return 0;
}

size_t correlate_drain_partition(correlate_t *c, int32_t partition, correlate_drain_t mode)
{
    corr_part_t *p = part_get(c, partition, false);
    if (!p)
        return 0;
    size_t n = p->open;
    if (mode == CORRELATE_DRAIN_EMIT) {
        uint32_t si;
        while ((si = oldest_open(c, p)) != CORR_NIL)
            slot_finish(c, p, si, XDR_REVOKED);
    } else {
        c->st.handed_over += p->open;
        c->st.open -= p->open;
    }
    /* Held xDRs are forgotten: their late acks are stale, and the offsets stored so far are
     * below them, so the next owner re-reads their copies if they never got written. */
    c->st.held -= p->held;
    uint32_t pos = p->active_pos;
    c->active[pos] = c->active[--c->n_active];
    c->parts[c->active[pos]]->active_pos = pos;
    c->parts[partition] = NULL;
    c->st.partitions--;
    part_free(c, p);
    return n;
}

size_t correlate_drain_all(correlate_t *c, correlate_drain_t mode)
{
    size_t n = 0;
    while (c->n_active > 0)
        n += correlate_drain_partition(c, c->active[c->n_active - 1], mode);
    return n;
}

correlate_stats_t correlate_stats(const correlate_t *c)
{
    return c->st;
}

/* ---- KPIs ---- */

#define CORR_METRICS_CACHE 1024u
#define CORR_METRICS_PROBES 8u

typedef struct corr_metrics_entry {
    bool used;
    uint8_t nf;
    uint8_t completion;
    uint16_t status;
    char service[48];
    metrics_counter_t *txn;
    metrics_histogram_t *lat_rx, *lat_tx;
} corr_metrics_entry_t;

struct correlate_metrics {
    metrics_family_t *txn, *lat, *missing;
    metrics_gauge_t *open, *held;
    metrics_counter_t *dups, *handed;
    uint64_t last_dups, last_handed;
    metrics_counter_t *missing_c[CODEC_NF__COUNT][CODEC_TRIGGER__COUNT];
    corr_metrics_entry_t cache[CORR_METRICS_CACHE];
};

correlate_metrics_t *correlate_metrics_new(metrics_registry_t *r, const char *nf_label)
{
    correlate_metrics_t *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->txn = metrics_counter_new(r, "ndd_correlation_transactions_total",
                                 "Correlated transactions (xDRs) by service, status and completion",
                                 "nf_type,service,status_code,completion");
    m->lat = metrics_histogram_new(
        r, "ndd_correlation_transaction_latency_seconds",
        "Request-to-response latency per service at each side of the NF (rx: rx-request to "
        "tx-response, tx: tx-request to rx-response)",
        "nf_type,service,side", metrics_latency_buckets_seconds, metrics_latency_buckets_seconds_n);
    m->missing = metrics_counter_new(r, "ndd_correlation_messages_missing_total",
                                     "Expected copies that never arrived, by trigger point",
                                     "nf_type,trigger_point");
    metrics_family_t *open = metrics_gauge_new(r, "ndd_correlation_transactions_open",
                                               "Transactions waiting for copies", "nf_type");
    metrics_family_t *held = metrics_gauge_new(
        r, "ndd_correlation_xdrs_unacknowledged",
        "Emitted xDRs whose produce is not acknowledged yet (hold_until_ack)", "nf_type");
    metrics_family_t *dups =
        metrics_counter_new(r, "ndd_correlation_messages_duplicated_total",
                            "Copies of a trigger point seen twice (replays)", "nf_type");
    metrics_family_t *handed = metrics_counter_new(
        r, "ndd_correlation_transactions_handed_over_total",
        "Open transactions left to the next partition owner on rebalance", "nf_type");
    if (!m->txn || !m->lat || !m->missing || !open || !dups || !handed || !held ||
        !(m->open = metrics_gauge_labels(open, nf_label)) ||
        !(m->held = metrics_gauge_labels(held, nf_label)) ||
        !(m->dups = metrics_counter_labels(dups, nf_label)) ||
        !(m->handed = metrics_counter_labels(handed, nf_label))) {
        free(m);
        return NULL;
    }
    return m;
}

void correlate_metrics_free(correlate_metrics_t *m)
{
    free(m);
}

void correlate_metrics_observe(correlate_metrics_t *m, const xdr_t *x)
{
    char service[48];
    const codec_slice_t *sv = &x->s[XDR_S_SERVICE];
    if (sv->ptr && sv->len > 0) {
        size_t n = sv->len < sizeof service - 1 ? sv->len : sizeof service - 1;
        memcpy(service, sv->ptr, n);
        service[n] = '\0';
    } else {
        snprintf(service, sizeof service, "unknown");
    }
    uint32_t h = corr_hash(service, strlen(service)) ^ (uint32_t)x->status_code * 31u ^
                 (uint32_t)x->completion * 7919u ^ (uint32_t)x->nf * 104729u;
    corr_metrics_entry_t *e = NULL, tmp;
    for (uint32_t k = 0; k < CORR_METRICS_PROBES; k++) {
        corr_metrics_entry_t *c = &m->cache[(h + k) & (CORR_METRICS_CACHE - 1)];
        if (c->used && c->nf == x->nf && c->completion == x->completion &&
            c->status == x->status_code && strcmp(c->service, service) == 0) {
            e = c;
            break;
        }
        if (!c->used) {
            e = c;
            break;
        }
    }
    if (!e || !e->used) {
        /* First sight of this label set (or a full cache: look it up every time). */
        if (!e)
            e = &tmp;
        char status[8];
        if (x->status_code)
            snprintf(status, sizeof status, "%d", x->status_code);
        else
            snprintf(status, sizeof status, "none");
        const char *nf = codec_nf_name(x->nf);
        e->txn =
            metrics_counter_labels(m->txn, nf, service, status, xdr_completion_name(x->completion));
        e->lat_rx = metrics_histogram_labels(m->lat, nf, service, "rx");
        e->lat_tx = metrics_histogram_labels(m->lat, nf, service, "tx");
        e->nf = (uint8_t)x->nf;
        e->completion = (uint8_t)x->completion;
        e->status = (uint16_t)x->status_code;
        snprintf(e->service, sizeof e->service, "%s", service);
        e->used = e->txn && e->lat_rx && e->lat_tx && e != &tmp;
        if (!e->txn || !e->lat_rx || !e->lat_tx)
            return;
    }
    metrics_counter_inc(e->txn);
    if (x->latency_rx_us != XDR_NONE && x->latency_rx_us >= 0)
        metrics_histogram_observe(e->lat_rx, (double)x->latency_rx_us / 1e6);
    if (x->latency_tx_us != XDR_NONE && x->latency_tx_us >= 0)
        metrics_histogram_observe(e->lat_tx, (double)x->latency_tx_us / 1e6);
    if (x->missing) {
        for (int t = CODEC_TRIGGER_RX_REQUEST; t < CODEC_TRIGGER__COUNT; t++) {
            if (!(x->missing & (1u << t)))
                continue;
            metrics_counter_t **mc = &m->missing_c[x->nf][t];
            if (!*mc)
                *mc = metrics_counter_labels(m->missing, codec_nf_name(x->nf),
                                             codec_trigger_name((codec_trigger_t)t));
            if (*mc)
                metrics_counter_inc(*mc);
        }
    }
}

void correlate_metrics_update(correlate_metrics_t *m, const correlate_t *c)
{
    metrics_gauge_set(m->open, (double)c->st.open);
    metrics_gauge_set(m->held, (double)c->st.held);
    metrics_counter_add(m->dups, c->st.duplicates - m->last_dups);
    m->last_dups = c->st.duplicates;
    metrics_counter_add(m->handed, c->st.handed_over - m->last_handed);
    m->last_handed = c->st.handed_over;
}
