/* ndd-correlation: pairs the copies on MAIN into xDRs on the XDR topic (docs/correlation.md).
 *
 *   ndd-correlation [--bootstrap HOST:PORT] [--main-topic MAIN] [--xdr-topic XDR] ...
 *
 * main reads the settings, creates the XDR and dead-letter topics when asked, starts the
 * /metrics server on its own thread and runs the worker loop until SIGTERM/SIGINT. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "codec.h"
#include "config.h"
#include "corr_control.h"
#include "corr_worker.h"
#include "daemon.h"
#include "kafka.h"
#include "log.h"
#include "metrics.h"

static const config_spec_t corr_specs[] = {
    {"bootstrap", CONFIG_STRING, NULL,
     "Kafka bootstrap servers (else env NDD_KAFKA, else kafka.bootstrap.servers)", 0},
    {"main-topic", CONFIG_STRING, "MAIN", "topic of the copies to correlate", 0},
    {"xdr-topic", CONFIG_STRING, "XDR", "topic the xDRs go to (key: correlation id)", 0},
    {"dlq-topic", CONFIG_STRING, "ndd.dlq.correlation", "dead-letter topic for refused copies", 0},
    {"group", CONFIG_STRING, "ndd-correlation", "consumer group on MAIN", 0},
    {"client-id", CONFIG_STRING, "ndd-correlation", "Kafka client id", 0},
    {"create-topics", CONFIG_BOOL, "true",
     "create MAIN, the XDR topic and the dead-letter topic if missing", 0},
    {"main-partitions", CONFIG_INT, "6", "partitions of MAIN when it has to be created", 0},
    {"xdr-partitions", CONFIG_INT, "0",
     "partitions of the XDR topic when created (0: as many as MAIN)", 0},
    {"dlq-partitions", CONFIG_INT, "1", "partitions of the dead-letter topic when created", 0},
    {"timeout", CONFIG_DURATION_MS, "5s",
     "a transaction still missing copies this long after its first copy is emitted as timeout", 0},
    {"max-open", CONFIG_INT, "100000",
     "open transactions per partition; beyond it the oldest is emitted as evicted", 0},
    {"max-partitions", CONFIG_INT, "4096", "MAIN partition ids accepted (0..N-1)", 0},
    {"text-area", CONFIG_BYTES, "320",
     "bytes of text kept per open transaction (ids, FQDNs, path); 272..4096", 0},
    {"preallocate", CONFIG_BOOL, "false",
     "allocate max-open slots when a partition is first seen (no growth later)", 0},
    {"proxy-types", CONFIG_LIST, "SCP,SEPP",
     "NF types whose transactions need all four copies (the others: one side, two copies)", 0},
    {"subscriber-from-path", CONFIG_BOOL, "true", "look for SUPI/GPSI in :path", 0},
    {"subscriber-from-body", CONFIG_BOOL, "true", "look for SUPI/GPSI in JSON bodies", 0},
    {"subscriber-body-scan", CONFIG_BYTES, "4096", "bytes of a body searched for SUPI/GPSI", 0},
    {"xdr-format", CONFIG_STRING, "json", "value of the XDR records: json or binary", 0},
    {"revoke-mode", CONFIG_STRING, "handover",
     "open transactions of a revoked partition: handover (next owner rebuilds them) or emit "
     "(incomplete xDRs now)",
     0},
    {"shutdown-mode", CONFIG_STRING, "handover",
     "open transactions at a clean stop: handover (next start rebuilds them) or emit", 0},
    {"batch", CONFIG_INT, "1000", "copies taken per consumer poll", 0},
    {"max-unacked", CONFIG_INT, "50000",
     "xDR and dead-letter records awaiting acknowledgement before consumption pauses", 0},
    {"checkpoint-interval", CONFIG_DURATION_MS, "100ms",
     "how often safe offsets are recorded (they are stored once acknowledged)", 0},
    {"max-body", CONFIG_BYTES, "1MiB", "largest copy body accepted (larger: DLQ, oversized)", 0},
    {"cooperative", CONFIG_BOOL, "true",
     "cooperative-sticky rebalancing (only moved partitions rebuild state) instead of eager", 0},
    {"shutdown-timeout", CONFIG_DURATION_MS, "10s", "how long a stop waits for acknowledgements",
     0},
    {"revoke-flush", CONFIG_DURATION_MS, "2s",
     "on a rebalance, how long acknowledgements are awaited before partitions go", 0},
    {"config-topic", CONFIG_STRING, "ndd.config",
     "configuration topic to follow (kind \"correlation\"); empty: off", 0},
    {"events-topic", CONFIG_STRING, "ndd.events", "topic of heartbeats and alarms; empty: off", 0},
    {"instance", CONFIG_STRING, NULL,
     "instance name in heartbeats (stable across restarts, unique; default: host name)", 0},
    {"correlation-name", CONFIG_STRING, NULL,
     "name of the correlation record to apply (default: the first whose source_topic is "
     "absent or the MAIN topic)",
     0},
    {"heartbeat-interval", CONFIG_DURATION_MS, "5s", "period of the heartbeats", 0},
    {"produce-alarm-after", CONFIG_DURATION_MS, "10s",
     "xDRs unacknowledged this long raise the xdr-produce-failing alarm", 0},
    DAEMON_SPECS_COMMON("9104"),
};
#define CORR_NSPECS (sizeof(corr_specs) / sizeof(corr_specs[0]))

static int corr_create_topics(const char *brokers, const char *main_topic, int main_parts,
                              const char *xdr_topic, int xdr_parts, const char *dlq_topic,
                              int dlq_parts)
{
    int n = kafka_admin_topic_partitions(brokers, main_topic, 5000);
    if (n < 1) {
        if (kafka_admin_create_topic(brokers, main_topic, main_parts, 1, NULL, 0, 15000))
            return -1;
        n = main_parts;
    }
    if (kafka_admin_create_topic(brokers, xdr_topic, xdr_parts > 0 ? xdr_parts : n, 1, NULL, 0,
                                 15000) ||
        kafka_admin_create_topic(brokers, dlq_topic, dlq_parts > 0 ? dlq_parts : 1, 1, NULL, 0,
                                 15000))
        return -1;
    return 0;
}

static int corr_wait_loaded(void *ctl, int timeout_ms)
{
    return corr_control_wait_loaded(ctl, timeout_ms);
}

static int corr_parse_mode(const char *s, correlate_drain_t *out)
{
    if (strcasecmp(s, "handover") == 0)
        *out = CORRELATE_DRAIN_HANDOVER;
    else if (strcasecmp(s, "emit") == 0)
        *out = CORRELATE_DRAIN_EMIT;
    else
        return -1;
    return 0;
}

/* Fills the engine settings; -1 with a message on stderr when one is out of range. */
static int corr_engine_config(const config_t *cfg, correlate_config_t *ec)
{
    int64_t max_open = config_get_int(cfg, "max-open");
    int64_t max_parts = config_get_int(cfg, "max-partitions");
    uint64_t area = config_get_bytes(cfg, "text-area");
    int64_t timeout = config_get_duration_ms(cfg, "timeout");
    uint64_t scan = config_get_bytes(cfg, "subscriber-body-scan");
    if (max_open < 1 || max_open > 100000000 || max_parts < 1 || max_parts > 1048576 ||
        timeout < 1 || scan > (1u << 20)) {
        fprintf(stderr, "ndd-correlation: --max-open must be 1..100000000, --max-partitions "
                        "1..1048576, --timeout positive, --subscriber-body-scan at most 1MiB\n");
        return -1;
    }
    ec->max_open = (uint32_t)max_open;
    ec->max_partitions = (uint32_t)max_parts;
    ec->str_area = area > 65536 ? 65536 : (uint32_t)area; /* the engine refuses > 4096 */
    ec->timeout_us = timeout * 1000;
    ec->preallocate = config_get_bool(cfg, "preallocate");
    ec->subscriber_set = true;
    ec->subscriber.from_path = config_get_bool(cfg, "subscriber-from-path");
    ec->subscriber.from_body = config_get_bool(cfg, "subscriber-from-body");
    ec->subscriber.body_scan = (size_t)scan;
    ec->expect_set = true;
    for (int i = 0; i < CODEC_NF__COUNT; i++)
        ec->expect[i] = CORRELATE_EXPECT_ENDPOINT;
    size_t n = 0;
    const char *const *types = config_get_list(cfg, "proxy-types", &n);
    for (size_t i = 0; i < n; i++) {
        codec_nf_t nf = codec_nf_parse(types[i], strlen(types[i]));
        if (nf == CODEC_NF_UNKNOWN) {
            fprintf(stderr, "ndd-correlation: --proxy-types: \"%s\" is not an NF type\n", types[i]);
            return -1;
        }
        ec->expect[nf] = CORRELATE_EXPECT_PROXY;
    }
    return 0;
}

int main(int argc, char **argv)
{
    /* librdkafka's fetch buffers are large and short-lived: keep them in the heap (reused)
     * instead of fresh mmap'd pages each time (same reasoning as ndd-aggregation). */
    daemon_heap_setup(false);
    daemon_t d;
    int rc = daemon_init(&d, "ndd-correlation", corr_specs, CORR_NSPECS, argc, argv);
    if (rc != DAEMON_CONTINUE) {
        daemon_free(&d);
        return rc;
    }
    config_t *cfg = d.cfg;
    const char *brokers = d.brokers;
    char err[1024];
    int64_t batch = config_get_int(cfg, "batch");
    int64_t max_unacked = config_get_int(cfg, "max-unacked");
    rc = 2;
    corr_worker_t *w = NULL;
    corr_control_t *ctl = NULL;
    codec_limits_t limits = {.max_body = (size_t)config_get_bytes(cfg, "max-body")};
    corr_config_t cc = {0};

    if (batch < 1 || batch > 100000 || max_unacked < 1 || max_unacked > 10000000) {
        fprintf(stderr, "ndd-correlation: --batch must be 1..100000 and --max-unacked "
                        "1..10000000\n");
        goto out;
    }
    if (codec_limits_set(&limits)) {
        fprintf(stderr, "ndd-correlation: --max-body is above the codec's ceiling\n");
        goto out;
    }
    if (corr_parse_mode(config_get_str(cfg, "revoke-mode"), &cc.revoke_mode) ||
        corr_parse_mode(config_get_str(cfg, "shutdown-mode"), &cc.shutdown_mode)) {
        fprintf(stderr, "ndd-correlation: --revoke-mode and --shutdown-mode are handover or "
                        "emit\n");
        goto out;
    }
    const char *fmt = config_get_str(cfg, "xdr-format");
    if (strcasecmp(fmt, "json") == 0)
        cc.format = CORR_FORMAT_JSON;
    else if (strcasecmp(fmt, "binary") == 0)
        cc.format = CORR_FORMAT_BINARY;
    else {
        fprintf(stderr, "ndd-correlation: --xdr-format: \"%s\" is not json or binary\n", fmt);
        goto out;
    }
    if (corr_engine_config(cfg, &cc.engine))
        goto out;

    metrics_registry_t *reg = d.metrics;
    if (daemon_start(&d, "starting: loading the configuration topic", false))
        goto out;

    /* The control path first: the record's settings are applied before the worker exists,
     * and /readyz stays not ready until the initial load is complete. */
    const char *main_topic = config_get_str(cfg, "main-topic");
    const char *xdr_topic = config_get_str(cfg, "xdr-topic");
    corr_control_opts_t ko = {.brokers = brokers,
                              .main_topic = main_topic,
                              .xdr_topic = xdr_topic,
                              .config_topic = config_get_str(cfg, "config-topic"),
                              .events_topic = config_get_str(cfg, "events-topic"),
                              .instance = config_get_str(cfg, "instance"),
                              .version = "0.1.0",
                              .name = config_get_str(cfg, "correlation-name"),
                              .heartbeat_ms = config_get_duration_ms(cfg, "heartbeat-interval"),
                              .produce_alarm_ms =
                                  config_get_duration_ms(cfg, "produce-alarm-after"),
                              .props = d.props,
                              .n_props = d.n_props,
                              .metrics = reg};
    ctl = corr_control_new(&ko, err, sizeof(err));
    if (!ctl) {
        fprintf(stderr, "ndd-correlation: control path: %s\n", err);
        goto out;
    }
    if (daemon_wait(&d, corr_wait_loaded, ctl, ko.config_topic)) {
        rc = 0;
        goto out;
    }
    corr_settings_t st;
    corr_control_settings(ctl, &st);
    /* Disabled: stay up (heartbeats, /healthz) without consuming until enabled or stopped. */
    if (!st.enabled) {
        log_warn("correlation: disabled by record \"%s\"; waiting for it to be enabled", st.name);
        daemon_set_ready(&d, false, "disabled by configuration");
        while (!*d.stop && !st.enabled) {
            corr_control_wait_loaded(ctl, 0);
            corr_control_tick(ctl);
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
            corr_control_settings(ctl, &st);
        }
        if (*d.stop) {
            rc = 0;
            goto out;
        }
    }
    if (st.source_topic_set)
        main_topic = st.source_topic;
    if (st.xdr_topic_set)
        xdr_topic = st.xdr_topic;
    if (st.max_open_set)
        cc.engine.max_open = (uint32_t)st.max_open;
    if (st.timeout_set)
        cc.engine.timeout_us = st.timeout_ms * 1000;
    if (st.extract_set && !st.extract_subscriber)
        cc.engine.subscriber.from_path = cc.engine.subscriber.from_body = false;
    /* What the worker runs, for the live comparison (restart-only fields). */
    corr_settings_t started = st;
    snprintf(started.source_topic, sizeof(started.source_topic), "%s", main_topic);
    snprintf(started.xdr_topic, sizeof(started.xdr_topic), "%s", xdr_topic);
    started.max_open = cc.engine.max_open;
    started.timeout_ms = config_get_duration_ms(cfg, "timeout"); /* a removed record's value */
    started.extract_subscriber = cc.engine.subscriber.from_path || cc.engine.subscriber.from_body;
    started.enabled = true;
    if (st.name[0])
        log_info("correlation: record \"%s\": MAIN %s, XDR %s, timeout %lld ms, max open %u, "
                 "subscriber extraction %s",
                 st.name, main_topic, xdr_topic, (long long)(cc.engine.timeout_us / 1000),
                 cc.engine.max_open, started.extract_subscriber ? "on" : "off");

    if (config_get_bool(cfg, "create-topics") &&
        corr_create_topics(brokers, main_topic, (int)config_get_int(cfg, "main-partitions"),
                           xdr_topic, (int)config_get_int(cfg, "xdr-partitions"),
                           config_get_str(cfg, "dlq-topic"),
                           (int)config_get_int(cfg, "dlq-partitions"))) {
        fprintf(stderr, "ndd-correlation: could not create the MAIN / XDR / dead-letter topics\n");
        goto out;
    }

    cc.brokers = brokers;
    cc.main_topic = main_topic;
    cc.xdr_topic = xdr_topic;
    cc.dlq_topic = config_get_str(cfg, "dlq-topic");
    cc.group = config_get_str(cfg, "group");
    cc.client_id = config_get_str(cfg, "client-id");
    cc.props = d.props;
    cc.n_props = d.n_props;
    cc.batch = (uint32_t)batch;
    cc.max_unacked = (uint32_t)max_unacked;
    cc.checkpoint_ms = (int)config_get_duration_ms(cfg, "checkpoint-interval");
    cc.cooperative = config_get_bool(cfg, "cooperative");
    cc.shutdown_timeout_ms = (int)config_get_duration_ms(cfg, "shutdown-timeout");
    cc.revoke_flush_ms = config_get_duration_ms(cfg, "revoke-flush") > 0
                             ? (int)config_get_duration_ms(cfg, "revoke-flush")
                             : -1;
    cc.metrics = reg;
    cc.on_tick = corr_control_tick;
    cc.tick_arg = ctl;
    w = corr_worker_new(&cc, err, sizeof(err));
    if (!w) {
        fprintf(stderr, "ndd-correlation: %s\n", err);
        goto out;
    }
    corr_control_attach(ctl, w, &started);
    daemon_set_ready(&d, true, NULL);
    rc = corr_worker_run(w, d.stop) == 0 ? 0 : 1;
    if (rc != 0)
        corr_control_report_fatal(ctl,
                                  "the worker stopped: an xDR or dead-letter record was "
                                  "refused by the broker (see its log)",
                                  5000);
out:
    corr_control_attach(ctl, NULL, NULL);
    corr_worker_free(w);
    corr_control_free(ctl, 2000);
    daemon_free(&d);
    return rc;
}
