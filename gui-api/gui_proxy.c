/* /api/v1/... to ndd-admin: the console's REST calls, with the session's token added as
 * Authorization so the browser never holds it. Writes (anything but GET/HEAD) need the
 * session's CSRF token in X-CSRF-Token. Only what the admin's API uses crosses: method,
 * path and query, If-Match, a JSON body; back: status, ETag, Location, the body (the admin's
 * error bodies name the field at fault, which the console shows next to it). */
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "gui.h"
#include "log.h"

static void gui_proxy_count(gui_ctx_t *c, int status)
{
    static const char *const cls[] = {"1xx", "1xx", "2xx", "3xx", "4xx", "5xx"};
    if (c->m_requests)
        metrics_counter_inc(
            metrics_counter_labels(c->m_requests, cls[status / 100 < 6 ? status / 100 : 5]));
}

void gui_proxy_handle(httpd_req_t *req, void *arg)
{
    gui_ctx_t *c = arg;
    gui_session_info_t who;
    gui_security_headers(req);
    httpd_resp_header(req, "Cache-Control", "no-store");
    if (!gui_session_require(req, c, &who)) {
        gui_proxy_count(c, 401);
        return;
    }
    const char *method = httpd_req_method(req);
    bool write = strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0;
    if (write && !gui_session_csrf_ok(req, &who)) {
        httpd_reply_json(req, 403,
                         "{\"error\":\"csrf\",\"field\":\"\",\"reason\":\"missing or "
                         "wrong X-CSRF-Token: reload the console\"}");
        gui_proxy_count(c, 403);
        OPENSSL_cleanse(&who, sizeof(who));
        return;
    }
    const char *uri = httpd_req_uri(req);
    char hdr[768];
    const char *im = httpd_req_header(req, "If-Match");
    int hl = snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s\r\n%s%s%s%s", who.token,
                      im ? "If-Match: " : "", im && !strpbrk(im, "\r\n") ? im : "",
                      im ? "\r\n" : "", write ? "Content-Type: application/json\r\n" : "");
    OPENSSL_cleanse(&who, sizeof(who));
    size_t blen;
    const char *body = httpd_req_body(req, &blen);
    gui_http_resp_t r;
    char err[512];
    buf_init(&r.body, 16 * 1024, 16 * 1024 * 1024);
    int rc = hl > 0 && (size_t)hl < sizeof(hdr) && strlen(uri) < 1500
                 ? gui_http_request(&c->admin, method, uri, hdr, body, blen,
                                    (int)c->s->upstream_timeout_ms, &r, err, sizeof(err))
                 : (snprintf(err, sizeof(err), "request too large to forward"), -1);
    OPENSSL_cleanse(hdr, sizeof(hdr));
    if (rc != 0) {
        log_warn("gui: %s %s: ndd-admin: %s", method, httpd_req_path(req), err);
        httpd_reply_error(req, 502, "ndd-admin: %s", err);
        gui_proxy_count(c, 502);
    } else {
        if (r.etag[0])
            httpd_resp_header(req, "ETag", r.etag);
        if (r.location[0])
            httpd_resp_header(req, "Location", r.location);
        httpd_reply(req, r.status, r.status == 204 ? NULL : "application/json", r.body.data,
                    r.status == 204 ? 0 : r.body.len);
        gui_proxy_count(c, r.status);
    }
    buf_free(&r.body);
}
