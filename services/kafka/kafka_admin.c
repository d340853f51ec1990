/* Topic administration for the daemons and tools (create, delete, count partitions): short-lived
 * clients of their own, apart from the long-lived producer and consumer of kafka.c. See kafka.h. */
#include "kafka.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "kafka-int.h"
#include "log.h"

/* Whether a client property is about reaching the cluster (security, sockets, addresses):
 * those an admin client takes from its daemon's kafka.* properties. The others tune a producer
 * or a consumer and have no business in a short-lived admin client (a transactional.id would
 * even make it one of the daemon's transactional producers). */
static bool kafka_admin_prop_applies(const char *key)
{
    static const char *const prefixes[] = {"security.protocol",
                                           "ssl.",
                                           "ssl_",
                                           "sasl.",
                                           "enable.ssl.",
                                           "enable.sasl.",
                                           "socket.",
                                           "broker.address.",
                                           "client.dns.lookup",
                                           "api.version.",
                                           "broker.version.fallback",
                                           "reconnect.backoff",
                                           "client.id",
                                           NULL};
    for (size_t i = 0; prefixes[i]; i++)
        if (strncmp(key, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    return false;
}

static rd_kafka_t *kafka_admin_client(const char *brokers, const kafka_prop_t *props,
                                      size_t n_props)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (kafka_conf_set(conf, "bootstrap.servers", brokers, errstr, sizeof(errstr))) {
        log_error("kafka admin: %s", errstr);
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    /* The daemon's kafka.* properties (as routed to its producer): "producer.X" was already
     * turned into X by kafka_props_split, "consumer.X" left out. */
    kafka_prop_t *mine = n_props ? calloc(n_props, sizeof(*mine)) : NULL;
    size_t n_mine = mine ? kafka_props_split(props, n_props, KAFKA_CLIENT_PRODUCER, mine) : 0;
    for (size_t i = 0; i < n_mine; i++) {
        if (!mine[i].value || !kafka_admin_prop_applies(mine[i].key))
            continue;
        if (kafka_conf_set(conf, mine[i].key, mine[i].value, errstr, sizeof(errstr))) {
            log_error("kafka admin: %s", errstr);
            free(mine);
            rd_kafka_conf_destroy(conf);
            return NULL;
        }
    }
    free(mine);
    if (n_props && !mine) {
        log_error("kafka admin: out of memory");
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_conf_set_log_cb(conf, kafka_log_cb);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (!rk) {
        log_error("kafka admin: %s", errstr);
        rd_kafka_conf_destroy(conf);
    }
    return rk;
}

int kafka_admin_partition_count(rd_kafka_t *rk, const char *topic, int timeout_ms)
{
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    if (!rkt)
        return -1;
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms);
    rd_kafka_topic_destroy(rkt);
    if (e)
        return -1;
    int n = -1;
    if (md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        n = md->topics[0].partition_cnt;
        for (int i = 0; i < md->topics[0].partition_cnt; i++)
            if (md->topics[0].partitions[i].leader < 0 || md->topics[0].partitions[i].err)
                n = -1; /* not ready yet */
    }
    rd_kafka_metadata_destroy(md);
    return n;
}

/* Number of brokers the cluster's metadata lists, or -1 when it did not answer. */
static int kafka_admin_broker_count(rd_kafka_t *rk, int timeout_ms)
{
    const struct rd_kafka_metadata *md = NULL;
    if (rd_kafka_metadata(rk, 0, NULL, &md, timeout_ms))
        return -1;
    int n = md->broker_cnt;
    rd_kafka_metadata_destroy(md);
    return n;
}

static bool kafka_props_have(const kafka_prop_t *configs, size_t n_configs, const char *key)
{
    for (size_t i = 0; i < n_configs; i++)
        if (strcmp(configs[i].key, key) == 0)
            return true;
    return false;
}

/* NDD's replication rule (KAFKA_REPLICATION_AUTO, kafka.h): the factor for the cluster's
 * current broker count, and whether min.insync.replicas=2 is to be set. -1: no answer. */
static int kafka_admin_auto_replication(rd_kafka_t *rk, const char *topic, int timeout_ms,
                                        int *brokers, bool *set_isr)
{
    *brokers = kafka_admin_broker_count(rk, timeout_ms);
    if (*brokers < 1) {
        log_error("kafka admin: topic %s: the cluster did not list its brokers within %d ms", topic,
                  timeout_ms);
        return -1;
    }
    *set_isr = *brokers >= 3;
    return *brokers < 3 ? *brokers : 3;
}

static rd_kafka_resp_err_t kafka_admin_wait_result(rd_kafka_queue_t *q, const char *topic,
                                                   bool create, int timeout_ms, char *why,
                                                   size_t why_size)
{
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, timeout_ms + 1000);
    if (!ev) {
        snprintf(why, why_size, "no answer within %d ms", timeout_ms);
        return RD_KAFKA_RESP_ERR__TIMED_OUT;
    }
    rd_kafka_resp_err_t e = rd_kafka_event_error(ev);
    if (e) {
        snprintf(why, why_size, "%s", rd_kafka_event_error_string(ev));
    } else {
        const rd_kafka_topic_result_t **res;
        size_t n = 0;
        if (create)
            res = rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
        else
            res = rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(ev), &n);
        for (size_t i = 0; i < n; i++)
            if (strcmp(rd_kafka_topic_result_name(res[i]), topic) == 0) {
                e = rd_kafka_topic_result_error(res[i]);
                const char *s = rd_kafka_topic_result_error_string(res[i]);
                snprintf(why, why_size, "%s", s ? s : rd_kafka_err2str(e));
            }
    }
    rd_kafka_event_destroy(ev);
    return e;
}

/* One CreateTopics (nt) or DeleteTopics (dt) request for topic, answered within timeout_ms:
 * the topic's error with why saying it, or 0. */
static rd_kafka_resp_err_t kafka_admin_topic_op(rd_kafka_t *rk, rd_kafka_NewTopic_t *nt,
                                                rd_kafka_DeleteTopic_t *dt, const char *topic,
                                                int timeout_ms, char *why, size_t why_size)
{
    bool create = nt != NULL;
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *ao = rd_kafka_AdminOptions_new(
        rk, create ? RD_KAFKA_ADMIN_OP_CREATETOPICS : RD_KAFKA_ADMIN_OP_DELETETOPICS);
    char errstr[256];
    rd_kafka_AdminOptions_set_operation_timeout(ao, timeout_ms, errstr, sizeof(errstr));
    rd_kafka_AdminOptions_set_request_timeout(ao, timeout_ms, errstr, sizeof(errstr));
    if (create)
        rd_kafka_CreateTopics(rk, &nt, 1, ao, q);
    else
        rd_kafka_DeleteTopics(rk, &dt, 1, ao, q);
    rd_kafka_resp_err_t e = kafka_admin_wait_result(q, topic, create, timeout_ms, why, why_size);
    rd_kafka_AdminOptions_destroy(ao);
    rd_kafka_queue_destroy(q);
    return e;
}

int kafka_admin_create_topic(const char *brokers, const char *topic, int partitions,
                             int replication, const kafka_prop_t *configs, size_t n_configs,
                             int timeout_ms)
{
    return kafka_admin_create_topic_with(brokers, NULL, 0, topic, partitions, replication, configs,
                                         n_configs, timeout_ms);
}

int kafka_admin_create_topic_with(const char *brokers, const kafka_prop_t *client_props,
                                  size_t n_client_props, const char *topic, int partitions,
                                  int replication, const kafka_prop_t *configs, size_t n_configs,
                                  int timeout_ms)
{
    rd_kafka_t *rk = kafka_admin_client(brokers, client_props, n_client_props);
    if (!rk)
        return -1;
    int rc = -1, n_brokers = 0;
    bool set_isr = false;
    char errstr[512];
    if (replication == KAFKA_REPLICATION_AUTO &&
        (replication = kafka_admin_auto_replication(rk, topic, timeout_ms, &n_brokers, &set_isr)) <
            0) {
        rd_kafka_destroy(rk);
        return -1;
    }
    set_isr = set_isr && !kafka_props_have(configs, n_configs, "min.insync.replicas");
    rd_kafka_NewTopic_t *nt =
        rd_kafka_NewTopic_new(topic, partitions, replication, errstr, sizeof(errstr));
    if (!nt) {
        log_error("kafka admin: topic %s: %s", topic, errstr);
        rd_kafka_destroy(rk);
        return -1;
    }
    /* A topic holds NDD's largest record unless the caller sets its own limit: the broker's
     * default (1,048,588) is below a 1 MiB body with its headers. */
    if ((!kafka_props_have(configs, n_configs, "max.message.bytes") &&
         rd_kafka_NewTopic_set_config(nt, "max.message.bytes", KAFKA_RECORD_MAX_BYTES_STR)) ||
        (set_isr && rd_kafka_NewTopic_set_config(nt, "min.insync.replicas", "2"))) {
        log_error("kafka admin: topic %s config max.message.bytes or min.insync.replicas refused",
                  topic);
        rd_kafka_NewTopic_destroy(nt);
        rd_kafka_destroy(rk);
        return -1;
    }
    for (size_t i = 0; i < n_configs; i++) {
        rd_kafka_resp_err_t e = rd_kafka_NewTopic_set_config(nt, configs[i].key, configs[i].value);
        if (e) {
            log_error("kafka admin: topic %s config %s: %s", topic, configs[i].key,
                      rd_kafka_err2str(e));
            rd_kafka_NewTopic_destroy(nt);
            rd_kafka_destroy(rk);
            return -1;
        }
    }
    char why[512] = "";
    rd_kafka_resp_err_t e = kafka_admin_topic_op(rk, nt, NULL, topic, timeout_ms, why, sizeof(why));
    rd_kafka_NewTopic_destroy(nt);

    if (e && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
        log_error("kafka admin: create topic %s (%d partitions, replication factor %d): %s", topic,
                  partitions, replication, why);
    } else {
        if (!e && n_brokers > 0)
            log_info("kafka admin: created topic %s: %d partitions, replication factor %d%s "
                     "(%d brokers)",
                     topic, partitions, replication, set_isr ? ", min.insync.replicas 2" : "",
                     n_brokers);
        /* Creation is acknowledged by the controller before every broker has the metadata;
         * wait until the leaders are known so the first produce/subscribe does not race. */
        int64_t deadline = mono_now_ms() + timeout_ms;
        int n;
        while ((n = kafka_admin_partition_count(rk, topic, 1000)) < 1 && mono_now_ms() < deadline) {
            struct timespec ts = {0, 50 * 1000000L};
            nanosleep(&ts, NULL);
        }
        if (n >= 1)
            rc = 0;
        else
            log_error("kafka admin: topic %s not visible within %d ms", topic, timeout_ms);
    }
    rd_kafka_destroy(rk);
    return rc;
}

int kafka_admin_create_topics_with(const char *brokers, const kafka_prop_t *client_props,
                                   size_t n_client_props, const kafka_topic_new_t *topics,
                                   size_t n_topics, int timeout_ms)
{
    for (size_t i = 0; i < n_topics; i++)
        if (kafka_admin_create_topic_with(brokers, client_props, n_client_props, topics[i].topic,
                                          topics[i].partitions, KAFKA_REPLICATION_AUTO, NULL, 0,
                                          timeout_ms))
            return -1;
    return 0;
}

int kafka_admin_delete_topic(const char *brokers, const char *topic, int timeout_ms)
{
    rd_kafka_t *rk = kafka_admin_client(brokers, NULL, 0);
    if (!rk)
        return -1;
    rd_kafka_DeleteTopic_t *dt = rd_kafka_DeleteTopic_new(topic);
    char why[512] = "";
    rd_kafka_resp_err_t e = kafka_admin_topic_op(rk, NULL, dt, topic, timeout_ms, why, sizeof(why));
    rd_kafka_DeleteTopic_destroy(dt);
    rd_kafka_destroy(rk);
    if (e && e != RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
        log_error("kafka admin: delete topic %s: %s", topic, why);
        return -1;
    }
    return 0;
}

int kafka_admin_topic_partitions(const char *brokers, const char *topic, int timeout_ms)
{
    return kafka_admin_topic_partitions_with(brokers, NULL, 0, topic, timeout_ms);
}

int kafka_admin_topic_partitions_with(const char *brokers, const kafka_prop_t *client_props,
                                      size_t n_client_props, const char *topic, int timeout_ms)
{
    char err[256];
    /* A producer's metadata request asks the broker to create a missing topic (librdkafka's
     * producer default): a broker with auto.create.topics.enable would make it with its own
     * defaults (partitions, replication factor 1 on many clusters) before the caller creates
     * it with NDD's (kafka_admin_create_topic). Looking must not create. */
    kafka_prop_t *props = calloc(n_client_props + 1, sizeof(*props));
    if (!props)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < n_client_props; i++)
        if (client_props[i].key && kafka_admin_prop_applies(client_props[i].key))
            props[n++] = client_props[i];
    props[n++] = (kafka_prop_t){"allow.auto.create.topics", "false"};
    kafka_producer_opts_t po = {.brokers = brokers, .props = props, .n_props = n};
    kafka_producer_t *p = kafka_producer_new(&po, err, sizeof(err));
    free(props);
    if (!p) {
        log_warn("kafka: partitions of %s: %s", topic, err);
        return -1;
    }
    int parts = kafka_admin_partition_count(kafka_producer_handle(p), topic, timeout_ms);
    kafka_producer_close(p, 0);
    return parts;
}
