/* librdkafka's mock cluster for unit tests of the Kafka wrappers (services/kafka): the faults a
 * real broker cannot stage on demand (a fenced member, a coordinator that does not answer). */
#ifndef NDD_KAFKA_MOCK_TESTUTIL_H
#define NDD_KAFKA_MOCK_TESTUTIL_H

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

/* Monotonic clock in milliseconds. */
double kmu_now_ms(void);
/* A mock cluster of brokers brokers (its holder client into *holder, quiet) with topic of
 * partitions partitions created, and each partition filled with per_part one-byte records
 * (0: none). Fails the test on error. Free with kmu_mock_free. */
rd_kafka_mock_cluster_t *kmu_mock_new(rd_kafka_t **holder, int brokers, const char *topic,
                                      int partitions, int per_part);
void kmu_mock_free(rd_kafka_mock_cluster_t *mc, rd_kafka_t *holder);

#endif
