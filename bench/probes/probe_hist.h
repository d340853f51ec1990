/* A log-linear latency histogram in microseconds for the Kafka-side probes: 16 sub-buckets per
 * power of two (quantiles within ~6 %), fixed size (no allocation), values up to ~2^40 µs. */
#ifndef NDD_PROBE_HIST_H
#define NDD_PROBE_HIST_H

#include <stdint.h>

#define PROBE_HIST_SUB 16
#define PROBE_HIST_BUCKETS (PROBE_HIST_SUB + 40 * PROBE_HIST_SUB)

typedef struct probe_hist {
    uint64_t count;
    uint64_t negative; /* arrival before the NF timestamp: clock skew, counted as 0 */
    int64_t max_us;
    double sum_us;
    uint64_t buckets[PROBE_HIST_BUCKETS];
} probe_hist_t;

void probe_hist_add(probe_hist_t *h, int64_t us);
/* q in [0,1]; the middle of the bucket holding that rank (0 when empty). */
double probe_hist_quantile_us(const probe_hist_t *h, double q);
double probe_hist_avg_us(const probe_hist_t *h);

#endif
