/* ndd's role instances on their threads: see ndd_supervise.h.
 *
 * Each instance is the role's own run function on a daemon_t of its own (daemon_init_embedded),
 * so a role in ndd has the daemon's guarantees, metrics and readiness rule. A role that
 * returns without being asked to stop (its worker failed, a broker refused its DLQ) is
 * started again from its settings after a backoff of 1 s doubling to 30 s (back to 1 s after
 * a minute of running), counted in ndd_director_role_restarts_total{role}; until it runs
 * again /readyz names it, and the alarm role-restarted (major, resource: the role) is raised
 * on ndd.events until the role has run for a minute again. A crash of the process (a signal) cannot
 * be isolated in one process: the orchestrator restarts ndd, and at-least-once holds as for any
 * daemon. */
#include "ndd_supervise.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "events.h"
#include "httpd.h"
#include "log.h"
#include "metrics.h"

/* A role that ran this long is well again: its backoff starts over, its alarm clears. */
#define NDD_ROLE_STEADY_MS 60000

enum { INST_STARTING = 0, INST_RUNNING, INST_RESTARTING, INST_STOPPED };

typedef struct ndd_inst {
    const ndd_instance_conf_t *conf;
    struct ndd_supervisor *sup;
    daemon_def_t def; /* the role's, with this instance's settings */
    void *settings;
    daemon_embed_t embed;
    daemon_t d;
    int state;     /* INST_*, under sup->mu */
    char why[256]; /* why it is restarting */
    pthread_t thread;
    bool thread_started;
    metrics_counter_t *restarts;
    metrics_gauge_t *up;
    int64_t started_ms;  /* when it last started running, under sup->mu */
    unsigned n_restarts; /* under sup->mu */
} ndd_inst_t;

struct ndd_supervisor {
    daemon_t *host;
    pthread_mutex_t mu; /* the instances' state and daemon_t lifetimes, readiness rendering */
    bool stopping;
    events_hub_t *hub; /* NULL without brokers */
    events_t *ev;      /* ndd's own publisher (role-restarted), on hub */
    ndd_inst_t inst[NDD_CONFIG_MAX_INSTANCES];
    size_t n;
};

/* /readyz: ready when ndd's broker answered and every instance is running and ready; the
 * first line names the first that is not, then one line per instance. Under s->mu. */
static void render_locked(struct ndd_supervisor *s)
{
    if (!s->host->http)
        return;
    char detail[2048], first[256] = "";
    size_t o = 0;
    const char *host_why = daemon_ready_reason(s->host);
    if (host_why)
        snprintf(first, sizeof first, "%s", host_why);
    for (size_t i = 0; i < s->n; i++) {
        ndd_inst_t *in = &s->inst[i];
        const char *why = in->state == INST_RUNNING    ? daemon_ready_reason(&in->d)
                          : in->state == INST_STARTING ? "starting"
                                                       : in->why;
        /* The first reason is a one-line summary: a long one is cut, knowingly (the return
         * value is looked at so gcc's -Wformat-truncation accepts the cut at -O0 too). */
        if (why && !first[0] && snprintf(first, sizeof first, "%s: %s", in->conf->name, why) < 0)
            first[0] = '\0';
        if (o < sizeof detail)
            o += (size_t)snprintf(detail + o, sizeof detail - o, "%s: %s\n", in->conf->name,
                                  why ? why : "ready");
    }
    httpd_t *h = httpd_thread_server(s->host->http);
    httpd_set_ready_detail(h, detail);
    if (first[0])
        httpd_set_ready_reason(h, first);
    httpd_set_ready(h, first[0] == '\0');
}

static void on_ready(void *arg)
{
    struct ndd_supervisor *s = arg;
    pthread_mutex_lock(&s->mu);
    render_locked(s);
    pthread_mutex_unlock(&s->mu);
}

static void inst_prepare(ndd_inst_t *in)
{
    in->def = *in->conf->role->def;
    in->def.settings = in->settings;
    in->embed = (daemon_embed_t){.host = in->sup->host,
                                 .leaves = in->conf->leaves,
                                 .n_leaves = in->conf->n_leaves,
                                 .origin = in->conf->origin,
                                 .on_ready = on_ready,
                                 .arg = in->sup,
                                 .events_hub = in->sup->hub};
}

/* Sleeps ms in steps, false when ndd stops first. */
static bool backoff_sleep(struct ndd_supervisor *s, int64_t ms)
{
    for (int64_t end = mono_now_ms() + ms; mono_now_ms() < end;) {
        if (*s->host->stop)
            return false;
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return !*s->host->stop;
}

static void *inst_main(void *arg)
{
    ndd_inst_t *in = arg;
    struct ndd_supervisor *s = in->sup;
    int64_t backoff = 1000;
    for (;;) {
        char err[1024] = "";
        pthread_mutex_lock(&s->mu);
        memset(in->settings, 0, in->conf->role->settings_size);
        inst_prepare(in);
        int rc = daemon_init_embedded(&in->d, &in->def, &in->embed, NULL, err, sizeof(err));
        bool go = rc == DAEMON_CONTINUE && !s->stopping;
        int64_t started = mono_now_ms();
        if (go) {
            in->state = INST_RUNNING;
            in->started_ms = started;
        }
        pthread_mutex_unlock(&s->mu);
        if (go) {
            if (in->up)
                metrics_gauge_set(in->up, 1);
            log_info("ndd: role %s started", in->conf->name);
            rc = in->conf->role->run(&in->d);
            if (in->up)
                metrics_gauge_set(in->up, 0);
        } else if (rc != DAEMON_CONTINUE) {
            log_error("ndd: role %s: %s", in->conf->name, err);
        }
        pthread_mutex_lock(&s->mu);
        bool stopping = s->stopping;
        if (!stopping) {
            in->state = INST_RESTARTING;
            if (mono_now_ms() - started >= NDD_ROLE_STEADY_MS)
                backoff = 1000;
            snprintf(in->why, sizeof in->why, "stopped (exit %d), restarting in %lld s", rc,
                     (long long)(backoff / 1000));
            in->n_restarts++;
            if (s->ev) {
                char text[384];
                snprintf(text, sizeof text, "role %s %s (restart %u)", in->conf->name, in->why,
                         in->n_restarts);
                events_alarm_raise(s->ev, "role-restarted", in->conf->name, EVENTS_MAJOR, text);
            }
        } else {
            in->state = INST_STOPPED;
            snprintf(in->why, sizeof in->why, "stopping");
        }
        daemon_free(&in->d);
        render_locked(s);
        pthread_mutex_unlock(&s->mu);
        if (stopping)
            break;
        log_error("ndd: role %s %s", in->conf->name, in->why);
        if (in->restarts)
            metrics_counter_inc(in->restarts);
        if (!backoff_sleep(s, backoff))
            break;
        backoff = backoff * 2 > 30000 ? 30000 : backoff * 2;
        pthread_mutex_lock(&s->mu);
        in->state = INST_STARTING;
        pthread_mutex_unlock(&s->mu);
    }
    return NULL;
}

int ndd_supervise_check(const ndd_config_t *c, const daemon_t *host, FILE *out, char *err,
                        size_t errlen)
{
    for (size_t i = 0; i < c->n_inst; i++) {
        const ndd_instance_conf_t *ic = &c->inst[i];
        void *settings = calloc(1, ic->role->settings_size);
        if (!settings) {
            snprintf(err, errlen, "%s: out of memory", ic->name);
            return -1;
        }
        daemon_def_t def = *ic->role->def;
        def.settings = settings;
        daemon_embed_t e = {
            .host = host, .leaves = ic->leaves, .n_leaves = ic->n_leaves, .origin = ic->origin};
        daemon_t d;
        char e1[1024] = "";
        int rc = daemon_init_embedded(&d, &def, &e, out, e1, sizeof(e1));
        daemon_free(&d);
        free(settings);
        if (rc != DAEMON_CONTINUE) {
            snprintf(err, errlen, "roles: %s (%s): %s", ic->name, ic->origin, e1);
            return -1;
        }
    }
    return 0;
}

ndd_supervisor_t *ndd_supervise_start(const ndd_config_t *c, daemon_t *host,
                                      const char *events_topic, char *err, size_t errlen)
{
    struct ndd_supervisor *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->host = host;
    pthread_mutex_init(&s->mu, NULL);
    if (host->brokers && *host->brokers) {
        /* One producer for every role's events instead of one per role (each with its
         * threads and broker connections); a role's dead letters keep their own, since their
         * delivery gates that role's offset commits. */
        s->hub = events_hub_new(host->brokers, host->props, host->n_props, err, errlen);
        events_opts_t eo = {.hub = s->hub,
                            .topic = events_topic,
                            .service = "ndd",
                            .version = daemon_version(),
                            .own_thread = true,
                            .metrics = host->metrics};
        s->ev = s->hub ? events_new(&eo, err, errlen) : NULL;
        if (!s->ev) {
            ndd_supervise_free(s);
            return NULL;
        }
    }
    metrics_family_t *fr =
        metrics_counter_new(host->metrics, "ndd_director_role_restarts_total",
                            "times a role of ndd stopped by itself and was started again", "role");
    metrics_family_t *fu = metrics_gauge_new(host->metrics, "ndd_director_role_up",
                                             "1 while a role of ndd runs", "role");
    host->ready_hook = on_ready;
    host->ready_hook_arg = s;
    for (size_t i = 0; i < c->n_inst; i++) {
        ndd_inst_t *in = &s->inst[s->n];
        in->conf = &c->inst[i];
        in->sup = s;
        in->settings = calloc(1, in->conf->role->settings_size);
        in->restarts = fr ? metrics_counter_labels(fr, in->conf->name) : NULL;
        in->up = fu ? metrics_gauge_labels(fu, in->conf->name) : NULL;
        if (!in->settings) {
            snprintf(err, errlen, "%s: out of memory", in->conf->name);
            ndd_supervise_free(s);
            return NULL;
        }
        s->n++;
    }
    on_ready(s);
    for (size_t i = 0; i < s->n; i++) {
        ndd_inst_t *in = &s->inst[i];
        if (pthread_create(&in->thread, NULL, inst_main, in) != 0) {
            snprintf(err, errlen, "%s: cannot start its thread", in->conf->name);
            *host->stop = 1;
            ndd_supervise_run(s);
            ndd_supervise_free(s);
            return NULL;
        }
        in->thread_started = true;
    }
    return s;
}

void ndd_supervise_run(ndd_supervisor_t *s)
{
    while (!*s->host->stop) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        if (*s->host->reload) {
            *s->host->reload = 0;
            pthread_mutex_lock(&s->mu);
            for (size_t i = 0; i < s->n; i++)
                if (s->inst[i].state == INST_RUNNING)
                    s->inst[i].d.own_reload = 1;
            pthread_mutex_unlock(&s->mu);
            log_info("ndd: SIGHUP: every role reloads");
        }
        /* role-restarted clears once the role has run as long as resets its backoff. */
        pthread_mutex_lock(&s->mu);
        for (size_t i = 0; i < s->n; i++) {
            ndd_inst_t *in = &s->inst[i];
            if (s->ev && in->state == INST_RUNNING &&
                mono_now_ms() - in->started_ms >= NDD_ROLE_STEADY_MS &&
                events_alarm_active(s->ev, "role-restarted", in->conf->name))
                events_alarm_clear(s->ev, "role-restarted", in->conf->name);
        }
        pthread_mutex_unlock(&s->mu);
    }
    log_info("ndd: stopping every role");
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_mutex_unlock(&s->mu);
    if (s->host->http)
        httpd_set_ready_reason(httpd_thread_server(s->host->http), "stopping");
    /* Every role drains at once; one that is between two runs sees stopping and ends. */
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n; i++)
        if (s->inst[i].state == INST_RUNNING)
            s->inst[i].d.own_stop = 1;
    pthread_mutex_unlock(&s->mu);
    for (size_t i = 0; i < s->n; i++) {
        ndd_inst_t *in = &s->inst[i];
        if (in->thread_started)
            pthread_join(in->thread, NULL);
        in->thread_started = false;
    }
}

void ndd_supervise_free(ndd_supervisor_t *s)
{
    if (!s)
        return;
    s->host->ready_hook = NULL;
    for (size_t i = 0; i < s->n; i++)
        free(s->inst[i].settings);
    /* after every role's publisher: they were freed when their role ended */
    events_free(s->ev, 3000);
    events_hub_free(s->hub, 3000);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
