/* The route table and dispatch: match, authenticate, authorise, run. Patterns are the same
 * strings as the paths of docs/openapi.yaml; test_admin_openapi keeps the two in step. */
#include <stdio.h>
#include <string.h>

#include "admin.h"
#include "metrics.h"

#define COLLECTION_ROUTES(coll)                                                                    \
    {ADMIN_GET, "/api/v1/" coll, admin_h_list, false, false},                                      \
        {ADMIN_POST, "/api/v1/" coll, admin_h_create, true, false},                                \
        {ADMIN_GET, "/api/v1/" coll "/{id}", admin_h_get, false, false},                           \
        {ADMIN_PUT, "/api/v1/" coll "/{id}", admin_h_replace, true, false},                        \
        {ADMIN_PATCH, "/api/v1/" coll "/{id}", admin_h_patch, true, false},                        \
    {                                                                                              \
        ADMIN_DELETE, "/api/v1/" coll "/{id}", admin_h_delete, true, false                         \
    }

static const admin_route_t admin_route_table[] = {
    COLLECTION_ROUTES("feeds"),
    COLLECTION_ROUTES("filters"),
    COLLECTION_ROUTES("sources"),
    COLLECTION_ROUTES("correlation"),
    {ADMIN_GET, "/api/v1/status", admin_h_status, false, false},
    {ADMIN_GET, "/api/v1/alarms", admin_h_alarms_list, false, false},
    {ADMIN_GET, "/api/v1/alarms/{id}", admin_h_alarms_get, false, false},
    {ADMIN_POST, "/api/v1/alarms/{id}/ack", admin_h_alarms_ack, true, false},
    {ADMIN_GET, "/api/v1/audit", admin_h_audit_list, false, false},
    {ADMIN_GET, "/api/v1/audit/{id}", admin_h_audit_get, false, false},
    {ADMIN_GET, "/api/v1/whoami", admin_h_whoami, false, false},
    {ADMIN_GET, "/api/v1/schema/feeds", admin_h_schema_feeds, false, false},
    {ADMIN_GET, "/api/v1/tokens", admin_h_tokens_list, false, false},
    {ADMIN_POST, "/api/v1/tokens", admin_h_tokens_create, true, false},
    {ADMIN_DELETE, "/api/v1/tokens/{id}", admin_h_tokens_revoke, true, false},
    {ADMIN_POST, "/api/v1/apply", admin_h_apply, true, false},
    {ADMIN_GET, "/api/v1/deadletters", admin_h_deadletters, false, false},
    {ADMIN_GET, "/healthz", NULL, false, true},
    {ADMIN_GET, "/readyz", NULL, false, true},
    {ADMIN_GET, "/metrics", NULL, false, true},
};

const admin_route_t *admin_routes(size_t *count)
{
    *count = sizeof(admin_route_table) / sizeof(*admin_route_table);
    return admin_route_table;
}

static const char *const admin_method_names[] = {"GET", "POST", "PUT", "PATCH", "DELETE", "?"};

admin_method_t admin_method_parse(const char *s)
{
    for (int m = 0; m < ADMIN_METHOD_OTHER; m++)
        if (strcmp(s, admin_method_names[m]) == 0)
            return (admin_method_t)m;
    return ADMIN_METHOD_OTHER;
}

const char *admin_method_name(admin_method_t m)
{
    return m <= ADMIN_METHOD_OTHER ? admin_method_names[m] : "?";
}

/* Matches path against pattern; {id} takes one non-empty segment, copied into id. */
static bool admin_route_match(const char *pattern, const char *path, char *id, size_t idlen)
{
    const char *p = pattern, *s = path;
    id[0] = '\0';
    while (*p) {
        /* The first byte first: a strncmp at every byte of every pattern tried was a fifth
         * of a read's instructions in the admin (HTTP/1.1). */
        if (*p == '{' && strncmp(p, "{id}", 4) == 0) {
            size_t n = strcspn(s, "/");
            if (n == 0 || n >= idlen)
                return false;
            memcpy(id, s, n);
            id[n] = '\0';
            s += n;
            p += 4;
            continue;
        }
        if (*p != *s)
            return false;
        p++;
        s++;
    }
    /* One trailing slash is tolerated: /api/v1/feeds/ is /api/v1/feeds. */
    return *s == '\0' || (s[0] == '/' && s[1] == '\0');
}

void admin_handle(admin_ctx_t *ctx, const admin_req_t *req_in, const char *authorization,
                  admin_resp_t *resp)
{
    size_t n;
    const admin_route_t *routes = admin_routes(&n);
    char id[160];
    const admin_route_t *route = NULL;
    bool path_known = false;
    for (size_t i = 0; i < n; i++) {
        if (routes[i].method != req_in->method && path_known)
            continue;
        if (!admin_route_match(routes[i].pattern, req_in->path, id, sizeof(id)))
            continue;
        path_known = true;
        if (routes[i].method == req_in->method) {
            route = &routes[i];
            break;
        }
    }
    if (!route || !route->handler) {
        if (path_known && !route) {
            /* The Allow list is built only for a 405: a served request never formats it. */
            char allow[64] = "";
            for (size_t i = 0; i < n; i++) {
                if (!admin_route_match(routes[i].pattern, req_in->path, id, sizeof(id)))
                    continue;
                size_t l = strlen(allow);
                snprintf(allow + l, sizeof(allow) - l, "%s%s", l ? ", " : "",
                         admin_method_name(routes[i].method));
            }
            admin_resp_errorf(resp, 405, "method not allowed", "", "allowed: %s", allow);
        } else {
            admin_resp_errorf(resp, 404, "not found", "", "no such resource: %s", req_in->path);
        }
        return;
    }
    admin_req_t req = *req_in;
    if (!route->anonymous) {
        admin_tokens_authenticate_memo(ctx->tokens, authorization, req.token_memo, &req.principal);
        if (req.principal.role == ADMIN_ROLE_NONE && req.principal.unverifiable) {
            metrics_counter_inc(ctx->db_unavailable);
            admin_resp_errorf(resp, 503, "database unavailable", "",
                              "the API token cannot be checked: PostgreSQL is unreachable");
            return;
        }
        if (req.principal.role == ADMIN_ROLE_NONE) {
            admin_resp_errorf(resp, 401, "unauthorized", "",
                              "a valid API token is required (Authorization: Bearer <token>)");
            return;
        }
        if (route->write && req.principal.role != ADMIN_ROLE_ADMIN) {
            admin_resp_errorf(resp, 403, "forbidden", "",
                              "token \"%s\" has role %s; this request needs role admin",
                              req.principal.name, admin_role_name(req.principal.role));
            return;
        }
    }
    route->handler(ctx, &req, id, resp);
}
