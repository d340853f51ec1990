#include "jfield.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int jfield_fail(jfield_err_t *err, jfield_kind_t kind, const char *path, const char *fmt, ...)
{
    err->kind = kind;
    snprintf(err->path, sizeof err->path, "%s", path ? path : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->reason, sizeof err->reason, fmt, ap);
    va_end(ap);
    return -1;
}

void jfield_path(char *out, size_t outlen, const char *prefix, const char *key)
{
    if (!prefix || !*prefix)
        snprintf(out, outlen, "%s", key);
    else
        snprintf(out, outlen, "%s.%s", prefix, key);
}

const char *jfield_kind_name(jfield_kind_t kind)
{
    switch (kind) {
    case JFIELD_OK:
        return "ok";
    case JFIELD_MISSING:
        return "missing field";
    case JFIELD_WRONG_TYPE:
        return "wrong type";
    case JFIELD_UNKNOWN:
        return "unknown field";
    case JFIELD_INVALID:
        return "invalid value";
    case JFIELD_RANGE:
        return "out of range";
    case JFIELD_BAD_URL:
        return "bad URL";
    case JFIELD_FILTER:
        return "invalid filter";
    case JFIELD_NOMEM:
        break;
    }
    return "internal";
}

const char *jfield_type_name(const json_t *v)
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

static bool jfield_listed(const char *key, const char *const *list)
{
    for (size_t i = 0; list && list[i]; i++)
        if (!strcmp(list[i], key))
            return true;
    return false;
}

int jfield_unknown(const json_t *obj, const char *const *allowed, const char *const *also,
                   const char *prefix, jfield_err_t *err)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        if (jfield_listed(key, allowed) || jfield_listed(key, also))
            continue;
        char path[192];
        jfield_path(path, sizeof path, prefix, key);
        return jfield_fail(err, JFIELD_UNKNOWN, path, "field \"%s\" is not part of this object",
                           key);
    }
    return 0;
}

/* The member, or NULL when absent; -1 in *rc when it is absent but required. */
static json_t *jfield_member(const json_t *obj, const char *key, const char *prefix, bool required,
                             jfield_err_t *err, int *rc)
{
    json_t *v = json_object_get(obj, key);
    *rc = 0;
    if (!v && required) {
        char path[192];
        jfield_path(path, sizeof path, prefix, key);
        *rc = jfield_fail(err, JFIELD_MISSING, path, "field \"%s\" is required", key);
    }
    return v;
}

static int jfield_wrong_type(const json_t *v, const char *want, const char *prefix, const char *key,
                             jfield_err_t *err)
{
    char path[192];
    jfield_path(path, sizeof path, prefix, key);
    return jfield_fail(err, JFIELD_WRONG_TYPE, path, "expected %s, got %s", want,
                       jfield_type_name(v));
}

int jfield_string(const json_t *obj, const char *key, const char *prefix, bool required,
                  size_t maxlen, const char **out, jfield_err_t *err)
{
    int rc;
    json_t *v = jfield_member(obj, key, prefix, required, err, &rc);
    *out = NULL;
    if (rc || !v)
        return rc;
    if (!json_is_string(v))
        return jfield_wrong_type(v, "string", prefix, key, err);
    size_t len = json_string_length(v);
    const char *s = json_string_value(v);
    char path[192];
    jfield_path(path, sizeof path, prefix, key);
    if (len > maxlen)
        return jfield_fail(err, JFIELD_INVALID, path, "longer than %zu bytes", maxlen);
    if (strlen(s) != len)
        return jfield_fail(err, JFIELD_INVALID, path, "contains a NUL character");
    *out = s;
    return 0;
}

int jfield_int(const json_t *obj, const char *key, const char *prefix, bool required, int64_t min,
               int64_t max, int64_t *out, jfield_err_t *err)
{
    int rc;
    json_t *v = jfield_member(obj, key, prefix, required, err, &rc);
    if (rc || !v)
        return rc;
    if (!json_is_integer(v))
        return jfield_wrong_type(v, "integer", prefix, key, err);
    json_int_t n = json_integer_value(v);
    if (n < min || n > max) {
        char path[192];
        jfield_path(path, sizeof path, prefix, key);
        return jfield_fail(err, JFIELD_RANGE, path, "%lld is outside %lld..%lld", (long long)n,
                           (long long)min, (long long)max);
    }
    if (out)
        *out = n;
    return 0;
}

int jfield_bool(const json_t *obj, const char *key, const char *prefix, bool required, bool *out,
                jfield_err_t *err)
{
    int rc;
    json_t *v = jfield_member(obj, key, prefix, required, err, &rc);
    if (rc || !v)
        return rc;
    if (!json_is_boolean(v))
        return jfield_wrong_type(v, "boolean", prefix, key, err);
    if (out)
        *out = json_is_true(v);
    return 0;
}

int jfield_object(const json_t *obj, const char *key, const char *prefix, bool required,
                  json_t **out, jfield_err_t *err)
{
    int rc;
    json_t *v = jfield_member(obj, key, prefix, required, err, &rc);
    *out = NULL;
    if (rc || !v)
        return rc;
    if (!json_is_object(v))
        return jfield_wrong_type(v, "object", prefix, key, err);
    *out = v;
    return 0;
}

int jfield_enum(const json_t *obj, const char *key, const char *prefix, bool required,
                const char *const *values, const char **out, jfield_err_t *err)
{
    const char *s;
    if (jfield_string(obj, key, prefix, required, 64, &s, err))
        return -1;
    if (out)
        *out = s;
    if (!s || jfield_listed(s, values))
        return 0;
    char path[192], list[256] = "";
    jfield_path(path, sizeof path, prefix, key);
    for (size_t i = 0; values[i]; i++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s\"%s\"", i ? ", " : "", values[i]);
    }
    return jfield_fail(err, JFIELD_INVALID, path, "\"%s\" is not one of %s", s, list);
}

/* Structural problems versus unacceptable values, from the filter engine's wording. */
static jfield_kind_t jfield_filter_kind(const char *problem)
{
    if (strstr(problem, "unknown key") == problem)
        return JFIELD_UNKNOWN;
    if (strstr(problem, "missing") == problem)
        return JFIELD_MISSING;
    if (strstr(problem, "expected") == problem)
        return JFIELD_WRONG_TYPE;
    return JFIELD_FILTER;
}

void jfield_from_filter(jfield_err_t *err, const char *prefix, const char *msg)
{
    /* "$.rules[1].match.all[0].op: unknown operator ..." -> path, problem */
    const char *colon = strstr(msg, ": ");
    char path[128] = "";
    const char *problem = msg;
    if (colon) {
        const char *p = msg;
        size_t plen = (size_t)(colon - msg);
        if (plen >= 1 && p[0] == '$') {
            p++;
            plen--;
            if (plen && *p == '.') {
                p++;
                plen--;
            }
        }
        snprintf(path, sizeof path, "%.*s", (int)plen, p);
        problem = colon + 2;
    }
    /* Name the unknown key itself, like the other checks do. */
    if (strncmp(problem, "unknown key \"", 13) == 0) {
        const char *k = problem + 13, *end = strchr(k, '"');
        if (end) {
            size_t l = strlen(path);
            snprintf(path + l, sizeof path - l, "%s%.*s", l ? "." : "", (int)(end - k), k);
        }
    }
    char field[192];
    if (!prefix || !*prefix)
        snprintf(field, sizeof field, "%s", path);
    else if (*path)
        snprintf(field, sizeof field, "%s.%s", prefix, path);
    else
        snprintf(field, sizeof field, "%s", prefix);
    jfield_fail(err, jfield_filter_kind(problem), field, "%s", problem);
}

bool jfield_name_ok(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i]))
            return false;
    return true;
}

bool jfield_topic_ok(const char *s)
{
    return jfield_name_ok(s, 249) && strcmp(s, ".") && strcmp(s, "..");
}
