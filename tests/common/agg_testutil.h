/* Helpers for ndd-aggregation integration tests: unique topics, the daemon as a child
 * process (started by path under NDD_BINARY_DIR, stopped by pid), and NF copies built for
 * loss / order / duplicate checks (each carries its number in @seq). */
#ifndef NDD_AGG_TESTUTIL_H
#define NDD_AGG_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <librdkafka/rdkafka.h>

typedef struct agg_env {
    char in[96], main[96], dlq[96], group[96];
    char dir[256];         /* private temp dir: logs, port files, filter files */
    char log_path[2][320]; /* one per replica */
    pid_t pid[2];
} agg_env_t;

/* Unique topics (in: in_parts partitions with a 4 MiB record limit, main: main_parts, dlq: 1)
 * and group; a temp dir. 0 or -1. */
int agg_env_init(agg_env_t *e, const char *tag, int in_parts, int main_parts);
/* Stops any replica still running (SIGKILL), deletes the topics and the temp dir. */
void agg_env_cleanup(agg_env_t *e);

/* Starts replica `slot` (0 or 1) of ndd-aggregation on e's topics with test-friendly
 * settings (short session timeout), plus extra "--flag=value" arguments (NULL-terminated
 * list, may be NULL). Its log goes to e->log_path[slot] (appended). Returns the pid or -1. */
pid_t agg_start(agg_env_t *e, int slot, const char *const *extra);
/* Stops replica `slot` with SIGTERM (30 s at most): true when it drained and exited 0. */
bool agg_stop_clean(agg_env_t *e, int slot);
/* True once the replica's log holds needle (waits up to timeout_ms). */
bool agg_log_wait(const agg_env_t *e, int slot, const char *needle, int timeout_ms);
/* Number of times needle occurs in the replica's log. */
int agg_log_count(const agg_env_t *e, int slot, const char *needle);

/* Produces copies number first..first+n-1 to topic: key "corr-<i % n_keys>", @seq i,
 * header x-kind "a" for even i and "b" for odd, a body of body_len bytes starting with
 * "body-<i>;". Flushed. 0 or -1. */
int agg_produce_copies(rd_kafka_t *p, const char *topic, uint64_t first, size_t n, size_t n_keys,
                       size_t body_len);

/* The copies read back from MAIN by number (@seq below n): how many numbers were seen,
 * how many records repeated one, and how many had no number or one out of range. */
typedef struct agg_tally {
    unsigned char *seen;
    size_t n;
    size_t distinct, duplicates, foreign;
} agg_tally_t;
/* 0, or -1 when out of memory. */
int agg_tally_init(agg_tally_t *t, size_t n);
/* Reads want records of topic (timeout_ms at most) into t; returns how many were read. */
size_t agg_tally_read(agg_tally_t *t, const char *topic, size_t want, int timeout_ms);
void agg_tally_free(agg_tally_t *t);

/* Waits until topic holds at least want records (watermarks); returns the last count. */
int64_t agg_wait_count(const char *topic, int64_t want, int timeout_ms);

/* Committed offsets of group on topic, summed over partitions (-1 on error). */
int64_t agg_committed_sum(const char *group, const char *topic, int n_parts);

#endif
