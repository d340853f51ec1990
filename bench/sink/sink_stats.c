/* ndd-sink statistics: the sequence window, the latency histogram and the summary. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sink.h"

double sink_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int64_t sink_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- sequence window ---- */

int sink_seqwin_init(sink_seqwin_t *w, size_t bits)
{
    memset(w, 0, sizeof *w);
    if (bits < 64)
        bits = 64;
    w->nwords = (bits + 63) / 64;
    w->words = calloc(w->nwords, sizeof *w->words);
    return w->words ? 0 : -1;
}

void sink_seqwin_free(sink_seqwin_t *w)
{
    free(w->words);
    w->words = NULL;
}

static uint64_t *word_of(const sink_seqwin_t *w, uint64_t n)
{
    return &w->words[(n / 64) % w->nwords];
}

/* Unseen numbers of one word (starting at `start`) that are >= lo. */
static uint64_t unseen_in_word(uint64_t bits, uint64_t start, uint64_t lo)
{
    uint64_t mask = ~0ull;
    if (lo > start) {
        if (lo - start >= 64)
            return 0;
        mask <<= (lo - start);
    }
    return (uint64_t)__builtin_popcountll(~bits & mask);
}

/* Moves the window so that seq fits; unseen numbers that leave it count as missing. */
static void slide(sink_seqwin_t *w, uint64_t seq)
{
    uint64_t span = (uint64_t)w->nwords * 64;
    uint64_t nb = ((seq - span + 1 + 63) / 64) * 64;
    uint64_t start = w->base;
    uint64_t end_in_window = w->base + span; /* numbers past it were never in the window */
    uint64_t stop = nb < end_in_window ? nb : end_in_window;
    for (uint64_t s = start; s < stop; s += 64) {
        uint64_t *word = word_of(w, s);
        w->missing_slid += unseen_in_word(*word, s, w->min_seen);
        *word = 0;
    }
    if (nb > end_in_window) {
        /* Jumped past the whole window: every number in between was unseen (and above
         * min_seen, which is inside the old window). */
        w->missing_slid += nb - end_in_window;
        memset(w->words, 0, w->nwords * sizeof *w->words);
    }
    w->base = nb;
}

bool sink_seqwin_add(sink_seqwin_t *w, uint64_t seq)
{
    uint64_t span = (uint64_t)w->nwords * 64;
    if (!w->started) {
        w->started = true;
        /* Centre the first number: reordering around it in both directions fits. */
        w->base = (seq >= span / 2 ? seq - span / 2 : 0) & ~63ull;
        w->min_seen = w->max_seen = seq;
    }
    if (seq < w->base) {
        w->out_of_window++;
        return false;
    }
    if (seq - w->base >= span)
        slide(w, seq);
    uint64_t *word = word_of(w, seq);
    uint64_t bit = 1ull << (seq % 64);
    if (*word & bit) {
        w->duplicates++;
        return false;
    }
    *word |= bit;
    w->unique++;
    if (seq < w->min_seen)
        w->min_seen = seq;
    if (seq > w->max_seen)
        w->max_seen = seq;
    return true;
}

uint64_t sink_seqwin_gaps(const sink_seqwin_t *w)
{
    if (!w->started || w->unique == 0)
        return w->missing_slid;
    uint64_t lo = w->min_seen > w->base ? w->min_seen : w->base;
    uint64_t seen = 0;
    for (uint64_t s = lo & ~63ull; s <= w->max_seen; s += 64) {
        uint64_t bits = *word_of(w, s);
        uint64_t mask = ~0ull;
        if (s < lo)
            mask &= ~0ull << (lo - s);
        if (w->max_seen - s < 63)
            mask &= ~0ull >> (63 - (w->max_seen - s));
        seen += (uint64_t)__builtin_popcountll(bits & mask);
    }
    return w->missing_slid + (w->max_seen - lo + 1 - seen);
}

/* ---- latency ---- */

static size_t lat_index(uint64_t v)
{
    if (v < SINK_LAT_SUB)
        return (size_t)v;
    int p = 63 - __builtin_clzll(v); /* >= 4 */
    size_t idx = (size_t)(p - 3) * SINK_LAT_SUB + ((v >> (p - 4)) & (SINK_LAT_SUB - 1));
    size_t last = SINK_LAT_POW * SINK_LAT_SUB - 1;
    return idx > last ? last : idx;
}

static double lat_upper(size_t idx)
{
    if (idx < SINK_LAT_SUB)
        return (double)idx;
    int p = (int)(idx / SINK_LAT_SUB) + 3;
    uint64_t sub = idx % SINK_LAT_SUB;
    uint64_t lower = (SINK_LAT_SUB + sub) << (p - 4);
    return (double)(lower + (1ull << (p - 4)) - 1);
}

void sink_latency_add(sink_latency_t *l, int64_t us)
{
    if (us < 0) {
        l->negative++;
        us = 0;
    }
    uint64_t v = (uint64_t)us;
    l->counts[lat_index(v)]++;
    l->n++;
    l->sum_us += (double)v;
    if (v > l->max_us)
        l->max_us = v;
}

double sink_latency_quantile_us(const sink_latency_t *l, double q)
{
    if (l->n == 0)
        return 0;
    uint64_t rank = (uint64_t)ceil(q * (double)l->n);
    if (rank == 0)
        rank = 1;
    uint64_t acc = 0;
    for (size_t i = 0; i < SINK_LAT_POW * SINK_LAT_SUB; i++) {
        acc += l->counts[i];
        if (acc >= rank) {
            double u = lat_upper(i);
            return u > (double)l->max_us ? (double)l->max_us : u;
        }
    }
    return (double)l->max_us;
}

/* ---- whole ---- */

int sink_stats_init(sink_stats_t *s, size_t seq_window_bits, uint64_t expect)
{
    memset(s, 0, sizeof *s);
    s->expect = expect;
    s->start_s = sink_now_s();
    return sink_seqwin_init(&s->seq, seq_window_bits);
}

void sink_stats_free(sink_stats_t *s)
{
    sink_seqwin_free(&s->seq);
}

const char *sink_transport_name(sink_transport_t t)
{
    static const char *names[SINK__TRANSPORTS] = {"h2", "h2tls", "tcp", "tls"};
    return t < SINK__TRANSPORTS ? names[t] : "?";
}

int sink_stats_summary(const sink_stats_t *s, buf_t *out)
{
    uint64_t records = 0, bytes = 0, requests = 0, rejected = 0;
    for (int i = 0; i < SINK__TRANSPORTS; i++) {
        records += s->t[i].records;
        bytes += s->t[i].bytes;
        requests += s->t[i].requests;
        rejected += s->t[i].rejected;
    }
    const sink_seqwin_t *w = &s->seq;
    double now = sink_now_s();
    double active = s->last_s > s->first_s ? s->last_s - s->first_s : 0;
    int rc = buf_printf(out,
                        "{\"received\":%llu,\"unique\":%llu,\"duplicates\":%llu,\"gaps\":%llu,"
                        "\"out_of_window\":%llu,\"unsequenced\":%llu,\"bytes\":%llu,"
                        "\"requests\":%llu,\"rejected\":%llu,",
                        (unsigned long long)records, (unsigned long long)w->unique,
                        (unsigned long long)w->duplicates, (unsigned long long)sink_seqwin_gaps(w),
                        (unsigned long long)w->out_of_window, (unsigned long long)s->unsequenced,
                        (unsigned long long)bytes, (unsigned long long)requests,
                        (unsigned long long)rejected);
    if (w->started)
        rc |= buf_printf(out, "\"seq_min\":%llu,\"seq_max\":%llu,", (unsigned long long)w->min_seen,
                         (unsigned long long)w->max_seen);
    else
        rc |= buf_printf(out, "\"seq_min\":null,\"seq_max\":null,");
    if (s->expect) {
        uint64_t missing = s->expect > w->unique ? s->expect - w->unique : 0;
        rc |= buf_printf(out, "\"expected\":%llu,\"missing\":%llu,\"complete\":%s,",
                         (unsigned long long)s->expect, (unsigned long long)missing,
                         missing == 0 ? "true" : "false");
    }
    const sink_latency_t *l = &s->lat;
    rc |= buf_printf(
        out,
        "\"latency_ms\":{\"count\":%llu,\"avg\":%.3f,\"p50\":%.3f,\"p90\":%.3f,"
        "\"p99\":%.3f,\"p999\":%.3f,\"max\":%.3f,\"clock_skew\":%llu},",
        (unsigned long long)l->n, l->n ? l->sum_us / (double)l->n / 1000.0 : 0.0,
        sink_latency_quantile_us(l, 0.50) / 1000.0, sink_latency_quantile_us(l, 0.90) / 1000.0,
        sink_latency_quantile_us(l, 0.99) / 1000.0, sink_latency_quantile_us(l, 0.999) / 1000.0,
        (double)l->max_us / 1000.0, (unsigned long long)l->negative);
    rc |= buf_printf(out, "\"elapsed_s\":%.3f,\"active_s\":%.3f,\"rate_mps\":%.1f,",
                     now - s->start_s, active, active > 0 ? (double)records / active : 0.0);
    rc |= buf_append_str(out, "\"transports\":{");
    for (int i = 0; i < SINK__TRANSPORTS; i++) {
        const sink_tstats_t *t = &s->t[i];
        rc |= buf_printf(out,
                         "%s\"%s\":{\"records\":%llu,\"requests\":%llu,\"rejected\":%llu,"
                         "\"bytes\":%llu,\"connections\":%llu,\"protocol_errors\":%llu}",
                         i ? "," : "", sink_transport_name((sink_transport_t)i),
                         (unsigned long long)t->records, (unsigned long long)t->requests,
                         (unsigned long long)t->rejected, (unsigned long long)t->bytes,
                         (unsigned long long)t->connections_total,
                         (unsigned long long)t->protocol_errors);
    }
    rc |= buf_append_str(out, "}}");
    return rc ? -1 : 0;
}
