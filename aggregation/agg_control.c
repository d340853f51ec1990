/* ndd-aggregation's control path: see agg_control.h and docs/aggregation.md. */
#include "agg_control.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "log.h"
#include "kafka_txn.h"
#include "worker_control.h"

struct agg_control {
    char nf[64], in_topic[256], main_topic[256], filter_name[128], instance[128];
    bool filter_file_set;
    filter_slot_t *slot;
    worker_control_t wc; /* ndd.config follower (wc.dirty: a filter or source record changed
                          * since the last resolve) and ndd.events publisher */
    agg_worker_t *w;

    char *applied;        /* compact JSON of the filter applied from ndd.config, NULL: none */
    char *rejected;       /* compact JSON of the last refused one (reported once) */
    char reject_res[384]; /* resource of the active config-rejected alarm, "" when none */
    bool file_noted;      /* "--filter-file wins" logged once */

    uint64_t last_failures;
    int64_t last_failure_ms;

    /* Filters from ndd.config swapped in / refused: the only count (the heartbeat reads
     * them). */
    metrics_counter_t *m_applied, *m_rejected;
};

/* ---- ndd.config: which filter ---- */

typedef struct agg_find {
    const agg_control_t *c;
    const char *filter_name; /* set for the filter pass */
    json_t *by_topic, *by_type, *filter;
} agg_find_t;

static int agg_find_cb(void *arg, const char *kind, const char *id, json_t *record)
{
    (void)id;
    agg_find_t *f = arg;
    json_t *spec = json_object_get(record, "spec");
    if (f->filter_name) {
        if (strcmp(kind, "filter") != 0)
            return 0;
        const char *name = json_string_value(json_object_get(record, "name"));
        if (!name)
            name = json_string_value(json_object_get(spec, "name"));
        if (name && strcmp(name, f->filter_name) == 0)
            f->filter = record; /* the last in topic order wins (a rename freed the name) */
        return 0;
    }
    if (strcmp(kind, "source") != 0)
        return 0;
    const char *topic = json_string_value(json_object_get(spec, "topic"));
    const char *type = json_string_value(json_object_get(spec, "type"));
    if (topic && strcmp(topic, f->c->in_topic) == 0) {
        if (!f->by_topic)
            f->by_topic = record;
    } else if (type && strcmp(type, f->c->nf) == 0 && !f->by_type) {
        f->by_type = record;
    }
    return 0;
}

static void agg_reject_clear(agg_control_t *c)
{
    if (c->reject_res[0] && c->wc.ev)
        events_alarm_clear(c->wc.ev, AGG_ALARM_REJECTED, c->reject_res);
    c->reject_res[0] = '\0';
}

/* Works out the filter the configuration asks for and swaps it in when it differs from the
 * one applied. A filter that does not compile leaves the running one in force. */
static void agg_control_resolve(void *owner)
{
    agg_control_t *c = owner;
    c->wc.dirty = false;
    if (c->filter_file_set) {
        if (!c->file_noted)
            log_info("aggregation %s: --filter-file is set: ingress filters from the "
                     "configuration topic are not applied",
                     c->nf);
        c->file_noted = true;
        return;
    }
    agg_find_t f = {.c = c};
    config_topic_foreach(c->wc.ft, agg_find_cb, &f);
    json_t *source = f.by_topic ? f.by_topic : f.by_type;
    const char *source_name = json_string_value(json_object_get(source, "name"));
    json_t *ingress = json_object_get(json_object_get(source, "spec"), "ingress_filter");
    const json_t *def = NULL;
    char origin[400], resource[384];
    if (json_is_object(ingress)) {
        def = ingress;
        snprintf(origin, sizeof(origin), "source \"%s\" (inline ingress_filter)",
                 source_name ? source_name : "?");
        snprintf(resource, sizeof(resource), "source/%.200s", source_name ? source_name : "?");
    } else {
        f.filter_name = json_is_string(ingress) ? json_string_value(ingress) : c->filter_name;
        config_topic_foreach(c->wc.ft, agg_find_cb, &f);
        def = json_object_get(f.filter, "spec");
        json_int_t version = json_integer_value(json_object_get(f.filter, "version"));
        snprintf(origin, sizeof(origin), "filter \"%s\" version %lld%s%s%s", f.filter_name,
                 (long long)version, json_is_string(ingress) ? " (named by source \"" : "",
                 json_is_string(ingress) ? (source_name ? source_name : "?") : "",
                 json_is_string(ingress) ? "\")" : "");
        snprintf(resource, sizeof(resource), "filter/%.200s", f.filter_name);
    }
    char *text = def ? json_dumps(def, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    if (def && !text) {
        log_error("aggregation %s: out of memory reading the ingress filter", c->nf);
        c->wc.dirty = true; /* try again at the next step */
        return;
    }
    if ((!text && !c->applied) || (text && c->applied && strcmp(text, c->applied) == 0)) {
        /* Unchanged (a republish, or a change to something else). A refused version that
         * was replaced by the running one again is no longer a problem. */
        if (c->rejected) {
            free(c->rejected);
            c->rejected = NULL;
            agg_reject_clear(c);
        }
        free(text);
        return;
    }
    if (!text) {
        filter_slot_swap(c->slot, NULL);
        free(c->applied);
        c->applied = NULL;
        metrics_counter_inc(c->m_applied);
        agg_reject_clear(c);
        log_warn("aggregation %s: no ingress filter in the configuration any more (filter \"%s\" "
                 "or a source's ingress_filter): allowing everything",
                 c->nf, c->filter_name);
        return;
    }
    if (c->rejected && strcmp(text, c->rejected) == 0) {
        free(text); /* refused already and reported */
        return;
    }
    char why[512];
    filter_t *nf = filter_compile(def, why, sizeof(why));
    if (!nf) {
        metrics_counter_inc(c->m_rejected);
        free(c->rejected);
        c->rejected = text;
        log_error("aggregation %s: ingress %s refused, the running filter stays: %s", c->nf, origin,
                  why);
        if (c->wc.ev) {
            if (c->reject_res[0] && strcmp(c->reject_res, resource) != 0)
                agg_reject_clear(c);
            snprintf(c->reject_res, sizeof(c->reject_res), "%s", resource);
            events_alarm_raise(c->wc.ev, AGG_ALARM_REJECTED, resource, EVENTS_MAJOR, why);
        }
        return;
    }
    uint64_t gen = filter_slot_swap(c->slot, nf);
    free(c->applied);
    c->applied = text;
    free(c->rejected);
    c->rejected = NULL;
    metrics_counter_inc(c->m_applied);
    agg_reject_clear(c);
    log_info("aggregation %s: ingress %s applied from the configuration topic (%zu rules, "
             "generation %" PRIu64 ")",
             c->nf, origin, filter_rule_count(nf), gen);
}

static void agg_on_loaded(void *owner, size_t keys)
{
    agg_control_t *c = owner;
    c->wc.dirty = true;
    log_info("aggregation %s: configuration loaded (%zu filter/source records)", c->nf, keys);
}

/* ---- ndd.events ---- */

static void agg_collect(void *owner, json_t *counters, json_t *feeds)
{
    (void)feeds;
    agg_control_t *c = owner;
    /* Before the worker exists (configuration still loading) the counters are zeros: the
     * same names in every heartbeat keep the admin's rate computations simple. */
    agg_stats_t s = {0};
    if (c->w)
        s = agg_worker_stats(c->w);
#define AGG_SET(name, v) json_object_set_new(counters, name, json_integer((json_int_t)(v)))
    AGG_SET("consumed_total", s.consumed);
    AGG_SET("produced_total", s.produced);
    AGG_SET("filtered_total", s.filtered);
    AGG_SET("dead_lettered_total", s.dead_lettered); /* the admin's dead-letter-surge input */
    AGG_SET("produce_failures_total", s.produce_failures);
    AGG_SET("filter_reloads_total", s.filter_reloads + metrics_counter_get(c->m_applied));
    AGG_SET("filter_rejected_total", s.filter_reload_errors + metrics_counter_get(c->m_rejected));
    AGG_SET("inflight", s.inflight);
    AGG_SET("filter_generation", filter_slot_generation(c->slot));
#undef AGG_SET
}

/* Heartbeat "info": what this worker runs, for the admin's /status "aggregation" list. */
static void agg_info(void *owner, json_t *info)
{
    const agg_control_t *c = owner;
    json_object_set_new(info, "nf_type", json_string(c->nf));
    json_object_set_new(info, "topic", json_string(c->in_topic));
    json_object_set_new(info, "main_topic", json_string(c->main_topic));
    /* --filter-file wins over the configuration topic's filter record */
    json_object_set_new(info, "filter",
                        json_string(c->filter_file_set ? "(file)" : c->filter_name));
    int tms;
    if (c->w) /* the delivery mode in effect (docs/kafka-cluster.md, "Exactly once") */
        kafka_txn_mode_info(info, agg_worker_exactly_once(c->w, &tms), tms);
}

/* "MAIN produce failing": records handed to Kafka but no acknowledgement for
 * produce_alarm_ms (broker away, MAIN unwritable; message.timeout.ms is infinite so these
 * are retried, not lost), or produce refusals (dead-lettered) within that time. Cleared once
 * acknowledgements flow and no refusal happened for that long. */
static void agg_alarm_check(void *owner, int64_t now)
{
    agg_control_t *c = owner;
    if (!c->w || !worker_control_stall_due(&c->wc.stall, now))
        return;
    agg_stats_t s = agg_worker_stats(c->w);
    if (s.produce_failures != c->last_failures)
        c->last_failure_ms = now;
    c->last_failures = s.produce_failures;
    char text[512], target[300];
    snprintf(target, sizeof(target), "to %s", c->main_topic);
    bool stalled = worker_control_produce_stalled(&c->wc, now, s.produced + s.dead_lettered,
                                                  s.inflight, target, text, sizeof(text));
    bool refusing = c->last_failure_ms && now - c->last_failure_ms < c->wc.produce_alarm_ms;
    if (!stalled && refusing)
        snprintf(text, sizeof(text),
                 "%" PRIu64 " produce refusals so far (records dead-lettered instead of %s)",
                 s.produce_failures, c->main_topic);
    worker_control_produce_alarm(&c->wc, stalled || refusing ? text : NULL);
}

/* ---- life cycle ---- */

agg_control_t *agg_control_new(const agg_control_opts_t *o, char *err, size_t errlen)
{
    if (!o->nf_type || !o->slot) {
        snprintf(err, errlen, "control path: nf_type and slot are required");
        return NULL;
    }
    agg_control_t *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(err, errlen, "control path: out of memory");
        return NULL;
    }
    snprintf(c->nf, sizeof(c->nf), "%s", o->nf_type);
    snprintf(c->in_topic, sizeof(c->in_topic), "%s", o->in_topic ? o->in_topic : o->nf_type);
    snprintf(c->main_topic, sizeof(c->main_topic), "%s", o->main_topic ? o->main_topic : "MAIN");
    if (o->filter_name && *o->filter_name)
        snprintf(c->filter_name, sizeof(c->filter_name), "%s", o->filter_name);
    else
        snprintf(c->filter_name, sizeof(c->filter_name), "ingress-%s", o->nf_type);
    /* One worker per NF type per pod: the NF type makes the host name unique. */
    worker_control_instance_name(c->instance, sizeof(c->instance), o->instance, o->nf_type);
    char resource[384];
    snprintf(resource, sizeof(resource), "%.63s/%.249s", c->nf, c->main_topic);
    c->filter_file_set = o->filter_file_set;
    c->slot = o->slot;
    static const char *const kinds[] = {"filter", "source"};
    char cid[128], log_name[96];
    snprintf(cid, sizeof(cid), "ndd-aggregation-%.60s-config", o->nf_type);
    snprintf(log_name, sizeof(log_name), "aggregation %s", c->nf);
    worker_control_opts_t wo = {.brokers = o->brokers,
                                .props = o->props,
                                .n_props = o->n_props,
                                .metrics = o->metrics,
                                .owner = c,
                                .config_topic = o->config_topic,
                                .config_client_id = cid,
                                .kinds = kinds,
                                .n_kinds = 2,
                                .on_loaded = agg_on_loaded,
                                .events_topic = o->events_topic,
                                .service = "ndd-aggregation",
                                .log_name = log_name,
                                .instance = c->instance,
                                .version = o->version,
                                .heartbeat_ms = o->heartbeat_ms,
                                .events_hub = o->events_hub,
                                .collect = agg_collect,
                                .info = agg_info,
                                .resolve = agg_control_resolve,
                                .check = agg_alarm_check,
                                .produce_alarm = AGG_ALARM_PRODUCE,
                                .produce_resource = resource,
                                .produce_alarm_ms = o->produce_alarm_ms};
    metrics_family_t *fu = metrics_counter_new(
        o->metrics ? o->metrics : metrics_default_registry(),
        "ndd_aggregation_filter_updates_total",
        "Ingress filters from the configuration topic swapped in (ok) or refused (error)",
        "nf_type,result");
    if (!fu || !(c->m_applied = metrics_counter_labels(fu, c->nf, "ok")) ||
        !(c->m_rejected = metrics_counter_labels(fu, c->nf, "error"))) {
        snprintf(err, errlen, "control path: cannot register its metrics");
        free(c);
        return NULL;
    }
    if (worker_control_open(&c->wc, &wo, err, errlen)) {
        free(c);
        return NULL;
    }
    log_info("aggregation %s: control path: config %s (ingress filter: %s), events %s as "
             "ndd-aggregation/%s",
             c->nf, c->wc.ft ? o->config_topic : "off",
             c->filter_file_set ? "--filter-file wins" : c->filter_name,
             c->wc.ev ? o->events_topic : "off", c->instance);
    return c;
}

void agg_control_attach(agg_control_t *c, agg_worker_t *w)
{
    if (c)
        c->w = w;
}

worker_control_t *agg_control_wc(agg_control_t *c)
{
    return &c->wc;
}

void agg_control_free(agg_control_t *c, int timeout_ms)
{
    if (!c)
        return;
    c->w = NULL; /* the last heartbeat (if any) must not read a freed worker */
    worker_control_close(&c->wc, timeout_ms);
    free(c->applied);
    free(c->rejected);
    free(c);
}
