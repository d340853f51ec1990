/* librdkafka's mock cluster for unit tests: see kafka_mock_testutil.h. */
#include "kafka_mock_testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kafka.h"

double kmu_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A test cannot go on without its cluster: the reason on stderr, then abort (cmocka reports
 * the test failed). */
static void kmu_require(int ok, const char *what, const char *why)
{
    if (ok)
        return;
    fprintf(stderr, "mock cluster: %s: %s\n", what, why ? why : "failed");
    abort();
}

static void kmu_fill(const char *brokers, const char *topic, int partitions, int per_part)
{
    char err[512] = "";
    kafka_producer_opts_t po = {.brokers = brokers};
    kafka_producer_t *p = kafka_producer_new(&po, err, sizeof err);
    kmu_require(p != NULL, "producer", err);
    for (int part = 0; part < partitions; part++)
        for (int i = 0; i < per_part; i++)
            kmu_require(kafka_produce(p, topic, part, NULL, 0, "x", 1, NULL, KAFKA_VALUE_COPY, NULL,
                                      NULL) == KAFKA_PRODUCE_OK,
                        "produce", topic);
    kmu_require(kafka_producer_flush(p, 10000) == 0, "flush", topic);
    kmu_require(kafka_producer_close(p, 1000) == 0, "close", topic);
}

rd_kafka_mock_cluster_t *kmu_mock_new(rd_kafka_t **holder, int brokers, const char *topic,
                                      int partitions, int per_part)
{
    char err[256] = "";
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    kmu_require(rd_kafka_conf_set(conf, "log_level", "0", err, sizeof err) == RD_KAFKA_CONF_OK,
                "log_level", err);
    *holder = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    kmu_require(*holder != NULL, "holder", err);
    rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(*holder, brokers);
    kmu_require(mc != NULL, "new", NULL);
    kmu_require(rd_kafka_mock_topic_create(mc, topic, partitions, 1) == RD_KAFKA_RESP_ERR_NO_ERROR,
                "topic", topic);
    if (per_part > 0)
        kmu_fill(rd_kafka_mock_cluster_bootstraps(mc), topic, partitions, per_part);
    return mc;
}

void kmu_mock_free(rd_kafka_mock_cluster_t *mc, rd_kafka_t *holder)
{
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(holder);
}
