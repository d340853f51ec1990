/* ndd-aggregation test helpers: see agg_testutil.h. */
#include "agg_testutil.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon_testutil.h"
#include "kafka_testutil.h"

int agg_env_init(agg_env_t *e, const char *tag, int in_parts, int main_parts)
{
    memset(e, 0, sizeof(*e));
    char base[64];
    snprintf(base, sizeof(base), "ndd-test-%s", tag);
    ktu_unique_name(base, e->in, sizeof(e->in));
    snprintf(e->main, sizeof(e->main), "%.80s.main", e->in);
    snprintf(e->dlq, sizeof(e->dlq), "%.80s.dlq", e->in);
    snprintf(e->group, sizeof(e->group), "%.80s.group", e->in);
    if (dtu_tmpdir_make(e->dir, sizeof(e->dir), e->in))
        return -1;
    for (int i = 0; i < 2; i++)
        snprintf(e->log_path[i], sizeof(e->log_path[i]), "%s/agg%d.log", e->dir, i);
    const char *big[] = {"max.message.bytes=4194304"};
    if (ktu_create_topic_cfg(e->in, in_parts, big, 1) ||
        ktu_create_topic_cfg(e->main, main_parts, big, 1) ||
        ktu_create_topic_cfg(e->dlq, 1, big, 1))
        return -1;
    return 0;
}

void agg_env_cleanup(agg_env_t *e)
{
    for (int i = 0; i < 2; i++)
        if (e->pid[i] > 0) {
            ktu_stop(e->pid[i], SIGKILL, 5000);
            e->pid[i] = 0;
        }
    ktu_delete_topic(e->in);
    ktu_delete_topic(e->main);
    ktu_delete_topic(e->dlq);
    dtu_tmpdir_remove(e->dir);
}

pid_t agg_start(agg_env_t *e, int slot, const char *const *extra)
{
    static char bin[512], brokers[256], topic[160], group[160], mainf[160], dlq[160];
    static char *argv[64];
    snprintf(bin, sizeof(bin), "%s/aggregation/ndd-aggregation", NDD_BINARY_DIR);
    snprintf(brokers, sizeof(brokers), "--bootstrap=%s", ktu_brokers());
    snprintf(topic, sizeof(topic), "--topic=%s", e->in);
    snprintf(group, sizeof(group), "--group=%s", e->group);
    snprintf(mainf, sizeof(mainf), "--main-topic=%s", e->main);
    snprintf(dlq, sizeof(dlq), "--dlq-topic=%s", e->dlq);
    size_t n = 0;
    argv[n++] = bin;
    argv[n++] = "--nf-type=SCP";
    argv[n++] = brokers;
    argv[n++] = topic;
    argv[n++] = group;
    argv[n++] = mainf;
    argv[n++] = dlq;
    argv[n++] = "--create-topics=false";
    argv[n++] = "--http.port=-1";
    /* A replica killed with -9 leaves the group after the session timeout: keep it short so
     * tests do not wait the 45 s default. */
    argv[n++] = "--kafka.consumer.session.timeout.ms=6000";
    argv[n++] = "--kafka.consumer.heartbeat.interval.ms=500";
    argv[n++] = "--kafka.producer.message.max.bytes=4194304";
    /* Off the shared ndd.config / ndd.events unless the test names its own topics: another
     * test's configuration must not filter this one's copies. */
    bool cfg_topic = false, ev_topic = false;
    for (size_t i = 0; extra && extra[i]; i++) {
        cfg_topic |= strncmp(extra[i], "--config-topic", 14) == 0;
        ev_topic |= strncmp(extra[i], "--events-topic", 14) == 0;
    }
    if (!cfg_topic)
        argv[n++] = "--config-topic=";
    if (!ev_topic)
        argv[n++] = "--events-topic=";
    for (size_t i = 0; extra && extra[i] && n < 63; i++)
        argv[n++] = (char *)extra[i];
    argv[n] = NULL;
    pid_t pid = ktu_spawn(argv, NULL, e->log_path[slot]);
    e->pid[slot] = pid;
    return pid;
}

bool agg_stop_clean(agg_env_t *e, int slot)
{
    return dtu_stop_clean(&e->pid[slot], 30000);
}

int agg_log_count(const agg_env_t *e, int slot, const char *needle)
{
    return dtu_log_count(e->log_path[slot], needle);
}

bool agg_log_wait(const agg_env_t *e, int slot, const char *needle, int timeout_ms)
{
    return dtu_log_wait(e->log_path[slot], needle, timeout_ms);
}

int agg_produce_copies(rd_kafka_t *p, const char *topic, uint64_t first, size_t n, size_t n_keys,
                       size_t body_len)
{
    static char body[65536];
    if (body_len > sizeof(body))
        return -1;
    memset(body, 'x', body_len);
    for (size_t k = 0; k < n; k++) {
        uint64_t i = first + k;
        char key[32], seq[24], ts[24], path[64];
        snprintf(key, sizeof(key), "corr-%zu", (size_t)(i % n_keys));
        snprintf(seq, sizeof(seq), "%" PRIu64, i);
        snprintf(ts, sizeof(ts), "%" PRIu64, (uint64_t)1764486000000000ULL + i);
        snprintf(path, sizeof(path), "/nudm-sdm/v2/imsi-%" PRIu64 "/am-data", i);
        char prefix[32];
        int hl = snprintf(prefix, sizeof(prefix), "body-%" PRIu64 ";", i);
        size_t blen = body_len > (size_t)hl ? body_len : (size_t)hl;
        memcpy(body, prefix, (size_t)hl);
        const char *hdrs[] = {"@correlation-id",
                              key,
                              "@timestamp-us",
                              ts,
                              "@message-type",
                              "request",
                              "@trigger-point",
                              "rx-request",
                              "@nf-type",
                              "SCP",
                              "@seq",
                              seq,
                              ":method",
                              "GET",
                              ":scheme",
                              "https",
                              ":authority",
                              "udm.5gc.example.org",
                              ":path",
                              path,
                              "x-kind",
                              i % 2 ? "b" : "a"};
        if (ktu_produce(p, topic, -1, key, strlen(key), body, blen, hdrs,
                        sizeof(hdrs) / sizeof(hdrs[0]) / 2))
            return -1;
        if (k % 1000 == 0)
            rd_kafka_poll(p, 0);
    }
    return ktu_flush(p, 60000);
}

int agg_tally_init(agg_tally_t *t, size_t n)
{
    memset(t, 0, sizeof(*t));
    t->seen = calloc(n, 1);
    t->n = n;
    return t->seen ? 0 : -1;
}

static bool agg_tally_cb(void *owner, const rd_kafka_message_t *m)
{
    agg_tally_t *t = owner;
    char seq[32];
    unsigned long long s;
    if (!ktu_msg_header(m, "@seq", seq, sizeof(seq)) || (s = strtoull(seq, NULL, 10)) >= t->n) {
        t->foreign++;
        return true;
    }
    if (t->seen[s])
        t->duplicates++;
    else {
        t->seen[s] = 1;
        t->distinct++;
    }
    return true;
}

size_t agg_tally_read(agg_tally_t *t, const char *topic, size_t want, int timeout_ms)
{
    return ktu_consume(topic, want, timeout_ms, agg_tally_cb, t);
}

void agg_tally_free(agg_tally_t *t)
{
    free(t->seen);
    t->seen = NULL;
}

int64_t agg_wait_count(const char *topic, int64_t want, int timeout_ms)
{
    int64_t deadline = ktu_now_ms() + timeout_ms;
    int64_t n;
    do {
        n = ktu_topic_record_count(topic, 5000);
        if (n >= want)
            return n;
        ktu_sleep_ms(50);
    } while (ktu_now_ms() < deadline);
    return n;
}

int64_t agg_committed_sum(const char *group, const char *topic, int n_parts)
{
    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", ktu_brokers(), err, sizeof(err));
    rd_kafka_conf_set(conf, "group.id", group, err, sizeof(err));
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof(err));
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
    if (!rk) {
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(n_parts);
    for (int i = 0; i < n_parts; i++)
        rd_kafka_topic_partition_list_add(l, topic, i);
    int64_t sum = -1;
    if (rd_kafka_committed(rk, l, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        sum = 0;
        for (int i = 0; i < l->cnt; i++)
            if (l->elems[i].offset > 0)
                sum += l->elems[i].offset;
    }
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_destroy(rk);
    return sum;
}
