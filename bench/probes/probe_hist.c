#include "probe_hist.h"

static unsigned probe_hist_index(uint64_t v)
{
    if (v < PROBE_HIST_SUB)
        return (unsigned)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= 4 */
    unsigned sub = (unsigned)(v >> (e - 4)) & (PROBE_HIST_SUB - 1);
    unsigned idx = PROBE_HIST_SUB + (e - 4) * PROBE_HIST_SUB + sub;
    return idx < PROBE_HIST_BUCKETS ? idx : PROBE_HIST_BUCKETS - 1;
}

/* Lower bound and width of bucket i (inverse of probe_hist_index). */
static void probe_hist_bounds(unsigned i, double *lo, double *width)
{
    if (i < PROBE_HIST_SUB) {
        *lo = i;
        *width = 1;
        return;
    }
    unsigned e = (i - PROBE_HIST_SUB) / PROBE_HIST_SUB + 4;
    unsigned sub = (i - PROBE_HIST_SUB) % PROBE_HIST_SUB;
    double base = (double)(1ull << e);
    *width = base / PROBE_HIST_SUB;
    *lo = base + sub * *width;
}

void probe_hist_add(probe_hist_t *h, int64_t us)
{
    if (us < 0) {
        h->negative++;
        us = 0;
    }
    h->count++;
    h->sum_us += (double)us;
    if (us > h->max_us)
        h->max_us = us;
    h->buckets[probe_hist_index((uint64_t)us)]++;
}

double probe_hist_quantile_us(const probe_hist_t *h, double q)
{
    if (h->count == 0)
        return 0;
    uint64_t rank = (uint64_t)(q * (double)(h->count - 1)) + 1, seen = 0;
    for (unsigned i = 0; i < PROBE_HIST_BUCKETS; i++) {
        seen += h->buckets[i];
        if (seen >= rank) {
            double lo, w;
            probe_hist_bounds(i, &lo, &w);
            double mid = lo + w / 2;
            return mid > (double)h->max_us ? (double)h->max_us : mid;
        }
    }
    return (double)h->max_us;
}

double probe_hist_avg_us(const probe_hist_t *h)
{
    return h->count ? h->sum_us / (double)h->count : 0;
}
