/* Checks of one member of a JSON object, with a structured error: the JSON path of the field,
 * what is wrong with it (a kind a caller can map, e.g. to an HTTP status) and a reason for
 * people. The feed parser (feed_config.c) and the admin's REST validators share them, so a
 * field is refused with the same words wherever it is checked.
 *
 * Every check returns 0, or -1 with *err set. `prefix` is the path of the enclosing object
 * ("" for the top level); a member "url" under "endpoints[1]" is "endpoints[1].url". JSON
 * null is a value of the wrong type, not an absent member. */
#ifndef NDD_SERVICES_JFIELD_H
#define NDD_SERVICES_JFIELD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* ---- types ---- */

typedef enum jfield_kind {
    JFIELD_OK = 0,
    JFIELD_MISSING,    /* a required member is absent */
    JFIELD_WRONG_TYPE, /* a member (or the object) has another JSON type */
    JFIELD_UNKNOWN,    /* a member this object does not have */
    JFIELD_INVALID,    /* well-formed but not acceptable */
    JFIELD_RANGE,      /* an integer outside its range */
    JFIELD_BAD_URL,    /* an endpoint URL that cannot be used */
    JFIELD_FILTER,     /* refused by the filter engine */
    JFIELD_NOMEM,
} jfield_kind_t;

typedef struct jfield_err {
    jfield_kind_t kind;
    char path[192];   /* e.g. "delivery.timeout_ms"; "" for the object itself */
    char reason[400]; /* one line, never a secret */
} jfield_err_t;

/* ---- functions ---- */

/* Sets *err; returns -1 so callers can `return jfield_fail(...)`. */
int jfield_fail(jfield_err_t *err, jfield_kind_t kind, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* prefix + "." + key (or key alone at the top level). */
void jfield_path(char *out, size_t outlen, const char *prefix, const char *key);
/* "missing field", "wrong type", "unknown field", "invalid value", "out of range", "bad URL",
 * "invalid filter", "internal". */
const char *jfield_kind_name(jfield_kind_t kind);
/* "object", "array", "string", "integer", "number", "boolean", "null". */
const char *jfield_type_name(const json_t *v);

/* Refuses members outside `allowed` and `also` (both NULL-terminated; `also` may be NULL). */
int jfield_unknown(const json_t *obj, const char *const *allowed, const char *const *also,
                   const char *prefix, jfield_err_t *err);
/* *out: the string (borrowed) or NULL when absent; at most maxlen bytes, no NUL inside. */
int jfield_string(const json_t *obj, const char *key, const char *prefix, bool required,
                  size_t maxlen, const char **out, jfield_err_t *err);
/* *out is written only when the member is present. */
int jfield_int(const json_t *obj, const char *key, const char *prefix, bool required, int64_t min,
               int64_t max, int64_t *out, jfield_err_t *err);
int jfield_bool(const json_t *obj, const char *key, const char *prefix, bool required, bool *out,
                jfield_err_t *err);
/* *out: the object or NULL when absent. */
int jfield_object(const json_t *obj, const char *key, const char *prefix, bool required,
                  json_t **out, jfield_err_t *err);
/* A string that must be one of `values` (NULL-terminated). */
int jfield_enum(const json_t *obj, const char *key, const char *prefix, bool required,
                const char *const *values, const char **out, jfield_err_t *err);

/* A filter engine message "rules[1].match.op: unknown operator ..." (filter_compile) as a
 * field error under prefix ("" for a filter object, "filter" inline in a feed). */
void jfield_from_filter(jfield_err_t *err, const char *prefix, const char *msg);

/* [A-Za-z0-9._-]{1,max}: object names (they become parts of topic and group names). */
bool jfield_name_ok(const char *s, size_t max);
/* A Kafka topic name: [A-Za-z0-9._-]{1,249}, not "." or "..". */
bool jfield_topic_ok(const char *s);

#endif
