/* ndd-adapter: runs the feeds of a feeds file (docs/adapter.md). Thin: settings, the feed
 * manager, /metrics + /healthz + /readyz on their own thread, signals. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <event2/event.h>

#include "config.h"
#include "feeds.h"
#include "httpd.h"
#include "log.h"
#include "metrics.h"

static const config_spec_t SPECS[] = {
    {"bootstrap", CONFIG_STRING, "127.0.0.1:9092", "Kafka bootstrap servers", 0},
    {"feeds-file", CONFIG_STRING, NULL, "JSON file with the feeds (reloaded on SIGHUP/change)",
     CONFIG_F_REQUIRED},
    {"feeds-watch", CONFIG_DURATION_MS, "1s", "How often the feeds file is checked for changes", 0},
    {"drain-timeout", CONFIG_DURATION_MS, "10s",
     "How long a stopping feed waits for in-flight acknowledgements", 0},
    {"http.bind", CONFIG_STRING, "127.0.0.1", "Address of /metrics, /healthz, /readyz", 0},
    {"http.port", CONFIG_INT, "9102", "Port of /metrics, /healthz, /readyz (0: ephemeral)", 0},
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
} app_t;

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

    feed_runtime_t rt = {.brokers = config_get_str(cfg, "bootstrap"),
                         .kafka_props = kp,
                         .n_kafka_props = nkp,
                         .metrics = reg};
    a.fm = feed_manager_new(&rt, (uint32_t)config_get_duration_ms(cfg, "drain-timeout"));
    a.base = event_base_new();
    app_stat(&a, &a.mtime, &a.size);
    if (feed_manager_apply_file(a.fm, a.feeds_file, err, sizeof err) != 0) {
        /* Keep running what is valid: a later edit of the file fixes the rest. */
        log_error("feeds: %s", err);
    }
    log_info("ndd-adapter running %zu feed(s) from %s", feed_manager_count(a.fm), a.feeds_file);
    httpd_set_ready(httpd_thread_server(a.http), true);

    struct event *sigs[3];
    int signos[3] = {SIGHUP, SIGTERM, SIGINT};
    for (int i = 0; i < 3; i++) {
        sigs[i] = evsignal_new(a.base, signos[i], on_signal, &a);
        event_add(sigs[i], NULL);
    }
    int64_t wms = config_get_duration_ms(cfg, "feeds-watch");
    struct event *watch = event_new(a.base, -1, EV_PERSIST, on_watch, &a);
    struct timeval wtv = {wms / 1000, (wms % 1000) * 1000};
    if (wms > 0)
        event_add(watch, &wtv);

    event_base_dispatch(a.base);

    httpd_set_ready_reason(httpd_thread_server(a.http), "stopping");
    httpd_set_ready(httpd_thread_server(a.http), false);
    feed_manager_free(a.fm);
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
