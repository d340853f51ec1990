/* Live figures for the console's overview. A poller thread, every poll-interval, reads the
 * admin's /status (workers up/down, per-feed lag, health, endpoints down) and scrapes the
 * workers' /metrics (metrics-urls: the heartbeats in /status carry no address), and turns
 * counters into rates between two scrapes:
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

typedef struct gui_acc {
    size_t n;
    char key[GUI_LIVE_KEYS][112];
    double v[GUI_LIVE_KEYS];
} gui_acc_t;

typedef struct gui_frame {
    int64_t seq, t_ms;
    json_t *values;
} gui_frame_t;

struct gui_live {
    const gui_settings_t *s;
    gui_sessions_t *sessions;
    gui_url_t admin;
    gui_url_t *targets;
    size_t n_targets;
    char token[160];
    pthread_t th;
    bool started;
    volatile bool stop;
    pthread_mutex_t mu; /* frames, status */
    gui_frame_t *frames;
    size_t cap, head, count;
    int64_t seq;
    json_t *status;
    gui_acc_t *cur, *prev;
    int64_t prev_ms;
};

static void gui_acc_add(gui_acc_t *a, const char *key, double v)
{
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->key[i], key) == 0) {
            a->v[i] += v;
            return;
        }
    if (a->n == GUI_LIVE_KEYS || strlen(key) >= sizeof(a->key[0]))
        return; /* bounded: further series are not shown */
    strcpy(a->key[a->n], key);
    a->v[a->n++] = v;
}

static bool gui_acc_get(const gui_acc_t *a, const char *key, double *v)
{
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->key[i], key) == 0) {
            *v = a->v[i];
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
static double gui_live_quantile(const gui_acc_t *cur, const gui_acc_t *prev, const char *feed,
                                double q)
{
    double les[64], cnt[64];
    size_t n = 0, fl = strlen(feed);
    for (size_t i = 0; i < cur->n && n < 64; i++) {
        const char *k = cur->key[i];
        if (strncmp(k, "le/", 3) || strncmp(k + 3, feed, fl) || k[3 + fl] != '/')
            continue;
        double before = 0;
        gui_acc_get(prev, k, &before);
        double le = strtod(k + 4 + fl, NULL);
        size_t j = n++;
        while (j > 0 && les[j - 1] > le) {
            les[j] = les[j - 1];
            cnt[j] = cnt[j - 1];
            j--;
        }
        les[j] = le;
        cnt[j] = cur->v[i] - before;
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
    gui_acc_t *cur = l->cur, *prev = l->prev;
    for (size_t i = 0; i < cur->n; i++) {
        const char *k = cur->key[i];
        char out[128];
        double before;
        if (strncmp(k, "dlq/", 4) == 0)
            json_object_set_new(v, k, json_real(cur->v[i]));
        if (strncmp(k, "lagm/", 5) == 0) { /* a gauge; /status's lag, below, wins */
            snprintf(out, sizeof(out), "lag/%s", k + 5);
            json_object_set_new(v, out, json_real(cur->v[i]));
        }
        if (dt <= 0 || !gui_acc_get(prev, k, &before))
            continue;
        double rate = cur->v[i] >= before ? (cur->v[i] - before) / dt : 0; /* restart: reset */
        if (strncmp(k, "acked/", 6) == 0) {
            snprintf(out, sizeof(out), "egress/%s", k + 6);
            json_object_set_new(v, out, json_real(rate));
            const char *feed = k + 6;
            double p50 = gui_live_quantile(cur, prev, feed, 0.5),
                   p99 = gui_live_quantile(cur, prev, feed, 0.99);
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

static void gui_live_tick(gui_live_t *l)
{
    char token[160], hdr[256], err[512];
    if (l->token[0])
        snprintf(token, sizeof(token), "%s", l->token);
    else if (!gui_sessions_any_token(l->sessions, gui_now_ms(), token, sizeof(token)))
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
    gui_acc_t *t = l->prev;
    l->prev = l->cur;
    l->cur = t;
    l->cur->n = 0;
    for (size_t i = 0; i < l->n_targets; i++) {
        const gui_url_t *u = &l->targets[i];
        if (gui_http_request(u, "GET", u->path[0] ? u->path : "/metrics", NULL, NULL, 0, to, &r,
                             err, sizeof(err)) != 0 ||
            r.status != 200) {
            log_debug("gui: live: scrape %s:%s: %s", u->host, u->port, r.status ? "not 200" : err);
            continue;
        }
        if (gui_prom_parse((char *)r.body.data, r.body.len, gui_live_sample, l->cur, err,
                           sizeof(err)) < 0)
            log_warn("gui: live: %s:%s/metrics: %s", u->host, u->port, err);
    }
    int64_t now = gui_now_ms();
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
    struct timespec wall; /* the charts' time axis is the wall clock; rates use the monotonic one */
    clock_gettime(CLOCK_REALTIME, &wall);
    f->t_ms = (int64_t)wall.tv_sec * 1000 + wall.tv_nsec / 1000000;
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
        int64_t start = gui_now_ms();
        gui_live_tick(l);
        for (int64_t left; !l->stop && (left = start + l->s->poll_ms - gui_now_ms()) > 0;)
            usleep((useconds_t)(left > 100 ? 100000 : left * 1000));
    }
    return NULL;
}

gui_live_t *gui_live_new(const gui_settings_t *s, gui_sessions_t *sessions, char *err,
                         size_t errlen)
{
    gui_live_t *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    l->s = s;
    l->sessions = sessions;
    l->cap = (size_t)s->history_points;
    l->frames = calloc(l->cap, sizeof(*l->frames));
    l->cur = calloc(1, sizeof(gui_acc_t));
    l->prev = calloc(1, sizeof(gui_acc_t));
    pthread_mutex_init(&l->mu, NULL);
    if (!l->frames || !l->cur || !l->prev ||
        gui_url_parse(s->admin_url, &l->admin, err, errlen) != 0)
        goto fail;
    for (const char *p = s->metrics_urls; p && *p;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char one[600];
        if (n && n < sizeof(one)) {
            memcpy(one, p, n);
            one[n] = '\0';
            gui_url_t *t = realloc(l->targets, (l->n_targets + 1) * sizeof(*t));
            if (!t)
                goto fail;
            l->targets = t;
            if (gui_url_parse(one, &t[l->n_targets], err, errlen) != 0)
                goto fail;
            l->n_targets++;
        }
        p = e ? e + 1 : p + n;
    }
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
    free(l->targets);
    free(l->cur);
    free(l->prev);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

void gui_live_handle(httpd_req_t *req, gui_live_t *l, const gui_session_info_t *who)
{
    (void)who;
    const char *lid = httpd_req_header(req, "Last-Event-ID");
    int64_t after = lid ? strtoll(lid, NULL, 10) : 0;
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
    char *data = json_dumps(msg, JSON_COMPACT | JSON_REAL_PRECISION(6));
    json_decref(msg);
    buf_t out;
    buf_init(&out, 4096, 64 << 20);
    char head[96];
    snprintf(head, sizeof(head), "retry: %lld\nid: %lld\ndata: ", (long long)l->s->poll_ms,
             (long long)last);
    buf_append_str(&out, head);
    buf_append_str(&out, data ? data : "{}");
    buf_append_str(&out, "\n\n");
    free(data);
    httpd_resp_header(req, "Cache-Control", "no-store");
    httpd_reply(req, 200, "text/event-stream", out.data, out.len);
    buf_free(&out);
}
