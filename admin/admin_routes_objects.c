/* The four configuration collections (feeds, filters, sources, correlation) share one set of
 * handlers: reads come from the cache, writes go to PostgreSQL (with the audit row), then to
 * the cache, then to ndd.config. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "log.h"
#include "metrics.h"

/* The collection of a request: the segment after /api/v1/. */
static int admin_req_kind(const admin_req_t *req, admin_kind_t *kind)
{
    const char *seg = req->path + strlen("/api/v1/");
    return admin_kind_from_collection(seg, strcspn(seg, "/"), kind);
}

static void admin_set_etag(admin_resp_t *resp, int64_t version)
{
    snprintf(resp->etag, sizeof(resp->etag), "\"%lld\"", (long long)version);
}

/* If-Match: absent or "*" -> -1 (no check); "N", W/"N" or N -> N; anything else -> -2. */
static int64_t admin_if_match(const char *h)
{
    if (!h || strcmp(h, "*") == 0)
        return -1;
    if (strncmp(h, "W/", 2) == 0)
        h += 2;
    char buf[32];
    size_t n = strlen(h);
    if (n >= 2 && h[0] == '"' && h[n - 1] == '"') {
        if (n - 2 >= sizeof(buf))
            return -2;
        memcpy(buf, h + 1, n - 2);
        buf[n - 2] = '\0';
    } else {
        if (n >= sizeof(buf))
            return -2;
        memcpy(buf, h, n + 1);
    }
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno || end == buf || *end || v < 1)
        return -2;
    return v;
}

static void admin_send_object(admin_resp_t *resp, int status, const admin_obj_t *o)
{
    admin_resp_text(resp, status, o->text, o->text_len);
    resp->content_type = "application/json";
    memcpy(resp->etag, o->etag, sizeof(o->etag));
}

/* If-None-Match (RFC 9110 13.1.2): "*" or any listed tag equal to the current one, weak
 * comparison (W/ ignored), means the client's copy is current. */
static bool admin_if_none_match(const char *h, const char *etag)
{
    if (!h)
        return false;
    size_t elen = strlen(etag);
    while (*h) {
        while (*h == ' ' || *h == '\t' || *h == ',')
            h++;
        if (*h == '*')
            return true;
        if (strncmp(h, "W/", 2) == 0)
            h += 2;
        size_t n = strcspn(h, ",");
        while (n && (h[n - 1] == ' ' || h[n - 1] == '\t'))
            n--;
        if (n == elen && memcmp(h, etag, elen) == 0)
            return true;
        h += strcspn(h, ",");
    }
    return false;
}

void admin_h_get(admin_ctx_t *ctx, const admin_req_t *req, const char *id, admin_resp_t *resp)
{
    admin_kind_t kind;
    if (admin_req_kind(req, &kind) != 0) {
        admin_resp_errorf(resp, 404, "not found", "", "unknown collection");
        return;
    }
    const admin_obj_t *o = admin_cache_get(&ctx->cache[kind], id);
    if (!o) {
        admin_resp_errorf(resp, 404, "not found", "", "%s %s does not exist", admin_kind_name(kind),
                          id);
        return;
    }
    memcpy(resp->etag, o->etag, sizeof(o->etag));
    if (admin_if_none_match(req->if_none_match, o->etag)) {
        resp->status = 304;
        return;
    }
    /* The cached text itself, not a copy: a read allocates nothing here. */
    resp->status = 200;
    resp->content_type = "application/json";
    resp->body_ref = o->text;
    resp->body_ref_len = o->text_len;
}

/* After a commit: cache, publish, and for a filter the feeds that embed it. */
void admin_after_write(admin_ctx_t *ctx, admin_kind_t kind, const char *id, json_t *out)
{
    if (out) {
        json_incref(out);
        if (admin_cache_put(&ctx->cache[kind], out) != 0)
            log_error("admin: %s %s committed but the cache is full; restart to reload",
                      admin_kind_name(kind), id);
    } else {
        admin_cache_remove(&ctx->cache[kind], id);
    }
    if (ctx->pub) {
        admin_publish(ctx->pub, ctx, kind, id, out);
        if (kind == ADMIN_KIND_FILTER && out)
            admin_publish_feeds_using(ctx->pub, ctx,
                                      json_string_value(json_object_get(out, "name")));
    }
}

/* After a create, replace or patch of a feed is committed: its topic and new ACLs, then the
 * removal of ACLs the old version had. When Kafka refuses, the write is undone in the database
 * (a create is deleted, a replace restores the old version: one more audited write) and the
 * client gets Kafka's error; nothing was published yet. */
static int admin_kafka_feed_apply(admin_ctx_t *ctx, const char *action, const char *who,
                                  json_t *out, json_t *before, admin_err_t *err)
{
    if (admin_kacl_grant(ctx->kacl, out, err) == 0 &&
        (!before || admin_kacl_revoke(ctx->kacl, ctx, before, out, err) == 0))
        return 0;
    const char *oid = json_string_value(json_object_get(out, "id"));
    admin_err_t uerr, kerr;
    json_t *o2 = NULL, *b2 = NULL, *old = before ? admin_strip_server_fields(before) : NULL;
    int rc = admin_db_write(ctx->db, ADMIN_KIND_FEED, before ? "replace" : "delete", oid, old, -1,
                            who, &o2, &b2, &uerr);
    json_decref(old);
    if (rc != 0)
        log_error("admin: %s of feed %s is committed but Kafka refused it and undoing it failed: "
                  "%s (the reconcile at the next start grants what the database holds)",
                  action, oid, uerr.reason);
    else if (admin_kacl_revoke(ctx->kacl, ctx, out, before, &kerr) != 0)
        log_error("admin: feed %s: ACLs of the refused %s not removed: %s", oid, action,
                  kerr.reason);
    if (rc == 0 && o2) {
        /* The restored version replaces the cached one (its version number moved on). */
        json_incref(o2);
        if (admin_cache_put(&ctx->cache[ADMIN_KIND_FEED], o2) != 0)
            log_error("admin: feed %s restored but the cache is full; restart to reload", oid);
        if (ctx->pub)
            admin_publish(ctx->pub, ctx, ADMIN_KIND_FEED, oid, o2);
    }
    json_decref(o2);
    json_decref(b2);
    return -1;
}

/* What a write must pass before the database sees it: its body parsed and (but for a patch)
 * validated, room in the collection for a create, a database. *body is the parsed body (NULL
 * for a delete); -1 when answered with an error. */
static int admin_write_admit(admin_ctx_t *ctx, const admin_req_t *req, admin_kind_t kind,
                             const char *action, bool is_delete, json_t **body, admin_resp_t *resp)
{
    admin_err_t err;
    if (!is_delete) {
        *body = admin_parse_body(req->body, req->body_len, ctx->max_body, &err);
        if (!*body) {
            admin_resp_error(resp, &err);
            return -1;
        }
        /* A patch is validated after merging, inside the transaction. */
        if (strcmp(action, "patch") != 0 && admin_validate(kind, *body, &err) != 0) {
            json_decref(*body);
            admin_resp_error(resp, &err);
            return -1;
        }
    }
    if (strcmp(action, "create") == 0 && ctx->cache[kind].count >= ctx->cache[kind].max) {
        json_decref(*body);
        admin_resp_errorf(resp, 507, "collection full", "",
                          "at most %zu %s objects; delete some first", ctx->cache[kind].max,
                          admin_kind_name(kind));
        return -1;
    }
    if (!ctx->db) {
        json_decref(*body);
        admin_resp_errorf(resp, 503, "database unavailable", "", "no database configured");
        return -1;
    }
    return 0;
}

/* Before a Kafka feed's row is deleted, its ACLs go: *current is then the cached feed (NULL
 * when not cached), to grant them again if the database refuses. -1 when answered with
 * Kafka's error. */
static int admin_write_revoke_first(admin_ctx_t *ctx, admin_kind_t kind, const char *id,
                                    json_t **current, admin_resp_t *resp)
{
    admin_err_t err;
    const admin_obj_t *cur = admin_cache_get(&ctx->cache[kind], id);
    *current = cur ? json_incref(cur->json) : NULL;
    if (*current && admin_kacl_revoke(ctx->kacl, ctx, *current, NULL, &err) != 0) {
        json_decref(*current);
        admin_resp_error(resp, &err);
        return -1;
    }
    return 0;
}

/* The database refused the write: the ACLs revoked ahead of a delete (current) are granted
 * again, and the client gets the database's error. */
static void admin_write_refused(admin_ctx_t *ctx, const char *id, json_t *current,
                                const admin_err_t *err, admin_resp_t *resp)
{
    if (err->status == 503)
        metrics_counter_inc(ctx->db_unavailable);
    admin_err_t kerr;
    if (current && admin_kacl_grant(ctx->kacl, current, &kerr) != 0)
        log_error("admin: feed %s was not deleted and its ACLs could not be restored: %s "
                  "(the reconcile at the next start restores them)",
                  id, kerr.reason);
    json_decref(current);
    admin_resp_error(resp, err);
}

/* The answer to a committed write: 204 for a delete, else the object as cached (the text
 * every read serves) or, when the cache is full, as written; a create adds Location.
 * Consumes out. */
static void admin_write_reply(admin_ctx_t *ctx, admin_kind_t kind, const char *action,
                              bool is_delete, const char *oid, json_t *out, admin_resp_t *resp)
{
    if (is_delete) {
        admin_resp_text(resp, 204, "", 0);
        json_decref(out);
        return;
    }
    const admin_obj_t *o = admin_cache_get(&ctx->cache[kind], oid);
    bool created = strcmp(action, "create") == 0;
    if (o) {
        admin_send_object(resp, created ? 201 : 200, o);
    } else {
        admin_set_etag(resp, json_integer_value(json_object_get(out, "version")));
        json_incref(out);
        admin_resp_json(resp, created ? 201 : 200, out);
    }
    if (created)
        snprintf(resp->location, sizeof(resp->location), "/api/v1/%s/%s",
                 admin_kind_collection(kind), oid);
    json_decref(out);
}

/* create, replace, patch and delete: checked, written to PostgreSQL (a Kafka feed's ACLs
 * around it), then cached and published, then answered. */
static void admin_write(admin_ctx_t *ctx, const admin_req_t *req, const char *id,
                        const char *action, admin_resp_t *resp)
{
    admin_kind_t kind;
    if (admin_req_kind(req, &kind) != 0) {
        admin_resp_errorf(resp, 404, "not found", "", "unknown collection");
        return;
    }
    int64_t if_match = admin_if_match(req->if_match);
    if (if_match == -2) {
        admin_resp_errorf(resp, 400, "invalid header", "If-Match",
                          "expected a version as returned in ETag, e.g. \"3\"");
        return;
    }
    bool is_delete = strcmp(action, "delete") == 0;
    json_t *body = NULL;
    if (admin_write_admit(ctx, req, kind, action, is_delete, &body, resp) != 0)
        return;
    json_t *out = NULL, *before = NULL;
    const char *who = req->principal.name[0] ? req->principal.name : "anonymous";
    /* A Kafka feed's ACLs go before its row: access is never wider than the database says. */
    bool kafka_feed = kind == ADMIN_KIND_FEED && ctx->kacl;
    json_t *current = NULL;
    if (kafka_feed && is_delete && admin_write_revoke_first(ctx, kind, id, &current, resp) != 0)
        return;
    admin_err_t err;
    int rc = admin_db_write(ctx->db, kind, action, strcmp(action, "create") ? id : NULL, body,
                            if_match, who, &out, &before, &err);
    json_decref(body);
    if (rc != 0) {
        admin_write_refused(ctx, id, current, &err, resp);
        return;
    }
    json_decref(current);
    if (kafka_feed && !is_delete && admin_kafka_feed_apply(ctx, action, who, out, before, &err)) {
        json_decref(out);
        json_decref(before);
        admin_resp_error(resp, &err);
        return;
    }
    const char *oid = out ? json_string_value(json_object_get(out, "id")) : id;
    log_info("admin: %s %s %s (%s) by %s", action, admin_kind_name(kind), oid,
             out ? json_string_value(json_object_get(out, "name")) : "deleted", who);
    char oid_copy[160];
    snprintf(oid_copy, sizeof(oid_copy), "%s", oid);
    admin_after_write(ctx, kind, oid_copy, out);
    json_decref(before);
    admin_write_reply(ctx, kind, action, is_delete, oid_copy, out, resp);
}

void admin_h_create(admin_ctx_t *ctx, const admin_req_t *req, const char *id, admin_resp_t *resp)
{
    admin_write(ctx, req, NULL, "create", resp);
}

void admin_h_replace(admin_ctx_t *ctx, const admin_req_t *req, const char *id, admin_resp_t *resp)
{
    admin_write(ctx, req, id, "replace", resp);
}

void admin_h_patch(admin_ctx_t *ctx, const admin_req_t *req, const char *id, admin_resp_t *resp)
{
    admin_write(ctx, req, id, "patch", resp);
}

void admin_h_delete(admin_ctx_t *ctx, const admin_req_t *req, const char *id, admin_resp_t *resp)
{
    admin_write(ctx, req, id, "delete", resp);
}
