/* The one readiness rule of every daemon: /readyz is not ready until a Kafka broker answered,
 * the configuration is loaded and the consumer group gave this member its partitions (the
 * conditions a daemon's def->ready_needs names). Each is reported by whoever knows it
 * (daemon_hold: the probe below for Kafka, the control path for the configuration, the
 * worker's tick for the partitions); the reason of the first one missing is the /readyz
 * body, so an operator reads why a daemon is not serving yet.
 *
 * The Kafka probe: one metadata request at a time, on its own thread, with the daemon's
 * producer-side kafka.* properties (security settings included), until a broker answers. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <librdkafka/rdkafka.h>

#include "clock.h"
#include "daemon-int.h"
#include "daemon.h"
#include "log.h"

static const char *const daemon_cond_reason[DAEMON_COND__COUNT] = {
    [DAEMON_COND_KAFKA] = "waiting for Kafka: no broker has answered yet",
    [DAEMON_COND_CONFIG] = "the configuration is not loaded yet",
    [DAEMON_COND_PARTITIONS] = "the consumer group has not assigned partitions yet",
};

struct daemon_probe {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    rd_kafka_t *rk;
};

static unsigned daemon_needs(const daemon_t *d)
{
    return d->def && d->def->ready_needs ? d->def->ready_needs : DAEMON_NEEDS_ALL;
}

const char *daemon_ready_reason(const daemon_t *d)
{
    const char *o = d->override;
    if (o)
        return o;
    for (int c = 0; c < DAEMON_COND__COUNT; c++) {
        bool holds = d->holds[c];
        /* An embedded role has no probe of its own: ndd's broker answer is its answer. */
        if (!holds && c == DAEMON_COND_KAFKA && d->embed && d->embed->host)
            holds = d->embed->host->holds[c];
        if ((daemon_needs(d) & DAEMON_NEEDS(c)) && !holds)
            return daemon_cond_reason[c];
    }
    return NULL;
}

static void daemon_ready_publish(daemon_t *d)
{
    if (d->embed) {
        if (d->embed->on_ready)
            d->embed->on_ready(d->embed->arg);
        return;
    }
    if (d->ready_hook) {
        d->ready_hook(d->ready_hook_arg);
        return;
    }
    if (!d->http)
        return;
    httpd_t *h = httpd_thread_server(d->http);
    const char *why = daemon_ready_reason(d);
    if (why)
        httpd_set_ready_reason(h, why);
    httpd_set_ready(h, why == NULL);
}

void daemon_hold(daemon_t *d, daemon_cond_t cond, bool holds)
{
    if ((unsigned)cond < DAEMON_COND__COUNT && d->holds[cond] != holds) {
        d->holds[cond] = holds;
        static const char *const names[DAEMON_COND__COUNT] = {"Kafka", "configuration",
                                                              "partitions"};
        log_info("%s: readiness: %s %s", d->name, names[cond], holds ? "holds" : "lost");
    }
    daemon_ready_publish(d);
}

void daemon_not_ready(daemon_t *d, const char *reason)
{
    d->override = reason;
    daemon_ready_publish(d);
}

static void *daemon_probe_main(void *arg)
{
    daemon_t *d = arg;
    struct daemon_probe *p = d->probe;
    pthread_mutex_lock(&p->mu);
    while (!p->stop) {
        pthread_mutex_unlock(&p->mu);
        const struct rd_kafka_metadata *md = NULL;
        /* Brokers only (all_topics 0, no topic): the cheapest request every broker answers. */
        rd_kafka_resp_err_t e = rd_kafka_metadata(p->rk, 0, NULL, &md, 1000);
        if (md)
            rd_kafka_metadata_destroy(md);
        pthread_mutex_lock(&p->mu);
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
            pthread_mutex_unlock(&p->mu);
            daemon_hold(d, DAEMON_COND_KAFKA, true);
            return NULL;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        if (!p->stop)
            pthread_cond_timedwait(&p->cv, &p->mu, &ts);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* The probe's client: a producer (it never produces) with the producer-side properties. */
static rd_kafka_t *daemon_probe_client(const daemon_t *d, char *err, size_t errlen)
{
    kafka_prop_t *mine = calloc(d->n_props + 1, sizeof(*mine));
    if (!mine) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    size_t n = kafka_props_split(d->props, d->n_props, KAFKA_CLIENT_PRODUCER, mine);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    bool ok =
        rd_kafka_conf_set(conf, "bootstrap.servers", d->brokers, err, errlen) == RD_KAFKA_CONF_OK &&
        rd_kafka_conf_set(conf, "log_level", "3", err, errlen) == RD_KAFKA_CONF_OK;
    for (size_t i = 0; ok && i < n; i++)
        ok = rd_kafka_conf_set(conf, mine[i].key, mine[i].value, err, errlen) == RD_KAFKA_CONF_OK;
    free(mine);
    rd_kafka_t *rk = ok ? rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, errlen) : NULL;
    if (!rk) /* rd_kafka_new owns conf only when it succeeds */
        rd_kafka_conf_destroy(conf);
    return rk;
}

void daemon_probe_start(daemon_t *d)
{
    if (!d->brokers || !(daemon_needs(d) & DAEMON_NEEDS(DAEMON_COND_KAFKA)))
        return;
    char err[512];
    struct daemon_probe *p = calloc(1, sizeof(*p));
    if (p && !(p->rk = daemon_probe_client(d, err, sizeof(err)))) {
        free(p);
        p = NULL;
        log_error("%s: Kafka probe: %s (not ready until a partition is assigned)", d->name, err);
        return;
    }
    if (!p)
        return;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    d->probe = p;
    if (pthread_create(&p->thread, NULL, daemon_probe_main, d) != 0) {
        rd_kafka_destroy(p->rk);
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
        free(p);
        d->probe = NULL;
    }
}

void daemon_probe_stop(daemon_t *d)
{
    struct daemon_probe *p = d->probe;
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    rd_kafka_destroy(p->rk);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p);
    d->probe = NULL;
}

void daemon_poll_partitions(daemon_t *d, int (*count)(void *arg), void *arg)
{
    int64_t now = mono_now_ms();
    if (now < d->partitions_next_ms)
        return;
    d->partitions_next_ms = now + 1000; /* rd_kafka_assignment is a round trip to its thread */
    int n = count(arg);
    if (n > 0 && !d->holds[DAEMON_COND_KAFKA])
        daemon_hold(d, DAEMON_COND_KAFKA, true); /* an assignment is a broker's answer too */
    daemon_hold(d, DAEMON_COND_PARTITIONS, n > 0);
}
