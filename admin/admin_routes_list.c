/* GET /api/v1/{coll}: a page of a collection, from the cache. Pages are ordered by (name, id)
 * and continued by an opaque cursor that holds the last (name, id) sent: the next page starts
 * strictly after that key, so objects created or deleted between two pages never make another
 * object appear twice or be skipped (an offset would shift under them). Filters: exact name,
 * name_prefix, state (enabled|disabled, from the object's "enabled", true when absent). The
 * cache keeps its objects in that order (admin_cache.c), so a page costs a binary search and
 * a walk of the page, whatever the size of the collection. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "admin_validate.h"
#include "httpd.h"

#define ADMIN_LIST_DEFAULT 100
#define ADMIN_LIST_MAX 1000
/* "c1" + hex of name '\n' id: names are at most ADMIN_NAME_MAX, ids far shorter than 160. */
#define ADMIN_CURSOR_MAX (2 + 2 * (ADMIN_NAME_MAX + 1 + 160))

typedef enum { ADMIN_STATE_ANY, ADMIN_STATE_ENABLED, ADMIN_STATE_DISABLED } admin_state_filter_t;

typedef struct admin_list_acc {
    const char *name;
    const char *prefix;
    size_t prefix_len;
    admin_state_filter_t state;
    bool after; /* only keys after (after_name, after_id) */
    char after_name[ADMIN_NAME_MAX + 1];
    char after_id[160];
} admin_list_acc_t;

static bool admin_list_match(const admin_list_acc_t *a, const admin_obj_t *o)
{
    if (a->name && (!o->name || strcmp(a->name, o->name) != 0))
        return false;
    if (a->prefix && (!o->name || strncmp(o->name, a->prefix, a->prefix_len) != 0))
        return false;
    if (a->state != ADMIN_STATE_ANY) {
        bool enabled = !json_is_false(json_object_get(o->json, "enabled"));
        if (enabled != (a->state == ADMIN_STATE_ENABLED))
            return false;
    }
    return true;
}

static int admin_query_int(const admin_req_t *req, const char *key, long def, long min, long max,
                           long *out, admin_resp_t *resp)
{
    char v[32];
    *out = def;
    if (!httpd_query_get(req->query, key, v, sizeof(v)))
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
    if (httpd_query_get(req->query, "name", name, namelen))
        acc->name = name;
    if (httpd_query_get(req->query, "name_prefix", v, sizeof(v))) {
        if (strlen(v) > ADMIN_NAME_MAX) {
            admin_resp_errorf(resp, 400, "invalid parameter", "name_prefix",
                              "at most %d characters", ADMIN_NAME_MAX);
            return -1;
        }
        snprintf(prefix, prefixlen, "%s", v);
        acc->prefix = prefix;
        acc->prefix_len = strlen(prefix);
    }
    if (httpd_query_get(req->query, "state", v, sizeof(v))) {
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
    if (httpd_query_get(req->query, "cursor", v, sizeof(v))) {
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
    const admin_cache_t *c = &ctx->cache[kind];
    admin_list_acc_t acc;
    memset(&acc, 0, sizeof(acc));
    char name[80], prefix[ADMIN_NAME_MAX + 1];
    if (admin_list_params(req, &acc, name, sizeof(name), prefix, sizeof(prefix), resp) != 0)
        return;
    if (acc.after && offset) {
        admin_resp_errorf(resp, 400, "invalid parameter", "offset",
                          "offset and cursor cannot be combined");
        return;
    }
    bool filtered = acc.name || acc.prefix || acc.state != ADMIN_STATE_ANY;
    /* The cache keeps (name, id) order: the page starts at a binary search for the cursor
     * and stops one match after the last item shown, allocating and sorting nothing. */
    size_t total = 0;
    if (!filtered)
        total = c->count;
    else
        for (size_t k = 0; k < c->count; k++)
            total += admin_list_match(&acc, c->sorted[k]);
    buf_reset(&resp->body);
    buf_append_str(&resp->body, "{\"items\":[");
    size_t shown = 0, skipped = 0,
           k = admin_cache_after(c, acc.after ? acc.after_name : NULL,
                                 acc.after ? acc.after_id : NULL);
    const admin_obj_t *last = NULL;
    bool more = false;
    for (; k < c->count; k++) {
        const admin_obj_t *o = c->sorted[k];
        if (filtered && !admin_list_match(&acc, o))
            continue;
        if (skipped < (size_t)offset) {
            skipped++;
            continue;
        }
        if (shown == (size_t)limit) {
            more = true;
            break;
        }
        if (shown)
            buf_append_str(&resp->body, ",");
        buf_append(&resp->body, o->text, o->text_len - 1);
        shown++;
        last = o;
    }
    int rc = buf_printf(&resp->body, "],\"count\":%zu,\"total\":%zu,\"offset\":%ld", shown, total,
                        offset);
    char cursor[ADMIN_CURSOR_MAX + 1];
    if (more && last && admin_cursor_encode(last->name, last->id, cursor, sizeof(cursor)) == 0)
        rc |= buf_printf(&resp->body, ",\"next_cursor\":\"%s\"", cursor);
    rc |= buf_append_str(&resp->body, "}\n");
    if (rc != 0) {
        admin_resp_errorf(resp, 503, "overloaded", "", "list too large; use limit");
        return;
    }
    resp->status = 200;
}
