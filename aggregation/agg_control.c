/* ndd-aggregation's control path: see agg_control.h and docs/aggregation.md. */
#include "agg_control.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "config_topic.h"
#include "events.h"
#include "log.h"

/* config_topic_poll and events_tick are cheap, but the worker loop turns thousands of times a
 * second under load: a few milliseconds between control steps cost nothing in reaction time. */
#define AGG_CONTROL_PERIOD_MS 5
#define AGG_CONTROL_ALARM_CHECK_MS 1000

struct agg_control {
    char nf[64], in_topic[256], main_topic[256], filter_name[128], instance[128];
    char alarm_resource[384];
    bool filter_file_set;
    int64_t produce_alarm_ms;
    filter_slot_t *slot;
    config_topic_t *ft;
    events_t *ev;
    agg_worker_t *w;

    bool dirty;           /* a filter or source record changed since the last resolve */
    char *applied;        /* compact JSON of the filter applied from ndd.config, NULL: none */
    char *rejected;       /* compact JSON of the last refused one (reported once) */
    char reject_res[384]; /* resource of the active config-rejected alarm, "" when none */
    bool file_noted;      /* "--filter-file wins" logged once */
    int64_t next_step_ms;

    int64_t next_check_ms; /* produce alarm watch */
    uint64_t last_acked, last_failures;
    int64_t last_progress_ms, last_failure_ms;
    bool was_inflight;

    agg_control_stats_t st;
};

static int64_t agg_control_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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
    if (c->reject_res[0] && c->ev)
        events_alarm_clear(c->ev, AGG_ALARM_REJECTED, c->reject_res);
    c->reject_res[0] = '\0';
}

/* Works out the filter the configuration asks for and swaps it in when it differs from the
 * one applied. A filter that does not compile leaves the running one in force. */
static void agg_control_resolve(agg_control_t *c)
{
    c->dirty = false;
    if (c->filter_file_set) {
        if (!c->file_noted)
            log_info("aggregation %s: --filter-file is set: ingress filters from the "
                     "configuration topic are not applied",
                     c->nf);
        c->file_noted = true;
        return;
    }
    agg_find_t f = {.c = c};
    config_topic_foreach(c->ft, agg_find_cb, &f);
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
        config_topic_foreach(c->ft, agg_find_cb, &f);
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
        c->dirty = true; /* try again at the next step */
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
        c->st.filter_applied++;
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
        c->st.filter_rejected++;
        free(c->rejected);
        c->rejected = text;
        log_error("aggregation %s: ingress %s refused, the running filter stays: %s", c->nf, origin,
                  why);
        if (c->ev) {
            if (c->reject_res[0] && strcmp(c->reject_res, resource) != 0)
                agg_reject_clear(c);
            snprintf(c->reject_res, sizeof(c->reject_res), "%s", resource);
            events_alarm_raise(c->ev, AGG_ALARM_REJECTED, resource, EVENTS_MAJOR, why);
        }
        return;
    }
    uint64_t gen = filter_slot_swap(c->slot, nf);
    free(c->applied);
    c->applied = text;
    free(c->rejected);
    c->rejected = NULL;
    c->st.filter_applied++;
    agg_reject_clear(c);
    log_info("aggregation %s: ingress %s applied from the configuration topic (%zu rules, "
             "generation %" PRIu64 ")",
             c->nf, origin, filter_rule_count(nf), gen);
}

static void agg_on_upsert(void *owner, const char *kind, const char *id, json_t *record,
                          json_t *previous)
{
    (void)kind, (void)id, (void)record, (void)previous;
    ((agg_control_t *)owner)->dirty = true;
}

static void agg_on_delete(void *owner, const char *kind, const char *id, json_t *previous)
{
    (void)kind, (void)id, (void)previous;
    ((agg_control_t *)owner)->dirty = true;
}

static void agg_on_loaded(void *owner, size_t keys)
{
    agg_control_t *c = owner;
    c->dirty = true;
    c->st.loaded = true;
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
    AGG_SET("filter_reloads_total", s.filter_reloads + c->st.filter_applied);
    AGG_SET("filter_rejected_total", s.filter_reload_errors + c->st.filter_rejected);
    AGG_SET("inflight", s.inflight);
    AGG_SET("filter_generation", filter_slot_generation(c->slot));
#undef AGG_SET
}

/* "MAIN produce failing": records handed to Kafka but no acknowledgement for
 * produce_alarm_ms (broker away, MAIN unwritable; message.timeout.ms is infinite so these
 * are retried, not lost), or produce refusals (dead-lettered) within that time. Cleared once
 * acknowledgements flow and no refusal happened for that long. */
static void agg_alarm_check(agg_control_t *c, int64_t now)
{
    if (!c->w || !c->ev || now < c->next_check_ms)
        return;
    c->next_check_ms = now + AGG_CONTROL_ALARM_CHECK_MS;
    agg_stats_t s = agg_worker_stats(c->w);
    uint64_t acked = s.produced + s.dead_lettered;
    if (acked != c->last_acked || !c->was_inflight)
        c->last_progress_ms = now;
    c->last_acked = acked;
    c->was_inflight = s.inflight > 0;
    if (s.produce_failures != c->last_failures)
        c->last_failure_ms = now;
    c->last_failures = s.produce_failures;
    bool stalled = s.inflight > 0 && now - c->last_progress_ms >= c->produce_alarm_ms;
    bool refusing = c->last_failure_ms && now - c->last_failure_ms < c->produce_alarm_ms;
    if (stalled || refusing) {
        char text[512];
        if (stalled)
            snprintf(text, sizeof(text),
                     "%" PRIu64 " records unacknowledged for %" PRId64 " s (producing to %s)",
                     s.inflight, (now - c->last_progress_ms) / 1000, c->main_topic);
        else
            snprintf(text, sizeof(text),
                     "%" PRIu64 " produce refusals so far (records dead-lettered instead of %s)",
                     s.produce_failures, c->main_topic);
        if (!events_alarm_active(c->ev, AGG_ALARM_PRODUCE, c->alarm_resource))
            log_warn("aggregation %s: alarm %s raised: %s", c->nf, AGG_ALARM_PRODUCE, text);
        events_alarm_raise(c->ev, AGG_ALARM_PRODUCE, c->alarm_resource, EVENTS_MAJOR, text);
    } else {
        if (events_alarm_active(c->ev, AGG_ALARM_PRODUCE, c->alarm_resource))
            log_info("aggregation %s: alarm %s cleared", c->nf, AGG_ALARM_PRODUCE);
        events_alarm_clear(c->ev, AGG_ALARM_PRODUCE, c->alarm_resource);
    }
}

/* ---- life cycle ---- */

/* The worker's pass-through properties for one of our clients: unprefixed ones (security
 * settings...) as they are, "<mine>X" as X, "<other>X" not at all. out holds n entries. */
static size_t agg_control_props(const kafka_prop_t *in, size_t n, const char *mine,
                                const char *other, kafka_prop_t *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(in[i].key, other, strlen(other)) == 0)
            continue;
        out[k].key =
            strncmp(in[i].key, mine, strlen(mine)) == 0 ? in[i].key + strlen(mine) : in[i].key;
        out[k++].value = in[i].value;
    }
    return k;
}

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
    if (o->instance && *o->instance) {
        snprintf(c->instance, sizeof(c->instance), "%s", o->instance);
    } else {
        /* Unique per service and stable across restarts: one worker per NF type per pod. */
        char host[64] = "localhost";
        gethostname(host, sizeof(host) - 1);
        snprintf(c->instance, sizeof(c->instance), "%.63s-%.60s", host, o->nf_type);
    }
    snprintf(c->alarm_resource, sizeof(c->alarm_resource), "%.63s/%.249s", c->nf, c->main_topic);
    c->filter_file_set = o->filter_file_set;
    c->produce_alarm_ms = o->produce_alarm_ms > 0 ? o->produce_alarm_ms : 10000;
    c->slot = o->slot;
    c->st.loaded = true;
    kafka_prop_t *props = calloc(o->n_props + 1, sizeof(*props));
    if (!props) {
        snprintf(err, errlen, "control path: out of memory");
        goto fail;
    }

    if (o->events_topic && *o->events_topic) {
        events_opts_t eo = {
            .brokers = o->brokers,
            .topic = o->events_topic,
            .service = "ndd-aggregation",
            .instance = c->instance,
            .version = o->version,
            .interval_ms = o->heartbeat_ms,
            .collect = agg_collect,
            .owner = c,
            .props = props,
            .n_props = agg_control_props(o->props, o->n_props, "producer.", "consumer.", props),
            .metrics = o->metrics};
        c->ev = events_new(&eo, err, errlen);
        if (!c->ev)
            goto fail;
    }
    if (o->config_topic && *o->config_topic) {
        static const char *const kinds[] = {"filter", "source"};
        char cid[128];
        snprintf(cid, sizeof(cid), "ndd-aggregation-%.60s-config", o->nf_type);
        config_topic_opts_t co = {
            .brokers = o->brokers,
            .topic = o->config_topic,
            .client_id = cid,
            .kinds = kinds,
            .n_kinds = 2,
            .props = props,
            .n_props = agg_control_props(o->props, o->n_props, "consumer.", "producer.", props),
            .on_upsert = agg_on_upsert,
            .on_delete = agg_on_delete,
            .on_loaded = agg_on_loaded,
            .owner = c,
            .metrics = o->metrics};
        c->st.loaded = false;
        c->ft = config_topic_new(&co, err, errlen);
        if (!c->ft)
            goto fail;
    }
    log_info("aggregation %s: control path: config %s (ingress filter: %s), events %s as "
             "ndd-aggregation/%s",
             c->nf, c->ft ? o->config_topic : "off",
             c->filter_file_set ? "--filter-file wins" : c->filter_name,
             c->ev ? o->events_topic : "off", c->instance);
    free(props);
    return c;
fail:
    free(props);
    agg_control_free(c, 0);
    return NULL;
}

void agg_control_attach(agg_control_t *c, agg_worker_t *w)
{
    if (c)
        c->w = w;
}

static void agg_control_step(agg_control_t *c, int poll_ms)
{
    if (c->ft) {
        config_topic_poll(c->ft, poll_ms);
        if (c->dirty && config_topic_loaded(c->ft))
            agg_control_resolve(c);
    }
    if (c->ev) {
        events_tick(c->ev);
        agg_alarm_check(c, agg_control_now_ms());
    }
}

int agg_control_wait_loaded(agg_control_t *c, int timeout_ms)
{
    int64_t end = agg_control_now_ms() + timeout_ms;
    while (c->ft && !config_topic_loaded(c->ft)) {
        int64_t left = end - agg_control_now_ms();
        if (left <= 0)
            break;
        agg_control_step(c, left < 100 ? (int)left : 100);
    }
    if (c->ft && c->dirty && config_topic_loaded(c->ft))
        agg_control_resolve(c);
    return !c->ft || config_topic_loaded(c->ft) ? 0 : -1;
}

void agg_control_tick(void *arg)
{
    agg_control_t *c = arg;
    int64_t now = agg_control_now_ms();
    if (now < c->next_step_ms)
        return;
    c->next_step_ms = now + AGG_CONTROL_PERIOD_MS;
    agg_control_step(c, 0);
}

void agg_control_report_fatal(agg_control_t *c, const char *text, int timeout_ms)
{
    if (!c || !c->ev)
        return;
    events_alarm_raise(c->ev, AGG_ALARM_PRODUCE, c->alarm_resource, EVENTS_CRITICAL, text);
    events_flush(c->ev, timeout_ms);
}

agg_control_stats_t agg_control_stats(const agg_control_t *c)
{
    agg_control_stats_t s = c->st;
    if (c->ft)
        s.loaded = config_topic_loaded(c->ft);
    return s;
}

void agg_control_free(agg_control_t *c, int timeout_ms)
{
    if (!c)
        return;
    config_topic_free(c->ft);
    if (c->ev) {
        c->w = NULL; /* the last heartbeat (if any) must not read a freed worker */
        events_free(c->ev, timeout_ms);
    }
    free(c->applied);
    free(c->rejected);
    free(c);
}
