/* kafka.topic and kafka.consumer of a Kafka feed (feed_kafka_acl.h). */
#include "feed_kafka_acl.h"

#include <stdio.h>
#include <string.h>

static const char *const topic_keys[] = {"partitions", "replication_factor", "retention_ms", NULL};
static const char *const consumer_keys[] = {"principal", "group_prefix", NULL};

/* "User:<name>": the only principal type Kafka's authorizers match for clients (a SCRAM user
 * name, or a certificate subject as ssl.principal.mapping.rules render it). "User:*" would
 * grant every principal, so it is refused, as are control characters. */
static int feed_kafka_principal_check(const char *s, const char *path, jfield_err_t *err)
{
    bool ok = strncmp(s, "User:", 5) == 0 && s[5] && strcmp(s + 5, "*") != 0;
    for (const unsigned char *p = (const unsigned char *)s; ok && *p; p++)
        ok = *p >= 0x20 && *p != 0x7f;
    if (!ok)
        return jfield_fail(err, JFIELD_INVALID, path,
                           "\"%s\" is not a principal: \"User:<SCRAM user name>\" or \"User:<TLS "
                           "certificate subject>\", e.g. \"User:CN=vendor-a,O=Vendor\" (not "
                           "\"User:*\")",
                           s);
    return 0;
}

int feed_kafka_acl_check(const json_t *o, const char *prefix, jfield_err_t *err)
{
    char path[160];
    json_t *t = NULL, *c = NULL;
    if (jfield_object(o, "topic", prefix, false, &t, err))
        return -1;
    if (t) {
        snprintf(path, sizeof path, "%s.topic", prefix);
        if (jfield_unknown(t, topic_keys, NULL, path, err) ||
            jfield_int(t, "partitions", path, false, 1, 10000, NULL, err) ||
            jfield_int(t, "replication_factor", path, false, -1, 32767, NULL, err) ||
            jfield_int(t, "retention_ms", path, false, -1, INT64_MAX, NULL, err))
            return -1;
        const json_t *r = json_object_get(t, "replication_factor");
        const json_t *m = json_object_get(t, "retention_ms");
        char sub[192];
        if (r && json_integer_value(r) == 0) {
            snprintf(sub, sizeof sub, "%s.replication_factor", path);
            return jfield_fail(err, JFIELD_RANGE, sub,
                               "must be -1 (the broker's default) or 1 to 32767");
        }
        if (m && json_integer_value(m) == 0) {
            snprintf(sub, sizeof sub, "%s.retention_ms", path);
            return jfield_fail(err, JFIELD_RANGE, sub, "must be -1 (kept forever) or at least 1");
        }
    }
    if (jfield_object(o, "consumer", prefix, false, &c, err))
        return -1;
    if (!c)
        return 0;
    snprintf(path, sizeof path, "%s.consumer", prefix);
    const char *principal, *group;
    if (jfield_unknown(c, consumer_keys, NULL, path, err) ||
        jfield_string(c, "principal", path, true, 255, &principal, err) ||
        jfield_string(c, "group_prefix", path, false, 200, &group, err))
        return -1;
    char sub[192];
    snprintf(sub, sizeof sub, "%s.principal", path);
    if (feed_kafka_principal_check(principal, sub, err))
        return -1;
    /* A group prefix is a name of its own, never empty: an empty prefix matches every group. */
    if (group && !jfield_name_ok(group, 200)) {
        snprintf(sub, sizeof sub, "%s.group_prefix", path);
        return jfield_fail(err, JFIELD_INVALID, sub,
                           "\"%s\": 1 to 200 characters of A-Z a-z 0-9 . _ -", group);
    }
    return 0;
}

void feed_kafka_acl_get(const json_t *feed, feed_kafka_acl_t *out)
{
    const json_t *k = json_object_get(feed, "kafka");
    const json_t *t = json_object_get(k, "topic");
    const json_t *c = json_object_get(k, "consumer");
    const json_t *v;
    out->partitions = (v = json_object_get(t, "partitions")) ? (int)json_integer_value(v)
                                                             : FEED_KAFKA_PARTITIONS_DEFAULT;
    out->replication = (v = json_object_get(t, "replication_factor"))
                           ? (int)json_integer_value(v)
                           : FEED_KAFKA_REPLICATION_DEFAULT;
    out->retention_ms = (v = json_object_get(t, "retention_ms")) ? json_integer_value(v)
                                                                 : FEED_KAFKA_RETENTION_MS_DEFAULT;
    out->principal = json_string_value(json_object_get(c, "principal"));
    out->group_prefix = json_string_value(json_object_get(c, "group_prefix"));
}
