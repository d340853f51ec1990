/* HTTP/2 for the HTTP server (httpd.h): connections that httpd_conn.c recognised (the h2c
 * preface, or ALPN "h2" after the TLS handshake) are handed to an h2server (h2server.c, the
 * nghttp2 session handling ndd-ingress uses too) that has no listener of its own. Each
 * complete request becomes an httpd_req_t and goes through the same routing and handlers
 * as HTTP/1.1; the reply goes back as the stream's response. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/util.h>

#include "httpd_int.h"
#include "log.h"

static bool method_known(const char *m)
{
    static const char *const ok[] = {"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (strcmp(m, ok[i]) == 0)
            return true;
    return false;
}

_Static_assert(H2SERVER_CONN_MEMO_BYTES >= HTTPD_CONN_MEMO_BYTES,
               "an HTTP/2 connection's memo holds what httpd_req_conn_memo promises");

static void h2_on_request(void *arg, h2server_stream_t *st, const h2server_request_t *r)
{
    httpd_t *h = arg;
    httpd_req_t req;
    httpd_req_init(&req, h);
    req.st = st;
    req.method = r->method;
    req.head = strcmp(r->method, "HEAD") == 0;
    req.fields = r->fields;
    req.nfields = r->n_fields;
    req.body = (const char *)r->body;
    req.body_len = r->body_len;
    req.peer = r->peer;
    /* httpd.h promises a NUL-terminated body; the stream's body has no spare byte, so a
     * request with a body (a write, never a read) gets a copy. */
    char *bodycopy = NULL;
    if (r->body_len) {
        bodycopy = malloc(r->body_len + 1);
        if (!bodycopy) {
            req.path = "-";
            httpd_reply_error(&req, 503, "out of memory");
            return;
        }
        memcpy(bodycopy, r->body, r->body_len);
        bodycopy[r->body_len] = '\0';
        req.body = bodycopy;
    }
    if (!method_known(r->method)) {
        req.path = "-";
        httpd_reply_error(&req, 501, "method %s not implemented", r->method);
    } else if (r->path[0] != '/') {
        req.path = "-";
        httpd_reply_error(&req, 400, "request target must be a path starting with '/'");
    } else if (r->too_many_fields) {
        req.path = "-";
        httpd_reply_error(&req, 431, "more than %d header fields", HTTPD_MAX_FIELDS);
    } else if (httpd_req_begin(&req, r->path) != 0) {
        req.path = "-";
        httpd_reply_error(&req, 503, "out of memory");
    } else {
        httpd_dispatch(&req);
        httpd_req_later_detach(&req, NULL, st); /* the stream waits for its answer */
    }
    httpd_req_end(&req);
    free(bodycopy);
}

void httpd_h2_reply(httpd_req_t *req, int status, const char *content_type, const void *body,
                    size_t len)
{
    /* HTTP/2 field names are lower case; Connection is not an HTTP/2 field. */
    h2server_header_t hd[32];
    size_t n = 0;
    char names[HTTPD_RESP_HDRS], values[HTTPD_RESP_HDRS];
    size_t no = 0, vo = 0;
    char cl[24];
    bool no_body = status == 204 || status == 304;
    if (content_type)
        hd[n++] = (h2server_header_t){"content-type", content_type};
    if (!no_body) {
        /* by hand: snprintf was a tenth of this function's instructions */
        char *e = cl + sizeof cl - 1;
        *e = '\0';
        size_t v = len;
        do {
            *--e = (char)('0' + v % 10);
            v /= 10;
        } while (v);
        hd[n++] = (h2server_header_t){"content-length", e};
    }
    const char *p = req->resp_hdrs, *end = req->resp_hdrs + req->resp_hdrs_len;
    while (p < end && n < sizeof hd / sizeof hd[0]) {
        const char *colon = memchr(p, ':', (size_t)(end - p));
        const char *eol = memchr(p, '\r', (size_t)(end - p));
        if (!colon || !eol || colon > eol)
            break;
        size_t nl = (size_t)(colon - p), vl = (size_t)(eol - colon - 2);
        if (!(nl == 10 && strncasecmp(p, "connection", 10) == 0)) {
            char *nm = names + no, *vv = values + vo;
            for (size_t i = 0; i < nl; i++)
                nm[i] = (char)(p[i] >= 'A' && p[i] <= 'Z' ? p[i] + 32 : p[i]);
            nm[nl] = '\0';
            memcpy(vv, colon + 2, vl);
            vv[vl] = '\0';
            no += nl + 1;
            vo += vl + 1;
            hd[n++] = (h2server_header_t){nm, vv};
        }
        p = eol + 2;
    }
    if (h2server_respond(req->st, status, hd, n, no_body || req->head ? NULL : body,
                         no_body || req->head ? 0 : len) != 0)
        log_debug("httpd: HTTP/2 %s %s: the client is gone, or the reply could not be queued",
                  req->method, req->path);
}

int httpd_h2_init(httpd_t *h, char *err, size_t errlen)
{
    h2server_options_t o = {.max_body = h->max_body,
                            .max_connections = h->max_conn,
                            .idle_timeout_s = h->request_timeout_s,
                            .on_request = h2_on_request,
                            .arg = h};
    char e[256];
    h->h2 = h2server_new_detached(h->base, &o, e, sizeof e);
    if (!h->h2) {
        snprintf(err, errlen, "httpd: HTTP/2: %s", e);
        return -1;
    }
    return 0;
}

void httpd_h2_free(httpd_t *h)
{
    h2server_free(h->h2);
    h->h2 = NULL;
}

int httpd_h2_adopt(httpd_t *h, evutil_socket_t fd, SSL *ssl, const char *peer, const void *data,
                   size_t len)
{
    if (h2server_adopt(h->h2, fd, ssl, peer, data, len) != 0) {
        log_warn("httpd: port %u: %s: HTTP/2 connection refused (over %zu HTTP/2 connections, "
                 "or out of memory)",
                 h->port, peer, h->max_conn);
        return -1;
    }
    return 0;
}
