/* Distribution of configuration through the compacted topic ndd.config. Key "<kind>/<id>",
 * value the record built by admin_config_record (sorted keys, so equal content is equal
 * bytes), a tombstone (null value) on delete. PostgreSQL stays the source of truth: when a
 * delivery fails the publisher is marked dirty and a reconcile makes the topic match the
 * database again; the same reconcile runs at every start. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pthread.h>
#include <stdatomic.h>

#include <librdkafka/rdkafka.h>

#include "admin.h"
#include "kafka.h"
#include "log.h"

#define ADMIN_RECONCILE_RETRY_MS 5000
#define ADMIN_RECONCILE_RETRY_MAX_MS 60000
#define ADMIN_RECONCILE_TIMEOUT_MS 10000
#define ADMIN_TOPIC_TIMEOUT_MS 10000

/* How ndd.config is created (docs/control-path.md, "The topic stays small"): compacted, its
 * active segment rolled every hour (compaction never touches the active segment, and a
 * configuration topic would otherwise not reach the 1 GiB default roll for years), cleaned
 * once a tenth of it is superseded records, tombstones kept a day (a follower reading the
 * topic from its start must see the tombstone of a record it has read: a full read takes
 * seconds, a day is the margin for a follower stalled mid-load). */
static const char *const admin_config_topic_settings[][2] = {
    {"cleanup.policy", "compact"},
    {"segment.ms", "3600000"},
    {"min.cleanable.dirty.ratio", "0.1"},
    {"delete.retention.ms", "86400000"},
};

/* A background reconcile: the thread only reads the topic and compares it with a snapshot of
 * the records the caches wanted; the keys that differ come back to the event loop, which
 * republishes their *current* state. The loop is never blocked by Kafka, and a record the
 * loop published meanwhile can never be overwritten by an older one from the thread. */
typedef struct admin_reconcile_job {
    admin_publisher_t *p;
    json_t *want;  /* key -> record text (snapshot) */
    json_t *diff;  /* out: keys to republish or tombstone */
    char err[256]; /* out, when diff is NULL */
    atomic_bool done;
} admin_reconcile_job_t;

struct admin_publisher {
    rd_kafka_t *rk;
    char *topic;
    char *bootstrap;
    uint64_t failed;
    bool dirty;
    int64_t next_reconcile_ms;
    int64_t retry_ms;
    int replication;
    pthread_t thread;
    admin_reconcile_job_t *job; /* non-NULL while a background reconcile runs */
    admin_prop_t *prop;         /* delivered records are tracked there (NULL: not tracked) */
};

static void admin_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    admin_publisher_t *p = opaque;
    if (m->err) {
        p->failed++;
        p->dirty = true;
        log_error("admin publish: record %.*s to %s failed: %s (will reconcile)", (int)m->key_len,
                  (const char *)m->key, p->topic, rd_kafka_err2str(m->err));
        return;
    }
    /* The record's timestamp is the publish time we set; the opaque its object version. */
    if (p->prop && m->key)
        admin_prop_published(p->prop, m->key, m->key_len, (int64_t)(intptr_t)m->_private,
                             m->partition, m->offset, rd_kafka_message_timestamp(m, NULL));
}

void admin_publisher_track(admin_publisher_t *p, admin_prop_t *prop)
{
    if (p)
        p->prop = prop;
}

int admin_kafka_create_topic(const char *bootstrap, const char *topic, int partitions,
                             int replication, bool compact, char *err, size_t errlen)
{
    /* NDD's one topic creator: replication -1 (config-replication's default) takes NDD's rule
     * (KAFKA_REPLICATION_AUTO: min(3, brokers), min.insync.replicas 2 with 3 brokers), as the
     * daemons' topics do; it also waits until every partition has a leader. */
    kafka_prop_t
        configs[sizeof(admin_config_topic_settings) / sizeof(*admin_config_topic_settings)];
    size_t n = 0;
    for (size_t i = 0; compact && i < sizeof(configs) / sizeof(*configs); i++)
        configs[n++] =
            (kafka_prop_t){admin_config_topic_settings[i][0], admin_config_topic_settings[i][1]};
    if (kafka_admin_create_topic(bootstrap, topic, partitions,
                                 replication < 0 ? KAFKA_REPLICATION_AUTO : replication, configs, n,
                                 ADMIN_TOPIC_TIMEOUT_MS) == 0)
        return 0;
    snprintf(err, errlen, "creating topic %s on %s: refused or no answer within %d ms (logged)",
             topic, bootstrap, ADMIN_TOPIC_TIMEOUT_MS);
    return -1;
}

admin_publisher_t *admin_publisher_new(const char *bootstrap, const char *topic, int replication,
                                       char *err, size_t errlen)
{
    admin_publisher_t *p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    p->replication = replication;
    /* Kafka being away at start is not fatal: the database is the source of truth, and the
     * background reconcile creates the topic and catches up once the broker answers. */
    if (admin_kafka_create_topic(bootstrap, topic, 1, replication, true, err, errlen) != 0) {
        log_error("admin publish: %s (will retry)", err);
        p->dirty = true;
    }
    p->topic = strdup(topic);
    p->bootstrap = strdup(bootstrap);
    p->retry_ms = ADMIN_RECONCILE_RETRY_MS;
    char errstr[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *props[][2] = {{"bootstrap.servers", bootstrap},
                              {"enable.idempotence", "true"},
                              {"acks", "all"},
                              {"linger.ms", "1"},
                              {"message.timeout.ms", "30000"},
                              {"queue.buffering.max.messages", "100000"}};
    for (size_t i = 0; i < sizeof(props) / sizeof(*props); i++)
        if (rd_kafka_conf_set(conf, props[i][0], props[i][1], errstr, sizeof(errstr)) !=
            RD_KAFKA_CONF_OK) {
            snprintf(err, errlen, "%s: %s", props[i][0], errstr);
            rd_kafka_conf_destroy(conf);
            admin_publisher_free(p);
            return NULL;
        }
    rd_kafka_conf_set_dr_msg_cb(conf, admin_dr_cb);
    rd_kafka_conf_set_opaque(conf, p);
    p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (!p->rk) {
        snprintf(err, errlen, "producer: %s", errstr);
        admin_publisher_free(p);
        return NULL;
    }
    return p;
}

void admin_publisher_free(admin_publisher_t *p)
{
    if (!p)
        return;
    if (p->job) {
        pthread_join(p->thread, NULL);
        json_decref(p->job->want);
        json_decref(p->job->diff);
        free(p->job);
    }
    if (p->rk) {
        if (rd_kafka_flush(p->rk, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR)
            log_warn("admin publish: %d records to %s not delivered at shutdown; the next "
                     "start reconciles them",
                     rd_kafka_outq_len(p->rk), p->topic);
        rd_kafka_destroy(p->rk);
    }
    free(p->topic);
    free(p->bootstrap);
    free(p);
}

uint64_t admin_publisher_failed(const admin_publisher_t *p)
{
    return p ? p->failed : 0;
}

json_t *admin_config_record(admin_ctx_t *ctx, admin_kind_t kind, json_t *obj)
{
    json_t *spec = admin_strip_server_fields(obj);
    if (!spec)
        return NULL;
    json_t *rec = json_object();
    const char *ref = kind == ADMIN_KIND_FEED ? admin_feed_filter_ref(spec) : NULL;
    if (ref) {
        /* Workers apply a feed on its own: the named filter's rules travel inside it. */
        admin_obj_t *f = admin_cache_find_name(&ctx->cache[ADMIN_KIND_FILTER], ref);
        if (!f) {
            json_decref(spec);
            json_decref(rec);
            return NULL;
        }
        json_object_set_new(rec, "filter_ref", json_string(ref));
        json_object_set_new(rec, "filter_version", json_integer(f->version));
        json_object_set_new(spec, "filter", admin_strip_server_fields(f->json));
    }
    json_object_set_new(rec, "kind", json_string(admin_kind_name(kind)));
    json_object_set(rec, "id", json_object_get(obj, "id"));
    json_object_set(rec, "name", json_object_get(obj, "name"));
    json_object_set(rec, "version", json_object_get(obj, "version"));
    json_object_set(rec, "updated_at", json_object_get(obj, "updated_at"));
    json_object_set_new(rec, "spec", spec);
    return rec;
}

/* version: the object's (0 for a tombstone), handed to the delivery report as the opaque. The
 * record timestamp is the publish time: the workers measure propagation from it. */
static int admin_produce(admin_publisher_t *p, const char *key, const char *value, int64_t version)
{
    rd_kafka_resp_err_t e = rd_kafka_producev(
        p->rk, RD_KAFKA_V_TOPIC(p->topic), RD_KAFKA_V_KEY(key, strlen(key)),
        RD_KAFKA_V_VALUE((void *)value, value ? strlen(value) : 0),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_TIMESTAMP(wall_now_ms()),
        RD_KAFKA_V_OPAQUE((void *)(intptr_t)version), RD_KAFKA_V_END);
    if (e) {
        p->failed++;
        p->dirty = true;
        log_error("admin publish: cannot queue %s for %s: %s (will reconcile)", key, p->topic,
                  rd_kafka_err2str(e));
        return -1;
    }
    return 0;
}

static char *admin_record_text(admin_ctx_t *ctx, admin_kind_t kind, json_t *obj)
{
    json_t *rec = admin_config_record(ctx, kind, obj);
    char *text = rec ? json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(rec);
    return text;
}

int admin_publish(admin_publisher_t *p, admin_ctx_t *ctx, admin_kind_t kind, const char *id,
                  json_t *json)
{
    char key[192];
    snprintf(key, sizeof(key), "%s/%s", admin_kind_name(kind), id);
    char *text = NULL;
    if (json) {
        text = admin_record_text(ctx, kind, json);
        if (!text) {
            log_error("admin publish: cannot build the record of %s", key);
            p->dirty = true;
            return -1;
        }
    }
    int64_t version = json ? (int64_t)json_integer_value(json_object_get(json, "version")) : 0;
    int rc = admin_produce(p, key, text, version);
    free(text);
    rd_kafka_poll(p->rk, 0);
    return rc;
}

typedef struct admin_feeds_using {
    admin_publisher_t *p;
    admin_ctx_t *ctx;
    const char *filter;
} admin_feeds_using_t;

static int admin_republish_feed(admin_obj_t *o, void *arg)
{
    admin_feeds_using_t *a = arg;
    const char *ref = admin_feed_filter_ref(o->json);
    if (ref && strcmp(ref, a->filter) == 0)
        admin_publish(a->p, a->ctx, ADMIN_KIND_FEED, o->id, o->json);
    return 0;
}

void admin_publish_feeds_using(admin_publisher_t *p, admin_ctx_t *ctx, const char *filter_name)
{
    if (!p || !filter_name)
        return;
    admin_feeds_using_t a = {p, ctx, filter_name};
    admin_cache_foreach(&ctx->cache[ADMIN_KIND_FEED], admin_republish_feed, &a);
}

/* ---- reconcile ---- */

typedef struct admin_desired {
    admin_ctx_t *ctx;
    admin_kind_t kind;
    json_t *map; /* key -> record text */
} admin_desired_t;

static int admin_desired_add(admin_obj_t *o, void *arg)
{
    admin_desired_t *d = arg;
    char key[192];
    snprintf(key, sizeof(key), "%s/%s", admin_kind_name(d->kind), o->id);
    char *text = admin_record_text(d->ctx, d->kind, o->json);
    /* No record (a feed whose filter is not cached): leave the key alone, neither republish
     * nor tombstone it. */
    json_object_set_new(d->map, key, text ? json_string(text) : json_null());
    free(text);
    return 0;
}

static json_t *admin_desired_snapshot(admin_ctx_t *ctx)
{
    json_t *want = json_object();
    for (int k = 0; k < ADMIN_KIND_COUNT; k++) {
        admin_desired_t d = {ctx, (admin_kind_t)k, want};
        admin_cache_foreach(&ctx->cache[k], admin_desired_add, &d);
    }
    return want;
}

/* Reads the whole topic (it is compacted: one record per live key plus recent history) into
 * key -> latest value text (JSON null for a tombstone). */
static json_t *admin_read_topic(const admin_publisher_t *p, int timeout_ms, char *err,
                                size_t errlen)
{
    char errstr[256], group[64];
    snprintf(group, sizeof(group), "ndd-admin-reconcile-%lld", (long long)wall_now_ms());
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *props[][2] = {{"bootstrap.servers", p->bootstrap},
                              {"group.id", group},
                              {"enable.auto.commit", "false"},
                              {"enable.partition.eof", "true"}};
    for (size_t i = 0; i < sizeof(props) / sizeof(*props); i++)
        rd_kafka_conf_set(conf, props[i][0], props[i][1], errstr, sizeof(errstr));
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    if (!rk) {
        snprintf(err, errlen, "reconcile consumer: %s", errstr);
        return NULL;
    }
    json_t *seen = NULL;
    const rd_kafka_metadata_t *md = NULL;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, p->topic, NULL);
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms);
    rd_kafka_topic_destroy(rkt);
    if (e || md->topic_cnt != 1 || md->topics[0].err) {
        snprintf(err, errlen, "metadata of %s: %s", p->topic,
                 rd_kafka_err2str(e               ? e
                                  : md->topic_cnt ? md->topics[0].err
                                                  : RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART));
        goto out;
    }
    int np = md->topics[0].partition_cnt;
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(np);
    int remaining = 0;
    for (int i = 0; i < np; i++) {
        int64_t lo, hi;
        int32_t pid = md->topics[0].partitions[i].id;
        if (rd_kafka_query_watermark_offsets(rk, p->topic, pid, &lo, &hi, timeout_ms)) {
            snprintf(err, errlen, "watermarks of %s [%d] unavailable", p->topic, pid);
            rd_kafka_topic_partition_list_destroy(parts);
            goto out;
        }
        if (hi > lo) {
            rd_kafka_topic_partition_list_add(parts, p->topic, pid)->offset =
                RD_KAFKA_OFFSET_BEGINNING;
            remaining++;
        }
    }
    seen = json_object();
    if (remaining)
        rd_kafka_assign(rk, parts);
    rd_kafka_topic_partition_list_destroy(parts);
    int64_t deadline = mono_now_ms() + timeout_ms;
    while (remaining > 0) {
        if (mono_now_ms() > deadline) {
            snprintf(err, errlen, "reading %s to its end took longer than %d ms", p->topic,
                     timeout_ms);
            json_decref(seen);
            seen = NULL;
            break;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            remaining--;
        } else if (m->err) {
            log_warn("admin reconcile: reading %s: %s", p->topic, rd_kafka_message_errstr(m));
        } else if (m->key) {
            char key[256];
            snprintf(key, sizeof(key), "%.*s", (int)m->key_len, (const char *)m->key);
            json_object_set_new(seen, key,
                                m->payload ? json_stringn(m->payload, m->len) : json_null());
        }
        rd_kafka_message_destroy(m);
    }
out:
    if (md)
        rd_kafka_metadata_destroy(md);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return seen;
}

/* Keys whose latest record differs from want: missing or different records, and live keys
 * want does not have. Runs on any thread (touches only its arguments and a new consumer). */
static json_t *admin_reconcile_diff(const admin_publisher_t *p, json_t *want, int timeout_ms,
                                    char *err, size_t errlen)
{
    json_t *seen = admin_read_topic(p, timeout_ms, err, errlen);
    if (!seen)
        return NULL;
    json_t *diff = json_array();
    const char *key;
    json_t *v;
    json_object_foreach(want, key, v)
    {
        if (json_is_null(v))
            continue;
        json_t *have = json_object_get(seen, key);
        if (!have || !json_is_string(have) ||
            strcmp(json_string_value(have), json_string_value(v)) != 0)
            json_array_append_new(diff, json_string(key));
    }
    json_object_foreach(seen, key, v)
    {
        if (!json_is_null(v) && !json_object_get(want, key))
            json_array_append_new(diff, json_string(key));
    }
    json_decref(seen);
    return diff;
}

/* On the event loop: republishes the current state of each key (tombstone when gone). */
static int admin_reconcile_apply(admin_publisher_t *p, admin_ctx_t *ctx, json_t *diff)
{
    int produced = 0;
    size_t i;
    json_t *k;
    json_array_foreach(diff, i, k)
    {
        const char *key = json_string_value(k);
        const char *slash = strchr(key, '/');
        char kname[32];
        admin_kind_t kind;
        if (!slash || (size_t)(slash - key) >= sizeof(kname))
            goto tombstone;
        memcpy(kname, key, (size_t)(slash - key));
        kname[slash - key] = '\0';
        if (admin_kind_from_name(kname, &kind) != 0)
            goto tombstone;
        admin_obj_t *o = admin_cache_get(&ctx->cache[kind], slash + 1);
        if (!o)
            goto tombstone;
        log_debug("admin reconcile: republishing %s", key);
        if (admin_publish(p, ctx, kind, o->id, o->json) == 0)
            produced++;
        continue;
    tombstone:
        /* A key the database does not have (or not of our shape): remove it. */
        log_debug("admin reconcile: tombstoning %s", key);
        if (admin_produce(p, key, NULL, 0) == 0)
            produced++;
    }
    return produced;
}

int admin_reconcile(admin_publisher_t *p, admin_ctx_t *ctx, int timeout_ms, char *err,
                    size_t errlen)
{
    /* Anything still queued must land before we compare. */
    rd_kafka_flush(p->rk, timeout_ms);
    json_t *want = admin_desired_snapshot(ctx);
    json_t *diff = admin_reconcile_diff(p, want, timeout_ms, err, errlen);
    json_decref(want);
    if (!diff) {
        p->dirty = true;
        return -1;
    }
    p->dirty = false;
    int produced = admin_reconcile_apply(p, ctx, diff);
    json_decref(diff);
    if (rd_kafka_flush(p->rk, timeout_ms) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        snprintf(err, errlen, "%d records to %s not delivered within %d ms",
                 rd_kafka_outq_len(p->rk), p->topic, timeout_ms);
        p->dirty = true;
        return -1;
    }
    return p->dirty ? -1 : produced;
}

static void *admin_reconcile_thread(void *arg)
{
    admin_reconcile_job_t *job = arg;
    if (admin_kafka_create_topic(job->p->bootstrap, job->p->topic, 1, job->p->replication, true,
                                 job->err, sizeof(job->err)) != 0) {
        atomic_store(&job->done, true);
        return NULL;
    }
    job->diff = admin_reconcile_diff(job->p, job->want, ADMIN_RECONCILE_TIMEOUT_MS, job->err,
                                     sizeof(job->err));
    atomic_store(&job->done, true);
    return NULL;
}

void admin_publisher_poll(admin_publisher_t *p, admin_ctx_t *ctx)
{
    if (!p)
        return;
    rd_kafka_poll(p->rk, 0);
    int64_t now = wall_now_ms();
    if (p->job) {
        if (!atomic_load(&p->job->done))
            return;
        pthread_join(p->thread, NULL);
        admin_reconcile_job_t *job = p->job;
        p->job = NULL;
        if (job->diff) {
            int n = admin_reconcile_apply(p, ctx, job->diff);
            log_info("admin publish: reconciled %s, %d records written", p->topic, n);
            p->retry_ms = ADMIN_RECONCILE_RETRY_MS;
        } else {
            p->dirty = true;
            p->retry_ms = p->retry_ms * 2 > ADMIN_RECONCILE_RETRY_MAX_MS
                              ? ADMIN_RECONCILE_RETRY_MAX_MS
                              : p->retry_ms * 2;
            log_error("admin publish: reconcile of %s failed: %s (retrying in %lld ms)", p->topic,
                      job->err, (long long)p->retry_ms);
        }
        p->next_reconcile_ms = now + p->retry_ms;
        json_decref(job->want);
        json_decref(job->diff);
        free(job);
        return;
    }
    /* Wait for the queue to drain first: its delivery reports may mark us dirty again. */
    if (!p->dirty || now < p->next_reconcile_ms || rd_kafka_outq_len(p->rk) > 0)
        return;
    admin_reconcile_job_t *job = calloc(1, sizeof(*job));
    if (!job)
        return;
    job->p = p;
    job->want = admin_desired_snapshot(ctx);
    p->dirty = false;
    if (pthread_create(&p->thread, NULL, admin_reconcile_thread, job) != 0) {
        json_decref(job->want);
        free(job);
        p->dirty = true;
        p->next_reconcile_ms = now + p->retry_ms;
        return;
    }
    p->job = job;
}
