/* Internals shared by the files of the Kafka client wrapper (kafka.c: producer, consumer,
 * daemon helpers; kafka_admin.c: topic administration). Not a public interface: kafka.h is. */
#ifndef NDD_KAFKA_INT_H
#define NDD_KAFKA_INT_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

/* rd_kafka_conf_set naming the property (never the value: it may be a secret) in errstr. */
int kafka_conf_set(rd_kafka_conf_t *conf, const char *key, const char *value, char *errstr,
                   size_t errstr_size);
/* librdkafka's log lines into NDD's log at the matching level. */
void kafka_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf);

/* kafka_pair_rebuild for a producer whose handle another thread is still inside (a
 * transactional call that did not return in time, kafka_txn.c): the producer gets a new handle,
 * the old one is purged but not destroyed and goes to *old (the caller destroys it once that
 * call has returned); the consumer is rebuilt as kafka_pair_rebuild does. 0, or -1: *old NULL
 * when the producer kept its handle, else the consumer's rebuild failed (retried at its next
 * poll). Nothing may be queued on the old handle (its delivery callbacks would never run). */
typedef struct kafka_producer kafka_producer_t;
typedef struct kafka_consumer kafka_consumer_t;
int kafka_pair_rebuild_set_aside(kafka_producer_t *producer, kafka_consumer_t *consumer,
                                 rd_kafka_t **old);

#endif
