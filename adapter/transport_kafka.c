/* Kafka transport for kafka://host:port/topic endpoints: a feed's records, after its egress
 * filter, produced to a topic (docs/kafka-feed.md).
 *
 * A send() is one DATA frame built by the frame encoding; every record of it becomes one Kafka
 * message with the record's key and headers, produced to the topic with librdkafka's
 * murmur2 partitioner (a key always lands in the same partition, as a Java producer would put
 * it) by an idempotent producer (acks=all, no reordering or duplicates from librdkafka's own
 * retries), so the order of a key's records is kept. The bodies are NOT copied: librdkafka
 * references the frame, which the feed keeps until the batch is acked or failed.
 *
 * The acknowledgement of a batch is the delivery report of its last outstanding message: when
 * every message of the frame is acknowledged by the brokers (acks=all: durable) the batch is
 * acked and the feed's ledger stores the consumed offsets (at-least-once). A message refused for
 * good (too large, topic or cluster authorization failed, invalid record) fails its batch as not
 * retryable, so the feed dead-letters it with the broker's reason; any other error fails it as
 * retryable. The cluster unreachable (every broker down) or a fatal idempotence error tears the
 * producer down: the in-flight batches fail (retryable) and on_down pauses the feed as for the
 * other transports; connect() makes a new producer.
 *
 * Exactly once (a feed with a source, kafka.exactly_once not false): the producer is
 * transactional (transactional.id from the feed's name and the adapter instance, so a
 * restarted instance fences its predecessor and aborts what it left open). Sends go into an
 * open transaction; a batch is acked to the feed on its delivery reports (the feed's ledger
 * moves on but the feed stores no offset), and every KTX_TXN_MS or KTX_TXN_RECORDS the
 * transport stops taking sends, waits for the last reports, sends the ledger's offsets with
 * the consumer's group metadata into the transaction and commits it: records and offsets
 * become visible together. Whatever goes wrong with a transaction (an abortable error: it is
 * aborted; a fatal one, e.g. fenced by another instance: the producer is made again) voids
 * what was produced since the last commit: the in-flight sends are forgotten and the feed
 * rewinds to its committed offsets and produces it again. A message refused for good (a
 * broker's MSG_SIZE_TOO_LARGE, an authorization failure) would fail every replay the same
 * way: the source positions of its batch are remembered (KTX_POISON_MAX), and on the replay
 * that batch is refused before it is produced, so the feed dead-letters it with the broker's
 * reason and the transaction commits without it. A revoke aborts the open
 * transaction before the partitions go. A cluster that cannot do transactions (init refused
 * as unsupported or not authorized) gets the idempotent producer above (at-least-once),
 * said in the feed's status and in ndd_adapter_kafka_exactly_once.
 *
 * librdkafka's delivery reports arrive through its main queue, which signals a pipe the feed
 * thread's event loop watches (rd_kafka_queue_io_event_enable): every callback runs on that
 * thread, as the transport contract requires. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <librdkafka/rdkafka.h>

#include "frame.h"
#include "log.h"
#include "transport.h"
#include "feed_kafka_acl.h"

/* The operations, defined with the descriptor at the end of this file. */
static const transport_ops_t transport_kafka_ops;

#include "transport_kafka-int.h"

static const struct {
    const char *name, *help;
    bool gauge;
} ktx_families[] = {
    {"ndd_adapter_kafka_exactly_once",
     "1: the kafka feed produces in transactions with its offsets (exactly once); 0: "
     "at-least-once (exactly_once off, or the cluster cannot do transactions)",
     true},
    {"ndd_adapter_kafka_messages_produced_total",
     "Records of the kafka feed acknowledged by the target cluster (in exactly-once mode: "
     "produced in a transaction, visible once it commits)",
     false},
    {"ndd_adapter_kafka_transactions_committed_total", "Transactions of the kafka feed committed",
     false},
    {"ndd_adapter_kafka_transactions_aborted_total",
     "Transactions of the kafka feed aborted (their records produced again after a rewind)", false},
};
#define KTX_FAMILIES (sizeof ktx_families / sizeof *ktx_families)

static metrics_family_t *ktx_family(metrics_registry_t *r, size_t i)
{
    return ktx_families[i].gauge
               ? metrics_gauge_new(r, ktx_families[i].name, ktx_families[i].help, "feed")
               : metrics_counter_new(r, ktx_families[i].name, ktx_families[i].help, "feed");
}

/* The wait of a commit (send offsets + commit): what a transaction costs the feed's thread
 * and adds to a record's latency for read_committed consumers, beyond the interval. */
static metrics_family_t *ktx_commit_family(metrics_registry_t *r)
{
    static const double b[] = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 5};
    return metrics_histogram_new(r, "ndd_adapter_kafka_transactions_commit_seconds",
                                 "Time a kafka feed's thread waited for a transaction's offsets "
                                 "and commit",
                                 "feed", b, sizeof b / sizeof *b);
}

static void ktx_metrics_bind(ktx_t *t)
{
    metrics_registry_t *r = t->cfg.metrics ? t->cfg.metrics : metrics_default_registry();
    const char *feed = t->cfg.feed ? t->cfg.feed : "";
    metrics_family_t *f = ktx_family(r, 0);
    t->m_eos = f ? metrics_gauge_labels(f, feed) : NULL;
    metrics_counter_t **h[] = {&t->m_produced, &t->m_committed, &t->m_aborted};
    for (size_t i = 1; i < KTX_FAMILIES; i++) {
        f = ktx_family(r, i);
        *h[i - 1] = f ? metrics_counter_labels(f, feed) : NULL;
    }
    f = ktx_commit_family(r);
    t->m_commit = f ? metrics_histogram_labels(f, feed) : NULL;
}

static void transport_kafka_metrics_remove(metrics_registry_t *r, const char *feed)
{
    for (size_t i = 0; i < KTX_FAMILIES; i++) {
        metrics_family_t *f = ktx_family(r, i);
        if (f)
            metrics_family_remove_matching(f, "feed", feed);
    }
    metrics_family_t *h = ktx_commit_family(r);
    if (h)
        metrics_family_remove_matching(h, "feed", feed);
    kafka_txn_pair_metrics_remove(r, "ndd_adapter", "feed", feed);
}

/* The mode in effect, to the feed (who stores the offsets) and to the gauge. */
static void ktx_mode(ktx_t *t, bool eos)
{
    if (t->m_eos)
        metrics_gauge_set(t->m_eos, eos ? 1 : 0);
    if (t->src && t->src->mode)
        t->src->mode(t->src->ctx, eos);
}

/* Errors a retry cannot fix: the batch goes to the feed's DLQ with the reason. */
bool ktx_err_permanent(rd_kafka_resp_err_t e)
{
    switch (e) {
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
    case RD_KAFKA_RESP_ERR_INVALID_MSG:
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
        return true;
    default:
        return false;
    }
}

static void ktx_slot_report(ktx_t *t, ktx_slot_t *s)
{
    void *cookie = s->cookie;
    rd_kafka_resp_err_t e = s->err;
    if (e && t->eos && !s->refused) {
        /* The transaction cannot commit with a failed message: abort it from the loop and
         * produce everything since the last commit again (the slot is forgotten there). */
        if (ktx_err_permanent(e))
            ktx_poison_add(t, s);
        if (!t->abort_pending) {
            t->abort_pending = true;
            snprintf(t->txn_reason, sizeof t->txn_reason, "%s", s->reason);
            event_active(t->commit_ev, 0, 0);
        }
        return;
    }
    s->used = false;
    s->ready = false;
    t->live--;
    if (!e) {
        t->ev.on_ack(t->owner, cookie, 0);
        if (t->committing && t->live == 0 && t->commit_ev)
            event_active(t->commit_ev, 0, 0); /* the last report of the transaction */
        return;
    }
    transport_failure_t f = {.status = 0, .retryable = !ktx_err_permanent(e), .reason = s->reason};
    t->ev.on_fail(t->owner, cookie, &f);
}

static void ktx_slot_error(ktx_t *t, ktx_slot_t *s, rd_kafka_resp_err_t e, int32_t partition)
{
    if (s->err)
        return;
    s->err = e;
    snprintf(s->reason, sizeof s->reason, "kafka topic %.200s [%" PRId32 "] at %s: %.100s (%.60s)",
             t->topic, partition, t->bootstrap, rd_kafka_err2str(e), rd_kafka_err2name(e));
}

static void ktx_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    ktx_t *t = opaque;
    ktx_slot_t *s = m->_private;
    if (t->state == KTX_DOWN || t->ignore_drs || !s || !s->used || !s->left)
        return;
    if (!m->err && t->m_produced)
        metrics_counter_inc(t->m_produced);
    if (m->err)
        ktx_slot_error(t, s, m->err, m->partition);
    if (--s->left == 0)
        ktx_slot_report(t, s);
}

static void ktx_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    ktx_t *t = opaque;
    char fatal[256];
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        rd_kafka_resp_err_t fe = rd_kafka_fatal_error(rk, fatal, sizeof fatal);
        snprintf(t->down_reason, sizeof t->down_reason,
                 "kafka %s: fatal producer error %.60s: %.200s", t->bootstrap,
                 rd_kafka_err2name(fe), fatal);
    } else if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
        snprintf(t->down_reason, sizeof t->down_reason, "kafka %s: all brokers down: %.200s",
                 t->bootstrap, reason);
    } else {
        log_warn("feed %s: kafka %s: %s: %s", t->cfg.feed, t->bootstrap,
                 rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
        return;
    }
    /* never from inside a poll that a send or an ack callback is in: from the loop */
    if (!t->down_pending) {
        t->down_pending = true;
        event_active(t->check_ev, 0, 0);
    }
}

static void ktx_report_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    ktx_t *t = arg;
    for (unsigned i = 0; i < t->cap && t->state == KTX_UP; i++)
        if (t->slots[i].used && t->slots[i].ready)
            ktx_slot_report(t, &t->slots[i]);
}

static void ktx_io_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    ktx_t *t = arg;
    char b[64];
    while (read(fd, b, sizeof b) > 0)
        ;
    if (t->rk) {
        t->in_poll = true;
        rd_kafka_poll(t->rk, 0); /* delivery reports and errors, on this thread */
        t->in_poll = false;
    }
    if (t->state == KTX_UP && t->ev.on_writable && t->live < t->cap)
        t->ev.on_writable(t->owner);
}

static int ktx_producer_new(ktx_t *t, char *err, size_t errlen);
static void ktx_producer_free(ktx_t *t);

/* A transaction commits the consumed offsets to the group coordinator of its own cluster: on
 * another cluster than the feed's source they would land where the feed's consumer never
 * reads them (after a restart it would start over from auto.offset.reset). 1: the same
 * cluster (by cluster id, whatever listener either uses); 0: another one, logged, the feed is
 * at-least-once; -1: an id is not known yet (why set: the transport tries again later). */
static int ktx_same_cluster(ktx_t *t, char *why, size_t whylen)
{
    rd_kafka_t *c = t->src->consumer(t->src->ctx);
    char *mine = rd_kafka_clusterid(t->rk, 3000);
    char *theirs = c ? rd_kafka_clusterid(c, 3000) : NULL;
    int r = -1;
    if (mine && theirs)
        r = strcmp(mine, theirs) == 0;
    if (r < 0)
        snprintf(why, whylen, "kafka %s: cluster id of the %s not known yet", t->bootstrap,
                 mine ? "feed's source cluster" : "feed topic's cluster");
    else if (r == 0)
        log_warn("feed %s: kafka %s: the feed topic is on another cluster (%s) than the feed's "
                 "source (%s): at-least-once (a transaction can only commit the offsets of a "
                 "group of its own cluster)",
                 t->cfg.feed, t->bootstrap, mine, theirs);
    if (mine)
        rd_kafka_mem_free(t->rk, mine);
    if (theirs)
        rd_kafka_mem_free(c, theirs);
    return r;
}

/* The topic's metadata: proves the cluster answers and the topic exists before the feed sends
 * (a bounded wait on the feed thread, once per connect). */
static void ktx_check_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    ktx_t *t = arg;
    if (t->down_pending) {
        t->down_pending = false;
        ktx_teardown(t, t->down_reason);
        return;
    }
    if (t->state != KTX_CONNECTING || !t->rk)
        return;
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(t->rk, 0, t->rkt, &md, 3000);
    char why[640] = "";
    if (e)
        snprintf(why, sizeof why, "kafka %s: topic %.250s: metadata: %.150s", t->bootstrap,
                 t->topic, rd_kafka_err2str(e));
    else if (md->topic_cnt != 1 || md->topics[0].err || md->topics[0].partition_cnt < 1)
        snprintf(why, sizeof why, "kafka %s: topic %.250s: %.150s", t->bootstrap, t->topic,
                 md->topic_cnt == 1 && md->topics[0].err ? rd_kafka_err2str(md->topics[0].err)
                                                         : "no partitions");
    if (md)
        rd_kafka_metadata_destroy(md);
    if (!why[0] && t->eos) {
        int same = ktx_same_cluster(t, why, sizeof why);
        if (same == 0) {
            ktx_producer_free(t);
            t->eos = false;
            if (ktx_producer_new(t, why, sizeof why) == 0)
                why[0] = 0;
        }
    }
    if (!why[0] && t->eos) {
        /* registers the transactional.id: fences an earlier instance, aborts what it left */
        bool unsupported = false;
        char xe[400];
        kafka_txn_rc_t rc = kafka_txn_init(t->rk, KTX_TXN_WAIT_MS, &unsupported, xe, sizeof xe);
        if (rc != KAFKA_TXN_OK && unsupported) {
            log_warn("feed %s: kafka %s: no transactions (%s): at-least-once", t->cfg.feed,
                     t->bootstrap, xe);
            ktx_producer_free(t);
            t->eos = false;
            if (ktx_producer_new(t, why, sizeof why) == 0)
                why[0] = 0;
        } else if (rc != KAFKA_TXN_OK) {
            snprintf(why, sizeof why, "kafka %s: %.150s: %.200s", t->bootstrap, t->src->txn_id, xe);
        }
    }
    if (why[0]) {
        ktx_teardown(t, why);
        return;
    }
    t->state = KTX_UP;
    ktx_mode(t, t->eos);
    log_info("feed %s: producing to kafka topic %s at %s (%s)", t->cfg.feed, t->topic, t->bootstrap,
             t->eos ? "exactly once: transactions with the consumed offsets"
                    : "at-least-once: idempotent, acks=all");
    t->ev.on_up(t->owner);
}

/* Frees the producer after purging what it holds: after this librdkafka references no payload
 * and runs no callback, so the in-flight batches can be failed and their frames reused. */
static void ktx_producer_free(ktx_t *t)
{
    if (!t->rk)
        return;
    rd_kafka_purge(t->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT |
                              RD_KAFKA_PURGE_F_NON_BLOCKING);
    if (t->rkt)
        rd_kafka_topic_destroy(t->rkt);
    if (t->mainq) {
        rd_kafka_queue_io_event_enable(t->mainq, -1, NULL, 0);
        rd_kafka_queue_destroy(t->mainq);
    }
    /* a commit that timed out may still be inside it: then the pair destroys it once it returns */
    if (!t->txn || !kafka_txn_pair_take_handle(t->txn, t->rk))
        rd_kafka_destroy(t->rk);
    t->rk = NULL;
    t->rkt = NULL;
    t->mainq = NULL;
}

void ktx_teardown(ktx_t *t, const char *reason)
{
    if (t->state == KTX_DOWN)
        return;
    t->state = KTX_DOWN;
    bool was_txn = t->eos && (t->txn_open || t->live);
    if (t->txn && t->eos && t->rk)
        kafka_txn_pair_count_rebuild(t->txn); /* the next connect makes the producer again */
    ktx_producer_free(t);
    t->eos = t->src != NULL; /* the next producer tries transactions again */
    if (was_txn) {
        /* Nothing produced since the last commit will be visible (the next init_transactions
         * of this transactional.id aborts it): produced again after the rewind. */
        ktx_forget(t);
        if (t->m_aborted)
            metrics_counter_inc(t->m_aborted);
        t->src->rewind(t->src->ctx, reason);
    }
    for (unsigned i = 0; i < t->cap; i++) {
        ktx_slot_t *s = &t->slots[i];
        if (!s->used)
            continue;
        s->used = false;
        s->ready = false;
        t->live--;
        transport_failure_t f = {.status = 0, .retryable = true, .reason = reason};
        t->ev.on_fail(t->owner, s->cookie, &f);
    }
    log_warn("feed %s: kafka transport down: %s", t->cfg.feed, reason);
    t->ev.on_down(t->owner, reason);
}

/* The operator's librdkafka properties for the target cluster (kafka.config: TLS, SASL),
 * applied after NDD's own so security settings come from the feed. */
static int ktx_conf_apply(rd_kafka_conf_t *c, const json_t *opts, char *err, size_t errlen)
{
    const json_t *props = opts ? json_object_get(opts, "config") : NULL;
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)props, k, v)
    {
        if (!json_is_string(v) ||
            rd_kafka_conf_set(c, k, json_string_value(v), err, errlen) != RD_KAFKA_CONF_OK) {
            if (!json_is_string(v))
                snprintf(err, errlen, "kafka.config.%s: must be a string", k);
            return -1;
        }
    }
    return 0;
}

static int ktx_producer_new(ktx_t *t, char *err, size_t errlen)
{
    char txn_tmo[32];
    char e[256];
    char tmo[32], linger[16];
    unsigned msg_tmo = t->cfg.timeout_ms < 10000 ? 10000 : t->cfg.timeout_ms;
    snprintf(tmo, sizeof tmo, "%u", msg_tmo);
    snprintf(linger, sizeof linger, "%d", 5);
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    const char *kv[][2] = {
        {"bootstrap.servers", t->bootstrap},
        {"enable.idempotence", "true"}, /* acks=all, in order, no duplicates from retries */
        {"acks", "all"},
        {"partitioner", "murmur2_random"}, /* by key, as the Java client: key order kept */
        {"message.timeout.ms", tmo},
        {"linger.ms", linger},
        {"queue.buffering.max.messages", "1000000"}, /* the feed bounds what is in flight */
        {"queue.buffering.max.kbytes", "1048576"},
        {"client.id", "ndd-adapter"},
    };
    for (size_t i = 0; i < sizeof kv / sizeof *kv; i++)
        if (rd_kafka_conf_set(c, kv[i][0], kv[i][1], e, sizeof e) != RD_KAFKA_CONF_OK) {
            snprintf(err, errlen, "kafka %s: %s", kv[i][0], e);
            rd_kafka_conf_destroy(c);
            return -1;
        }
    /* transaction.timeout.ms: how long a transaction left open by a crash blocks read_committed
     * consumers when no instance with the same transactional.id comes back to abort it. It is
     * message.timeout.ms plus the abort's own wait: after a record refused for good, librdkafka
     * (2.0) holds the sends behind it until message.timeout.ms before the abort can go on; a
     * transaction timeout no longer than that let the broker abort it first and fence the
     * producer (a new producer instead of an abort). */
    snprintf(txn_tmo, sizeof txn_tmo, "%u", msg_tmo + KTX_TXN_WAIT_MS);
    if (t->eos && (rd_kafka_conf_set(c, "transactional.id", t->src->txn_id, e, sizeof e) ||
                   rd_kafka_conf_set(c, "transaction.timeout.ms", txn_tmo, e, sizeof e))) {
        snprintf(err, errlen, "kafka transactional.id %s: %s", t->src->txn_id, e);
        rd_kafka_conf_destroy(c);
        return -1;
    }
    if (ktx_conf_apply(c, t->cfg.options, e, sizeof e)) {
        snprintf(err, errlen, "feed %s: %s", t->cfg.feed, e);
        rd_kafka_conf_destroy(c);
        return -1;
    }
    rd_kafka_conf_set_opaque(c, t);
    rd_kafka_conf_set_dr_msg_cb(c, ktx_dr_cb);
    rd_kafka_conf_set_error_cb(c, ktx_error_cb);
    t->rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, e, sizeof e);
    if (!t->rk) {
        snprintf(err, errlen, "kafka producer for %s: %.200s", t->bootstrap, e);
        rd_kafka_conf_destroy(c);
        return -1;
    }
    t->rkt = rd_kafka_topic_new(t->rk, t->topic, NULL);
    t->mainq = rd_kafka_queue_get_main(t->rk);
    if (!t->rkt || !t->mainq) {
        snprintf(err, errlen, "kafka topic %s: %s", t->topic,
                 rd_kafka_err2str(rd_kafka_last_error()));
        ktx_producer_free(t);
        return -1;
    }
    rd_kafka_queue_io_event_enable(t->mainq, t->pipefd[1], "1", 1);
    return 0;
}

static void ktx_destroy(transport_t *base);

/* The feed's bounded commit: its timed-out and rebuild counters by feed (the transport counts
 * its commits, aborts and commit time itself). 0 or -1. */
static int ktx_txn_pair_new(ktx_t *t)
{
    char who[160];
    snprintf(who, sizeof who, "feed %s", t->cfg.feed ? t->cfg.feed : "");
    kafka_txn_pair_opts_t o = {.txn_id = t->src->txn_id,
                               .topic = t->topic,
                               .who = who,
                               .metrics =
                                   t->cfg.metrics ? t->cfg.metrics : metrics_default_registry(),
                               .metric_prefix = "ndd_adapter",
                               .label = "feed",
                               .label_value = t->cfg.feed ? t->cfg.feed : "",
                               .own_commit_metrics = true};
    return (t->txn = kafka_txn_pair_new(&o)) ? 0 : -1;
}

static transport_t *ktx_create(struct event_base *base, const transport_config_t *cfg,
                               const transport_events_t *ev, void *owner, char *err, size_t errlen)
{
    const char *topic = cfg->path && cfg->path[0] == '/' ? cfg->path + 1 : cfg->path;
    if (!topic || !*topic || strlen(topic) > 249 || strchr(topic, '/')) {
        snprintf(err, errlen, "endpoint %s: kafka://host:port/topic names one topic",
                 cfg->endpoint);
        return NULL;
    }
    bool raw = cfg->encoding && !(cfg->encoding->form & ENCODING_FORM_FRAME);
    if (raw && !cfg->record) {
        snprintf(err, errlen, "endpoint %s: a pass-through kafka feed needs its source records",
                 cfg->endpoint);
        return NULL;
    }
    ktx_t *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    t->raw = raw;
    t->base.ops = &transport_kafka_ops;
    t->evb = base;
    t->cfg = *cfg;
    t->ev = *ev;
    t->owner = owner;
    t->pipefd[0] = t->pipefd[1] = -1;
    snprintf(t->topic, sizeof t->topic, "%s", topic);
    snprintf(t->bootstrap, sizeof t->bootstrap, "%.100s:%.20s", cfg->host, cfg->port);
    const json_t *eo = cfg->options ? json_object_get(cfg->options, "exactly_once") : NULL;
    if (cfg->source && !json_is_false(eo)) {
        t->src = cfg->source;
        t->src->revoked = NULL; /* set below, once the transport exists */
        t->eos = true;
    }
    t->cap = cfg->max_in_flight ? cfg->max_in_flight : 100;
    t->slots = calloc(t->cap, sizeof *t->slots);
    if (!t->slots || pipe2(t->pipefd, O_NONBLOCK | O_CLOEXEC) < 0) {
        snprintf(err, errlen, "kafka transport: %s", t->slots ? strerror(errno) : "out of memory");
        ktx_destroy(&t->base);
        return NULL;
    }
    t->io_ev = event_new(base, t->pipefd[0], EV_READ | EV_PERSIST, ktx_io_cb, t);
    t->check_ev = event_new(base, -1, 0, ktx_check_cb, t);
    t->report_ev = event_new(base, -1, 0, ktx_report_cb, t);
    t->commit_ev = evtimer_new(base, ktx_commit_cb, t);
    t->idle_ev = event_new(base, -1, EV_PERSIST, ktx_idle_cb, t);
    struct timeval idle = {KTX_IDLE_COMMIT_MS / 1000, (KTX_IDLE_COMMIT_MS % 1000) * 1000};
    if (!t->io_ev || !t->check_ev || !t->report_ev || !t->commit_ev || !t->idle_ev ||
        event_add(t->io_ev, NULL) < 0 || (t->src && event_add(t->idle_ev, &idle) < 0)) {
        snprintf(err, errlen, "out of memory");
        ktx_destroy(&t->base);
        return NULL;
    }
    ktx_metrics_bind(t);
    if (t->m_eos)
        metrics_gauge_set(t->m_eos, 0); /* until a transactional producer is up */
    if (t->src && ktx_txn_pair_new(t)) {
        snprintf(err, errlen, "kafka transport: out of memory or metrics registration failed");
        ktx_destroy(&t->base);
        return NULL;
    }
    if (t->src) {
        t->src->transport = &t->base;
        t->src->revoked = ktx_revoked;
    }
    return &t->base;
}

static int ktx_connect(transport_t *base)
{
    ktx_t *t = (ktx_t *)base;
    if (t->state != KTX_DOWN)
        return 0;
    char err[400];
    t->state = KTX_CONNECTING;
    t->down_pending = false;
    if (ktx_producer_new(t, err, sizeof err)) {
        snprintf(t->down_reason, sizeof t->down_reason, "%.400s", err);
        t->down_pending = true;
    }
    event_active(t->check_ev, 0, 0); /* the result through the loop, as for the other ones */
    return 0;
}

static unsigned ktx_capacity(const transport_t *base)
{
    const ktx_t *t = (const ktx_t *)base;
    return t->state == KTX_UP && !t->committing && !t->abort_pending ? t->cap - t->live : 0;
}

/* A pass-through batch (one record's value as it is, e.g. an xDR of the XDR topic): produced
 * with the source record's key and headers, which the encoding does not carry. The value
 * is the payload (referenced, not copied), the headers a copy of the source record's. */
static void ktx_send_raw(ktx_t *t, ktx_slot_t *s, const uint8_t *payload, size_t len, void *cookie)
{
    const rd_kafka_message_t *src = t->cfg.record(cookie, 0);
    rd_kafka_headers_t *sh = NULL, *hdrs = NULL;
    if (src && rd_kafka_message_headers(src, &sh) == RD_KAFKA_RESP_ERR_NO_ERROR && sh)
        hdrs = rd_kafka_headers_copy(sh);
    rd_kafka_resp_err_t e = rd_kafka_producev(
        t->rk, RD_KAFKA_V_RKT(t->rkt), RD_KAFKA_V_MSGFLAGS(0),
        RD_KAFKA_V_KEY(src && src->key_len ? src->key : NULL, src ? src->key_len : 0),
        RD_KAFKA_V_VALUE((void *)payload, len), RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_OPAQUE(s),
        RD_KAFKA_V_END);
    if (e) {
        if (hdrs)
            rd_kafka_headers_destroy(hdrs);
        ktx_slot_error(t, s, e, RD_KAFKA_PARTITION_UA);
        s->refused = true;
        return;
    }
    s->left++;
    t->txn_records++;
}

static int ktx_send(transport_t *base, const uint8_t *payload, size_t len, void *cookie)
{
    ktx_t *t = (ktx_t *)base;
    if (ktx_capacity(base) == 0)
        return -1;
    frame_parser_t p;
    frame_t fr;
    size_t used = 0;
    frame_parser_init(&p, 0, false);
    if (!t->raw && (frame_parse(&p, payload, len, &fr, &used) != FRAME_OK || used != len ||
                    fr.hdr.type != FRAME_TYPE_DATA)) {
        log_error("feed %s: kafka topic %s: payload is not a DATA frame (%zu bytes); refused",
                  t->cfg.feed, t->topic, len);
        return -1;
    }
    if (t->eos && !t->txn_open) {
        char xe[400];
        if (kafka_txn_begin(t->rk, xe, sizeof xe) != KAFKA_TXN_OK) {
            /* the producer is in a state where nothing can be produced: made again */
            snprintf(t->down_reason, sizeof t->down_reason, "kafka %s: %.400s", t->bootstrap, xe);
            if (!t->down_pending) {
                t->down_pending = true;
                event_active(t->check_ev, 0, 0);
            }
            return -1;
        }
        t->txn_open = true;
        t->txn_records = 0;
        struct timeval tv = {KTX_TXN_MS / 1000, (KTX_TXN_MS % 1000) * 1000};
        evtimer_add(t->commit_ev, &tv);
    }
    ktx_slot_t *s = NULL;
    for (unsigned i = 0; i < t->cap && !s; i++)
        if (!t->slots[i].used)
            s = &t->slots[i];
    *s = (ktx_slot_t){.cookie = cookie, .used = true, .left = 1}; /* 1: held while producing */
    t->live++;
    if (t->n_poison && ktx_poison_take(t, cookie)) {
        /* refused for good before: dead-lettered, not produced again into a transaction */
        s->err = RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE; /* any permanent error: not retried */
        snprintf(s->reason, sizeof s->reason, "%s", t->poison_reason);
        s->refused = true;
        log_warn("feed %s: kafka topic %s: %s", t->cfg.feed, t->topic, t->poison_reason);
        goto produced;
    }
    if (t->raw) {
        ktx_send_raw(t, s, payload, len, cookie);
        goto produced;
    }
    frame_record_iter_t it;
    frame_record_t rec;
    frame_records(&fr, &it);
    while (frame_record_next(&it, &rec)) {
        rd_kafka_headers_t *hdrs = NULL;
        if (rec.header_count) {
            hdrs = rd_kafka_headers_new(rec.header_count);
            frame_header_iter_t hi;
            codec_slice_t n, v;
            frame_headers(&rec, &hi);
            while (frame_header_next(&hi, &n, &v))
                rd_kafka_header_add(hdrs, n.ptr, (ssize_t)n.len, v.ptr, (ssize_t)v.len);
        }
        /* no F_COPY: the body and key are referenced until the delivery report */
        rd_kafka_resp_err_t e =
            rd_kafka_producev(t->rk, RD_KAFKA_V_RKT(t->rkt), RD_KAFKA_V_MSGFLAGS(0),
                              RD_KAFKA_V_KEY(rec.key.len ? (void *)rec.key.ptr : NULL, rec.key.len),
                              RD_KAFKA_V_VALUE((void *)rec.body.ptr, rec.body.len),
                              RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_OPAQUE(s), RD_KAFKA_V_END);
        if (e) {
            if (hdrs)
                rd_kafka_headers_destroy(hdrs); /* not taken on failure */
            ktx_slot_error(t, s, e, RD_KAFKA_PARTITION_UA);
            /* refused before it was queued: not in the transaction (the batch's records
             * produced before it are, and commit with it; the batch goes to the DLQ) */
            s->refused = s->err == e;
            break; /* the rest of the batch is not produced: it fails as one */
        }
        s->left++;
        t->txn_records++;
    }
produced:
    if (t->eos && t->txn_records >= KTX_TXN_RECORDS && !t->committing) {
        t->committing = true; /* full: commit once the last report is in */
        event_active(t->commit_ev, 0, 0);
    }
    /* the hold: reported now only if every message is already reported (or none produced) */
    if (--s->left == 0) { /* reported from the loop, never from inside send() */
        s->ready = true;
        event_active(t->report_ev, 0, 0);
    }
    return 0;
}

static unsigned ktx_in_flight(const transport_t *base)
{
    return ((const ktx_t *)base)->live;
}

static bool ktx_is_up(const transport_t *base)
{
    return ((const ktx_t *)base)->state == KTX_UP;
}

static void ktx_disconnect(transport_t *base, const char *reason)
{
    ktx_t *t = (ktx_t *)base;
    if (t->in_poll) { /* from an ack/fail callback: librdkafka forbids destroy in a callback */
        if (!t->down_pending && t->state != KTX_DOWN) {
            snprintf(t->down_reason, sizeof t->down_reason, "%s", reason);
            t->down_pending = true;
            event_active(t->check_ev, 0, 0);
        }
        return;
    }
    ktx_teardown(t, reason);
}

static void ktx_destroy(transport_t *base)
{
    ktx_t *t = (ktx_t *)base;
    if (t->src && t->src->transport == base) { /* the feed's revoke must not call us now */
        t->src->revoked = NULL;
        t->src->transport = NULL;
    }
    /* A stop after the feed drained: commit what every report is in for, so a stopping
     * instance leaves no open transaction for read_committed consumers to wait behind. */
    if (t->rk && t->eos && t->txn_open && t->state == KTX_UP) {
        char why[640];
        kafka_txn_rc_t rc = t->live == 0 && !t->abort_pending
                                ? ktx_commit_offsets(t, why, sizeof why)
                                : kafka_txn_abort(t->rk, why, sizeof why);
        /* failed: left to the broker, aborted by the next instance's init or the timeout */
        if (rc != KAFKA_TXN_OK)
            log_warn("feed %s: kafka %s: at stop: %s", t->cfg.feed, t->bootstrap, why);
    }
    ktx_producer_free(t);
    kafka_txn_pair_free(t->txn, NULL); /* after the producer: it holds a hung handle */
    if (t->io_ev)
        event_free(t->io_ev);
    if (t->check_ev)
        event_free(t->check_ev);
    if (t->report_ev)
        event_free(t->report_ev);
    if (t->commit_ev)
        event_free(t->commit_ev);
    if (t->idle_ev)
        event_free(t->idle_ev);
    if (t->last_offs)
        rd_kafka_topic_partition_list_destroy(t->last_offs);
    if (t->pipefd[0] >= 0)
        close(t->pipefd[0]);
    if (t->pipefd[1] >= 0)
        close(t->pipefd[1]);
    free(t->slots);
    free(t->poison);
    free(t->pos_scratch);
    free(t);
}

static const transport_ops_t transport_kafka_ops = {
    .name = "kafka",
    .create = ktx_create,
    .connect = ktx_connect,
    .send = ktx_send,
    .capacity = ktx_capacity,
    .in_flight = ktx_in_flight,
    .is_up = ktx_is_up,
    .disconnect = ktx_disconnect,
    .destroy = ktx_destroy,
    .metrics_remove = transport_kafka_metrics_remove,
};

/* ---- the descriptor: this transport as feeds, the admin and the schema see it ---- */

/* exactly_once: transactions (transport_kafka.c); topic and consumer: what ndd-admin creates
 * and grants (feed_kafka_acl.c). */
static const optdesc_t transport_kafka_topic_desc[] = {
    {.name = "partitions",
     .type = OPTDESC_INT,
     .min = 1,
     .max = 10000,
     .def = "3",
     .help = "partitions of the feed's topic"},
    {.name = "replication_factor",
     .type = OPTDESC_INT,
     .min = -1,
     .max = 32767,
     .def = "-1",
     .help = "replicas of each partition; -1: the broker's default (0 is refused)"},
    {.name = "retention_ms",
     .type = OPTDESC_INT,
     .min = -1,
     .max = INT64_MAX,
     .def = "604800000",
     .unit = "ms",
     .help = "how long records stay; -1: for ever (0 is refused)"},
    {0},
};
static const optdesc_t transport_kafka_consumer_desc[] = {
    {.name = "principal",
     .type = OPTDESC_STRING,
     .flags = OPTDESC_REQUIRED,
     .max = 255,
     .help = "the vendor's principal, User:<SCRAM user> or User:<certificate subject>"},
    {.name = "group_prefix",
     .type = OPTDESC_STRING,
     .max = 200,
     .help = "consumer groups the vendor may use start with this; default: <feed name>-"},
    {0},
};
static const optdesc_t transport_kafka_desc[] = {
    {.name = "config",
     .type = OPTDESC_MAP,
     .help = "librdkafka producer properties for the target cluster (security.protocol, sasl.*, "
             "ssl.*)"},
    {.name = "exactly_once",
     .type = OPTDESC_BOOL,
     .def = "true",
     .help = "transactions with the feed's offsets; false: at-least-once, idempotent"},
    {.name = "topic",
     .type = OPTDESC_OBJECT,
     .help = "the topic ndd-admin creates for the feed on its cluster",
     .sub = transport_kafka_topic_desc},
    {.name = "consumer",
     .type = OPTDESC_OBJECT,
     .help = "the vendor's consumer that ndd-admin grants read access (ACLs)",
     .sub = transport_kafka_consumer_desc},
    {0},
};

/* Types and ranges are the description's; the ACL rules (a real principal, no 0 for the
 * replication factor or the retention) are feed_kafka_acl.c's. */
static int transport_kafka_check(const json_t *o, const char *prefix, jfield_err_t *err)
{
    return feed_kafka_acl_check(o, prefix, err);
}

/* Records produced to a Kafka topic, kafka://host:port/topic (adapter/transport_kafka.c,
 * docs/kafka-feed.md): the ack is an idempotent acks=all produce of every record of a batch,
 * in a transaction with the feed's offsets unless kafka.exactly_once is false. */
const transport_desc_t transport_desc_kafka = {
    .name = "kafka",
    .url_example = "kafka://kafka.vendor.example:9093/ndd.feed.vendor-a",
    .exactly_once = true,
    .provisions_topic = true,
    .schemes = {{"kafka", false, "9092"}},
    .url_form = TRANSPORT_URL_NETWORK,
    .url_path = TRANSPORT_PATH_REQUIRED,
    .ack = TRANSPORT_ACK_DURABLE,
    .encodings = {"frame", "passthrough"}, /* passthrough: xDRs of XDR, key and headers kept */
    .options = "kafka",
    .option_desc = transport_kafka_desc,
    .check_options = transport_kafka_check,
    .ops = &transport_kafka_ops,
};
