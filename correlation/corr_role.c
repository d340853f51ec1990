/* The correlation role: pairs the copies on MAIN into xDRs on the XDR topic
 * (docs/correlation.md), as ndd-correlation runs it alone (main.c) and ndd beside the others.
 * The spec table, then the run: the control path loads the ndd.config record, the topics are
 * created when asked, and the worker runs until a stop. */
#include <stdio.h>

#include "corr_setup.h"
#include "daemon_role.h"
#include "log.h"

static corr_settings_map_t corr_standalone;
#define AT(f) CONFIG_AT(corr_settings_map_t, f), 0, 0
#define IN(f, lo, hi) CONFIG_AT(corr_settings_map_t, f), lo, hi
/* clang-format off */
static const config_spec_t corr_specs[] = {
    {"main-topic", CONFIG_STRING, "MAIN", "topic of the copies to correlate", 0, AT(main_topic)},
    {"xdr-topic", CONFIG_STRING, "XDR", "topic the xDRs go to (key: correlation id)", 0,
     AT(xdr_topic)},
    {"dlq-topic", CONFIG_STRING, "ndd.dlq.correlation", "dead-letter topic for refused copies",
     0, AT(dlq_topic)},
    {"group", CONFIG_STRING, "ndd-correlation", "consumer group on MAIN", 0, AT(group)},
    {"client-id", CONFIG_STRING, "ndd-correlation", "Kafka client id", 0, AT(client_id)},
    {"create-topics", CONFIG_BOOL, "true",
     "create MAIN, the XDR topic and the dead-letter topic if missing", 0, AT(create_topics)},
    {"main-partitions", CONFIG_INT, "6", "partitions of MAIN when it has to be created", 0,
     IN(main_partitions, 1, 100000)},
    {"xdr-partitions", CONFIG_INT, "0",
     "partitions of the XDR topic when created (0: as many as MAIN)", 0,
     IN(xdr_partitions, 0, 100000)},
    {"dlq-partitions", CONFIG_INT, "1", "partitions of the dead-letter topic when created", 0,
     IN(dlq_partitions, 1, 100000)},
    {"timeout", CONFIG_DURATION_MS, "5s", "a transaction still missing copies this long after "
     "its first copy is emitted as timeout", 0, IN(timeout_ms, 1, 600000)},
    {"max-open", CONFIG_INT, "100000", "open transactions per partition; beyond it the oldest is "
     "emitted as evicted", 0, IN(max_open, 1, 100000000)},
    {"max-partitions", CONFIG_INT, "4096", "MAIN partition ids accepted (0..N-1)", 0,
     IN(max_partitions, 1, 1048576)},
    {"text-area", CONFIG_BYTES, "320", "bytes of text kept per open transaction (ids, FQDNs, "
     "path)", 0, IN(text_area, 272, 4096)},
    {"preallocate", CONFIG_BOOL, "false", "allocate max-open slots when a partition is first seen "
     "(no growth later)", 0, AT(preallocate)},
    {"proxy-types", CONFIG_LIST, "SCP,SEPP", "NF types whose transactions need all four copies "
     "(the others: one side, two copies)", 0, AT(proxy_types)},
    {"subscriber-from-path", CONFIG_BOOL, "true", "look for SUPI/GPSI in :path", 0,
     AT(from_path)},
    {"subscriber-from-body", CONFIG_BOOL, "true", "look for SUPI/GPSI in JSON bodies", 0,
     AT(from_body)},
    {"subscriber-body-scan", CONFIG_BYTES, "4096", "bytes of a body searched for SUPI/GPSI", 0,
     IN(body_scan, 0, 1048576)},
    {"xdr-format", CONFIG_STRING, "json", "value of the XDR records: json or binary", 0,
     AT(xdr_format)},
    {"revoke-mode", CONFIG_STRING, "handover", "open transactions of a revoked partition: "
     "handover (next owner rebuilds them) or emit (incomplete xDRs now)", 0, AT(revoke_mode)},
    {"shutdown-mode", CONFIG_STRING, "handover",
     "open transactions at a clean stop: handover (next start rebuilds them) or emit", 0,
     AT(shutdown_mode)},
    {"batch", CONFIG_INT, "1000", "copies taken per consumer poll", 0, IN(batch, 1, 100000)},
    {"max-unacked", CONFIG_INT, "50000", "xDR and dead-letter records awaiting acknowledgement "
     "before consumption pauses", 0, IN(max_unacked, 1, 10000000)},
    {"checkpoint-interval", CONFIG_DURATION_MS, "100ms", "how often safe offsets are recorded "
     "(they are stored once acknowledged)", 0, IN(checkpoint_ms, 1, 60000)},
    {"max-body", CONFIG_BYTES, "1MiB", "largest copy body accepted (larger: DLQ, oversized)", 0,
     AT(max_body)},
    {"cooperative", CONFIG_BOOL, "true", "cooperative-sticky rebalancing (only moved partitions "
     "rebuild state) instead of eager", 0, AT(cooperative)},
    {"shutdown-timeout", CONFIG_DURATION_MS, "10s", "how long a stop waits for acknowledgements",
     0, IN(shutdown_timeout_ms, 1, 3600000)},
    {"revoke-flush", CONFIG_DURATION_MS, "2s", "on a rebalance, how long acknowledgements are "
     "awaited before partitions go (0: not at all)", 0, IN(revoke_flush_ms, 0, 3600000)},
    {"exactly-once", CONFIG_BOOL, "false", "xDRs, dead letters and the consumed offsets in one "
     "Kafka transaction; copies read again after a restart or an abort do not emit their "
     "completed xDRs again; false: at-least-once", 0, AT(exactly_once)},
    {"transaction-ms", CONFIG_DURATION_MS, "100ms", "with exactly-once, how often the open "
     "transaction is committed", 0, IN(transaction_ms, 1, 30000)},
    {"config-topic", CONFIG_STRING, "ndd.config",
     "configuration topic to follow (kind \"correlation\"); empty: off", 0, AT(config_topic)},
    {"events-topic", CONFIG_STRING, "ndd.events", "topic of heartbeats and alarms; empty: off", 0,
     AT(events_topic)},
    {"instance", CONFIG_STRING, NULL, "instance name in heartbeats (stable across restarts, "
     "unique; default: host name)", 0, AT(instance)},
    {"correlation-name", CONFIG_STRING, NULL, "name of the correlation record to apply (default: "
     "the first whose source_topic is absent or the MAIN topic)", 0, AT(correlation_name)},
    {"heartbeat-interval", CONFIG_DURATION_MS, "5s", "period of the heartbeats", 0,
     IN(heartbeat_ms, 100, 3600000)},
    {"produce-alarm-after", CONFIG_DURATION_MS, "10s",
     "xDRs unacknowledged this long raise the xdr-produce-failing alarm", 0,
     IN(produce_alarm_ms, 1, 86400000)},
    DAEMON_SPECS_COMMON(corr_settings_map_t, "9104"),
};
/* clang-format on */
static const daemon_def_t corr_def = {.name = "ndd-correlation",
                                      .specs = corr_specs,
                                      .n_specs = sizeof(corr_specs) / sizeof(corr_specs[0]),
                                      .settings = &corr_standalone,
                                      .check = corr_setup_check};

static int corr_role_run(daemon_t *d)
{
    const corr_settings_map_t *S = d->def->settings;
    char err[1024];
    int rc = 2;
    corr_run_t run = {.d = d};
    corr_config_t cc;
    corr_settings_t st, started;
    if (daemon_start(d, false))
        goto out;
    /* The control path first: the record's settings are applied before the worker exists. */
    corr_control_opts_t ko = corr_setup_control(d, S);
    if (!(run.ctl = corr_control_new(&ko, err, sizeof(err)))) {
        fprintf(stderr, "%s: control path: %s\n", d->name, err);
        goto out;
    }
    if (daemon_wait(d, worker_control_wait_loaded, corr_control_wc(run.ctl), S->config_topic) ||
        (corr_control_settings(run.ctl, &st), corr_setup_wait_enabled(d, run.ctl, &st))) {
        rc = 0;
        goto out;
    }
    daemon_hold(d, DAEMON_COND_CONFIG, true);
    corr_setup_worker(d, S, &st, &cc, &started);
    cc.tick_arg = &run;
    if (S->create_topics && corr_setup_create_topics(d, S, &cc)) {
        fprintf(stderr, "%s: could not create the MAIN / XDR / dead-letter topics\n", d->name);
        goto out;
    }
    if (!(run.w = corr_worker_new(&cc, err, sizeof(err)))) {
        fprintf(stderr, "%s: %s\n", d->name, err);
        goto out;
    }
    corr_control_attach(run.ctl, run.w, &started);
    rc = corr_worker_run(run.w, d->stop) == 0 ? 0 : 1;
    daemon_not_ready(d, "stopping");
    if (rc != 0)
        worker_control_report_fatal(corr_control_wc(run.ctl),
                                    "the worker stopped: an xDR or dead-letter record was "
                                    "refused by the broker (see its log)",
                                    5000);
out:
    corr_control_attach(run.ctl, NULL, NULL);
    corr_worker_free(run.w);
    corr_control_free(run.ctl, 2000);
    return rc;
}

/* librdkafka's fetch buffers are large and short-lived: kept in the heap (reused). */
const daemon_role_t corr_role = {.name = "correlation",
                                 .def = &corr_def,
                                 .settings_size = sizeof(corr_settings_map_t),
                                 .arena_max = 0,
                                 .run = corr_role_run};
