/* Internals shared by the files of the Kafka client wrapper (kafka.c: producer, consumer,
 * daemon helpers; kafka_admin.c: topic administration). Not a public interface: kafka.h is. */
#ifndef NDD_KAFKA_INT_H
#define NDD_KAFKA_INT_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

/* Monotonic clock in milliseconds. */
int64_t kafka_now_ms(void);
/* rd_kafka_conf_set naming the property (never the value: it may be a secret) in errstr. */
int kafka_conf_set(rd_kafka_conf_t *conf, const char *key, const char *value, char *errstr,
                   size_t errstr_size);
/* librdkafka's log lines into NDD's log at the matching level. */
void kafka_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf);

#endif
