/* NDD's two clocks, in milliseconds. Every part of the product reads time through them
 * instead of its own clock_gettime wrapper, so a duration measured in one module and a
 * deadline set in another mean the same thing.
 *
 * mono_now_ms: CLOCK_MONOTONIC, for durations, deadlines, periods and rates (never jumps
 * with an NTP step or a date change). wall_now_ms: CLOCK_REALTIME since the Unix epoch, for
 * the timestamps others read (events, API answers, logs, charts). Both are vDSO reads (about
 * 25 ns with a TSC clock source, 5 ns for the coarse clocks whose 4 ms steps deadlines of a few
 * ms cannot use), beside the microseconds of the syscalls the HTTP and Kafka paths make around
 * each reading. */
#ifndef NDD_CLOCK_H
#define NDD_CLOCK_H

#include <stddef.h>
#include <stdint.h>

int64_t mono_now_ms(void);
int64_t wall_now_ms(void);

/* A wall_now_ms value as ISO 8601 UTC with milliseconds, "2026-12-08T00:24:34.123Z" (24 characters
 * and the NUL: out of 25 bytes or more is never cut). */
void wall_iso_utc(int64_t wall_ms, char *out, size_t size);

#endif
