/* ndd.config follower: see config_topic.h and docs/control-path.md.
 *
 * Why manual assignment and not a consumer group: every worker must see the whole topic at
 * every start, and a group would add a join (group.initial.rebalance.delay.ms, 3 s by
 * default) and leave one dead group per process start on the broker. With assign() at
 * OFFSET_BEGINNING the consumer never joins and never commits (group.id is only required by
 * librdkafka's API). The price is partition discovery, done by a small thread with metadata
 * requests so the owner's thread never blocks on Kafka. */
#include "clock.h"
#include "config_topic.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "log.h"

#define CONFIG_TOPIC_METADATA_TIMEOUT_MS 5000
/* Discovery retries this often until the first answer (then refresh_ms). */
#define CONFIG_TOPIC_RETRY_MS 1000
#define CONFIG_TOPIC_END_EMPTY (-1)
#define CONFIG_TOPIC_END_UNKNOWN INT64_MAX

struct config_topic {
    rd_kafka_t *rk;         /* NULL: offline */
    rd_kafka_queue_t *rkqu; /* the consumer queue (messages, EOFs, errors) */
    int efd;
    char *topic;
    char **kinds;
    size_t n_kinds;
    size_t max_keys;
    size_t max_record_bytes;
    int refresh_ms;
    config_topic_upsert_fn on_upsert;
    config_topic_delete_fn on_delete;
    config_topic_loaded_fn on_loaded;
    config_topic_applied_fn on_applied;
    bool defer_applied;
    void *owner;

    json_t *state; /* "<kind>/<id>" -> record, insertion (topic) order */
    bool loaded;
    bool in_poll;
    /* Owner thread: a partition reached its end (EOF event), next offset to read. */
    uint8_t eof[CONFIG_TOPIC_MAX_PARTITIONS];
    int64_t next[CONFIG_TOPIC_MAX_PARTITIONS];
    config_topic_stats_t stats;

    /* Propagation (owner thread): live changes handled and not yet marked applied, with
     * their publish time and the histogram child of their kind; the offsets last reported. */
    struct {
        int64_t ts_ms;
        metrics_histogram_t *h;
    } pending[CONFIG_TOPIC_POLL_MAX];
    size_t n_pending;
    bool untimed_pending; /* a change beyond pending[] waits too */
    int64_t applied_next[CONFIG_TOPIC_MAX_PARTITIONS];
    int applied_parts;
    bool report_due; /* the first mark after the load reports even if nothing moved */

    /* Shared with the discovery thread. */
    pthread_t thread;
    bool thread_started;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stopping;         /* under lock */
    atomic_int load_parts; /* partitions the initial load waits for; -1 until known */
    atomic_int assigned;   /* partitions assigned so far */
    /* End offset (high watermark) of each partition at the first discovery, written before
     * load_parts is published: CONFIG_TOPIC_END_EMPTY for a partition empty at start,
     * CONFIG_TOPIC_END_UNKNOWN when the broker did not say (then only EOF counts). */
    _Atomic int64_t start_end[CONFIG_TOPIC_MAX_PARTITIONS];

    metrics_counter_t *m_results[CONFIG_TOPIC_RESULT_COUNT];
    metrics_gauge_t *m_keys;
    metrics_gauge_t *m_loaded;
    metrics_family_t *f_prop;
    metrics_counter_t *m_untimed;
};

/* Publish-to-apply buckets, seconds: a change is applied within milliseconds on a quiet
 * cluster; the tail shows a broker or worker stall. */
static const double config_topic_prop_buckets[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                   0.25,  0.5,    1,     2.5,  5,     10,   30};

static const char *const config_topic_result_names[CONFIG_TOPIC_RESULT_COUNT] = {
    "upsert", "delete", "unchanged", "ignored", "too_large", "max_keys", "invalid"};

/* ---- keys and records ----------------------------------------------------------------- */

int config_topic_parse_key(const void *key, size_t key_len, char *kind, size_t kind_size, char *id,
                           size_t id_size)
{
    const char *k = key;
    if (!k || key_len == 0 || key_len > CONFIG_TOPIC_MAX_KEY)
        return -1;
    const char *slash = memchr(k, '/', key_len);
    if (!slash)
        return -1;
    size_t klen = (size_t)(slash - k), ilen = key_len - klen - 1;
    if (klen == 0 || klen > CONFIG_TOPIC_MAX_KIND || klen >= kind_size || ilen == 0 ||
        ilen >= id_size)
        return -1;
    if (!(k[0] >= 'a' && k[0] <= 'z'))
        return -1;
    for (size_t i = 1; i < klen; i++) {
        char c = k[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return -1;
    }
    for (size_t i = 0; i < ilen; i++) {
        unsigned char c = (unsigned char)slash[1 + i];
        if (c < 0x20 || c == 0x7f)
            return -1;
    }
    memcpy(kind, k, klen);
    kind[klen] = '\0';
    memcpy(id, slash + 1, ilen);
    id[ilen] = '\0';
    return 0;
}

json_t *config_topic_parse_record(const char *kind, const char *id, const void *value,
                                  size_t value_len, char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *rec = json_loadb(value, value_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!rec) {
        snprintf(err, errlen, "not JSON: %s (line %d, column %d)", jerr.text, jerr.line,
                 jerr.column);
        return NULL;
    }
    const char *why = NULL;
    const char *rkind = json_string_value(json_object_get(rec, "kind"));
    const char *rid = json_string_value(json_object_get(rec, "id"));
    if (!json_is_object(rec))
        why = "not a JSON object";
    else if (!rkind)
        why = "no \"kind\" string";
    else if (strcmp(rkind, kind) != 0)
        why = "\"kind\" differs from the key's";
    else if (!rid)
        why = "no \"id\" string";
    else if (strcmp(rid, id) != 0)
        why = "\"id\" differs from the key's";
    else if (!json_is_object(json_object_get(rec, "spec")))
        why = "no \"spec\" object";
    if (why) {
        snprintf(err, errlen, "%s", why);
        json_decref(rec);
        return NULL;
    }
    return rec;
}

static bool config_topic_wants(const config_topic_t *ft, const char *kind)
{
    if (ft->n_kinds == 0)
        return true;
    for (size_t i = 0; i < ft->n_kinds; i++)
        if (strcmp(ft->kinds[i], kind) == 0)
            return true;
    return false;
}

static config_topic_result_t config_topic_count(config_topic_t *ft, config_topic_result_t r)
{
    ft->stats.results[r]++;
    metrics_counter_inc(ft->m_results[r]);
    ft->stats.keys = json_object_size(ft->state);
    metrics_gauge_set(ft->m_keys, (double)ft->stats.keys);
    return r;
}

/* A live change handed to the owner: it waits for the next mark. */
static void config_topic_pending_add(config_topic_t *ft, const char *kind, int64_t ts_ms)
{
    if (ts_ms <= 0 || ft->n_pending >= CONFIG_TOPIC_POLL_MAX) {
        ft->untimed_pending = true;
        ft->stats.changes_untimed++;
        metrics_counter_inc(ft->m_untimed);
        return;
    }
    ft->pending[ft->n_pending].ts_ms = ts_ms;
    ft->pending[ft->n_pending].h = metrics_histogram_labels(ft->f_prop, ft->topic, kind);
    ft->n_pending++;
}

config_topic_result_t config_topic_apply(config_topic_t *ft, const void *key, size_t key_len,
                                         const void *value, size_t value_len, int32_t partition,
                                         int64_t offset)
{
    return config_topic_apply_timed(ft, key, key_len, value, value_len, partition, offset, 0);
}

config_topic_result_t config_topic_apply_timed(config_topic_t *ft, const void *key, size_t key_len,
                                               const void *value, size_t value_len,
                                               int32_t partition, int64_t offset, int64_t ts_ms)
{
    if (partition >= 0 && partition < CONFIG_TOPIC_MAX_PARTITIONS && offset >= ft->next[partition])
        ft->next[partition] = offset + 1;
    char kind[CONFIG_TOPIC_MAX_KIND + 1], id[CONFIG_TOPIC_MAX_KEY + 1];
    char skey[CONFIG_TOPIC_MAX_KEY + 1], why[256];
    if (config_topic_parse_key(key, key_len, kind, sizeof(kind), id, sizeof(id)) != 0) {
        log_error("config topic %s [%d] offset %lld: key \"%.*s\" is not \"<kind>/<id>\": "
                  "record skipped",
                  ft->topic, (int)partition, (long long)offset,
                  key ? (int)(key_len > 64 ? 64 : key_len) : 0, key ? (const char *)key : "");
        return config_topic_count(ft, CONFIG_TOPIC_INVALID);
    }
    if (!config_topic_wants(ft, kind))
        return config_topic_count(ft, CONFIG_TOPIC_IGNORED);
    memcpy(skey, key, key_len); /* parse_key bounded it by CONFIG_TOPIC_MAX_KEY */
    skey[key_len] = '\0';
    json_t *prev = json_object_get(ft->state, skey);

    if (!value) {
        if (!prev)
            return config_topic_count(ft, CONFIG_TOPIC_UNCHANGED);
        json_incref(prev);
        json_object_del(ft->state, skey);
        config_topic_count(ft, CONFIG_TOPIC_DELETE);
        if (ft->loaded) {
            log_info("config topic %s: %s deleted (offset %lld)", ft->topic, skey,
                     (long long)offset);
            if (ft->on_delete)
                ft->on_delete(ft->owner, kind, id, prev);
            config_topic_pending_add(ft, kind, ts_ms);
        }
        json_decref(prev);
        return CONFIG_TOPIC_DELETE;
    }
    if (value_len > ft->max_record_bytes) {
        log_error("config topic %s [%d] offset %lld: record %s is %zu bytes, over the limit of "
                  "%zu: skipped (%s)",
                  ft->topic, (int)partition, (long long)offset, skey, value_len,
                  ft->max_record_bytes,
                  prev ? "the previous version stays applied" : "the key stays absent");
        return config_topic_count(ft, CONFIG_TOPIC_TOO_LARGE);
    }
    json_t *rec = config_topic_parse_record(kind, id, value, value_len, why, sizeof(why));
    if (!rec) {
        log_error("config topic %s [%d] offset %lld: record %s is invalid: %s: skipped (%s)",
                  ft->topic, (int)partition, (long long)offset, skey, why,
                  prev ? "the previous version stays applied" : "the key stays absent");
        return config_topic_count(ft, CONFIG_TOPIC_INVALID);
    }
    if (prev && json_equal(prev, rec)) {
        json_decref(rec);
        return config_topic_count(ft, CONFIG_TOPIC_UNCHANGED);
    }
    if (!prev && json_object_size(ft->state) >= ft->max_keys) {
        log_error("config topic %s [%d] offset %lld: record %s skipped: already %zu keys held "
                  "(max_keys)",
                  ft->topic, (int)partition, (long long)offset, skey, ft->max_keys);
        json_decref(rec);
        return config_topic_count(ft, CONFIG_TOPIC_MAX_KEYS);
    }
    json_incref(prev); /* NULL-safe; keeps it alive for the callback after the replace */
    if (json_object_set(ft->state, skey, rec) != 0) {
        log_error("config topic %s: out of memory holding %s: skipped", ft->topic, skey);
        json_decref(prev);
        json_decref(rec);
        return config_topic_count(ft, CONFIG_TOPIC_MAX_KEYS);
    }
    config_topic_count(ft, CONFIG_TOPIC_UPSERT);
    if (ft->loaded) {
        json_int_t v = json_integer_value(json_object_get(rec, "version"));
        log_info("config topic %s: %s %s (version %lld, offset %lld)", ft->topic, skey,
                 prev ? "changed" : "added", (long long)v, (long long)offset);
        if (ft->on_upsert)
            ft->on_upsert(ft->owner, kind, id, rec, prev);
        config_topic_pending_add(ft, kind, ts_ms);
    }
    json_decref(prev);
    json_decref(rec);
    return CONFIG_TOPIC_UPSERT;
}

/* Splits a held key (always well-formed: it passed config_topic_parse_key). */
static void config_topic_split(const char *key, char *kind, size_t kind_size, const char **id)
{
    const char *slash = strchr(key, '/');
    size_t n = (size_t)(slash - key);
    if (n >= kind_size)
        n = kind_size - 1;
    memcpy(kind, key, n);
    kind[n] = '\0';
    *id = slash + 1;
}

/* Hands one held record to on_upsert as if it had just arrived (the end of the first load). */
static int config_topic_replay_one(void *arg, const char *kind, const char *id, json_t *rec)
{
    config_topic_t *ft = arg;
    ft->on_upsert(ft->owner, kind, id, rec, NULL);
    return 0;
}

void config_topic_finish_load(config_topic_t *ft)
{
    if (ft->loaded)
        return;
    ft->loaded = true;
    ft->stats.loaded = true;
    metrics_gauge_set(ft->m_loaded, 1);
    size_t n = json_object_size(ft->state);
    log_info("config topic %s: initial load complete, %zu key(s)", ft->topic, n);
    /* A callback may not touch the state (it cannot poll), so plain iteration is safe. */
    if (ft->on_upsert)
        config_topic_foreach(ft, config_topic_replay_one, ft);
    if (ft->on_loaded)
        ft->on_loaded(ft->owner, n);
    ft->report_due = true;
}

/* The applied state (new reference) in on_applied's shape. */
static json_t *config_topic_applied_state(const config_topic_t *ft)
{
    json_t *kinds = json_array(), *offsets = json_array();
    for (size_t i = 0; i < ft->n_kinds; i++)
        json_array_append_new(kinds, json_string(ft->kinds[i]));
    for (int p = 0; p < ft->applied_parts; p++)
        json_array_append_new(offsets, json_integer(ft->applied_next[p]));
    return json_pack("{s:s,s:o,s:o,s:I}", "topic", ft->topic, "kinds", kinds, "offsets", offsets,
                     "applied_ms", (json_int_t)ft->stats.applied_ms);
}

void config_topic_mark_applied(config_topic_t *ft)
{
    if (!ft->loaded)
        return;
    int parts = ft->rk ? atomic_load(&ft->assigned) : 0;
    for (int p = 0; !ft->rk && p < CONFIG_TOPIC_MAX_PARTITIONS; p++)
        if (ft->next[p] > 0)
            parts = p + 1; /* offline followers: the partitions applied records came from */
    bool moved =
        ft->report_due || parts != ft->applied_parts || ft->n_pending || ft->untimed_pending;
    for (int p = 0; p < parts && !moved; p++)
        moved = ft->applied_next[p] != ft->next[p];
    if (!moved)
        return;
    int64_t now = wall_now_ms();
    for (size_t i = 0; i < ft->n_pending; i++) {
        int64_t d = now - ft->pending[i].ts_ms;
        /* Clocks of two hosts: a publish "after" the apply reads as instantaneous. */
        metrics_histogram_observe(ft->pending[i].h, d > 0 ? (double)d / 1000.0 : 0.0);
    }
    ft->stats.changes_applied += ft->n_pending;
    ft->n_pending = 0;
    ft->untimed_pending = false;
    ft->report_due = false;
    memcpy(ft->applied_next, ft->next, sizeof(ft->applied_next[0]) * (size_t)parts);
    ft->applied_parts = parts;
    ft->stats.applied_ms = now;
    if (ft->on_applied) {
        json_t *st = config_topic_applied_state(ft);
        if (st)
            ft->on_applied(ft->owner, st);
        json_decref(st);
    }
}

int config_topic_foreach(const config_topic_t *ft,
                         int (*cb)(void *arg, const char *kind, const char *id, json_t *record),
                         void *arg)
{
    const char *key;
    json_t *rec;
    json_object_foreach(ft->state, key, rec)
    {
        char kind[CONFIG_TOPIC_MAX_KIND + 1];
        const char *id;
        config_topic_split(key, kind, sizeof(kind), &id);
        int rc = cb(arg, kind, id, rec);
        if (rc)
            return rc;
    }
    return 0;
}

config_topic_stats_t config_topic_stats(const config_topic_t *ft)
{
    config_topic_stats_t s = ft->stats;
    s.keys = json_object_size(ft->state);
    s.partitions = atomic_load(&ft->assigned);
    s.loaded = ft->loaded;
    return s;
}

bool config_topic_loaded(const config_topic_t *ft)
{
    return ft->loaded;
}

int config_topic_fd(const config_topic_t *ft)
{
    return ft->efd;
}

/* ---- Kafka ---------------------------------------------------------------------------- */

static void config_topic_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    if (level <= 3)
        log_error("librdkafka %s %s: %s", rd_kafka_name(rk), fac, buf);
    else if (level == 4)
        log_warn("librdkafka %s %s: %s", rd_kafka_name(rk), fac, buf);
    else
        log_debug("librdkafka %s %s: %s", rd_kafka_name(rk), fac, buf);
}

static void config_topic_wake(config_topic_t *ft)
{
    uint64_t one = 1;
    if (ft->efd >= 0 && write(ft->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        log_warn("config topic %s: eventfd write: %s", ft->topic, strerror(errno));
    if (ft->rkqu)
        rd_kafka_queue_yield(ft->rkqu);
}

/* Partition count of the topic: 0 when it does not exist, -1 when the broker did not say. */
static int config_topic_partitions(config_topic_t *ft, rd_kafka_topic_t *rkt, char *err,
                                   size_t errlen)
{
    const rd_kafka_metadata_t *md = NULL;
    rd_kafka_resp_err_t e =
        rd_kafka_metadata(ft->rk, 0, rkt, &md, CONFIG_TOPIC_METADATA_TIMEOUT_MS);
    int n = -1;
    if (e) {
        snprintf(err, errlen, "%s", rd_kafka_err2str(e));
    } else if (md->topic_cnt != 1) {
        snprintf(err, errlen, "metadata names %d topics", md->topic_cnt);
    } else if (md->topics[0].err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
        n = 0;
    } else if (md->topics[0].err) {
        snprintf(err, errlen, "%s", rd_kafka_err2str(md->topics[0].err));
    } else {
        n = md->topics[0].partition_cnt;
    }
    if (md)
        rd_kafka_metadata_destroy(md);
    return n;
}

static int config_topic_assign_new(config_topic_t *ft, int n)
{
    int have = atomic_load(&ft->assigned);
    if (n > CONFIG_TOPIC_MAX_PARTITIONS) {
        log_error("config topic %s has %d partitions; only the first %d are followed", ft->topic, n,
                  CONFIG_TOPIC_MAX_PARTITIONS);
        n = CONFIG_TOPIC_MAX_PARTITIONS;
    }
    if (n <= have)
        return 0;
    if (atomic_load(&ft->load_parts) < 0) {
        /* First discovery: the end offsets the initial load must reach. */
        for (int p = have; p < n; p++) {
            int64_t lo = 0, hi = 0;
            rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(
                ft->rk, ft->topic, p, &lo, &hi, CONFIG_TOPIC_METADATA_TIMEOUT_MS);
            if (e)
                log_warn("config topic %s [%d]: end offset unknown (%s): the initial load waits "
                         "for the partition's end-of-file instead",
                         ft->topic, p, rd_kafka_err2str(e));
            atomic_store(&ft->start_end[p], e          ? CONFIG_TOPIC_END_UNKNOWN
                                            : hi <= lo ? CONFIG_TOPIC_END_EMPTY
                                                       : hi);
        }
    }
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(n - have);
    for (int p = have; p < n; p++)
        rd_kafka_topic_partition_list_add(l, ft->topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_error_t *e = rd_kafka_incremental_assign(ft->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    if (e) {
        log_error("config topic %s: assigning partitions %d..%d: %s", ft->topic, have, n - 1,
                  rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
        return -1;
    }
    log_info("config topic %s: reading partitions %d..%d from the beginning", ft->topic, have,
             n - 1);
    atomic_store(&ft->assigned, n);
    return 0;
}

static void *config_topic_discover(void *arg)
{
    config_topic_t *ft = arg;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(ft->rk, ft->topic, NULL);
    bool failing = false;
    for (;;) {
        char err[256] = "";
        int n = rkt ? config_topic_partitions(ft, rkt, err, sizeof(err)) : -1;
        if (n < 0) {
            if (!failing)
                log_warn("config topic %s: partitions unknown: %s (retrying every %d ms; the "
                         "configuration applied so far stays)",
                         ft->topic, rkt ? err : "no topic handle", CONFIG_TOPIC_RETRY_MS);
            failing = true;
        } else {
            if (failing)
                log_info("config topic %s: metadata answered again", ft->topic);
            failing = false;
            if (n == 0 && atomic_load(&ft->load_parts) < 0)
                log_warn("config topic %s does not exist yet: starting with an empty "
                         "configuration, following it once it appears",
                         ft->topic);
            if (config_topic_assign_new(ft, n) == 0 && atomic_load(&ft->load_parts) < 0) {
                atomic_store(&ft->load_parts, atomic_load(&ft->assigned));
                config_topic_wake(ft);
            }
        }
        int wait_ms = failing || atomic_load(&ft->load_parts) < 0 || atomic_load(&ft->assigned) == 0
                          ? CONFIG_TOPIC_RETRY_MS
                          : ft->refresh_ms;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += wait_ms / 1000;
        ts.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&ft->lock);
        while (!ft->stopping && pthread_cond_timedwait(&ft->cond, &ft->lock, &ts) == 0)
            ;
        bool stop = ft->stopping;
        pthread_mutex_unlock(&ft->lock);
        if (stop)
            break;
    }
    if (rkt)
        rd_kafka_topic_destroy(rkt);
    return NULL;
}

static void config_topic_check_loaded(config_topic_t *ft)
{
    if (ft->loaded)
        return;
    int n = atomic_load(&ft->load_parts);
    if (n < 0)
        return;
    for (int p = 0; p < n; p++) {
        int64_t end = atomic_load(&ft->start_end[p]);
        if (!ft->eof[p] && end != CONFIG_TOPIC_END_EMPTY && ft->next[p] < end)
            return;
    }
    config_topic_finish_load(ft);
}

static void config_topic_handle(config_topic_t *ft, rd_kafka_message_t *m)
{
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        if (m->partition >= 0 && m->partition < CONFIG_TOPIC_MAX_PARTITIONS)
            ft->eof[m->partition] = 1;
        return;
    }
    if (m->err) {
        ft->stats.errors++;
        if (m->err == RD_KAFKA_RESP_ERR__TRANSPORT || m->err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN)
            log_warn("config topic %s: %s (reconnecting; the applied configuration stays)",
                     ft->topic, rd_kafka_message_errstr(m));
        else
            log_error("config topic %s [%d] offset %lld: %s", ft->topic, (int)m->partition,
                      (long long)m->offset, rd_kafka_message_errstr(m));
        return;
    }
    if (m->partition >= 0 && m->partition < CONFIG_TOPIC_MAX_PARTITIONS)
        ft->next[m->partition] = m->offset + 1;
    rd_kafka_timestamp_type_t tt;
    int64_t ts = rd_kafka_message_timestamp(m, &tt);
    config_topic_apply_timed(ft, m->key, m->key_len, m->payload, m->len, m->partition, m->offset,
                             tt == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE ? 0 : ts);
}

int config_topic_poll(config_topic_t *ft, int timeout_ms)
{
    if (!ft->rk || ft->in_poll)
        return 0;
    ft->in_poll = true;
    uint64_t junk;
    /* Clear the fd first: anything queued after this read sets it again. */
    if (ft->efd >= 0 && read(ft->efd, &junk, sizeof(junk)) < 0 && errno != EAGAIN)
        log_warn("config topic %s: eventfd read: %s", ft->topic, strerror(errno));
    config_topic_check_loaded(ft);
    int n = 0;
    bool full = false;
    for (int events = 0;; events++) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(ft->rk, events == 0 ? timeout_ms : 0);
        if (!m)
            break;
        if (!m->err)
            n++;
        config_topic_handle(ft, m);
        rd_kafka_message_destroy(m);
        if (n >= CONFIG_TOPIC_POLL_MAX || events >= 4 * CONFIG_TOPIC_POLL_MAX) {
            full = true;
            break;
        }
    }
    config_topic_check_loaded(ft);
    if (!ft->defer_applied)
        config_topic_mark_applied(ft);
    if (full) {
        uint64_t one = 1;
        if (ft->efd >= 0 && write(ft->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
            log_warn("config topic %s: eventfd write: %s", ft->topic, strerror(errno));
    }
    ft->in_poll = false;
    return n;
}

/* ---- life cycle ----------------------------------------------------------------------- */

static int config_topic_conf(rd_kafka_conf_t *conf, const char *key, const char *value, char *err,
                             size_t errlen)
{
    char why[256];
    if (rd_kafka_conf_set(conf, key, value, why, sizeof(why)) != RD_KAFKA_CONF_OK) {
        /* The value may be a secret (sasl.password): named, not echoed. */
        snprintf(err, errlen, "kafka property %s: %s", key, why);
        return -1;
    }
    return 0;
}

static int config_topic_connect(config_topic_t *ft, const config_topic_opts_t *o, char *err,
                                size_t errlen)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const kafka_prop_t defaults[] = {
        {"bootstrap.servers", o->brokers},
        {"client.id", o->client_id ? o->client_id : "ndd-config-follower"},
        /* Bounded prefetch: the topic is small, a config change is rare. */
        {"queued.max.messages.kbytes", "4096"},
        {"queued.min.messages", "1000"},
        /* The broker holds an empty fetch this long; on this topic (one fetch per worker, a
         * few hundred bytes) it is what a change waits before it is read: the default 500 ms
         * made half a second of the propagation time (docs/control-path.md). */
        {"fetch.wait.max.ms", "50"},
    };
    const kafka_prop_t forced[] = {
        {"group.id", "ndd-config-follower"},   {"enable.auto.commit", "false"},
        {"enable.auto.offset.store", "false"}, {"enable.partition.eof", "true"},
        {"auto.offset.reset", "earliest"},
    };
    for (size_t i = 0; i < sizeof(defaults) / sizeof(*defaults); i++)
        if (config_topic_conf(conf, defaults[i].key, defaults[i].value, err, errlen))
            goto fail;
    for (size_t i = 0; i < o->n_props; i++) {
        if (!o->props[i].key || !o->props[i].value) {
            snprintf(err, errlen, "kafka property #%zu has no key or value", i);
            goto fail;
        }
        if (config_topic_conf(conf, o->props[i].key, o->props[i].value, err, errlen))
            goto fail;
    }
    for (size_t i = 0; i < sizeof(forced) / sizeof(*forced); i++)
        if (config_topic_conf(conf, forced[i].key, forced[i].value, err, errlen))
            goto fail;
    rd_kafka_conf_set_log_cb(conf, config_topic_log_cb);
    char why[512];
    ft->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, why, sizeof(why));
    if (!ft->rk) {
        snprintf(err, errlen, "config topic consumer: %s", why);
        goto fail;
    }
    conf = NULL;
    /* Client errors (broker down...) then arrive as messages of the consumer queue. */
    rd_kafka_poll_set_consumer(ft->rk);
    ft->rkqu = rd_kafka_queue_get_consumer(ft->rk);
    ft->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (!ft->rkqu || ft->efd < 0) {
        snprintf(err, errlen, "config topic: %s", ft->rkqu ? strerror(errno) : "no queue");
        return -1;
    }
    static const uint64_t one = 1;
    rd_kafka_queue_io_event_enable(ft->rkqu, ft->efd, &one, sizeof(one));
    if (pthread_create(&ft->thread, NULL, config_topic_discover, ft) != 0) {
        snprintf(err, errlen, "config topic: cannot start the discovery thread");
        return -1;
    }
    ft->thread_started = true;
    return 0;
fail:
    if (conf)
        rd_kafka_conf_destroy(conf);
    return -1;
}

config_topic_t *config_topic_new(const config_topic_opts_t *o, char *err, size_t errlen)
{
    config_topic_t *ft = calloc(1, sizeof(*ft));
    if (!ft) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ft->efd = -1;
    pthread_mutex_init(&ft->lock, NULL);
    pthread_cond_init(&ft->cond, NULL);
    atomic_init(&ft->load_parts, -1);
    atomic_init(&ft->assigned, 0);
    ft->topic = strdup(o->topic ? o->topic : CONFIG_TOPIC_DEFAULT_TOPIC);
    ft->state = json_object();
    ft->max_keys = o->max_keys ? o->max_keys : CONFIG_TOPIC_DEFAULT_MAX_KEYS;
    ft->max_record_bytes =
        o->max_record_bytes ? o->max_record_bytes : CONFIG_TOPIC_DEFAULT_MAX_RECORD;
    ft->refresh_ms = o->refresh_ms > 0 ? o->refresh_ms : CONFIG_TOPIC_DEFAULT_REFRESH_MS;
    ft->on_upsert = o->on_upsert;
    ft->on_delete = o->on_delete;
    ft->on_loaded = o->on_loaded;
    ft->on_applied = o->on_applied;
    ft->defer_applied = o->defer_applied;
    ft->owner = o->owner;
    if (!ft->topic || !ft->state)
        goto oom;
    if (o->n_kinds) {
        ft->kinds = calloc(o->n_kinds, sizeof(*ft->kinds));
        if (!ft->kinds)
            goto oom;
        for (size_t i = 0; i < o->n_kinds; i++) {
            if (!o->kinds[i] || !*o->kinds[i]) {
                snprintf(err, errlen, "config topic: kind #%zu is empty", i);
                config_topic_free(ft);
                return NULL;
            }
            if (!(ft->kinds[i] = strdup(o->kinds[i])))
                goto oom;
            ft->n_kinds++;
        }
    }

    metrics_registry_t *reg = o->metrics ? o->metrics : metrics_default_registry();
    metrics_family_t *fr = metrics_counter_new(
        reg, "ndd_config_messages_read_total",
        "Records of the configuration topic read by this worker, by what they did", "topic,result");
    metrics_family_t *fk = metrics_gauge_new(reg, "ndd_config_keys",
                                             "Configuration keys held from the topic", "topic");
    metrics_family_t *fl = metrics_gauge_new(
        reg, "ndd_config_loaded", "1 once the initial load of the topic is complete", "topic");
    ft->f_prop = metrics_histogram_new(
        reg, "ndd_config_propagation_seconds",
        "Time from the admin's publish of a configuration change to this worker having applied it",
        "topic,kind", config_topic_prop_buckets,
        sizeof(config_topic_prop_buckets) / sizeof(*config_topic_prop_buckets));
    metrics_family_t *fu = metrics_counter_new(
        reg, "ndd_config_propagation_untimed_total",
        "Configuration changes applied without a propagation time (no record timestamp, or more "
        "than one poll's worth waiting)",
        "topic");
    if (!fr || !fk || !fl || !ft->f_prop || !fu) {
        snprintf(err, errlen, "config topic: cannot register its metrics");
        config_topic_free(ft);
        return NULL;
    }
    for (int r = 0; r < CONFIG_TOPIC_RESULT_COUNT; r++)
        ft->m_results[r] = metrics_counter_labels(fr, ft->topic, config_topic_result_names[r]);
    ft->m_keys = metrics_gauge_labels(fk, ft->topic);
    ft->m_loaded = metrics_gauge_labels(fl, ft->topic);
    ft->m_untimed = metrics_counter_labels(fu, ft->topic);
    metrics_gauge_set(ft->m_keys, 0);
    metrics_gauge_set(ft->m_loaded, 0);

    if (o->brokers && config_topic_connect(ft, o, err, errlen) != 0) {
        config_topic_free(ft);
        return NULL;
    }
    return ft;
oom:
    snprintf(err, errlen, "out of memory");
    config_topic_free(ft);
    return NULL;
}

void config_topic_free(config_topic_t *ft)
{
    if (!ft)
        return;
    if (ft->thread_started) {
        pthread_mutex_lock(&ft->lock);
        ft->stopping = true;
        pthread_cond_signal(&ft->cond);
        pthread_mutex_unlock(&ft->lock);
        pthread_join(ft->thread, NULL);
    }
    if (ft->rkqu) {
        rd_kafka_queue_io_event_enable(ft->rkqu, -1, NULL, 0);
        rd_kafka_queue_destroy(ft->rkqu);
    }
    if (ft->rk) {
        rd_kafka_consumer_close(ft->rk);
        rd_kafka_destroy(ft->rk);
    }
    if (ft->efd >= 0)
        close(ft->efd);
    for (size_t i = 0; i < ft->n_kinds; i++)
        free(ft->kinds[i]);
    free(ft->kinds);
    json_decref(ft->state);
    free(ft->topic);
    pthread_mutex_destroy(&ft->lock);
    pthread_cond_destroy(&ft->cond);
    free(ft);
}
