/* The daemon skeleton's start-up and shutdown: see daemon.h. */
#include "daemon-int.h"
#include "daemon.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

void daemon_heap_setup(int arena_max)
{
    /* Figures behind these: docs/aggregation.md (a third of the worker's CPU went to fresh
     * zeroed pages; one arena took peak RSS from 93 to 75 MiB, CPU unchanged). */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 128 << 20);
    if (arena_max > 0)
        mallopt(M_ARENA_MAX, arena_max);
}

int daemon_init(daemon_t *d, const daemon_def_t *def, int argc, char **argv)
{
    return daemon_init_leaves(d, def, argc, argv, NULL, 0, NULL);
}

/* What a daemon and a role of ndd share: d zeroed and named, its settings read (argv, env,
 * leaves) but not applied. 0, or 2 with err. e NULL: a process of its own, stopped by its
 * signals; else a role of ndd, stopped by its own flags. */
static int daemon_load(daemon_t *d, const daemon_def_t *def, const daemon_embed_t *e, int argc,
                       char **argv, char **env, const config_leaf_t *leaves, size_t n_leaves,
                       const char *origin, char *err, size_t errlen)
{
    memset(d, 0, sizeof(*d));
    d->name = def->name;
    d->def = def;
    d->common = def->settings;
    d->embed = e;
    d->stop = e ? &d->own_stop : &daemon_stop_flag;
    d->reload = e ? &d->own_reload : &daemon_reload_flag;
    d->metrics = metrics_default_registry();
    d->cfg = config_load_leaves(def->specs, def->n_specs, argc, argv, env, leaves, n_leaves, origin,
                                err, errlen);
    return d->cfg ? 0 : 2;
}

int daemon_init_leaves(daemon_t *d, const daemon_def_t *def, int argc, char **argv,
                       const config_leaf_t *leaves, size_t n_leaves, const char *origin)
{
    char err[1024];
    if (daemon_load(d, def, NULL, argc, argv, environ, leaves, n_leaves, origin, err,
                    sizeof(err))) {
        fprintf(stderr, "%s: %s\n", d->name, err);
        return 2;
    }
    if (config_help_requested(d->cfg)) {
        if (def->usage)
            printf("%s\n", def->usage);
        config_print_help(def->specs, def->n_specs, d->name, stdout);
        return 0;
    }
    if (config_version_requested(d->cfg)) {
        daemon_print_version(d, stdout);
        return 0;
    }
    config_map_apply(d->cfg, def->settings);
    log_level_t level = LOG_LEVEL_INFO;
    if (log_level_parse(d->common->log_level, &level) != 0) {
        fprintf(stderr, "%s: log.level: \"%s\" is not debug, info, warn or error\n", d->name,
                d->common->log_level);
        return 2;
    }
    log_setup(d->name, level, d->common->log_json);
    if (daemon_kafka_setup(d, err, sizeof(err))) {
        fprintf(stderr, "%s: %s\n", d->name, err);
        return 2;
    }
    bool check = config_check_requested(d->cfg);
    if (daemon_run_check(d, check))
        return 2;
    if (check)
        return 0;
    daemon_build_info(d);
    return DAEMON_CONTINUE;
}

int daemon_init_embedded(daemon_t *d, const daemon_def_t *def, const daemon_embed_t *e, FILE *out,
                         char *err, size_t errlen)
{
    /* The environment is ndd's own (NDD_HTTP_PORT would set every role's port at once). */
    static char *const no_env[] = {NULL};
    char *argv0[] = {(char *)def->name, NULL};
    if (daemon_load(d, def, e, 1, argv0, (char **)no_env, e->leaves, e->n_leaves, e->origin, err,
                    errlen))
        return 2;
    config_map_apply(d->cfg, def->settings);
    if (daemon_kafka_setup(d, err, errlen))
        return 2;
    if (out) {
        fprintf(out, "%s (%s):\n", d->name, e->origin);
        config_dump(d->cfg, out);
    }
    char cerr[1024] = "";
    if (def->check && def->check(d, out, cerr, sizeof(cerr))) {
        snprintf(err, errlen, "%s", cerr);
        return 2;
    }
    return DAEMON_CONTINUE;
}

bool daemon_is_embedded(const daemon_t *d)
{
    return d->embed != NULL;
}

int daemon_http_port(const daemon_t *d)
{
    const daemon_t *p = d->embed ? d->embed->host : d;
    return (int)p->common->http_port;
}

struct events_hub *daemon_events_hub(const daemon_t *d)
{
    return d->embed ? d->embed->events_hub : NULL;
}

static int daemon_http_setup(httpd_t *h, void *arg)
{
    daemon_t *d = arg;
    httpd_set_metrics(h, d->metrics);
    httpd_set_ready_reason(h, daemon_ready_reason(d));
    return 0;
}

int daemon_write_port_file(const daemon_t *d, unsigned port)
{
    const char *pf = d->common->http_port_file;
    if (!pf)
        return 0;
    FILE *f = fopen(pf, "w");
    bool ok = f && fprintf(f, "%u\n", port) >= 0;
    if (f && fclose(f))
        ok = false;
    if (!ok) {
        fprintf(stderr, "%s: http.port-file: cannot write the HTTP port to %s\n", d->name, pf);
        return -1;
    }
    return 0;
}

static int daemon_http_start(daemon_t *d)
{
    if (d->common->http_port < 0)
        return 0;
    char err[512];
    httpd_options_t ho = {.bind_addr = d->common->http_listen,
                          .port = (uint16_t)d->common->http_port};
    d->http = httpd_thread_start(&ho, daemon_http_setup, d, err, sizeof(err));
    if (!d->http) {
        fprintf(stderr, "%s: HTTP server on %s:%lld: %s\n", d->name, ho.bind_addr,
                (long long)d->common->http_port, err);
        return -1;
    }
    uint16_t bound = httpd_port(httpd_thread_server(d->http));
    log_info("%s: /metrics on %s:%u", d->name, ho.bind_addr, bound);
    return daemon_write_port_file(d, bound);
}

int daemon_start(daemon_t *d, bool hup)
{
    if (d->embed) {
        daemon_hold(d, DAEMON_COND__COUNT, false); /* publish the first reason to ndd */
        return 0;
    }
    if (daemon_http_start(d))
        return -1;
    daemon_hold(d, DAEMON_COND__COUNT, false); /* publish the first reason */
    daemon_probe_start(d);
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
    daemon_probe_stop(d);
    if (d->http)
        httpd_thread_stop(d->http);
    d->http = NULL;
    free(d->props);
    d->props = NULL;
    config_free(d->cfg);
    d->cfg = NULL;
}
