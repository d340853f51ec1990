/* What the skeleton validates before a daemon connects to anything: the kafka.* pass-through
 * properties (each one set on a scratch librdkafka configuration of the client it is routed
 * to by kafka_props_split, so an unknown name or a bad value is refused at start with its
 * name instead of breaking a client later), the broker list, and the daemon's own check of
 * what its settings name. With --check-config it also prints what would run: the effective
 * settings (secrets masked) and the daemon's summary lines, and connects to nothing. */
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "daemon-int.h"
#include "daemon.h"
#include "log.h"

/* -1 with err when prop (as the user wrote it: kafka.<key>) is refused by the client(s) it
 * is routed to; 1 when librdkafka does not know the name and it came from the environment
 * (from_env): the environment holds unrelated NDD_KAFKA_* names (the local stack's
 * NDD_KAFKA_PORT), and unknown environment variables are ignored, as for every setting. */
static int daemon_kafka_prop_check(const kafka_prop_t *prop, bool from_env, char *err,
                                   size_t errlen)
{
    static const kafka_client_kind_t kinds[] = {KAFKA_CLIENT_PRODUCER, KAFKA_CLIENT_CONSUMER};
    for (size_t k = 0; k < 2; k++) {
        kafka_prop_t routed;
        if (kafka_props_split(prop, 1, kinds[k], &routed) != 1)
            continue;
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        char why[512];
        rd_kafka_conf_res_t res =
            rd_kafka_conf_set(conf, routed.key, routed.value, why, sizeof(why));
        rd_kafka_conf_destroy(conf);
        if (res == RD_KAFKA_CONF_UNKNOWN && from_env)
            return 1;
        if (res != RD_KAFKA_CONF_OK) {
            snprintf(err, errlen, "kafka.%s: %s", prop->key, why);
            return -1;
        }
    }
    return 0;
}

int daemon_kafka_setup(daemon_t *d, char *err, size_t errlen)
{
    size_t n = 0;
    const config_kafka_prop_t *kp = config_kafka_props(d->cfg, &n);
    d->props = calloc(n + 1, sizeof(*d->props));
    if (!d->props) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    d->brokers = d->common->bootstrap;
    if (!d->brokers || !*d->brokers)
        d->brokers = getenv("NDD_KAFKA");
    if (d->brokers && !*d->brokers)
        d->brokers = NULL;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(kp[i].name, "bootstrap.servers") == 0 && !d->brokers)
            d->brokers = kp[i].value;
        d->props[d->n_props] = (kafka_prop_t){.key = kp[i].name, .value = kp[i].value};
        bool from_env = kp[i].origin && strncmp(kp[i].origin, "env ", 4) == 0;
        int rc = daemon_kafka_prop_check(&d->props[d->n_props], from_env, err, errlen);
        if (rc < 0)
            return -1;
        if (rc > 0) {
            log_warn("%s: not a librdkafka property, ignored (unknown environment variables "
                     "are ignored)",
                     kp[i].origin);
            continue;
        }
        d->n_props++;
    }
    if (!d->brokers && !d->def->kafka_optional) {
        snprintf(err, errlen,
                 "bootstrap: no Kafka: set --bootstrap, NDD_KAFKA or --kafka.bootstrap.servers");
        return -1;
    }
    return 0;
}

int daemon_run_check(daemon_t *d, bool print)
{
    char err[1024] = "";
    FILE *out = print ? stdout : NULL;
    if (print) {
        fprintf(out, "%s: checking the configuration (nothing is connected)\n", d->name);
        config_dump(d->cfg, out);
        fprintf(out, "Kafka brokers: %s\n", d->brokers ? d->brokers : "(none)");
    }
    if (d->def->check && d->def->check(d, out, err, sizeof(err))) {
        fprintf(stderr, "%s: %s\n", d->name, err);
        return -1;
    }
    if (print)
        fprintf(out, "%s: configuration valid\n", d->name);
    return 0;
}
