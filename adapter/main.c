/* ndd-adapter: runs the feeds of a feeds file (docs/adapter.md). Thin: settings, the feed
 * manager, /metrics + /healthz + /readyz on their own thread, signals. */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <event2/event.h>

#include "config.h"
#include "config_topic.h"
#include "events.h"
#include "feeds.h"
#include "httpd.h"
#include "log.h"
#include "metrics.h"

static const config_spec_t SPECS[] = {
    {"bootstrap", CONFIG_STRING, "127.0.0.1:9092", "Kafka bootstrap servers", 0},
    {"feeds-file", CONFIG_STRING, NULL,
     "JSON file with the feeds (reloaded on SIGHUP/change); or --config-topic", 0},
    {"config-topic", CONFIG_STRING, "",
     "Follow the admin's feeds on this compacted topic (e.g. ndd.config) instead of a file", 0},
    {"feeds-watch", CONFIG_DURATION_MS, "1s", "How often the feeds file is checked for changes", 0},
    {"drain-timeout", CONFIG_DURATION_MS, "10s",
     "How long a stopping feed waits for in-flight acknowledgements", 0},
    {"events-topic", CONFIG_STRING, "ndd.events",
     "Heartbeats and alarms for ndd-admin go to this topic (empty: off)", 0},
    {"instance", CONFIG_STRING, NULL, "Name of this process in heartbeats (default: host name)", 0},
    {"http.bind", CONFIG_STRING, "127.0.0.1", "Address of /metrics, /healthz, /readyz", 0},
    {"http.port", CONFIG_INT, "9102", "Port of /metrics, /healthz, /readyz (0: ephemeral)", 0},
    {"feed-memory-mb", CONFIG_INT, "5",
     "Memory budget of each feed in MiB: sizes librdkafka's prefetch and fetches and the bytes a "
     "feed holds (a feed's delivery.memory_mb overrides it)",
     0},
    {"log.level", CONFIG_STRING, "info", "debug | info | warn | error", 0},
    {"log.json", CONFIG_BOOL, "false", "JSON lines instead of text", 0},
};

typedef struct app {
    feed_manager_t *fm;
    const char *feeds_file;
    struct timespec mtime;
    off_t size;
    struct event_base *base;
    httpd_thread_t *http;
    config_topic_t *ft;
    events_t *ev;
} app_t;

typedef struct app_sums {
    json_t *feeds;
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
    const char *url;
    bool up;
    for (size_t i = 0; feed_endpoint_state(f, i, &url, &up); i++)
        events_feed_endpoint(j, url, up);
    sum->delivered += st.acked;
    sum->dead += st.dead_lettered;
    sum->pending += st.pending;
}

/* Heartbeat content (docs/control-path.md): per-feed counters and endpoint states. */
static void app_collect(void *owner, json_t *counters, json_t *feeds)
{
    app_t *a = owner;
    app_sums_t sum = {.feeds = feeds};
    feed_manager_foreach(a->fm, app_collect_feed, &sum);
    json_object_set_new(counters, "delivered_total", json_integer((json_int_t)sum.delivered));
    json_object_set_new(counters, "dead_lettered_total", json_integer((json_int_t)sum.dead));
    json_object_set_new(counters, "pending", json_integer((json_int_t)sum.pending));
}

static void app_on_tick(evutil_socket_t fd, short what, void *arg)
{
    events_tick(((app_t *)arg)->ev);
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
    httpd_set_ready(httpd_thread_server(a->http), true);
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
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    app_t *a = arg;
    if (sig == SIGHUP) {
        if (a->feeds_file)
            app_reload(a, "SIGHUP");
        return;
    }
    log_info("signal %d: stopping", (int)sig);
    event_base_loopbreak(a->base);
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

int main(int argc, char **argv)
{
    char err[1024];
    config_t *cfg = config_load(SPECS, sizeof SPECS / sizeof *SPECS, argc, argv, err, sizeof err);
    if (!cfg) {
        fprintf(stderr, "ndd-adapter: %s\n", err);
        return 2;
    }
    if (config_help_requested(cfg)) {
        config_print_help(SPECS, sizeof SPECS / sizeof *SPECS, "ndd-adapter", stdout);
        config_free(cfg);
        return 0;
    }
    log_level_t lvl = LOG_LEVEL_INFO;
    if (log_level_parse(config_get_str(cfg, "log.level"), &lvl) < 0) {
        fprintf(stderr, "ndd-adapter: log.level: unknown level \"%s\"\n",
                config_get_str(cfg, "log.level"));
        return 2;
    }
    log_setup("ndd-adapter", lvl, config_get_bool(cfg, "log.json"));
    signal(SIGPIPE, SIG_IGN);
    int64_t fmb = config_get_int(cfg, "feed-memory-mb");
    if (fmb < 1 || fmb > 65536) {
        fprintf(stderr, "ndd-adapter: feed-memory-mb: must be 1..65536 (MiB), not %lld\n",
                (long long)fmb);
        config_free(cfg);
        return 2;
    }
    const char *ctopic = config_get_str(cfg, "config-topic");
    bool use_topic = ctopic && ctopic[0];
    if (!config_get_str(cfg, "feeds-file") == !use_topic) {
        /* Two sources would fight: a file reload removes feeds the topic added. */
        fprintf(stderr, "ndd-adapter: give exactly one of --feeds-file and --config-topic\n");
        config_free(cfg);
        return 2;
    }

    size_t nkp = 0;
    const config_kafka_prop_t *ckp = config_kafka_props(cfg, &nkp);
    kafka_prop_t *kp = calloc(nkp ? nkp : 1, sizeof *kp);
    for (size_t i = 0; i < nkp; i++)
        kp[i] = (kafka_prop_t){ckp[i].name, ckp[i].value};

    metrics_registry_t *reg = metrics_default_registry();
    httpd_options_t ho = {.bind_addr = config_get_str(cfg, "http.bind"),
                          .port = (uint16_t)config_get_int(cfg, "http.port")};
    app_t a = {.feeds_file = config_get_str(cfg, "feeds-file")};
    a.http = httpd_thread_start(&ho, NULL, NULL, err, sizeof err);
    if (!a.http) {
        log_error("cannot start the metrics server: %s", err);
        return 1;
    }
    httpd_set_metrics(httpd_thread_server(a.http), reg);
    httpd_set_ready_reason(httpd_thread_server(a.http), "feeds not loaded yet");
    log_info("metrics on http://%s:%u/metrics", ho.bind_addr,
             (unsigned)httpd_port(httpd_thread_server(a.http)));

    const char *etopic = config_get_str(cfg, "events-topic");
    if (etopic && etopic[0]) {
        events_opts_t eo = {.brokers = config_get_str(cfg, "bootstrap"),
                            .topic = etopic,
                            .service = "ndd-adapter",
                            .instance = config_get_str(cfg, "instance"),
                            .collect = app_collect,
                            .owner = &a,
                            .props = kp,
                            .n_props = nkp,
                            .metrics = reg};
        a.ev = events_new(&eo, err, sizeof err);
        if (!a.ev)
            log_error("events topic %s: %s (running without heartbeats and alarms)", etopic, err);
    }
    feed_runtime_t rt = {.brokers = config_get_str(cfg, "bootstrap"),
                         .kafka_props = kp,
                         .n_kafka_props = nkp,
                         .metrics = reg,
                         .events = a.ev,
                         .feed_memory_mb = (unsigned)fmb,
                         .instance = config_get_str(cfg, "instance"),
                         .http_port = (int)config_get_int(cfg, "http.port")};
    a.fm = feed_manager_new(&rt, (uint32_t)config_get_duration_ms(cfg, "drain-timeout"));
    a.base = event_base_new();
    struct event *cfg_ev = NULL;
    if (use_topic) {
        static const char *const kinds[] = {"feed"};
        config_topic_opts_t co = {.brokers = rt.brokers,
                                  .topic = ctopic,
                                  .kinds = kinds,
                                  .n_kinds = 1,
                                  .props = kp,
                                  .n_props = nkp,
                                  .on_upsert = app_feed_upsert,
                                  .on_delete = app_feed_delete,
                                  .on_loaded = app_feeds_loaded,
                                  .owner = &a,
                                  .metrics = reg};
        a.ft = config_topic_new(&co, err, sizeof err);
        if (!a.ft) {
            log_error("configuration topic %s: %s", ctopic, err);
            return 1;
        }
        cfg_ev = event_new(a.base, config_topic_fd(a.ft), EV_READ | EV_PERSIST, app_on_config, &a);
        event_add(cfg_ev, NULL);
        httpd_set_ready_reason(httpd_thread_server(a.http), "configuration topic not loaded yet");
        log_info("ndd-adapter following feeds on topic %s", ctopic);
    } else {
        app_stat(&a, &a.mtime, &a.size);
        if (feed_manager_apply_file(a.fm, a.feeds_file, err, sizeof err) != 0) {
            /* Keep running what is valid: a later edit of the file fixes the rest. */
            log_error("feeds: %s", err);
        }
        log_info("ndd-adapter running %zu feed(s) from %s", feed_manager_count(a.fm), a.feeds_file);
        httpd_set_ready(httpd_thread_server(a.http), true);
    }

    struct event *sigs[3];
    int signos[3] = {SIGHUP, SIGTERM, SIGINT};
    for (int i = 0; i < 3; i++) {
        sigs[i] = evsignal_new(a.base, signos[i], on_signal, &a);
        event_add(sigs[i], NULL);
    }
    struct event *tick = event_new(a.base, -1, EV_PERSIST, app_on_tick, &a);
    struct timeval ttv = {1, 0};
    if (a.ev)
        event_add(tick, &ttv);
    int64_t wms = config_get_duration_ms(cfg, "feeds-watch");
    struct event *watch = event_new(a.base, -1, EV_PERSIST, on_watch, &a);
    struct timeval wtv = {wms / 1000, (wms % 1000) * 1000};
    if (wms > 0 && a.feeds_file)
        event_add(watch, &wtv);

    event_base_dispatch(a.base);

    httpd_set_ready_reason(httpd_thread_server(a.http), "stopping");
    httpd_set_ready(httpd_thread_server(a.http), false);
    if (cfg_ev)
        event_free(cfg_ev);
    config_topic_free(a.ft);
    feed_manager_free(a.fm);
    /* After the feeds: their threads raise and clear alarms until they stop. */
    event_free(tick);
    if (a.ev)
        events_free(a.ev, 2000);
    for (int i = 0; i < 3; i++)
        event_free(sigs[i]);
    event_free(watch);
    event_base_free(a.base);
    httpd_thread_stop(a.http);
    free(kp);
    config_free(cfg);
    log_info("ndd-adapter stopped");
    return 0;
}
