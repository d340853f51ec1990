/* Who am I, and API tokens over REST: what the web console (ndd-gui-api, docs/console.md)
 * needs to learn a token's role at login and to let admins create and revoke tokens
 * without a shell. A created token is in the 201 body only, exactly once (like `ndd-admin
 * token create`); the database keeps only its salted hash (admin_auth.c). */
#include <string.h>

#include "admin.h"

void admin_h_whoami(admin_ctx_t *ctx, const admin_req_t *req, const char *id, admin_resp_t *resp)
{
    admin_resp_json(resp, 200,
                    json_pack("{s:s,s:s,s:s}", "name", req->principal.name, "role",
                              admin_role_name(req->principal.role), "token_id",
                              req->principal.token_id));
}

void admin_h_tokens_list(admin_ctx_t *ctx, const admin_req_t *req, const char *id,
                         admin_resp_t *resp)
{
    char err[512];
    if (req->principal.role != ADMIN_ROLE_ADMIN) { /* a read, but it names every holder */
        admin_resp_errorf(resp, 403, "forbidden", "",
                          "token \"%s\" has role %s; listing tokens "
                          "needs role admin",
                          req->principal.name, admin_role_name(req->principal.role));
        return;
    }
    json_t *l = ctx->db ? admin_db_token_list(ctx->db, err, sizeof(err)) : NULL;
    if (!l) {
        admin_resp_errorf(resp, 503, "database unavailable", "", "%s",
                          ctx->db ? err : "no database configured");
        return;
    }
    admin_resp_json(resp, 200, json_pack("{s:o}", "items", l));
}

void admin_h_tokens_create(admin_ctx_t *ctx, const admin_req_t *req, const char *id,
                           admin_resp_t *resp)
{
    json_error_t je;
    json_t *b = json_loadb(req->body ? req->body : "", req->body_len, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(b)) {
        admin_resp_errorf(resp, 400, "malformed JSON", "", "line %d column %d: %s", je.line,
                          je.column, b ? "the body must be an object" : je.text);
        json_decref(b);
        return;
    }
    const char *name = json_string_value(json_object_get(b, "name"));
    const char *role = json_string_value(json_object_get(b, "role"));
    const char *k;
    json_t *v;
    json_object_foreach(b, k, v)
    {
        if (strcmp(k, "name") && strcmp(k, "role")) {
            admin_resp_errorf(resp, 400, "unknown field", k, "a token has a name and a role");
            json_decref(b);
            return;
        }
    }
    admin_role_t r = role ? admin_role_parse(role) : ADMIN_ROLE_NONE;
    size_t nl = name ? strlen(name) : 0;
    if (!name || nl == 0 || nl > 63 ||
        strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
                     "QRSTUVWXYZ0123456789._-") != nl)
        admin_resp_errorf(resp, 422, "invalid value", "name", "1-63 of [A-Za-z0-9._-]");
    else if (r == ADMIN_ROLE_NONE)
        admin_resp_errorf(resp, 422, "invalid value", "role", "expected \"admin\" or \"viewer\"");
    else if (!ctx->db)
        admin_resp_errorf(resp, 503, "database unavailable", "", "no database configured");
    else {
        char tid[32], token[160], salt[65], hash[65], err[512];
        if (admin_token_generate(tid, token, salt, hash) != 0)
            admin_resp_errorf(resp, 500, "internal", "", "no random bytes for a token");
        else if (admin_db_token_insert(ctx->db, tid, name, r, salt, hash, req->principal.name, err,
                                       sizeof(err)) != 0)
            admin_resp_errorf(resp, strstr(err, "exists") ? 409 : 503,
                              strstr(err, "exists") ? "duplicate name" : "database unavailable",
                              strstr(err, "exists") ? "name" : "", "%s", err);
        else
            admin_resp_json(resp, 201,
                            json_pack("{s:s,s:s,s:s,s:s}", "id", tid, "name", name, "role",
                                      admin_role_name(r), "token", token));
    }
    json_decref(b);
}

void admin_h_tokens_revoke(admin_ctx_t *ctx, const admin_req_t *req, const char *id,
                           admin_resp_t *resp)
{
    char err[512];
    if (!ctx->db) {
        admin_resp_errorf(resp, 503, "database unavailable", "", "no database configured");
        return;
    }
    if (admin_db_token_revoke(ctx->db, id, req->principal.name, err, sizeof(err)) != 0) {
        bool missing = strncmp(err, "no active token", 15) == 0;
        admin_resp_errorf(resp, missing ? 404 : 503, missing ? "not found" : "database unavailable",
                          "", "%s", err);
        return;
    }
    admin_resp_text(resp, 204, "", 0);
}
