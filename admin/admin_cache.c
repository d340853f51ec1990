/* The in-memory copy of every configuration object. Reads (GET) are served from here so that
 * they never touch PostgreSQL: fast, and still answered while the database is down. The
 * cache is written only after a database commit, so it never holds uncommitted state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"

static size_t admin_cache_hash(const char *s)
{
    size_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

int admin_cache_init(admin_cache_t *c, size_t max)
{
    memset(c, 0, sizeof(*c));
    c->max = max;
    c->nbuckets = 1024;
    while (c->nbuckets < max && c->nbuckets < (1u << 20))
        c->nbuckets <<= 1;
    c->buckets = calloc(c->nbuckets, sizeof(*c->buckets));
    c->buckets_by_name = calloc(c->nbuckets, sizeof(*c->buckets_by_name));
    if (!c->buckets || !c->buckets_by_name) {
        admin_cache_free(c);
        return -1;
    }
    return 0;
}

static void admin_obj_free(admin_obj_t *o)
{
    free(o->id);
    free(o->name);
    free(o->text);
    json_decref(o->json);
    free(o);
}

int admin_obj_key_cmp(const char *aname, const char *aid, const char *bname, const char *bid)
{
    int r = strcmp(aname ? aname : "", bname ? bname : "");
    return r ? r : strcmp(aid, bid);
}

/* First index whose key is >= (name, id) (strictly_after: > ). */
static size_t admin_cache_bound(const admin_cache_t *c, const char *name, const char *id,
                                bool strictly_after)
{
    size_t lo = 0, hi = c->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = admin_obj_key_cmp(c->sorted[mid]->name, c->sorted[mid]->id, name, id);
        if (r < 0 || (strictly_after && r == 0))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

size_t admin_cache_after(const admin_cache_t *c, const char *name, const char *id)
{
    return id ? admin_cache_bound(c, name, id, true) : 0;
}

void admin_cache_clear(admin_cache_t *c)
{
    for (size_t i = 0; c->buckets && i < c->nbuckets; i++) {
        admin_obj_t *o = c->buckets[i];
        while (o) {
            admin_obj_t *next = o->next_in_bucket;
            admin_obj_free(o);
            o = next;
        }
        c->buckets[i] = NULL;
        c->buckets_by_name[i] = NULL;
    }
    c->count = 0;
}

void admin_cache_free(admin_cache_t *c)
{
    admin_cache_clear(c);
    free(c->buckets);
    free(c->buckets_by_name);
    free(c->sorted);
    c->buckets = NULL;
    c->buckets_by_name = NULL;
    c->sorted = NULL;
    c->sorted_cap = 0;
}

/* The object whose id (or name) is key: the two indexes are chained the same way. */
static admin_obj_t *admin_cache_lookup(admin_obj_t *const *buckets, size_t nbuckets,
                                       const char *key, bool by_name)
{
    if (!buckets || !key)
        return NULL;
    for (admin_obj_t *o = buckets[admin_cache_hash(key) & (nbuckets - 1)]; o;
         o = by_name ? o->next_by_name : o->next_in_bucket)
        if (strcmp(by_name ? o->name : o->id, key) == 0)
            return o;
    return NULL;
}

admin_obj_t *admin_cache_get(const admin_cache_t *c, const char *id)
{
    return admin_cache_lookup(c->buckets, c->nbuckets, id, false);
}

admin_obj_t *admin_cache_find_name(const admin_cache_t *c, const char *name)
{
    return admin_cache_lookup(c->buckets_by_name, c->nbuckets, name, true);
}

int admin_cache_put(admin_cache_t *c, json_t *json)
{
    const char *id = json_string_value(json_object_get(json, "id"));
    const char *name = json_string_value(json_object_get(json, "name"));
    if (!id) {
        json_decref(json);
        return -1;
    }
    admin_obj_t *old = admin_cache_get(c, id);
    if (!old && c->count >= c->max) {
        json_decref(json);
        return -1;
    }
    if (!old && c->count >= c->sorted_cap) {
        size_t cap = c->sorted_cap ? 2 * c->sorted_cap : 64;
        if (cap > c->max)
            cap = c->max;
        admin_obj_t **s = realloc(c->sorted, cap * sizeof(*s));
        if (!s) {
            json_decref(json);
            return -1;
        }
        c->sorted = s;
        c->sorted_cap = cap;
    }
    admin_obj_t *o = calloc(1, sizeof(*o));
    char *text = json_dumps(json, JSON_COMPACT);
    if (!o || !text)
        goto oom;
    o->id = strdup(id);
    o->name = name ? strdup(name) : NULL;
    if (!o->id || (name && !o->name))
        goto oom;
    o->version = json_integer_value(json_object_get(json, "version"));
    snprintf(o->etag, sizeof(o->etag), "\"%lld\"", (long long)o->version);
    /* Keep a trailing newline in the cached text so a read is one write of ready bytes. */
    size_t len = strlen(text);
    o->text = malloc(len + 2);
    if (!o->text)
        goto oom;
    o->json = json;
    memcpy(o->text, text, len);
    o->text[len] = '\n';
    o->text[len + 1] = '\0';
    o->text_len = len + 1;
    free(text);
    if (old)
        admin_cache_remove(c, id);
    size_t b = admin_cache_hash(o->id) & (c->nbuckets - 1);
    o->next_in_bucket = c->buckets[b];
    c->buckets[b] = o;
    if (o->name) {
        size_t nb = admin_cache_hash(o->name) & (c->nbuckets - 1);
        o->next_by_name = c->buckets_by_name[nb];
        c->buckets_by_name[nb] = o;
    }
    size_t at = admin_cache_bound(c, o->name, o->id, false);
    memmove(&c->sorted[at + 1], &c->sorted[at], (c->count - at) * sizeof(*c->sorted));
    c->sorted[at] = o;
    c->count++;
    return 0;
oom:
    if (o) {
        free(o->id);
        free(o->name);
    }
    free(o);
    free(text);
    json_decref(json);
    return -1;
}

void admin_cache_remove(admin_cache_t *c, const char *id)
{
    if (!c->buckets)
        return;
    admin_obj_t **pp = &c->buckets[admin_cache_hash(id) & (c->nbuckets - 1)];
    for (; *pp; pp = &(*pp)->next_in_bucket) {
        if (strcmp((*pp)->id, id) == 0) {
            admin_obj_t *o = *pp;
            *pp = o->next_in_bucket;
            if (o->name) {
                admin_obj_t **np =
                    &c->buckets_by_name[admin_cache_hash(o->name) & (c->nbuckets - 1)];
                while (*np && *np != o)
                    np = &(*np)->next_by_name;
                if (*np)
                    *np = o->next_by_name;
            }
            size_t at = admin_cache_bound(c, o->name, o->id, false);
            if (at < c->count && c->sorted[at] == o)
                memmove(&c->sorted[at], &c->sorted[at + 1],
                        (c->count - at - 1) * sizeof(*c->sorted));
            admin_obj_free(o);
            c->count--;
            return;
        }
    }
}

int admin_cache_foreach(const admin_cache_t *c, int (*fn)(admin_obj_t *, void *), void *arg)
{
    for (size_t i = 0; c->buckets && i < c->nbuckets; i++)
        for (admin_obj_t *o = c->buckets[i]; o; o = o->next_in_bucket) {
            int r = fn(o, arg);
            if (r)
                return r;
        }
    return 0;
}
