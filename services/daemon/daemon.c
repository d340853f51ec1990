/* Shared daemon bootstrap: see daemon.h. */
#include "daemon.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

/* A signal handler has no context: one process runs one daemon, so the flags are global. */
static volatile sig_atomic_t daemon_stop_flag, daemon_reload_flag;

static void daemon_on_signal(int sig)
{
    if (sig == SIGHUP)
        daemon_reload_flag = 1;
    else
        daemon_stop_flag = 1;
}

void daemon_heap_setup(bool one_arena)
{
    /* Figures behind these: docs/aggregation.md (a third of the worker's CPU went to fresh
     * zeroed pages; one arena took peak RSS from 93 to 75 MiB, CPU unchanged). */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 128 << 20);
    if (one_arena)
        mallopt(M_ARENA_MAX, 1);
}

static int daemon_kafka_props(daemon_t *d)
{
    size_t n = 0;
    const config_kafka_prop_t *kp = config_kafka_props(d->cfg, &n);
    d->props = calloc(n + 1, sizeof(*d->props));
    if (!d->props) {
        fprintf(stderr, "%s: out of memory\n", d->name);
        return -1;
    }
    d->brokers = config_get_str(d->cfg, "bootstrap");
    if (!d->brokers)
        d->brokers = getenv("NDD_KAFKA");
    for (size_t i = 0; i < n; i++) {
        if (strcmp(kp[i].name, "bootstrap.servers") == 0 && !d->brokers)
            d->brokers = kp[i].value;
        d->props[d->n_props++] = (kafka_prop_t){.key = kp[i].name, .value = kp[i].value};
    }
    if (!d->brokers) {
        fprintf(stderr, "%s: no Kafka: set --bootstrap, NDD_KAFKA or --kafka.bootstrap.servers\n",
                d->name);
        return -1;
    }
    return 0;
}

int daemon_init(daemon_t *d, const char *name, const config_spec_t *specs, size_t n_specs, int argc,
                char **argv)
{
    memset(d, 0, sizeof(*d));
    d->name = name;
    d->stop = &daemon_stop_flag;
    d->reload = &daemon_reload_flag;
    d->metrics = metrics_default_registry();
    char err[1024];
    d->cfg = config_load(specs, n_specs, argc, argv, err, sizeof(err));
    if (!d->cfg) {
        fprintf(stderr, "%s: %s\n", name, err);
        return 2;
    }
    if (config_help_requested(d->cfg)) {
        config_print_help(specs, n_specs, name, stdout);
        return 0;
    }
    const char *lv = config_get_str(d->cfg, "log-level");
    log_level_t level = LOG_LEVEL_INFO;
    if (log_level_parse(lv, &level) != 0) {
        fprintf(stderr, "%s: --log-level: \"%s\" is not debug, info, warn or error\n", name, lv);
        return 2;
    }
    log_setup(name, level, config_get_bool(d->cfg, "log-json"));
    int64_t port = config_get_int(d->cfg, "http-port");
    if (port < -1 || port > 65535) {
        fprintf(stderr, "%s: --http-port must be -1..65535\n", name);
        return 2;
    }
    return daemon_kafka_props(d) ? 2 : DAEMON_CONTINUE;
}

static int daemon_http_setup(httpd_t *h, void *arg)
{
    daemon_t *d = arg;
    httpd_set_metrics(h, d->metrics);
    httpd_set_ready_reason(h, d->ready_reason);
    return 0;
}

static int daemon_http_start(daemon_t *d, const char *ready_reason)
{
    int64_t port = config_get_int(d->cfg, "http-port");
    if (port < 0)
        return 0;
    char err[512];
    httpd_options_t ho = {.bind_addr = config_get_str(d->cfg, "http-listen"),
                          .port = (uint16_t)port};
    d->ready_reason = ready_reason;
    d->http = httpd_thread_start(&ho, daemon_http_setup, d, err, sizeof(err));
    if (!d->http) {
        fprintf(stderr, "%s: HTTP server: %s\n", d->name, err);
        return -1;
    }
    uint16_t bound = httpd_port(httpd_thread_server(d->http));
    log_info("%s: /metrics on %s:%u", d->name, ho.bind_addr, bound);
    const char *pf = config_get_str(d->cfg, "http-port-file");
    if (pf) {
        FILE *f = fopen(pf, "w");
        bool ok = f && fprintf(f, "%u\n", bound) >= 0;
        if (f && fclose(f))
            ok = false;
        if (!ok) {
            fprintf(stderr, "%s: cannot write the HTTP port to %s\n", d->name, pf);
            return -1;
        }
    }
    return 0;
}

int daemon_start(daemon_t *d, const char *ready_reason, bool hup)
{
    if (daemon_http_start(d, ready_reason))
        return -1;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = daemon_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    if (hup)
        sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

void daemon_set_ready(daemon_t *d, bool ready, const char *reason)
{
    if (!d->http)
        return;
    httpd_t *h = httpd_thread_server(d->http);
    if (!ready && reason)
        httpd_set_ready_reason(h, reason);
    httpd_set_ready(h, ready);
}

int daemon_wait(daemon_t *d, daemon_wait_fn fn, void *arg, const char *what)
{
    for (int waited = 0; !*d->stop; waited++) {
        if (fn(arg, 1000) == 0)
            return 0;
        if (waited % 10 == 9)
            log_warn("%s: still waiting for %s (%d s); not ready yet", d->name, what, waited + 1);
    }
    return -1;
}

void daemon_free(daemon_t *d)
{
    if (d->http)
        httpd_thread_stop(d->http);
    d->http = NULL;
    free(d->props);
    d->props = NULL;
    config_free(d->cfg);
    d->cfg = NULL;
}
