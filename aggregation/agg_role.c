/* The aggregation role: one NF type's worker (docs/aggregation.md), as ndd-aggregation runs it
 * alone (main.c) and ndd runs it beside the others (one instance per NF type).
 *
 * The spec table, then the run: the topics are created when asked, the control path follows
 * ndd.config until the configuration is loaded, and the worker runs until a stop (SIGHUP, or
 * ndd's reload, re-reads the ingress filter file). */
#include <stdio.h>

#include "agg_setup.h"
#include "daemon_role.h"
#include "log.h"

static agg_settings_t agg_standalone;
#define AT(f) CONFIG_AT(agg_settings_t, f), 0, 0
#define IN(f, lo, hi) CONFIG_AT(agg_settings_t, f), lo, hi
/* clang-format off */
static const config_spec_t agg_specs[] = {
    {"nf-type", CONFIG_STRING, NULL, "NF type this worker serves: SCP NRF SEPP BSF PCF NON_NF",
     CONFIG_F_REQUIRED, AT(nf_type)},
    {"topic", CONFIG_STRING, NULL, "NF topic to consume (default: the NF type)", 0, AT(topic)},
    {"group", CONFIG_STRING, NULL, "consumer group (default: ndd-agg-<nf-type>)", 0, AT(group)},
    {"main-topic", CONFIG_STRING, "MAIN", "topic the accepted copies go to", 0, AT(main_topic)},
    {"main-format", CONFIG_STRING, "headers", "form of the MAIN records: headers (every field a "
     "Kafka header, as consumed) or frame (the value one NDD frame holding key, fields and body)",
     0, AT(main_format)},
    {"dlq-topic", CONFIG_STRING, "ndd.dlq.aggregation", "dead-letter topic for refused copies", 0,
     AT(dlq_topic)},
    {"create-topics", CONFIG_BOOL, "true",
     "create the NF topic, MAIN and the dead-letter topic if missing", 0, AT(create_topics)},
    {"main-partitions", CONFIG_INT, "0", "partitions of MAIN (and of the NF topic) when created "
     "(0: as many as the NF topic, else 6)", 0, IN(main_partitions, 0, 100000)},
    {"dlq-partitions", CONFIG_INT, "1", "partitions of the dead-letter topic when created", 0,
     IN(dlq_partitions, 1, 100000)},
    {"filter-file", CONFIG_STRING, NULL, "ingress filter JSON (docs/filters.md); reloaded on "
     "SIGHUP or when the file changes", 0, AT(filter_file)},
    {"config-topic", CONFIG_STRING, "ndd.config",
     "compacted configuration topic to follow for the ingress filter (empty: off)", 0,
     AT(config_topic)},
    {"ingress-filter", CONFIG_STRING, NULL, "name of the ndd.config filter to apply when the "
     "NF's source names none (default: ingress-<nf-type>)", 0, AT(ingress_filter)},
    {"events-topic", CONFIG_STRING, "ndd.events", "topic of heartbeats and alarms (empty: off)",
     0, AT(events_topic)},
    {"instance", CONFIG_STRING, NULL, "instance name in heartbeats, stable and unique per worker "
     "(default: <host>-<nf-type>)", 0, AT(instance)},
    {"heartbeat-interval", CONFIG_DURATION_MS, "5s", "heartbeat period on the events topic", 0,
     IN(heartbeat_ms, 100, 3600000)},
    {"produce-alarm-after", CONFIG_DURATION_MS, "10s",
     "raise main-produce-failing when no acknowledgement came for this long", 0,
     IN(produce_alarm_ms, 1, 86400000)},
    {"filter-check-interval", CONFIG_DURATION_MS, "1s", "how often the filter file is checked",
     0, IN(filter_check_ms, 1, 3600000)},
    {"max-inflight", CONFIG_INT, "2500", "copies consumed but not yet acknowledged by Kafka", 0,
     IN(max_inflight, 1, 10000000)},
    {"batch", CONFIG_INT, "250", "copies taken per consumer poll", 0, IN(batch, 1, 100000)},
    {"max-body", CONFIG_BYTES, "1MiB", "largest copy body accepted (larger: DLQ, oversized)", 0,
     AT(max_body)},
    {"cooperative", CONFIG_BOOL, "false", "cooperative-sticky rebalancing instead of eager", 0,
     AT(cooperative)},
    {"shutdown-timeout", CONFIG_DURATION_MS, "10s", "how long a stop waits for acknowledgements",
     0, IN(shutdown_timeout_ms, 1, 3600000)},
    {"revoke-flush", CONFIG_DURATION_MS, "2s", "on a rebalance, how long acknowledgements of "
     "revoked partitions are awaited (0: not at all)", 0, IN(revoke_flush_ms, 0, 3600000)},
    {"exactly-once", CONFIG_BOOL, "false", "MAIN and dead-letter records and the consumed "
     "offsets in one Kafka transaction (read_committed readers see each copy once); false: "
     "at-least-once", 0, AT(exactly_once)},
    {"transaction-ms", CONFIG_DURATION_MS, "100ms", "with exactly-once, how often the open "
     "transaction is committed (what read_committed readers wait at most beyond the produce)",
     0, IN(transaction_ms, 1, 30000)},
    DAEMON_SPECS_COMMON(agg_settings_t, "9101"),
};
/* clang-format on */
static const daemon_def_t agg_def = {.name = "ndd-aggregation",
                                     .specs = agg_specs,
                                     .n_specs = sizeof(agg_specs) / sizeof(agg_specs[0]),
                                     .settings = &agg_standalone,
                                     .check = agg_setup_check};

static int agg_role_run(daemon_t *d)
{
    const agg_settings_t *S = d->def->settings;
    char err[1024];
    int rc = 2;
    agg_run_t run = {.d = d};
    filter_slot_t *slot = filter_slot_new(NULL);
    if (!slot || (S->create_topics && agg_setup_create_topics(d, S))) {
        fprintf(stderr, "%s: could not create the MAIN / dead-letter topics\n", d->name);
        goto out;
    }
    if (daemon_start(d, true))
        goto out;
    agg_control_opts_t co = agg_setup_control(d, S, slot);
    if (!(run.ctl = agg_control_new(&co, err, sizeof(err)))) {
        fprintf(stderr, "%s: %s\n", d->name, err);
        goto out;
    }
    /* The full configuration is applied before anything is consumed: a worker that started
     * without its ingress filter would let everything through. */
    if (daemon_wait(d, worker_control_wait_loaded, agg_control_wc(run.ctl), S->config_topic)) {
        rc = 0;
        goto out;
    }
    daemon_hold(d, DAEMON_COND_CONFIG, true);
    agg_config_t ac = agg_setup_worker(d, S, slot, &run);
    if (!(run.w = agg_worker_new(&ac, err, sizeof(err)))) {
        fprintf(stderr, "%s: %s\n", d->name, err);
        goto out;
    }
    agg_control_attach(run.ctl, run.w);
    rc = agg_worker_run(run.w, d->stop, d->reload) == 0 ? 0 : 1;
    daemon_not_ready(d, "stopping");
    if (rc)
        worker_control_report_fatal(agg_control_wc(run.ctl),
                                    "worker stopped: a record could be written neither to "
                                    "MAIN nor to the dead-letter topic",
                                    2000);
out:
    agg_control_attach(run.ctl, NULL);
    agg_worker_free(run.w);
    agg_control_free(run.ctl, 2000);
    filter_slot_free(slot);
    return rc;
}

/* One arena as well: librdkafka's threads each kept their own free memory. */
const daemon_role_t agg_role = {.name = "aggregation",
                                .def = &agg_def,
                                .settings_size = sizeof(agg_settings_t),
                                .arena_max = 1,
                                .run = agg_role_run};
