/* Validation of request bodies: common helpers and the dispatch by kind. Structural faults
 * (malformed JSON, wrong type, unknown field, missing field) get 400; well-formed values that
 * are not acceptable (bad URL, bad regular expression, out of range, unknown enum value) get
 * 422. Every error names the field by its JSON path, e.g. "endpoints[0].url". */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "admin.h"
#include "admin_validate.h"

static const char *const admin_server_fields[] = {"id", "version", "created_at", "updated_at"};

bool av_is_server_field(const char *key)
{
    for (size_t i = 0; i < sizeof(admin_server_fields) / sizeof(*admin_server_fields); i++)
        if (strcmp(key, admin_server_fields[i]) == 0)
            return true;
    return false;
}

json_t *admin_strip_server_fields(json_t *body)
{
    json_t *copy = json_deep_copy(body);
    for (size_t i = 0; copy && i < sizeof(admin_server_fields) / sizeof(*admin_server_fields); i++)
        json_object_del(copy, admin_server_fields[i]);
    return copy;
}

json_t *admin_parse_body(const char *body, size_t len, size_t max, admin_err_t *err)
{
    if (len > max) {
        admin_err_set(err, 413, "body too large", "",
                      "request body of %zu bytes exceeds the limit of %zu bytes", len, max);
        return NULL;
    }
    if (!body || len == 0) {
        admin_err_set(err, 400, "malformed JSON", "",
                      "request body is empty; a JSON object is expected");
        return NULL;
    }
    json_error_t je;
    json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!j) {
        admin_err_set(err, 400, "malformed JSON", "", "line %d column %d: %s", je.line, je.column,
                      je.text);
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        admin_err_set(err, 400, "wrong type", "", "request body must be a JSON object");
        return NULL;
    }
    return j;
}

void av_path(char *out, size_t outlen, const char *prefix, const char *key)
{
    if (!prefix || !*prefix)
        snprintf(out, outlen, "%s", key);
    else
        snprintf(out, outlen, "%s.%s", prefix, key);
}

int av_unknown(json_t *obj, const char *const *allowed, const char *prefix, bool allow_server,
               admin_err_t *err)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v)
    {
        bool ok = allow_server && av_is_server_field(key);
        for (size_t i = 0; !ok && allowed[i]; i++)
            ok = strcmp(allowed[i], key) == 0;
        if (!ok) {
            char path[128];
            av_path(path, sizeof(path), prefix, key);
            admin_err_set(err, 400, "unknown field", path,
                          "field \"%s\" is not part of this object", key);
            return -1;
        }
    }
    return 0;
}

static const char *av_type_name(json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
        return "integer";
    case JSON_REAL:
        return "number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "boolean";
    default:
        return "null";
    }
}

/* Returns the member, NULL when absent (and not required); *bad set when an error was set. */
static json_t *av_member(json_t *obj, const char *key, const char *prefix, bool required,
                         admin_err_t *err, bool *bad)
{
    json_t *v = json_object_get(obj, key);
    if (!v && required) {
        char path[128];
        av_path(path, sizeof(path), prefix, key);
        admin_err_set(err, 400, "missing field", path, "field \"%s\" is required", key);
        *bad = true;
    }
    return v;
}

static void av_wrong_type(json_t *v, const char *want, const char *prefix, const char *key,
                          admin_err_t *err)
{
    char path[128];
    av_path(path, sizeof(path), prefix, key);
    admin_err_set(err, 400, "wrong type", path, "expected %s, got %s", want, av_type_name(v));
}

int av_string(json_t *obj, const char *key, const char *prefix, bool required, size_t maxlen,
              const char **out, admin_err_t *err)
{
    bool bad = false;
    json_t *v = av_member(obj, key, prefix, required, err, &bad);
    *out = NULL;
    if (bad)
        return -1;
    if (!v)
        return 0;
    if (!json_is_string(v)) {
        av_wrong_type(v, "string", prefix, key, err);
        return -1;
    }
    size_t len = json_string_length(v);
    const char *s = json_string_value(v);
    char path[128];
    av_path(path, sizeof(path), prefix, key);
    if (len > maxlen) {
        admin_err_set(err, 422, "invalid value", path, "longer than %zu bytes", maxlen);
        return -1;
    }
    if (strlen(s) != len) {
        admin_err_set(err, 422, "invalid value", path, "contains a NUL character");
        return -1;
    }
    *out = s;
    return 0;
}

int av_int(json_t *obj, const char *key, const char *prefix, bool required, int64_t min,
           int64_t max, admin_err_t *err)
{
    bool bad = false;
    json_t *v = av_member(obj, key, prefix, required, err, &bad);
    if (bad)
        return -1;
    if (!v)
        return 0;
    if (!json_is_integer(v)) {
        av_wrong_type(v, "integer", prefix, key, err);
        return -1;
    }
    json_int_t n = json_integer_value(v);
    if (n < min || n > max) {
        char path[128];
        av_path(path, sizeof(path), prefix, key);
        admin_err_set(err, 422, "out of range", path, "%lld is outside %lld..%lld", (long long)n,
                      (long long)min, (long long)max);
        return -1;
    }
    return 0;
}

int av_bool(json_t *obj, const char *key, const char *prefix, bool required, admin_err_t *err)
{
    bool bad = false;
    json_t *v = av_member(obj, key, prefix, required, err, &bad);
    if (bad)
        return -1;
    if (v && !json_is_boolean(v)) {
        av_wrong_type(v, "boolean", prefix, key, err);
        return -1;
    }
    return 0;
}

int av_object(json_t *obj, const char *key, const char *prefix, bool required, json_t **out,
              admin_err_t *err)
{
    bool bad = false;
    json_t *v = av_member(obj, key, prefix, required, err, &bad);
    *out = NULL;
    if (bad)
        return -1;
    if (v && !json_is_object(v)) {
        av_wrong_type(v, "object", prefix, key, err);
        return -1;
    }
    *out = v;
    return 0;
}

int av_enum(json_t *obj, const char *key, const char *prefix, bool required,
            const char *const *values, const char **out, admin_err_t *err)
{
    const char *s;
    if (av_string(obj, key, prefix, required, 64, &s, err) != 0)
        return -1;
    if (out)
        *out = s;
    if (!s)
        return 0;
    for (size_t i = 0; values[i]; i++)
        if (strcmp(values[i], s) == 0)
            return 0;
    char path[128], list[256] = "";
    av_path(path, sizeof(path), prefix, key);
    for (size_t i = 0; values[i]; i++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof(list) - l, "%s\"%s\"", i ? ", " : "", values[i]);
    }
    admin_err_set(err, 422, "invalid value", path, "\"%s\" is not one of %s", s, list);
    return -1;
}

bool av_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
            return false;
    return true;
}

int av_name(json_t *obj, const char *key, const char *prefix, bool required, admin_err_t *err)
{
    const char *s;
    if (av_string(obj, key, prefix, required, 64, &s, err) != 0)
        return -1;
    if (s && !av_name_ok(s)) {
        char path[128];
        av_path(path, sizeof(path), prefix, key);
        admin_err_set(err, 422, "invalid value", path,
                      "\"%s\" is not a valid name: 1 to 64 characters of A-Z a-z 0-9 . _ -", s);
        return -1;
    }
    return 0;
}

int av_topic(json_t *obj, const char *key, const char *prefix, bool required, admin_err_t *err)
{
    const char *s;
    if (av_string(obj, key, prefix, required, 249, &s, err) != 0)
        return -1;
    if (!s)
        return 0;
    bool ok = *s && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
    for (const char *p = s; ok && *p; p++)
        ok = isalnum((unsigned char)*p) || *p == '.' || *p == '_' || *p == '-';
    if (!ok) {
        char path[128];
        av_path(path, sizeof(path), prefix, key);
        admin_err_set(err, 422, "invalid value", path,
                      "\"%s\" is not a valid Kafka topic name: 1 to 249 characters of A-Z a-z "
                      "0-9 . _ -",
                      s);
        return -1;
    }
    return 0;
}

/* scheme://host[:port][/path]: host a DNS name, an IPv4 literal or a bracketed IPv6 literal;
 * no user info (credentials belong in files, never in URLs stored in the database). */
int av_url_check(const char *url, const char *const *schemes, bool path_allowed, char *reason,
                 size_t rlen)
{
    const char *sep = strstr(url, "://");
    if (!sep) {
        snprintf(reason, rlen, "\"%s\" is not a URL (scheme://host:port expected)", url);
        return -1;
    }
    size_t slen = (size_t)(sep - url);
    bool scheme_ok = false;
    char list[96] = "";
    for (size_t i = 0; schemes[i]; i++) {
        if (strlen(schemes[i]) == slen && strncmp(schemes[i], url, slen) == 0)
            scheme_ok = true;
        size_t l = strlen(list);
        snprintf(list + l, sizeof(list) - l, "%s%s", i ? ", " : "", schemes[i]);
    }
    if (!scheme_ok) {
        snprintf(reason, rlen, "scheme \"%.*s\" not allowed here (allowed: %s)", (int)slen, url,
                 list);
        return -1;
    }
    const char *h = sep + 3, *p = h;
    for (const char *q = url; *q; q++)
        if ((unsigned char)*q <= 0x20 || *q == 0x7f) {
            snprintf(reason, rlen, "URL contains a space or control character");
            return -1;
        }
    if (*p == '[') {
        const char *end = strchr(p, ']');
        if (!end || end == p + 1) {
            snprintf(reason, rlen, "unterminated or empty IPv6 literal");
            return -1;
        }
        for (const char *q = p + 1; q < end; q++)
            if (!isxdigit((unsigned char)*q) && *q != ':' && *q != '.') {
                snprintf(reason, rlen, "bad IPv6 literal");
                return -1;
            }
        p = end + 1;
    } else {
        while (*p && (isalnum((unsigned char)*p) || *p == '.' || *p == '-' || *p == '_'))
            p++;
        if (p == h) {
            snprintf(reason, rlen, "missing host");
            return -1;
        }
        if (*p == '@') {
            snprintf(reason, rlen, "user info in URLs is refused; put credentials in files");
            return -1;
        }
    }
    bool port_given = false;
    if (*p == ':') {
        p++;
        long port = 0;
        const char *d = p;
        while (isdigit((unsigned char)*p) && port <= 65535)
            port = port * 10 + (*p++ - '0');
        if (p == d || port < 1 || port > 65535 || isdigit((unsigned char)*p)) {
            snprintf(reason, rlen, "port must be 1..65535");
            return -1;
        }
        port_given = true;
    }
    if (*p && *p != '/') {
        snprintf(reason, rlen, "unexpected character '%c' after host", *p);
        return -1;
    }
    if (*p == '/' && !path_allowed) {
        snprintf(reason, rlen, "a path is not allowed for this scheme");
        return -1;
    }
    if (!path_allowed && !port_given) {
        snprintf(reason, rlen, "a port is required for this scheme");
        return -1;
    }
    return 0;
}

int admin_validate(admin_kind_t kind, json_t *body, admin_err_t *err)
{
    if (!json_is_object(body)) {
        admin_err_set(err, 400, "wrong type", "", "request body must be a JSON object");
        return -1;
    }
    switch (kind) {
    case ADMIN_KIND_FEED:
        return av_feed(body, err);
    case ADMIN_KIND_FILTER:
        return av_filter(body, "", err);
    case ADMIN_KIND_SOURCE:
        return av_source(body, err);
    case ADMIN_KIND_CORRELATION:
        return av_correlation(body, err);
    default:
        break;
    }
    admin_err_set(err, 404, "not found", "", "unknown collection");
    return -1;
}

const char *admin_feed_filter_ref(json_t *feed)
{
    return json_string_value(json_object_get(feed, "filter"));
}
