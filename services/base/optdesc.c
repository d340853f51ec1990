/* Option descriptions (optdesc.h): the check and the schema of one table, so that what is
 * refused and what is documented come from the same rows. */
#include "optdesc.h"

#include <stdio.h>
#include <string.h>

#define OPTDESC_MAX_ROWS 64 /* members of one object: more than any NDD object has */

static size_t optdesc_rows(const optdesc_t *tab)
{
    size_t n = 0;
    while (tab && tab[n].type != OPTDESC_END)
        n++;
    return n;
}

/* The row named name, or NULL. */
static const optdesc_t *optdesc_find(const optdesc_t *tab, const char *name)
{
    for (size_t i = 0; name && i < optdesc_rows(tab); i++)
        if (!strcmp(tab[i].name, name))
            return &tab[i];
    return NULL;
}

int64_t optdesc_int(const optdesc_t *tab, const json_t *obj, const char *name)
{
    const json_t *v = obj ? json_object_get(obj, name) : NULL;
    if (json_is_integer(v))
        return (int64_t)json_integer_value(v);
    if (json_is_boolean(v))
        return json_is_true(v);
    const optdesc_t *d = optdesc_find(tab, name);
    if (!d || !d->def)
        return 0;
    json_t *def = json_loads(d->def, JSON_DECODE_ANY, NULL);
    int64_t r = json_is_integer(def) ? (int64_t)json_integer_value(def) : json_is_true(def);
    json_decref(def);
    return r;
}

/* Writes a checked scalar into the caller's struct at the row's offset. */
static void optdesc_store_int(const optdesc_t *d, void *dst, int64_t v)
{
    if (!dst || !d->size)
        return;
    unsigned char *p = (unsigned char *)dst + d->off;
    if (d->size == 1) {
        bool b = v != 0;
        memcpy(p, &b, 1);
    } else if (d->size == 2) {
        uint16_t x = (uint16_t)v;
        memcpy(p, &x, 2);
    } else if (d->size == 4) {
        uint32_t x = (uint32_t)v;
        memcpy(p, &x, 4);
    } else if (d->size == 8) {
        memcpy(p, &v, 8);
    }
}

static int optdesc_map(const optdesc_t *d, const json_t *v, const char *path, jfield_err_t *err)
{
    if (!json_is_object(v))
        return jfield_fail(err, JFIELD_WRONG_TYPE, path, "expected object, got %s",
                           jfield_type_name(v));
    const char *k;
    const json_t *x;
    json_object_foreach((json_t *)v, k, x) if (!json_is_string(x))
    {
        char sub[320];
        snprintf(sub, sizeof sub, "%s.%.100s", path, k);
        return jfield_fail(err, JFIELD_WRONG_TYPE, sub, "expected string, got %s",
                           jfield_type_name(x));
    }
    if (d->max && json_object_size(v) > (size_t)d->max)
        return jfield_fail(err, JFIELD_INVALID, path, "more than %lld members", (long long)d->max);
    return 0;
}

static int optdesc_array(const optdesc_t *d, const json_t *v, const char *path, jfield_err_t *err)
{
    if (!json_is_array(v))
        return jfield_fail(err, JFIELD_WRONG_TYPE, path, "expected array, got %s",
                           jfield_type_name(v));
    size_t n = json_array_size(v);
    if ((int64_t)n < d->min || (d->max && (int64_t)n > d->max))
        return jfield_fail(err, JFIELD_INVALID, path, "needs %lld to %lld items", (long long)d->min,
                           (long long)d->max);
    for (size_t i = 0; i < n; i++) {
        char at[224];
        snprintf(at, sizeof at, "%s[%zu]", path, i);
        const json_t *item = json_array_get(v, i);
        if (!json_is_object(item))
            return jfield_fail(err, JFIELD_WRONG_TYPE, at, "expected object, got %s",
                               jfield_type_name(item));
        if (d->sub && optdesc_check(d->sub, item, at, NULL, err))
            return -1;
    }
    return 0;
}

/* One present member against its row. */
static int optdesc_member(const optdesc_t *d, const json_t *obj, const char *prefix, void *dst,
                          jfield_err_t *err)
{
    char path[192];
    jfield_path(path, sizeof path, prefix, d->name);
    const json_t *v = json_object_get(obj, d->name);
    int64_t n;
    bool b;
    const char *s;
    json_t *o;
    switch (d->type) {
    case OPTDESC_INT:
        if (jfield_int(obj, d->name, prefix, false, d->min, d->max, &n, err))
            return -1;
        optdesc_store_int(d, dst, n);
        return 0;
    case OPTDESC_BOOL:
        if (jfield_bool(obj, d->name, prefix, false, &b, err))
            return -1;
        optdesc_store_int(d, dst, b);
        return 0;
    case OPTDESC_STRING: {
        size_t max = d->max ? (size_t)d->max : SIZE_MAX;
        if (d->size && d->size - 1 < max)
            max = d->size - 1;
        if (jfield_string(obj, d->name, prefix, false, max, &s, err))
            return -1;
        if (dst && d->size)
            snprintf((char *)dst + d->off, d->size, "%s", s);
        return 0;
    }
    case OPTDESC_ENUM:
        return d->choices ? jfield_enum(obj, d->name, prefix, false, d->choices, &s, err)
                          : jfield_string(obj, d->name, prefix, false, 64, &s, err);
    case OPTDESC_MAP:
        return optdesc_map(d, v, path, err);
    case OPTDESC_OBJECT:
        if (jfield_object(obj, d->name, prefix, false, &o, err))
            return -1;
        return d->sub ? optdesc_check(d->sub, o, path, NULL, err) : 0;
    case OPTDESC_ARRAY:
        return optdesc_array(d, v, path, err);
    case OPTDESC_FILTER: /* its owner compiles it */
    case OPTDESC_END:
        return 0;
    }
    return 0;
}

int optdesc_check(const optdesc_t *tab, const json_t *obj, const char *prefix, void *dst,
                  jfield_err_t *err)
{
    if (!json_is_object(obj))
        return jfield_fail(err, JFIELD_WRONG_TYPE, prefix, "expected object, got %s",
                           jfield_type_name(obj));
    size_t rows = optdesc_rows(tab);
    const char *names[OPTDESC_MAX_ROWS + 1];
    for (size_t i = 0; i < rows && i < OPTDESC_MAX_ROWS; i++)
        names[i] = tab[i].name;
    names[rows < OPTDESC_MAX_ROWS ? rows : OPTDESC_MAX_ROWS] = NULL;
    if (jfield_unknown(obj, names, NULL, prefix, err))
        return -1;
    for (size_t i = 0; i < rows; i++) {
        const optdesc_t *d = &tab[i];
        if (!json_object_get(obj, d->name)) {
            if (d->flags & OPTDESC_REQUIRED) {
                char path[192];
                jfield_path(path, sizeof path, prefix, d->name);
                return jfield_fail(err, JFIELD_MISSING, path, "field \"%s\" is required", d->name);
            }
            continue;
        }
        if (optdesc_member(d, obj, prefix, dst, err))
            return -1;
    }
    return 0;
}

static const char *const optdesc_type_names[] = {
    [OPTDESC_END] = "end",       [OPTDESC_INT] = "integer", [OPTDESC_BOOL] = "boolean",
    [OPTDESC_STRING] = "string", [OPTDESC_ENUM] = "enum",   [OPTDESC_MAP] = "map",
    [OPTDESC_OBJECT] = "object", [OPTDESC_ARRAY] = "array", [OPTDESC_FILTER] = "filter",
};

/* The row's limits under the schema keywords its type uses. */
static void optdesc_schema_limits(const optdesc_t *d, json_t *o)
{
    if (d->type == OPTDESC_INT) {
        json_object_set_new(o, "minimum", json_integer((json_int_t)d->min));
        json_object_set_new(o, "maximum", json_integer((json_int_t)d->max));
    } else if (d->type == OPTDESC_STRING && (d->max || d->size)) {
        int64_t max = d->max ? d->max : (int64_t)d->size - 1;
        json_object_set_new(o, "maxLength", json_integer((json_int_t)max));
    } else if (d->type == OPTDESC_ARRAY) {
        json_object_set_new(o, "minItems", json_integer((json_int_t)d->min));
        if (d->max)
            json_object_set_new(o, "maxItems", json_integer((json_int_t)d->max));
    } else if (d->type == OPTDESC_MAP && d->max) {
        json_object_set_new(o, "maxProperties", json_integer((json_int_t)d->max));
    }
}

json_t *optdesc_schema_row(const optdesc_t *d, const char *prefix, const char *const *choices)
{
    char path[192];
    jfield_path(path, sizeof path, prefix, d->name);
    json_t *o = json_pack("{s:s,s:s,s:s,s:b,s:b}", "name", d->name, "path", path, "type",
                          optdesc_type_names[d->type], "required", !!(d->flags & OPTDESC_REQUIRED),
                          "secret", !!(d->flags & OPTDESC_SECRET));
    if (!o)
        return NULL;
    json_t *def = d->def ? json_loads(d->def, JSON_DECODE_ANY, NULL) : NULL;
    if (def)
        json_object_set_new(o, "default", def);
    optdesc_schema_limits(d, o);
    const char *const *ch = choices ? choices : d->choices;
    if (d->type == OPTDESC_ENUM && ch) {
        json_t *e = json_array();
        for (size_t i = 0; ch[i]; i++)
            json_array_append_new(e, json_string(ch[i]));
        json_object_set_new(o, "enum", e);
    }
    if (d->unit)
        json_object_set_new(o, "unit", json_string(d->unit));
    if (d->help)
        json_object_set_new(o, "help", json_string(d->help));
    if ((d->type == OPTDESC_OBJECT || d->type == OPTDESC_ARRAY) && d->sub) {
        char sub[200];
        snprintf(sub, sizeof sub, "%s%s", path, d->type == OPTDESC_ARRAY ? "[]" : "");
        json_object_set_new(o, "options", optdesc_schema(d->sub, sub));
    }
    return o;
}

json_t *optdesc_schema(const optdesc_t *tab, const char *prefix)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < optdesc_rows(tab); i++)
        json_array_append_new(a, optdesc_schema_row(&tab[i], prefix, NULL));
    return a;
}
