/* librdkafka wrappers: the producer, the consumer and the helpers the daemons share; topic
 * administration is in kafka_admin.c. See kafka.h. */
#include "kafka.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "clock.h"
#include "kafka-int.h"
#include "log.h"

#define KAFKA_TOPIC_CACHE 16

struct kafka_producer {
    rd_kafka_t *rk;
    rd_kafka_conf_t *conf; /* a copy of what rk was made with, for kafka_producer_rebuild */
    kafka_delivery_cb_t on_delivery;
    kafka_stats_cb_t on_stats;
    void *owner;
    /* rd_kafka_topic_t handles by name, so a produce does not look the topic up each time. */
    size_t n_topics;
    struct {
        char *name;
        rd_kafka_topic_t *rkt;
    } topics[KAFKA_TOPIC_CACHE];
};

struct kafka_consumer {
    rd_kafka_t *rk;
    rd_kafka_conf_t *conf; /* a copy of what rk was made with, for kafka_consumer_rebuild */
    rd_kafka_topic_partition_list_t *sub; /* the subscription, subscribed again by a rebuild */
    char *group;
    kafka_rebalance_cb_t on_rebalance;
    kafka_stats_cb_t on_stats;
    kafka_rebuild_cb_t on_rebuild;
    void *owner;
    uint64_t rebuilds;
    int64_t rebuilt_ms; /* when the last rebuild was tried (KAFKA_REBUILD_INTERVAL_MS apart) */
    bool paused;
    bool cooperative; /* the group's rebalance protocol, from the effective assignment strategy */
    /* The committed offsets of an assignment could not be fetched at all (a request-level
     * error such as NOT_COORDINATOR after a coordinator moved): librdkafka 2.0.2 then never
     * retries and never fetches those partitions (librdkafka GitHub issue #5586). Set by the
     * error event; the next poll rebuilds the consumer, whose new member fetches them again. */
    bool refetch;
    /* The partitions the owner was told it has (ASSIGNED minus REVOKED/LOST), so a rebuild can
     * tell it they are lost. */
    rd_kafka_topic_partition_list_t *owned;
};

int kafka_conf_set(rd_kafka_conf_t *conf, const char *key, const char *value, char *errstr,
                   size_t errstr_size)
{
    if (rd_kafka_conf_set(conf, key, value, errstr, errstr_size) != RD_KAFKA_CONF_OK) {
        /* Names the property; the value may be a secret (sasl.password), so it is not echoed. */
        char why[256];
        size_t n = strnlen(errstr, sizeof(why) - 1);
        memcpy(why, errstr, n);
        why[n] = '\0';
        snprintf(errstr, errstr_size, "kafka property %s: %s", key, why);
        return -1;
    }
    return 0;
}

static int kafka_conf_apply(rd_kafka_conf_t *conf, const kafka_prop_t *defaults, size_t n_defaults,
                            const kafka_prop_t *props, size_t n_props, char *errstr,
                            size_t errstr_size)
{
    for (size_t i = 0; i < n_defaults; i++)
        if (kafka_conf_set(conf, defaults[i].key, defaults[i].value, errstr, errstr_size))
            return -1;
    for (size_t i = 0; i < n_props; i++) {
        if (!props[i].key || !props[i].value) {
            snprintf(errstr, errstr_size, "kafka property #%zu has no key or value", i);
            return -1;
        }
        if (kafka_conf_set(conf, props[i].key, props[i].value, errstr, errstr_size))
            return -1;
    }
    return 0;
}

static void kafka_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque);

/* The zeroed state of a client of kind ("producer"), when its options are complete (ok);
 * NULL with errstr filled (missing: what the options lack) otherwise. */
static void *kafka_client_alloc(size_t size, const char *kind, bool ok, const char *missing,
                                char *errstr, size_t errstr_size)
{
    void *state = ok ? calloc(1, size) : NULL;
    if (!state)
        snprintf(errstr, errstr_size, "kafka %s: %s", kind, ok ? "out of memory" : missing);
    return state;
}

/* Creates a client: NDD defaults, then the caller's properties, the callbacks every client
 * has, then the kind's own (setup). NULL with errstr filled ("kafka <kind>: ..."). */
static rd_kafka_t *kafka_client_new(rd_kafka_type_t type, const kafka_prop_t *defaults,
                                    size_t n_defaults, const kafka_prop_t *props, size_t n_props,
                                    void *opaque, void (*setup)(rd_kafka_conf_t *, void *),
                                    rd_kafka_conf_t **keep, char *errstr, size_t errstr_size)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (kafka_conf_apply(conf, defaults, n_defaults, props, n_props, errstr, errstr_size)) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_conf_set_opaque(conf, opaque);
    rd_kafka_conf_set_error_cb(conf, kafka_error_cb);
    rd_kafka_conf_set_log_cb(conf, kafka_log_cb);
    setup(conf, opaque);
    /* rd_kafka_new consumes conf: a copy (callbacks and opaque included) makes a rebuild. */
    *keep = rd_kafka_conf_dup(conf);
    char why[512];
    rd_kafka_t *rk = rd_kafka_new(type, conf, why, sizeof(why));
    if (!rk) {
        snprintf(errstr, errstr_size, "kafka %s: %s",
                 type == RD_KAFKA_PRODUCER ? "producer" : "consumer", why);
        rd_kafka_conf_destroy(conf);
        rd_kafka_conf_destroy(*keep);
        *keep = NULL;
    }
    return rk;
}

void kafka_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    /* syslog levels: 0-3 error, 4 warning, 5-6 info, 7 debug */
    if (level <= 3)
        log_error("librdkafka %s %s: %s", rd_kafka_name(rk), fac, buf);
    else if (level == 4)
        log_warn("librdkafka %s %s: %s", rd_kafka_name(rk), fac, buf);
    else if (level <= 6)
        log_info("librdkafka %s %s: %s", rd_kafka_name(rk), fac, buf);
    else
        log_debug("librdkafka %s %s: %s", rd_kafka_name(rk), fac, buf);
}

static void kafka_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        /* A consumer's is acted on by its next poll (kafka_consumer_rebuild logs it with its
         * group, member and topics); a producer's by its owner (kafka_producer_fatal_error). */
        char why[512];
        rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, why, sizeof(why));
        log_error("kafka %s: fatal error %s: %s", rd_kafka_name(rk), rd_kafka_err2name(orig), why);
        return;
    }
    /* Transport errors are retried by librdkafka; they are worth a line, not an action. */
    if (err == RD_KAFKA_RESP_ERR__TRANSPORT || err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN)
        log_warn("kafka %s: %s: %s", rd_kafka_name(rk), rd_kafka_err2name(err), reason);
    else
        log_error("kafka %s: %s: %s", rd_kafka_name(rk), rd_kafka_err2name(err), reason);
}

/* ---- producer ------------------------------------------------------------------------- */

static int kafka_producer_stats_cb(rd_kafka_t *rk, char *json, size_t len, void *opaque)
{
    kafka_producer_t *p = opaque;
    if (p->on_stats)
        p->on_stats(p->owner, json, len);
    return 0; /* librdkafka frees json */
}

static void kafka_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *rkm, void *opaque)
{
    kafka_producer_t *p = opaque;
    if (rkm->err && rkm->err != RD_KAFKA_RESP_ERR__PURGE_QUEUE &&
        rkm->err != RD_KAFKA_RESP_ERR__PURGE_INFLIGHT)
        log_error("kafka produce to %s [%d] failed: %s", rd_kafka_topic_name(rkm->rkt),
                  (int)rkm->partition, rd_kafka_err2str(rkm->err));
    if (p->on_delivery)
        p->on_delivery(p->owner, rkm->_private, rkm);
}

static void kafka_producer_conf(rd_kafka_conf_t *conf, void *opaque)
{
    kafka_producer_t *p = opaque;
    rd_kafka_conf_set_dr_msg_cb(conf, kafka_dr_cb);
    if (p->on_stats)
        rd_kafka_conf_set_stats_cb(conf, kafka_producer_stats_cb);
}

kafka_producer_t *kafka_producer_new(const kafka_producer_opts_t *opts, char *errstr,
                                     size_t errstr_size)
{
    kafka_producer_t *p = kafka_client_alloc(sizeof(*p), "producer", opts && opts->brokers,
                                             "no brokers given", errstr, errstr_size);
    if (!p)
        return NULL;
    p->on_delivery = opts->on_delivery;
    p->on_stats = opts->on_stats;
    p->owner = opts->owner;

    const kafka_prop_t defaults[] = {
        {"bootstrap.servers", opts->brokers},
        {"client.id", opts->client_id ? opts->client_id : "ndd"},
        {"enable.idempotence", "true"},
        /* One produce request in flight per broker connection. librdkafka 2.0.2's idempotent
         * producer busy-polls its broker thread (poll() with a zero timeout) whenever 2-5
         * requests are outstanding and more records wait: when the broker answers late, each
         * producer burns a core, which on shared cores makes the broker later still. With 1 in
         * flight the records wait in the next (larger) batch instead: measured with the broker
         * stopped 40 ms of every 80, 3,000 copies/s cost 2.9 CPU-s with 5 in flight and 0.43 with
         * 1; flat out, 1 in flight produced as fast (91-105k vs 85-93k msgs/s) for 25 % less CPU
         * (docs/benchmarks.md, "The producer's busy loop"). Order and no-duplicates still hold. */
        {"max.in.flight", "1"},
        {"linger.ms", "5"},
        /* librdkafka leaves Nagle's algorithm on; over SSL and SASL_SSL a copy then waits at
         * every hop for the peer's delayed ACK: p50 180-196 ms against 25-27 ms without it
         * (bench/run.sh --profile ocnadd, docs/benchmarks.md). Batching is linger.ms's job. */
        {"socket.nagle.disable", "true"},
        {"batch.num.messages", "10000"},
        {"queue.buffering.max.messages", "100000"},
        {"queue.buffering.max.kbytes", "65536"},
        {"message.timeout.ms", "0"},
        {"partitioner", "murmur2_random"},
        /* librdkafka's default (1,000,000) refuses a copy at the contract's 1 MiB limit. */
        {"message.max.bytes", KAFKA_RECORD_MAX_BYTES_STR},
    };
    p->rk = kafka_client_new(RD_KAFKA_PRODUCER, defaults, sizeof(defaults) / sizeof(defaults[0]),
                             opts->props, opts->n_props, p, kafka_producer_conf, &p->conf, errstr,
                             errstr_size);
    if (!p->rk) {
        free(p);
        return NULL;
    }
    return p;
}

static rd_kafka_topic_t *kafka_producer_topic(kafka_producer_t *p, const char *topic)
{
    for (size_t i = 0; i < p->n_topics; i++)
        if (strcmp(p->topics[i].name, topic) == 0)
            return p->topics[i].rkt;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(p->rk, topic, NULL);
    if (!rkt)
        return NULL;
    if (p->n_topics < KAFKA_TOPIC_CACHE) {
        char *name = strdup(topic);
        if (name) {
            p->topics[p->n_topics].name = name;
            p->topics[p->n_topics].rkt = rkt;
            p->n_topics++;
            return rkt;
        }
    }
    /* Cache full: librdkafka keeps its own refcounted handle per name, so dropping ours right
     * after the produce is safe (the queued message holds a reference). */
    return rkt;
}

static bool kafka_producer_topic_cached(const kafka_producer_t *p, const rd_kafka_topic_t *rkt)
{
    for (size_t i = 0; i < p->n_topics; i++)
        if (p->topics[i].rkt == rkt)
            return true;
    return false;
}

kafka_produce_result_t kafka_produce(kafka_producer_t *p, const char *topic, int32_t partition,
                                     const void *key, size_t key_len, const void *value,
                                     size_t value_len, rd_kafka_headers_t *hdrs,
                                     kafka_value_mode_t mode, void *msg_opaque,
                                     rd_kafka_resp_err_t *err)
{
    rd_kafka_topic_t *rkt = kafka_producer_topic(p, topic);
    if (!rkt) {
        rd_kafka_resp_err_t e = rd_kafka_last_error();
        if (err)
            *err = e;
        log_error("kafka produce to %s: no topic handle: %s", topic, rd_kafka_err2str(e));
        return KAFKA_PRODUCE_ERROR;
    }
    int flags = mode == KAFKA_VALUE_COPY ? RD_KAFKA_MSG_F_COPY : 0;
    rd_kafka_resp_err_t e = rd_kafka_producev(
        p->rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_PARTITION(partition), RD_KAFKA_V_KEY(key, key_len),
        RD_KAFKA_V_VALUE((void *)value, value_len), RD_KAFKA_V_MSGFLAGS(flags),
        RD_KAFKA_V_OPAQUE(msg_opaque), RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_END);
    if (!kafka_producer_topic_cached(p, rkt))
        rd_kafka_topic_destroy(rkt);
    if (err)
        *err = e;
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
        return KAFKA_PRODUCE_OK;
    if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL)
        return KAFKA_PRODUCE_FULL;
    log_error("kafka produce to %s [%d] refused: %s", topic, (int)partition, rd_kafka_err2str(e));
    return KAFKA_PRODUCE_ERROR;
}

int kafka_producer_poll(kafka_producer_t *p, int timeout_ms)
{
    return rd_kafka_poll(p->rk, timeout_ms);
}

int kafka_producer_outq_len(kafka_producer_t *p)
{
    return rd_kafka_outq_len(p->rk);
}

rd_kafka_resp_err_t kafka_producer_fatal_error(kafka_producer_t *p, char *errstr, size_t size)
{
    return rd_kafka_fatal_error(p->rk, errstr, size);
}

int kafka_producer_flush(kafka_producer_t *p, int timeout_ms)
{
    rd_kafka_flush(p->rk, timeout_ms);
    return rd_kafka_outq_len(p->rk);
}

/* Drops the cached topic handles (before the client they belong to is destroyed). */
static void kafka_producer_forget_topics(kafka_producer_t *p)
{
    for (size_t i = 0; i < p->n_topics; i++) {
        rd_kafka_topic_destroy(p->topics[i].rkt);
        free(p->topics[i].name);
    }
    p->n_topics = 0;
}

int kafka_producer_close(kafka_producer_t *p, int timeout_ms)
{
    if (!p)
        return 0;
    rd_kafka_flush(p->rk, timeout_ms);
    int left = rd_kafka_outq_len(p->rk);
    if (left > 0) {
        log_warn("kafka producer %s: %d records not acknowledged after %d ms, purging",
                 rd_kafka_name(p->rk), left, timeout_ms);
        rd_kafka_purge(p->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        /* Purged records get their delivery callbacks on the next poll; serve them so every
         * owner learns the outcome of every record it handed over. */
        int64_t deadline = mono_now_ms() + 2000;
        while (rd_kafka_outq_len(p->rk) > 0 && mono_now_ms() < deadline)
            rd_kafka_poll(p->rk, 50);
    }
    kafka_producer_forget_topics(p);
    rd_kafka_destroy(p->rk);
    if (p->conf)
        rd_kafka_conf_destroy(p->conf);
    free(p);
    return left;
}

rd_kafka_t *kafka_producer_handle(kafka_producer_t *p)
{
    return p->rk;
}

/* Gives the producer a new handle from its configuration and returns the old one, purged of
 * what was queued but not yet destroyed (NULL, logged, when no new handle could be made: the
 * old one is kept). */
static rd_kafka_t *kafka_producer_swap(kafka_producer_t *p)
{
    char why[512] = "";
    rd_kafka_resp_err_t fatal = rd_kafka_fatal_error(p->rk, why, sizeof why);
    rd_kafka_conf_t *conf = p->conf ? rd_kafka_conf_dup(p->conf) : NULL;
    char e[512] = "no configuration kept";
    rd_kafka_t *rk = conf ? rd_kafka_new(RD_KAFKA_PRODUCER, conf, e, sizeof e) : NULL;
    if (!rk) {
        if (conf)
            rd_kafka_conf_destroy(conf);
        log_error("kafka producer %s: cannot rebuild: %s", rd_kafka_name(p->rk), e);
        return NULL;
    }
    log_error("kafka producer %s: rebuilt after %s: %s; %d queued records purged (their owners "
              "produce them again)",
              rd_kafka_name(p->rk), fatal ? rd_kafka_err2name(fatal) : "a request",
              fatal ? why : "no fatal error", rd_kafka_outq_len(p->rk));
    rd_kafka_purge(p->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    kafka_producer_forget_topics(p);
    rd_kafka_t *old = p->rk;
    p->rk = rk;
    return old;
}

int kafka_producer_rebuild(kafka_producer_t *p)
{
    rd_kafka_t *old = kafka_producer_swap(p);
    if (!old)
        return -1;
    /* Every record handed over gets its callback (_PURGE_): none is left unaccounted. */
    int64_t deadline = mono_now_ms() + 2000;
    do
        rd_kafka_poll(old, 50);
    while (rd_kafka_outq_len(old) > 0 && mono_now_ms() < deadline);
    rd_kafka_destroy(old);
    return 0;
}

/* ---- consumer ------------------------------------------------------------------------- */

static void kafka_log_partitions(const char *what, const rd_kafka_topic_partition_list_t *parts)
{
    char line[512];
    size_t off = 0;
    line[0] = '\0';
    for (int i = 0; i < parts->cnt && off < sizeof(line) - 1; i++) {
        int n = snprintf(line + off, sizeof(line) - off, "%s%s[%d]", i ? " " : "",
                         parts->elems[i].topic, (int)parts->elems[i].partition);
        if (n < 0)
            break;
        off += (size_t)n;
    }
    log_info("kafka consumer %s %d partition(s): %s", what, parts->cnt, line);
}

/* Updates c->owned: parts added (add) or removed (NULL parts: all removed). */
static void kafka_consumer_owned(kafka_consumer_t *c, const rd_kafka_topic_partition_list_t *parts,
                                 bool add)
{
    if (!parts) {
        if (c->owned)
            rd_kafka_topic_partition_list_destroy(c->owned);
        c->owned = NULL;
        return;
    }
    if (!c->owned)
        c->owned = rd_kafka_topic_partition_list_new(parts->cnt > 0 ? parts->cnt : 1);
    for (int i = 0; i < parts->cnt; i++) {
        const rd_kafka_topic_partition_t *tp = &parts->elems[i];
        bool have = rd_kafka_topic_partition_list_find(c->owned, tp->topic, tp->partition);
        if (add && !have)
            rd_kafka_topic_partition_list_add(c->owned, tp->topic, tp->partition);
        else if (!add && have)
            rd_kafka_topic_partition_list_del(c->owned, tp->topic, tp->partition);
    }
}

static void kafka_rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                               rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    kafka_consumer_t *c = opaque;
    /* Not rd_kafka_rebalance_protocol(): called from this callback while the consumer closes
     * it can return NULL or wait forever (librdkafka GitHub issue #4041; a feed stopped by a
     * configuration change right after it started hung its adapter's stop). */
    bool cooperative = c->cooperative;
    rd_kafka_error_t *error = NULL;
    rd_kafka_resp_err_t ret = RD_KAFKA_RESP_ERR_NO_ERROR;

    switch (err) {
    case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
        kafka_log_partitions("assigned", parts);
        if (!cooperative)
            kafka_consumer_owned(c, NULL, false);
        kafka_consumer_owned(c, parts, true);
        if (c->on_rebalance)
            c->on_rebalance(c->owner, KAFKA_REBALANCE_ASSIGNED, parts);
        if (cooperative)
            error = rd_kafka_incremental_assign(rk, parts);
        else
            ret = rd_kafka_assign(rk, parts);
        /* A paused consumer stays paused: new partitions start paused too. And a resumed one
         * resumes them: librdkafka keeps a partition's pause flag across a revoke and a new
         * assignment, so one paused, revoked and assigned again after a resume that found
         * nothing assigned would stay paused for good (librdkafka #1849). */
        if (c->paused)
            rd_kafka_pause_partitions(rk, parts);
        else
            rd_kafka_resume_partitions(rk, parts);
        break;
    case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS: {
        bool lost = rd_kafka_assignment_lost(rk);
        kafka_log_partitions(lost ? "lost" : "revoked", parts);
        kafka_consumer_owned(c, cooperative ? parts : NULL, false);
        if (c->on_rebalance)
            c->on_rebalance(c->owner, lost ? KAFKA_REBALANCE_LOST : KAFKA_REBALANCE_REVOKED, parts);
        if (!lost) {
            /* Hand the next owner every finished record: commit what was stored (for the whole
             * assignment; the revoked partitions are still in it here) before they go. */
            rd_kafka_resp_err_t ce = rd_kafka_commit(rk, NULL, 0);
            if (ce && ce != RD_KAFKA_RESP_ERR__NO_OFFSET)
                log_warn("kafka consumer: commit on revoke failed: %s", rd_kafka_err2str(ce));
        }
        if (cooperative)
            error = rd_kafka_incremental_unassign(rk, parts);
        else
            ret = rd_kafka_assign(rk, NULL);
        break;
    }
    default:
        log_error("kafka consumer: rebalance error: %s", rd_kafka_err2str(err));
        kafka_consumer_owned(c, NULL, false);
        if (c->on_rebalance)
            c->on_rebalance(c->owner, KAFKA_REBALANCE_LOST, parts);
        ret = rd_kafka_assign(rk, NULL);
        break;
    }
    if (error) {
        log_error("kafka consumer: incremental rebalance failed: %s", rd_kafka_error_string(error));
        rd_kafka_error_destroy(error);
    } else if (ret) {
        log_error("kafka consumer: assign failed: %s", rd_kafka_err2str(ret));
    }
}

static int kafka_consumer_stats_cb(rd_kafka_t *rk, char *json, size_t len, void *opaque)
{
    kafka_consumer_t *c = opaque;
    if (c->on_stats)
        c->on_stats(c->owner, json, len);
    return 0;
}

static void kafka_commit_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                            rd_kafka_topic_partition_list_t *offsets, void *opaque)
{
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR || err == RD_KAFKA_RESP_ERR__NO_OFFSET)
        return;
    for (int i = 0; offsets && i < offsets->cnt; i++)
        log_warn("kafka commit %s [%d] offset %lld failed: %s", offsets->elems[i].topic,
                 (int)offsets->elems[i].partition, (long long)offsets->elems[i].offset,
                 rd_kafka_err2str(offsets->elems[i].err ? offsets->elems[i].err : err));
    if (!offsets)
        log_warn("kafka commit failed: %s", rd_kafka_err2str(err));
}

static void kafka_consumer_conf(rd_kafka_conf_t *conf, void *opaque)
{
    kafka_consumer_t *c = opaque;
    rd_kafka_conf_set_rebalance_cb(conf, kafka_rebalance_cb);
    rd_kafka_conf_set_offset_commit_cb(conf, kafka_commit_cb);
    if (c->on_stats)
        rd_kafka_conf_set_stats_cb(conf, kafka_consumer_stats_cb);
}

/* Frees the consumer's own state (its rk already destroyed). */
static void kafka_consumer_free(kafka_consumer_t *c)
{
    if (c->conf)
        rd_kafka_conf_destroy(c->conf);
    if (c->sub)
        rd_kafka_topic_partition_list_destroy(c->sub);
    kafka_consumer_owned(c, NULL, false);
    free(c->group);
    free(c);
}

kafka_consumer_t *kafka_consumer_new(const kafka_consumer_opts_t *opts, char *errstr,
                                     size_t errstr_size)
{
    kafka_consumer_t *c = kafka_client_alloc(
        sizeof(*c), "consumer", opts && opts->brokers && opts->group_id && opts->n_topics > 0,
        "brokers, group and topics are required", errstr, errstr_size);
    if (!c)
        return NULL;
    c->on_rebalance = opts->on_rebalance;
    c->on_stats = opts->on_stats;
    c->on_rebuild = opts->on_rebuild;
    c->owner = opts->owner;

    kafka_prop_t defaults[] = {
        {"bootstrap.servers", opts->brokers},
        {"group.id", opts->group_id},
        {"session.timeout.ms", KAFKA_SESSION_TIMEOUT_MS_DEFAULT},
        {"client.id", opts->client_id ? opts->client_id : "ndd"},
        {"enable.auto.offset.store", "false"},
        {"enable.auto.commit", "true"},
        {"auto.commit.interval.ms", "1000"},
        {"auto.offset.reset", "earliest"},
        {"enable.partition.eof", "false"},
        {"queued.max.messages.kbytes", "16384"},
        {"socket.nagle.disable", "true"}, /* as the producer's: fetch answers wait for no ACK */
        {"partition.assignment.strategy",
         opts->cooperative ? "cooperative-sticky" : "range,roundrobin"},
        {"group.instance.id", opts->instance_id}, /* last: left out when there is none */
    };
    size_t n_defaults = sizeof(defaults) / sizeof(defaults[0]);
    if (!opts->instance_id || !*opts->instance_id)
        n_defaults--;
    c->rk = kafka_client_new(RD_KAFKA_CONSUMER, defaults, n_defaults, opts->props, opts->n_props, c,
                             kafka_consumer_conf, &c->conf, errstr, errstr_size);
    c->group = c->rk ? strdup(opts->group_id) : NULL;
    if (!c->group) {
        if (c->rk) {
            snprintf(errstr, errstr_size, "kafka consumer: out of memory");
            rd_kafka_destroy(c->rk);
        }
        kafka_consumer_free(c);
        return NULL;
    }
    rd_kafka_poll_set_consumer(c->rk);
    /* The strategy after the kafka.* overrides (librdkafka refuses to mix cooperative and
     * eager assignors, so its name says the protocol). */
    char strategy[128] = "";
    size_t strategy_len = sizeof(strategy);
    if (rd_kafka_conf_get(rd_kafka_conf(c->rk), "partition.assignment.strategy", strategy,
                          &strategy_len) == RD_KAFKA_CONF_OK)
        c->cooperative = strstr(strategy, "cooperative") != NULL;
    else
        c->cooperative = opts->cooperative;
    /* What applies after the kafka.* overrides: the membership a restart depends on. */
    char member[256];
    size_t member_len = sizeof(member);
    if (rd_kafka_conf_get(rd_kafka_conf(c->rk), "group.instance.id", member, &member_len) ==
            RD_KAFKA_CONF_OK &&
        member[0])
        log_info("kafka consumer: group %s: static member %s", opts->group_id, member);
    else
        log_info("kafka consumer: group %s: dynamic member (session.timeout.ms bounds a restart)",
                 opts->group_id);

    c->sub = rd_kafka_topic_partition_list_new((int)opts->n_topics);
    for (size_t i = 0; i < opts->n_topics; i++)
        rd_kafka_topic_partition_list_add(c->sub, opts->topics[i], RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t e = rd_kafka_subscribe(c->rk, c->sub);
    if (e) {
        snprintf(errstr, errstr_size, "kafka consumer: subscribe (group %s): %s", opts->group_id,
                 rd_kafka_err2str(e));
        rd_kafka_destroy(c->rk);
        kafka_consumer_free(c);
        return NULL;
    }
    return c;
}

const char *kafka_group_instance_id(char *out, size_t size, const char *instance,
                                    const char *service, const char *qualifier, const char *topic,
                                    int http_port)
{
    char qt[400];
    const char *q = qualifier && *qualifier ? qualifier : NULL;
    if (topic && *topic) {
        uint32_t th = buf_fnv1a_str(BUF_FNV1A_INIT, topic);
        int l = snprintf(qt, sizeof qt, "%s%st%08x", q ? q : "", q ? "-" : "", th);
        if (l < 0 || (size_t)l >= sizeof qt)
            return NULL; /* truncated: no static membership, as below */
        q = qt;
    }
    int n;
    if (instance && *instance) {
        n = snprintf(out, size, "%s%s%s", instance, q ? "-" : "", q ? q : "");
    } else if (http_port > 0) {
        char host[256] = "localhost";
        if (gethostname(host, sizeof(host) - 1) != 0)
            snprintf(host, sizeof(host), "localhost");
        host[sizeof(host) - 1] = '\0';
        n = snprintf(out, size, "%s-%s%s%s-%d", host, service, q ? "-" : "", q ? q : "", http_port);
    } else {
        return NULL;
    }
    /* Truncated, the id could collide with another replica's: no static membership then. */
    return n > 0 && (size_t)n < size ? out : NULL;
}

/* The topics of the subscription, for a log line. */
static void kafka_consumer_topics(const kafka_consumer_t *c, char *out, size_t size)
{
    size_t off = 0;
    out[0] = '\0';
    for (int i = 0; c->sub && i < c->sub->cnt && off < size; i++) {
        int n = snprintf(out + off, size - off, "%s%s", i ? "," : "", c->sub->elems[i].topic);
        if (n < 0)
            break;
        off += (size_t)n;
    }
}

/* Logs why the consumer is rebuilt: its group, member (static id and the broker's member id),
 * topics and the fatal error. */
static void kafka_consumer_log_fatal(kafka_consumer_t *c)
{
    char why[512] = "no fatal error: rebuild requested", topics[256], instance[256] = "";
    if (c->refetch)
        snprintf(why, sizeof why,
                 "no fatal error: the committed offsets of its assignment could "
                 "not be fetched");
    rd_kafka_resp_err_t err = rd_kafka_fatal_error(c->rk, why, sizeof why);
    size_t ilen = sizeof instance;
    if (rd_kafka_conf_get(rd_kafka_conf(c->rk), "group.instance.id", instance, &ilen) !=
        RD_KAFKA_CONF_OK)
        instance[0] = '\0';
    char *member = rd_kafka_memberid(c->rk);
    kafka_consumer_topics(c, topics, sizeof topics);
    log_error("kafka consumer %s: group %s, member %s (group.instance.id %s), topics %s: fatal "
              "error %s: %s; rebuilding the consumer (records not committed are read again)",
              rd_kafka_name(c->rk), c->group, member && *member ? member : "-",
              instance[0] ? instance : "none", topics, err ? rd_kafka_err2name(err) : "-", why);
    if (member)
        rd_kafka_mem_free(c->rk, member);
}

static void *kafka_consumer_retire_thread(void *arg)
{
    /* No commit and no LeaveGroup: the fenced member can do neither. */
    rd_kafka_destroy_flags(arg, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
    return NULL;
}

/* Destroys a fenced consumer's handle on a thread of its own: rd_kafka_destroy waits until every
 * message of it is destroyed, and the worker still holds those in flight (a record is kept until
 * its copy is acknowledged, and the acknowledgements are served by the worker's own thread).
 * Waiting here would deadlock the worker; the thread ends when the last one is released. */
static void kafka_consumer_retire(rd_kafka_t *rk)
{
    pthread_t t;
    pthread_attr_t attr;
    int e = pthread_attr_init(&attr);
    if (!e) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        e = pthread_create(&t, &attr, kafka_consumer_retire_thread, rk);
        pthread_attr_destroy(&attr);
    }
    if (e) {
        log_warn("kafka consumer %s: no thread to destroy the fenced handle (%s): kept until exit",
                 rd_kafka_name(rk), strerror(e));
    }
}

int kafka_consumer_rebuild(kafka_consumer_t *c)
{
    int64_t now = mono_now_ms();
    if (c->rebuilt_ms && now - c->rebuilt_ms < KAFKA_REBUILD_INTERVAL_MS)
        return -1;
    c->rebuilt_ms = now;
    kafka_consumer_log_fatal(c);
    char e[512] = "no configuration kept";
    rd_kafka_conf_t *conf = c->conf ? rd_kafka_conf_dup(c->conf) : NULL;
    rd_kafka_t *rk = conf ? rd_kafka_new(RD_KAFKA_CONSUMER, conf, e, sizeof e) : NULL;
    if (!rk) {
        if (conf)
            rd_kafka_conf_destroy(conf);
        log_error("kafka consumer %s: group %s: cannot rebuild (retried): %s", rd_kafka_name(c->rk),
                  c->group, e);
        return -1;
    }
    /* The owner forgets the partitions: its pending work is never stored, and what it stored
     * but the old member could not commit is read again by the new one (a duplicate, never a
     * gap). From the wrapper's own record of them: librdkafka 2.0.2 empties a fenced member's
     * assignment without a rebalance callback. */
    if (c->owned && c->owned->cnt > 0) {
        kafka_log_partitions("lost (fatal error)", c->owned);
        if (c->on_rebalance)
            c->on_rebalance(c->owner, KAFKA_REBALANCE_LOST, c->owned);
    }
    kafka_consumer_owned(c, NULL, false);
    if (c->on_rebuild)
        c->on_rebuild(c->owner, c, KAFKA_REBUILD_BEFORE);
    kafka_consumer_retire(c->rk);
    c->rk = rk;
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_resp_err_t se = rd_kafka_subscribe(rk, c->sub);
    if (se)
        log_error("kafka consumer %s: group %s: subscribe after rebuild: %s", rd_kafka_name(rk),
                  c->group, rd_kafka_err2str(se));
    c->rebuilds++;
    c->refetch = false;
    if (c->on_rebuild)
        c->on_rebuild(c->owner, c, KAFKA_REBUILD_AFTER);
    log_info("kafka consumer %s: group %s: rebuilt (%llu since start), joining again",
             rd_kafka_name(rk), c->group, (unsigned long long)c->rebuilds);
    return 0;
}

rd_kafka_resp_err_t kafka_consumer_fatal_error(kafka_consumer_t *c, char *errstr, size_t size)
{
    return rd_kafka_fatal_error(c->rk, errstr, size);
}

/* A consumer with a fatal error never delivers again: rebuild it (at most once a
 * KAFKA_REBUILD_INTERVAL_MS; until then the poll returns nothing). true when it is usable. */
static bool kafka_consumer_usable(kafka_consumer_t *c)
{
    if (!c->refetch && !rd_kafka_fatal_error(c->rk, NULL, 0))
        return true;
    return kafka_consumer_rebuild(c) == 0;
}

/* Whether m is the error event of a failed OffsetFetch ("Failed to fetch committed offsets for
 * N partition(s)"). After a request-level one librdkafka 2.0.2 leaves the assignment unfetched
 * for good (#5586); a new member fetches the offsets again whatever the error was. */
static bool kafka_consumer_offsets_unfetched(const rd_kafka_message_t *m)
{
    return !m->rkt && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF &&
           strstr(rd_kafka_message_errstr(m), "Failed to fetch committed offsets") != NULL;
}

/* The next record of the consumer, waiting *wait ms for the first one only (a poll drains
 * what is there); error events are logged with where they happened and skipped. */
static rd_kafka_message_t *kafka_consumer_next(kafka_consumer_t *c, int *wait)
{
    for (;;) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c->rk, *wait);
        if (!m)
            return NULL;
        *wait = 0;
        if (!m->err)
            return m;
        if (m->err == RD_KAFKA_RESP_ERR__FATAL) {
            /* Rebuilt at the next poll (the caller may hold records of this one). */
            rd_kafka_message_destroy(m);
            return NULL;
        }
        if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
            log_error("kafka consume %s [%d] at offset %lld: %s%s",
                      m->rkt ? rd_kafka_topic_name(m->rkt) : "-", (int)m->partition,
                      (long long)m->offset, rd_kafka_message_errstr(m),
                      kafka_consumer_offsets_unfetched(m)
                          ? "; the consumer is made again (its partitions would not be fetched)"
                          : "");
        if (kafka_consumer_offsets_unfetched(m)) {
            c->refetch = true; /* rebuilt by the next poll: the caller may hold records */
            rd_kafka_message_destroy(m);
            return NULL;
        }
        rd_kafka_message_destroy(m);
    }
}

/* A poll that could not rebuild yet still takes its time, as one that found nothing would:
 * a loop polling with a timeout must not spin. */
static void kafka_consumer_wait_rebuild(int timeout_ms)
{
    if (timeout_ms > 0)
        usleep((useconds_t)(timeout_ms < 100 ? timeout_ms : 100) * 1000);
}

size_t kafka_consumer_poll_batch(kafka_consumer_t *c, rd_kafka_message_t **out, size_t max,
                                 int timeout_ms)
{
    size_t n = 0;
    int wait = timeout_ms;
    rd_kafka_message_t *m;
    if (!kafka_consumer_usable(c)) {
        kafka_consumer_wait_rebuild(timeout_ms);
        return 0;
    }
    while (n < max && (m = kafka_consumer_next(c, &wait)))
        out[n++] = m;
    return n;
}

size_t kafka_consumer_poll_each(kafka_consumer_t *c, size_t max, int timeout_ms,
                                kafka_message_cb_t cb, void *owner)
{
    size_t n = 0;
    int wait = timeout_ms;
    rd_kafka_message_t *m;
    if (!kafka_consumer_usable(c)) {
        kafka_consumer_wait_rebuild(timeout_ms);
        return 0;
    }
    while (n < max && (m = kafka_consumer_next(c, &wait))) {
        n++;
        cb(owner, m);
    }
    return n;
}

int kafka_consumer_store(kafka_consumer_t *c, const char *topic, int32_t partition,
                         int64_t next_offset)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, topic, partition)->offset = next_offset;
    rd_kafka_resp_err_t e = rd_kafka_offsets_store(c->rk, l);
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR && l->elems[0].err)
        e = l->elems[0].err;
    rd_kafka_topic_partition_list_destroy(l);
    if (e) {
        log_warn("kafka store %s [%d] offset %lld: %s", topic, (int)partition,
                 (long long)next_offset, rd_kafka_err2str(e));
        return -1;
    }
    return 0;
}

static int kafka_consumer_pause_resume(kafka_consumer_t *c, bool pause)
{
    rd_kafka_topic_partition_list_t *a = NULL;
    rd_kafka_resp_err_t e = rd_kafka_assignment(c->rk, &a);
    if (e) {
        log_error("kafka consumer: assignment: %s", rd_kafka_err2str(e));
        return -1;
    }
    if (a->cnt > 0)
        e = pause ? rd_kafka_pause_partitions(c->rk, a) : rd_kafka_resume_partitions(c->rk, a);
    rd_kafka_topic_partition_list_destroy(a);
    if (e) {
        log_error("kafka consumer: %s: %s", pause ? "pause" : "resume", rd_kafka_err2str(e));
        return -1;
    }
    c->paused = pause;
    return 0;
}

int kafka_consumer_pause_all(kafka_consumer_t *c)
{
    return kafka_consumer_pause_resume(c, true);
}

int kafka_consumer_resume_all(kafka_consumer_t *c)
{
    return kafka_consumer_pause_resume(c, false);
}

int kafka_consumer_kick(kafka_consumer_t *c, int timeout_ms)
{
    rd_kafka_topic_partition_list_t *a = NULL;
    if (rd_kafka_assignment(c->rk, &a))
        return -1;
    rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
    if (a->cnt > 0) {
        for (int i = 0; i < a->cnt; i++)
            a->elems[i].offset = RD_KAFKA_OFFSET_END; /* "latest": cheapest lookup */
        e = rd_kafka_offsets_for_times(c->rk, a, timeout_ms);
    }
    rd_kafka_topic_partition_list_destroy(a);
    return e ? -1 : 0;
}

int kafka_consumer_commit(kafka_consumer_t *c)
{
    rd_kafka_resp_err_t e = rd_kafka_commit(c->rk, NULL, 0);
    if (e && e != RD_KAFKA_RESP_ERR__NO_OFFSET) {
        log_error("kafka consumer: commit: %s", rd_kafka_err2str(e));
        return -1;
    }
    return 0;
}

int kafka_consumer_assignment_size(kafka_consumer_t *c)
{
    rd_kafka_topic_partition_list_t *a = NULL;
    if (rd_kafka_assignment(c->rk, &a))
        return -1;
    int n = a->cnt;
    rd_kafka_topic_partition_list_destroy(a);
    return n;
}

void kafka_consumer_close(kafka_consumer_t *c)
{
    if (!c)
        return;
    kafka_consumer_commit(c);
    rd_kafka_resp_err_t e = rd_kafka_consumer_close(c->rk);
    if (e)
        log_warn("kafka consumer: close: %s", rd_kafka_err2str(e));
    rd_kafka_destroy(c->rk);
    kafka_consumer_free(c);
}

rd_kafka_t *kafka_consumer_handle(kafka_consumer_t *c)
{
    return c->rk;
}

/* ---- helpers shared by the daemons ---------------------------------------------------- */

/* Which kind of client an unprefixed librdkafka property belongs to, by name (librdkafka's
 * CONFIGURATION.md marks them C or P); -1: both. */
static int kafka_prop_owner(const char *k)
{
    static const char *const consumer[] = {"queued.",
                                           "session.timeout",
                                           "heartbeat.",
                                           "auto.commit",
                                           "auto.offset",
                                           "enable.auto",
                                           "fetch.",
                                           "max.poll",
                                           "group.",
                                           "partition.assignment",
                                           "isolation.level",
                                           "check.crcs",
                                           "enable.partition.eof",
                                           "max.partition.fetch",
                                           "offset.",
                                           "coordinator.",
                                           NULL};
    static const char *const producer[] = {"queue.buffering.",
                                           "linger.",
                                           "batch.",
                                           "acks",
                                           "enable.idempotence",
                                           "enable.gapless",
                                           "message.timeout",
                                           "compression.",
                                           "retries",
                                           "retry.",
                                           "delivery.",
                                           "request.required.acks",
                                           "request.timeout",
                                           "partitioner",
                                           "sticky.partitioning",
                                           "transaction",
                                           NULL};
    for (size_t i = 0; consumer[i]; i++)
        if (!strncmp(k, consumer[i], strlen(consumer[i])))
            return KAFKA_CLIENT_CONSUMER;
    for (size_t i = 0; producer[i]; i++)
        if (!strncmp(k, producer[i], strlen(producer[i])))
            return KAFKA_CLIENT_PRODUCER;
    return -1;
}

size_t kafka_props_split(const kafka_prop_t *in, size_t n_in, kafka_client_kind_t kind,
                         kafka_prop_t *out)
{
    const char *mine = kind == KAFKA_CLIENT_CONSUMER ? "consumer." : "producer.";
    const char *other = kind == KAFKA_CLIENT_CONSUMER ? "producer." : "consumer.";
    size_t n = 0;
    for (size_t i = 0; i < n_in; i++) {
        const char *key = in[i].key;
        if (!key || strncmp(key, other, strlen(other)) == 0)
            continue;
        if (strncmp(key, mine, strlen(mine)) == 0) {
            key += strlen(mine); /* said explicitly: trust it */
        } else {
            int owner = kafka_prop_owner(key);
            if (owner >= 0 && owner != (int)kind)
                continue;
        }
        out[n++] = (kafka_prop_t){key, in[i].value};
    }
    return n;
}

/* defaults, then the pass-through properties meant for kind, in one array (free it). */
static kafka_prop_t *kafka_props_join(const kafka_prop_t *defaults, size_t n_defaults,
                                      const kafka_prop_t *props, size_t n_props,
                                      kafka_client_kind_t kind, size_t *n_out)
{
    kafka_prop_t *out = calloc(n_defaults + n_props + 1, sizeof(*out));
    if (!out)
        return NULL;
    for (size_t i = 0; i < n_defaults; i++)
        out[i] = defaults[i];
    *n_out = n_defaults + kafka_props_split(props, n_props, kind, out + n_defaults);
    return out;
}

int kafka_pair_new(const kafka_pair_opts_t *o, kafka_producer_t **producer,
                   kafka_consumer_t **consumer, char *err, size_t errlen)
{
    *producer = NULL;
    *consumer = NULL;
    size_t np = 0, nc = 0;
    kafka_prop_t *pprops = kafka_props_join(o->producer_defaults, o->n_producer_defaults, o->props,
                                            o->n_props, KAFKA_CLIENT_PRODUCER, &np);
    kafka_prop_t *cprops = kafka_props_join(o->consumer_defaults, o->n_consumer_defaults, o->props,
                                            o->n_props, KAFKA_CLIENT_CONSUMER, &nc);
    if (!pprops || !cprops) {
        snprintf(err, errlen, "kafka clients for %s: out of memory", o->topic);
        goto out;
    }
    kafka_producer_opts_t po = {.brokers = o->brokers,
                                .client_id = o->client_id,
                                .props = pprops,
                                .n_props = np,
                                .on_delivery = o->on_delivery,
                                .owner = o->owner};
    *producer = kafka_producer_new(&po, err, errlen);
    if (!*producer)
        goto out;
    const char *topics[] = {o->topic};
    kafka_consumer_opts_t co = {.brokers = o->brokers,
                                .group_id = o->group_id,
                                .client_id = o->client_id,
                                .topics = topics,
                                .n_topics = 1,
                                .cooperative = o->cooperative,
                                .instance_id = o->instance_id,
                                .props = cprops,
                                .n_props = nc,
                                .on_rebalance = o->on_rebalance,
                                .on_stats = o->on_consumer_stats,
                                .on_rebuild = o->on_consumer_rebuild,
                                .owner = o->owner};
    *consumer = kafka_consumer_new(&co, err, errlen);
    if (!*consumer) {
        kafka_producer_close(*producer, 0);
        *producer = NULL;
    }
out:
    free(pprops);
    free(cprops);
    return *consumer ? 0 : -1;
}

void kafka_pair_close(kafka_producer_t **producer, kafka_consumer_t **consumer,
                      int producer_timeout_ms)
{
    if (*consumer)
        kafka_consumer_close(*consumer);
    *consumer = NULL;
    if (*producer)
        kafka_producer_close(*producer, producer_timeout_ms);
    *producer = NULL;
}

/* Forced: the consumer may be healthy (the producer was fenced), but the owner's pending work
 * died with the producer's queue and must be read again from the committed offsets. */
static int kafka_pair_rebuild_consumer(kafka_consumer_t *consumer)
{
    if (!consumer)
        return 0;
    consumer->rebuilt_ms = 0;
    return kafka_consumer_rebuild(consumer) ? -1 : 0;
}

int kafka_pair_rebuild(kafka_producer_t *producer, kafka_consumer_t *consumer)
{
    int rc = 0;
    if (producer && kafka_producer_rebuild(producer))
        rc = -1;
    return kafka_pair_rebuild_consumer(consumer) ? -1 : rc;
}

int kafka_pair_rebuild_set_aside(kafka_producer_t *producer, kafka_consumer_t *consumer,
                                 rd_kafka_t **old)
{
    *old = kafka_producer_swap(producer);
    if (!*old)
        return -1;
    return kafka_pair_rebuild_consumer(consumer);
}

int64_t kafka_stats_consumer_lag(const char *json, size_t len, const char *topic)
{
    json_t *root = json_loadb(json, len, 0, NULL);
    if (!root)
        return -1;
    json_t *parts =
        json_object_get(json_object_get(json_object_get(root, "topics"), topic), "partitions");
    const char *k;
    json_t *p;
    int64_t lag = 0;
    json_object_foreach(parts, k, p)
    {
        if (strcmp(k, "-1") == 0) /* librdkafka's "unassigned" pseudo-partition */
            continue;
        json_int_t l = json_integer_value(json_object_get(p, "consumer_lag"));
        if (l > 0)
            lag += l;
    }
    json_decref(root);
    return lag;
}

kafka_gate_event_t kafka_gate_update(kafka_gate_t *g, kafka_consumer_t *c, bool room,
                                     int pause_after_ms)
{
    g->log_due = false;
    if (room) {
        g->blocked_since_ms = 0;
        if (g->paused && kafka_consumer_resume_all(c) == 0) {
            g->paused = false;
            return KAFKA_GATE_RESUMED;
        }
        return KAFKA_GATE_STEADY;
    }
    int64_t now = mono_now_ms();
    if (!g->blocked_since_ms)
        g->blocked_since_ms = now;
    if (g->paused || now - g->blocked_since_ms < pause_after_ms || kafka_consumer_pause_all(c))
        return KAFKA_GATE_STEADY;
    g->paused = true;
    g->pauses++;
    /* Under sustained overload this repeats often: one line a minute is enough. */
    if (!g->logged_ms || now - g->logged_ms >= 60000) {
        g->log_due = true;
        g->logged_ms = now;
    }
    return KAFKA_GATE_PAUSED;
}
