/* Helpers for the adapter's tests (transports, endpoints, feeds, ndd-adapter end to end):
 * child processes (nghttpd, openssl s_server, ndd-sink, ndd-adapter) started and killed by
 * PID, free ports from a range, waiting for a port, and running an event loop until a
 * condition holds or a deadline passes (no fixed sleeps). */
#ifndef NDD_ADAPTER_TESTUTIL_H
#define NDD_ADAPTER_TESTUTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct event_base;

/* fork+exec argv (NULL-terminated); stdout and stderr appended to log_path (NULL: inherit).
 * Returns the pid or -1. The child dies with the test (PR_SET_PDEATHSIG). */
pid_t atu_spawn(char *const argv[], const char *log_path);
/* Sends sig and reaps the child (waits up to 5 s, then SIGKILL). */
void atu_stop(pid_t pid, int sig);
/* A port in [lo, hi] that was free on 127.0.0.1 a moment ago (random start, then scan),
 * never one this process was given before. */
int atu_free_port(int lo, int hi);
/* A listening TCP socket on 127.0.0.1:port that the test accepts on (or never does): its fd,
 * or -1. */
int atu_listen_loopback(int port);
/* true once a TCP connect to 127.0.0.1:port succeeds, false after timeout_ms. */
bool atu_wait_port(int port, int timeout_ms);
/* Runs the loop until cond(arg) is true (checked every ~5 ms and after each event) or
 * timeout_ms passed; returns cond's final value. */
bool atu_run_until(struct event_base *base, bool (*cond)(void *), void *arg, int timeout_ms);
/* Monotonic milliseconds. */
uint64_t atu_now_ms(void);
/* rm -rf of a test's temporary directory (best effort). */
void atu_remove_tree(const char *dir);
/* A test file's scratch folder, /tmp/ndd-NAME.XXXXXX (mkdtemp's template), for its logs and
 * feeds files: 0, or -1. atu_scratch_remove deletes it unless NDD_TEST_KEEP_LOGS keeps it. */
int atu_scratch_make(char *dir, size_t size, const char *name);
void atu_scratch_remove(const char *dir);
/* Whole file into a NUL-terminated heap string (NULL when unreadable). */
char *atu_read_file(const char *path);

/* ---- recording endpoints run by the test itself (a thread with its own loop) ----
 * They record which @seq values arrived (JSON envelope: metadata.seq; frames: the @seq
 * header), answer as scripted, and are used where a fault must be scripted precisely;
 * nghttpd and ndd-sink cover the "server that is not ours" side. */
#ifndef NDD_ATU_SRV_DEFINED
#define NDD_ATU_SRV_DEFINED
#include <openssl/ssl.h>
#include <stddef.h>
typedef struct atu_srv atu_srv_t;
typedef enum atu_srv_kind { ATU_SRV_H2 = 0, ATU_SRV_FRAME = 1 } atu_srv_kind_t;
/* Listens on 127.0.0.1:port (h2c / plain frames when ssl is NULL, else TLS with it). */
atu_srv_t *atu_srv_start(atu_srv_kind_t kind, int port, SSL_CTX *ssl);
void atu_srv_stop(atu_srv_t *s);
/* The next `count` requests/frames are answered with `status` (HTTP status, or NACK status
 * for frames), with Retry-After retry_after_s when > 0; then 200/ACK again. count -1:
 * forever. */
void atu_srv_script(atu_srv_t *s, int status, long count, int retry_after_s);
/* Messages recorded with a 2xx/ACK answer: total (duplicates included) and distinct @seq. */
size_t atu_srv_total(atu_srv_t *s);
size_t atu_srv_distinct(atu_srv_t *s);
/* true when every seq in [from, to) was recorded. */
bool atu_srv_has_range(atu_srv_t *s, uint64_t from, uint64_t to);
/* Requests/frames answered with a non-success status. */
size_t atu_srv_rejected(atu_srv_t *s);
#endif

/* ---- Kafka side and the daemon ---- */
/* Produces n valid NF copies (docs/message-format.md) with @seq = first..first+n-1, keys
 * spread over 64 correlation ids, JSON bodies of about body_size bytes, @timestamp-us now.
 * Flushed. 0 or -1. */
int atu_produce_copies(const char *topic, uint64_t first, size_t n, size_t body_size);
/* Every partition of topic has a committed offset of group equal to its end offset. */
bool atu_group_caught_up(const char *topic, const char *group, int timeout_ms);
/* Starts NDD_BINARY_DIR/adapter/ndd-adapter on the test broker with feeds_file; extra
 * arguments (NULL-terminated) appended. Waits until its metrics port answers. */
pid_t atu_start_adapter(const char *feeds_file, int metrics_port, const char *log_path,
                        const char *const *extra);
/* Writes text to path (replacing it atomically with a rename). 0 or -1. */
int atu_write_file(const char *path, const char *text);
/* Occurrences of needle in the file at path (0 when unreadable). */
size_t atu_count_in_file(const char *path, const char *needle);
/* true when the recorder saw seq. */
bool atu_srv_has(atu_srv_t *s, uint64_t seq);

#endif
