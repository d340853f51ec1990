/* The feed object: the adapter's feed format (docs/adapter.md; adapter/feed_config.c is the
 * parser the workers run), with "filter" either the name of a filter object (resolved when
 * published) or an inline filter definition. Keys, ranges and limits mirror the adapter's, so
 * a feed the admin accepts is one the adapter applies; where the admin is stricter (names of
 * at most 64 characters, methods POST/PUT/PATCH) it says so in docs/api.md. */
#include <stdio.h>
#include <string.h>

#include "admin.h"
#include "admin_validate.h"

#define AV_MAX_ENDPOINTS 32 /* adapter FEED_MAX_ENDPOINTS */
#define AV_MAX_HEADERS 16   /* adapter TRANSPORT_MAX_HEADERS, headers and header_files together */

static const char *const av_feed_fields[] = {"name",     "source_topic", "dlq_topic", "filter",
                                             "encoding", "transport",    "endpoints", "delivery",
                                             "tls",      "http",         NULL};

static int av_endpoints(json_t *body, const char *transport, admin_err_t *err)
{
    json_t *eps = json_object_get(body, "endpoints");
    if (!eps) {
        admin_err_set(err, 400, "missing field", "endpoints", "field \"endpoints\" is required");
        return -1;
    }
    if (!json_is_array(eps)) {
        admin_err_set(err, 400, "wrong type", "endpoints", "expected array");
        return -1;
    }
    size_t n = json_array_size(eps);
    if (n == 0 || n > AV_MAX_ENDPOINTS) {
        admin_err_set(err, 422, "invalid value", "endpoints", "a feed needs 1 to %d endpoints",
                      AV_MAX_ENDPOINTS);
        return -1;
    }
    static const char *const http_schemes[] = {"http", "https", NULL};
    static const char *const tcp_schemes[] = {"tcp", NULL};
    static const char *const tls_schemes[] = {"tls", NULL};
    const char *const *schemes = http_schemes;
    if (transport && strcmp(transport, "tcp") == 0)
        schemes = tcp_schemes;
    else if (transport && strcmp(transport, "tls") == 0)
        schemes = tls_schemes;
    static const char *const ep_fields[] = {"url", "weight", NULL};
    for (size_t i = 0; i < n; i++) {
        char prefix[48];
        snprintf(prefix, sizeof(prefix), "endpoints[%zu]", i);
        json_t *ep = json_array_get(eps, i);
        if (!json_is_object(ep)) {
            admin_err_set(err, 400, "wrong type", prefix, "expected object");
            return -1;
        }
        if (av_unknown(ep, ep_fields, prefix, false, err) != 0)
            return -1;
        const char *url;
        if (av_string(ep, "url", prefix, true, 2048, &url, err) != 0)
            return -1;
        char reason[200];
        if (av_url_check(url, schemes, schemes == http_schemes, reason, sizeof(reason)) != 0) {
            char path[80];
            snprintf(path, sizeof(path), "%s.url", prefix);
            admin_err_set(err, 422, "bad URL", path, "%s", reason);
            return -1;
        }
        if (av_int(ep, "weight", prefix, false, 1, 1000, err) != 0)
            return -1;
    }
    return 0;
}

static int av_delivery(json_t *body, admin_err_t *err)
{
    json_t *d;
    if (av_object(body, "delivery", "", false, &d, err) != 0)
        return -1;
    if (!d)
        return 0;
    static const char *const fields[] = {"max_in_flight",
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
                                         NULL};
    if (av_unknown(d, fields, "delivery", false, err) != 0 ||
        av_int(d, "max_in_flight", "delivery", false, 1, 10000, err) != 0 ||
        av_int(d, "timeout_ms", "delivery", false, 1, 3600000, err) != 0 ||
        av_int(d, "retry_max_ms", "delivery", false, 0, INT64_C(7) * 86400000, err) != 0 ||
        av_int(d, "retry_initial_ms", "delivery", false, 1, 600000, err) != 0 ||
        av_int(d, "retry_backoff_max_ms", "delivery", false, 1, 3600000, err) != 0 ||
        av_int(d, "batch_max", "delivery", false, 1, 10000, err) != 0 ||
        av_int(d, "batch_ms", "delivery", false, 0, 60000, err) != 0 ||
        av_int(d, "max_pending", "delivery", false, 1, 1000000, err) != 0 ||
        av_int(d, "max_request_bytes", "delivery", false, 1024, INT64_C(256) << 20, err) != 0 ||
        av_bool(d, "fire_and_forget", "delivery", false, err) != 0 ||
        av_int(d, "backoff_initial_ms", "delivery", false, 1, 600000, err) != 0 ||
        av_int(d, "backoff_max_ms", "delivery", false, 1, 3600000, err) != 0 ||
        av_int(d, "fail_threshold", "delivery", false, 1, 1000, err) != 0)
        return -1;
    return 0;
}

static int av_tls(json_t *body, admin_err_t *err)
{
    json_t *t;
    if (av_object(body, "tls", "", false, &t, err) != 0)
        return -1;
    if (!t)
        return 0;
    static const char *const fields[] = {"ca_file", "cert_file", "key_file", "key_password_file",
                                         "verify",  "sni",       NULL};
    const char *cert, *key, *s;
    if (av_unknown(t, fields, "tls", false, err) != 0 ||
        av_string(t, "ca_file", "tls", false, 511, &s, err) != 0 ||
        av_string(t, "cert_file", "tls", false, 511, &cert, err) != 0 ||
        av_string(t, "key_file", "tls", false, 511, &key, err) != 0 ||
        av_string(t, "key_password_file", "tls", false, 511, &s, err) != 0 ||
        av_bool(t, "verify", "tls", false, err) != 0 ||
        av_string(t, "sni", "tls", false, 253, &s, err) != 0)
        return -1;
    if ((cert == NULL) != (key == NULL)) {
        admin_err_set(err, 422, "invalid value", cert ? "tls.key_file" : "tls.cert_file",
                      "cert_file and key_file go together");
        return -1;
    }
    return 0;
}

static bool av_token_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static int av_http(json_t *body, admin_err_t *err)
{
    json_t *h;
    if (av_object(body, "http", "", false, &h, err) != 0)
        return -1;
    if (!h)
        return 0;
    static const char *const fields[] = {"path", "method", "headers", "header_files", NULL};
    static const char *const methods[] = {"POST", "PUT", "PATCH", NULL};
    const char *path;
    if (av_unknown(h, fields, "http", false, err) != 0 ||
        av_string(h, "path", "http", false, 511, &path, err) != 0 ||
        av_enum(h, "method", "http", false, methods, NULL, err) != 0)
        return -1;
    if (path && path[0] != '/') {
        admin_err_set(err, 422, "invalid value", "http.path", "must start with '/'");
        return -1;
    }
    /* header_files: values are names of files holding secret header values (authorization),
     * so the secret itself never reaches the database or ndd.config. */
    static const char *const groups[] = {"headers", "header_files"};
    size_t total = 0;
    for (int g = 0; g < 2; g++) {
        json_t *hdrs;
        if (av_object(h, groups[g], "http", false, &hdrs, err) != 0)
            return -1;
        if (!hdrs)
            continue;
        total += json_object_size(hdrs);
        if (total > AV_MAX_HEADERS) {
            char p[48];
            snprintf(p, sizeof(p), "http.%s", groups[g]);
            admin_err_set(err, 422, "invalid value", p, "more than %d headers in all",
                          AV_MAX_HEADERS);
            return -1;
        }
        const char *k;
        json_t *v;
        json_object_foreach(hdrs, k, v)
        {
            char path2[160];
            snprintf(path2, sizeof(path2), "http.%s.%.100s", groups[g], k);
            bool ok = *k != '\0' && strlen(k) < 64;
            for (const char *p = k; ok && *p; p++)
                ok = av_token_char(*p);
            if (!ok) {
                admin_err_set(err, 422, "invalid value", path2, "not a valid HTTP header name");
                return -1;
            }
            if (!json_is_string(v)) {
                admin_err_set(err, 400, "wrong type", path2, "expected string");
                return -1;
            }
            for (const char *p = json_string_value(v); *p; p++)
                if ((unsigned char)*p < 0x20 && *p != '\t') {
                    admin_err_set(err, 422, "invalid value", path2,
                                  "header value contains a control character");
                    return -1;
                }
        }
    }
    return 0;
}

int av_feed(json_t *body, admin_err_t *err)
{
    static const char *const encodings[] = {"json", "frame", NULL};
    static const char *const transports[] = {"http2", "tcp", "tls", NULL};
    const char *transport, *encoding;
    if (av_unknown(body, av_feed_fields, "", true, err) != 0 ||
        av_name(body, "name", "", true, err) != 0 ||
        av_topic(body, "source_topic", "", false, err) != 0 ||
        av_topic(body, "dlq_topic", "", false, err) != 0 ||
        av_enum(body, "encoding", "", false, encodings, &encoding, err) != 0 ||
        av_enum(body, "transport", "", false, transports, &transport, err) != 0)
        return -1;
    /* The adapter's defaults: transport http2, encoding json. */
    if (!transport)
        transport = "http2";
    if (strcmp(transport, "http2") != 0 && (!encoding || strcmp(encoding, "frame") != 0)) {
        admin_err_set(err, 422, "invalid value", "encoding",
                      "transport %s carries binary frames: use \"frame\"", transport);
        return -1;
    }
    json_t *filter = json_object_get(body, "filter");
    if (filter && !json_is_null(filter)) {
        if (json_is_string(filter)) {
            if (!av_name_ok(json_string_value(filter))) {
                admin_err_set(err, 422, "invalid value", "filter",
                              "\"%s\" is not a valid filter name", json_string_value(filter));
                return -1;
            }
        } else if (json_is_object(filter)) {
            if (av_filter(filter, "filter", err) != 0)
                return -1;
        } else {
            admin_err_set(err, 400, "wrong type", "filter",
                          "expected the name of a filter, an inline filter object or null");
            return -1;
        }
    }
    if (av_endpoints(body, transport, err) != 0 || av_delivery(body, err) != 0 ||
        av_tls(body, err) != 0 || av_http(body, err) != 0)
        return -1;
    return 0;
}
