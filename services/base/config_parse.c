/* The value parsers of config_load (int, bool, double, durations, sizes, lists, the NDD_*
 * environment names) and the JSON config file's flattening into dotted keys: the text-level
 * half of the configuration, with no knowledge of specs or sources (config.c has those). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "buf.h"
#include "config-int.h"
#include "config.h"

void config_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- value parsers ---- */

int config_parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"true", "1", "yes", "on"};
    static const char *const no[] = {"false", "0", "no", "off"};
    if (!s)
        return -1;
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

int config_parse_int(const char *s, int64_t *out)
{
    if (!s || !*s || isspace((unsigned char)*s))
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 0);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

int config_parse_double(const char *s, double *out)
{
    if (!s || !*s || isspace((unsigned char)*s))
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

/* Leading non-negative decimal number (digits with an optional fraction) and its unit. */
static int split_number_unit(const char *s, double *num, const char **unit)
{
    if (!s || !isdigit((unsigned char)*s))
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || !isfinite(v) || v < 0)
        return -1;
    /* strtod also takes hex and exponents; only plain decimals are meant here */
    for (const char *p = s; p < end; p++)
        if (!isdigit((unsigned char)*p) && *p != '.')
            return -1;
    *num = v;
    *unit = end;
    return 0;
}

/* A unit suffix and what one of it is worth. */
typedef struct config_unit {
    const char *u;
    double mul;
} config_unit_t;

/* The value of s ("1.5", "250ms", "4MiB") in the base unit: the number times its unit's
 * worth, the unit looked up in units (n entries; "" for a bare number). */
static int scaled_number(const char *s, const config_unit_t *units, size_t n, double *out)
{
    double v;
    const char *unit;
    if (split_number_unit(s, &v, &unit))
        return -1;
    for (size_t i = 0; i < n; i++)
        if (strcmp(unit, units[i].u) == 0) {
            *out = v * units[i].mul;
            return 0;
        }
    return -1;
}

int config_parse_duration_ms(const char *s, int64_t *out)
{
    static const config_unit_t units[] = {{"", 1},      {"ms", 1},      {"s", 1000},
                                          {"m", 60000}, {"h", 3600000}, {"d", 86400000}};
    double ms;
    if (scaled_number(s, units, sizeof units / sizeof units[0], &ms) || ms > 9.2e18)
        return -1;
    *out = (int64_t)llround(ms);
    return 0;
}

int config_parse_bytes(const char *s, uint64_t *out)
{
    static const config_unit_t units[] = {{"", 1},
                                          {"B", 1},
                                          {"k", 1024.0},
                                          {"K", 1024.0},
                                          {"KiB", 1024.0},
                                          {"KB", 1e3},
                                          {"m", 1048576.0},
                                          {"M", 1048576.0},
                                          {"MiB", 1048576.0},
                                          {"MB", 1e6},
                                          {"g", 1073741824.0},
                                          {"G", 1073741824.0},
                                          {"GiB", 1073741824.0},
                                          {"GB", 1e9},
                                          {"TiB", 1099511627776.0},
                                          {"TB", 1e12}};
    double b;
    if (scaled_number(s, units, sizeof units / sizeof units[0], &b) || b >= 1.8e19 || b != floor(b))
        return -1;
    *out = (uint64_t)b;
    return 0;
}

int config_env_name(const char *key, char *out, size_t outlen)
{
    size_t n = strlen(key);
    if (n + 5 > outlen)
        return -1;
    memcpy(out, "NDD_", 4);
    for (size_t i = 0; i < n; i++) {
        char c = key[i];
        out[4 + i] = (c == '.' || c == '-') ? '_' : (char)toupper((unsigned char)c);
    }
    out[4 + n] = '\0';
    return 0;
}

int config_split_list(const char *s, char ***items, size_t *n)
{
    *items = NULL;
    *n = 0;
    size_t cap = 0;
    const char *p = s;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *a = p;
        while (len && isspace((unsigned char)*a)) {
            a++;
            len--;
        }
        while (len && isspace((unsigned char)a[len - 1]))
            len--;
        if (len) {
            char **ni = buf_array_room(*items, *n, &cap, sizeof *ni, 4, 0);
            if (!ni)
                return -1;
            *items = ni;
            if (!((*items)[*n] = strndup(a, len)))
                return -1;
            (*n)++;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    return 0;
}

/* ---- JSON file ---- */

static int json_leaf_text(const json_t *j, char *tmp, size_t tmplen, const char **out)
{
    switch (json_typeof(j)) {
    case JSON_STRING:
        *out = json_string_value(j);
        return 0;
    case JSON_INTEGER:
        snprintf(tmp, tmplen, "%" JSON_INTEGER_FORMAT, json_integer_value(j));
        *out = tmp;
        return 0;
    case JSON_REAL:
        snprintf(tmp, tmplen, "%.17g", json_real_value(j));
        *out = tmp;
        return 0;
    case JSON_TRUE:
        *out = "true";
        return 0;
    case JSON_FALSE:
        *out = "false";
        return 0;
    default:
        *out = NULL; /* always set: callers and -O2 flow analysis need a defined value */
        return -1;
    }
}

struct json_walk {
    const char *origin;
    config_json_leaf_fn fn;
    void *arg;
    char *err;
    size_t errlen;
};

static int walk(struct json_walk *w, const char *prefix, json_t *obj)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v)
    {
        char key[CONFIG_KEY_MAX];
        int kn = snprintf(key, sizeof key, "%s%s%s", prefix, *prefix ? "." : "", k);
        if (kn < 0 || (size_t)kn >= sizeof key || !*k) {
            config_err(w->err, w->errlen, "%s: key \"%.64s...\" is empty or too long", w->origin,
                       key);
            return -1;
        }
        size_t kl = strlen(k);
        bool bad = k[0] == '.' || k[kl - 1] == '.' || strstr(k, "..") != NULL;
        for (size_t i = 0; i < kl && !bad; i++)
            bad = (unsigned char)k[i] < 0x20 || k[i] == '=' || isspace((unsigned char)k[i]);
        if (bad) {
            config_err(w->err, w->errlen, "%s: key \"%s\" is not a setting name", w->origin, key);
            return -1;
        }
        if (json_is_object(v)) {
            if (walk(w, key, v))
                return -1;
            continue;
        }
        char tmp[64];
        const char *text;
        if (json_is_array(v)) {
            /* A list: items joined with ','. An item holding ',' could not be told apart. */
            size_t total = 1;
            size_t i;
            json_t *it;
            json_array_foreach(v, i, it)
            {
                if (json_leaf_text(it, tmp, sizeof tmp, &text) != 0 || strchr(text, ',')) {
                    config_err(w->err, w->errlen,
                               "%s: %s[%zu]: list items must be strings or numbers without ','",
                               w->origin, key, i);
                    return -1;
                }
                total += strlen(text) + 1;
            }
            char *joined = malloc(total);
            if (!joined) {
                config_err(w->err, w->errlen, "%s: %s: out of memory", w->origin, key);
                return -1;
            }
            joined[0] = '\0';
            size_t o = 0;
            json_array_foreach(v, i, it)
            {
                if (json_leaf_text(it, tmp, sizeof tmp, &text) != 0) {
                    /* Unreachable: the first pass accepted every item of this array. */
                    free(joined);
                    config_err(w->err, w->errlen, "%s: %s[%zu]: list item changed type", w->origin,
                               key, i);
                    return -1;
                }
                size_t tl = strlen(text);
                if (i)
                    joined[o++] = ',';
                memcpy(joined + o, text, tl + 1);
                o += tl;
            }
            int rc = w->fn(key, joined, w->arg);
            free(joined);
            if (rc)
                return -1;
            continue;
        }
        if (json_leaf_text(v, tmp, sizeof tmp, &text) != 0) {
            config_err(w->err, w->errlen, "%s: %s: null is not a value (leave the key out instead)",
                       w->origin, key);
            return -1;
        }
        if (json_is_string(v) && strlen(text) != json_string_length(v)) {
            config_err(w->err, w->errlen, "%s: %s: string contains a NUL character", w->origin,
                       key);
            return -1;
        }
        if (w->fn(key, text, w->arg))
            return -1;
    }
    return 0;
}

int config_parse_json(const char *text, size_t len, const char *origin, config_json_leaf_fn fn,
                      void *arg, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        config_err(err, errlen, "%s: line %d column %d: %s", origin, je.line, je.column, je.text);
        return -1;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        config_err(err, errlen, "%s: the top level must be a JSON object", origin);
        return -1;
    }
    struct json_walk w = {origin, fn, arg, err, errlen};
    int rc = walk(&w, "", root);
    json_decref(root);
    return rc;
}
