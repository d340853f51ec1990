/* ndd-adapter's control path: see adapter_control.h. Heartbeat content, ndd.config feed
 * records and the feeds file all go through the one feed manager (feeds.c). */
#include "adapter_control.h"

#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <event2/event.h>
#include <nghttp2/nghttp2.h>

#include "config_topic.h"
#include "daemon_role.h"
#include "events.h"
#include "feeds.h"
#include "log.h"

typedef struct adapter_control {
    daemon_t *d;
    const adapter_settings_t *s;
    kafka_prop_t *kp; /* the daemon's kafka.* properties */
    size_t nkp;
    struct event *cfg_ev, *tick, *watch;
    daemon_evstop_t *stop;   /* SIGTERM/SIGINT/SIGHUP alone, ndd's flags embedded */
    struct event *cfg_flush; /* one-shot: sends a config event held back by its period */
    feed_manager_t *fm;
    const char *feeds_file;
    struct timespec mtime;
    off_t size;
    struct event_base *base;
    config_topic_t *ft;
    events_t *ev;
} app_t;

typedef struct app_sums {
    json_t *feeds;
    const char *origin; /* "admin": followed on the configuration topic; "file": feeds file */
    const char *feeds_file;
    uint64_t delivered, dead, pending;
} app_sums_t;

static void app_collect_feed(const feed_t *f, void *arg)
{
    app_sums_t *sum = arg;
    feed_stats_t st;
    feed_get_stats(f, &st);
    json_t *j = events_feed(sum->feeds, feed_get_config(f)->name);
    if (!j)
        return;
    json_object_set_new(j, "delivered_total", json_integer((json_int_t)st.acked));
    json_object_set_new(j, "dead_lettered_total", json_integer((json_int_t)st.dead_lettered));
    json_object_set_new(j, "in_flight", json_integer((json_int_t)st.pending));
    json_object_set_new(j, "lag", json_integer((json_int_t)st.lag));
    json_object_set_new(j, "origin", json_string(sum->origin));
    if (sum->feeds_file)
        json_object_set_new(j, "feeds_file", json_string(sum->feeds_file));
    uint64_t n;
    double p50, p99;
    /* the copies acknowledged since the previous heartbeat (collect is the one caller) */
    if (feed_latency_window((feed_t *)f, &n, &p50, &p99))
        json_object_set_new(
            j, "latency_ms",
            json_pack("{s:f,s:f,s:I}", "p50", p50, "p99", p99, "count", (json_int_t)n));
    if (st.kafka_exactly_once >= 0) /* the delivery mode in effect (docs/kafka-feed.md) */
        json_object_set_new(j, "kafka_mode",
                            json_string(st.kafka_exactly_once ? "exactly-once" : "at-least-once"));
    const char *url;
    bool up;
    for (size_t i = 0; feed_endpoint_state(f, i, &url, &up); i++)
        events_feed_endpoint(j, url, up);
    sum->delivered += st.acked;
    sum->dead += st.dead_lettered;
    sum->pending += st.pending;
}

/* Heartbeat content (docs/control-path.md): per-feed counters, lag, delivery latency, where
 * the feed comes from and endpoint states. */
static void app_collect(void *owner, json_t *counters, json_t *feeds)
{
    app_t *a = owner;
    app_sums_t sum = {
        .feeds = feeds, .origin = a->feeds_file ? "file" : "admin", .feeds_file = a->feeds_file};
    feed_manager_foreach(a->fm, app_collect_feed, &sum);
    json_object_set_new(counters, "delivered_total", json_integer((json_int_t)sum.delivered));
    json_object_set_new(counters, "dead_lettered_total", json_integer((json_int_t)sum.dead));
    json_object_set_new(counters, "pending", json_integer((json_int_t)sum.pending));
}

static void app_on_tick(evutil_socket_t fd, short what, void *arg)
{
    app_t *a = arg;
    if (a->ev)
        events_tick(a->ev);
    daemon_poll_partitions(a->d, feed_manager_assigned, a->fm);
}

/* ndd.config records of kind "feed" (docs/control-path.md) go through the same apply
 * function as the feeds file. */
static void app_feed_upsert(void *owner, const char *kind, const char *id, json_t *rec,
                            json_t *prev)
{
    app_t *a = owner;
    char err[1024];
    const char *name = json_string_value(json_object_get(rec, "name"));
    const char *old = prev ? json_string_value(json_object_get(prev, "name")) : NULL;
    if (old && name && strcmp(old, name) != 0) /* renamed: stop the old one */
        feed_manager_apply(a->fm, old, NULL, err, sizeof err);
    if (feed_manager_apply(a->fm, NULL, json_object_get(rec, "spec"), err, sizeof err) != 0)
        log_error("feed %s (%s/%s) refused: %s (running version kept)", name ? name : "?", kind, id,
                  err);
}

static void app_feed_delete(void *owner, const char *kind, const char *id, json_t *prev)
{
    app_t *a = owner;
    char err[1024];
    const char *name = prev ? json_string_value(json_object_get(prev, "name")) : NULL;
    if (name && feed_manager_apply(a->fm, name, NULL, err, sizeof err) != 0)
        log_warn("feed %s (%s/%s) deleted: %s", name, kind, id, err);
}

static void app_feeds_loaded(void *owner, size_t n)
{
    app_t *a = owner;
    log_info("configuration topic loaded: %zu feed record(s), %zu running", n,
             feed_manager_count(a->fm));
    daemon_hold(a->d, DAEMON_COND_CONFIG, true);
}

/* Feeds apply inside their callbacks: the follower marks them applied at the end of each
 * poll, and the admin learns it from this event (propagation, docs/control-path.md). */
static void app_on_applied(void *owner, json_t *state)
{
    app_t *a = owner;
    if (a->ev && events_config_applied(a->ev, state) == 1 && a->cfg_flush &&
        !evtimer_pending(a->cfg_flush, NULL)) {
        struct timeval tv = {0, EVENTS_CONFIG_MIN_MS * 1000};
        evtimer_add(a->cfg_flush, &tv);
    }
}

static void app_on_cfg_flush(evutil_socket_t fd, short what, void *arg)
{
    app_t *a = arg;
    if (a->ev)
        events_tick(a->ev);
}

static void app_on_config(evutil_socket_t fd, short what, void *arg)
{
    config_topic_poll(((app_t *)arg)->ft, 0);
}

static void app_stat(app_t *a, struct timespec *mt, off_t *sz)
{
    struct stat st;
    if (stat(a->feeds_file, &st) == 0) {
        *mt = st.st_mtim;
        *sz = st.st_size;
    } else {
        memset(mt, 0, sizeof *mt);
        *sz = -1;
    }
}

static void app_reload(app_t *a, const char *why)
{
    char err[1024];
    app_stat(a, &a->mtime, &a->size);
    log_info("reloading feeds from %s (%s)", a->feeds_file, why);
    if (feed_manager_apply_file(a->fm, a->feeds_file, err, sizeof err) != 0)
        log_error("feeds reload: %s (running feeds left as they were where invalid)", err);
    else
        log_info("feeds reloaded: %zu running", feed_manager_count(a->fm));
    daemon_hold(a->d, DAEMON_COND_CONFIG, true); /* what is valid runs */
}

static void on_reload(void *arg)
{
    app_t *a = arg;
    if (a->feeds_file)
        app_reload(a, "reload requested");
}

static void on_watch(evutil_socket_t fd, short what, void *arg)
{
    app_t *a = arg;
    struct timespec mt;
    off_t sz;
    app_stat(a, &mt, &sz);
    if (sz >= 0 &&
        (mt.tv_sec != a->mtime.tv_sec || mt.tv_nsec != a->mtime.tv_nsec || sz != a->size))
        app_reload(a, "file changed");
}

int adapter_control_check(daemon_t *d, FILE *out, char *err, size_t errlen)
{
    const adapter_settings_t *s = d->def->settings;
    bool use_topic = s->config_topic && s->config_topic[0];
    if (!s->feeds_file == !use_topic) {
        /* Two sources would fight: a file reload removes feeds the topic added. */
        snprintf(err, errlen,
                 "feeds-file, config-topic: give exactly one of --feeds-file and --config-topic");
        return -1;
    }
    char e1[900];
    if (s->feeds_file && feed_manager_check_file(s->feeds_file, out, e1, sizeof e1)) {
        snprintf(err, errlen, "feeds-file: %s", e1);
        return -1;
    }
    if (out && use_topic)
        fprintf(out, "feeds: followed on the configuration topic %s\n", s->config_topic);
    return 0;
}

void adapter_control_version(FILE *out)
{
    fprintf(out, "nghttp2 %s\n", nghttp2_version(0)->version_str);
}

adapter_control_t *adapter_control_new(daemon_t *d, const adapter_settings_t *s, char *err,
                                       size_t errlen)
{
    app_t *ap = calloc(1, sizeof(*ap));
    if (!ap) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    *ap = (app_t){.d = d, .s = s, .kp = d->props, .nkp = d->n_props, .feeds_file = s->feeds_file};
    if (s->events_topic && s->events_topic[0]) {
        events_opts_t eo = {.brokers = d->brokers,
                            .topic = s->events_topic,
                            .service = "ndd-adapter",
                            .instance = s->instance,
                            .version = daemon_version(),
                            .interval_ms = s->heartbeat_ms,
                            .collect = app_collect,
                            .owner = ap,
                            .props = ap->kp,
                            .n_props = ap->nkp,
                            .metrics = d->metrics,
                            .hub = daemon_events_hub(d)};
        ap->ev = events_new(&eo, err, errlen);
        if (!ap->ev)
            log_error("events topic %s: %s (running without heartbeats and alarms)",
                      s->events_topic, err);
    }
    feed_runtime_t rt = {.brokers = d->brokers,
                         .kafka_props = ap->kp,
                         .n_kafka_props = ap->nkp,
                         .metrics = d->metrics,
                         .events = ap->ev,
                         .feed_memory_mb = (unsigned)s->feed_memory_mb,
                         .instance = s->instance,
                         .http_port = daemon_http_port(d)};
    ap->fm = feed_manager_new(&rt, (uint32_t)s->drain_timeout_ms);
    ap->base = event_base_new();
    if (!ap->fm || !ap->base) {
        snprintf(err, errlen, "out of memory");
        adapter_control_free(ap);
        return NULL;
    }
    ap->cfg_flush = evtimer_new(ap->base, app_on_cfg_flush, ap);
    if (!s->feeds_file) {
        static const char *const kinds[] = {"feed"};
        config_topic_opts_t co = {.brokers = d->brokers,
                                  .topic = s->config_topic,
                                  .kinds = kinds,
                                  .n_kinds = 1,
                                  .props = ap->kp,
                                  .n_props = ap->nkp,
                                  .on_upsert = app_feed_upsert,
                                  .on_delete = app_feed_delete,
                                  .on_loaded = app_feeds_loaded,
                                  .on_applied = app_on_applied,
                                  .owner = ap,
                                  .metrics = d->metrics};
        char e1[512];
        ap->ft = config_topic_new(&co, e1, sizeof e1);
        if (!ap->ft) {
            snprintf(err, errlen, "configuration topic %s: %s", s->config_topic, e1);
            adapter_control_free(ap);
            return NULL;
        }
        ap->cfg_ev =
            event_new(ap->base, config_topic_fd(ap->ft), EV_READ | EV_PERSIST, app_on_config, ap);
        event_add(ap->cfg_ev, NULL);
        log_info("ndd-adapter following feeds on topic %s", s->config_topic);
    } else {
        char e1[1024];
        app_stat(ap, &ap->mtime, &ap->size);
        if (feed_manager_apply_file(ap->fm, ap->feeds_file, e1, sizeof e1) != 0)
            log_error("feeds: %s", e1); /* checked at start: a feed that could not start */
        else
            daemon_hold(d, DAEMON_COND_CONFIG, true);
        log_info("ndd-adapter running %zu feed(s) from %s", feed_manager_count(ap->fm),
                 ap->feeds_file);
    }
    if (!(ap->stop = daemon_evstop_new(d, ap->base, on_reload, ap))) {
        snprintf(err, errlen, "cannot set up the stop and reload events");
        adapter_control_free(ap);
        return NULL;
    }
    ap->tick = event_new(ap->base, -1, EV_PERSIST, app_on_tick, ap);
    struct timeval ttv = {1, 0};
    event_add(ap->tick, &ttv);
    int64_t wms = s->feeds_watch_ms;
    ap->watch = event_new(ap->base, -1, EV_PERSIST, on_watch, ap);
    struct timeval wtv = {wms / 1000, (wms % 1000) * 1000};
    if (wms > 0 && ap->feeds_file)
        event_add(ap->watch, &wtv);
    return ap;
}

int adapter_control_run(adapter_control_t *a)
{
    event_base_dispatch(a->base);
    daemon_not_ready(a->d, "stopping");
    return 0;
}

void adapter_control_free(adapter_control_t *a)
{
    if (!a)
        return;
    if (a->cfg_ev)
        event_free(a->cfg_ev);
    if (a->cfg_flush)
        event_free(a->cfg_flush);
    config_topic_free(a->ft);
    feed_manager_free(a->fm);
    /* After the feeds: their threads raise and clear alarms until they stop. */
    if (a->tick)
        event_free(a->tick);
    if (a->ev)
        events_free(a->ev, 2000);
    daemon_evstop_free(a->stop);
    if (a->watch)
        event_free(a->watch);
    if (a->base)
        event_base_free(a->base);
    free(a);
    log_info("ndd-adapter stopped");
}
