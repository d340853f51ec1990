/* Helpers for ndd-correlation integration tests: unique topics, the daemon as a child process
 * (started by path under NDD_BINARY_DIR, stopped by pid), transactions produced with known
 * timestamps, and the XDR topic read back as parsed xDRs. */
#ifndef NDD_CORR_TESTUTIL_H
#define NDD_CORR_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <librdkafka/rdkafka.h>

#include "codec-t.h"

/* Offsets of each copy's @timestamp-us from the transaction's start, by codec_trigger_t:
 * rx-request 0, tx-request 180, rx-response 2310, tx-response 2420 µs. So a complete proxy
 * transaction has latency rx 2420 and tx 2130, an endpoint one rx 2420. */
extern const int64_t ctu_ts_offset[CODEC_TRIGGER__COUNT];
#define CTU_LAT_RX 2420
#define CTU_LAT_TX 2130
#define CTU_NONE INT64_MIN

typedef struct corr_env {
    char main[96], xdr[96], dlq[96], group[96];
    /* Control path topics; "" (the default): --config-topic= / --events-topic= (off), so a
     * test never follows the shared ndd.config. Set with corr_env_control. */
    char config[112], events[112];
    char dir[256];
    char log_path[320], port_file[320];
    pid_t pid;
} corr_env_t;

/* Unique MAIN / XDR (parts partitions each) and dead-letter (1) topics and group, a temp dir.
 * 0 or -1. */
int corr_env_init(corr_env_t *e, const char *tag, int parts);
/* Unique configuration and events topics (1 partition each; the config one compacted) for
 * the daemon started next. 0 or -1. */
int corr_env_control(corr_env_t *e);
/* Kills the daemon if still running (SIGKILL), deletes the topics and the temp dir. */
void corr_env_cleanup(corr_env_t *e);

/* The environment of the running test and a second daemon it may have started: the
 * teardown kills the daemon(s) and deletes the topics even when an assertion ended the test
 * early. A test sets corr_test_env when its environment exists and NULL after its own
 * cleanup. */
extern corr_env_t *corr_test_env;
extern pid_t corr_test_extra_pid;
/* cmocka teardown: kills corr_test_extra_pid (SIGKILL) and cleans corr_test_env up. */
int corr_test_teardown(void **state);
/* Starts ndd-correlation on e's topics (short session timeout, HTTP on an ephemeral port
 * written to e->port_file) plus extra "--flag=value" arguments (NULL-terminated, may be
 * NULL). Log appended to e->log_path. Returns the pid or -1. */
pid_t corr_start(corr_env_t *e, const char *const *extra);
/* Stops the daemon with SIGTERM (20 s at most): true when it drained and exited 0. */
bool corr_stop_clean(corr_env_t *e);
/* The daemon's HTTP port once it wrote it (waits up to timeout_ms); 0 on timeout. */
uint16_t corr_http_port(const corr_env_t *e, int timeout_ms);
/* Sum of the /metrics samples whose line starts with `series` (a metric name, optionally
 * followed by a label prefix such as `name{nf_type="SCP"`), -1 when unreachable. */
double corr_metric(uint16_t port, const char *series);
/* True once the daemon's log holds needle (waits up to timeout_ms). */
bool corr_log_wait(const corr_env_t *e, const char *needle, int timeout_ms);

/* Produces the copies of one transaction: correlation id `id` (key and @correlation-id),
 * @nf-type nf, @timestamp-us = ts0 + ctu_ts_offset[trigger], the triggers in the given order.
 * Requests carry GET /nudm-sdm/v2/imsi-208930000000001/am-data, responses :status `status`
 * and a small JSON body. Not flushed. 0 or -1. */
int corr_produce_txn(rd_kafka_t *p, const char *topic, const char *id, const char *nf, int64_t ts0,
                     const codec_trigger_t *order, size_t n, int status);

/* One xDR read back from the XDR topic (JSON). Absent / null int fields are CTU_NONE. */
typedef struct corr_xdr {
    char key[160], id[160], nf[16], completion[16], service[64], operation[64], supi[64];
    int status;      /* 0 when null */
    uint8_t missing; /* bit (1 << codec_trigger_t) per name in "missing" */
    int64_t ts[CODEC_TRIGGER__COUNT];
    int64_t lat_rx, lat_tx;
    int64_t partition, first_offset;
    int64_t create_ms; /* the XDR record's timestamp (producer CreateTime, wall clock ms) */
    bool parsed;       /* false when the value was not an xDR object */
} corr_xdr_t;

typedef struct corr_xdrs {
    corr_xdr_t *v;
    size_t n, cap;
} corr_xdrs_t;

/* Reads the XDR topic from the beginning until `want` records were seen or timeout_ms passed
 * without progress; parses each. Returns how many were read. Free with corr_xdrs_free. */
size_t corr_read_xdrs(const char *topic, size_t want, int timeout_ms, corr_xdrs_t *out);
void corr_xdrs_free(corr_xdrs_t *x);
/* Number of the transaction in a correlation id "<prefix><n>" (the digits after the last
 * '-'), or -1. */
long corr_txn_number(const char *id);

#endif
