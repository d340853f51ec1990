/* The difference between two versions of an object as a list of changed paths, for the
 * declarative apply's report (and anything else that shows a change to a person): one entry
 * per leaf that differs, objects compared member by member (in name order, so the report is
 * stable), arrays element by element. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"

static int admin_diff_key_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void admin_diff_rec(json_t *a, json_t *b, const char *path, json_t *out);

/* Both objects: every member of either, in name order. */
static void admin_diff_objects(json_t *a, json_t *b, const char *path, json_t *out)
{
    size_t n = json_object_size(a) + json_object_size(b), k = 0;
    const char **keys = calloc(n ? n : 1, sizeof(*keys));
    if (!keys)
        return;
    const char *key;
    json_t *v;
    json_object_foreach(a, key, v) keys[k++] = key;
    json_object_foreach(b, key, v) if (!json_object_get(a, key)) keys[k++] = key;
    qsort(keys, k, sizeof(*keys), admin_diff_key_cmp);
    for (size_t i = 0; i < k; i++) {
        char child[512];
        snprintf(child, sizeof(child), "%s%s%s", path, *path ? "." : "", keys[i]);
        admin_diff_rec(json_object_get(a, keys[i]), json_object_get(b, keys[i]), child, out);
    }
    free(keys);
}

static void admin_diff_rec(json_t *a, json_t *b, const char *path, json_t *out)
{
    if (a && b && json_equal(a, b))
        return;
    if (json_is_object(a) && json_is_object(b)) {
        admin_diff_objects(a, b, path, out);
        return;
    }
    if (json_is_array(a) && json_is_array(b)) {
        size_t na = json_array_size(a), nb = json_array_size(b);
        for (size_t i = 0; i < (na > nb ? na : nb); i++) {
            char child[512];
            snprintf(child, sizeof(child), "%s[%zu]", path, i);
            admin_diff_rec(json_array_get(a, i), json_array_get(b, i), child, out);
        }
        return;
    }
    json_t *d = json_pack("{s:s}", "path", path);
    if (a)
        json_object_set(d, "before", a);
    if (b)
        json_object_set(d, "after", b);
    json_array_append_new(out, d);
}

json_t *admin_json_diff(json_t *before, json_t *after)
{
    json_t *out = json_array();
    json_t *a = before ? admin_strip_server_fields(before) : json_object();
    json_t *b = after ? admin_strip_server_fields(after) : json_object();
    if (out && a && b)
        admin_diff_objects(a, b, "", out);
    json_decref(a);
    json_decref(b);
    return out;
}
