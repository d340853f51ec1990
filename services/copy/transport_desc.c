/* The transport table (transport_desc.h): one row per transport. A new transport is one row
 * here (its description) plus its implementation in the adapter (docs/adapter.md). */
#include "transport_desc.h"

#include "feed_kafka_acl.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

const transport_desc_t transport_desc_http2 = {
    .name = "http2",
    .url_example = "https://probe.example:8443/ingest",
    .sections = TRANSPORT_SECTION_TLS | TRANSPORT_SECTION_HTTP,
    .schemes = {{"http", false, "80"}, {"https", true, "443"}},
    .url_form = TRANSPORT_URL_NETWORK,
    .url_path = TRANSPORT_PATH_OPTIONAL,
    .alpn = "h2", /* https://; http:// is h2c with prior knowledge */
    .encodings = {"json", "frame", "passthrough", "xdr-jsonl"},
};

const transport_desc_t transport_desc_tcp = {
    .name = "tcp",
    .url_example = "tcp://probe.example:5000",
    .schemes = {{"tcp", false, NULL}},
    .url_form = TRANSPORT_URL_NETWORK,
    .url_path = TRANSPORT_PATH_NONE,
    .fire_and_forget = true,
    .encodings = {"frame", "synthetic"},
};

const transport_desc_t transport_desc_tls = {
    .name = "tls",
    .url_example = "tls://probe.example:5001",
    .sections = TRANSPORT_SECTION_TLS,
    .schemes = {{"tls", true, NULL}},
    .url_form = TRANSPORT_URL_NETWORK,
    .url_path = TRANSPORT_PATH_NONE,
    .fire_and_forget = true,
    .encodings = {"frame", "synthetic"},
};

static const optdesc_t transport_file_desc[] = {
    {.name = "prefix",
     .type = OPTDESC_STRING,
     .max = 63,
     .help =
         "the files' name prefix, [A-Za-z0-9._-] not starting with '.'; default: the feed's name"},
    {.name = "max_bytes",
     .type = OPTDESC_INT,
     .min = 1,
     .max = INT64_C(1) << 40,
     .def = "67108864",
     .unit = "bytes",
     .help = "a file is closed and a new one opened at this size"},
    {.name = "max_seconds",
     .type = OPTDESC_INT,
     .max = 7 * 86400,
     .def = "60",
     .unit = "s",
     .help = "a file open this long is closed (bounds how long its copies wait for their ack); 0: "
             "never"},
    {.name = "max_records",
     .type = OPTDESC_INT,
     .max = INT64_C(1) << 40,
     .def = "0",
     .unit = "records",
     .help = "a file is closed after this many copies; 0: no limit"},
    {.name = "sync_ms",
     .type = OPTDESC_INT,
     .max = 10000,
     .def = "20",
     .unit = "ms",
     .help = "the longest a written batch waits for the fsync that acknowledges it; the batches "
             "written meanwhile share that fsync (0: one fsync per event loop turn)"},
    {.name = "retention_bytes",
     .type = OPTDESC_INT,
     .max = INT64_MAX,
     .def = "0",
     .unit = "bytes",
     .help = "the oldest closed files are removed beyond this total; 0: no limit"},
    {.name = "retention_seconds",
     .type = OPTDESC_INT,
     .max = 10 * 366 * 86400,
     .def = "0",
     .unit = "s",
     .help = "closed files older than this are removed; 0: no limit"},
    {.name = "min_free_bytes",
     .type = OPTDESC_INT,
     .max = INT64_MAX,
     .def = "1048576",
     .unit = "bytes",
     .help = "a batch is written only if this much stays free after it; below, the feed pauses "
             "until a quarter more (at least 256 KiB) is free"},
    {0},
};

/* The file member's prefix (docs/adapter.md, "File export"): types and ranges are the
 * description's; the name rule is this. */
static int transport_file_check(const json_t *o, const char *prefix, jfield_err_t *err)
{
    const char *pre = json_string_value(json_object_get(o, "prefix"));
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
    .url_example = "file:///var/lib/ndd/export",
    .schemes = {{"file", false, NULL}},
    .url_form = TRANSPORT_URL_LOCAL,
    .url_path = TRANSPORT_PATH_REQUIRED,
    .ack = TRANSPORT_ACK_DURABLE,
    .encodings = {"json", "synthetic", "xdr-jsonl"},
    .options = "file",
    .option_desc = transport_file_desc,
    .check_options = transport_file_check,
};

/* exactly_once: transactions (transport_kafka.c); topic and consumer: what ndd-admin creates
 * and grants (feed_kafka_acl.c). */
static const optdesc_t transport_kafka_topic_desc[] = {
    {.name = "partitions",
     .type = OPTDESC_INT,
     .min = 1,
     .max = 10000,
     .def = "3",
     .help = "partitions of the feed's topic"},
    {.name = "replication_factor",
     .type = OPTDESC_INT,
     .min = -1,
     .max = 32767,
     .def = "-1",
     .help = "replicas of each partition; -1: the broker's default (0 is refused)"},
    {.name = "retention_ms",
     .type = OPTDESC_INT,
     .min = -1,
     .max = INT64_MAX,
     .def = "604800000",
     .unit = "ms",
     .help = "how long records stay; -1: for ever (0 is refused)"},
    {0},
};
static const optdesc_t transport_kafka_consumer_desc[] = {
    {.name = "principal",
     .type = OPTDESC_STRING,
     .flags = OPTDESC_REQUIRED,
     .max = 255,
     .help = "the vendor's principal, User:<SCRAM user> or User:<certificate subject>"},
    {.name = "group_prefix",
     .type = OPTDESC_STRING,
     .max = 200,
     .help = "consumer groups the vendor may use start with this; default: <feed name>-"},
    {0},
};
static const optdesc_t transport_kafka_desc[] = {
    {.name = "config",
     .type = OPTDESC_MAP,
     .help = "librdkafka producer properties for the target cluster (security.protocol, sasl.*, "
             "ssl.*)"},
    {.name = "exactly_once",
     .type = OPTDESC_BOOL,
     .def = "true",
     .help = "transactions with the feed's offsets; false: at-least-once, idempotent"},
    {.name = "topic",
     .type = OPTDESC_OBJECT,
     .help = "the topic ndd-admin creates for the feed on its cluster",
     .sub = transport_kafka_topic_desc},
    {.name = "consumer",
     .type = OPTDESC_OBJECT,
     .help = "the vendor's consumer that ndd-admin grants read access (ACLs)",
     .sub = transport_kafka_consumer_desc},
    {0},
};

/* Types and ranges are the description's; the ACL rules (a real principal, no 0 for the
 * replication factor or the retention) are feed_kafka_acl.c's. */
static int transport_kafka_check(const json_t *o, const char *prefix, jfield_err_t *err)
{
    return feed_kafka_acl_check(o, prefix, err);
}

/* Records produced to a Kafka topic, kafka://host:port/topic (adapter/transport_kafka.c,
 * docs/kafka-feed.md): the ack is an idempotent acks=all produce of every record of a batch,
 * in a transaction with the feed's offsets unless kafka.exactly_once is false. */
const transport_desc_t transport_desc_kafka = {
    .name = "kafka",
    .url_example = "kafka://kafka.vendor.example:9093/ndd.feed.vendor-a",
    .exactly_once = true,
    .provisions_topic = true,
    .schemes = {{"kafka", false, "9092"}},
    .url_form = TRANSPORT_URL_NETWORK,
    .url_path = TRANSPORT_PATH_REQUIRED,
    .ack = TRANSPORT_ACK_DURABLE,
    .encodings = {"frame", "passthrough"}, /* passthrough: xDRs of XDR, key and headers kept */
    .options = "kafka",
    .option_desc = transport_kafka_desc,
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
