/* Metrics: a registry of Prometheus families (counter, gauge, histogram) rendered in the
 * text exposition format 0.0.4.
 *
 * Use: create families once at start, obtain one child per label value set once (outside
 * the hot path), then update the child from any thread: updates are lock-free relaxed C11
 * atomics. Rendering (the HTTP thread) may run concurrently with updates.
 *
 *   metrics_family_t *f = metrics_counter_new(reg, "ndd_aggregation_messages_consumed_total",
 *                                             "Copies read from the NF topics", "nf_type");
 *   metrics_counter_t *scp = metrics_counter_labels(f, "SCP");
 *   metrics_counter_inc(scp);          // hot path
 *
 * Bounds: a family holds at most max_children label sets (default 10,000). Past it, new
 * label sets fold into one child whose label values are all "_overflow", and
 * ndd_metrics_overflow_total{family="<name>"} increments for each folded lookup.
 *
 * Naming rules (docs/observability.md, held by tests/common/check_metric_names.py):
 * ndd_<component>_<object>_<event or state>[_<unit>][_total], counters and only counters end
 * in _total, durations in seconds, sizes in bytes, one word for one idea in every daemon. */
#ifndef NDD_METRICS_H
#define NDD_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

typedef enum metrics_type {
    METRICS_COUNTER = 0,
    METRICS_GAUGE,
    METRICS_HISTOGRAM,
} metrics_type_t;

typedef struct metrics_registry metrics_registry_t;
typedef struct metrics_family metrics_family_t;
/* A child: one label value set of one family. The three handle types are the same object;
 * distinct names keep counter/gauge/histogram calls type-checked. */
typedef struct metrics_child metrics_counter_t;
typedef struct metrics_child metrics_gauge_t;
typedef struct metrics_child metrics_histogram_t;

/* A value computed at scrape time (consumer lag, queue depth, in-flight). Called on the
 * rendering thread while the family's lock is held: it must be thread-safe with respect to
 * whatever it reads, must not block, and must not create or remove metrics. */
typedef double (*metrics_value_fn)(void *arg);

#define METRICS_DEFAULT_MAX_CHILDREN 10000
#define METRICS_OVERFLOW_VALUE "_overflow"
#define METRICS_MAX_LABELS 8
#define METRICS_MAX_BUCKETS 64
/* Label values are UTF-8 (invalid sequences become U+FFFD) of at most this many bytes. */
#define METRICS_MAX_LABEL_VALUE 1024

/* ---- registry ---- */

/* A registry with the standard process metrics (process_cpu_seconds_total,
 * process_resident_memory_bytes, process_virtual_memory_bytes, process_start_time_seconds,
 * process_open_fds, process_max_fds) and ndd_metrics_overflow_total. NULL on OOM. */
metrics_registry_t *metrics_registry_new(void);
/* Frees every family and child; no thread may use a handle afterwards. */
void metrics_registry_free(metrics_registry_t *r);
/* Process-wide registry for library code that has no registry passed in (created on first
 * use, thread-safe, never freed). Daemons normally pass this one to httpd_set_metrics(). */
metrics_registry_t *metrics_default_registry(void);
/* ---- families ----
 * name: [a-zA-Z_:][a-zA-Z0-9_:]*. labels: comma-separated label names ("feed,endpoint"),
 * NULL or "" for none; each [a-zA-Z_][a-zA-Z0-9_]*, not "__"-prefixed, at most
 * METRICS_MAX_LABELS, and "le" is reserved for histograms. Creating a family whose name
 * already exists returns the existing one when type, labels (and buckets) match, else NULL.
 * NULL (and a log line saying why) on invalid names or OOM. */
metrics_family_t *metrics_counter_new(metrics_registry_t *r, const char *name, const char *help,
                                      const char *labels);
metrics_family_t *metrics_gauge_new(metrics_registry_t *r, const char *name, const char *help,
                                    const char *labels);
/* bounds: strictly increasing finite upper bounds (the +Inf bucket is implicit), 1 to
 * METRICS_MAX_BUCKETS of them; copied. */
metrics_family_t *metrics_histogram_new(metrics_registry_t *r, const char *name, const char *help,
                                        const char *labels, const double *bounds, size_t nbounds);
void metrics_family_set_max_children(metrics_family_t *f, size_t max);
size_t metrics_family_children(const metrics_family_t *f);

/* ---- children ----
 * Pass exactly as many label values as the family has label names (NULL reads as "").
 * Returns the same handle for the same values; the overflow child when the family is full;
 * NULL only on OOM or a type mismatch (logged). Handles stay valid until removed or until
 * the registry is freed. */
metrics_counter_t *metrics_counter_labels(metrics_family_t *f, ...);
metrics_gauge_t *metrics_gauge_labels(metrics_family_t *f, ...);
metrics_histogram_t *metrics_histogram_labels(metrics_family_t *f, ...);
/* Same, with the values in an array of metrics_family's label count. */
struct metrics_child *metrics_child_labelv(metrics_family_t *f, const char *const *values);

/* Removes every child whose label `label` equals `value` (e.g. feed="f1" across
 * endpoints); same contract. Returns how many were removed. */
size_t metrics_family_remove_matching(metrics_family_t *f, const char *label, const char *value);

/* ---- hot-path updates (lock-free; safe from any thread) ---- */
void metrics_counter_inc(metrics_counter_t *c);
void metrics_counter_add(metrics_counter_t *c, uint64_t n);
double metrics_counter_value(const metrics_counter_t *c);
/* The whole-number count of a counter child (what metrics_counter_inc/_add added; fractions
 * and callbacks are not included), exact to 2^64: how heartbeats and stats read the
 * registry instead of keeping counts of their own. 0 for NULL. Lock-free. */
uint64_t metrics_counter_get(const metrics_counter_t *c);

void metrics_gauge_set(metrics_gauge_t *g, double v);
double metrics_gauge_value(const metrics_gauge_t *g);
/* Makes the child's value fn(arg) at every scrape (counters or gauges); fn NULL clears it. */
void metrics_child_set_callback(struct metrics_child *c, metrics_value_fn fn, void *arg);

void metrics_histogram_observe(metrics_histogram_t *h, double v);
uint64_t metrics_histogram_count(const metrics_histogram_t *h);
double metrics_histogram_sum(const metrics_histogram_t *h);
/* The histogram's bounds and its per-bucket counts (not cumulative; the last is +Inf):
 * copies up to max counts into counts and returns the number of buckets (nbounds + 1), and
 * points *bounds at the family's bounds; 0 for NULL. Lock-free (relaxed reads): for a
 * heartbeat's percentiles computed off the hot path. */
size_t metrics_histogram_buckets(const metrics_histogram_t *h, const double **bounds,
                                 uint64_t *counts, size_t max);

/* ---- bucket helpers ---- */
/* start, start*factor, ... (count values) into out; 0 or -1 on bad arguments. */
int metrics_buckets_exponential(double start, double factor, size_t count, double *out);
/* Latency in seconds, 50 µs to 10 s (for end-to-end and endpoint round trips). */
extern const double metrics_latency_buckets_seconds[];
extern const size_t metrics_latency_buckets_seconds_n;
/* Sizes in bytes, 64 B to 4 MiB (message body sizes). */
extern const double metrics_size_buckets_bytes[];
extern const size_t metrics_size_buckets_bytes_n;

/* ---- exposition ---- */
/* Appends the whole registry as text format 0.0.4 to out: families sorted by name,
 * children sorted by label values, # HELP and # TYPE for each family. Returns 0, or -1
 * when out reached its ceiling (out then holds a truncated document: do not serve it). */
int metrics_render(metrics_registry_t *r, buf_t *out);
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

#endif
