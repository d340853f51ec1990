/* ndd-aggregation's settings: see agg_setup.h. */
#include "agg_setup.h"

#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "filter.h"
#include "kafka.h"

/* The filter file through the filter compiler, as the worker will load it. */
static int agg_check_filter(const char *path, FILE *out, char *err, size_t errlen)
{
    json_error_t je;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!j) {
        snprintf(err, errlen, "filter-file: %s:%d:%d: %s", path, je.line, je.column, je.text);
        return -1;
    }
    char why[512];
    filter_t *f = filter_compile(j, why, sizeof(why));
    json_decref(j);
    if (!f) {
        snprintf(err, errlen, "filter-file: %s: %s", path, why);
        return -1;
    }
    if (out)
        fprintf(out, "filter %s: default %s, %zu rule(s)\n", path,
                filter_default_action(f) == FILTER_ALLOW ? "allow" : "deny", filter_rule_count(f));
    filter_release(f);
    return 0;
}

/* The header form's consumer fetches at most 1 MiB per response (the worker's default is 4 MiB).
 * In that form a record held until MAIN acknowledges its copy keeps its whole fetch response
 * alive, so with 2,500 copies in flight the peak RSS follows the response size: 200,000 copies
 * of 3,400 B on a backlog peaked at 52.7-61.3 MiB with 4 MiB responses (64.9 once, past the
 * 64 MiB bound), 43.3-43.4 MiB with 1 MiB, at the same CPU per copy within the noise
 * (ndd-bench-aggregation --main-format headers, alternating). 1 MiB stays above librdkafka's
 * message.max.bytes default, as it requires. The frame form releases a record once framed and
 * keeps 4 MiB. Put first, so a kafka.* setting of the operator's (fetch.max.bytes,
 * consumer.fetch.max.bytes) still wins. */
static int agg_setup_fetch_default(daemon_t *d, const agg_settings_t *s, char *err, size_t errlen)
{
    if (strcmp(s->main_format, "headers"))
        return 0;
    for (size_t i = 0; i < d->n_props; i++) {
        const char *k = d->props[i].key;
        size_t n = strlen(k), m = strlen("fetch.max.bytes");
        if (n >= m && !strcmp(k + n - m, "fetch.max.bytes"))
            return 0; /* the operator's, or ours from an earlier check of this daemon */
    }
    kafka_prop_t *p = realloc(d->props, (d->n_props + 2) * sizeof(*p));
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memmove(p + 1, p, (d->n_props + 1) * sizeof(*p));
    p[0] = (kafka_prop_t){.key = "consumer.fetch.max.bytes", .value = "1048576"};
    d->props = p;
    d->n_props++;
    return 0;
}

/* The NF topic consumed: --topic, else the NF type. */
static const char *agg_setup_in_topic(const agg_settings_t *s)
{
    return s->topic ? s->topic : s->nf_type;
}

int agg_setup_check(daemon_t *d, FILE *out, char *err, size_t errlen)
{
    const agg_settings_t *s = d->def->settings;
    if (codec_nf_parse(s->nf_type, strlen(s->nf_type)) == CODEC_NF_UNKNOWN) {
        snprintf(err, errlen, "nf-type: \"%s\" is not one of SCP NRF SEPP BSF PCF NON_NF",
                 s->nf_type);
        return -1;
    }
    codec_limits_t limits = {.max_body = (size_t)s->max_body};
    if (codec_limits_check(&limits)) {
        snprintf(err, errlen, "max-body: %llu is above the codec's ceiling",
                 (unsigned long long)s->max_body);
        return -1;
    }
    if (strcmp(s->main_format, "headers") && strcmp(s->main_format, "frame")) {
        snprintf(err, errlen, "main-format: \"%s\" is not one of headers frame", s->main_format);
        return -1;
    }
    if (s->filter_file && agg_check_filter(s->filter_file, out, err, errlen))
        return -1;
    if (agg_setup_fetch_default(d, s, err, errlen))
        return -1;
    if (out) /* the group the worker will join: agg_worker_new's default, spelled out */
        fprintf(out, "worker: NF %s, topic %s -> %s (dead letters: %s), group %s%s\n", s->nf_type,
                agg_setup_in_topic(s), s->main_topic, s->dlq_topic, s->group ? "" : "ndd-agg-",
                s->group ? s->group : s->nf_type);
    return 0;
}

int agg_setup_create_topics(const daemon_t *d, const agg_settings_t *s)
{
    const char *in_topic = agg_setup_in_topic(s);
    int main_parts = (int)s->main_partitions;
    int n = kafka_admin_topic_partitions_with(d->brokers, d->props, d->n_props, in_topic, 5000);
    if (main_parts <= 0)
        main_parts = n > 0 ? n : 6;
    /* A missing NF topic is created too (a local stack without auto-creation); an existing
     * one is left as it is. */
    kafka_topic_new_t t[] = {{in_topic, main_parts},
                             {s->main_topic, main_parts},
                             {s->dlq_topic, (int)s->dlq_partitions}};
    size_t first = n < 1 ? 0 : 1;
    return kafka_admin_create_topics_with(d->brokers, d->props, d->n_props, t + first, 3 - first,
                                          15000);
}

agg_control_opts_t agg_setup_control(const daemon_t *d, const agg_settings_t *s,
                                     filter_slot_t *slot)
{
    return (agg_control_opts_t){
        .brokers = d->brokers,
        .nf_type = s->nf_type,
        .in_topic = agg_setup_in_topic(s),
        .main_topic = s->main_topic,
        .config_topic = s->config_topic,
        .events_topic = s->events_topic,
        .instance = s->instance,
        .version = daemon_version(),
        .filter_name = s->ingress_filter,
        .filter_file_set = s->filter_file != NULL,
        .heartbeat_ms = s->heartbeat_ms,
        .events_hub = daemon_events_hub(d),
        .produce_alarm_ms = s->produce_alarm_ms,
        .props = d->props,
        .n_props = d->n_props,
        .slot = slot,
        .metrics = d->metrics,
    };
}

/* The worker's tick: the control path's step and the readiness of the partitions. */
static void agg_setup_tick(void *arg)
{
    agg_run_t *run = arg;
    worker_control_tick(agg_control_wc(run->ctl));
    if (run->w)
        daemon_poll_partitions(run->d, agg_worker_assigned, run->w);
}

agg_config_t agg_setup_worker(const daemon_t *d, const agg_settings_t *s, filter_slot_t *slot,
                              agg_run_t *run)
{
    return (agg_config_t){
        .brokers = d->brokers,
        .nf_type = s->nf_type,
        .in_topic = agg_setup_in_topic(s),
        .group = s->group,
        .main_topic = s->main_topic,
        .dlq_topic = s->dlq_topic,
        .props = d->props,
        .n_props = d->n_props,
        .main_frame = strcmp(s->main_format, "frame") == 0,
        .max_inflight = (uint32_t)s->max_inflight,
        .batch = (uint32_t)s->batch,
        .cooperative = s->cooperative,
        .instance = s->instance,
        .http_port = daemon_http_port(d),
        .shutdown_timeout_ms = (int)s->shutdown_timeout_ms,
        .revoke_flush_ms = (int)s->revoke_flush_ms,
        .exactly_once = s->exactly_once,
        .transaction_ms = (int)s->transaction_ms,
        .filter_file = s->filter_file,
        .filter_check_ms = (int)s->filter_check_ms,
        .metrics = d->metrics,
        .limits = {.max_body = (size_t)s->max_body},
        .filter_slot = slot,
        .on_tick = agg_setup_tick,
        .tick_arg = run,
    };
}
