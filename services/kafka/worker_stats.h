/* A worker's totals since it was made: the aggregation's and the correlation's stats are read
 * from their metrics registry, which may hold the counts of an earlier worker of the same
 * process (same names and labels), so each worker keeps what the counters held at its start
 * and subtracts it. */
#ifndef NDD_WORKER_STATS_H
#define NDD_WORKER_STATS_H

#include <stddef.h>
#include <stdint.h>

/* now[i] -= base[i] for the first n counters of a stats struct made only of uint64_t members,
 * n = WORKER_STATS_COUNTERS(type, first member that is not a total). */
#define WORKER_STATS_COUNTERS(type, member) (offsetof(type, member) / sizeof(uint64_t))

static inline void worker_stats_since(uint64_t *now, const uint64_t *base, size_t n)
{
    for (size_t i = 0; i < n; i++)
        now[i] -= base[i];
}

#endif
