/* Helpers for integration tests against the real broker (any helper's tests may use them).
 *
 * The broker address comes from NDD_TEST_KAFKA (host:port); ktu_brokers() ends the test
 * process with a clear message when it is unset, so such a test fails rather than skips.
 * Names from ktu_unique_name() carry the pid and a random suffix: tests share one broker
 * with other tests and with a sanitizer build of themselves running at the same time. */
#ifndef NDD_KAFKA_TESTUTIL_H
#define NDD_KAFKA_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <librdkafka/rdkafka.h>

/* A consumed record, copied out of librdkafka (for assertions after the consumer is gone). */
typedef struct ktu_header {
    char *name;
    char *value; /* NUL-terminated copy; value_len excludes the NUL; NULL for a null value */
    size_t value_len;
} ktu_header_t;

typedef struct ktu_record {
    char *topic;
    int32_t partition;
    int64_t offset;
    char *key; /* NUL-terminated copies; NULL when the record had none */
    size_t key_len;
    char *value;
    size_t value_len;
    size_t n_headers;
    ktu_header_t *headers;
    bool framed; /* a copy in the frame form, unfolded: key, value and headers its record's */
} ktu_record_t;

typedef struct ktu_records {
    ktu_record_t *v;
    size_t n, cap;
} ktu_records_t;

/* One copy to topic (MAIN) as ndd-aggregation writes it: with NDD_TEST_MAIN_FORMAT=frame in
 * the frame form (docs/message-format.md), else as ktu_produce with these headers. */
int ktu_produce_copy(rd_kafka_t *p, const char *topic, const char *key, const char *body,
                     const char *const *headers, size_t n_headers);
/* Called for each consumed message; return false to stop consuming early. */
typedef bool (*ktu_consume_cb_t)(void *owner, const rd_kafka_message_t *m);

/* ---- broker and names ---- */

/* NDD_TEST_KAFKA, or exit(1) with a message saying how to set it. */
const char *ktu_brokers(void);
/* "<prefix>-<pid>-<random hex>" into out. Returns out. */
char *ktu_unique_name(const char *prefix, char *out, size_t out_size);
/* Creates the topic (partitions, replication 1) and waits until it is usable. 0 or -1. */
int ktu_create_topic(const char *topic, int partitions);
/* Same with topic configs as "key=value" strings, n of them. */
int ktu_create_topic_cfg(const char *topic, int partitions, const char *const *configs, size_t n);
/* Best effort, for cleanup. */
void ktu_delete_topic(const char *topic);

/* ---- producing ---- */

/* An idempotent producer on ktu_brokers() (extra props "k=v", may be NULL/0). */
rd_kafka_t *ktu_producer_new(const char *const *props, size_t n_props);
/* Produces one record and keeps it queued (no flush). headers: name/value pairs as
 * alternating strings, n_headers pairs. partition -1: by key. 0 or -1 (logged). */
int ktu_produce(rd_kafka_t *p, const char *topic, int32_t partition, const void *key,
                size_t key_len, const void *value, size_t value_len, const char *const *headers,
                size_t n_headers);
/* Flushes; returns 0 when every queued record was acknowledged within timeout_ms. */
int ktu_flush(rd_kafka_t *p, int timeout_ms);
/* n records with key "<key_prefix><i % n_keys>" and value "<value_prefix><i>" on topic, by
 * key; flushed. Returns 0 or -1. */
int ktu_produce_n(const char *topic, size_t n, const char *key_prefix, size_t n_keys,
                  const char *value_prefix);

/* ---- consuming ---- */

/* Reads topic from the beginning of every partition (assign, no group membership and no
 * commit: nothing is left behind on the broker) until `want` messages were seen, cb returned
 * false, or timeout_ms passed with no progress toward want. Returns the number of messages
 * seen. */
size_t ktu_consume(const char *topic, size_t want, int timeout_ms, ktu_consume_cb_t cb,
                   void *owner);
/* Same, collecting copies into out (which the caller frees with ktu_records_free). */
size_t ktu_consume_records(const char *topic, size_t want, int timeout_ms, ktu_records_t *out);
void ktu_records_free(ktu_records_t *r);
/* Value of the first header called name in r (NULL when absent); *len gets its length. */
const char *ktu_record_header(const ktu_record_t *r, const char *name, size_t *len);
/* Value of the first header called name in a consumed message, as a NUL-terminated copy in
 * buf (truncated to buf_size); false when absent. */
bool ktu_msg_header(const rd_kafka_message_t *m, const char *name, char *buf, size_t buf_size);
/* Total number of records in topic (sum over partitions of high - low watermark). */
int64_t ktu_topic_record_count(const char *topic, int timeout_ms);

/* ---- child processes (daemons under test) ---- */

/* Starts argv[0] with argv (NULL-terminated), stdout+stderr appended to log_path (may be
 * NULL: inherit). Extra environment "K=V" strings in env (NULL-terminated, may be NULL).
 * The child is killed (SIGKILL) if the test process dies first. Returns the pid or -1. */
pid_t ktu_spawn(char *const argv[], char *const env[], const char *log_path);
/* Sends sig to pid and waits for it up to timeout_ms; returns the wait status, or -1 when it
 * did not exit in time (it is then killed with SIGKILL and reaped). */
int ktu_stop(pid_t pid, int sig, int timeout_ms);
/* True while pid has not exited (reaps it when it has, *status gets the wait status). */
bool ktu_alive(pid_t pid, int *status);

/* ---- time ---- */
int64_t ktu_now_ms(void);
void ktu_sleep_ms(int ms);

#endif
