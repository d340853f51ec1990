/* Validation of request bodies: common helpers and the dispatch by kind. Structural faults
 * (malformed JSON, wrong type, unknown field, missing field) get 400; well-formed values that
 * are not acceptable (bad URL, bad regular expression, out of range, unknown enum value) get
 * 422. Every error names the field by its JSON path, e.g. "endpoints[0].url". */
#include <stdio.h>
#include <string.h>

#include "admin.h"
#include "admin_validate.h"

const char *const admin_server_fields[] = {"id", "version", "created_at", "updated_at", NULL};

json_t *admin_strip_server_fields(json_t *body)
{
    json_t *copy = json_deep_copy(body);
    for (size_t i = 0; copy && admin_server_fields[i]; i++)
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

void admin_err_from_field(admin_err_t *err, const jfield_err_t *fe)
{
    int status = 422;
    switch (fe->kind) {
    case JFIELD_MISSING:
    case JFIELD_WRONG_TYPE:
    case JFIELD_UNKNOWN:
        status = 400;
        break;
    case JFIELD_NOMEM:
        status = 500;
        break;
    default:
        break;
    }
    admin_err_set(err, status, jfield_kind_name(fe->kind), fe->path, "%s", fe->reason);
}

/* rc of a jfield check, with err set from fe when it refused. */
static int admin_validate_result(int rc, const jfield_err_t *fe, admin_err_t *err)
{
    if (rc)
        admin_err_from_field(err, fe);
    return rc;
}

int admin_validate_unknown(json_t *obj, const char *const *allowed, const char *prefix,
                           bool allow_server, admin_err_t *err)
{
    jfield_err_t fe;
    return admin_validate_result(
        jfield_unknown(obj, allowed, allow_server ? admin_server_fields : NULL, prefix, &fe), &fe,
        err);
}

int admin_validate_string(json_t *obj, const char *key, const char *prefix, bool required,
                          size_t maxlen, const char **out, admin_err_t *err)
{
    jfield_err_t fe;
    return admin_validate_result(jfield_string(obj, key, prefix, required, maxlen, out, &fe), &fe,
                                 err);
}

int admin_validate_int(json_t *obj, const char *key, const char *prefix, bool required, int64_t min,
                       int64_t max, admin_err_t *err)
{
    jfield_err_t fe;
    return admin_validate_result(jfield_int(obj, key, prefix, required, min, max, NULL, &fe), &fe,
                                 err);
}

int admin_validate_bool(json_t *obj, const char *key, const char *prefix, bool required,
                        admin_err_t *err)
{
    jfield_err_t fe;
    return admin_validate_result(jfield_bool(obj, key, prefix, required, NULL, &fe), &fe, err);
}

int admin_validate_enum(json_t *obj, const char *key, const char *prefix, bool required,
                        const char *const *values, const char **out, admin_err_t *err)
{
    jfield_err_t fe;
    return admin_validate_result(jfield_enum(obj, key, prefix, required, values, out, &fe), &fe,
                                 err);
}

int admin_validate_name(json_t *obj, const char *key, const char *prefix, bool required,
                        admin_err_t *err)
{
    const char *s;
    if (admin_validate_string(obj, key, prefix, required, ADMIN_NAME_MAX, &s, err) != 0)
        return -1;
    if (s && !jfield_name_ok(s, ADMIN_NAME_MAX)) {
        char path[128];
        jfield_path(path, sizeof(path), prefix, key);
        admin_err_set(err, 422, "invalid value", path,
                      "\"%s\" is not a valid name: 1 to 64 characters of A-Z a-z 0-9 . _ -", s);
        return -1;
    }
    return 0;
}

int admin_validate_topic(json_t *obj, const char *key, const char *prefix, bool required,
                         admin_err_t *err)
{
    const char *s;
    if (admin_validate_string(obj, key, prefix, required, 249, &s, err) != 0)
        return -1;
    if (s && !jfield_topic_ok(s)) {
        char path[128];
        jfield_path(path, sizeof(path), prefix, key);
        admin_err_set(err, 422, "invalid value", path,
                      "\"%s\" is not a valid Kafka topic name: 1 to 249 characters of A-Z a-z "
                      "0-9 . _ -",
                      s);
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
        return admin_validate_feed(body, err);
    case ADMIN_KIND_FILTER:
        return admin_validate_filter(body, err);
    case ADMIN_KIND_SOURCE:
        return admin_validate_source(body, err);
    case ADMIN_KIND_CORRELATION:
        return admin_validate_correlation(body, err);
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
