/* What a process has used so far, as the benchmark tools report it beside their figures
 * (docs/benchmarks.md): CPU seconds and peak resident memory of this process. */
#ifndef NDD_PROC_USAGE_H
#define NDD_PROC_USAGE_H

/* User + system CPU seconds of this process, all its threads (librdkafka's included). */
double proc_usage_cpu_s(void);
/* Peak resident set size (VmHWM) in MiB; 0 when /proc/self/status cannot be read. The peak,
 * not the current size: a run's memory bound is what it needed at its worst. */
double proc_usage_peak_rss_mb(void);

#endif
