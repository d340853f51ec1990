/* Helpers shared by the admin_validate*.c files (not a public interface). Each returns 0, or
 * -1 with err set; prefix is the JSON path of the enclosing object ("" for the top level). */
#ifndef NDD_ADMIN_VALIDATE_H
#define NDD_ADMIN_VALIDATE_H

#include "admin-t.h"

bool av_is_server_field(const char *key);
void av_path(char *out, size_t outlen, const char *prefix, const char *key);
/* allowed is NULL-terminated; allow_server also lets id/version/created_at/updated_at pass. */
int av_unknown(json_t *obj, const char *const *allowed, const char *prefix, bool allow_server,
               admin_err_t *err);
int av_string(json_t *obj, const char *key, const char *prefix, bool required, size_t maxlen,
              const char **out, admin_err_t *err);
int av_int(json_t *obj, const char *key, const char *prefix, bool required, int64_t min,
           int64_t max, admin_err_t *err);
int av_bool(json_t *obj, const char *key, const char *prefix, bool required, admin_err_t *err);
int av_object(json_t *obj, const char *key, const char *prefix, bool required, json_t **out,
              admin_err_t *err);
int av_enum(json_t *obj, const char *key, const char *prefix, bool required,
            const char *const *values, const char **out, admin_err_t *err);
bool av_name_ok(const char *s);
int av_name(json_t *obj, const char *key, const char *prefix, bool required, admin_err_t *err);
int av_topic(json_t *obj, const char *key, const char *prefix, bool required, admin_err_t *err);
int av_url_check(const char *url, const char *const *schemes, bool path_allowed, char *reason,
                 size_t rlen);

int av_feed(json_t *body, admin_err_t *err);
/* A filter definition at prefix ("" for a filter object, "filter" inline in a feed); server
 * fields are allowed only at the top level. */
int av_filter(json_t *body, const char *prefix, admin_err_t *err);
int av_source(json_t *body, admin_err_t *err);
int av_correlation(json_t *body, admin_err_t *err);

#endif
