/* ndd.events publisher: see events.h and docs/control-path.md. */
#include "clock.h"
#include "events.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

/* An alarm whose event failed is re-sent no sooner than this. */
#define EVENTS_RETRY_MS 1000
#define EVENTS_THREAD_TICK_MS 100

typedef struct events_alarm {
    bool used;
    bool raised;    /* the state the owner asked for */
    bool delivered; /* that state was acknowledged by the broker */
    bool inflight;  /* an event carrying it is queued */
    events_severity_t severity;
    uint64_t send_seq; /* opaque of the event in flight */
    int64_t retry_ms;  /* not before (after a failure) */
    char *text;
    char alarm[EVENTS_MAX_ALARM_NAME + 1];
    char resource[EVENTS_MAX_RESOURCE + 1];
} events_alarm_t;

struct events_hub {
    kafka_producer_t *p;
    pthread_mutex_t lock; /* everything below; taken before a publisher's lock */
    events_t *pubs[EVENTS_HUB_MAX_PUBLISHERS];
    uint16_t ids[EVENTS_HUB_MAX_PUBLISHERS]; /* 0: free slot */
    uint16_t next_id;
    bool stopping;
    pthread_cond_t cond;
    pthread_t thread;
};

/* A shared producer's delivery report names its publisher in the opaque's top 16 bits (the
 * publisher's id on the hub) and the event in the low 48: no allocation per event, and a
 * report for a publisher freed meanwhile (a role restarted) finds no id and is dropped. */
#define EVENTS_HUB_SEQ_BITS 48
#define EVENTS_HUB_SEQ_MASK ((UINT64_C(1) << EVENTS_HUB_SEQ_BITS) - 1)
_Static_assert(sizeof(uintptr_t) >= 8, "the hub's opaque needs 64 bits");

struct events {
    kafka_producer_t *p; /* NULL: offline; the hub's producer when hub is set */
    events_hub_t *hub;   /* NULL: p is this publisher's own */
    uint16_t hub_id;
    char *topic;
    char service[EVENTS_MAX_SERVICE + 1];
    char instance[EVENTS_MAX_INSTANCE + 1];
    char host[256];
    char *version;
    char key[EVENTS_MAX_SERVICE + EVENTS_MAX_INSTANCE + 2];
    int64_t interval_ms;
    int64_t start_ms; /* monotonic */
    size_t max_heartbeat;
    events_collect_fn collect;
    events_info_fn info;
    void *owner;

    pthread_mutex_t lock; /* everything below */
    uint64_t seq;         /* opaque of the next produce (never 0) */
    uint64_t hb_seq;      /* heartbeats built so far (the "seq" field) */
    uint64_t hb_inflight_seq;
    bool hb_inflight;
    int64_t next_hb_ms; /* monotonic */
    events_alarm_t *alarms;
    size_t max_alarms;
    /* One past the highest slot ever used: slots are taken lowest first, so the per-tick scans
     * look at the alarms there are, not at the whole table (1,024 slots, every 100 ms, in
     * each role of ndd). */
    size_t alarms_hi;
    events_stats_t stats;
    json_t *config;      /* the applied configuration state (own copy), NULL until told */
    bool config_due;     /* config holds a state not sent yet */
    int64_t config_next; /* monotonic: no config event before */

    bool own_thread;
    bool stopping;
    pthread_t thread;
    pthread_cond_t cond;

    metrics_counter_t *m_hb[4]; /* sent, acked, failed, dropped */
    metrics_counter_t *m_al[4]; /* sent, acked, failed, untracked */
    metrics_gauge_t *m_active;
};

enum { EV_SENT = 0, EV_ACKED, EV_FAILED, EV_DROPPED, EV_UNTRACKED = 3 };

static const char *const events_severity_names[] = {"critical", "major", "minor", "warning"};

static const char *events_severity_name(events_severity_t s)
{
    return (unsigned)s < 4 ? events_severity_names[s] : "major";
}

/* ---- builders ------------------------------------------------------------------------- */

/* A JSON string of at most max bytes, cut at a UTF-8 boundary; invalid UTF-8 is replaced
 * by a note rather than refusing the whole event. */
static json_t *events_text(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n > max) {
        n = max;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    json_t *j = json_stringn(s, n);
    return j ? j : json_string("(text is not valid UTF-8)");
}

json_t *events_heartbeat_build(events_t *ev, int64_t now_ms)
{
    json_t *counters = json_object(), *feeds = json_object();
    if (ev->collect)
        ev->collect(ev->owner, counters, feeds);
    pthread_mutex_lock(&ev->lock);
    uint64_t seq = ++ev->hb_seq;
    json_t *config = ev->config ? json_deep_copy(ev->config) : NULL;
    pthread_mutex_unlock(&ev->lock);
    json_t *hb = json_pack("{s:s,s:s,s:s,s:I,s:s,s:I,s:I,s:s,s:I,s:I,s:o,s:o}", "type", "heartbeat",
                           "service", ev->service, "instance", ev->instance, "interval_ms",
                           (json_int_t)ev->interval_ms, "version", ev->version, "uptime_ms",
                           (json_int_t)(mono_now_ms() - ev->start_ms), "pid", (json_int_t)getpid(),
                           "host", ev->host, "ts_ms", (json_int_t)now_ms, "seq", (json_int_t)seq,
                           "counters", counters, "feeds", feeds);
    if (hb && config)
        json_object_set_new(hb, "config", config);
    else
        json_decref(config);
    json_t *info = hb && ev->info ? json_object() : NULL;
    if (info) {
        ev->info(ev->owner, info);
        json_object_set_new(hb, "info", info);
    }
    return hb;
}

json_t *events_alarm_build(const events_t *ev, bool raise, const char *alarm, const char *resource,
                           events_severity_t severity, const char *text, int64_t now_ms)
{
    json_t *j =
        json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:I}", "type", "alarm", "action",
                  raise ? "raise" : "clear", "alarm", alarm, "resource", resource, "service",
                  ev->service, "instance", ev->instance, "ts_ms", (json_int_t)now_ms);
    if (!j)
        return NULL; /* alarm or resource not UTF-8 */
    if (raise) {
        json_object_set_new(j, "severity", json_string(events_severity_name(severity)));
        json_object_set_new(j, "text", events_text(text ? text : "", EVENTS_MAX_TEXT));
    }
    return j;
}

json_t *events_feed(json_t *feeds, const char *feed)
{
    if (!json_is_object(feeds) || !feed || !*feed)
        return NULL;
    json_t *f = json_object_get(feeds, feed);
    if (json_is_object(f))
        return f;
    f = json_object();
    if (!f || json_object_set_new(feeds, feed, f) != 0) /* refuses invalid UTF-8 */
        return NULL;
    return f;
}

int events_feed_endpoint(json_t *feed, const char *url, bool up)
{
    if (!json_is_object(feed) || !url || !*url)
        return -1;
    json_t *eps = json_object_get(feed, "endpoints");
    if (!json_is_object(eps)) {
        eps = json_object();
        if (!eps || json_object_set_new(feed, "endpoints", eps) != 0)
            return -1;
    }
    return json_object_set_new(eps, url, json_string(up ? "up" : "down"));
}

/* ---- producing ------------------------------------------------------------------------ */

/* Under ev->lock. Returns the opaque the delivery report will carry, or 0 when the event was
 * not queued (offline, queue full, refused). */
static uint64_t events_produce(events_t *ev, const char *text, size_t len)
{
    if (!ev->p)
        return 0;
    uint64_t seq = ++ev->seq & EVENTS_HUB_SEQ_MASK;
    if (!seq) /* 0 means "not queued" */
        seq = ev->seq = 1;
    uint64_t opaque = ev->hub ? (uint64_t)ev->hub_id << EVENTS_HUB_SEQ_BITS | seq : seq;
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
    kafka_produce_result_t r =
        kafka_produce(ev->p, ev->topic, RD_KAFKA_PARTITION_UA, ev->key, strlen(ev->key), text, len,
                      NULL, KAFKA_VALUE_COPY, (void *)(uintptr_t)opaque, &err);
    return r == KAFKA_PRODUCE_OK ? seq : 0;
}

/* Under ev->lock: sends the current state of a tracked alarm. */
static void events_alarm_send(events_t *ev, events_alarm_t *a, int64_t now)
{
    json_t *j = events_alarm_build(ev, a->raised, a->alarm, a->resource, a->severity, a->text,
                                   wall_now_ms());
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    uint64_t seq = text ? events_produce(ev, text, strlen(text)) : 0;
    free(text);
    a->delivered = false;
    if (seq) {
        a->inflight = true;
        a->send_seq = seq;
        ev->stats.alarms_sent++;
        metrics_counter_inc(ev->m_al[EV_SENT]);
    } else {
        a->inflight = false;
        a->retry_ms = now + EVENTS_RETRY_MS;
        if (ev->p) {
            ev->stats.alarms_failed++;
            metrics_counter_inc(ev->m_al[EV_FAILED]);
        }
    }
}

static void events_on_delivery(void *owner, void *msg_opaque, const rd_kafka_message_t *rkm)
{
    events_t *ev = owner;
    uint64_t seq = (uint64_t)(uintptr_t)msg_opaque;
    bool ok = rkm->err == RD_KAFKA_RESP_ERR_NO_ERROR;
    pthread_mutex_lock(&ev->lock);
    if (ev->hb_inflight && seq == ev->hb_inflight_seq) {
        ev->hb_inflight = false;
        if (ok) {
            ev->stats.heartbeats_acked++;
            metrics_counter_inc(ev->m_hb[EV_ACKED]);
        } else {
            ev->stats.heartbeats_failed++;
            metrics_counter_inc(ev->m_hb[EV_FAILED]);
        }
        pthread_mutex_unlock(&ev->lock);
        return;
    }
    events_alarm_t *a = NULL;
    for (size_t i = 0; i < ev->alarms_hi; i++)
        if (ev->alarms[i].used && ev->alarms[i].inflight && ev->alarms[i].send_seq == seq) {
            a = &ev->alarms[i];
            break;
        }
    if (ok) {
        ev->stats.alarms_acked++;
        metrics_counter_inc(ev->m_al[EV_ACKED]);
    } else {
        ev->stats.alarms_failed++;
        metrics_counter_inc(ev->m_al[EV_FAILED]);
    }
    if (a) {
        a->inflight = false;
        a->delivered = ok;
        if (!ok) {
            a->retry_ms = mono_now_ms() + EVENTS_RETRY_MS;
            log_warn("events: %s %s on %s not delivered to %s: %s (will re-send)",
                     a->raised ? "raise" : "clear", a->alarm, a->resource, ev->topic,
                     rd_kafka_err2str(rkm->err));
        }
    }
    pthread_mutex_unlock(&ev->lock);
}

static int events_heartbeat_send(events_t *ev)
{
    pthread_mutex_lock(&ev->lock);
    bool busy = ev->hb_inflight;
    if (busy) {
        ev->stats.heartbeats_dropped++;
        metrics_counter_inc(ev->m_hb[EV_DROPPED]);
    }
    pthread_mutex_unlock(&ev->lock);
    if (busy) {
        log_debug("events: heartbeat dropped, the previous one is not acknowledged yet");
        return -1;
    }
    /* collect runs outside the lock: it may raise or clear alarms. */
    json_t *hb = events_heartbeat_build(ev, wall_now_ms());
    char *text = hb ? json_dumps(hb, JSON_COMPACT) : NULL;
    bool omitted = false;
    if (text && strlen(text) > ev->max_heartbeat) {
        free(text);
        json_object_set_new(hb, "feeds", json_object());
        json_object_set_new(hb, "feeds_omitted", json_true());
        text = json_dumps(hb, JSON_COMPACT);
        omitted = true;
    }
    json_decref(hb);
    pthread_mutex_lock(&ev->lock);
    uint64_t seq = text ? events_produce(ev, text, strlen(text)) : 0;
    if (omitted)
        ev->stats.heartbeats_feeds_omitted++;
    if (seq) {
        ev->hb_inflight = true;
        ev->hb_inflight_seq = seq;
        ev->stats.heartbeats_sent++;
        metrics_counter_inc(ev->m_hb[EV_SENT]);
    } else {
        ev->stats.heartbeats_dropped++;
        metrics_counter_inc(ev->m_hb[EV_DROPPED]);
    }
    pthread_mutex_unlock(&ev->lock);
    if (omitted)
        log_warn("events: heartbeat of %s over %zu bytes: sent without its per-feed part", ev->key,
                 ev->max_heartbeat);
    if (!text)
        log_error("events: cannot build the heartbeat of %s (counters not JSON numbers?)", ev->key);
    free(text);
    return seq ? 0 : -1;
}

static void events_config_send(events_t *ev, int64_t now);

static void events_resend(events_t *ev, int64_t now)
{
    pthread_mutex_lock(&ev->lock);
    events_config_send(ev, now);
    for (size_t i = 0; i < ev->alarms_hi; i++) {
        events_alarm_t *a = &ev->alarms[i];
        if (a->used && !a->delivered && !a->inflight && now >= a->retry_ms)
            events_alarm_send(ev, a, now);
    }
    pthread_mutex_unlock(&ev->lock);
}

/* Under ev->lock: sends the held config state when it is due and its period has passed. */
static void events_config_send(events_t *ev, int64_t now)
{
    if (!ev->config_due || now < ev->config_next || !ev->p)
        return;
    json_t *j =
        json_pack("{s:s,s:s,s:s,s:I,s:O}", "type", "config", "service", ev->service, "instance",
                  ev->instance, "ts_ms", (json_int_t)wall_now_ms(), "config", ev->config);
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    /* Not tracked by delivery: a lost one is repaired by the next heartbeat's copy. */
    if (text && events_produce(ev, text, strlen(text))) {
        ev->config_due = false;
        ev->config_next = now + EVENTS_CONFIG_MIN_MS;
        ev->stats.config_sent++;
    } else {
        ev->config_next = now + EVENTS_CONFIG_MIN_MS; /* queue full: retry at a later tick */
    }
    free(text);
}

int events_config_applied(events_t *ev, json_t *state)
{
    json_t *copy = json_deep_copy(state);
    if (!copy)
        return -1;
    int64_t now = mono_now_ms();
    pthread_mutex_lock(&ev->lock);
    if (ev->config_due)
        ev->stats.config_coalesced++;
    json_decref(ev->config);
    ev->config = copy;
    ev->config_due = true;
    events_config_send(ev, now);
    int rc = ev->config_due ? 1 : 0;
    pthread_mutex_unlock(&ev->lock);
    return rc;
}

int events_tick(events_t *ev)
{
    int64_t now = mono_now_ms();
    int sent = 0;
    if (now >= ev->next_hb_ms) {
        ev->next_hb_ms = now + ev->interval_ms;
        sent = events_heartbeat_send(ev) == 0;
    }
    events_resend(ev, now);
    if (ev->p && !ev->hub) /* the hub's thread serves a shared producer's reports */
        kafka_producer_poll(ev->p, 0);
    return sent;
}

/* ---- alarms --------------------------------------------------------------------------- */

static events_alarm_t *events_alarm_find(events_t *ev, const char *alarm, const char *resource)
{
    for (size_t i = 0; i < ev->alarms_hi; i++) {
        events_alarm_t *a = &ev->alarms[i];
        if (a->used && strcmp(a->alarm, alarm) == 0 && strcmp(a->resource, resource) == 0)
            return a;
    }
    return NULL;
}

/* A free slot, else one holding a delivered clear (the oldest state worth forgetting). */
static events_alarm_t *events_alarm_slot(events_t *ev)
{
    events_alarm_t *spare = NULL;
    for (size_t i = 0; i < ev->max_alarms; i++) {
        events_alarm_t *a = &ev->alarms[i];
        if (!a->used)
            return a;
        if (!spare && !a->raised && a->delivered && !a->inflight)
            spare = a;
    }
    if (spare) {
        free(spare->text);
        memset(spare, 0, sizeof(*spare));
    }
    return spare;
}

static int events_alarm_check(const char *alarm, const char *resource)
{
    if (!alarm || !*alarm || strlen(alarm) > EVENTS_MAX_ALARM_NAME || !resource || !*resource ||
        strlen(resource) > EVENTS_MAX_RESOURCE)
        return -1;
    json_t *a = json_string(alarm), *r = json_string(resource); /* UTF-8 check */
    int rc = a && r ? 0 : -1;
    json_decref(a);
    json_decref(r);
    return rc;
}

static void events_count_active(events_t *ev)
{
    size_t n = 0;
    for (size_t i = 0; i < ev->alarms_hi; i++)
        n += ev->alarms[i].used && ev->alarms[i].raised;
    ev->stats.alarms_active = n;
    metrics_gauge_set(ev->m_active, (double)n);
}

static int events_alarm_set(events_t *ev, bool raise, const char *alarm, const char *resource,
                            events_severity_t severity, const char *text)
{
    if (events_alarm_check(alarm, resource) != 0) {
        log_error("events: alarm %s on %s refused: names must be 1..%d and 1..%d bytes of UTF-8",
                  alarm ? alarm : "(null)", resource ? resource : "(null)", EVENTS_MAX_ALARM_NAME,
                  EVENTS_MAX_RESOURCE);
        return -1;
    }
    if ((unsigned)severity > EVENTS_WARNING)
        severity = EVENTS_MAJOR;
    int64_t now = mono_now_ms();
    pthread_mutex_lock(&ev->lock);
    events_alarm_t *a = events_alarm_find(ev, alarm, resource);
    if (a && a->raised == raise && (!raise || a->severity == severity)) {
        pthread_mutex_unlock(&ev->lock);
        return 0;
    }
    if (!a && (a = events_alarm_slot(ev)) != NULL) {
        a->used = true;
        if ((size_t)(a - ev->alarms) >= ev->alarms_hi)
            ev->alarms_hi = (size_t)(a - ev->alarms) + 1;
        snprintf(a->alarm, sizeof(a->alarm), "%s", alarm);
        snprintf(a->resource, sizeof(a->resource), "%s", resource);
    }
    if (!a) {
        /* Table full of live alarms: send once, untracked (no dedupe, no re-send). */
        ev->stats.alarms_untracked++;
        metrics_counter_inc(ev->m_al[EV_UNTRACKED]);
        json_t *j = events_alarm_build(ev, raise, alarm, resource, severity, text, wall_now_ms());
        char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        if (s && events_produce(ev, s, strlen(s))) {
            ev->stats.alarms_sent++;
            metrics_counter_inc(ev->m_al[EV_SENT]);
        }
        free(s);
        pthread_mutex_unlock(&ev->lock);
        log_warn("events: %zu alarms tracked already; %s %s on %s sent untracked", ev->max_alarms,
                 raise ? "raise" : "clear", alarm, resource);
        return 0;
    }
    a->raised = raise;
    a->severity = severity;
    free(a->text);
    a->text = raise && text ? strdup(text) : NULL;
    events_alarm_send(ev, a, now);
    events_count_active(ev);
    pthread_mutex_unlock(&ev->lock);
    if (raise)
        log_warn("events: alarm %s raised on %s: %s", alarm, resource, text ? text : "");
    else
        log_info("events: alarm %s cleared on %s", alarm, resource);
    return 0;
}

int events_alarm_raise(events_t *ev, const char *alarm, const char *resource,
                       events_severity_t severity, const char *text)
{
    return events_alarm_set(ev, true, alarm, resource, severity, text);
}

int events_alarm_clear(events_t *ev, const char *alarm, const char *resource)
{
    return events_alarm_set(ev, false, alarm, resource, EVENTS_MAJOR, NULL);
}

bool events_alarm_active(events_t *ev, const char *alarm, const char *resource)
{
    if (!alarm || !resource)
        return false;
    pthread_mutex_lock(&ev->lock);
    events_alarm_t *a = events_alarm_find(ev, alarm, resource);
    bool on = a && a->raised;
    pthread_mutex_unlock(&ev->lock);
    return on;
}

/* ---- life cycle ----------------------------------------------------------------------- */

static bool events_idle(events_t *ev)
{
    pthread_mutex_lock(&ev->lock);
    bool idle = !ev->hb_inflight;
    for (size_t i = 0; idle && i < ev->alarms_hi; i++)
        if (ev->alarms[i].used && !ev->alarms[i].delivered)
            idle = false;
    pthread_mutex_unlock(&ev->lock);
    /* A shared producer's queue holds other publishers' events too. */
    return idle && (!ev->p || ev->hub || kafka_producer_outq_len(ev->p) == 0);
}

int events_flush(events_t *ev, int timeout_ms)
{
    if (!ev->p)
        return 0;
    int64_t deadline = mono_now_ms() + timeout_ms;
    for (;;) {
        events_resend(ev, mono_now_ms());
        if (ev->hub)
            usleep(10 * 1000);
        else
            kafka_producer_poll(ev->p, 10);
        if (events_idle(ev))
            return 0;
        if (mono_now_ms() >= deadline)
            return -1;
    }
}

events_stats_t events_stats(events_t *ev)
{
    pthread_mutex_lock(&ev->lock);
    events_stats_t s = ev->stats;
    pthread_mutex_unlock(&ev->lock);
    return s;
}

static void *events_thread(void *arg)
{
    events_t *ev = arg;
    pthread_mutex_lock(&ev->lock);
    while (!ev->stopping) {
        pthread_mutex_unlock(&ev->lock);
        events_tick(ev);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += EVENTS_THREAD_TICK_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&ev->lock);
        if (!ev->stopping)
            pthread_cond_timedwait(&ev->cond, &ev->lock, &ts);
    }
    pthread_mutex_unlock(&ev->lock);
    return NULL;
}

/* The events' producer: one heartbeat in flight and alarms at most once each per publisher
 * make a small queue plenty (queue_max events), and a full one means the broker is away
 * (drop, never block). Events expire after two intervals (10 s at least): a stale heartbeat
 * is worth nothing, and an alarm state that expired is re-sent by the next tick. */
static kafka_producer_t *events_producer_new(const char *brokers, const char *client_id,
                                             int64_t interval_ms, size_t queue_max,
                                             const kafka_prop_t *extra, size_t n_extra,
                                             kafka_delivery_cb_t on_delivery, void *owner,
                                             char *err, size_t errlen)
{
    char timeout[32], qmax[32];
    int64_t t = interval_ms * 2 < 10000 ? 10000 : interval_ms * 2;
    snprintf(timeout, sizeof(timeout), "%lld", (long long)(t > 300000 ? 300000 : t));
    snprintf(qmax, sizeof(qmax), "%zu", queue_max);
    size_t n = 0;
    kafka_prop_t props[16 + 64];
    const kafka_prop_t mine[] = {
        {"enable.idempotence", "false"},
        {"acks", "all"},
        /* Keeps raise and clear of one alarm in order across retries. */
        {"max.in.flight.requests.per.connection", "1"},
        {"linger.ms", "10"},
        {"message.timeout.ms", timeout},
        {"queue.buffering.max.messages", qmax},
        {"queue.buffering.max.kbytes", "8192"},
        {"partitioner", "murmur2_random"},
    };
    for (size_t i = 0; i < sizeof(mine) / sizeof(*mine); i++)
        props[n++] = mine[i];
    if (n_extra > 64) {
        snprintf(err, errlen, "events: more than 64 kafka properties");
        return NULL;
    }
    /* The daemon's pass-through may hold consumer.* or consumer-only settings too. */
    n += kafka_props_split(extra, n_extra, KAFKA_CLIENT_PRODUCER, props + n);
    kafka_producer_opts_t po = {.brokers = brokers,
                                .client_id = client_id,
                                .props = props,
                                .n_props = n,
                                .on_delivery = on_delivery,
                                .owner = owner};
    return kafka_producer_new(&po, err, errlen);
}

/* ---- the shared producer -------------------------------------------------------------- */

static void events_hub_on_delivery(void *owner, void *msg_opaque, const rd_kafka_message_t *rkm)
{
    events_hub_t *h = owner;
    uint64_t op = (uint64_t)(uintptr_t)msg_opaque;
    uint16_t id = (uint16_t)(op >> EVENTS_HUB_SEQ_BITS);
    pthread_mutex_lock(&h->lock);
    for (size_t i = 0; i < EVENTS_HUB_MAX_PUBLISHERS; i++)
        if (h->ids[i] == id && id) {
            events_on_delivery(h->pubs[i], (void *)(uintptr_t)(op & EVENTS_HUB_SEQ_MASK), rkm);
            break;
        }
    pthread_mutex_unlock(&h->lock);
}

static void *events_hub_thread(void *arg)
{
    events_hub_t *h = arg;
    pthread_mutex_lock(&h->lock);
    while (!h->stopping) {
        pthread_mutex_unlock(&h->lock);
        kafka_producer_poll(h->p, EVENTS_THREAD_TICK_MS);
        pthread_mutex_lock(&h->lock);
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

events_hub_t *events_hub_new(const char *brokers, const kafka_prop_t *props, size_t n_props,
                             char *err, size_t errlen)
{
    events_hub_t *h = calloc(1, sizeof(*h));
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&h->lock, NULL);
    h->p = events_producer_new(brokers, "ndd-events", EVENTS_DEFAULT_INTERVAL_MS,
                               EVENTS_HUB_MAX_PUBLISHERS * (EVENTS_DEFAULT_MAX_ALARMS + 64), props,
                               n_props, events_hub_on_delivery, h, err, errlen);
    if (!h->p) {
        pthread_mutex_destroy(&h->lock);
        free(h);
        return NULL;
    }
    if (pthread_create(&h->thread, NULL, events_hub_thread, h) != 0) {
        snprintf(err, errlen, "events: cannot start the shared producer's thread");
        kafka_producer_close(h->p, 0);
        pthread_mutex_destroy(&h->lock);
        free(h);
        return NULL;
    }
    return h;
}

void events_hub_free(events_hub_t *h, int timeout_ms)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->lock);
    h->stopping = true;
    pthread_mutex_unlock(&h->lock);
    pthread_join(h->thread, NULL);
    int left = kafka_producer_close(h->p, timeout_ms);
    if (left > 0)
        log_warn("events: %d events not acknowledged when the shared producer closed", left);
    pthread_mutex_destroy(&h->lock);
    free(h);
}

/* Gives ev a slot and an id no live publisher has (ids are 16 bits and wrap). */
static int events_hub_attach(events_hub_t *h, events_t *ev)
{
    pthread_mutex_lock(&h->lock);
    int slot = -1;
    for (int i = 0; i < EVENTS_HUB_MAX_PUBLISHERS && slot < 0; i++)
        if (!h->ids[i])
            slot = i;
    if (slot >= 0) {
        bool taken;
        do {
            if (!++h->next_id)
                h->next_id = 1;
            taken = false;
            for (int i = 0; i < EVENTS_HUB_MAX_PUBLISHERS; i++)
                taken = taken || h->ids[i] == h->next_id;
        } while (taken);
        h->ids[slot] = h->next_id;
        h->pubs[slot] = ev;
        ev->hub = h;
        ev->hub_id = h->next_id;
        ev->p = h->p;
    }
    pthread_mutex_unlock(&h->lock);
    return slot >= 0 ? 0 : -1;
}

/* After this, no delivery report reaches ev (one being served finishes first: same lock). */
static void events_hub_detach(events_hub_t *h, events_t *ev)
{
    pthread_mutex_lock(&h->lock);
    for (int i = 0; i < EVENTS_HUB_MAX_PUBLISHERS; i++)
        if (h->pubs[i] == ev && h->ids[i] == ev->hub_id) {
            h->ids[i] = 0;
            h->pubs[i] = NULL;
        }
    pthread_mutex_unlock(&h->lock);
}

events_t *events_new(const events_opts_t *o, char *err, size_t errlen)
{
    if (!o->service || !*o->service || strlen(o->service) > EVENTS_MAX_SERVICE) {
        snprintf(err, errlen, "events: service name must be 1..%d bytes", EVENTS_MAX_SERVICE);
        return NULL;
    }
    events_t *ev = calloc(1, sizeof(*ev));
    if (!ev) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&ev->lock, NULL);
    pthread_cond_init(&ev->cond, NULL);
    if (gethostname(ev->host, sizeof(ev->host) - 1) != 0 || !ev->host[0])
        snprintf(ev->host, sizeof(ev->host), "localhost");
    const char *instance = o->instance ? o->instance : ev->host;
    if (!*instance || strlen(instance) > EVENTS_MAX_INSTANCE) {
        snprintf(err, errlen, "events: instance name \"%.40s\" must be 1..%d bytes", instance,
                 EVENTS_MAX_INSTANCE);
        events_free(ev, 0);
        return NULL;
    }
    /* Both lengths were checked above. */
    memcpy(ev->service, o->service, strlen(o->service) + 1);
    memcpy(ev->instance, instance, strlen(instance) + 1);
    snprintf(ev->key, sizeof(ev->key), "%s/%s", ev->service, ev->instance);
    ev->topic = strdup(o->topic ? o->topic : EVENTS_DEFAULT_TOPIC);
    ev->version = strdup(o->version ? o->version : "dev");
    ev->interval_ms = o->interval_ms > 0 ? o->interval_ms : EVENTS_DEFAULT_INTERVAL_MS;
    ev->max_heartbeat =
        o->max_heartbeat_bytes ? o->max_heartbeat_bytes : EVENTS_DEFAULT_MAX_HEARTBEAT;
    ev->max_alarms = o->max_alarms ? o->max_alarms : EVENTS_DEFAULT_MAX_ALARMS;
    ev->alarms = calloc(ev->max_alarms, sizeof(*ev->alarms));
    ev->collect = o->collect;
    ev->info = o->info;
    ev->owner = o->owner;
    ev->start_ms = mono_now_ms();
    ev->next_hb_ms = ev->start_ms;
    if (!ev->topic || !ev->version || !ev->alarms) {
        snprintf(err, errlen, "out of memory");
        events_free(ev, 0);
        return NULL;
    }
    json_t *js = json_string(ev->service), *ji = json_string(ev->instance);
    bool utf8 = js && ji;
    json_decref(js);
    json_decref(ji);
    if (!utf8) {
        snprintf(err, errlen, "events: service and instance names must be UTF-8");
        events_free(ev, 0);
        return NULL;
    }

    metrics_registry_t *reg = o->metrics ? o->metrics : metrics_default_registry();
    metrics_family_t *fh = metrics_counter_new(
        reg, "ndd_events_heartbeats_total", "Heartbeats to the events topic, by outcome", "result");
    metrics_family_t *fa = metrics_counter_new(reg, "ndd_events_alarms_total",
                                               "Alarm raise/clear events, by outcome", "result");
    metrics_family_t *fg = metrics_gauge_new(reg, "ndd_events_alarms_active",
                                             "Alarms this worker has raised and not cleared", NULL);
    if (!fh || !fa || !fg) {
        snprintf(err, errlen, "events: cannot register its metrics");
        events_free(ev, 0);
        return NULL;
    }
    const char *hbr[4] = {"sent", "acked", "failed", "dropped"};
    const char *alr[4] = {"sent", "acked", "failed", "untracked"};
    for (int i = 0; i < 4; i++) {
        ev->m_hb[i] = metrics_counter_labels(fh, hbr[i]);
        ev->m_al[i] = metrics_counter_labels(fa, alr[i]);
    }
    ev->m_active = metrics_gauge_labels(fg);

    if (o->hub) {
        if (events_hub_attach(o->hub, ev) != 0) {
            snprintf(err, errlen, "events: the shared producer serves %d publishers already",
                     EVENTS_HUB_MAX_PUBLISHERS);
            events_free(ev, 0);
            return NULL;
        }
    } else if (o->brokers) {
        char cid[EVENTS_MAX_SERVICE + 16];
        snprintf(cid, sizeof(cid), "%s-events", ev->service);
        ev->p = events_producer_new(o->brokers, cid, ev->interval_ms, ev->max_alarms + 64, o->props,
                                    o->n_props, events_on_delivery, ev, err, errlen);
        if (!ev->p) {
            events_free(ev, 0);
            return NULL;
        }
    }
    if (o->own_thread) {
        if (pthread_create(&ev->thread, NULL, events_thread, ev) != 0) {
            snprintf(err, errlen, "events: cannot start the heartbeat thread");
            events_free(ev, 0);
            return NULL;
        }
        ev->own_thread = true;
    }
    log_info("events: %s publishing heartbeats every %lld ms to %s", ev->key,
             (long long)ev->interval_ms, ev->topic);
    return ev;
}

void events_free(events_t *ev, int timeout_ms)
{
    if (!ev)
        return;
    if (ev->own_thread) {
        pthread_mutex_lock(&ev->lock);
        ev->stopping = true;
        pthread_cond_signal(&ev->cond);
        pthread_mutex_unlock(&ev->lock);
        pthread_join(ev->thread, NULL);
        ev->own_thread = false;
    }
    if (ev->p) {
        if (timeout_ms > 0)
            events_flush(ev, timeout_ms);
        if (ev->hub)
            events_hub_detach(ev->hub, ev);
        else
            kafka_producer_close(ev->p, 0);
    }
    for (size_t i = 0; ev->alarms && i < ev->max_alarms; i++)
        free(ev->alarms[i].text);
    free(ev->alarms);
    json_decref(ev->config);
    free(ev->topic);
    free(ev->version);
    pthread_mutex_destroy(&ev->lock);
    pthread_cond_destroy(&ev->cond);
    free(ev);
}
