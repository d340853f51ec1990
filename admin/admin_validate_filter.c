/* Filters are checked by the filter engine itself (filter_compile), so the admin refuses
 * exactly what the workers would refuse. Its message "path: problem" is split into the
 * error's field and reason. */
#include <stdio.h>
#include <string.h>

#include "admin.h"
#include "admin_validate.h"
#include "filter.h"

/* Structural problems (400) versus unacceptable values (422), from the engine's wording. */
static int av_filter_status(const char *problem)
{
    static const char *const structural[] = {"unknown key", "missing", "expected", NULL};
    for (size_t i = 0; structural[i]; i++)
        if (strstr(problem, structural[i]) == problem)
            return 400;
    return 422;
}

static const char *av_filter_error_name(const char *problem)
{
    if (strstr(problem, "unknown key") == problem)
        return "unknown field";
    if (strstr(problem, "missing") == problem)
        return "missing field";
    if (strstr(problem, "expected") == problem)
        return "wrong type";
    return "invalid filter";
}

int av_filter(json_t *body, const char *prefix, admin_err_t *err)
{
    if (!json_is_object(body)) {
        admin_err_set(err, 400, "wrong type", prefix, "a filter must be a JSON object");
        return -1;
    }
    json_t *spec = body;
    bool top = !prefix || !*prefix;
    if (top)
        spec = admin_strip_server_fields(body);
    else
        json_incref(spec);
    if (!spec) {
        admin_err_set(err, 500, "internal", "", "out of memory");
        return -1;
    }
    char msg[512] = "";
    filter_t *f = filter_compile(spec, msg, sizeof(msg));
    json_decref(spec);
    if (f) {
        filter_release(f);
        return 0;
    }
    /* "rules[1].match.all[0].op: unknown operator ..." -> field, reason */
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
        snprintf(path, sizeof(path), "%.*s", (int)plen, p);
        problem = colon + 2;
    }
    /* Name the unknown key itself, like the other validators do. */
    if (strncmp(problem, "unknown key \"", 13) == 0) {
        const char *k = problem + 13, *end = strchr(k, '"');
        if (end) {
            size_t l = strlen(path);
            snprintf(path + l, sizeof(path) - l, "%s%.*s", l ? "." : "", (int)(end - k), k);
        }
    }
    char field[300];
    if (top)
        snprintf(field, sizeof(field), "%s", path);
    else if (*path)
        snprintf(field, sizeof(field), "%s.%s", prefix, path);
    else
        snprintf(field, sizeof(field), "%s", prefix);
    admin_err_set(err, av_filter_status(problem), av_filter_error_name(problem), field, "%s",
                  problem);
    return -1;
}
