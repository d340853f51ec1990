/* ndd-aggregation's metrics: the series a worker registers (docs/observability.md) and its
 * totals read back from them (the registry holds the only count of each event). */
#include "agg_worker-int.h"

int agg_metrics_init(agg_worker_t *w)
{
    metrics_registry_t *r = w->cfg.metrics;
    const char *nf = w->cfg.nf_type;
    agg_metrics_t *m = &w->m;
    metrics_family_t *f;
#define AGG_COUNTER(field, name, help)                                                             \
    do {                                                                                           \
        if (!(f = metrics_counter_new(r, name, help, "nf_type")) ||                                \
            !(m->field = metrics_counter_labels(f, nf)))                                           \
            return -1;                                                                             \
    } while (0)
#define AGG_GAUGE(field, name, help)                                                               \
    do {                                                                                           \
        if (!(f = metrics_gauge_new(r, name, help, "nf_type")) ||                                  \
            !(m->field = metrics_gauge_labels(f, nf)))                                             \
            return -1;                                                                             \
    } while (0)
    AGG_COUNTER(in_msgs, "ndd_aggregation_messages_consumed_total",
                "Copies consumed from the NF topic");
    AGG_COUNTER(in_bytes, "ndd_aggregation_messages_consumed_bytes_total",
                "Value bytes of the copies consumed from the NF topic");
    AGG_COUNTER(out_msgs, "ndd_aggregation_messages_produced_total",
                "Copies written to MAIN and acknowledged");
    AGG_COUNTER(out_bytes, "ndd_aggregation_messages_produced_bytes_total",
                "Value bytes of the copies written to MAIN and acknowledged");
    AGG_COUNTER(filtered, "ndd_aggregation_messages_filtered_total",
                "Copies dropped by the ingress filter");
    AGG_COUNTER(unmatched, "ndd_aggregation_messages_unmatched_total",
                "Copies no filter rule matched (decided by the default action)");
    AGG_COUNTER(produce_errors, "ndd_aggregation_produce_errors_total",
                "Produces refused or failed (the record is retried or dead-lettered)");
    AGG_COUNTER(pauses, "ndd_aggregation_consumer_pauses_total",
                "Times consumption was paused for backpressure");
    AGG_GAUGE(inflight, "ndd_aggregation_messages_in_flight",
              "Copies consumed whose produce is not acknowledged yet");
    AGG_GAUGE(lag, "ndd_aggregation_consumer_lag_messages",
              "Records behind the end of the assigned NF partitions (librdkafka statistics)");
    AGG_GAUGE(paused, "ndd_aggregation_consumer_paused",
              "1 while consumption is paused (backpressure)");
    AGG_GAUGE(assigned, "ndd_aggregation_partitions_assigned",
              "NF topic partitions assigned to this worker");

    if (!(f = metrics_counter_new(r, "ndd_aggregation_messages_dead_lettered_total",
                                  "Copies written to the dead-letter topic, by reason",
                                  "nf_type,reason")))
        return -1;
    for (int i = 1; i < CODEC_REASON__COUNT; i++)
        if (!(m->dlq[i] = metrics_counter_labels(f, nf, codec_reason_name((codec_reason_t)i))))
            return -1;
    if (!(m->dlq[CODEC_REASON__COUNT] = metrics_counter_labels(f, nf, AGG_REASON_PRODUCE)))
        return -1;
    if (!(f = metrics_counter_new(r, "ndd_aggregation_filter_reloads_total",
                                  "Ingress filter (re)loads by result", "nf_type,result")) ||
        !(m->reload_ok = metrics_counter_labels(f, nf, "ok")) ||
        !(m->reload_err = metrics_counter_labels(f, nf, "error")))
        return -1;
    if (!(f = metrics_histogram_new(r, "ndd_aggregation_produce_latency_seconds",
                                    "From produce to broker acknowledgement", "nf_type",
                                    metrics_latency_buckets_seconds,
                                    metrics_latency_buckets_seconds_n)) ||
        !(m->latency = metrics_histogram_labels(f, nf)))
        return -1;
    return 0;
#undef AGG_COUNTER
#undef AGG_GAUGE
}

/* The counters as they are now. Another worker of the same NF type on the same registry (a
 * test making workers one after another) shares the series, so what it counted before this
 * worker was made is taken off. */
agg_stats_t agg_counters(const agg_worker_t *w)
{
    const agg_metrics_t *m = &w->m;
    agg_stats_t s = {
        .consumed = metrics_counter_get(m->in_msgs),
        .produced = metrics_counter_get(m->out_msgs),
        .filtered = metrics_counter_get(m->filtered),
        .unmatched = metrics_counter_get(m->unmatched),
        .produce_failures = metrics_counter_get(m->produce_errors),
        .filter_reloads = metrics_counter_get(m->reload_ok),
        .filter_reload_errors = metrics_counter_get(m->reload_err),
        .pauses = metrics_counter_get(m->pauses),
    };
    for (int i = 1; i <= CODEC_REASON__COUNT; i++)
        s.dead_lettered += metrics_counter_get(m->dlq[i]);
    return s;
}
