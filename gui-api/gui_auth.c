/* Login, logout and "who am I" of the console (POST /console/login, POST /console/logout,
 * GET /console/session). The login body is JSON {"token": "..."}: a token in a URL would
 * end up in logs and history. The admin decides whether the token is valid and what its
 * role is (GET /api/v1/whoami); the console only hides what the role may not do, the admin
 * still refuses it (a viewer's forced write gets the admin's 403). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "gui.h"
#include "log.h"

static void gui_set_cookie(httpd_req_t *req, gui_ctx_t *c, const char *value, int64_t max_age_s)
{
    char ck[256];
    snprintf(ck, sizeof(ck), "ndd_session=%s; Path=/; Max-Age=%lld; HttpOnly; SameSite=Strict%s",
             value, (long long)max_age_s, c->tls ? "; Secure" : "");
    httpd_resp_header(req, "Set-Cookie", ck);
}

static void gui_reply_session(httpd_req_t *req, int status, const gui_session_info_t *i)
{
    httpd_resp_header(req, "Cache-Control", "no-store");
    httpd_reply_jansson(req, status,
                        json_pack("{s:s,s:s,s:s,s:I}", "name", i->name, "role", i->role, "csrf",
                                  i->csrf, "expires_in_s",
                                  (json_int_t)((i->expires_ms - mono_now_ms()) / 1000)));
}

void gui_session_login(httpd_req_t *req, void *arg)
{
    gui_ctx_t *c = arg;
    gui_security_headers(req);
    const char *ct = httpd_req_header(req, "Content-Type");
    if (!ct || strncasecmp(ct, "application/json", 16) != 0) {
        httpd_reply_json(req, 415,
                         "{\"error\":\"unsupported media type\",\"field\":\"\",\"reason\":"
                         "\"the login body is JSON {\\\"token\\\": ...}\"}");
        return;
    }
    size_t len;
    const char *body = httpd_req_body(req, &len);
    json_t *j = json_loadb(body, len, 0, NULL);
    const char *token = json_string_value(json_object_get(j, "token"));
    if (!token || !*token || strlen(token) >= sizeof(((gui_session_info_t *)0)->token) ||
        strpbrk(token, "\r\n")) {
        json_decref(j);
        httpd_reply_json(req, 400,
                         "{\"error\":\"missing field\",\"field\":\"token\",\"reason\":\"paste "
                         "an API token (ndd-admin token create)\"}");
        return;
    }
    char hdr[256], err[512];
    snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s\r\n", token);
    gui_http_resp_t r;
    buf_init(&r.body, 1024, 64 * 1024);
    int rc = gui_http_request(&c->admin, "GET", "/api/v1/whoami", hdr, NULL, 0,
                              (int)c->s->upstream_timeout_ms, &r, err, sizeof(err));
    json_t *who =
        rc == 0 && r.status == 200 ? json_loadb((char *)r.body.data, r.body.len, 0, NULL) : NULL;
    const char *name = json_string_value(json_object_get(who, "name"));
    const char *role = json_string_value(json_object_get(who, "role"));
    gui_session_info_t info;
    char id[65];
    if (rc != 0) {
        log_warn("gui: login: ndd-admin: %s", err);
        httpd_reply_error(req, 502, "ndd-admin is not reachable: %s", err);
    } else if (!name || !role) {
        httpd_reply_json(req, r.status == 503 ? 503 : 401,
                         "{\"error\":\"invalid token\",\"field\":\"token\",\"reason\":\"ndd-admin "
                         "does not know this token (or it was revoked)\"}");
    } else if (gui_sessions_create(c->sessions, token, name, role, mono_now_ms(), id, &info) != 0) {
        httpd_reply_error(req, 503, "no random bytes for a session");
    } else {
        log_info("gui: %s (role %s) logged in from %s", name, role, httpd_req_peer(req));
        gui_set_cookie(req, c, id, c->s->session_ttl_ms / 1000);
        gui_reply_session(req, 200, &info);
        OPENSSL_cleanse(&info, sizeof(info));
    }
    OPENSSL_cleanse((char *)body, len);
    json_decref(who);
    json_decref(j);
    buf_free(&r.body);
}

bool gui_session_require(httpd_req_t *req, gui_ctx_t *c, gui_session_info_t *info)
{
    if (gui_sessions_lookup(c->sessions, httpd_req_header(req, "Cookie"), mono_now_ms(), info))
        return true;
    httpd_reply_json(req, 401,
                     "{\"error\":\"not logged in\",\"field\":\"\",\"reason\":\"the session is "
                     "missing or expired: log in again\"}");
    return false;
}

/* Writes need the session's CSRF token in X-CSRF-Token. */
bool gui_session_csrf_ok(httpd_req_t *req, const gui_session_info_t *info)
{
    const char *t = httpd_req_header(req, "X-CSRF-Token");
    return t && strlen(t) == 64 && CRYPTO_memcmp(t, info->csrf, 64) == 0;
}

void gui_session_get(httpd_req_t *req, void *arg)
{
    gui_ctx_t *c = arg;
    gui_session_info_t info;
    gui_security_headers(req);
    /* Not logged in is an answer here, not an error: 204, so a fresh page logs nothing. */
    if (gui_sessions_lookup(c->sessions, httpd_req_header(req, "Cookie"), mono_now_ms(), &info))
        gui_reply_session(req, 200, &info);
    else
        httpd_reply(req, 204, NULL, "", 0);
    OPENSSL_cleanse(&info, sizeof(info));
}

void gui_session_logout(httpd_req_t *req, void *arg)
{
    gui_ctx_t *c = arg;
    gui_session_info_t info;
    gui_security_headers(req);
    if (!gui_session_require(req, c, &info))
        return;
    if (!gui_session_csrf_ok(req, &info)) {
        httpd_reply_json(req, 403,
                         "{\"error\":\"csrf\",\"field\":\"\",\"reason\":\"missing or "
                         "wrong X-CSRF-Token\"}");
    } else {
        gui_sessions_remove(c->sessions, httpd_req_header(req, "Cookie"));
        gui_set_cookie(req, c, "", 0);
        httpd_reply(req, 204, NULL, "", 0);
    }
    OPENSSL_cleanse(&info, sizeof(info));
}
