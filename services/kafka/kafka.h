/* Thin, explicit wrappers over librdkafka (Debian's 2.0.2) that every NDD daemon uses:
 * an idempotent producer with per-message delivery callbacks and a bounded queue, a group
 * consumer that stores offsets only when told to (at-least-once), and a small admin helper.
 *
 * Settings: each wrapper applies NDD's defaults first and then the caller's pass-through
 * `kafka.*` properties (the prefix already removed), so every default can be overridden.
 * Design notes and defaults: docs/aggregation.md ("Kafka client"). */
#ifndef NDD_KAFKA_H
#define NDD_KAFKA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <librdkafka/rdkafka.h>

/* ---- types ---------------------------------------------------------------------------- */

/* One librdkafka property, e.g. {"linger.ms", "5"}. */
typedef struct kafka_prop {
    const char *key;
    const char *value;
} kafka_prop_t;

typedef struct kafka_producer kafka_producer_t;
typedef struct kafka_consumer kafka_consumer_t;

/* Called from kafka_producer_poll()/kafka_producer_close() on the polling thread, once for
 * every record that kafka_produce() accepted: msg_opaque is the caller's per-record pointer,
 * rkm->err is RD_KAFKA_RESP_ERR_NO_ERROR when the broker acknowledged it (rkm->partition and
 * rkm->offset then say where), RD_KAFKA_RESP_ERR__PURGE_QUEUE/_INFLIGHT when close gave up. */
typedef void (*kafka_delivery_cb_t)(void *owner, void *msg_opaque, const rd_kafka_message_t *rkm);

/* librdkafka's statistics JSON (every statistics.interval.ms, when that property is set),
 * delivered on the polling thread; the text is valid only during the call. Used for
 * consumer lag and the idempotent producer's state (eos.idemp_state, eos.producer_id). */
typedef void (*kafka_stats_cb_t)(void *owner, const char *json, size_t len);

typedef struct kafka_producer_opts {
    const char *brokers;   /* bootstrap.servers, required */
    const char *client_id; /* NULL: "ndd" */
    const kafka_prop_t *props;
    size_t n_props;
    kafka_delivery_cb_t on_delivery; /* may be NULL */
    kafka_stats_cb_t on_stats;       /* may be NULL */
    void *owner;
} kafka_producer_opts_t;

typedef enum kafka_produce_result {
    KAFKA_PRODUCE_OK = 0,
    KAFKA_PRODUCE_FULL,  /* the bounded queue is full: poll, pause input, retry later */
    KAFKA_PRODUCE_ERROR, /* refused (too large, unknown topic, fatal producer error, ...) */
} kafka_produce_result_t;

/* Value ownership for kafka_produce(). The key is always copied by librdkafka. */
typedef enum kafka_value_mode {
    /* Zero copy (no RD_KAFKA_MSG_F_COPY/F_FREE): librdkafka reads the caller's bytes until the
     * delivery callback for this record has run; the caller keeps them alive until then. */
    KAFKA_VALUE_BORROW = 0,
    /* RD_KAFKA_MSG_F_COPY: librdkafka copies the value; the caller may free it at once. */
    KAFKA_VALUE_COPY = 1,
} kafka_value_mode_t;

/* What a consumer rebalance did, as told to the owner. */
typedef enum kafka_rebalance_kind {
    KAFKA_REBALANCE_ASSIGNED = 0, /* partitions now ours: reset their state */
    KAFKA_REBALANCE_REVOKED,      /* being taken away: store finished work, drop pending */
    KAFKA_REBALANCE_LOST,         /* already owned by someone else: drop everything */
} kafka_rebalance_kind_t;

/* Called inside kafka_consumer_poll_batch() during a rebalance, before librdkafka applies it
 * (so a REVOKED owner can still store offsets that the following commit will carry). */
typedef void (*kafka_rebalance_cb_t)(void *owner, kafka_rebalance_kind_t kind,
                                     const rd_kafka_topic_partition_list_t *parts);

/* A consumer rebuilt after a fatal error (kafka_consumer_rebuild): BEFORE, the owner releases
 * whatever it took from the old librdkafka handle (kafka_consumer_handle, a queue of it, a
 * kafka_wake watch, group metadata); the handle is still valid. AFTER, it takes them again
 * from the new one. Owners that only poll through this wrapper need no callback. */
typedef enum kafka_rebuild_phase {
    KAFKA_REBUILD_BEFORE = 0,
    KAFKA_REBUILD_AFTER,
} kafka_rebuild_phase_t;

typedef void (*kafka_rebuild_cb_t)(void *owner, kafka_consumer_t *c, kafka_rebuild_phase_t phase);

typedef struct kafka_consumer_opts {
    const char *brokers;  /* required */
    const char *group_id; /* required */
    const char *client_id;
    const char *const *topics; /* subscription */
    size_t n_topics;
    /* true: "cooperative-sticky" (incremental: unaffected partitions keep flowing during a
     * rebalance); false: "range,roundrobin" (eager: everything is revoked, then reassigned). */
    bool cooperative;
    /* group.instance.id (static membership, KIP-345), from kafka_group_instance_id(); NULL
     * or "": dynamic membership. A restarted member with the same id gets its partitions
     * back at once instead of waiting for the dead one's session timeout. */
    const char *instance_id;
    const kafka_prop_t *props;
    size_t n_props;
    kafka_rebalance_cb_t on_rebalance; /* may be NULL */
    kafka_stats_cb_t on_stats;         /* may be NULL */
    kafka_rebuild_cb_t on_rebuild;     /* may be NULL: the owner keeps no handle of its own */
    void *owner;
} kafka_consumer_opts_t;

/* Which client a pass-through property is for (kafka_props_split). */
typedef enum kafka_client_kind {
    KAFKA_CLIENT_PRODUCER = 0,
    KAFKA_CLIENT_CONSUMER,
} kafka_client_kind_t;

/* Consumer backpressure state (kafka_gate_update): a stall is first met by not polling for
 * data; if it lasts pause_after_ms the assigned partitions are paused, so the consumer can
 * still be polled for rebalances, and resumed as soon as there is room again. Pausing at once
 * would cost a refetch of everything prefetched on every short stall. Zero-initialise. */
typedef struct kafka_gate {
    bool paused;
    bool log_due; /* set with KAFKA_GATE_PAUSED when a log line is due (one a minute at most) */
    int64_t blocked_since_ms;
    int64_t logged_ms;
    uint64_t pauses; /* times paused since start */
} kafka_gate_t;

typedef enum kafka_gate_event {
    KAFKA_GATE_STEADY = 0, /* nothing changed */
    KAFKA_GATE_PAUSED,     /* the partitions were just paused */
    KAFKA_GATE_RESUMED,    /* the partitions were just resumed */
} kafka_gate_event_t;

/* A daemon worker's two clients (kafka_pair_new). */
typedef struct kafka_pair_opts {
    const char *brokers;
    const char *client_id;
    const char *group_id;
    const char *topic; /* the consumer's subscription */
    bool cooperative;
    const char *instance_id;   /* the consumer's group.instance.id (kafka_consumer_opts_t) */
    const kafka_prop_t *props; /* the daemon's kafka.* pass-through, routed by kafka_props_split */
    size_t n_props;
    /* The worker's own settings, applied before props (so props override them). */
    const kafka_prop_t *producer_defaults;
    size_t n_producer_defaults;
    const kafka_prop_t *consumer_defaults;
    size_t n_consumer_defaults;
    kafka_delivery_cb_t on_delivery;
    kafka_rebalance_cb_t on_rebalance;
    kafka_stats_cb_t on_consumer_stats;
    kafka_rebuild_cb_t on_consumer_rebuild; /* may be NULL (kafka_consumer_opts_t.on_rebuild) */
    void *owner;
} kafka_pair_opts_t;

/* ---- producer ------------------------------------------------------------------------- */

/* Defaults: enable.idempotence=true (acks=all, ordered, no duplicates from retries),
 * linger.ms=5, batch.num.messages=10000, queue.buffering.max.messages=100000,
 * queue.buffering.max.kbytes=65536, message.timeout.ms=0 (never expire: a broker outage
 * fills the queue and the caller pauses instead of losing records), partitioner=
 * murmur2_random (the Java client's choice, so one key maps to one partition whichever
 * client produced it). Returns NULL with errstr filled on a bad property. */
kafka_producer_t *kafka_producer_new(const kafka_producer_opts_t *opts, char *errstr,
                                     size_t errstr_size);

/* Enqueue one record. partition RD_KAFKA_PARTITION_UA lets the partitioner choose by key.
 * hdrs may be NULL; on KAFKA_PRODUCE_OK librdkafka owns them, otherwise the caller still
 * does (to retry or destroy). *err (may be NULL) gets librdkafka's reason. */
kafka_produce_result_t kafka_produce(kafka_producer_t *p, const char *topic, int32_t partition,
                                     const void *key, size_t key_len, const void *value,
                                     size_t value_len, rd_kafka_headers_t *hdrs,
                                     kafka_value_mode_t mode, void *msg_opaque,
                                     rd_kafka_resp_err_t *err);

/* Serves delivery callbacks (and errors); returns the number of events served. */
int kafka_producer_poll(kafka_producer_t *p, int timeout_ms);
/* Records handed to librdkafka whose delivery callback has not run yet. */
int kafka_producer_outq_len(kafka_producer_t *p);
/* Non-zero after a fatal (idempotence) error; errstr gets the reason. */
rd_kafka_resp_err_t kafka_producer_fatal_error(kafka_producer_t *p, char *errstr, size_t size);
/* Blocks until everything queued is acknowledged or timeout_ms passed; returns the count left. */
int kafka_producer_flush(kafka_producer_t *p, int timeout_ms);
/* Flushes for up to timeout_ms, then purges what is left (their delivery callbacks run with a
 * _PURGE_ error, so owners release what they hold) and destroys the producer. Returns the
 * number of records that were not acknowledged. NULL is a no-op. */
int kafka_producer_close(kafka_producer_t *p, int timeout_ms);
rd_kafka_t *kafka_producer_handle(kafka_producer_t *p);
/* Replaces the producer's librdkafka handle by a new one with the same configuration, for a
 * producer that reported a fatal error (a fenced transactional or idempotent producer can
 * never produce again). What was queued is purged first: its delivery callbacks run with a
 * _PURGE_ error, so owners release those records and produce them again. A transactional
 * owner then calls rd_kafka_init_transactions on the new handle. 0, or -1 (logged) with the
 * old handle kept. */
int kafka_producer_rebuild(kafka_producer_t *p);

/* ---- consumer ------------------------------------------------------------------------- */

#define KAFKA_SESSION_TIMEOUT_MS_DEFAULT "10000"
/* The shortest time between two rebuilds of one consumer (kafka_consumer_rebuild). */
#define KAFKA_REBUILD_INTERVAL_MS 1000

/* The group.instance.id of a daemon's consumer, into out: "<instance>-<qualifier>-t<hash>"
 * when the operator named the instance (it must then be unique per replica), else
 * "<host name>-<service>-<qualifier>-t<hash>-<http port>" when the daemon listens on a fixed
 * port (two replicas on one host cannot share one, and a restart keeps it). Two consumers with
 * the same id in one group would fence each other, so with neither (no instance, port 0 or
 * off) there is no stable id unique per replica: NULL, dynamic membership.
 * <hash> is FNV-1a of the topic the consumer reads, 8 hex digits: a member that rejoins a
 * stable group under the same id gets its old assignment back without a rebalance (brokers
 * since Kafka 3.2 leave that rebalance to the group leader, KIP-814, which librdkafka 2.0 does
 * not ask for), so a consumer moved to another topic and restarted within its session timeout
 * would hold the old topic's partitions and read nothing. qualifier and topic may be NULL (no
 * part for them): a transactional id, which must not change with the topic, passes none. */
const char *kafka_group_instance_id(char *out, size_t size, const char *instance,
                                    const char *service, const char *qualifier, const char *topic,
                                    int http_port);

/* Defaults: enable.auto.offset.store=false (only kafka_consumer_store() marks progress),
 * enable.auto.commit=true with auto.commit.interval.ms=1000 (so only *stored* offsets are
 * ever committed), auto.offset.reset=earliest, enable.partition.eof=false,
 * queued.max.messages.kbytes=16384 (bounds what librdkafka prefetches),
 * session.timeout.ms=10000 (librdkafka's 45 s is how long the partitions of a member killed
 * without a static id, or of a static member stopped for good, stay unread), and
 * group.instance.id when opts->instance_id is set. Subscribes at once. */
kafka_consumer_t *kafka_consumer_new(const kafka_consumer_opts_t *opts, char *errstr,
                                     size_t errstr_size);

/* Waits up to timeout_ms for the first message, then takes what is ready without waiting, up
 * to max. Rebalances and errors are served inside (errors are logged with topic/partition/
 * offset and not returned). A fatal error of the consumer (rd_kafka_fatal_error, e.g.
 * FENCED_INSTANCE_ID: librdkafka 2.0.2 fences a static member for good when its group's
 * coordinator dies and its session expires meanwhile) makes it rebuild the consumer
 * (kafka_consumer_rebuild) instead of returning nothing forever. The caller destroys each returned
 * message (rd_kafka_message_destroy) when done with it; holding one keeps its bytes alive. */
size_t kafka_consumer_poll_batch(kafka_consumer_t *c, rd_kafka_message_t **out, size_t max,
                                 int timeout_ms);

/* Takes ownership of one consumed message (destroy it with rd_kafka_message_destroy). */
typedef void (*kafka_message_cb_t)(void *owner, rd_kafka_message_t *m);

/* Like kafka_consumer_poll_batch, but hands each message to cb as soon as librdkafka returns
 * it. A rebalance callback can run between two messages of one poll; with poll_each every
 * message reaches its owner before that, so per-partition state (epochs) stays exact. Use
 * this when partition state matters. Returns the number of messages handed over. */
size_t kafka_consumer_poll_each(kafka_consumer_t *c, size_t max, int timeout_ms,
                                kafka_message_cb_t cb, void *owner);

/* Marks progress: next_offset (the offset after the last finished record) is what the next
 * auto commit or kafka_consumer_commit() will send for topic/partition. */
int kafka_consumer_store(kafka_consumer_t *c, const char *topic, int32_t partition,
                         int64_t next_offset);
/* Pause/resume every currently assigned partition (fetching stops; the group membership and
 * rebalances continue to be served by poll). Idempotent. */
int kafka_consumer_pause_all(kafka_consumer_t *c);
int kafka_consumer_resume_all(kafka_consumer_t *c);
/* Wakes librdkafka's fetchers. librdkafka 2.0.2 stops fetching a partition once its prefetch
 * queue passed queued.max.messages.kbytes and looks again only when its broker thread wakes,
 * up to a second later (fetch.queue.backoff.ms arrived in 2.1). An application faster than
 * that second then idles. A ListOffsets request (offsets-for-times of the assignment, one
 * request per leader, timeout_ms at most) makes each leader's broker thread run, and it then
 * fetches again at once. Call it when the queue ran dry while a backlog is known to exist. */
int kafka_consumer_kick(kafka_consumer_t *c, int timeout_ms);
/* Synchronous commit of the stored offsets of the current assignment. 0 also when there was
 * nothing to commit. */
int kafka_consumer_commit(kafka_consumer_t *c);
/* Number of partitions currently assigned. */
int kafka_consumer_assignment_size(kafka_consumer_t *c);
/* Replaces the consumer's librdkafka handle by a new one with the same configuration and
 * subscription (the kafka_consumer_t stays the same), logging the group, member id, topics and
 * the fatal error that asked for it. The owner first gets on_rebalance(KAFKA_REBALANCE_LOST) for
 * what was assigned (nothing of it is stored or committed any more: the new member reads again
 * from the group's committed offsets, so unfinished records are read again, never skipped),
 * then on_rebuild BEFORE and AFTER. The old handle is destroyed without a commit or a leave
 * (a fenced member can do neither). At most one rebuild per KAFKA_REBUILD_INTERVAL_MS: 0, or -1
 * (too soon, or no new handle: logged) with the old one kept. */
int kafka_consumer_rebuild(kafka_consumer_t *c);
/* Non-zero when the consumer's current handle has a fatal error (errstr gets the reason). */
rd_kafka_resp_err_t kafka_consumer_fatal_error(kafka_consumer_t *c, char *errstr, size_t size);
/* Commits stored offsets, leaves the group (the revoke callback runs), destroys. */
void kafka_consumer_close(kafka_consumer_t *c);
rd_kafka_t *kafka_consumer_handle(kafka_consumer_t *c);

/* ---- admin ---------------------------------------------------------------------------- */

/* The largest record NDD produces: the contract's default body limit (1 MiB,
 * CODEC_DEFAULT_MAX_BODY) plus the most headers it allows (64 KiB, CODEC_MAX_HEADER_BYTES)
 * plus 8 KiB for the key, the enrichment/dead-letter headers and the record batch framing.
 * Every NDD producer's message.max.bytes and every topic NDD creates (max.message.bytes)
 * default to it, and the local broker (deploy/local/kafka/server.properties.in) accepts it,
 * so a copy at the documented limit travels end to end (docs/message-format.md, "Limits"). */
#define KAFKA_RECORD_MAX_BYTES 1122304
#define KAFKA_RECORD_MAX_BYTES_STR "1122304"

/* replication for kafka_admin_create_topic: NDD's rule for its own topics. The replication
 * factor is min(3, brokers) and, with 3 or more brokers, min.insync.replicas is 2 (unless
 * configs set it): an acks=all write then survives the loss of one broker and is refused
 * (NOT_ENOUGH_REPLICAS, retried by NDD's producers) rather than kept on a single broker. One
 * broker: replication factor 1 and the broker's min.insync.replicas, as before. "brokers" are
 * those the cluster's metadata lists when the topic is created (docs/kafka-cluster.md). */
#define KAFKA_REPLICATION_AUTO 0

/* Creates a topic (already existing is success: its settings are left as they are) and waits
 * until the broker reports all its partitions with a leader. replication: a factor, -1 for
 * the broker's default.replication.factor, or KAFKA_REPLICATION_AUTO. configs: topic configs
 * such as {"cleanup.policy", "compact"}. Returns 0 or -1 (logged with the topic name and the
 * broker's reason). */
int kafka_admin_create_topic(const char *brokers, const char *topic, int partitions,
                             int replication, const kafka_prop_t *configs, size_t n_configs,
                             int timeout_ms);
/* The same with the client's kafka.* properties (as a daemon passes them to kafka_pair_new):
 * those for reaching the cluster (security.protocol, ssl.*, sasl.*, socket.*, ...) configure
 * the admin client, so topics are created on a cluster that requires SSL or SASL_SSL. */
int kafka_admin_create_topic_with(const char *brokers, const kafka_prop_t *client_props,
                                  size_t n_client_props, const char *topic, int partitions,
                                  int replication, const kafka_prop_t *configs, size_t n_configs,
                                  int timeout_ms);
/* One topic of kafka_admin_create_topics_with. */
typedef struct kafka_topic_new {
    const char *topic;
    int partitions;
} kafka_topic_new_t;
/* What a daemon creates at start: each of topics in turn with NDD's replication rule
 * (KAFKA_REPLICATION_AUTO) and no topic configs, each within timeout_ms. 0, or -1 at the first
 * that fails (logged with its name). */
int kafka_admin_create_topics_with(const char *brokers, const kafka_prop_t *client_props,
                                   size_t n_client_props, const kafka_topic_new_t *topics,
                                   size_t n_topics, int timeout_ms);
int kafka_admin_delete_topic(const char *brokers, const char *topic, int timeout_ms);
/* Number of partitions of topic, or -1 when it does not exist / the broker did not answer. */
int kafka_admin_partition_count(rd_kafka_t *rk, const char *topic, int timeout_ms);
/* The same through a short-lived client of brokers (for start-up, before any client exists). */
int kafka_admin_topic_partitions(const char *brokers, const char *topic, int timeout_ms);
/* The same with the client's kafka.* properties (kafka_admin_create_topic_with). */
int kafka_admin_topic_partitions_with(const char *brokers, const kafka_prop_t *client_props,
                                      size_t n_client_props, const char *topic, int timeout_ms);

/* ---- helpers shared by the daemons ---------------------------------------------------- */

/* Routes a daemon's kafka.* pass-through properties to one client: "consumer.X" goes to the
 * consumer only and "producer.X" to the producer only (both as X); an unprefixed X that only
 * one kind of client knows (fetch.*, queued.*, group.* … / linger.*, batch.*, acks …) goes to
 * that kind only (the other would refuse it or warn), anything else to both.
 * out has room for n_in entries; the keys point into in. Returns the number written. */
size_t kafka_props_split(const kafka_prop_t *in, size_t n_in, kafka_client_kind_t kind,
                         kafka_prop_t *out);

/* Creates a worker's producer and its group consumer of one topic (subscribed). 0, or -1
 * with err filled and both left NULL. */
int kafka_pair_new(const kafka_pair_opts_t *o, kafka_producer_t **producer,
                   kafka_consumer_t **consumer, char *err, size_t errlen);
/* Closes what kafka_pair_new created, the consumer first: its close commits the stored
 * offsets and runs the revoke callback, which may still need the producer (to flush and
 * store). Then kafka_producer_close(producer_timeout_ms). Sets both to NULL; a NULL one is
 * skipped. */
void kafka_pair_close(kafka_producer_t **producer, kafka_consumer_t **consumer,
                      int producer_timeout_ms);
/* Rebuilds a worker's pair after a fatal error of either client (a fenced transactional
 * producer, a fenced consumer): the producer (kafka_producer_rebuild), then the consumer
 * (kafka_consumer_rebuild), so the consumer's owner sees its partitions lost only once nothing
 * of the old producer can still be acknowledged. 0, or -1 when either was kept. */
int kafka_pair_rebuild(kafka_producer_t *producer, kafka_consumer_t *consumer);

/* The consumer lag summed over topic's partitions in a librdkafka statistics JSON (the text
 * a kafka_stats_cb_t gets); -1 when the JSON does not parse. */
int64_t kafka_stats_consumer_lag(const char *json, size_t len, const char *topic);

/* One backpressure step (see kafka_gate_t): room says whether the caller can take records
 * now. Returns what changed, so the caller updates its metrics and logs (g->log_due). */
kafka_gate_event_t kafka_gate_update(kafka_gate_t *g, kafka_consumer_t *c, bool room,
                                     int pause_after_ms);

#endif
