/* A feed's Prometheus families (labels feed, and feed,endpoint): created when it starts,
 * removed when it stops so a removed feed leaves no series behind. One table serves both, so
 * what is removed is always what was created. */
#include "feed-int.h"

#include <stdio.h>
#include <stddef.h>
#include <string.h>

#include "transport.h"
#include "transport_url.h"

typedef struct feed_metric_def {
    const char *name, *help;
    bool gauge;        /* else a counter */
    bool per_endpoint; /* labels feed,endpoint: a field of feed_ep_metrics_t; else of feed_t */
    size_t field;      /* offsetof the metrics_counter_t * / metrics_gauge_t * it fills */
} feed_metric_def_t;

#define FEED_METRIC(name, help, gauge, field)                                                      \
    {                                                                                              \
        name, help, gauge, false, offsetof(feed_t, field)                                          \
    }
#define FEED_EP_METRIC(name, help, gauge, field)                                                   \
    {                                                                                              \
        name, help, gauge, true, offsetof(feed_ep_metrics_t, field)                                \
    }

/* In the order of registration (the order of /metrics); the latency histogram comes between
 * the per-feed and the per-endpoint families. */
static const feed_metric_def_t feed_metric_defs[] = {
    FEED_METRIC("ndd_adapter_messages_consumed_total", "Copies read from the feed's source topic",
                false, m_consumed),
    FEED_METRIC("ndd_adapter_messages_filtered_total", "Copies dropped by the feed's egress filter",
                false, m_filtered),
    FEED_METRIC("ndd_adapter_messages_dead_lettered_total",
                "Copies written to the feed's dead-letter topic", false, m_dead),
    FEED_METRIC("ndd_adapter_messages_rewound_total",
                "Copies given back because the feed was full (sought again, consumed again)", false,
                m_rewound),
    FEED_METRIC("ndd_adapter_fetch_restarts_total",
                "Times the feed restarted librdkafka's fetch after its prefetch queue ran dry "
                "(librdkafka 2.0 would otherwise wait up to a second)",
                false, m_fetch_restarts),
    FEED_METRIC("ndd_adapter_consumer_lag_messages",
                "Messages of the source topic not yet delivered by the feed (fetch lag + pending)",
                true, m_lag),
    FEED_METRIC("ndd_adapter_messages_pending",
                "Messages held by the feed (batching, in flight, retrying, dead-lettering)", true,
                m_pending),
    FEED_METRIC("ndd_adapter_partitions_assigned",
                "Partitions of the source topic this process consumes for the feed now", true,
                m_assigned),
    FEED_EP_METRIC("ndd_adapter_messages_sent_total",
                   "Messages handed to an endpoint (each attempt)", false, sent),
    FEED_EP_METRIC("ndd_adapter_messages_acked_total", "Messages acknowledged by an endpoint",
                   false, acked),
    FEED_EP_METRIC("ndd_adapter_messages_retried_total", "Messages scheduled for another attempt",
                   false, retried),
    FEED_EP_METRIC("ndd_adapter_messages_failed_total", "Messages whose attempt failed", false,
                   failed),
    FEED_EP_METRIC("ndd_adapter_messages_sent_bytes_total", "Encoded bytes handed to an endpoint",
                   false, bytes),
    FEED_EP_METRIC("ndd_adapter_requests_in_flight", "Requests or frames awaiting acknowledgement",
                   true, in_flight),
    FEED_EP_METRIC("ndd_adapter_endpoint_up", "1 while the endpoint is connected", true, up),
};
#define FEED_METRIC_DEFS (sizeof feed_metric_defs / sizeof *feed_metric_defs)

/* Creating a family that exists returns it (same type and labels). */
static metrics_family_t *feed_metric_family(metrics_registry_t *r, const feed_metric_def_t *d)
{
    const char *labels = d->per_endpoint ? "feed,endpoint" : "feed";
    return d->gauge ? metrics_gauge_new(r, d->name, d->help, labels)
                    : metrics_counter_new(r, d->name, d->help, labels);
}

static metrics_family_t *feed_latency_family(metrics_registry_t *r)
{
    return metrics_histogram_new(r, "ndd_adapter_e2e_latency_seconds",
                                 "From the copy's @timestamp-us to the endpoint's acknowledgement",
                                 "feed", metrics_latency_buckets_seconds,
                                 metrics_latency_buckets_seconds_n);
}

/* The series of family fam for the labels (feed[, endpoint]) into the field at base + field
 * (copied, not assigned through a cast: the field's type is the counter or gauge pointer). */
static void feed_metric_bind(const feed_metric_def_t *d, metrics_family_t *fam, void *base,
                             const char *feed, const char *endpoint)
{
    void *series = NULL;
    if (fam && d->gauge)
        series = endpoint ? (void *)metrics_gauge_labels(fam, feed, endpoint)
                          : (void *)metrics_gauge_labels(fam, feed);
    else if (fam)
        series = endpoint ? (void *)metrics_counter_labels(fam, feed, endpoint)
                          : (void *)metrics_counter_labels(fam, feed);
    memcpy((char *)base + d->field, &series, sizeof series);
}

/* The endpoint label: host:port of the URL ([v6]:port), so that a label value names the
 * peer and not a path (docs/observability.md); a local URL (file:///dir) has no peer and is
 * "file:<its index in the feed's endpoints>"; the URL itself when it does not parse
 * (feed_config refused those already, this is belt and braces). */
static void feed_metric_endpoint(const char *url, size_t index, char *out, size_t len)
{
    transport_url_t u;
    char err[256];
    if (transport_url_parse(url, &u, err, sizeof err) != 0)
        snprintf(out, len, "%s", url);
    else if (!u.host[0])
        snprintf(out, len, "file:%zu", index);
    else
        snprintf(out, len, strchr(u.host, ':') ? "[%s]:%s" : "%s:%s", u.host, u.port);
}

void feed_metrics_init(feed_t *f)
{
    metrics_registry_t *r = f->rt.metrics;
    const char *n = f->cfg->name;
    for (size_t i = 0; i < FEED_METRIC_DEFS; i++)
        if (!feed_metric_defs[i].per_endpoint)
            feed_metric_bind(&feed_metric_defs[i], feed_metric_family(r, &feed_metric_defs[i]), f,
                             n, NULL);
    if (f->m_assigned)
        metrics_gauge_set(f->m_assigned, 0);
    metrics_family_t *fh = feed_latency_family(r);
    f->m_latency = fh ? metrics_histogram_labels(fh, n) : NULL;

    for (size_t i = 0; i < FEED_METRIC_DEFS; i++) {
        const feed_metric_def_t *d = &feed_metric_defs[i];
        if (!d->per_endpoint)
            continue;
        metrics_family_t *fam = feed_metric_family(r, d);
        for (size_t e = 0; e < f->cfg->n_endpoints; e++) {
            char ep[300];
            feed_metric_endpoint(f->cfg->endpoints[e].url, e, ep, sizeof ep);
            feed_metric_bind(d, fam, &f->epm[e], n, ep);
        }
    }
    for (size_t e = 0; e < f->cfg->n_endpoints; e++) {
        f->epm[e].url = f->cfg->endpoints[e].url;
        if (f->epm[e].up)
            metrics_gauge_set(f->epm[e].up, 0);
    }
}

void feed_metrics_remove(feed_t *f)
{
    metrics_registry_t *r = f->rt.metrics;
    for (size_t i = 0; i < FEED_METRIC_DEFS; i++) {
        metrics_family_t *fam = feed_metric_family(r, &feed_metric_defs[i]);
        if (fam)
            metrics_family_remove_matching(fam, "feed", f->cfg->name);
    }
    metrics_family_t *fh = feed_latency_family(r);
    if (fh)
        metrics_family_remove_matching(fh, "feed", f->cfg->name);
    /* the encoding's and the transport's own families (their handles died with the thread) */
    if (f->cfg->encoding && f->cfg->encoding->metrics_remove)
        f->cfg->encoding->metrics_remove(r, f->cfg->name);
    const transport_ops_t *ops = f->cfg->transport ? transport_ops_for(f->cfg->transport) : NULL;
    if (ops && ops->metrics_remove)
        ops->metrics_remove(r, f->cfg->name);
}

/* The value under which a fraction q of the n observations in counts fall, linearly
 * interpolated inside its bucket (as Prometheus' histogram_quantile); the last finite bound
 * for the +Inf bucket. */
static double feed_bucket_quantile(const double *bounds, const uint64_t *counts, size_t nb,
                                   uint64_t n, double q)
{
    double rank = q * (double)n, seen = 0;
    for (size_t i = 0; i < nb; i++) {
        if (seen + (double)counts[i] < rank || counts[i] == 0) {
            seen += (double)counts[i];
            continue;
        }
        if (i + 1 == nb) /* +Inf */
            return bounds[nb - 2];
        double lo = i ? bounds[i - 1] : 0, hi = bounds[i];
        return lo + (hi - lo) * (rank - seen) / (double)counts[i];
    }
    return nb >= 2 ? bounds[nb - 2] : 0;
}

bool feed_latency_window(feed_t *f, uint64_t *count, double *p50_ms, double *p99_ms)
{
    uint64_t now[METRICS_MAX_BUCKETS + 1], d[METRICS_MAX_BUCKETS + 1], n = 0;
    const double *bounds = NULL;
    size_t nb = metrics_histogram_buckets(f->m_latency, &bounds, now, METRICS_MAX_BUCKETS + 1);
    if (nb < 2 || nb > METRICS_MAX_BUCKETS + 1)
        return false;
    for (size_t i = 0; i < nb; i++) {
        d[i] = now[i] >= f->lat_prev[i] ? now[i] - f->lat_prev[i] : now[i];
        f->lat_prev[i] = now[i];
        n += d[i];
    }
    if (n == 0)
        return false;
    *count = n;
    *p50_ms = 1000.0 * feed_bucket_quantile(bounds, d, nb, n, 0.5);
    *p99_ms = 1000.0 * feed_bucket_quantile(bounds, d, nb, n, 0.99);
    return true;
}
