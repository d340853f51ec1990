#include "feed_config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fc_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fc_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

bool feed_name_valid(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 100)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)name[i]) && !strchr("._-", name[i]))
            return false;
    return true;
}

/* Refuses keys outside `allowed` (NULL-terminated). */
static int fc_check_keys(const json_t *o, const char *const *allowed, const char *where, char *err,
                         size_t errlen)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        bool ok = false;
        for (size_t i = 0; allowed[i]; i++)
            ok |= !strcmp(k, allowed[i]);
        if (!ok)
            return fc_err(err, errlen, "%s: unknown key \"%s\"", where, k);
    }
    return 0;
}

static int fc_str(const json_t *o, const char *key, char *dst, size_t dstlen, bool required,
                  const char *where, char *err, size_t errlen)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        if (required)
            return fc_err(err, errlen, "%s.%s: required", where, key);
        return 0;
    }
    if (!json_is_string(v))
        return fc_err(err, errlen, "%s.%s: must be a string", where, key);
    if (json_string_length(v) >= dstlen)
        return fc_err(err, errlen, "%s.%s: longer than %zu bytes", where, key, dstlen - 1);
    snprintf(dst, dstlen, "%s", json_string_value(v));
    return 0;
}

static int fc_uint(const json_t *o, const char *key, uint64_t min, uint64_t max, uint64_t *dst,
                   const char *where, char *err, size_t errlen)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < (json_int_t)min ||
        (uint64_t)json_integer_value(v) > max)
        return fc_err(err, errlen, "%s.%s: must be an integer in [%llu, %llu]", where, key,
                      (unsigned long long)min, (unsigned long long)max);
    *dst = (uint64_t)json_integer_value(v);
    return 0;
}

static int fc_bool(const json_t *o, const char *key, bool *dst, const char *where, char *err,
                   size_t errlen)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_boolean(v))
        return fc_err(err, errlen, "%s.%s: must be true or false", where, key);
    *dst = json_is_true(v);
    return 0;
}

/* Secret header values from files: first line, trailing CR/LF removed; never logged. */
static char *fc_read_secret(const char *path, char *err, size_t errlen, const char *where)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fc_err(err, errlen, "%s: cannot read %s: %s", where, path, strerror(errno));
        return NULL;
    }
    char line[8192];
    if (!fgets(line, sizeof line, f)) {
        fclose(f);
        fc_err(err, errlen, "%s: %s is empty", where, path);
        return NULL;
    }
    fclose(f);
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = 0;
    char *s = strdup(line);
    explicit_bzero(line, sizeof line);
    return s;
}

static int fc_delivery(feed_config_t *c, const json_t *d, const char *where, char *err,
                       size_t errlen)
{
    static const char *const keys[] = {"max_in_flight",
                                       "timeout_ms",
                                       "retry_max_ms",
                                       "retry_initial_ms",
                                       "retry_backoff_max_ms",
                                       "batch_max",
                                       "batch_ms",
                                       "max_pending",
                                       "max_request_bytes",
                                       "fire_and_forget",
                                       "backoff_initial_ms",
                                       "backoff_max_ms",
                                       "fail_threshold",
                                       "memory_mb",
                                       NULL};
    if (!json_is_object(d))
        return fc_err(err, errlen, "%s: must be an object", where);
    if (fc_check_keys(d, keys, where, err, errlen))
        return -1;
    feed_delivery_config_t *x = &c->delivery;
    uint64_t v;
#define FC_U(key, min, max, field)                                                                 \
    do {                                                                                           \
        v = x->field;                                                                              \
        if (fc_uint(d, key, min, max, &v, where, err, errlen))                                     \
            return -1;                                                                             \
        x->field = v;                                                                              \
    } while (0)
    FC_U("max_in_flight", 1, 10000, max_in_flight);
    FC_U("timeout_ms", 1, 3600000, timeout_ms);
    FC_U("retry_max_ms", 0, 7 * 86400000ull, retry_max_ms);
    FC_U("retry_initial_ms", 1, 600000, retry_initial_ms);
    FC_U("retry_backoff_max_ms", 1, 3600000, retry_backoff_max_ms);
    FC_U("batch_max", 1, 10000, batch_max);
    FC_U("batch_ms", 0, 60000, batch_ms);
    FC_U("max_pending", 1, 1000000, max_pending);
    FC_U("max_request_bytes", 1024, 256ull << 20, max_request_bytes);
    FC_U("backoff_initial_ms", 1, 600000, backoff_initial_ms);
    FC_U("backoff_max_ms", 1, 3600000, backoff_max_ms);
    FC_U("fail_threshold", 1, 1000, fail_threshold);
    FC_U("memory_mb", 0, 65536, memory_mb);
#undef FC_U
    if (fc_bool(d, "fire_and_forget", &x->fire_and_forget, where, err, errlen))
        return -1;
    if (x->max_pending < x->batch_max) {
        if (json_object_get(d, "batch_max"))
            return fc_err(err, errlen, "%s.max_pending: must be >= batch_max", where);
        x->batch_max = x->max_pending; /* only the encoding's default was bigger */
    }
    return 0;
}

feed_config_t *feed_config_parse(const json_t *j, const char *where, char *err, size_t errlen)
{
    static const char *const keys[] = {"name",      "source_topic", "filter",   "encoding",
                                       "transport", "endpoints",    "delivery", "tls",
                                       "http",      "dlq_topic",    NULL};
    char w[256];
    if (!json_is_object(j)) {
        fc_err(err, errlen, "%s: a feed must be an object", where);
        return NULL;
    }
    if (fc_check_keys(j, keys, where, err, errlen))
        return NULL;
    feed_config_t *c = calloc(1, sizeof *c);
    if (!c) {
        fc_err(err, errlen, "out of memory");
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
    char enc[32] = "json", tr[32] = "http2";
    if (fc_str(j, "name", c->name, sizeof c->name, true, where, err, errlen) ||
        fc_str(j, "source_topic", c->source_topic, sizeof c->source_topic, false, where, err,
               errlen) ||
        fc_str(j, "dlq_topic", c->dlq_topic, sizeof c->dlq_topic, false, where, err, errlen) ||
        fc_str(j, "encoding", enc, sizeof enc, false, where, err, errlen) ||
        fc_str(j, "transport", tr, sizeof tr, false, where, err, errlen))
        goto fail;
    if (!feed_name_valid(c->name)) {
        fc_err(err, errlen, "%s.name: \"%s\" must match [A-Za-z0-9._-]{1,100}", where, c->name);
        goto fail;
    }
    if (!c->source_topic[0])
        strcpy(c->source_topic, "MAIN");
    if (!c->dlq_topic[0])
        snprintf(c->dlq_topic, sizeof c->dlq_topic, "ndd.dlq.%s", c->name);
    snprintf(c->group_id, sizeof c->group_id, "ndd-feed-%s", c->name);
    c->encoding = encoding_find(enc);
    if (!c->encoding) {
        fc_err(err, errlen, "%s.encoding: unknown encoding \"%s\" (json, frame)", where, enc);
        goto fail;
    }
    if (transport_kind_parse(tr, &c->transport) < 0) {
        fc_err(err, errlen, "%s.transport: unknown transport \"%s\" (http2, tcp, tls)", where, tr);
        goto fail;
    }
    if (c->transport != TRANSPORT_HTTP2 && strcmp(c->encoding->name, "frame")) {
        fc_err(err, errlen, "%s.encoding: transport %s carries binary frames: use \"frame\"", where,
               tr);
        goto fail;
    }
    json_t *f = json_object_get(j, "filter");
    if (f && !json_is_null(f)) {
        char ferr[400];
        filter_t *tmp = filter_compile(f, ferr, sizeof ferr);
        if (!tmp) {
            fc_err(err, errlen, "%s.filter: %s", where, ferr);
            goto fail;
        }
        filter_release(tmp);
        c->filter_json = json_incref(f);
    }
    json_t *eps = json_object_get(j, "endpoints");
    if (!json_is_array(eps) || json_array_size(eps) == 0 ||
        json_array_size(eps) > FEED_MAX_ENDPOINTS) {
        fc_err(err, errlen, "%s.endpoints: must be an array of 1 to %d endpoints", where,
               FEED_MAX_ENDPOINTS);
        goto fail;
    }
    size_t i;
    json_t *e;
    json_array_foreach(eps, i, e)
    {
        static const char *const ekeys[] = {"url", "weight", NULL};
        snprintf(w, sizeof w, "%s.endpoints[%zu]", where, i);
        feed_endpoint_config_t *ec = &c->endpoints[i];
        ec->weight = 1;
        uint64_t wt = 1;
        if (!json_is_object(e)) {
            fc_err(err, errlen, "%s: must be an object", w);
            goto fail;
        }
        if (fc_check_keys(e, ekeys, w, err, errlen) ||
            fc_str(e, "url", ec->url, sizeof ec->url, true, w, err, errlen) ||
            fc_uint(e, "weight", 1, 1000, &wt, w, err, errlen))
            goto fail;
        ec->weight = (unsigned)wt;
        char uerr[300];
        if (transport_url_parse(ec->url, &ec->u, uerr, sizeof uerr) < 0) {
            fc_err(err, errlen, "%s.url: %s", w, uerr);
            goto fail;
        }
        if (ec->u.kind != c->transport) {
            fc_err(err, errlen, "%s.url: scheme does not match transport \"%s\"", w, tr);
            goto fail;
        }
        c->n_endpoints++;
    }
    /* A frame carries any number of records by design (docs/encodings.md), so frames batch
     * by default: what one poll gave, up to 16 per frame, without waiting (batch_ms 0). A
     * JSON request with several copies is an array, which an endpoint must be told to
     * expect: batch_max stays 1 unless the feed asks for more. */
    if (c->encoding && !strcmp(c->encoding->name, "frame"))
        c->delivery.batch_max = FEED_FRAME_BATCH_DEFAULT;
    json_t *d = json_object_get(j, "delivery");
    if (d) {
        snprintf(w, sizeof w, "%s.delivery", where);
        if (fc_delivery(c, d, w, err, errlen))
            goto fail;
    }
    if (c->delivery.fire_and_forget && c->transport == TRANSPORT_HTTP2) {
        fc_err(err, errlen, "%s.delivery.fire_and_forget: only for tcp and tls", where);
        goto fail;
    }
    json_t *t = json_object_get(j, "tls");
    if (t && !json_is_null(t)) {
        static const char *const tkeys[] = {"ca_file", "cert_file", "key_file", "key_password_file",
                                            "verify",  "sni",       NULL};
        snprintf(w, sizeof w, "%s.tls", where);
        if (!json_is_object(t)) {
            fc_err(err, errlen, "%s: must be an object", w);
            goto fail;
        }
        if (fc_check_keys(t, tkeys, w, err, errlen) ||
            fc_str(t, "ca_file", c->ca_file, sizeof c->ca_file, false, w, err, errlen) ||
            fc_str(t, "cert_file", c->cert_file, sizeof c->cert_file, false, w, err, errlen) ||
            fc_str(t, "key_file", c->key_file, sizeof c->key_file, false, w, err, errlen) ||
            fc_str(t, "key_password_file", c->key_password_file, sizeof c->key_password_file, false,
                   w, err, errlen) ||
            fc_str(t, "sni", c->sni, sizeof c->sni, false, w, err, errlen) ||
            fc_bool(t, "verify", &c->verify, w, err, errlen))
            goto fail;
        if (!c->cert_file[0] != !c->key_file[0]) {
            fc_err(err, errlen, "%s: cert_file and key_file go together", w);
            goto fail;
        }
    }
    json_t *h = json_object_get(j, "http");
    if (h && !json_is_null(h)) {
        static const char *const hkeys[] = {"path", "method", "headers", "header_files", NULL};
        snprintf(w, sizeof w, "%s.http", where);
        if (!json_is_object(h)) {
            fc_err(err, errlen, "%s: must be an object", w);
            goto fail;
        }
        if (fc_check_keys(h, hkeys, w, err, errlen) ||
            fc_str(h, "path", c->path, sizeof c->path, false, w, err, errlen) ||
            fc_str(h, "method", c->method, sizeof c->method, false, w, err, errlen))
            goto fail;
        if (c->path[0] && c->path[0] != '/') {
            fc_err(err, errlen, "%s.path: must start with /", w);
            goto fail;
        }
        const char *groups[2] = {"headers", "header_files"};
        for (int g = 0; g < 2; g++) {
            json_t *hs = json_object_get(h, groups[g]);
            if (!hs)
                continue;
            if (!json_is_object(hs)) {
                fc_err(err, errlen, "%s.%s: must be an object of strings", w, groups[g]);
                goto fail;
            }
            const char *k;
            json_t *v;
            json_object_foreach(hs, k, v)
            {
                char hw[400];
                snprintf(hw, sizeof hw, "%s.%s.%s", w, groups[g], k);
                if (!json_is_string(v)) {
                    fc_err(err, errlen, "%s: must be a string", hw);
                    goto fail;
                }
                if (c->n_headers == TRANSPORT_MAX_HEADERS || strlen(k) >= 64 || !k[0]) {
                    fc_err(err, errlen, "%s: too many headers or name too long", hw);
                    goto fail;
                }
                for (const char *p = k; *p; p++)
                    if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) ||
                          strchr("-_", *p))) {
                        fc_err(err, errlen, "%s: header names are lowercase tokens", hw);
                        goto fail;
                    }
                char *val = g == 0 ? strdup(json_string_value(v))
                                   : fc_read_secret(json_string_value(v), err, errlen, hw);
                if (!val)
                    goto fail;
                strcpy(c->header_names[c->n_headers], k);
                c->header_values[c->n_headers++] = val;
            }
        }
    }
    c->raw = json_deep_copy(j);
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
    json_decref(c->raw);
    free(c);
}

bool feed_config_equal(const feed_config_t *a, const feed_config_t *b)
{
    return a && b && a->raw && b->raw && json_equal(a->raw, b->raw);
}
