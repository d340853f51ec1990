/* ndd-correlation's settings: see corr_setup.h. */
#include "corr_setup.h"

#include <string.h>
#include <strings.h>
#include <time.h>

#include "codec.h"
#include "kafka.h"
#include "log.h"

static int corr_parse_mode(const char *s, correlate_drain_t *out)
{
    if (strcasecmp(s, "handover") == 0)
        *out = CORRELATE_DRAIN_HANDOVER;
    else if (strcasecmp(s, "emit") == 0)
        *out = CORRELATE_DRAIN_EMIT;
    else
        return -1;
    return 0;
}

/* The parts of the worker's configuration that come from the settings alone. */
static int corr_setup_base(const corr_settings_map_t *s, corr_config_t *cc, char *err,
                           size_t errlen)
{
    memset(cc, 0, sizeof(*cc));
    if (corr_parse_mode(s->revoke_mode, &cc->revoke_mode)) {
        snprintf(err, errlen, "revoke-mode: \"%s\" is not handover or emit", s->revoke_mode);
        return -1;
    }
    if (corr_parse_mode(s->shutdown_mode, &cc->shutdown_mode)) {
        snprintf(err, errlen, "shutdown-mode: \"%s\" is not handover or emit", s->shutdown_mode);
        return -1;
    }
    if (strcasecmp(s->xdr_format, "json") == 0)
        cc->format = CORR_FORMAT_JSON;
    else if (strcasecmp(s->xdr_format, "binary") == 0)
        cc->format = CORR_FORMAT_BINARY;
    else {
        snprintf(err, errlen, "xdr-format: \"%s\" is not json or binary", s->xdr_format);
        return -1;
    }
    correlate_config_t *ec = &cc->engine;
    ec->max_open = (uint32_t)s->max_open;
    ec->max_partitions = (uint32_t)s->max_partitions;
    ec->str_area = (uint32_t)s->text_area;
    ec->timeout_us = s->timeout_ms * 1000;
    ec->preallocate = s->preallocate;
    ec->subscriber_set = true;
    ec->subscriber.from_path = s->from_path;
    ec->subscriber.from_body = s->from_body;
    ec->subscriber.body_scan = (size_t)s->body_scan;
    ec->expect_set = true;
    for (int i = 0; i < CODEC_NF__COUNT; i++)
        ec->expect[i] = CORRELATE_EXPECT_ENDPOINT;
    for (size_t i = 0; i < s->proxy_types.n; i++) {
        const char *t = s->proxy_types.items[i];
        codec_nf_t nf = codec_nf_parse(t, strlen(t));
        if (nf == CODEC_NF_UNKNOWN) {
            snprintf(err, errlen, "proxy-types: \"%s\" is not one of SCP NRF SEPP BSF PCF NON_NF",
                     t);
            return -1;
        }
        ec->expect[nf] = CORRELATE_EXPECT_PROXY;
    }
    codec_limits_t limits = {.max_body = (size_t)s->max_body};
    if (codec_limits_check(&limits)) {
        snprintf(err, errlen, "max-body: %llu is above the codec's ceiling",
                 (unsigned long long)s->max_body);
        return -1;
    }
    return 0;
}

int corr_setup_check(daemon_t *d, FILE *out, char *err, size_t errlen)
{
    const corr_settings_map_t *s = d->def->settings;
    corr_config_t cc;
    if (corr_setup_base(s, &cc, err, errlen))
        return -1;
    if (out)
        fprintf(out, "worker: %s -> %s (dead letters: %s), group %s, timeout %lld ms, %s xDRs\n",
                s->main_topic, s->xdr_topic, s->dlq_topic, s->group, (long long)s->timeout_ms,
                s->xdr_format);
    return 0;
}

corr_control_opts_t corr_setup_control(const daemon_t *d, const corr_settings_map_t *s)
{
    return (corr_control_opts_t){.brokers = d->brokers,
                                 .main_topic = s->main_topic,
                                 .xdr_topic = s->xdr_topic,
                                 .config_topic = s->config_topic,
                                 .events_topic = s->events_topic,
                                 .instance = s->instance,
                                 .version = daemon_version(),
                                 .name = s->correlation_name,
                                 .heartbeat_ms = s->heartbeat_ms,
                                 .events_hub = daemon_events_hub(d),
                                 .produce_alarm_ms = s->produce_alarm_ms,
                                 .props = d->props,
                                 .n_props = d->n_props,
                                 .metrics = d->metrics};
}

/* The worker's tick: the control path's step and the readiness of the partitions. */
static void corr_setup_tick(void *arg)
{
    corr_run_t *run = arg;
    worker_control_tick(corr_control_wc(run->ctl));
    if (run->w)
        daemon_poll_partitions(run->d, corr_worker_assigned, run->w);
}

void corr_setup_worker(const daemon_t *d, const corr_settings_map_t *s, const corr_settings_t *st,
                       corr_config_t *cc, corr_settings_t *started)
{
    char err[256];
    corr_setup_base(s, cc, err, sizeof(err)); /* checked at start */
    cc->main_topic = st->source_topic_set ? st->source_topic : s->main_topic;
    cc->xdr_topic = st->xdr_topic_set ? st->xdr_topic : s->xdr_topic;
    if (st->max_open_set)
        cc->engine.max_open = (uint32_t)st->max_open;
    if (st->timeout_set)
        cc->engine.timeout_us = st->timeout_ms * 1000;
    if (st->extract_set && !st->extract_subscriber)
        cc->engine.subscriber.from_path = cc->engine.subscriber.from_body = false;
    /* What the worker runs, for the live comparison (restart-only fields). */
    *started = *st;
    snprintf(started->source_topic, sizeof(started->source_topic), "%s", cc->main_topic);
    snprintf(started->xdr_topic, sizeof(started->xdr_topic), "%s", cc->xdr_topic);
    started->max_open = cc->engine.max_open;
    started->timeout_ms = s->timeout_ms; /* a removed record's value */
    started->extract_subscriber =
        cc->engine.subscriber.from_path || cc->engine.subscriber.from_body;
    started->enabled = true;
    if (st->name[0])
        log_info("correlation: record \"%s\": MAIN %s, XDR %s, timeout %lld ms, max open %u, "
                 "subscriber extraction %s",
                 st->name, cc->main_topic, cc->xdr_topic, (long long)(cc->engine.timeout_us / 1000),
                 cc->engine.max_open, started->extract_subscriber ? "on" : "off");
    cc->brokers = d->brokers;
    cc->dlq_topic = s->dlq_topic;
    cc->group = s->group;
    cc->client_id = s->client_id;
    cc->instance = s->instance;
    cc->http_port = daemon_http_port(d);
    cc->props = d->props;
    cc->n_props = d->n_props;
    cc->batch = (uint32_t)s->batch;
    cc->max_unacked = (uint32_t)s->max_unacked;
    cc->checkpoint_ms = (int)s->checkpoint_ms;
    cc->cooperative = s->cooperative;
    cc->shutdown_timeout_ms = (int)s->shutdown_timeout_ms;
    cc->revoke_flush_ms = (int)s->revoke_flush_ms;
    cc->exactly_once = s->exactly_once;
    cc->transaction_ms = (int)s->transaction_ms;
    cc->metrics = d->metrics;
    cc->limits = (codec_limits_t){.max_body = (size_t)s->max_body};
    cc->on_tick = corr_setup_tick;
}

int corr_setup_create_topics(const daemon_t *d, const corr_settings_map_t *s,
                             const corr_config_t *cc)
{
    int n =
        kafka_admin_topic_partitions_with(d->brokers, d->props, d->n_props, cc->main_topic, 5000);
    size_t first = n < 1 ? 0 : 1; /* MAIN only when missing */
    if (n < 1)
        n = (int)s->main_partitions;
    kafka_topic_new_t t[] = {{cc->main_topic, n},
                             {cc->xdr_topic, s->xdr_partitions > 0 ? (int)s->xdr_partitions : n},
                             {s->dlq_topic, (int)s->dlq_partitions}};
    return kafka_admin_create_topics_with(d->brokers, d->props, d->n_props, t + first, 3 - first,
                                          15000);
}

int corr_setup_wait_enabled(daemon_t *d, corr_control_t *ctl, corr_settings_t *st)
{
    if (st->enabled)
        return 0;
    /* Disabled: stay up (heartbeats, /healthz) without consuming until enabled or stopped. */
    log_warn("correlation: disabled by record \"%s\"; waiting for it to be enabled", st->name);
    daemon_not_ready(d, "disabled by configuration");
    while (!*d->stop && !st->enabled) {
        worker_control_wait_loaded(corr_control_wc(ctl), 0);
        worker_control_tick(corr_control_wc(ctl));
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
        corr_control_settings(ctl, st);
    }
    daemon_not_ready(d, NULL);
    return *d->stop ? -1 : 0;
}
