#include "feed_config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "optdesc.h"

#define OPTDESC_MAX_FEED_KEYS 16 /* rows of feed_config_desc */

static const feed_config_opts_t feed_config_worker_opts = {.read_secrets = true};

void feed_config_err_format(const jfield_err_t *err, const char *where, char *out, size_t outlen)
{
    const char *sep = where && *where && err->path[0] ? "." : "";
    snprintf(out, outlen, "%s%s%s: %s", where ? where : "", sep, err->path, err->reason);
}

static int feed_topic(const json_t *o, const char *key, char *dst, size_t dstlen, jfield_err_t *err)
{
    const char *s;
    if (jfield_string(o, key, "", false, 249, &s, err))
        return -1;
    if (!s)
        return 0;
    if (!jfield_topic_ok(s))
        return jfield_fail(err, JFIELD_INVALID, key,
                           "\"%s\" is not a valid Kafka topic name: 1 to 249 characters of A-Z "
                           "a-z 0-9 . _ -",
                           s);
    snprintf(dst, dstlen, "%s", s);
    return 0;
}

/* The feed's delivery member (docs/api.md, "Feed"): one row per setting, the check and the
 * schema alike. */
#define FD(field) OPTDESC_STORE(feed_delivery_config_t, field)
static const optdesc_t feed_delivery_desc[] = {
    {.name = "max_in_flight",
     .type = OPTDESC_INT,
     .min = 1,
     .max = 10000,
     .def = "64",
     .unit = "requests",
     .help = "requests or frames awaiting their answer, per endpoint",
     FD(max_in_flight)},
    {.name = "timeout_ms",
     .type = OPTDESC_INT,
     .min = 1,
     .max = 3600000,
     .def = "5000",
     .unit = "ms",
     .help = "how long one request or frame may wait for its answer",
     FD(timeout_ms)},
    {.name = "retry_max_ms",
     .type = OPTDESC_INT,
     .max = INT64_C(7) * 86400000,
     .def = "300000",
     .unit = "ms",
     .help = "how long a copy is retried before it goes to the dead-letter topic",
     FD(retry_max_ms)},
    {.name = "retry_initial_ms",
     .type = OPTDESC_INT,
     .min = 1,
     .max = 600000,
     .def = "100",
     .unit = "ms",
     .help = "the first retry's delay",
     FD(retry_initial_ms)},
    {.name = "retry_backoff_max_ms",
     .type = OPTDESC_INT,
     .min = 1,
     .max = 3600000,
     .def = "5000",
     .unit = "ms",
     .help = "the longest delay between two retries",
     FD(retry_backoff_max_ms)},
    {.name = "batch_max",
     .type = OPTDESC_INT,
     .min = 1,
     .max = 10000,
     .unit = "messages",
     .help = "copies per request or frame; default: the encoding's (json 1, frame 16)",
     FD(batch_max)},
    {.name = "batch_ms",
     .type = OPTDESC_INT,
     .max = 60000,
     .def = "0",
     .unit = "ms",
     .help = "the longest wait to fill a batch",
     FD(batch_ms)},
    {.name = "max_pending",
     .type = OPTDESC_INT,
     .min = 1,
     .max = 1000000,
     .def = "1024",
     .unit = "messages",
     .help =
         "copies the feed holds (batched, in flight, retrying), at least batch_max; when full the "
         "feed stops reading",
     FD(max_pending)},
    {.name = "max_request_bytes",
     .type = OPTDESC_INT,
     .min = 1024,
     .max = INT64_C(256) << 20,
     .def = "4194304",
     .unit = "bytes",
     .help = "the largest encoded request or frame",
     FD(max_request_bytes)},
    {.name = "fire_and_forget",
     .type = OPTDESC_BOOL,
     .def = "false",
     .help = "count a copy delivered once written, without an answer (transports that allow it)",
     FD(fire_and_forget)},
    {.name = "backoff_initial_ms",
     .type = OPTDESC_INT,
     .min = 1,
     .max = 600000,
     .def = "100",
     .unit = "ms",
     .help = "the first reconnect delay of an endpoint",
     FD(backoff_initial_ms)},
    {.name = "backoff_max_ms",
     .type = OPTDESC_INT,
     .min = 1,
     .max = 3600000,
     .def = "10000",
     .unit = "ms",
     .help = "the longest reconnect delay",
     FD(backoff_max_ms)},
    {.name = "fail_threshold",
     .type = OPTDESC_INT,
     .min = 1,
     .max = 1000,
     .def = "5",
     .unit = "failures",
     .help = "consecutive failures that take an endpoint out of the rotation",
     FD(fail_threshold)},
    {.name = "memory_mb",
     .type = OPTDESC_INT,
     .max = 65536,
     .def = "0",
     .unit = "MiB",
     .help =
         "the feed's memory budget (fetch buffers, copies held); 0: the adapter's --feed-memory-mb",
     FD(memory_mb)},
    {0},
};
#undef FD

#define FT(field) OPTDESC_STORE(feed_config_t, field)
static const optdesc_t feed_tls_desc[] = {
    {.name = "ca_file",
     .type = OPTDESC_STRING,
     .help = "CA certificates (PEM) that verify the endpoint; default: the system's",
     FT(ca_file)},
    {.name = "cert_file",
     .type = OPTDESC_STRING,
     .help = "client certificate (PEM), with key_file, for endpoints that require one",
     FT(cert_file)},
    {.name = "key_file",
     .type = OPTDESC_STRING,
     .flags = OPTDESC_SECRET,
     .help = "the client certificate's private key (PEM file)",
     FT(key_file)},
    {.name = "key_password_file",
     .type = OPTDESC_STRING,
     .flags = OPTDESC_SECRET,
     .help = "a file holding the private key's password",
     FT(key_password_file)},
    {.name = "verify",
     .type = OPTDESC_BOOL,
     .def = "true",
     .help = "verify the endpoint's certificate and name (turn off only in a lab)",
     FT(verify)},
    {.name = "sni",
     .type = OPTDESC_STRING,
     .max = 253,
     .help = "server name sent and verified; default: the URL's host",
     FT(sni)},
    {0},
};
#undef FT

static const char *const feed_http_methods[] = {"POST", "PUT", "PATCH", NULL};
static const optdesc_t feed_http_desc[] = {
    {.name = "path",
     .type = OPTDESC_STRING,
     .max = 511,
     .help = "request path (starts with /); default: the URL's path"},
    {.name = "method",
     .type = OPTDESC_ENUM,
     .def = "\"POST\"",
     .help = "request method",
     .choices = feed_http_methods},
    {.name = "headers",
     .type = OPTDESC_MAP,
     .max = TRANSPORT_MAX_HEADERS,
     .help = "request header fields: lowercase name to value"},
    {.name = "header_files",
     .type = OPTDESC_MAP,
     .flags = OPTDESC_SECRET,
     .max = TRANSPORT_MAX_HEADERS,
     .help = "header fields whose values are secrets: name to the file holding the value (e.g. "
             "authorization)"},
    {0},
};

static const optdesc_t feed_endpoint_desc[] = {
    {.name = "url",
     .type = OPTDESC_STRING,
     .flags = OPTDESC_REQUIRED,
     .max = 599,
     .help = "where copies go; its scheme names the transport's (see url_example)"},
    {.name = "weight",
     .type = OPTDESC_INT,
     .min = 1,
     .max = 1000,
     .def = "1",
     .help = "share of the copies, against the others'"},
    {0},
};

/* The feed object's members. transport and encoding take their choices from the tables
 * (transport_desc.h, encoding.h), filled in by feed_schema_json. */
const optdesc_t feed_config_desc[] = {
    {.name = "name",
     .type = OPTDESC_STRING,
     .flags = OPTDESC_REQUIRED,
     .max = FEED_NAME_MAX,
     .help = "the feed's name, [A-Za-z0-9._-] (part of its consumer group and dead-letter topic)"},
    {.name = "source_topic",
     .type = OPTDESC_STRING,
     .max = 249,
     .def = "\"MAIN\"",
     .help = "the topic the feed reads: MAIN (copies), XDR (xDRs) or an ingress topic"},
    {.name = "dlq_topic",
     .type = OPTDESC_STRING,
     .max = 249,
     .help = "where refused copies go, with the reason; default: ndd.dlq.<name>"},
    {.name = "filter",
     .type = OPTDESC_FILTER,
     .help = "which copies the feed carries: a filter's name, an inline filter, or null (all)"},
    {.name = "transport",
     .type = OPTDESC_ENUM,
     .def = "\"http2\"",
     .help = "how copies reach the endpoints"},
    {.name = "encoding",
     .type = OPTDESC_ENUM,
     .def = "\"json\"",
     .help = "how copies are written; each transport carries some encodings"},
    {.name = "endpoints",
     .type = OPTDESC_ARRAY,
     .flags = OPTDESC_REQUIRED,
     .min = 1,
     .max = FEED_MAX_ENDPOINTS,
     .help = "the endpoints, weighted, with failover",
     .sub = feed_endpoint_desc},
    {.name = "delivery",
     .type = OPTDESC_OBJECT,
     .help = "in flight, timeouts, retries, batches",
     .sub = feed_delivery_desc},
    {.name = "tls",
     .type = OPTDESC_OBJECT,
     .help = "TLS to the endpoints (https, tls schemes)",
     .sub = feed_tls_desc},
    {.name = "http",
     .type = OPTDESC_OBJECT,
     .help = "HTTP/2 requests (transport http2)",
     .sub = feed_http_desc},
    {0},
};

static int feed_delivery(feed_config_t *c, const json_t *j, jfield_err_t *err)
{
    json_t *d;
    if (jfield_object(j, "delivery", "", false, &d, err))
        return -1;
    feed_delivery_config_t *x = &c->delivery;
    if (d && optdesc_check(feed_delivery_desc, d, "delivery", x, err))
        return -1;
    if (x->max_pending < x->batch_max) {
        if (d && json_object_get(d, "batch_max"))
            return jfield_fail(err, JFIELD_INVALID, "delivery.max_pending",
                               "must be >= batch_max (%u)", x->batch_max);
        x->batch_max = x->max_pending; /* only the encoding's default was bigger */
    }
    if (x->fire_and_forget && !c->transport->fire_and_forget) {
        char names[128];
        transport_names(names, sizeof names, true);
        return jfield_fail(err, JFIELD_INVALID, "delivery.fire_and_forget",
                           "only for transports %s", names);
    }
    return 0;
}

static int feed_endpoints(feed_config_t *c, const json_t *j, jfield_err_t *err)
{
    json_t *eps = json_object_get(j, "endpoints");
    if (!eps)
        return jfield_fail(err, JFIELD_MISSING, "endpoints", "field \"endpoints\" is required");
    if (!json_is_array(eps))
        return jfield_fail(err, JFIELD_WRONG_TYPE, "endpoints", "expected array, got %s",
                           jfield_type_name(eps));
    size_t n = json_array_size(eps);
    if (n == 0 || n > FEED_MAX_ENDPOINTS)
        return jfield_fail(err, JFIELD_INVALID, "endpoints", "a feed needs 1 to %d endpoints",
                           FEED_MAX_ENDPOINTS);
    for (size_t i = 0; i < n; i++) {
        char at[48], urlpath[64];
        snprintf(at, sizeof at, "endpoints[%zu]", i);
        snprintf(urlpath, sizeof urlpath, "%s.url", at);
        json_t *e = json_array_get(eps, i);
        feed_endpoint_config_t *ec = &c->endpoints[i];
        if (!json_is_object(e))
            return jfield_fail(err, JFIELD_WRONG_TYPE, at, "expected object, got %s",
                               jfield_type_name(e));
        if (optdesc_check(feed_endpoint_desc, e, at, NULL, err))
            return -1;
        snprintf(ec->url, sizeof ec->url, "%s", json_string_value(json_object_get(e, "url")));
        char reason[400];
        if (transport_url_parse(ec->url, &ec->u, reason, sizeof reason) < 0)
            return jfield_fail(err, JFIELD_BAD_URL, urlpath, "%s", reason);
        if (ec->u.kind != c->transport) {
            char schemes[64];
            transport_schemes(c->transport, schemes, sizeof schemes);
            return jfield_fail(err, JFIELD_BAD_URL, urlpath,
                               "scheme does not match transport \"%s\" (%s)", c->transport->name,
                               schemes);
        }
        json_t *w = json_object_get(e, "weight");
        ec->weight = w ? (unsigned)json_integer_value(w) : 1;
        c->n_endpoints++;
    }
    return 0;
}

static int feed_tls(feed_config_t *c, const json_t *j, jfield_err_t *err)
{
    json_t *t;
    if (jfield_object(j, "tls", "", false, &t, err))
        return -1;
    if (!t)
        return 0;
    if (optdesc_check(feed_tls_desc, t, "tls", c, err))
        return -1;
    if (!c->cert_file[0] != !c->key_file[0])
        return jfield_fail(err, JFIELD_INVALID, c->cert_file[0] ? "tls.key_file" : "tls.cert_file",
                           "cert_file and key_file go together");
    return 0;
}

/* Secret header values from files: first line, trailing CR/LF removed; never logged. */
static char *feed_read_secret(const char *file, const char *path, jfield_err_t *err)
{
    FILE *f = fopen(file, "r");
    if (!f) {
        jfield_fail(err, JFIELD_INVALID, path, "cannot read %s: %s", file, strerror(errno));
        return NULL;
    }
    char line[8192];
    if (!fgets(line, sizeof line, f)) {
        fclose(f);
        jfield_fail(err, JFIELD_INVALID, path, "%s is empty", file);
        return NULL;
    }
    fclose(f);
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = 0;
    char *s = NULL;
    bool ctl = false;
    for (size_t i = 0; i < n; i++)
        ctl |= (unsigned char)line[i] < 0x20 && line[i] != '\t';
    if (ctl)
        jfield_fail(err, JFIELD_INVALID, path, "%s holds a control character", file);
    else if (!(s = strdup(line)))
        jfield_fail(err, JFIELD_NOMEM, path, "out of memory");
    explicit_bzero(line, sizeof line);
    return s;
}

/* An HTTP/2 field name: a non-empty token of lowercase characters (RFC 9113 8.2.1). */
static bool feed_header_name_ok(const char *k)
{
    if (!*k || strlen(k) >= 64)
        return false;
    for (const char *p = k; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              strchr("!#$%&'*+-.^_`|~", *p)))
            return false;
    return true;
}

/* http.headers (values) or http.header_files (names of files holding secret values). */
static int feed_headers(feed_config_t *c, const json_t *h, int g, const feed_config_opts_t *o,
                        jfield_err_t *err)
{
    static const char *const groups[] = {"headers", "header_files"};
    char gpath[32];
    snprintf(gpath, sizeof gpath, "http.%s", groups[g]);
    json_t *hs;
    if (jfield_object(h, groups[g], "http", false, &hs, err))
        return -1;
    if (!hs)
        return 0;
    if (c->n_headers + json_object_size(hs) > TRANSPORT_MAX_HEADERS)
        return jfield_fail(err, JFIELD_INVALID, gpath, "more than %d headers in all",
                           TRANSPORT_MAX_HEADERS);
    const char *k;
    json_t *v;
    json_object_foreach(hs, k, v)
    {
        char path[160];
        snprintf(path, sizeof path, "%s.%.100s", gpath, k);
        if (!feed_header_name_ok(k))
            return jfield_fail(err, JFIELD_INVALID, path,
                               "not a valid HTTP/2 header name (a lowercase token of 1 to 63 "
                               "characters)");
        if (!json_is_string(v))
            return jfield_fail(err, JFIELD_WRONG_TYPE, path, "expected string, got %s",
                               jfield_type_name(v));
        for (const char *p = json_string_value(v); *p; p++)
            if ((unsigned char)*p < 0x20 && *p != '\t')
                return jfield_fail(err, JFIELD_INVALID, path,
                                   "header value contains a control character");
        char *val = NULL;
        if (g == 0 && !(val = strdup(json_string_value(v))))
            return jfield_fail(err, JFIELD_NOMEM, path, "out of memory");
        if (g == 1 && o->read_secrets && !(val = feed_read_secret(json_string_value(v), path, err)))
            return -1;
        snprintf(c->header_names[c->n_headers], sizeof c->header_names[0], "%s", k);
        c->header_values[c->n_headers++] = val;
    }
    return 0;
}

static int feed_http(feed_config_t *c, const json_t *j, const feed_config_opts_t *o,
                     jfield_err_t *err)
{
    json_t *h;
    if (jfield_object(j, "http", "", false, &h, err))
        return -1;
    if (!h)
        return 0;
    if (optdesc_check(feed_http_desc, h, "http", NULL, err))
        return -1;
    const char *path = json_string_value(json_object_get(h, "path"));
    const char *method = json_string_value(json_object_get(h, "method"));
    if (path)
        snprintf(c->path, sizeof c->path, "%s", path);
    if (c->path[0] && c->path[0] != '/')
        return jfield_fail(err, JFIELD_INVALID, "http.path", "must start with '/'");
    if (method)
        snprintf(c->method, sizeof c->method, "%s", method);
    if (feed_headers(c, h, 0, o, err) || feed_headers(c, h, 1, o, err))
        return -1;
    return 0;
}

static int feed_filter(feed_config_t *c, const json_t *j, const feed_config_opts_t *o,
                       jfield_err_t *err)
{
    json_t *f = json_object_get(j, "filter");
    if (!f || json_is_null(f))
        return 0;
    if (json_is_string(f) && o->filter_by_name) {
        const char *name = json_string_value(f);
        if (!jfield_name_ok(name, FEED_REF_NAME_MAX))
            return jfield_fail(err, JFIELD_INVALID, "filter", "\"%s\" is not a valid filter name",
                               name);
        snprintf(c->filter_ref, sizeof c->filter_ref, "%s", name);
        return 0;
    }
    if (!json_is_object(f))
        return jfield_fail(err, JFIELD_WRONG_TYPE, "filter", "expected %s, got %s",
                           o->filter_by_name
                               ? "the name of a filter, an inline filter object or null"
                               : "an inline filter object or null",
                           jfield_type_name(f));
    char msg[512] = "";
    filter_t *tmp = filter_compile(f, msg, sizeof msg);
    if (!tmp) {
        jfield_from_filter(err, "filter", msg);
        return -1;
    }
    filter_release(tmp);
    c->filter_json = json_incref(f);
    return 0;
}

/* name, topics, encoding and transport: what the rest of the feed is checked against. */
static int feed_head(feed_config_t *c, const json_t *j, const feed_config_opts_t *o,
                     jfield_err_t *err)
{
    size_t name_max = o->name_max ? o->name_max : FEED_NAME_MAX;
    const char *name, *enc, *tr;
    if (jfield_string(j, "name", "", true, name_max, &name, err))
        return -1;
    if (!jfield_name_ok(name, name_max))
        return jfield_fail(err, JFIELD_INVALID, "name",
                           "\"%s\" is not a valid name: 1 to %zu characters of A-Z a-z 0-9 . _ -",
                           name, name_max);
    snprintf(c->name, sizeof c->name, "%s", name);
    if (feed_topic(j, "source_topic", c->source_topic, sizeof c->source_topic, err) ||
        feed_topic(j, "dlq_topic", c->dlq_topic, sizeof c->dlq_topic, err) ||
        jfield_string(j, "encoding", "", false, 64, &enc, err) ||
        jfield_string(j, "transport", "", false, 64, &tr, err))
        return -1;
    c->encoding = encoding_find(enc ? enc : "json");
    if (!c->encoding) {
        char names[128];
        encoding_names(names, sizeof names);
        return jfield_fail(err, JFIELD_INVALID, "encoding", "\"%s\" is not one of %s", enc, names);
    }
    if (!(c->transport = transport_find(tr ? tr : "http2"))) {
        char names[128];
        transport_names(names, sizeof names, false);
        return jfield_fail(err, JFIELD_INVALID, "transport", "\"%s\" is not one of %s", tr, names);
    }
    if (!transport_takes_encoding(c->transport, c->encoding->name)) {
        char names[128];
        transport_encodings(c->transport, names, sizeof names);
        return jfield_fail(err, JFIELD_INVALID, "encoding",
                           "transport %s does not carry \"%s\": use %s", c->transport->name,
                           c->encoding->name, names);
    }
    if (!c->source_topic[0])
        strcpy(c->source_topic, "MAIN");
    if (!c->dlq_topic[0])
        snprintf(c->dlq_topic, sizeof c->dlq_topic, "ndd.dlq.%s", c->name);
    snprintf(c->group_id, sizeof c->group_id, "ndd-feed-%s", c->name);
    /* The encoding says how many messages a batch holds when the feed does not: frames batch
     * (docs/encodings.md), a JSON array must be asked for. */
    if (c->encoding->default_batch)
        c->delivery.batch_max = c->encoding->default_batch;
    return 0;
}

/* The transport's own member (transport_desc_t.options): an object of its option_keys whose
 * values its check_options accepts, kept for the implementation. */
static int feed_transport_options(feed_config_t *c, const json_t *j, jfield_err_t *err)
{
    const transport_desc_t *d = c->transport;
    json_t *t;
    if (!d->options)
        return 0;
    if (jfield_object(j, d->options, "", false, &t, err))
        return -1;
    if (!t)
        return 0;
    if (optdesc_check(d->option_desc, t, d->options, NULL, err) ||
        (d->check_options && d->check_options(t, d->options, err)))
        return -1;
    c->transport_options = json_incref(t);
    return 0;
}

/* Top-level members: the fixed ones, and the options member of every transport. A member
 * naming another transport's options is refused by feed_transport_check below. */
static int feed_keys(const json_t *j, const feed_config_opts_t *o, jfield_err_t *err)
{
    const char *keys[OPTDESC_MAX_FEED_KEYS + TRANSPORT_MAX + ENCODING_MAX + 1];
    size_t n = 0;
    for (const optdesc_t *d = feed_config_desc; d->type != OPTDESC_END; d++)
        keys[n++] = d->name;
    for (size_t i = 0; i < transport_count(); i++)
        if (transport_at(i)->options)
            keys[n++] = transport_at(i)->options;
    for (size_t i = 0; i < encoding_count(); i++)
        if (encoding_at(i)->options)
            keys[n++] = encoding_at(i)->options;
    keys[n] = NULL;
    return jfield_unknown(j, keys, o->ignore_keys, "", err);
}

/* The encoding's own member (encoding_t.options), checked by the encoding, kept for the
 * feed's thread (encoding_t.thread_start). */
static int feed_encoding_options(feed_config_t *c, const json_t *j, jfield_err_t *err)
{
    const encoding_t *e = c->encoding;
    for (size_t i = 0; i < encoding_count(); i++) {
        const encoding_t *o = encoding_at(i);
        if (o != e && o->options && json_object_get(j, o->options))
            return jfield_fail(err, JFIELD_UNKNOWN, o->options,
                               "\"%s\" configures encoding %s; this feed uses %s", o->options,
                               o->name, e->name);
    }
    json_t *t = e->options ? json_object_get(j, e->options) : NULL;
    if (!t)
        return 0;
    if (e->option_desc && optdesc_check(e->option_desc, t, e->options, NULL, err))
        return -1;
    char why[300];
    if (e->check_options && e->check_options(t, why, sizeof why))
        return jfield_fail(err, JFIELD_INVALID, e->options, "%s", why);
    c->encoding_options = json_incref(t);
    return 0;
}

static int feed_transport_check(const feed_config_t *c, const json_t *j, jfield_err_t *err)
{
    for (size_t i = 0; i < transport_count(); i++) {
        const transport_desc_t *d = transport_at(i);
        if (d != c->transport && d->options &&
            (!c->transport->options || strcmp(d->options, c->transport->options)) &&
            json_object_get(j, d->options))
            return jfield_fail(err, JFIELD_UNKNOWN, d->options,
                               "\"%s\" configures transport %s; this feed uses %s", d->options,
                               d->name, c->transport->name);
    }
    return 0;
}

feed_config_t *feed_config_parse(const json_t *j, const feed_config_opts_t *opts, jfield_err_t *err)
{
    const feed_config_opts_t *o = opts ? opts : &feed_config_worker_opts;
    if (!json_is_object(j)) {
        jfield_fail(err, JFIELD_WRONG_TYPE, "", "a feed must be a JSON object");
        return NULL;
    }
    if (feed_keys(j, o, err))
        return NULL;
    feed_config_t *c = calloc(1, sizeof *c);
    if (!c) {
        jfield_fail(err, JFIELD_NOMEM, "", "out of memory");
        return NULL;
    }
    c->verify = true;
    c->delivery = (feed_delivery_config_t){.max_in_flight = 64,
                                           .timeout_ms = 5000,
                                           .retry_max_ms = 300000,
                                           .retry_initial_ms = 100,
                                           .retry_backoff_max_ms = 5000,
                                           .batch_max = 1,
                                           .batch_ms = 0,
                                           .max_pending = 1024,
                                           .max_request_bytes = 4u << 20,
                                           .backoff_initial_ms = 100,
                                           .backoff_max_ms = 10000,
                                           .fail_threshold = 5};
    strcpy(c->method, "POST");
    if (feed_head(c, j, o, err) || feed_transport_check(c, j, err) ||
        feed_transport_options(c, j, err) || feed_encoding_options(c, j, err) ||
        feed_filter(c, j, o, err) || feed_endpoints(c, j, err) || feed_delivery(c, j, err) ||
        feed_tls(c, j, err) || feed_http(c, j, o, err))
        goto fail;
    if (!(c->raw = json_deep_copy(j))) {
        jfield_fail(err, JFIELD_NOMEM, "", "out of memory");
        goto fail;
    }
    return c;
fail:
    feed_config_free(c);
    return NULL;
}

void feed_config_free(feed_config_t *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_headers; i++) {
        if (c->header_values[i]) {
            explicit_bzero(c->header_values[i], strlen(c->header_values[i]));
            free(c->header_values[i]);
        }
    }
    json_decref(c->filter_json);
    json_decref(c->transport_options);
    json_decref(c->encoding_options);
    json_decref(c->raw);
    free(c);
}

bool feed_config_equal(const feed_config_t *a, const feed_config_t *b)
{
    return a && b && a->raw && b->raw && json_equal(a->raw, b->raw);
}
