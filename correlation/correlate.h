/* The correlation engine: pairs the copies of one transaction (same correlation id, hence
 * same partition) and emits one xDR per transaction. Design and guarantees: docs/xdr.md.
 *
 * Per partition: an open-addressing hash index (linear probing, backward-shift delete) over
 * preallocated slots, plus an intrusive FIFO of open transactions (and of emitted xDRs not yet
 * acknowledged, with hold_until_ack) in arrival order, which is at once the timeout order, the
 * eviction order and the offset order. Every operation is O(1)
 * (expiry O(1) per expired transaction); no allocation per copy; bodies are never kept.
 *
 * Typical consume loop:
 *   correlate_add(c, &msg, rkm->partition, rkm->offset, now_us);   // may emit xDRs
 *   correlate_expire(c, now_us);                                     // once per poll
 *   store offset correlate_committable(c, partition, next_offset); with hold_until_ack the
 *   emitted xDRs keep that mark down until correlate_ack (docs/xdr.md, "Offsets");
 *   on revoke: correlate_drain_partition(c, p, CORRELATE_DRAIN_HANDOVER). */
#ifndef NDD_CORRELATE_H
#define NDD_CORRELATE_H

#include "codec.h"
#include "correlate-t.h"
#include "metrics.h"

/* NULL on bad configuration or OOM (err says why). The config is copied. */
correlate_t *correlate_new(const correlate_config_t *cfg, char *err, size_t errlen);
/* Frees every table without emitting anything (use correlate_drain_all first if wanted). */
void correlate_free(correlate_t *c);

/* Adds one decoded copy consumed at partition/offset; now_us is the caller's clock
 * (monotonic µs), used for timeouts only. Emits the xDR when this copy completes its
 * transaction, and the oldest open transaction as "evicted" when the partition is full.
 * Returns 0, or -1 when the copy was refused (partition id out of range, out of memory):
 * the caller logs it with the topic/partition/offset and counts it. */
int correlate_add(correlate_t *c, const codec_msg_t *m, int32_t partition, int64_t offset,
                  int64_t now_us);

/* Emits as "timeout" every transaction whose first copy arrived timeout_us before now_us or
 * earlier. Returns how many were emitted. */
size_t correlate_expire(correlate_t *c, int64_t now_us);

/* Offset of the first copy of the oldest open transaction of the partition, or -1 when
 * none is open. The consumer must not store an offset above it. */
int64_t correlate_low_water(const correlate_t *c, int32_t partition);
/* The offset a consumer may store for the partition after processing up to next_offset - 1:
 * min(next_offset, low water). */
int64_t correlate_committable(const correlate_t *c, int32_t partition, int64_t next_offset);

/* Releases an xDR held by hold_until_ack (ticket from the emitted xdr_t, partition its
 * x->partition): from now on the low-water mark may pass it. Call it from the delivery report
 * of the XDR produce. Returns 0, or -1 for a ticket that is unknown, already acknowledged, or
 * from before a drain of the partition (counted in stale_acks). Ticket 0 is a no-op. */
int correlate_ack(correlate_t *c, int32_t partition, uint64_t ticket);

/* Drains one partition (rebalance: revoked or lost) and frees its table. Returns how many
 * open transactions it had. */
size_t correlate_drain_partition(correlate_t *c, int32_t partition, correlate_drain_t mode);
/* Drains every partition (shutdown). */
size_t correlate_drain_all(correlate_t *c, correlate_drain_t mode);

correlate_stats_t correlate_stats(const correlate_t *c);

/* ---- KPIs (Prometheus, services/base/metrics.h) ----
 * ndd_correlation_transactions_total{nf_type,service,status_code,completion}
 * ndd_correlation_transaction_latency_seconds{nf_type,service,side}        histogram (side rx|tx)
 * ndd_correlation_messages_missing_total{nf_type,trigger_point}
 * ndd_correlation_transactions_open{nf_type}           gauge (correlate_metrics_update)
 * ndd_correlation_xdrs_unacknowledged{nf_type}         gauge (correlate_metrics_update)
 * ndd_correlation_messages_duplicated_total{nf_type},
 * ndd_correlation_transactions_handed_over_total{nf_type} Label sets are bounded by the registry
 * (overflow child) and cached here, so observing an xDR costs no lock once its label set was seen.
 */
typedef struct correlate_metrics correlate_metrics_t;

correlate_metrics_t *correlate_metrics_new(metrics_registry_t *r, const char *nf_label);
void correlate_metrics_free(correlate_metrics_t *m);
/* Call from the emit callback. */
void correlate_metrics_observe(correlate_metrics_t *m, const xdr_t *x);
/* Call once per poll: open gauge, duplicate and hand-over counters from the engine totals. */
void correlate_metrics_update(correlate_metrics_t *m, const correlate_t *c);

#endif
