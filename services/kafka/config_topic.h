/* The workers' side of ndd.config: a follower that rebuilds the configuration published by
 * ndd-admin and hands every change to its owner. Design, record format and wiring:
 * docs/control-path.md.
 *
 * The topic is compacted; key "<kind>/<id>", value the admin's JSON record
 * {"kind","id","name","version","updated_at","spec":{...},...}, a null value (tombstone) on
 * delete. The follower assigns every partition at OFFSET_BEGINNING itself (no group
 * membership, nothing ever committed: each start reads the whole topic again), keeps the last
 * record per key for the kinds it was asked for, and:
 *
 *   1. initial load: reads until every partition that existed at start has been read up to
 *      the end offset it had then (its high watermark, asked for at the first discovery; a
 *      partition-EOF event counts too, for when the broker did not say). No callback runs
 *      meanwhile, so a key with many versions in the log is
 *      applied once, as its last version. Then on_upsert runs once per live key (topic order)
 *      and on_loaded once: the owner applies the full configuration before it consumes data
 *      and declares itself ready;
 *   2. live: every later record calls on_upsert (new or changed content) or on_delete
 *      (tombstone of a key it holds), in topic order. A record equal to the one held (the
 *      admin's reconcile republishes unchanged records) calls nothing.
 *
 * Callbacks run on the owner's thread, inside config_topic_poll(): call it from the owner's
 * loop, or watch config_topic_fd() (readable when there is work) from a libevent loop. One
 * internal thread only discovers partitions (metadata requests, every refresh_ms), so no
 * blocking Kafka call ever runs on the owner's thread.
 *
 * Bounded: at most max_keys keys and max_record_bytes per value; a record beyond either is
 * logged with its key, partition and offset, counted (ndd_config_messages_read_total{result=
 * "max_keys"|"too_large"}) and skipped: the key keeps its previous version (or stays absent).
 * Invalid records (bad key, JSON, kind/id not matching the key, no "spec" object) likewise
 * (result="invalid"). librdkafka's prefetch is capped at 4 MiB.
 *
 * Kafka unreachable: librdkafka reconnects for ever; the state and everything applied stay as
 * they are (a worker keeps its configuration while the broker or the admin is away).
 *
 * Propagation (docs/control-path.md): every live change (upsert or delete handed to the
 * owner) waits, with the record's Kafka timestamp (the admin's publish time), until it is
 * applied: at the end of the config_topic_poll that handled it, or, with defer_applied, when
 * the owner calls config_topic_mark_applied (after it resolved its configuration). Then the
 * time from publish to apply goes into ndd_config_propagation_seconds{topic,kind}, and
 * on_applied gets the follower's applied state (the next offset of every partition, all
 * records below it applied) for the owner's events publisher. At most CONFIG_TOPIC_POLL_MAX
 * changes wait (one poll's worth); more before a mark are applied all the same but not
 * timed (counted in ndd_config_propagation_untimed_total). */
#ifndef NDD_CONFIG_TOPIC_H
#define NDD_CONFIG_TOPIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "kafka.h"
#include "metrics.h"

/* ---- types ---------------------------------------------------------------------------- */

#define CONFIG_TOPIC_DEFAULT_TOPIC "ndd.config"
#define CONFIG_TOPIC_DEFAULT_MAX_KEYS 10000
#define CONFIG_TOPIC_DEFAULT_MAX_RECORD (1024 * 1024)
#define CONFIG_TOPIC_DEFAULT_REFRESH_MS 10000
/* Partitions followed at most (the admin creates ndd.config with one). */
#define CONFIG_TOPIC_MAX_PARTITIONS 256
/* Longest key "<kind>/<id>" accepted, and longest kind. */
#define CONFIG_TOPIC_MAX_KEY 255
#define CONFIG_TOPIC_MAX_KIND 31
/* Records handled per config_topic_poll() call at most (the rest waits for the next). */
#define CONFIG_TOPIC_POLL_MAX 1000

typedef struct config_topic config_topic_t;

/* record: the new record (borrowed: json_incref it to keep it). previous: the record held
 * before for this key, NULL when the key is new (a rename is a record whose "name" differs
 * from previous's). */
typedef void (*config_topic_upsert_fn)(void *owner, const char *kind, const char *id,
                                       json_t *record, json_t *previous);
/* previous: the last record held for the key (borrowed), so the owner knows what it had
 * applied under it (e.g. the feed name; a tombstone carries none). */
typedef void (*config_topic_delete_fn)(void *owner, const char *kind, const char *id,
                                       json_t *previous);
/* The initial load is complete; keys: how many keys were handed to on_upsert before. */
typedef void (*config_topic_loaded_fn)(void *owner, size_t keys);
/* The applied state moved (borrowed, build with config_topic_applied_state):
 * {"topic":T,"kinds":[...],"offsets":[next offset of partition 0, 1, ...],"applied_ms":W}
 * where applied_ms is the wall-clock time of this mark. */
typedef void (*config_topic_applied_fn)(void *owner, json_t *state);

typedef struct config_topic_opts {
    const char *brokers;   /* NULL: an offline follower (config_topic_apply only, for tests) */
    const char *topic;     /* NULL: "ndd.config" */
    const char *client_id; /* NULL: "ndd-config-follower" */
    /* Kinds of interest ("feed", "filter", "source", "correlation"); others are skipped
     * without parsing. NULL/0: every kind. Copied. */
    const char *const *kinds;
    size_t n_kinds;
    size_t max_keys;         /* 0: CONFIG_TOPIC_DEFAULT_MAX_KEYS */
    size_t max_record_bytes; /* 0: CONFIG_TOPIC_DEFAULT_MAX_RECORD */
    int refresh_ms;          /* partition discovery period; 0: CONFIG_TOPIC_DEFAULT_REFRESH_MS */
    /* kafka.* pass-through (security settings...). group.id, enable.auto.commit,
     * enable.auto.offset.store and enable.partition.eof are forced: see the file comment. */
    const kafka_prop_t *props;
    size_t n_props;
    config_topic_upsert_fn on_upsert;   /* may be NULL */
    config_topic_delete_fn on_delete;   /* may be NULL */
    config_topic_loaded_fn on_loaded;   /* may be NULL */
    config_topic_applied_fn on_applied; /* may be NULL */
    /* false: a change counts as applied when its callback returned (end of the poll); true:
     * when the owner calls config_topic_mark_applied. */
    bool defer_applied;
    void *owner;
    metrics_registry_t *metrics; /* NULL: metrics_default_registry() */
} config_topic_opts_t;

/* What one record did (config_topic_apply's result; the metric's "result" label). */
typedef enum config_topic_result {
    CONFIG_TOPIC_UPSERT = 0, /* new or changed: held (and on_upsert once loaded) */
    CONFIG_TOPIC_DELETE,     /* tombstone of a held key: removed (and on_delete once loaded) */
    CONFIG_TOPIC_UNCHANGED,  /* same content as held, or tombstone of a key not held */
    CONFIG_TOPIC_IGNORED,    /* a kind not of interest */
    CONFIG_TOPIC_TOO_LARGE,  /* value over max_record_bytes: skipped */
    CONFIG_TOPIC_MAX_KEYS,   /* a new key while max_keys are held: skipped */
    CONFIG_TOPIC_INVALID,    /* bad key or record: skipped */
    CONFIG_TOPIC_RESULT_COUNT
} config_topic_result_t;

typedef struct config_topic_stats {
    uint64_t results[CONFIG_TOPIC_RESULT_COUNT]; /* records by result */
    uint64_t errors;                             /* consumer errors reported by librdkafka */
    size_t keys;                                 /* keys held */
    uint64_t changes_applied; /* live changes applied and timed (the histogram's count) */
    uint64_t changes_untimed; /* live changes applied without timing (see the file comment) */
    int64_t applied_ms;       /* wall clock of the last mark that moved the offsets; 0: none */
    int partitions;           /* partitions assigned */
    bool loaded;
} config_topic_stats_t;

/* ---- functions ------------------------------------------------------------------------ */

/* Creates the follower and starts reading (partition discovery begins at once on the
 * internal thread). NULL with err on a bad option or property. */
config_topic_t *config_topic_new(const config_topic_opts_t *opts, char *err, size_t errlen);
/* Stops the discovery thread, closes the consumer, frees the state. NULL is a no-op. */
void config_topic_free(config_topic_t *ft);

/* Handles what is queued: waits up to timeout_ms for the first event, then takes the rest
 * without waiting, at most CONFIG_TOPIC_POLL_MAX records. Callbacks run inside. Returns the
 * number of records handled. Not reentrant: never call it from a callback. */
int config_topic_poll(config_topic_t *ft, int timeout_ms);
/* An eventfd, readable when config_topic_poll(ft, 0) has work; level semantics are kept by
 * the follower (it re-arms the fd when a poll stops at its limit). For libevent:
 *   event_new(base, config_topic_fd(ft), EV_READ | EV_PERSIST, cb_calling_poll_0, ft)
 * -1 for an offline follower. */
int config_topic_fd(const config_topic_t *ft);

/* True once the initial load is complete (on_loaded has run). */
bool config_topic_loaded(const config_topic_t *ft);

/* Every held record, in topic order. Stops early and returns non-zero when cb does. */
int config_topic_foreach(const config_topic_t *ft,
                         int (*cb)(void *arg, const char *kind, const char *id, json_t *record),
                         void *arg);
config_topic_stats_t config_topic_stats(const config_topic_t *ft);

/* The state machine behind config_topic_poll, for offline followers and tests: applies one
 * record (value NULL = tombstone) read at partition/offset (for log lines). */
config_topic_result_t config_topic_apply(config_topic_t *ft, const void *key, size_t key_len,
                                         const void *value, size_t value_len, int32_t partition,
                                         int64_t offset);
/* Same, with the record's timestamp (wall-clock ms of the admin's publish; <= 0: unknown,
 * the change is applied but not timed). */
config_topic_result_t config_topic_apply_timed(config_topic_t *ft, const void *key, size_t key_len,
                                               const void *value, size_t value_len,
                                               int32_t partition, int64_t offset, int64_t ts_ms);
/* Every change handled so far is applied (the owner resolved its configuration): observes
 * their propagation times and calls on_applied when the offsets moved. Cheap when nothing
 * moved. Before the initial load completes it does nothing. */
void config_topic_mark_applied(config_topic_t *ft);
/* Marks the initial load complete: on_upsert for every held key, then on_loaded. Called by
 * config_topic_poll when every partition reached its end; offline followers call it
 * themselves. A second call does nothing. */
void config_topic_finish_load(config_topic_t *ft);

/* Splits "<kind>/<id>" (kind [a-z][a-z0-9_-]*, at most CONFIG_TOPIC_MAX_KIND bytes; id
 * non-empty, no control characters; whole key at most CONFIG_TOPIC_MAX_KEY bytes) into
 * NUL-terminated kind and id. 0, or -1 when the key is not of that shape. */
int config_topic_parse_key(const void *key, size_t key_len, char *kind, size_t kind_size, char *id,
                           size_t id_size);
/* Parses and checks a record value for kind/id: a JSON object (duplicate keys refused) with
 * "kind" and "id" equal to the key's and a "spec" object. Returns the record (new reference)
 * or NULL with the reason in err. */
json_t *config_topic_parse_record(const char *kind, const char *id, const void *value,
                                  size_t value_len, char *err, size_t errlen);

#endif
