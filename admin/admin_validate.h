/* Helpers shared by the admin_validate*.c files (not a public interface). Each returns 0, or
 * -1 with err set; prefix is the JSON path of the enclosing object ("" for the top level). */
#ifndef NDD_ADMIN_VALIDATE_H
#define NDD_ADMIN_VALIDATE_H

#include "admin-t.h"

#include "jfield.h"

#define ADMIN_NAME_MAX 64 /* every object's name */

/* id, version, created_at, updated_at (NULL-terminated): set by the server, let through. */
extern const char *const admin_server_fields[];

/* A refusal of the shared checks (services/base/jfield.h) as the admin's error: missing, wrong type
 * and unknown fields are 400, unacceptable values 422. */
void admin_err_from_field(admin_err_t *err, const jfield_err_t *fe);
/* allowed is NULL-terminated; allow_server also lets id/version/created_at/updated_at pass. */
int admin_validate_unknown(json_t *obj, const char *const *allowed, const char *prefix,
                           bool allow_server, admin_err_t *err);
int admin_validate_string(json_t *obj, const char *key, const char *prefix, bool required,
                          size_t maxlen, const char **out, admin_err_t *err);
int admin_validate_int(json_t *obj, const char *key, const char *prefix, bool required, int64_t min,
                       int64_t max, admin_err_t *err);
int admin_validate_bool(json_t *obj, const char *key, const char *prefix, bool required,
                        admin_err_t *err);
int admin_validate_enum(json_t *obj, const char *key, const char *prefix, bool required,
                        const char *const *values, const char **out, admin_err_t *err);
int admin_validate_name(json_t *obj, const char *key, const char *prefix, bool required,
                        admin_err_t *err);
int admin_validate_topic(json_t *obj, const char *key, const char *prefix, bool required,
                         admin_err_t *err);

int admin_validate_feed(json_t *body, admin_err_t *err);
/* A filter object (its server fields let through). Inline filters of feeds are checked by the
 * feed parser, with the same engine. */
int admin_validate_filter(json_t *body, admin_err_t *err);
int admin_validate_source(json_t *body, admin_err_t *err);
int admin_validate_correlation(json_t *body, admin_err_t *err);

#endif
