/* POST /api/v1/apply: the declarative apply (docs/api.md, "Declarative apply"). A document
 * {"feeds":[…],"filters":[…],"sources":[…],"correlation":[…]} names the objects it wants by
 * name; the admin works out what to create, replace and (with prune) delete, and either
 * reports it (dry_run) or does all of it in one PostgreSQL transaction.
 *
 * Order of work: every object is validated with the validators of POST/PUT, names are checked
 * for duplicates and filter references resolved against what the database will hold after the
 * apply, all before the first statement; a refusal names the object by its path in the
 * document ("feeds[1].endpoints[0].url") and nothing is written. Then the writes, each with its
 * audit row, in one transaction: filters, sources and correlation settings before the feeds
 * that use them, and the prune's deletes last with feeds before the filters they use. After
 * the commit the cache and ndd.config follow in the same order. An object equal to its stored
 * version is not written: a second apply of the same document changes nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "buf.h"
#include "httpd.h"
#include "log.h"
#include "metrics.h"

/* The order writes go in: what others reference first. */
static const admin_kind_t apply_upsert_order[ADMIN_KIND_COUNT] = {
    ADMIN_KIND_FILTER, ADMIN_KIND_SOURCE, ADMIN_KIND_CORRELATION, ADMIN_KIND_FEED};
static const admin_kind_t apply_delete_order[ADMIN_KIND_COUNT] = {
    ADMIN_KIND_FEED, ADMIN_KIND_FILTER, ADMIN_KIND_SOURCE, ADMIN_KIND_CORRELATION};

typedef struct apply_item {
    admin_kind_t kind;
    int index;          /* in the document's array; -1 for a prune's delete */
    const char *action; /* create, update, delete, unchanged */
    json_t *want;       /* stripped object of the document (NULL for a delete) */
    json_t *have;       /* cached object (NULL for a create) */
    json_t *out;        /* after the commit: the stored object (NULL after a delete) */
} apply_item_t;

typedef struct apply_plan {
    apply_item_t *items;
    size_t n, cap;
    json_t *lists[ADMIN_KIND_COUNT]; /* the document's arrays (NULL: kind absent) */
    json_t *names[ADMIN_KIND_COUNT]; /* name -> index in lists[k]: lookups in O(1) */
} apply_plan_t;

static void apply_plan_free(apply_plan_t *p)
{
    for (size_t i = 0; i < p->n; i++) {
        json_decref(p->items[i].want);
        json_decref(p->items[i].have);
        json_decref(p->items[i].out);
    }
    free(p->items);
    for (int k = 0; k < ADMIN_KIND_COUNT; k++)
        json_decref(p->names[k]);
}

static int apply_plan_add(apply_plan_t *p, apply_item_t it)
{
    apply_item_t *items = buf_array_room(p->items, p->n, &p->cap, sizeof(*items), 16, 0);
    if (!items)
        return -1;
    p->items = items;
    p->items[p->n++] = it;
    return 0;
}

/* err's field as the path in the document: "feeds[1]" + "." + the object's own path. */
static void apply_err_at(admin_err_t *err, admin_kind_t kind, int index)
{
    char inner[sizeof(err->field)], path[sizeof(err->field) + 48];
    snprintf(inner, sizeof(inner), "%s", err->field);
    int n = snprintf(path, sizeof(path), "%s[%d]%s%s", admin_kind_collection(kind), index,
                     inner[0] && inner[0] != '[' ? "." : "", inner);
    if (n >= (int)sizeof(err->field))
        n = (int)sizeof(err->field) - 1; /* a path that long is cut, still naming the object */
    memcpy(err->field, path, (size_t)n);
    err->field[n] = '\0';
}

/* The document's shape: only the four collections, each an array of objects. */
static int apply_check_shape(json_t *doc, apply_plan_t *p, admin_err_t *err)
{
    const char *key;
    json_t *v;
    json_object_foreach(doc, key, v)
    {
        admin_kind_t k;
        if (admin_kind_from_collection(key, strlen(key), &k) != 0) {
            admin_err_set(err, 400, "unknown field", key,
                          "an apply document holds feeds, filters, sources and correlation");
            return -1;
        }
        if (!json_is_array(v)) {
            admin_err_set(err, 400, "wrong type", key, "expected an array of %s objects",
                          admin_kind_name(k));
            return -1;
        }
        p->lists[k] = v;
    }
    return 0;
}

/* Validates every object and refuses a name given twice within one kind. */
static int apply_validate(apply_plan_t *p, admin_err_t *err)
{
    for (int k = 0; k < ADMIN_KIND_COUNT; k++) {
        size_t i;
        json_t *o;
        p->names[k] = json_object();
        json_array_foreach(p->lists[k], i, o)
        {
            if (admin_validate((admin_kind_t)k, o, err) != 0) {
                apply_err_at(err, (admin_kind_t)k, (int)i);
                return -1;
            }
            const char *name = json_string_value(json_object_get(o, "name"));
            json_t *seen = json_object_get(p->names[k], name);
            if (seen) {
                admin_err_set(err, 422, "duplicate", "name",
                              "\"%s\" is also %s[%lld]: a name appears once per kind", name,
                              admin_kind_collection((admin_kind_t)k),
                              (long long)json_integer_value(seen));
                apply_err_at(err, (admin_kind_t)k, (int)i);
                return -1;
            }
            if (json_object_set_new(p->names[k], name, json_integer((json_int_t)i)) != 0) {
                admin_err_set(err, 500, "internal", "", "out of memory");
                return -1;
            }
        }
    }
    return 0;
}

/* The document's object of kind k named name, or NULL. */
static json_t *apply_doc_find(const apply_plan_t *p, admin_kind_t k, const char *name)
{
    json_t *i = json_object_get(p->names[k], name);
    return i ? json_array_get(p->lists[k], (size_t)json_integer_value(i)) : NULL;
}

/* Whether the database holds a filter of this name once the apply is done. */
static bool apply_filter_after(admin_ctx_t *ctx, const apply_plan_t *p, bool prune,
                               const char *name)
{
    if (apply_doc_find(p, ADMIN_KIND_FILTER, name))
        return true;
    if (prune && p->lists[ADMIN_KIND_FILTER])
        return false;
    return admin_cache_find_name(&ctx->cache[ADMIN_KIND_FILTER], name) != NULL;
}

/* Every feed that stays after the apply names a filter that stays: the document's feeds (422
 * on their "filter"), and stored feeds the document leaves alone (409: the prune would delete
 * a filter still in use). */
static int apply_check_refs(admin_ctx_t *ctx, const apply_plan_t *p, bool prune, admin_err_t *err)
{
    size_t i;
    json_t *o;
    json_array_foreach(p->lists[ADMIN_KIND_FEED], i, o)
    {
        const char *ref = admin_feed_filter_ref(o);
        if (ref && !apply_filter_after(ctx, p, prune, ref)) {
            admin_err_set(err, 422, "missing reference", "filter",
                          "no filter named \"%s\" exists or is in the document", ref);
            apply_err_at(err, ADMIN_KIND_FEED, (int)i);
            return -1;
        }
    }
    if (prune && p->lists[ADMIN_KIND_FEED])
        return 0; /* every stored feed is either in the document or deleted */
    const admin_cache_t *c = &ctx->cache[ADMIN_KIND_FEED];
    for (size_t j = 0; j < c->count; j++) {
        const admin_obj_t *f = c->sorted[j];
        const char *ref = admin_feed_filter_ref(f->json);
        if (ref && !apply_doc_find(p, ADMIN_KIND_FEED, f->name) &&
            !apply_filter_after(ctx, p, prune, ref)) {
            admin_err_set(err, 409, "in use", "filters",
                          "filter \"%s\" is used by feed \"%s\", which the document does not "
                          "name: the prune cannot delete it",
                          ref, f->name);
            return -1;
        }
    }
    return 0;
}

/* The document's objects of the kinds in upsert order, each create, update or unchanged. */
static int apply_plan_upserts(admin_ctx_t *ctx, apply_plan_t *p)
{
    for (int o = 0; o < ADMIN_KIND_COUNT; o++) {
        admin_kind_t k = apply_upsert_order[o];
        size_t i;
        json_t *obj;
        json_array_foreach(p->lists[k], i, obj)
        {
            const char *name = json_string_value(json_object_get(obj, "name"));
            const admin_obj_t *c = admin_cache_find_name(&ctx->cache[k], name);
            apply_item_t it = {.kind = k, .index = (int)i, .want = admin_strip_server_fields(obj)};
            it.have = c ? json_incref(c->json) : NULL;
            json_t *have = c ? admin_strip_server_fields(c->json) : NULL;
            it.action = !c ? "create" : json_equal(have, it.want) ? "unchanged" : "update";
            json_decref(have);
            if (!it.want || apply_plan_add(p, it) != 0) {
                json_decref(it.want);
                json_decref(it.have);
                return -1;
            }
        }
    }
    return 0;
}

/* With prune: the stored objects of the document's kinds that it does not name. */
static int apply_plan_deletes(admin_ctx_t *ctx, apply_plan_t *p)
{
    for (int o = 0; o < ADMIN_KIND_COUNT; o++) {
        admin_kind_t k = apply_delete_order[o];
        const admin_cache_t *c = &ctx->cache[k];
        if (!p->lists[k])
            continue;
        for (size_t j = 0; j < c->count; j++) {
            if (apply_doc_find(p, k, c->sorted[j]->name))
                continue;
            apply_item_t it = {.kind = k, .index = -1, .action = "delete"};
            it.have = json_incref(c->sorted[j]->json);
            if (apply_plan_add(p, it) != 0) {
                json_decref(it.have);
                return -1;
            }
        }
    }
    return 0;
}

/* 507 when a kind would hold more than its ceiling after the apply. */
static int apply_check_room(admin_ctx_t *ctx, const apply_plan_t *p, admin_err_t *err)
{
    for (int k = 0; k < ADMIN_KIND_COUNT; k++) {
        size_t n = ctx->cache[k].count;
        for (size_t i = 0; i < p->n; i++) {
            if (p->items[i].kind != (admin_kind_t)k)
                continue;
            if (strcmp(p->items[i].action, "create") == 0)
                n++;
            else if (strcmp(p->items[i].action, "delete") == 0)
                n--;
        }
        if (n > ctx->cache[k].max) {
            admin_err_set(err, 507, "collection full", admin_kind_collection((admin_kind_t)k),
                          "at most %zu %s objects; the apply would leave %zu", ctx->cache[k].max,
                          admin_kind_name((admin_kind_t)k), n);
            return -1;
        }
    }
    return 0;
}

static const char *apply_item_name(const apply_item_t *it)
{
    return json_string_value(json_object_get(it->want ? it->want : it->have, "name"));
}

static const char *apply_item_id(const apply_item_t *it)
{
    return json_string_value(json_object_get(it->have, "id"));
}

/* Every write of the plan in one transaction; on a refusal the error names the object. */
static int apply_commit(admin_ctx_t *ctx, apply_plan_t *p, const char *who, admin_err_t *err)
{
    if (admin_db_begin(ctx->db, err) != 0)
        return -1;
    for (size_t i = 0; i < p->n; i++) {
        apply_item_t *it = &p->items[i];
        if (strcmp(it->action, "unchanged") == 0)
            continue;
        bool create = strcmp(it->action, "create") == 0;
        const char *action = create ? "create" : it->want ? "replace" : "delete";
        /* The version the plan was made against: a change made meanwhile is a 412. */
        int64_t ver = it->have ? json_integer_value(json_object_get(it->have, "version")) : -1;
        json_t *before = NULL;
        int rc = admin_db_write_in(ctx->db, it->kind, action, create ? NULL : apply_item_id(it),
                                   it->want, ver, who, &it->out, &before, err);
        json_decref(before);
        if (rc != 0) {
            admin_db_rollback(ctx->db);
            if (it->index >= 0)
                apply_err_at(err, it->kind, it->index);
            else
                snprintf(err->field, sizeof(err->field), "%s", admin_kind_collection(it->kind));
            for (size_t j = 0; j <= i; j++) {
                json_decref(p->items[j].out);
                p->items[j].out = NULL;
            }
            return -1;
        }
    }
    return admin_db_commit(ctx->db, err);
}

/* After the commit, in the plan's order: Kafka feed ACLs, the cache and ndd.config. */
static void apply_after_commit(admin_ctx_t *ctx, apply_plan_t *p, const char *who)
{
    for (size_t i = 0; i < p->n; i++) {
        apply_item_t *it = &p->items[i];
        if (strcmp(it->action, "unchanged") == 0)
            continue;
        char id[160];
        snprintf(id, sizeof(id), "%s",
                 it->out ? json_string_value(json_object_get(it->out, "id")) : apply_item_id(it));
        if (it->kind == ADMIN_KIND_FEED && ctx->kacl) {
            /* Committed already: a refusal here is logged, and the admin's reconcile of feed
             * topics and ACLs (at start, and retried while pending) repairs it. */
            admin_err_t kerr;
            if ((it->out && admin_kacl_grant(ctx->kacl, it->out, &kerr) != 0) ||
                (it->have && admin_kacl_revoke(ctx->kacl, ctx, it->have, it->out, &kerr) != 0))
                log_error("admin apply: feed %s: Kafka topic or ACLs: %s", id, kerr.reason);
        }
        log_info("admin: apply: %s %s %s (%s) by %s", it->action, admin_kind_name(it->kind), id,
                 apply_item_name(it), who);
        json_t *out = it->out ? json_incref(it->out) : NULL;
        admin_after_write(ctx, it->kind, id, out);
        json_decref(out);
    }
}

static json_t *apply_report(const apply_plan_t *p, bool dry_run)
{
    json_t *changes = json_array();
    for (size_t i = 0; i < p->n; i++) {
        const apply_item_t *it = &p->items[i];
        json_t *c = json_pack("{s:s,s:s,s:s}", "kind", admin_kind_name(it->kind), "name",
                              apply_item_name(it), "action", it->action);
        json_object_set_new(c, "diff",
                            strcmp(it->action, "unchanged") == 0
                                ? json_array()
                                : admin_json_diff(it->have, it->want));
        if (it->have || it->out)
            json_object_set(c, "id", json_object_get(it->out ? it->out : it->have, "id"));
        if (it->out)
            json_object_set(c, "version", json_object_get(it->out, "version"));
        json_array_append_new(changes, c);
    }
    return json_pack("{s:b,s:o}", "dry_run", dry_run, "changes", changes);
}

/* ?name=true|false (absent: false); -1 once answered 400. */
static int apply_flag(const admin_req_t *req, const char *name, bool *out, admin_resp_t *resp)
{
    char v[16];
    *out = false;
    if (!httpd_query_get(req->query, name, v, sizeof(v)))
        return 0;
    if (strcmp(v, "true") == 0 || strcmp(v, "false") == 0) {
        *out = v[0] == 't';
        return 0;
    }
    admin_resp_errorf(resp, 400, "invalid parameter", name, "expected true or false");
    return -1;
}

/* Validation and the plan, nothing written: 0, or -1 with err. */
static int apply_prepare(admin_ctx_t *ctx, json_t *doc, bool prune, apply_plan_t *p,
                         admin_err_t *err)
{
    if (apply_check_shape(doc, p, err) || apply_validate(p, err) ||
        apply_check_refs(ctx, p, prune, err))
        return -1;
    if (apply_plan_upserts(ctx, p) || (prune && apply_plan_deletes(ctx, p))) {
        admin_err_set(err, 500, "internal", "", "out of memory");
        return -1;
    }
    return apply_check_room(ctx, p, err);
}

void admin_h_apply(admin_ctx_t *ctx, const admin_req_t *req, const char *id, admin_resp_t *resp)
{
    bool dry_run, prune;
    if (apply_flag(req, "dry_run", &dry_run, resp) || apply_flag(req, "prune", &prune, resp))
        return;
    admin_err_t err;
    json_t *doc = admin_parse_body(req->body, req->body_len, ctx->max_body, &err);
    if (!doc) {
        admin_resp_error(resp, &err);
        return;
    }
    apply_plan_t plan = {0};
    const char *who = req->principal.name[0] ? req->principal.name : "anonymous";
    bool writes = false;
    int rc = apply_prepare(ctx, doc, prune, &plan, &err);
    for (size_t i = 0; rc == 0 && i < plan.n; i++)
        writes |= strcmp(plan.items[i].action, "unchanged") != 0;
    if (rc == 0 && writes && !dry_run) {
        if (!ctx->db) {
            admin_err_set(&err, 503, "database unavailable", "", "no database configured");
            rc = -1;
        } else if ((rc = apply_commit(ctx, &plan, who, &err)) == 0) {
            apply_after_commit(ctx, &plan, who);
        } else if (err.status == 503) {
            metrics_counter_inc(ctx->db_unavailable);
        }
    }
    if (rc == 0)
        admin_resp_json(resp, 200, apply_report(&plan, dry_run));
    else
        admin_resp_error(resp, &err);
    apply_plan_free(&plan);
    json_decref(doc);
}
