/* GET /api/v1/{coll}: a page of a collection, from the cache. Pages are ordered by (name, id)
 * and continued by an opaque cursor that holds the last (name, id) sent: the next page starts
 * strictly after that key, so objects created or deleted between two pages never make another
 * object appear twice or be skipped (an offset would shift under them). Filters: exact name,
 * name_prefix, state (enabled|disabled, from the object's "enabled", true when absent). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "admin_validate.h"

#define ADMIN_LIST_DEFAULT 100
#define ADMIN_LIST_MAX 1000
/* "c1" + hex of name '\n' id: names are at most ADMIN_NAME_MAX, ids far shorter than 160. */
#define ADMIN_CURSOR_MAX (2 + 2 * (ADMIN_NAME_MAX + 1 + 160))

typedef enum { ADMIN_STATE_ANY, ADMIN_STATE_ENABLED, ADMIN_STATE_DISABLED } admin_state_filter_t;

typedef struct admin_list_acc {
    const admin_obj_t **items;
    size_t n, max, total;
    const char *name;
    const char *prefix;
    size_t prefix_len;
    admin_state_filter_t state;
    bool after; /* only keys after (after_name, after_id) */
    char after_name[ADMIN_NAME_MAX + 1];
    char after_id[160];
} admin_list_acc_t;

static int admin_list_key_cmp(const char *an, const char *aid, const char *bn, const char *bid)
{
    int c = strcmp(an ? an : "", bn ? bn : "");
    return c ? c : strcmp(aid, bid);
}

static int admin_list_collect(admin_obj_t *o, void *arg)
{
    admin_list_acc_t *a = arg;
    if (a->name && (!o->name || strcmp(a->name, o->name) != 0))
        return 0;
    if (a->prefix && (!o->name || strncmp(o->name, a->prefix, a->prefix_len) != 0))
        return 0;
    if (a->state != ADMIN_STATE_ANY) {
        json_t *en = json_object_get(o->json, "enabled");
        bool enabled = !json_is_false(en);
        if (enabled != (a->state == ADMIN_STATE_ENABLED))
            return 0;
    }
    a->total++;
    if (a->after && admin_list_key_cmp(o->name, o->id, a->after_name, a->after_id) <= 0)
        return 0;
    if (a->n < a->max)
        a->items[a->n++] = o;
    return 0;
}

static int admin_list_cmp(const void *x, const void *y)
{
    const admin_obj_t *a = *(const admin_obj_t *const *)x, *b = *(const admin_obj_t *const *)y;
    return admin_list_key_cmp(a->name, a->id, b->name, b->id);
}

static int admin_query_int(const admin_req_t *req, const char *key, long def, long min, long max,
                           long *out, admin_resp_t *resp)
{
    char v[32];
    *out = def;
    if (!admin_query_get(req->query, key, v, sizeof(v)))
        return 0;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || end == v || *end || n < min || n > max) {
        admin_resp_errorf(resp, 400, "invalid parameter", key, "expected an integer %ld..%ld", min,
                          max);
        return -1;
    }
    *out = n;
    return 0;
}

int admin_cursor_encode(const char *name, const char *id, char *out, size_t outlen)
{
    static const char digits[] = "0123456789abcdef";
    size_t nl = name ? strlen(name) : 0, il = strlen(id);
    if (nl > ADMIN_NAME_MAX || il >= 160 || 2 + 2 * (nl + 1 + il) + 1 > outlen)
        return -1;
    size_t o = 0;
    out[o++] = 'c';
    out[o++] = '1';
    for (size_t i = 0; i < nl + 1 + il; i++) {
        unsigned char c = i < nl    ? (unsigned char)name[i]
                          : i == nl ? '\n'
                                    : (unsigned char)id[i - nl - 1];
        out[o++] = digits[c >> 4];
        out[o++] = digits[c & 15];
    }
    out[o] = '\0';
    return 0;
}

int admin_cursor_decode(const char *cursor, char *name, size_t namelen, char *id, size_t idlen)
{
    size_t n = strlen(cursor);
    if (n < 4 || n % 2 || cursor[0] != 'c' || cursor[1] != '1')
        return -1;
    size_t nn = 0, in = 0;
    bool in_id = false;
    for (size_t i = 2; i < n; i += 2) {
        int v = 0;
        for (int j = 0; j < 2; j++) {
            char c = cursor[i + (size_t)j];
            v <<= 4;
            if (c >= '0' && c <= '9')
                v |= c - '0';
            else if (c >= 'a' && c <= 'f')
                v |= c - 'a' + 10;
            else
                return -1;
        }
        if (v == 0)
            return -1;
        if (v == '\n' && !in_id) {
            in_id = true;
            continue;
        }
        if (in_id) {
            if (in + 1 >= idlen)
                return -1;
            id[in++] = (char)v;
        } else {
            if (nn + 1 >= namelen)
                return -1;
            name[nn++] = (char)v;
        }
    }
    if (!in_id || in == 0)
        return -1;
    name[nn] = '\0';
    id[in] = '\0';
    return 0;
}

/* Parses the list's query into acc; on a bad value answers 400 naming the parameter. */
static int admin_list_params(const admin_req_t *req, admin_list_acc_t *acc, char *name,
                             size_t namelen, char *prefix, size_t prefixlen, admin_resp_t *resp)
{
    char v[ADMIN_CURSOR_MAX + 2];
    if (admin_query_get(req->query, "name", name, namelen))
        acc->name = name;
    if (admin_query_get(req->query, "name_prefix", v, sizeof(v))) {
        if (strlen(v) > ADMIN_NAME_MAX) {
            admin_resp_errorf(resp, 400, "invalid parameter", "name_prefix",
                              "at most %d characters", ADMIN_NAME_MAX);
            return -1;
        }
        snprintf(prefix, prefixlen, "%s", v);
        acc->prefix = prefix;
        acc->prefix_len = strlen(prefix);
    }
    if (admin_query_get(req->query, "state", v, sizeof(v))) {
        if (strcmp(v, "enabled") == 0)
            acc->state = ADMIN_STATE_ENABLED;
        else if (strcmp(v, "disabled") == 0)
            acc->state = ADMIN_STATE_DISABLED;
        else {
            admin_resp_errorf(resp, 400, "invalid parameter", "state",
                              "expected enabled or disabled");
            return -1;
        }
    }
    if (admin_query_get(req->query, "cursor", v, sizeof(v))) {
        if (strlen(v) > ADMIN_CURSOR_MAX ||
            admin_cursor_decode(v, acc->after_name, sizeof(acc->after_name), acc->after_id,
                                sizeof(acc->after_id)) != 0) {
            admin_resp_errorf(resp, 400, "invalid parameter", "cursor",
                              "not a cursor this API returned in next_cursor");
            return -1;
        }
        acc->after = true;
    }
    return 0;
}

void admin_h_list(admin_ctx_t *ctx, const admin_req_t *req, const char *id, admin_resp_t *resp)
{
    const char *seg = req->path + strlen("/api/v1/");
    admin_kind_t kind;
    if (admin_kind_from_collection(seg, strcspn(seg, "/"), &kind) != 0) {
        admin_resp_errorf(resp, 404, "not found", "", "unknown collection");
        return;
    }
    long limit, offset;
    if (admin_query_int(req, "limit", ADMIN_LIST_DEFAULT, 1, ADMIN_LIST_MAX, &limit, resp) ||
        admin_query_int(req, "offset", 0, 0, 100000000, &offset, resp))
        return;
    admin_cache_t *c = &ctx->cache[kind];
    admin_list_acc_t acc;
    memset(&acc, 0, sizeof(acc));
    acc.max = c->count;
    char name[80], prefix[ADMIN_NAME_MAX + 1];
    if (admin_list_params(req, &acc, name, sizeof(name), prefix, sizeof(prefix), resp) != 0)
        return;
    if (acc.after && offset) {
        admin_resp_errorf(resp, 400, "invalid parameter", "offset",
                          "offset and cursor cannot be combined");
        return;
    }
    acc.items = calloc(acc.max ? acc.max : 1, sizeof(*acc.items));
    if (!acc.items) {
        admin_resp_errorf(resp, 503, "overloaded", "", "out of memory");
        return;
    }
    admin_cache_foreach(c, admin_list_collect, &acc);
    qsort(acc.items, acc.n, sizeof(*acc.items), admin_list_cmp);
    /* Concatenates the cached texts: a list is never re-serialised. */
    buf_reset(&resp->body);
    buf_append_str(&resp->body, "{\"items\":[");
    size_t shown = 0, i = (size_t)offset;
    for (; i < acc.n && shown < (size_t)limit; i++, shown++) {
        if (shown)
            buf_append_str(&resp->body, ",");
        buf_append(&resp->body, acc.items[i]->text, acc.items[i]->text_len - 1);
    }
    int rc = buf_printf(&resp->body, "],\"count\":%zu,\"total\":%zu,\"offset\":%ld", shown,
                        acc.total, offset);
    char cursor[ADMIN_CURSOR_MAX + 1];
    if (i < acc.n && shown &&
        admin_cursor_encode(acc.items[i - 1]->name, acc.items[i - 1]->id, cursor, sizeof(cursor)) ==
            0)
        rc |= buf_printf(&resp->body, ",\"next_cursor\":\"%s\"", cursor);
    rc |= buf_append_str(&resp->body, "}\n");
    free(acc.items);
    if (rc != 0) {
        admin_resp_errorf(resp, 503, "overloaded", "", "list too large; use limit");
        return;
    }
    resp->status = 200;
}
