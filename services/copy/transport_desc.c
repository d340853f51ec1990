/* The transport table (transport_desc.h): one row per transport. A new transport is one row
 * here (its description) plus its implementation in the adapter (docs/adapter.md). */
#include "transport_desc.h"

#include "feed_kafka_acl.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

const transport_desc_t transport_desc_http2 = {
    .name = "http2",
    .schemes = {{"http", false, "80"}, {"https", true, "443"}},
    .url_form = TRANSPORT_URL_NETWORK,
    .url_path = TRANSPORT_PATH_OPTIONAL,
    .alpn = "h2", /* https://; http:// is h2c with prior knowledge */
    .encodings = {"json", "frame", "passthrough", "xdr-jsonl"},
};

const transport_desc_t transport_desc_tcp = {
    .name = "tcp",
    .schemes = {{"tcp", false, NULL}},
    .url_form = TRANSPORT_URL_NETWORK,
    .url_path = TRANSPORT_PATH_NONE,
    .fire_and_forget = true,
    .encodings = {"frame", "synthetic"},
};

const transport_desc_t transport_desc_tls = {
    .name = "tls",
    .schemes = {{"tls", true, NULL}},
    .url_form = TRANSPORT_URL_NETWORK,
    .url_path = TRANSPORT_PATH_NONE,
    .fire_and_forget = true,
    .encodings = {"frame", "synthetic"},
};

static const char *const transport_file_keys[] = {
    "prefix",          "max_bytes",         "max_seconds",    "max_records",
    "retention_bytes", "retention_seconds", "min_free_bytes", NULL};

/* The file member's values (docs/adapter.md, "File export"): a wrong type or a value out of
 * range is refused with its path, never replaced by the default. */
static int transport_file_check(const json_t *o, const char *prefix, jfield_err_t *err)
{
    static const struct {
        const char *key;
        int64_t min, max;
    } ints[] = {
        {"max_bytes", 1, (int64_t)1 << 40},         /* a file's size before rotation */
        {"max_seconds", 0, 7 * 86400},              /* 0: no rotation by age */
        {"max_records", 0, (int64_t)1 << 40},       /* 0: no rotation by count */
        {"retention_bytes", 0, INT64_MAX},          /* 0: no limit */
        {"retention_seconds", 0, 10 * 366 * 86400}, /* 0: no limit */
        {"min_free_bytes", 0, INT64_MAX},
    };
    int64_t v;
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
        if (jfield_int(o, ints[i].key, prefix, false, ints[i].min, ints[i].max, &v, err))
            return -1;
    const char *pre = NULL;
    if (jfield_string(o, "prefix", prefix, false, 63, &pre, err))
        return -1;
    if (pre) {
        /* a file name's first part: no directory, nothing the shell or a glob would read */
        bool ok = *pre && *pre != '.';
        for (const char *p = pre; ok && *p; p++)
            ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                 *p == '-' || *p == '_' || *p == '.';
        if (!ok) {
            char path[128];
            snprintf(path, sizeof path, "%s.prefix", prefix);
            return jfield_fail(err, JFIELD_INVALID, path,
                               "\"%s\": 1 to 63 of [A-Za-z0-9._-], not starting with '.'", pre);
        }
    }
    return 0;
}

/* Rotated files in a local directory (adapter/transport_file.c): written as .part, fsynced,
 * renamed; the ack is the fsync of the file that holds the records. */
const transport_desc_t transport_desc_file = {
    .name = "file",
    .schemes = {{"file", false, NULL}},
    .url_form = TRANSPORT_URL_LOCAL,
    .url_path = TRANSPORT_PATH_REQUIRED,
    .ack = TRANSPORT_ACK_DURABLE,
    .encodings = {"json", "synthetic", "xdr-jsonl"},
    .options = "file",
    .option_keys = transport_file_keys,
    .check_options = transport_file_check,
};

/* exactly_once: transactions (transport_kafka.c); topic and consumer: what ndd-admin creates
 * and grants (feed_kafka_acl.c). */
static const char *const transport_kafka_keys[] = {"config", "exactly_once", "topic", "consumer",
                                                   NULL};

/* kafka.config: librdkafka properties for the target cluster (security.protocol, sasl.*,
 * ssl.*), every value a string as librdkafka takes them. kafka.exactly_once (default true):
 * false keeps the at-least-once idempotent producer where transactions are not wanted. */
static int transport_kafka_check(const json_t *o, const char *prefix, jfield_err_t *err)
{
    const json_t *c = json_object_get(o, "config");
    const json_t *eo = json_object_get(o, "exactly_once");
    char path[160];
    if (eo && !json_is_boolean(eo)) {
        snprintf(path, sizeof path, "%s.exactly_once", prefix);
        return jfield_fail(err, JFIELD_INVALID, path, "must be true or false");
    }
    snprintf(path, sizeof path, "%s.config", prefix);
    if (c && !json_is_object(c))
        return jfield_fail(err, JFIELD_INVALID, path, "must be an object of librdkafka properties");
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)c, k, v) if (!json_is_string(v))
    {
        snprintf(path, sizeof path, "%s.config.%s", prefix, k);
        return jfield_fail(err, JFIELD_INVALID, path, "must be a string");
    }
    return feed_kafka_acl_check(o, prefix, err);
}

/* Records produced to a Kafka topic, kafka://host:port/topic (adapter/transport_kafka.c,
 * docs/kafka-feed.md): the ack is an idempotent acks=all produce of every record of a batch,
 * in a transaction with the feed's offsets unless kafka.exactly_once is false. */
const transport_desc_t transport_desc_kafka = {
    .name = "kafka",
    .schemes = {{"kafka", false, "9092"}},
    .url_form = TRANSPORT_URL_NETWORK,
    .url_path = TRANSPORT_PATH_REQUIRED,
    .ack = TRANSPORT_ACK_DURABLE,
    .encodings = {"frame", "passthrough"}, /* passthrough: xDRs of XDR, key and headers kept */
    .options = "kafka",
    .option_keys = transport_kafka_keys,
    .check_options = transport_kafka_check,
};

static const transport_desc_t *transport_table[TRANSPORT_MAX] = {
    &transport_desc_http2, &transport_desc_tcp,   &transport_desc_tls,
    &transport_desc_file,  &transport_desc_kafka,
};
/* Rows in use: the built-in ones above, then those registered, up to the first empty slot
 * (no count to keep in step with the list). */
static size_t transport_rows(void)
{
    size_t n = 0;
    while (n < TRANSPORT_MAX && transport_table[n])
        n++;
    return n;
}

int transport_register(const transport_desc_t *d, char *err, size_t errlen)
{
    if (!d || !d->name || !d->schemes[0].name) {
        snprintf(err, errlen, "a transport needs a name and at least one URL scheme");
        return -1;
    }
    if (transport_find(d->name)) {
        snprintf(err, errlen, "transport \"%s\" is already registered", d->name);
        return -1;
    }
    for (size_t i = 0; i < TRANSPORT_MAX_SCHEMES && d->schemes[i].name; i++)
        if (transport_find_scheme(d->schemes[i].name, strlen(d->schemes[i].name), NULL)) {
            snprintf(err, errlen, "transport \"%s\": scheme \"%s\" belongs to another transport",
                     d->name, d->schemes[i].name);
            return -1;
        }
    if (transport_rows() == TRANSPORT_MAX) {
        snprintf(err, errlen, "transport table full (%d rows)", TRANSPORT_MAX);
        return -1;
    }
    transport_table[transport_rows()] = d;
    return 0;
}

const transport_desc_t *transport_find(const char *name)
{
    for (size_t i = 0; name && i < transport_rows(); i++)
        if (!strcmp(transport_table[i]->name, name))
            return transport_table[i];
    return NULL;
}

const transport_desc_t *transport_find_scheme(const char *s, size_t len,
                                              const transport_scheme_t **scheme)
{
    for (size_t i = 0; i < transport_rows(); i++)
        for (const transport_scheme_t *sc = transport_table[i]->schemes;
             sc < transport_table[i]->schemes + TRANSPORT_MAX_SCHEMES && sc->name; sc++)
            if (strlen(sc->name) == len && !strncmp(sc->name, s, len)) {
                if (scheme)
                    *scheme = sc;
                return transport_table[i];
            }
    return NULL;
}

size_t transport_count(void)
{
    return transport_rows();
}

const transport_desc_t *transport_at(size_t i)
{
    return i < transport_rows() ? transport_table[i] : NULL;
}

bool transport_takes_encoding(const transport_desc_t *d, const char *encoding)
{
    for (size_t i = 0; encoding && i < TRANSPORT_MAX_ENCODINGS && d->encodings[i]; i++)
        if (!strcmp(d->encodings[i], encoding))
            return true;
    return false;
}

/* Appends item to out[0..outlen) after a ", " when out is not empty; truncates quietly. */
static void transport_list_add(char *out, size_t outlen, const char *fmt, const char *item)
{
    size_t n = strlen(out);
    if (n + 1 >= outlen)
        return;
    if (n)
        n += (size_t)snprintf(out + n, outlen - n, ", ");
    if (n < outlen)
        snprintf(out + n, outlen - n, fmt, item);
}

void transport_names(char *out, size_t outlen, bool only_fire_and_forget)
{
    out[0] = 0;
    for (size_t i = 0; i < transport_rows(); i++)
        if (!only_fire_and_forget || transport_table[i]->fire_and_forget)
            transport_list_add(out, outlen, "\"%s\"", transport_table[i]->name);
}

void transport_schemes(const transport_desc_t *d, char *out, size_t outlen)
{
    out[0] = 0;
    for (size_t i = 0; i < transport_rows(); i++) {
        const transport_desc_t *t = transport_table[i];
        if (d && t != d)
            continue;
        for (size_t k = 0; k < TRANSPORT_MAX_SCHEMES && t->schemes[k].name; k++)
            transport_list_add(out, outlen, "%s", t->schemes[k].name);
    }
}

void transport_encodings(const transport_desc_t *d, char *out, size_t outlen)
{
    out[0] = 0;
    for (size_t i = 0; i < TRANSPORT_MAX_ENCODINGS && d->encodings[i]; i++)
        transport_list_add(out, outlen, "\"%s\"", d->encodings[i]);
}
