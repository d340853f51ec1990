/* ndd-aggregation: one NF type's worker (docs/aggregation.md).
 *
 *   ndd-aggregation --nf-type SCP [--bootstrap HOST:PORT] [--filter-file F] ...
 *
 * main reads the settings, creates MAIN and the dead-letter topic when asked, starts the
 * /metrics server on its own thread, follows ndd.config until the configuration is loaded
 * (then /readyz is ready) and runs the worker loop until SIGTERM/SIGINT. SIGHUP reloads the
 * ingress filter file. */
#include <stdio.h>

#include "agg_control.h"
#include "agg_worker.h"
#include "codec.h"
#include "config.h"
#include "daemon.h"
#include "kafka.h"
#include "log.h"

static const config_spec_t agg_specs[] = {
    {"nf-type", CONFIG_STRING, NULL,
     "NF type this worker serves (SCP, NRF, SEPP, BSF, PCF, NON_NF, ...)", CONFIG_F_REQUIRED},
    {"bootstrap", CONFIG_STRING, NULL,
     "Kafka bootstrap servers (else env NDD_KAFKA, else kafka.bootstrap.servers)", 0},
    {"topic", CONFIG_STRING, NULL, "NF topic to consume (default: the NF type)", 0},
    {"group", CONFIG_STRING, NULL, "consumer group (default: ndd-agg-<nf-type>)", 0},
    {"main-topic", CONFIG_STRING, "MAIN", "topic the accepted copies go to", 0},
    {"dlq-topic", CONFIG_STRING, "ndd.dlq.aggregation", "dead-letter topic for refused copies", 0},
    {"create-topics", CONFIG_BOOL, "true",
     "create the NF topic, MAIN and the dead-letter topic if missing", 0},
    {"main-partitions", CONFIG_INT, "0",
     "partitions of MAIN (and of the NF topic) when created (0: as many as the NF topic, else 6)",
     0},
    {"dlq-partitions", CONFIG_INT, "1", "partitions of the dead-letter topic when created", 0},
    {"filter-file", CONFIG_STRING, NULL,
     "ingress filter JSON (docs/filters.md); reloaded on "
     "SIGHUP or when the file changes",
     0},
    {"config-topic", CONFIG_STRING, "ndd.config",
     "compacted configuration topic to follow for the ingress filter (empty: off)", 0},
    {"ingress-filter", CONFIG_STRING, NULL,
     "name of the ndd.config filter to apply when the NF's source names none "
     "(default: ingress-<nf-type>)",
     0},
    {"events-topic", CONFIG_STRING, "ndd.events", "topic of heartbeats and alarms (empty: off)", 0},
    {"instance", CONFIG_STRING, NULL,
     "instance name in heartbeats, stable and unique per worker (default: <host>-<nf-type>)", 0},
    {"heartbeat-interval", CONFIG_DURATION_MS, "5s", "heartbeat period on the events topic", 0},
    {"produce-alarm-after", CONFIG_DURATION_MS, "10s",
     "raise main-produce-failing when no acknowledgement came for this long", 0},
    {"filter-check-interval", CONFIG_DURATION_MS, "1s", "how often the filter file is checked", 0},
    {"max-inflight", CONFIG_INT, "2500", "copies consumed but not yet acknowledged by Kafka", 0},
    {"batch", CONFIG_INT, "250", "copies taken per consumer poll", 0},
    {"max-body", CONFIG_BYTES, "1MiB", "largest copy body accepted (larger: DLQ, oversized)", 0},
    {"cooperative", CONFIG_BOOL, "false", "cooperative-sticky rebalancing instead of eager", 0},
    {"shutdown-timeout", CONFIG_DURATION_MS, "10s", "how long a stop waits for acknowledgements",
     0},
    {"revoke-flush", CONFIG_DURATION_MS, "2s",
     "on a rebalance, how long acknowledgements of revoked partitions are awaited", 0},
    DAEMON_SPECS_COMMON("9101"),
};
#define AGG_NSPECS (sizeof(agg_specs) / sizeof(agg_specs[0]))

static int agg_create_topics(const char *brokers, const char *in_topic, const char *main_topic,
                             int main_parts, const char *dlq_topic, int dlq_parts)
{
    int n = kafka_admin_topic_partitions(brokers, in_topic, 5000);
    if (main_parts <= 0)
        main_parts = n > 0 ? n : 6;
    /* A missing NF topic is created too (a local stack without auto-creation); an existing
     * one is left as it is. */
    if (n < 1 && kafka_admin_create_topic(brokers, in_topic, main_parts, 1, NULL, 0, 15000))
        return -1;
    if (kafka_admin_create_topic(brokers, main_topic, main_parts, 1, NULL, 0, 15000) ||
        kafka_admin_create_topic(brokers, dlq_topic, dlq_parts > 0 ? dlq_parts : 1, 1, NULL, 0,
                                 15000))
        return -1;
    return 0;
}

static int agg_wait_loaded(void *ctl, int timeout_ms)
{
    return agg_control_wait_loaded(ctl, timeout_ms);
}

int main(int argc, char **argv)
{
    /* One arena as well: librdkafka's threads each kept their own free memory. */
    daemon_heap_setup(true);
    daemon_t d;
    int rc = daemon_init(&d, "ndd-aggregation", agg_specs, AGG_NSPECS, argc, argv);
    if (rc != DAEMON_CONTINUE) {
        daemon_free(&d);
        return rc;
    }
    config_t *cfg = d.cfg;
    char err[1024];
    int64_t max_inflight = config_get_int(cfg, "max-inflight");
    int64_t batch = config_get_int(cfg, "batch");
    rc = 2;
    agg_worker_t *w = NULL;
    agg_control_t *ctl = NULL;
    filter_slot_t *slot = filter_slot_new(NULL);
    codec_limits_t limits = {.max_body = (size_t)config_get_bytes(cfg, "max-body")};

    if (max_inflight < 1 || max_inflight > 10000000 || batch < 1 || batch > 100000) {
        fprintf(stderr, "ndd-aggregation: --max-inflight must be 1..10000000 and --batch "
                        "1..100000\n");
        goto out;
    }
    if (codec_limits_set(&limits)) {
        fprintf(stderr, "ndd-aggregation: --max-body is above the codec's ceiling\n");
        goto out;
    }
    if (!slot) {
        fprintf(stderr, "ndd-aggregation: out of memory\n");
        goto out;
    }

    const char *nf = config_get_str(cfg, "nf-type");
    const char *in_topic = config_get_str(cfg, "topic") ? config_get_str(cfg, "topic") : nf;
    if (config_get_bool(cfg, "create-topics") &&
        agg_create_topics(d.brokers, in_topic, config_get_str(cfg, "main-topic"),
                          (int)config_get_int(cfg, "main-partitions"),
                          config_get_str(cfg, "dlq-topic"),
                          (int)config_get_int(cfg, "dlq-partitions"))) {
        fprintf(stderr, "ndd-aggregation: could not create the MAIN / dead-letter topics\n");
        goto out;
    }
    if (daemon_start(&d, "starting: loading the configuration", true))
        goto out;

    agg_control_opts_t co = {
        .brokers = d.brokers,
        .nf_type = nf,
        .in_topic = in_topic,
        .main_topic = config_get_str(cfg, "main-topic"),
        .config_topic = config_get_str(cfg, "config-topic"),
        .events_topic = config_get_str(cfg, "events-topic"),
        .instance = config_get_str(cfg, "instance"),
        .version = "0.1.0",
        .filter_name = config_get_str(cfg, "ingress-filter"),
        .filter_file_set = config_get_str(cfg, "filter-file") != NULL,
        .heartbeat_ms = config_get_duration_ms(cfg, "heartbeat-interval"),
        .produce_alarm_ms = config_get_duration_ms(cfg, "produce-alarm-after"),
        .props = d.props,
        .n_props = d.n_props,
        .slot = slot,
        .metrics = d.metrics,
    };
    ctl = agg_control_new(&co, err, sizeof(err));
    if (!ctl) {
        fprintf(stderr, "ndd-aggregation: %s\n", err);
        goto out;
    }
    /* The full configuration is applied before anything is consumed: a worker that started
     * without its ingress filter would let everything through. A broker that does not answer
     * keeps it waiting (not ready), as it could not consume either. */
    if (daemon_wait(&d, agg_wait_loaded, ctl, config_get_str(cfg, "config-topic"))) {
        rc = 0;
        goto out;
    }

    agg_config_t ac = {
        .brokers = d.brokers,
        .nf_type = nf,
        .in_topic = in_topic,
        .group = config_get_str(cfg, "group"),
        .main_topic = config_get_str(cfg, "main-topic"),
        .dlq_topic = config_get_str(cfg, "dlq-topic"),
        .props = d.props,
        .n_props = d.n_props,
        .max_inflight = (uint32_t)max_inflight,
        .batch = (uint32_t)batch,
        .cooperative = config_get_bool(cfg, "cooperative"),
        .instance = config_get_str(cfg, "instance"),
        .http_port = (int)config_get_int(cfg, "http-port"),
        .shutdown_timeout_ms = (int)config_get_duration_ms(cfg, "shutdown-timeout"),
        .revoke_flush_ms = config_get_duration_ms(cfg, "revoke-flush") > 0
                               ? (int)config_get_duration_ms(cfg, "revoke-flush")
                               : -1,
        .filter_file = config_get_str(cfg, "filter-file"),
        .filter_check_ms = (int)config_get_duration_ms(cfg, "filter-check-interval"),
        .metrics = d.metrics,
        .filter_slot = slot,
        .on_tick = agg_control_tick,
        .tick_arg = ctl,
    };
    w = agg_worker_new(&ac, err, sizeof(err));
    if (!w) {
        fprintf(stderr, "ndd-aggregation: %s\n", err);
        goto out;
    }
    agg_control_attach(ctl, w);
    daemon_set_ready(&d, true, NULL);
    rc = agg_worker_run(w, d.stop, d.reload) == 0 ? 0 : 1;
    if (rc)
        agg_control_report_fatal(ctl,
                                 "worker stopped: a record could be written neither to MAIN "
                                 "nor to the dead-letter topic",
                                 2000);
out:
    agg_control_attach(ctl, NULL);
    agg_worker_free(w);
    agg_control_free(ctl, 2000);
    filter_slot_free(slot);
    daemon_free(&d);
    return rc;
}
