/* The members of a Kafka feed's "kafka" object that ndd-admin acts on (docs/kafka-feed.md,
 * "Credentials and ACLs"): the topic it creates (kafka.topic) and the consumer principal and
 * group prefix it grants access to (kafka.consumer). The adapter ignores them; they are checked
 * here, by the one feed parser, so the admin and the adapter accept the same feeds. */
#ifndef NDD_SERVICES_FEED_KAFKA_ACL_H
#define NDD_SERVICES_FEED_KAFKA_ACL_H

#include <stdint.h>

#include <jansson.h>

#include "jfield.h"

/* Defaults of kafka.topic (documented in docs/kafka-feed.md and docs/openapi.yaml). */
#define FEED_KAFKA_PARTITIONS_DEFAULT 3
#define FEED_KAFKA_REPLICATION_DEFAULT (-1)         /* the broker's default.replication.factor */
#define FEED_KAFKA_RETENTION_MS_DEFAULT 604800000LL /* 7 days */

typedef struct feed_kafka_acl {
    int partitions;
    int replication;
    int64_t retention_ms;     /* -1: kept forever */
    const char *principal;    /* "User:…", borrowed from the feed; NULL: no consumer ACLs */
    const char *group_prefix; /* borrowed; NULL: "<feed name>-" */
} feed_kafka_acl_t;

/* Checks kafka.topic and kafka.consumer inside the feed's "kafka" object `o` (path prefix
 * `prefix`, i.e. "kafka"). 0, or -1 with *err naming the field. */
int feed_kafka_acl_check(const json_t *o, const char *prefix, jfield_err_t *err);
/* The settings of a feed object that feed_kafka_acl_check accepted, defaults filled in. */
void feed_kafka_acl_get(const json_t *feed, feed_kafka_acl_t *out);

#endif
