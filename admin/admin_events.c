/* ndd.events: heartbeats and alarm raise/clear events from every worker (format in
 * docs/api.md). The admin keeps the last heartbeat of each worker in memory for /status,
 * turns a missing heartbeat into a service-down alarm, a dead-letter rate over a threshold
 * into a dead-letter-surge alarm and an endpoint reported down into an endpoint-down alarm,
 * and clears each when it recovers. Alarms live in PostgreSQL; at start the active ones are
 * read back (admin_events_restore), so that a worker that recovered while no admin ran (or
 * across an admin restart) has its alarms cleared by its next heartbeat. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <librdkafka/rdkafka.h>

#include "admin.h"
#include "admin_feed_health.h"
#include "log.h"
#include "metrics.h"

#define ADMIN_MAX_WORKERS 4096
#define ADMIN_DEFAULT_INTERVAL_MS 10000
#define ADMIN_DLQ_SURGE_PER_S 10.0
#define ADMIN_MAX_DOWN_ENDPOINTS 65536
#define ADMIN_MAX_PENDING_ALARMS 1024

typedef struct admin_worker {
    char service[64];
    char instance[128];
    int64_t last_seen_ms;
    int64_t prev_seen_ms;
    int64_t interval_ms;
    bool down;
    bool dlq_surge;
    json_t *counters;      /* last heartbeat */
    json_t *prev_counters; /* the one before, for rates */
    json_t *feeds;
    json_t *prev_feeds; /* the one before, for the feeds' rates */
    json_t *info;       /* what the worker runs ("info" of its heartbeat), NULL when none */
} admin_worker_t;

struct admin_events {
    rd_kafka_t *rk;
    admin_db_t *db;
    char *topic;
    admin_worker_t *workers;
    size_t nworkers;
    int64_t down_after_ms;  /* 0: three heartbeat intervals */
    json_t *endpoints_down; /* "feed/url" -> true while reported down (bounded) */
    /* Active alarms of an earlier admin run (PostgreSQL): "service/instance" -> alarm type.
     * Taken over by the worker's first heartbeat, which then clears what has recovered. */
    json_t *restored;
    json_t *pending_alarms; /* alarm changes waiting for PostgreSQL (bounded) */
    uint64_t alarms_dropped;
    /* Events applied / rejected: counted once, in ndd_admin_events_total{result}; /status
     * reads the counters, less what they held when this consumer was made (tests make
     * several in one process, on the one registry). */
    metrics_counter_t *m_applied, *m_rejected;
    uint64_t base_applied, base_rejected;
    admin_prop_t *prop;      /* when workers applied the configuration changes */
    admin_feed_health_t *fh; /* the feeds' lag trends */
    admin_lag_policy_t lag_policy;
    int64_t next_expire_ms; /* the feeds' expiry runs once a second */
};

static int admin_events_restore(admin_events_t *ev);

admin_events_t *admin_events_new(const char *bootstrap, const char *topic, const char *group,
                                 admin_db_t *db, int64_t down_after_ms, char *err, size_t errlen)
{
    admin_events_t *ev = calloc(1, sizeof(*ev));
    if (!ev) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ev->db = db;
    ev->down_after_ms = down_after_ms;
    ev->topic = strdup(topic ? topic : "ndd.events");
    ev->workers = calloc(ADMIN_MAX_WORKERS, sizeof(*ev->workers));
    ev->endpoints_down = json_object();
    ev->pending_alarms = json_array();
    metrics_family_t *fe = metrics_counter_new(
        metrics_default_registry(), "ndd_admin_events_total",
        "ndd.events records (heartbeats, alarms) applied or rejected", "result");
    if (fe) {
        ev->m_applied = metrics_counter_labels(fe, "applied");
        ev->m_rejected = metrics_counter_labels(fe, "rejected");
    }
    ev->restored = json_object();
    ev->prop = admin_prop_new();
    ev->fh = admin_feed_health_new();
    if (!ev->workers || !ev->topic || !ev->m_applied || !ev->m_rejected || !ev->restored ||
        !ev->prop || !ev->fh) {
        admin_events_free(ev);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ev->base_applied = metrics_counter_get(ev->m_applied);
    ev->base_rejected = metrics_counter_get(ev->m_rejected);
    if (db)
        admin_events_restore(ev);
    if (!bootstrap) /* apply-only (tests) */
        return ev;
    /* Not fatal: the subscription picks the topic up once it exists. */
    if (admin_kafka_create_topic(bootstrap, ev->topic, 1, -1, false, err, errlen) != 0)
        log_error("admin events: %s (the consumer waits for the topic)", err);
    char errstr[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *props[][2] = {{"bootstrap.servers", bootstrap},
                              {"group.id", group},
                              {"auto.offset.reset", "latest"},
                              {"enable.auto.commit", "true"}};
    for (size_t i = 0; i < sizeof(props) / sizeof(*props); i++)
        if (rd_kafka_conf_set(conf, props[i][0], props[i][1], errstr, sizeof(errstr)) !=
            RD_KAFKA_CONF_OK) {
            snprintf(err, errlen, "%s: %s", props[i][0], errstr);
            rd_kafka_conf_destroy(conf);
            admin_events_free(ev);
            return NULL;
        }
    ev->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    if (!ev->rk) {
        snprintf(err, errlen, "events consumer: %s", errstr);
        admin_events_free(ev);
        return NULL;
    }
    rd_kafka_poll_set_consumer(ev->rk);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, ev->topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t e = rd_kafka_subscribe(ev->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    if (e) {
        snprintf(err, errlen, "subscribe %s: %s", ev->topic, rd_kafka_err2str(e));
        admin_events_free(ev);
        return NULL;
    }
    return ev;
}

void admin_events_free(admin_events_t *ev)
{
    if (!ev)
        return;
    if (ev->rk) {
        rd_kafka_consumer_close(ev->rk);
        rd_kafka_destroy(ev->rk);
    }
    for (size_t i = 0; ev->workers && i < ev->nworkers; i++) {
        json_decref(ev->workers[i].counters);
        json_decref(ev->workers[i].prev_counters);
        json_decref(ev->workers[i].feeds);
        json_decref(ev->workers[i].prev_feeds);
        json_decref(ev->workers[i].info);
    }
    free(ev->workers);
    json_decref(ev->endpoints_down);
    json_decref(ev->restored);
    json_decref(ev->pending_alarms);
    admin_prop_free(ev->prop);
    admin_feed_health_free(ev->fh);
    free(ev->topic);
    free(ev);
}

void admin_events_set_lag_policy(admin_events_t *ev, int64_t window_ms, double floor)
{
    if (!ev)
        return;
    ev->lag_policy.window_ms = window_ms > 0 ? window_ms : ADMIN_LAG_WINDOW_MS;
    ev->lag_policy.floor = floor > 0 ? floor : ADMIN_LAG_FLOOR;
}

admin_prop_t *admin_events_prop(admin_events_t *ev)
{
    return ev ? ev->prop : NULL;
}

/* Reads the active alarms from PostgreSQL into the in-memory state (admin_events_new does it):
 * service-down, dead-letter-surge and endpoint-down alarms of an earlier run are then cleared
 * by the worker's next heartbeat, like those of this run. The count taken over, or -1. */
static int admin_events_restore(admin_events_t *ev)
{
    admin_err_t err;
    json_t *list = admin_db_alarm_list(ev->db, "active", NULL, NULL, 100000, &err);
    if (!list) {
        log_error("admin alarms: cannot read the active alarms (%s): alarms raised before this "
                  "start clear only when raised and cleared again",
                  err.reason);
        return -1;
    }
    int n = 0;
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(list, "items"), i, a)
    {
        const char *type = json_string_value(json_object_get(a, "type"));
        const char *res = json_string_value(json_object_get(a, "resource"));
        if (!type || !res)
            continue;
        if (strcmp(type, "endpoint-down") == 0 &&
            json_object_size(ev->endpoints_down) < ADMIN_MAX_DOWN_ENDPOINTS) {
            json_object_set_new(ev->endpoints_down, res, json_true());
            n++;
        } else if (strcmp(type, "service-down") == 0 || strcmp(type, "dead-letter-surge") == 0 ||
                   strcmp(type, "feed-falling-behind") == 0) {
            /* one worker may have both: keep them as "<type>\n<resource>" keys */
            char key[512];
            snprintf(key, sizeof(key), "%s\n%s", type, res);
            json_object_set_new(ev->restored, key, json_true());
            n++;
        }
    }
    json_decref(list);
    if (n)
        log_info("admin alarms: %d active alarms taken over from PostgreSQL (a heartbeat of the "
                 "worker clears what has recovered)",
                 n);
    return n;
}

/* true once: the alarm type on res was active when this admin started. */
static bool admin_restored_take(admin_events_t *ev, const char *type, const char *res)
{
    char key[512];
    snprintf(key, sizeof(key), "%s\n%s", type, res);
    if (!json_object_get(ev->restored, key))
        return false;
    json_object_del(ev->restored, key);
    return true;
}

static admin_worker_t *admin_worker_get(admin_events_t *ev, const char *service,
                                        const char *instance)
{
    for (size_t i = 0; i < ev->nworkers; i++)
        if (strcmp(ev->workers[i].service, service) == 0 &&
            strcmp(ev->workers[i].instance, instance) == 0)
            return &ev->workers[i];
    if (ev->nworkers >= ADMIN_MAX_WORKERS)
        return NULL;
    admin_worker_t *w = &ev->workers[ev->nworkers++];
    snprintf(w->service, sizeof(w->service), "%s", service);
    snprintf(w->instance, sizeof(w->instance), "%s", instance);
    return w;
}

static void admin_worker_resource(const admin_worker_t *w, char *out, size_t len)
{
    snprintf(out, len, "%s/%s", w->service, w->instance);
}

static double admin_counter_rate(const admin_worker_t *w, const char *name)
{
    if (!w->prev_counters || w->last_seen_ms <= w->prev_seen_ms)
        return 0;
    json_t *a = json_object_get(w->prev_counters, name), *b = json_object_get(w->counters, name);
    if (!json_is_number(a) || !json_is_number(b))
        return 0;
    double d = json_number_value(b) - json_number_value(a);
    return d > 0 ? d * 1000.0 / (double)(w->last_seen_ms - w->prev_seen_ms) : 0;
}

static int admin_alarm_store(admin_events_t *ev, bool raise, const char *type, const char *resource,
                             const char *severity, const char *text)
{
    if (raise)
        return admin_db_alarm_raise(ev->db, type, resource, severity, text) == 0 ? 0 : -1;
    int n = admin_db_alarm_clear(ev->db, type, resource);
    if (n > 0)
        log_info("admin alarms: cleared %s on %s", type, resource);
    return n < 0 ? -1 : 0;
}

/* While PostgreSQL is away, alarm changes wait in a bounded queue (oldest dropped and
 * counted when full) and are written in order once it answers again. */
static void admin_alarm_flush(admin_events_t *ev)
{
    while (json_array_size(ev->pending_alarms) > 0) {
        json_t *a = json_array_get(ev->pending_alarms, 0);
        if (admin_alarm_store(ev, json_is_true(json_object_get(a, "raise")),
                              json_string_value(json_object_get(a, "type")),
                              json_string_value(json_object_get(a, "resource")),
                              json_string_value(json_object_get(a, "severity")),
                              json_string_value(json_object_get(a, "text"))) != 0 &&
            !admin_db_ok(ev->db))
            return; /* still away: keep it for the next round */
        /* written, or refused by a reachable server (logged): either way it is done */
        json_array_remove(ev->pending_alarms, 0);
    }
}

static void admin_alarm(admin_events_t *ev, bool raise, const char *type, const char *resource,
                        const char *severity, const char *text)
{
    if (raise)
        log_warn("admin alarms: raise %s on %s: %s", type, resource, text);
    if (!ev->db)
        return;
    if (json_array_size(ev->pending_alarms) == 0 &&
        (admin_alarm_store(ev, raise, type, resource, severity, text) == 0 || admin_db_ok(ev->db)))
        return; /* written, or refused by a reachable server (logged by admin_db) */
    if (json_array_size(ev->pending_alarms) >= ADMIN_MAX_PENDING_ALARMS) {
        json_array_remove(ev->pending_alarms, 0);
        ev->alarms_dropped++;
        log_error("admin alarms: %d alarm changes wait for PostgreSQL; dropped the oldest "
                  "(%llu dropped so far)",
                  ADMIN_MAX_PENDING_ALARMS, (unsigned long long)ev->alarms_dropped);
    }
    json_array_append_new(ev->pending_alarms,
                          json_pack("{s:b,s:s,s:s,s:s?,s:s?}", "raise", raise, "type", type,
                                    "resource", resource, "severity", severity, "text", text));
}

static void admin_heartbeat_endpoints(admin_events_t *ev, json_t *feeds)
{
    const char *feed;
    json_t *f;
    json_object_foreach(feeds, feed, f)
    {
        json_t *eps = json_object_get(f, "endpoints");
        const char *url;
        json_t *state;
        json_object_foreach(eps, url, state)
        {
            const char *s = json_string_value(state);
            if (!s)
                continue;
            char res[512], text[1100];
            snprintf(res, sizeof(res), "%s/%s", feed, url);
            bool was_down = json_object_get(ev->endpoints_down, res) != NULL;
            /* Only transitions reach the database: heartbeats repeat the state every interval. */
            if (strcmp(s, "down") == 0 && !was_down) {
                if (json_object_size(ev->endpoints_down) >= ADMIN_MAX_DOWN_ENDPOINTS)
                    continue;
                json_object_set_new(ev->endpoints_down, res, json_true());
                snprintf(text, sizeof(text), "endpoint %s of feed %s is down", url, feed);
                admin_alarm(ev, true, "endpoint-down", res, "major", text);
            } else if (strcmp(s, "up") == 0 && was_down) {
                json_object_del(ev->endpoints_down, res);
                admin_alarm(ev, false, "endpoint-down", res, NULL, NULL);
            }
        }
    }
}

/* Delivered per second of feed by worker w, between its last two heartbeats. */
static double admin_feed_rate(const admin_worker_t *w, const char *feed)
{
    if (!w->prev_feeds || w->last_seen_ms <= w->prev_seen_ms)
        return 0;
    json_t *a = json_object_get(json_object_get(w->prev_feeds, feed), "delivered_total");
    json_t *b = json_object_get(json_object_get(w->feeds, feed), "delivered_total");
    if (!json_is_number(a) || !json_is_number(b))
        return 0;
    double d = json_number_value(b) - json_number_value(a);
    return d > 0 ? d * 1000.0 / (double)(w->last_seen_ms - w->prev_seen_ms) : 0;
}

/* The lag of feed over the workers serving it now (each reports its own partitions) and
 * their delivery rate. One pass over the workers per feed of a heartbeat: workers are few
 * (ADMIN_MAX_WORKERS bounds them). */
static double admin_feed_lag_sum(const admin_events_t *ev, const char *feed, double *rate)
{
    double lag = 0;
    *rate = 0;
    for (size_t i = 0; i < ev->nworkers; i++) {
        const admin_worker_t *w = &ev->workers[i];
        json_t *f = w->down ? NULL : json_object_get(w->feeds, feed);
        if (!f)
            continue;
        lag += json_number_value(json_object_get(f, "lag"));
        *rate += admin_feed_rate(w, feed);
    }
    return lag;
}

static void admin_feed_lag_alarm(admin_events_t *ev, const char *feed, admin_lag_trend_t *t,
                                 double rate)
{
    admin_lag_change_t c = admin_lag_judge(t, &ev->lag_policy, rate);
    if (c == ADMIN_LAG_CLEAR) {
        log_info("admin alarms: feed %s no longer falling behind (lag %.0f)", feed,
                 admin_lag_last(t));
        admin_alarm(ev, false, "feed-falling-behind", feed, NULL, NULL);
    } else if (c == ADMIN_LAG_RAISE) {
        double slope;
        int64_t span;
        admin_lag_slope(t, &ev->lag_policy, &slope, &span);
        char text[600];
        snprintf(text, sizeof(text),
                 "feed %s is falling behind: lag %.0f messages, growing by %.1f/s over the last "
                 "%lld s (delivering %.1f/s)",
                 feed, admin_lag_last(t), slope, (long long)(span / 1000), rate);
        admin_alarm(ev, true, "feed-falling-behind", feed, "major", text);
    }
}

/* A heartbeat's feeds: a lag sample each (the sum over their workers) and the verdict. */
static void admin_heartbeat_lag(admin_events_t *ev, const admin_worker_t *w, int64_t now_ms)
{
    const char *feed;
    json_t *f;
    json_object_foreach(w->feeds, feed, f)
    {
        if (!json_is_number(json_object_get(f, "lag")))
            continue; /* an adapter that does not report it */
        bool created;
        admin_lag_trend_t *t =
            admin_feed_health_get(ev->fh, feed, now_ms, w->interval_ms, &created);
        if (!t)
            continue;
        if (created && admin_restored_take(ev, "feed-falling-behind", feed))
            t->behind = true; /* raised by an earlier run: cleared when the lag stops growing */
        double rate, lag = admin_feed_lag_sum(ev, feed, &rate);
        admin_lag_add(t, &ev->lag_policy, now_ms, lag);
        admin_feed_lag_alarm(ev, feed, t, rate);
    }
}

/* Feeds no heartbeat reports any more (deleted, or their adapters gone): forgotten, their
 * falling-behind alarm cleared. */
static void admin_feed_expire(admin_events_t *ev, int64_t now_ms)
{
    if (now_ms < ev->next_expire_ms)
        return;
    ev->next_expire_ms = now_ms + 1000;
    json_t *cleared = json_array();
    admin_feed_health_expire(ev->fh, now_ms, cleared);
    size_t i;
    json_t *name;
    json_array_foreach(cleared, i, name)
    {
        log_info("admin alarms: feed %s no longer reported by any adapter",
                 json_string_value(name));
        admin_alarm(ev, false, "feed-falling-behind", json_string_value(name), NULL, NULL);
    }
    json_decref(cleared);
}

static int admin_apply_heartbeat(admin_events_t *ev, json_t *j, int64_t now_ms)
{
    const char *service = json_string_value(json_object_get(j, "service"));
    const char *instance = json_string_value(json_object_get(j, "instance"));
    if (!service || !instance || !*service || !*instance)
        return -1;
    admin_worker_t *w = admin_worker_get(ev, service, instance);
    if (!w) {
        log_warn("admin events: more than %d workers; heartbeat of %s/%s ignored",
                 ADMIN_MAX_WORKERS, service, instance);
        return -1;
    }
    char res[256];
    admin_worker_resource(w, res, sizeof(res));
    if (admin_restored_take(ev, "service-down", res))
        w->down = true; /* raised by an earlier run: this heartbeat clears it */
    if (admin_restored_take(ev, "dead-letter-surge", res))
        w->dlq_surge = true;
    if (w->down) {
        w->down = false;
        log_info("admin events: %s is back", res);
        admin_alarm(ev, false, "service-down", res, NULL, NULL);
        admin_prop_worker_down(ev->prop, w->service, w->instance, false);
    }
    json_int_t interval = json_integer_value(json_object_get(j, "interval_ms"));
    w->interval_ms = interval > 0 ? interval : ADMIN_DEFAULT_INTERVAL_MS;
    w->prev_seen_ms = w->last_seen_ms;
    w->last_seen_ms = now_ms;
    json_decref(w->prev_counters);
    w->prev_counters = w->counters;
    json_t *c = json_object_get(j, "counters");
    w->counters = json_is_object(c) ? json_incref(c) : json_object();
    json_t *f = json_object_get(j, "feeds");
    json_decref(w->prev_feeds);
    w->prev_feeds = w->feeds;
    w->feeds = json_is_object(f) ? json_incref(f) : json_object();
    json_t *info = json_object_get(j, "info");
    json_decref(w->info);
    w->info = json_is_object(info) ? json_incref(info) : NULL;

    double dlq = admin_counter_rate(w, "dead_lettered_total");
    if (!w->dlq_surge && dlq > ADMIN_DLQ_SURGE_PER_S) {
        char text[400];
        snprintf(text, sizeof(text), "%.1f records/s dead-lettered by %s (threshold %.0f/s)", dlq,
                 res, ADMIN_DLQ_SURGE_PER_S);
        w->dlq_surge = true;
        admin_alarm(ev, true, "dead-letter-surge", res, "major", text);
    } else if (w->dlq_surge && w->prev_counters && dlq <= ADMIN_DLQ_SURGE_PER_S / 2) {
        w->dlq_surge = false;
        admin_alarm(ev, false, "dead-letter-surge", res, NULL, NULL);
    }
    admin_heartbeat_endpoints(ev, w->feeds);
    admin_heartbeat_lag(ev, w, now_ms);
    json_t *cfg = json_object_get(j, "config");
    if (cfg && admin_prop_worker(ev->prop, service, instance, cfg) != 0)
        log_warn("admin events: heartbeat of %s: \"config\" is not an applied state (ignored)",
                 res);
    return 0;
}

/* A worker applied configuration changes (docs/control-path.md, "Propagation"). Not a sign of
 * life for the service-down check: that stays with the heartbeats. */
static int admin_apply_config(admin_events_t *ev, json_t *j)
{
    const char *service = json_string_value(json_object_get(j, "service"));
    const char *instance = json_string_value(json_object_get(j, "instance"));
    if (!service || !instance || !*service || !*instance)
        return -1;
    return admin_prop_worker(ev->prop, service, instance, json_object_get(j, "config"));
}

static int admin_apply_alarm(admin_events_t *ev, json_t *j)
{
    const char *action = json_string_value(json_object_get(j, "action"));
    const char *type = json_string_value(json_object_get(j, "alarm"));
    const char *resource = json_string_value(json_object_get(j, "resource"));
    const char *severity = json_string_value(json_object_get(j, "severity"));
    const char *text = json_string_value(json_object_get(j, "text"));
    if (!action || !type || !resource || !*type || !*resource)
        return -1;
    if (!severity)
        severity = "major";
    if (strcmp(severity, "critical") && strcmp(severity, "major") && strcmp(severity, "minor") &&
        strcmp(severity, "warning"))
        return -1;
    if (strcmp(action, "raise") == 0)
        admin_alarm(ev, true, type, resource, severity, text ? text : "");
    else if (strcmp(action, "clear") == 0)
        admin_alarm(ev, false, type, resource, NULL, NULL);
    else
        return -1;
    return 0;
}

int admin_events_apply(admin_events_t *ev, const char *text, size_t len, int64_t now_ms)
{
    json_t *j = json_loadb(text, len, 0, NULL);
    const char *type = json_string_value(json_object_get(j, "type"));
    int rc = -1;
    if (type && strcmp(type, "heartbeat") == 0)
        rc = admin_apply_heartbeat(ev, j, now_ms);
    else if (type && strcmp(type, "alarm") == 0)
        rc = admin_apply_alarm(ev, j);
    else if (type && strcmp(type, "config") == 0)
        rc = admin_apply_config(ev, j);
    json_decref(j);
    metrics_counter_inc(rc == 0 ? ev->m_applied : ev->m_rejected);
    return rc;
}

void admin_events_check(admin_events_t *ev, int64_t now_ms)
{
    for (size_t i = 0; i < ev->nworkers; i++) {
        admin_worker_t *w = &ev->workers[i];
        int64_t limit = ev->down_after_ms > 0 ? ev->down_after_ms : 3 * w->interval_ms;
        if (w->down || now_ms - w->last_seen_ms <= limit)
            continue;
        w->down = true;
        char res[256], text[400];
        admin_worker_resource(w, res, sizeof(res));
        snprintf(text, sizeof(text), "no heartbeat from %s for %lld ms", res,
                 (long long)(now_ms - w->last_seen_ms));
        admin_alarm(ev, true, "service-down", res, "critical", text);
        admin_prop_worker_down(ev->prop, w->service, w->instance, true);
    }
}

void admin_events_poll(admin_events_t *ev, int max)
{
    for (int i = 0; ev->rk && i < max; i++) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(ev->rk, 0);
        if (!m)
            break;
        if (m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                log_warn("admin events: %s: %s", ev->topic, rd_kafka_message_errstr(m));
        } else if (m->payload && admin_events_apply(ev, m->payload, m->len, wall_now_ms()) != 0) {
            log_warn("admin events: %s [%d] offset %lld: not a valid heartbeat or alarm event",
                     ev->topic, m->partition, (long long)m->offset);
        }
        rd_kafka_message_destroy(m);
    }
    admin_events_check(ev, wall_now_ms());
    admin_feed_expire(ev, wall_now_ms());
    if (ev->db && json_array_size(ev->pending_alarms) > 0 && admin_db_ok(ev->db))
        admin_alarm_flush(ev);
}

/* Adds what worker w reports of feed fname to its /status entry agg: numbers summed (the lag
 * of workers that are up only: a down worker's partitions are someone else's now), strings
 * kept from the first worker that reports them (kafka_mode, origin), endpoints down counted,
 * the delivery rate summed; the latency into lat (count-weighted p50, the highest p99). */
static void admin_status_feed_add(json_t *agg, json_t *lat, const admin_worker_t *w,
                                  const char *fname, json_t *f)
{
    const char *k;
    json_t *v;
    json_object_foreach(f, k, v)
    {
        json_t *cur = json_object_get(agg, k);
        if (json_is_string(v) && !cur) {
            json_object_set(agg, k, v);
            continue;
        }
        if (!json_is_number(v) || (w->down && strcmp(k, "lag") == 0))
            continue;
        double sum = (cur ? json_number_value(cur) : 0) + json_number_value(v);
        json_object_set_new(agg, k,
                            json_is_integer(v) && (!cur || json_is_integer(cur))
                                ? json_integer((json_int_t)sum)
                                : json_real(sum));
    }
    json_int_t ndown = json_integer_value(json_object_get(agg, "endpoints_down"));
    const char *url;
    json_t *st;
    json_object_foreach(json_object_get(f, "endpoints"), url, st)
    {
        if (json_is_string(st) && strcmp(json_string_value(st), "down") == 0)
            ndown++;
    }
    json_object_set_new(agg, "endpoints_down", json_integer(ndown));
    json_object_set_new(agg, "workers",
                        json_integer(json_integer_value(json_object_get(agg, "workers")) + 1));
    char inst[200];
    snprintf(inst, sizeof(inst), "%s/%s", w->service, w->instance);
    json_array_append_new(json_object_get(agg, "instances"), json_string(inst));
    json_object_set_new(agg, "rate_per_s",
                        json_real(json_number_value(json_object_get(agg, "rate_per_s")) +
                                  admin_feed_rate(w, fname)));
    json_t *l = json_object_get(f, "latency_ms");
    double n = json_number_value(json_object_get(l, "count"));
    if (n > 0 && !w->down) {
        json_t *m = json_object_get(lat, fname);
        double p50 = json_number_value(json_object_get(l, "p50"));
        double p99 = json_number_value(json_object_get(l, "p99"));
        if (m) {
            double mn = json_number_value(json_object_get(m, "n"));
            double m50 = json_number_value(json_object_get(m, "p50"));
            double m99 = json_number_value(json_object_get(m, "p99"));
            p50 = (m50 * mn + p50 * n) / (mn + n);
            p99 = m99 > p99 ? m99 : p99;
            n += mn;
        }
        json_object_set_new(lat, fname, json_pack("{s:f,s:f,s:f}", "n", n, "p50", p50, "p99", p99));
    }
}

/* v rounded to 1/per (per 10: one decimal), divided last so that it prints short. */
static double admin_round(double v, double per)
{
    return (double)(long long)(v * per + (v >= 0 ? 0.5 : -0.5)) / per;
}

/* The feed's trend, latency and health, once every worker was added. */
static void admin_status_feed_finish(const admin_events_t *ev, json_t *agg, json_t *lat,
                                     const char *fname)
{
    json_object_del(agg, "latency_ms"); /* a worker's object, when one reported no count */
    json_t *m = json_object_get(lat, fname);
    if (m)
        json_object_set_new(
            agg, "latency_ms",
            json_pack("{s:f,s:f}", "p50",
                      admin_round(json_number_value(json_object_get(m, "p50")), 100), "p99",
                      admin_round(json_number_value(json_object_get(m, "p99")), 100)));
    json_object_set_new(
        agg, "rate_per_s",
        json_real(admin_round(json_number_value(json_object_get(agg, "rate_per_s")), 10)));
    const admin_lag_trend_t *t = admin_feed_health_find(ev->fh, fname);
    bool behind = false;
    if (t) {
        double slope;
        int64_t span;
        admin_lag_slope(t, &ev->lag_policy, &slope, &span);
        json_object_set_new(agg, "lag_trend_per_s", json_real(admin_round(slope, 10)));
        behind = t->behind;
    }
    json_int_t down = json_integer_value(json_object_get(agg, "endpoints_down"));
    json_object_set_new(agg, "health",
                        json_string(behind     ? "falling behind"
                                    : down > 0 ? "degraded"
                                               : "ok"));
}

/* /status "workers": one entry per worker with its counters and their rates. */
static json_t *admin_status_worker(const admin_worker_t *w, int64_t now_ms)
{
    char seen[40];
    wall_iso_utc(w->last_seen_ms, seen, sizeof(seen));
    json_t *rates = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(w->counters, k, v)
    {
        if (json_is_number(v))
            json_object_set_new(rates, k, json_real(admin_counter_rate(w, k)));
    }
    return json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:O,s:o,s:b}", "service", w->service, "instance",
                     w->instance, "state", w->down ? "down" : "up", "last_seen", seen, "age_ms",
                     (json_int_t)(now_ms - w->last_seen_ms), "interval_ms",
                     (json_int_t)w->interval_ms, "counters",
                     w->counters ? w->counters : json_null(), "rates_per_s", rates,
                     "dead_letter_surge", (int)w->dlq_surge);
}

/* /status "feeds": per feed, over the workers serving it (docs/api.md). */
static json_t *admin_status_feeds(const admin_events_t *ev)
{
    json_t *feeds = json_object(), *lat = json_object();
    for (size_t i = 0; i < ev->nworkers; i++) {
        const admin_worker_t *w = &ev->workers[i];
        const char *fname;
        json_t *f;
        json_object_foreach(w->feeds, fname, f)
        {
            json_t *agg = json_object_get(feeds, fname);
            if (!agg) {
                agg = json_pack("{s:s,s:i,s:[]}", "name", fname, "workers", 0, "instances");
                json_object_set_new(feeds, fname, agg);
            }
            admin_status_feed_add(agg, lat, w, fname, f);
        }
    }
    json_t *list = json_array();
    const char *k;
    json_t *v;
    json_object_foreach(feeds, k, v)
    {
        admin_status_feed_finish(ev, v, lat, k);
        json_array_append(list, v);
    }
    json_decref(feeds);
    json_decref(lat);
    return list;
}

/* A string of the worker's "info" (what it runs), or NULL. */
static const char *admin_info(const admin_worker_t *w, const char *key)
{
    return json_string_value(json_object_get(w->info, key));
}

static json_int_t admin_counter(const admin_worker_t *w, const char *key)
{
    return json_integer_value(json_object_get(w->counters, key));
}

/* An aggregation's or correlation's delivery mode, from its heartbeat info (kafka_txn_mode_info):
 * "kafka_mode" and, with exactly-once, "transaction_ms". */
static void admin_status_kafka_mode(json_t *e, const admin_worker_t *w)
{
    const json_t *tms = json_object_get(w->info, "transaction_ms");
    if (e && admin_info(w, "kafka_mode"))
        json_object_set_new(e, "kafka_mode", json_string(admin_info(w, "kafka_mode")));
    if (e && json_is_integer(tms))
        json_object_set_new(e, "transaction_ms", json_integer(json_integer_value(tms)));
}

/* /status "aggregation" and "correlation": what those workers run, from their heartbeats. */
static void admin_status_pipeline(const admin_events_t *ev, json_t *agg, json_t *corr)
{
    for (size_t i = 0; i < ev->nworkers; i++) {
        const admin_worker_t *w = &ev->workers[i];
        json_t *e = NULL;
        if (strcmp(w->service, "ndd-aggregation") == 0) {
            e = json_pack("{s:s?,s:s,s:s,s:s?,s:I,s:f,s:I}", "nf_type", admin_info(w, "nf_type"),
                          "instance", w->instance, "state", w->down ? "down" : "up", "topic",
                          admin_info(w, "topic"), "consumed_total",
                          admin_counter(w, "consumed_total"), "rate_per_s",
                          admin_round(admin_counter_rate(w, "consumed_total"), 10),
                          "dead_lettered_total", admin_counter(w, "dead_lettered_total"));
            if (e && admin_info(w, "filter"))
                json_object_set_new(e, "filter", json_string(admin_info(w, "filter")));
            admin_status_kafka_mode(e, w);
            json_array_append_new(agg, e);
        } else if (strcmp(w->service, "ndd-correlation") == 0) {
            e = json_pack(
                "{s:s,s:s,s:s?,s:s?,s:I,s:I,s:I,s:f}", "instance", w->instance, "state",
                w->down ? "down" : "up", "source_topic", admin_info(w, "source_topic"), "xdr_topic",
                admin_info(w, "xdr_topic"), "timeout_ms", admin_counter(w, "timeout_ms"), "open",
                admin_counter(w, "open_transactions"), "xdrs_total", admin_counter(w, "xdrs_total"),
                "rate_per_s", admin_round(admin_counter_rate(w, "xdrs_total"), 10));
            admin_status_kafka_mode(e, w);
            json_array_append_new(corr, e);
        }
    }
}

json_t *admin_events_status(admin_events_t *ev, int64_t now_ms)
{
    json_t *workers = json_array(), *agg = json_array(), *corr = json_array();
    for (size_t i = 0; i < ev->nworkers; i++)
        json_array_append_new(workers, admin_status_worker(&ev->workers[i], now_ms));
    admin_status_pipeline(ev, agg, corr);
    return json_pack(
        "{s:o,s:o,s:o,s:o,s:I,s:I,s:I}", "workers", workers, "feeds", admin_status_feeds(ev),
        "aggregation", agg, "correlation", corr, "events_applied",
        (json_int_t)(metrics_counter_get(ev->m_applied) - ev->base_applied), "events_rejected",
        (json_int_t)(metrics_counter_get(ev->m_rejected) - ev->base_rejected),
        "alarm_changes_pending", (json_int_t)json_array_size(ev->pending_alarms));
}
