/* Live figures for the console's overview. A poller thread, every poll-interval, reads the
 * admin's /status (workers up/down, per-feed lag, health, endpoints down) and scrapes the
 * workers' /metrics (metrics-urls: the heartbeats in /status carry no address), and turns
 * counters into rates between two scrapes. A metrics URL stands for every address its host
 * resolves to at that poll (a headless Service: every pod of a worker with replicas), its
 * IPv4 ones when it has both families; each address is scraped (several at once, each with
 * upstream-timeout) and all samples of a poll are added together, so the figures cover every
 * pod. An address that fails leaves only its own samples out (logged, counted in
 * ndd_gui_scrape_errors_total). The figures:
 *   egress/<feed>   copies/s acknowledged by the feed's endpoints
 * (ndd_adapter_messages_acked_total) ingress/<nf>    copies/s written to MAIN per NF type
 * (ndd_aggregation_messages_produced_total) p50/<feed>, p99/<feed>  end-to-end latency in
 * milliseconds over the last interval, from the ndd_adapter_e2e_latency_seconds buckets (linear
 * inside a bucket)
 *   lag/<feed>      consumer lag: the admin's /status, or, where it carries none, the adapters'
 *                   ndd_adapter_consumer_lag_messages (summed over adapters)
 *   dlq/<feed>      dead-lettered copies since the adapter started
 * Each sample is one frame {t, values}; the last history-points frames are kept (bounded).
 * GET /console/live answers server-sent events: the frames after Last-Event-ID and the
 * latest status, then ends with retry: so EventSource reconnects a poll-interval later
 * (services/base/httpd answers each request before its handler returns, so a stream is a
 * sequence of short responses). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gui.h"
#include "log.h"

#define GUI_LIVE_KEYS 2048

/* Series of one sample: key ("acked/<feed>", "le/<feed>/<le>", ...) to value, at most
 * GUI_LIVE_KEYS (grown as needed, kept for the next poll). */
typedef struct gui_kv {
    char key[112];
    double v;
} gui_kv_t;
typedef struct gui_acc {
    size_t n, cap;
    gui_kv_t *kv;
} gui_acc_t;

typedef struct gui_frame {
    int64_t seq, t_ms;
    json_t *values;
} gui_frame_t;

/* One metrics-urls entry. */
typedef struct gui_target {
    gui_url_t url;
    char name[600];            /* the URL as configured: what logs name */
    metrics_counter_t *errors; /* ndd_gui_scrape_errors_total{endpoint=host:port} */
    int64_t warned_ms;         /* last warning logged (scrape->mu) */
} gui_target_t;

/* One address of one target to scrape in this poll, and what it answered. */
typedef struct gui_job {
    size_t target;
    gui_addr_t addr;
    bool ok;
    gui_acc_t acc; /* this address's series alone */
} gui_job_t;

struct gui_live {
    const gui_settings_t *s;
    gui_sessions_t *sessions;
    gui_url_t admin;
    gui_target_t *targets;
    size_t n_targets;
    gui_resolve_fn resolve;
    /* n_targets * GUI_HTTP_MAX_ADDRS each: this poll's addresses and the previous poll's */
    gui_job_t *jobs, *prev_jobs;
    size_t n_jobs, n_prev_jobs;
    char token[160];
    pthread_t th;
    bool started;
    volatile bool stop;
    pthread_mutex_t mu; /* frames, status */
    gui_frame_t *frames;
    size_t cap, head, count;
    int64_t seq;
    json_t *status;
    /* Summed over the addresses of a poll: cur the values, delta the increase since the
     * previous poll of the addresses read in both (a counter that went down, a restart,
     * adds 0). Rates per address, then summed: a pod that appears, or misses a poll and
     * comes back, does not add its whole count since it started as one interval's. */
    gui_acc_t cur, delta;
    int64_t prev_ms;
};

static void gui_acc_add(gui_acc_t *a, const char *key, double v)
{
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->kv[i].key, key) == 0) {
            a->kv[i].v += v;
            return;
        }
    if (a->n == GUI_LIVE_KEYS || strlen(key) >= sizeof(a->kv[0].key))
        return; /* bounded: further series are not shown */
    gui_kv_t *kv = buf_array_room(a->kv, a->n, &a->cap, sizeof(*kv), 64, GUI_LIVE_KEYS);
    if (!kv)
        return; /* out of memory: this series is not shown */
    a->kv = kv;
    strcpy(a->kv[a->n].key, key);
    a->kv[a->n++].v = v;
}

/* The value of key; hint: where it likely is (an address lists its series in the same order
 * at every scrape). */
static bool gui_acc_get(const gui_acc_t *a, const char *key, size_t hint, double *v)
{
    if (hint < a->n && strcmp(a->kv[hint].key, key) == 0) {
        *v = a->kv[hint].v;
        return true;
    }
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->kv[i].key, key) == 0) {
            *v = a->kv[i].v;
            return true;
        }
    return false;
}

static void gui_live_sample(const gui_prom_sample_t *s, void *arg)
{
    gui_acc_t *a = arg;
    char feed[64], k[112], le[32];
    if (strcmp(s->name, "ndd_adapter_messages_acked_total") == 0 &&
        gui_prom_label(s, "feed", feed, sizeof(feed))) {
        snprintf(k, sizeof(k), "acked/%s", feed);
        gui_acc_add(a, k, s->value);
    } else if (strcmp(s->name, "ndd_adapter_messages_dead_lettered_total") == 0 &&
               gui_prom_label(s, "feed", feed, sizeof(feed))) {
        snprintf(k, sizeof(k), "dlq/%s", feed);
        gui_acc_add(a, k, s->value);
    } else if (strcmp(s->name, "ndd_adapter_consumer_lag_messages") == 0 &&
               gui_prom_label(s, "feed", feed, sizeof(feed))) {
        snprintf(k, sizeof(k), "lagm/%s", feed);
        gui_acc_add(a, k, s->value);
    } else if (strcmp(s->name, "ndd_aggregation_messages_produced_total") == 0 &&
               gui_prom_label(s, "nf_type", feed, sizeof(feed))) {
        snprintf(k, sizeof(k), "in/%s", feed);
        gui_acc_add(a, k, s->value);
    } else if (strcmp(s->name, "ndd_adapter_e2e_latency_seconds_bucket") == 0 &&
               gui_prom_label(s, "feed", feed, sizeof(feed)) &&
               gui_prom_label(s, "le", le, sizeof(le))) {
        snprintf(k, sizeof(k), "le/%s/%s", feed, le);
        gui_acc_add(a, k, s->value);
    }
}

/* The q quantile of feed's latency over the interval: the bucket deltas, sorted by le. */
static double gui_live_quantile(const gui_acc_t *delta, const char *feed, double q)
{
    double les[64], cnt[64];
    size_t n = 0, fl = strlen(feed);
    for (size_t i = 0; i < delta->n && n < 64; i++) {
        const char *k = delta->kv[i].key;
        if (strncmp(k, "le/", 3) || strncmp(k + 3, feed, fl) || k[3 + fl] != '/')
            continue;
        double le = strtod(k + 4 + fl, NULL);
        size_t j = n++;
        while (j > 0 && les[j - 1] > le) {
            les[j] = les[j - 1];
            cnt[j] = cnt[j - 1];
            j--;
        }
        les[j] = le;
        cnt[j] = delta->kv[i].v;
    }
    if (n == 0 || cnt[n - 1] <= 0)
        return NAN;
    double target = q * cnt[n - 1];
    for (size_t i = 0; i < n; i++)
        if (cnt[i] >= target) {
            double lo = i ? les[i - 1] : 0, clo = i ? cnt[i - 1] : 0;
            if (isinf(les[i]))
                return lo;
            return cnt[i] > clo ? lo + (les[i] - lo) * (target - clo) / (cnt[i] - clo) : les[i];
        }
    return les[n - 1];
}

static json_t *gui_live_frame_values(gui_live_t *l, json_t *status, double dt)
{
    json_t *v = json_object();
    const gui_acc_t *cur = &l->cur;
    for (size_t i = 0; i < cur->n; i++) {
        const char *k = cur->kv[i].key;
        char out[128];
        double d;
        if (strncmp(k, "dlq/", 4) == 0)
            json_object_set_new(v, k, json_real(cur->kv[i].v));
        if (strncmp(k, "lagm/", 5) == 0) { /* a gauge; /status's lag, below, wins */
            snprintf(out, sizeof(out), "lag/%s", k + 5);
            json_object_set_new(v, out, json_real(cur->kv[i].v));
        }
        if (dt <= 0 || !gui_acc_get(&l->delta, k, i, &d))
            continue; /* no address read in both polls */
        double rate = d / dt;
        if (strncmp(k, "acked/", 6) == 0) {
            snprintf(out, sizeof(out), "egress/%s", k + 6);
            json_object_set_new(v, out, json_real(rate));
            const char *feed = k + 6;
            double p50 = gui_live_quantile(&l->delta, feed, 0.5),
                   p99 = gui_live_quantile(&l->delta, feed, 0.99);
            snprintf(out, sizeof(out), "p50/%s", feed); /* ms: the console's unit */
            json_object_set_new(v, out, isnan(p50) ? json_null() : json_real(p50 * 1000));
            snprintf(out, sizeof(out), "p99/%s", feed);
            json_object_set_new(v, out, isnan(p99) ? json_null() : json_real(p99 * 1000));
        } else if (strncmp(k, "in/", 3) == 0) {
            snprintf(out, sizeof(out), "ingress/%s", k + 3);
            json_object_set_new(v, out, json_real(rate));
        }
    }
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(status, "feeds"), i, f)
    {
        const char *name = json_string_value(json_object_get(f, "name"));
        char out[128];
        if (!name)
            continue;
        snprintf(out, sizeof(out), "lag/%s", name);
        json_t *lag = json_object_get(f, "lag");
        if (json_is_number(lag))
            json_object_set(v, out, lag);
        else if (!json_object_get(v, out))
            json_object_set_new(v, out, json_null());
    }
    return v;
}

/* A list of /status as it is (the feeds' live figures, the aggregation and correlation
 * workers' heartbeats), at most GUI_LIVE_LIST entries: the admin bounds each entry. */
#define GUI_LIVE_LIST 1024
static json_t *gui_live_list(const json_t *st, const char *key)
{
    json_t *out = json_array(), *x;
    size_t i;
    json_array_foreach(json_object_get(st, key), i, x) if (i < GUI_LIVE_LIST && json_is_object(x))
        json_array_append(out, x);
    return out;
}

/* The status the overview shows next to the charts: workers reduced to their state. */
static json_t *gui_live_status_summary(const json_t *st)
{
    json_t *w = json_array();
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(st, "workers"), i, x) json_array_append_new(
        w, json_pack("{s:O?,s:O?,s:O?}", "service", json_object_get(x, "service"), "instance",
                     json_object_get(x, "instance"), "state", json_object_get(x, "state")));
    return json_pack("{s:o,s:o,s:o,s:o,s:O?}", "workers", w, "feeds", gui_live_list(st, "feeds"),
                     "aggregation", gui_live_list(st, "aggregation"), "correlation",
                     gui_live_list(st, "correlation"), "database", json_object_get(st, "database"));
}

/* Scrapers of one poll: at most this many addresses are read at once, so one address that
 * does not answer costs its upstream-timeout without holding up the others. A poll takes at
 * most ceil(addresses / GUI_LIVE_SCRAPERS) upstream-timeouts (plus the resolution). */
#define GUI_LIVE_SCRAPERS 8
#define GUI_LIVE_WARN_MS 60000 /* one warning per URL per minute; the counter counts all */

typedef struct gui_scrape {
    gui_live_t *l;
    size_t n, next;
    int timeout_ms;
    pthread_mutex_t mu; /* next, the targets' warned_ms */
} gui_scrape_t;

/* Whether a warning about t is due (one per GUI_LIVE_WARN_MS), and if so, now it is given. */
static bool gui_warn_due(gui_target_t *t)
{
    int64_t now = mono_now_ms();
    if (t->warned_ms != 0 && now - t->warned_ms < GUI_LIVE_WARN_MS)
        return false;
    t->warned_ms = now;
    return true;
}

/* Counts a failed scrape of t (at addr, NULL when the name did not resolve) and logs it: a
 * warning the first time in a minute, debug after, so a pod gone for good does not flood the
 * log. Called with the scrape's mu held, or before its threads start. */
static void gui_scrape_failed(gui_target_t *t, const gui_addr_t *addr, const char *err)
{
    char a[64] = "name lookup";
    if (addr)
        gui_addr_format(addr, a, sizeof(a));
    metrics_counter_inc(t->errors);
    if (gui_warn_due(t))
        log_warn("gui: live: scrape %s (%s): %s (its figures leave this poll out; further "
                 "failures of this URL within a minute are logged at debug)",
                 t->name, a, err);
    else
        log_debug("gui: live: scrape %s (%s): %s", t->name, a, err);
}

static void gui_scrape_one(gui_scrape_t *sc, gui_job_t *job, gui_http_resp_t *r)
{
    gui_target_t *t = &sc->l->targets[job->target];
    const gui_url_t *u = &t->url;
    char err[512];
    int rc = gui_http_request_at(u, &job->addr, "GET", u->path[0] ? u->path : "/metrics", NULL,
                                 NULL, 0, sc->timeout_ms, r, err, sizeof(err));
    if (rc == 0 && r->status != 200) {
        snprintf(err, sizeof(err), "answered %d", r->status);
        rc = -1;
    }
    /* Into the address's own series (no lock): gui_live_combine sums them after the poll. A
     * malformed answer counts as none, not as the part before the bad line. */
    if (rc == 0 && gui_prom_parse((char *)r->body.data, r->body.len, gui_live_sample, &job->acc,
                                  err, sizeof(err)) < 0)
        rc = -1;
    job->ok = rc == 0;
    if (rc != 0) {
        pthread_mutex_lock(&sc->mu);
        gui_scrape_failed(t, &job->addr, err);
        pthread_mutex_unlock(&sc->mu);
    }
}

static void *gui_scrape_worker(void *arg)
{
    gui_scrape_t *sc = arg;
    gui_http_resp_t r;
    buf_init(&r.body, 16384, 8 << 20);
    for (;;) {
        pthread_mutex_lock(&sc->mu);
        size_t j = sc->next < sc->n ? sc->next++ : SIZE_MAX;
        pthread_mutex_unlock(&sc->mu);
        if (j == SIZE_MAX)
            break;
        gui_scrape_one(sc, &sc->l->jobs[j], &r);
    }
    buf_free(&r.body);
    return NULL;
}

/* The previous poll's answer of the address c read (same URL, same address), or NULL. */
static const gui_job_t *gui_live_prev_job(const gui_live_t *l, const gui_job_t *c)
{
    for (size_t j = 0; j < l->n_prev_jobs; j++) {
        const gui_job_t *p = &l->prev_jobs[j];
        if (p->ok && p->target == c->target && p->addr.len == c->addr.len &&
            memcmp(&p->addr.sa, &c->addr.sa, c->addr.len) == 0)
            return p;
    }
    return NULL;
}

/* l->cur and l->delta from this poll's answers (see struct gui_live). */
static void gui_live_combine(gui_live_t *l)
{
    l->cur.n = l->delta.n = 0;
    for (size_t j = 0; j < l->n_jobs; j++) {
        const gui_job_t *c = &l->jobs[j];
        if (!c->ok)
            continue;
        const gui_job_t *p = gui_live_prev_job(l, c);
        for (size_t i = 0; i < c->acc.n; i++) {
            const gui_kv_t *kv = &c->acc.kv[i];
            double before;
            gui_acc_add(&l->cur, kv->key, kv->v);
            if (p && gui_acc_get(&p->acc, kv->key, i, &before))
                gui_acc_add(&l->delta, kv->key, kv->v >= before ? kv->v - before : 0);
        }
    }
}

/* Resolves every metrics URL now (pods come and go between polls), scrapes each of its
 * addresses, and sums their series into l->cur and l->delta. */
static void gui_live_scrape(gui_live_t *l, int timeout_ms)
{
    gui_scrape_t sc = {.l = l, .timeout_ms = timeout_ms};
    pthread_mutex_init(&sc.mu, NULL);
    gui_job_t *swap = l->prev_jobs; /* each job keeps its series buffer from poll to poll */
    l->prev_jobs = l->jobs;
    l->jobs = swap;
    l->n_prev_jobs = l->n_jobs;
    l->n_jobs = 0;
    for (size_t i = 0; i < l->n_targets; i++) {
        gui_target_t *t = &l->targets[i];
        gui_addr_t addrs[GUI_HTTP_MAX_ADDRS];
        char err[512];
        int found = l->resolve(&t->url, addrs, GUI_HTTP_MAX_ADDRS, err, sizeof(err));
        if (found <= 0) {
            gui_scrape_failed(t, NULL, found < 0 ? err : "no address");
            continue;
        }
        size_t n = gui_addrs_one_family(
            addrs, (size_t)found < GUI_HTTP_MAX_ADDRS ? (size_t)found : GUI_HTTP_MAX_ADDRS);
        if (found > GUI_HTTP_MAX_ADDRS && gui_warn_due(t))
            log_warn("gui: live: %s resolves to %d addresses: the first %d are scraped", t->name,
                     found, GUI_HTTP_MAX_ADDRS);
        for (size_t a = 0; a < n; a++) {
            gui_job_t *j = &l->jobs[l->n_jobs++];
            j->target = i;
            j->addr = addrs[a];
            j->ok = false;
            j->acc.n = 0;
        }
    }
    sc.n = l->n_jobs;
    pthread_t th[GUI_LIVE_SCRAPERS - 1];
    size_t started = 0;
    while (started + 1 < GUI_LIVE_SCRAPERS && started + 1 < sc.n &&
           pthread_create(&th[started], NULL, gui_scrape_worker, &sc) == 0)
        started++;
    gui_scrape_worker(&sc); /* the poller scrapes too: all of it when no thread could start */
    for (size_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&sc.mu);
    gui_live_combine(l);
}

static void gui_live_tick(gui_live_t *l)
{
    char token[160], hdr[256], err[512];
    if (l->token[0])
        snprintf(token, sizeof(token), "%s", l->token);
    else if (!gui_sessions_any_token(l->sessions, mono_now_ms(), token, sizeof(token)))
        return; /* nobody logged in and no token file: nothing to show, nothing read */
    snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s\r\n", token);
    gui_http_resp_t r;
    buf_init(&r.body, 16384, 8 << 20);
    json_t *st = NULL;
    int to = (int)l->s->upstream_timeout_ms;
    if (gui_http_request(&l->admin, "GET", "/api/v1/status", hdr, NULL, 0, to, &r, err,
                         sizeof(err)) != 0)
        log_warn("gui: live: ndd-admin /status: %s", err);
    else if (r.status != 200)
        log_warn("gui: live: ndd-admin /status answered %d", r.status);
    else
        st = json_loadb((char *)r.body.data, r.body.len, 0, NULL);
    gui_live_scrape(l, to);
    int64_t now = mono_now_ms();
    double dt = l->prev_ms ? (double)(now - l->prev_ms) / 1000.0 : 0;
    l->prev_ms = now;
    json_t *values = gui_live_frame_values(l, st, dt);
    json_t *summary = st ? gui_live_status_summary(st) : NULL;
    pthread_mutex_lock(&l->mu);
    gui_frame_t *f = &l->frames[(l->head + l->count) % l->cap];
    if (l->count == l->cap) {
        json_decref(l->frames[l->head].values);
        f = &l->frames[l->head];
        l->head = (l->head + 1) % l->cap;
    } else {
        l->count++;
    }
    f->seq = ++l->seq;
    f->t_ms = wall_now_ms(); /* the charts' time axis is the wall clock; rates use mono */
    f->values = values;
    if (summary) {
        json_decref(l->status);
        l->status = summary;
    }
    pthread_mutex_unlock(&l->mu);
    json_decref(st);
    buf_free(&r.body);
}

static void *gui_live_main(void *arg)
{
    gui_live_t *l = arg;
    while (!l->stop) {
        int64_t start = mono_now_ms();
        gui_live_tick(l);
        for (int64_t left; !l->stop && (left = start + l->s->poll_ms - mono_now_ms()) > 0;)
            usleep((useconds_t)(left > 100 ? 100000 : left * 1000));
    }
    return NULL;
}

/* The metrics-urls, each with its error counter; the jobs of a poll sized for all. */
static int gui_live_targets(gui_live_t *l, char *err, size_t errlen)
{
    metrics_family_t *fam = metrics_counter_new(
        metrics_default_registry(), "ndd_gui_scrape_errors_total",
        "scrapes of a metrics-urls address (or resolutions of its name) that failed, by the "
        "URL's host:port",
        "endpoint");
    for (const char *p = l->s->metrics_urls; p && *p;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        gui_target_t *t = NULL;
        if (n && n < sizeof(t->name)) {
            t = realloc(l->targets, (l->n_targets + 1) * sizeof(*t));
            if (!t) {
                snprintf(err, errlen, "out of memory");
                return -1;
            }
            l->targets = t;
            t = &t[l->n_targets];
            memset(t, 0, sizeof(*t));
            memcpy(t->name, p, n);
            if (gui_url_parse(t->name, &t->url, err, errlen) != 0)
                return -1;
            char ep[300];
            bool v6 = strchr(t->url.host, ':') != NULL;
            snprintf(ep, sizeof(ep), v6 ? "[%s]:%s" : "%s:%s", t->url.host, t->url.port);
            t->errors = fam ? metrics_counter_labels(fam, ep) : NULL;
            l->n_targets++;
        }
        p = e ? e + 1 : p + n;
    }
    l->jobs = calloc(l->n_targets * GUI_HTTP_MAX_ADDRS + 1, sizeof(*l->jobs));
    l->prev_jobs = calloc(l->n_targets * GUI_HTTP_MAX_ADDRS + 1, sizeof(*l->prev_jobs));
    if (!l->jobs || !l->prev_jobs) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

void gui_live_set_resolver(gui_live_t *l, gui_resolve_fn fn)
{
    l->resolve = fn ? fn : gui_http_resolve;
}

gui_live_t *gui_live_new(const gui_settings_t *s, gui_sessions_t *sessions, char *err,
                         size_t errlen)
{
    gui_live_t *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    l->s = s;
    l->sessions = sessions;
    l->resolve = gui_http_resolve;
    l->cap = (size_t)s->history_points;
    l->frames = calloc(l->cap, sizeof(*l->frames));
    pthread_mutex_init(&l->mu, NULL);
    if (!l->frames || gui_url_parse(s->admin_url, &l->admin, err, errlen) != 0)
        goto fail;
    if (gui_live_targets(l, err, errlen) != 0)
        goto fail;
    if (s->token_file && *s->token_file) {
        FILE *f = fopen(s->token_file, "r");
        if (!f || !fgets(l->token, sizeof(l->token), f)) {
            snprintf(err, errlen, "token-file: cannot read %s", s->token_file);
            if (f)
                fclose(f);
            goto fail;
        }
        fclose(f);
        l->token[strcspn(l->token, "\r\n")] = '\0';
    }
    return l;
fail:
    gui_live_free(l);
    return NULL;
}

int gui_live_start(gui_live_t *l)
{
    l->started = pthread_create(&l->th, NULL, gui_live_main, l) == 0;
    return l->started ? 0 : -1;
}

void gui_live_free(gui_live_t *l)
{
    if (!l)
        return;
    l->stop = true;
    if (l->started)
        pthread_join(l->th, NULL);
    for (size_t i = 0; l->frames && i < l->count; i++)
        json_decref(l->frames[(l->head + i) % l->cap].values);
    json_decref(l->status);
    free(l->frames);
    for (size_t i = 0; l->jobs && l->prev_jobs && i < l->n_targets * GUI_HTTP_MAX_ADDRS; i++) {
        free(l->jobs[i].acc.kv);
        free(l->prev_jobs[i].acc.kv);
    }
    free(l->targets);
    free(l->jobs);
    free(l->prev_jobs);
    free(l->cur.kv);
    free(l->delta.kv);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

json_t *gui_live_snapshot(gui_live_t *l, int64_t after)
{
    json_t *frames = json_array();
    pthread_mutex_lock(&l->mu);
    int64_t last = l->seq;
    if (after > last) /* the server restarted: send everything */
        after = 0;
    for (size_t i = 0; i < l->count; i++) {
        const gui_frame_t *f = &l->frames[(l->head + i) % l->cap];
        if (f->seq > after)
            json_array_append_new(frames, json_pack("[I,O]", (json_int_t)f->t_ms, f->values));
    }
    json_t *msg = json_pack("{s:I,s:I,s:o,s:O?}", "seq", (json_int_t)last, "poll_ms",
                            (json_int_t)l->s->poll_ms, "frames", frames, "status", l->status);
    pthread_mutex_unlock(&l->mu);
    return msg;
}

void gui_live_handle(httpd_req_t *req, gui_live_t *l, const gui_session_info_t *who)
{
    (void)who;
    const char *lid = httpd_req_header(req, "Last-Event-ID");
    json_t *msg = gui_live_snapshot(l, lid ? strtoll(lid, NULL, 10) : 0);
    long long last = (long long)json_integer_value(json_object_get(msg, "seq"));
    char *data = json_dumps(msg, JSON_COMPACT | JSON_REAL_PRECISION(6));
    json_decref(msg);
    buf_t out;
    buf_init(&out, 4096, 64 << 20);
    char head[96];
    snprintf(head, sizeof(head), "retry: %lld\nid: %lld\ndata: ", (long long)l->s->poll_ms, last);
    buf_append_str(&out, head);
    buf_append_str(&out, data ? data : "{}");
    buf_append_str(&out, "\n\n");
    free(data);
    httpd_resp_header(req, "Cache-Control", "no-store");
    httpd_reply(req, 200, "text/event-stream", out.data, out.len);
    buf_free(&out);
}
