/* The HTTP server (see httpd.h): routing, replies, the built-in routes and the server's life
 * cycle. HTTP/1.1 connections (reading, parsing, writing, the guard) are httpd_conn.c's; a
 * connection that opens with the HTTP/2 preface, or negotiates "h2" by ALPN, is handed to
 * httpd_h2.c. Both build an httpd_req_t and call httpd_dispatch. */
#include "httpd.h"

#include <errno.h>
#include <malloc.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <event2/util.h>

#include "httpd_int.h"
#include "log.h"

#define HTTPD_DEFAULT_MAX_CONN 256
#define HTTPD_DEFAULT_TIMEOUT_S 30
#define HTTPD_DEFAULT_HEADER_TIMEOUT_S 10
#define HTTPD_DEFAULT_PROBE_RESERVE 8
#define HTTPD_DEFAULT_MAX_HEADER (16 * 1024)
#define HTTPD_DEFAULT_MAX_BODY (1024 * 1024)
#define HTTPD_METRICS_MAX (64u * 1024 * 1024) /* a scrape larger than this is refused (500) */

/* ---- replies ---- */

void httpd_resp_header(httpd_req_t *req, const char *name, const char *value)
{
    size_t nl = strlen(name), vl = strlen(value);
    if (req->resp_hdrs_len + nl + vl + 4 > sizeof req->resp_hdrs || strpbrk(value, "\r\n")) {
        log_error("httpd: %s %s: response header %s dropped (over %zu bytes of headers, or a "
                  "line break in its value)",
                  req->method, req->path, name, sizeof req->resp_hdrs);
        return;
    }
    char *p = req->resp_hdrs + req->resp_hdrs_len;
    memcpy(p, name, nl);
    p[nl] = ':';
    p[nl + 1] = ' ';
    memcpy(p + nl + 2, value, vl);
    p[nl + 2 + vl] = '\r';
    p[nl + 3 + vl] = '\n';
    req->resp_hdrs_len += nl + vl + 4;
}

void httpd_reply(httpd_req_t *req, int status, const char *content_type, const void *body,
                 size_t len)
{
    if (req->replied) {
        log_error("httpd: %s %s: second reply (status %d) ignored", req->method, req->path, status);
        return;
    }
    req->replied = true;
    if (req->st)
        httpd_h2_reply(req, status, content_type, body, len);
    else
        httpd_conn_reply(req, status, content_type, body, len);
}

void httpd_reply_text(httpd_req_t *req, int status, const char *text)
{
    httpd_reply(req, status, "text/plain; charset=utf-8", text, strlen(text));
}

void httpd_reply_json(httpd_req_t *req, int status, const char *json_text)
{
    httpd_reply(req, status, "application/json", json_text, strlen(json_text));
}

void httpd_reply_jansson(httpd_req_t *req, int status, json_t *json)
{
    char *s = json ? json_dumps(json, JSON_COMPACT) : NULL;
    json_decref(json);
    if (!s) {
        httpd_reply_json(req, 500, "{\"error\":{\"status\":500,\"message\":\"out of memory\"}}");
        return;
    }
    httpd_reply_json(req, status, s);
    free(s);
}

/* The short name httpd gives a status in its error bodies ("not found", ...). */
static const char *httpd_status_kind(int status)
{
    switch (status) {
    case 400:
        return "bad request";
    case 401:
        return "unauthorized";
    case 403:
        return "forbidden";
    case 404:
        return "not found";
    case 405:
        return "method not allowed";
    case 408:
        return "request timeout";
    case 411:
        return "length required";
    case 413:
        return "body too large";
    case 414:
        return "uri too long";
    case 431:
        return "header too large";
    case 501:
        return "not implemented";
    case 503:
        return "unavailable";
    default:
        return status >= 500 ? "internal" : "bad request";
    }
}

const char *httpd_reason_phrase(int status)
{
    switch (status) {
    case 100:
        return "Continue";
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 202:
        return "Accepted";
    case 204:
        return "No Content";
    case 301:
        return "Moved Permanently";
    case 302:
        return "Found";
    case 303:
        return "See Other";
    case 304:
        return "Not Modified";
    case 307:
        return "Temporary Redirect";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 411:
        return "Length Required";
    case 412:
        return "Precondition Failed";
    case 413:
        return "Payload Too Large";
    case 414:
        return "URI Too Long";
    case 415:
        return "Unsupported Media Type";
    case 422:
        return "Unprocessable Entity";
    case 428:
        return "Precondition Required";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    default:
        return status >= 500 ? "Error" : status >= 400 ? "Client Error" : "OK";
    }
}

const char *httpd_date(httpd_t *h)
{
    time_t now = time(NULL);
    if (now != h->date_at) {
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(h->date, sizeof h->date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        h->date_at = now;
    }
    return h->date;
}

/* The error body in the server's format (httpd_set_error_format). */
static void httpd_error_body(httpd_t *h, int status, const char *message, buf_t *out)
{
    if (h->errfn) {
        h->errfn(status, httpd_status_kind(status), message, out, h->errarg);
        return;
    }
    json_t *j = json_pack("{s:{s:i,s:s}}", "error", "status", status, "message", message);
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    buf_append_str(out, s ? s : "{\"error\":{\"status\":500,\"message\":\"out of memory\"}}");
    free(s);
}

void httpd_set_error_format(httpd_t *h, httpd_error_fn fn, void *arg)
{
    h->errfn = fn;
    h->errarg = arg;
}

void httpd_reply_error(httpd_req_t *req, int status, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    buf_t b;
    buf_init(&b, 0, 64 * 1024);
    httpd_error_body(req->h, status, msg, &b);
    httpd_reply(req, status, "application/json", b.data ? (const void *)b.data : "", b.len);
    buf_free(&b);
}

/* ---- request accessors ---- */

const char *httpd_req_method(const httpd_req_t *req)
{
    return req->method;
}

const char *httpd_req_path(const httpd_req_t *req)
{
    return req->path;
}

const char *httpd_req_uri(const httpd_req_t *req)
{
    return req->uri;
}

const char *httpd_req_query_string(const httpd_req_t *req)
{
    return req->query;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Percent-decodes s[0..n) into out (cap bytes, NUL-terminated; what does not fit is cut);
 * '+' is a space when plus. Returns the length written. */
static size_t uri_decode(const char *s, size_t n, char *out, size_t cap, bool plus)
{
    size_t o = 0;
    if (!cap)
        return 0;
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        int hi, lo;
        if (s[i] == '%' && i + 2 < n && (hi = hexval((unsigned char)s[i + 1])) >= 0 &&
            (lo = hexval((unsigned char)s[i + 2])) >= 0) {
            out[o++] = (char)(hi * 16 + lo);
            i += 2;
        } else if (plus && s[i] == '+') {
            out[o++] = ' ';
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
    return o;
}

int httpd_query_get(const char *q, const char *name, char *out, size_t outlen)
{
    size_t nl = strlen(name);
    while (q && *q) {
        size_t pl = strcspn(q, "&");
        const char *eq = memchr(q, '=', pl);
        size_t kl = eq ? (size_t)(eq - q) : pl;
        /* names are compared decoded (a%5Fb is a_b) */
        char kbuf[128];
        if (kl < sizeof kbuf && uri_decode(q, kl, kbuf, sizeof kbuf, true) == nl &&
            memcmp(kbuf, name, nl) == 0) {
            if (eq)
                uri_decode(eq + 1, pl - kl - 1, out, outlen, true);
            else if (outlen)
                out[0] = '\0';
            return 1;
        }
        q += pl;
        if (*q == '&')
            q++;
    }
    return 0;
}

const char *httpd_req_header(const httpd_req_t *req, const char *name)
{
    size_t nl = strlen(name);
    for (size_t i = 0; i < req->nfields; i++)
        if (req->fields[i].name_len == nl && strncasecmp(req->fields[i].name, name, nl) == 0)
            return req->fields[i].value;
    return NULL;
}

const char *httpd_req_body(httpd_req_t *req, size_t *len)
{
    if (len)
        *len = req->body_len;
    return req->body ? req->body : "";
}

void *httpd_req_conn_memo(httpd_req_t *req)
{
    return req->c ? httpd_conn_memo(req->c) : req->st ? h2server_stream_memo(req->st) : NULL;
}

const char *httpd_req_peer(const httpd_req_t *req)
{
    return req->peer ? req->peer : "?";
}

SSL *httpd_req_ssl(const httpd_req_t *req)
{
    return req->c ? httpd_conn_ssl(req->c) : NULL;
}

/* ---- answering later ---- */

httpd_later_t *httpd_req_later(httpd_req_t *req)
{
    if (req->later)
        return req->later;
    httpd_later_t *l = calloc(1, sizeof *l);
    if (!l) {
        log_error("httpd: %s %s: out of memory for a later answer", req->method, req->path);
        return NULL;
    }
    l->req = req;
    req->later = l;
    return l;
}

void httpd_later_header(httpd_later_t *l, const char *name, const char *value)
{
    if (l->req) {
        httpd_resp_header(l->req, name, value);
        return;
    }
    size_t nl = strlen(name), vl = strlen(value);
    if (l->hdrs_len + nl + vl + 4 > sizeof l->hdrs || strpbrk(value, "\r\n")) {
        log_error("httpd: later answer: response header %s dropped (over %zu bytes of headers, "
                  "or a line break in its value)",
                  name, sizeof l->hdrs);
        return;
    }
    char *p = l->hdrs + l->hdrs_len;
    memcpy(p, name, nl);
    memcpy(p + nl, ": ", 2);
    memcpy(p + nl + 2, value, vl);
    memcpy(p + nl + 2 + vl, "\r\n", 2);
    l->hdrs_len += nl + vl + 4;
}

httpd_later_t *httpd_req_later_detach(httpd_req_t *req, httpd_conn_t *c, h2server_stream_t *st)
{
    httpd_later_t *l = req->later;
    if (!l)
        return NULL;
    req->later = NULL;
    l->req = NULL;
    if (req->replied)
        return NULL; /* answered already: l only waits for its httpd_later_reply to go */
    l->c = c;
    l->st = st;
    l->head = req->head;
    l->close = req->close;
    l->minor = req->minor;
    /* the headers the handler added before it left (they fit: the same limit applies) */
    size_t n = req->resp_hdrs_len < sizeof l->hdrs ? req->resp_hdrs_len : 0;
    memcpy(l->hdrs, req->resp_hdrs, n);
    l->hdrs_len = n;
    return l;
}

void httpd_later_reply(httpd_later_t *l, int status, const char *content_type, const void *body,
                       size_t len)
{
    if (!l)
        return;
    if (l->req) { /* still in the handler */
        l->req->later = NULL;
        httpd_reply(l->req, status, content_type, body, len);
    } else if (l->c || l->st) {
        httpd_req_t req;
        httpd_req_init(&req, NULL);
        req.c = l->c;
        req.st = l->st;
        req.method = "-";
        req.path = "-";
        req.head = l->head;
        req.close = l->close;
        req.minor = l->minor;
        memcpy(req.resp_hdrs, l->hdrs, l->hdrs_len);
        req.resp_hdrs_len = l->hdrs_len;
        if (l->st) {
            httpd_h2_reply(&req, status, content_type, body, len);
        } else {
            httpd_conn_later_reply(&req, status, content_type, body, len);
        }
    }
    free(l);
}

void httpd_req_init(httpd_req_t *req, httpd_t *h)
{
    memset(req, 0, offsetof(httpd_req_t, resp_hdrs));
    req->h = h;
    req->minor = 1;
}

int httpd_req_begin(httpd_req_t *req, const char *uri)
{
    req->uri = uri;
    const char *qm = strchr(uri, '?');
    size_t pl = qm ? (size_t)(qm - uri) : strlen(uri);
    req->query = qm ? qm + 1 : NULL;
    if (pl == 0) {
        req->path = "/";
        return 0;
    }
    char *out = req->pathbuf;
    if (pl + 1 > sizeof req->pathbuf) {
        req->pathalloc = malloc(pl + 1);
        if (!req->pathalloc)
            return -1;
        out = req->pathalloc;
    }
    if (memchr(uri, '%', pl)) {
        uri_decode(uri, pl, out, pl + 1, false);
    } else {
        memcpy(out, uri, pl);
        out[pl] = '\0';
    }
    req->path = out;
    return 0;
}

void httpd_req_end(httpd_req_t *req)
{
    free(req->pathalloc);
    req->pathalloc = NULL;
}

/* ---- routing ---- */

static bool method_ok(const char *m)
{
    static const char *const ok[] = {"*",      "GET",   "POST", "PUT",
                                     "DELETE", "PATCH", "HEAD", "OPTIONS"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (strcmp(m, ok[i]) == 0)
            return true;
    return false;
}

int httpd_route(httpd_t *h, const char *method, const char *pattern, httpd_handler_fn fn, void *arg)
{
    if (!h || !method || !pattern || pattern[0] != '/' || !fn || !method_ok(method)) {
        log_error("httpd: bad route %s %s", method ? method : "(null)",
                  pattern ? pattern : "(null)");
        return -1;
    }
    size_t plen = strlen(pattern);
    bool prefix = pattern[plen - 1] == '*';
    if (prefix)
        plen--;
    for (size_t i = 0; i < h->nroutes; i++) {
        httpd_route_t *r = &h->routes[i];
        if (r->prefix == prefix && r->plen == plen && strncmp(r->pattern, pattern, plen) == 0 &&
            strcmp(r->method, method) == 0) {
            r->fn = fn;
            r->arg = arg;
            return 0;
        }
    }
    httpd_route_t *nr = realloc(h->routes, (h->nroutes + 1) * sizeof *nr);
    if (!nr)
        return -1;
    h->routes = nr;
    httpd_route_t *r = &nr[h->nroutes];
    memset(r, 0, sizeof *r);
    snprintf(r->method, sizeof r->method, "%s", method);
    r->pattern = strndup(pattern, plen);
    if (!r->pattern)
        return -1;
    r->plen = plen;
    r->prefix = prefix;
    r->fn = fn;
    r->arg = arg;
    h->nroutes++;
    return 0;
}

static bool route_matches_path(const httpd_route_t *r, const char *path)
{
    if (!r->prefix)
        return strcmp(r->pattern, path) == 0;
    return strncmp(r->pattern, path, r->plen) == 0;
}

/* ---- built-in routes ---- */

static void serve_metrics(httpd_req_t *req)
{
    httpd_t *h = req->h;
    if (!h->reg) {
        httpd_reply_text(req, 404, "no metrics registry\n");
        return;
    }
    buf_reset(&h->scrape);
    if (metrics_render(h->reg, &h->scrape) != 0) {
        log_error("httpd: port %u: /metrics: rendering failed (over %u bytes or out of memory)",
                  h->port, HTTPD_METRICS_MAX);
        httpd_reply_text(req, 500, "metrics rendering failed\n");
        return;
    }
    httpd_reply(req, 200, METRICS_CONTENT_TYPE, h->scrape.data, h->scrape.len);
}

static void serve_readyz(httpd_req_t *req)
{
    httpd_t *h = req->h;
    char text[sizeof h->reason + sizeof h->detail + 2];
    pthread_mutex_lock(&h->mu);
    bool ready = h->ready;
    snprintf(text, sizeof text, "%s\n%s", ready ? "ready" : h->reason, h->detail);
    pthread_mutex_unlock(&h->mu);
    httpd_reply_text(req, ready ? 200 : 503, text);
}

static bool serve_builtin(httpd_req_t *req)
{
    int which = strcmp(req->path, "/metrics") == 0   ? 1
                : strcmp(req->path, "/healthz") == 0 ? 2
                : strcmp(req->path, "/readyz") == 0  ? 3
                                                     : 0;
    if (!which)
        return false;
    if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0) {
        httpd_resp_header(req, "Allow", "GET, HEAD");
        httpd_reply_error(req, 405, "method %s not allowed on %s", req->method, req->path);
        return true;
    }
    if (which == 1)
        serve_metrics(req);
    else if (which == 2)
        httpd_reply_text(req, 200, "ok\n");
    else
        serve_readyz(req);
    return true;
}

void httpd_dispatch(httpd_req_t *req)
{
    httpd_t *h = req->h;
    if (!h->no_builtins && serve_builtin(req))
        return;
    const httpd_route_t *best = NULL;
    char allow[128] = "";
    bool path_known = false;
    for (size_t i = 0; i < h->nroutes; i++) {
        const httpd_route_t *r = &h->routes[i];
        if (!route_matches_path(r, req->path))
            continue;
        path_known = true;
        if (strcmp(r->method, "*") == 0 || strcmp(r->method, req->method) == 0 ||
            (strcmp(req->method, "HEAD") == 0 && strcmp(r->method, "GET") == 0)) {
            /* Longest pattern wins; at equal length an exact route beats a prefix. */
            if (!best || r->plen > best->plen || (r->plen == best->plen && !r->prefix))
                best = r;
        } else if (!strstr(allow, r->method) &&
                   strlen(allow) + strlen(r->method) + 3 < sizeof allow) {
            if (allow[0])
                strcat(allow, ", ");
            strcat(allow, r->method);
        }
    }
    if (best) {
        best->fn(req, best->arg);
        if (!req->replied && !req->later) {
            log_error("httpd: %s %s: handler returned without a reply", req->method, req->path);
            httpd_reply_error(req, 500, "handler gave no reply");
        }
        return;
    }
    if (path_known) {
        httpd_resp_header(req, "Allow", allow);
        httpd_reply_error(req, 405, "method %s not allowed on %s", req->method, req->path);
        return;
    }
    httpd_reply_error(req, 404, "no such resource: %s", req->path);
}

/* ---- memory given back ---- */

/* Buffers freed by closing clients (a flood of large partial bodies) go back to the heap,
 * not to the system: glibc keeps freed blocks for reuse, and after the first large block is
 * freed it serves later ones from the heap instead of mmap, so the process would keep the
 * flood's peak for good. Past HTTPD_TRIM_BYTES freed, malloc_trim gives it back. */
#define HTTPD_TRIM_BYTES (4u << 20)
#define HTTPD_TRIM_DELAY_MS 1000 /* after the first release: a flood of closes costs one trim */
#define HTTPD_TRIM_MIN_BUFFER (64u << 10) /* smaller buffers are the heap's ordinary traffic */

static void on_trim(evutil_socket_t fd, short what, void *arg)
{
    httpd_t *h = arg;
    (void)fd;
    (void)what;
    h->trim_bytes = 0;
    malloc_trim(0);
}

void httpd_note_freed(httpd_t *h, size_t n)
{
    if (n < HTTPD_TRIM_MIN_BUFFER || !h->trim_ev || h->freeing)
        return;
    h->trim_bytes += n;
    if (h->trim_bytes >= HTTPD_TRIM_BYTES && !evtimer_pending(h->trim_ev, NULL)) {
        struct timeval tv = {HTTPD_TRIM_DELAY_MS / 1000, (HTTPD_TRIM_DELAY_MS % 1000) * 1000};
        evtimer_add(h->trim_ev, &tv);
    }
}

/* ---- lifecycle ---- */

static void httpd_on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                            int salen, void *arg)
{
    (void)l;
    httpd_conn_accept(arg, fd, sa, salen);
}

httpd_t *httpd_new(struct event_base *base, const char *bind_addr, uint16_t port, char *err,
                   size_t errlen)
{
    httpd_options_t o = {.bind_addr = bind_addr, .port = port};
    return httpd_new_ex(base, &o, err, errlen);
}

httpd_t *httpd_new_ex(struct event_base *base, const httpd_options_t *opts, char *err,
                      size_t errlen)
{
    const char *addr = opts && opts->bind_addr ? opts->bind_addr : "127.0.0.1";
    uint16_t port = opts ? opts->port : 0;
    httpd_t *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "httpd: out of memory");
        return NULL;
    }
    h->base = base;
    h->ssl_ctx = opts ? opts->ssl_ctx : NULL;
    h->max_conn = opts && opts->max_connections ? opts->max_connections : HTTPD_DEFAULT_MAX_CONN;
    h->header_timeout_s = opts && opts->header_timeout_s > 0 ? opts->header_timeout_s
                                                             : HTTPD_DEFAULT_HEADER_TIMEOUT_S;
    h->max_body = opts && opts->max_body_bytes ? opts->max_body_bytes : HTTPD_DEFAULT_MAX_BODY;
    h->max_per_client = opts && opts->max_per_client ? opts->max_per_client : h->max_conn / 4;
    if (!(opts && opts->max_per_client) && h->max_per_client < 16)
        h->max_per_client = 16;
    if (h->max_per_client > h->max_conn)
        h->max_per_client = h->max_conn;
    h->probe_reserve =
        opts && opts->probe_reserve ? opts->probe_reserve : HTTPD_DEFAULT_PROBE_RESERVE;
    h->request_timeout_s =
        opts && opts->request_timeout_s > 0 ? opts->request_timeout_s : HTTPD_DEFAULT_TIMEOUT_S;
    h->max_header =
        opts && opts->max_header_bytes ? opts->max_header_bytes : HTTPD_DEFAULT_MAX_HEADER;
    h->no_builtins = opts && opts->no_builtin_routes;
    pthread_mutex_init(&h->mu, NULL);
    snprintf(h->reason, sizeof h->reason, "starting");
    buf_init(&h->scrape, 0, HTTPD_METRICS_MAX);
    h->trim_ev = evtimer_new(base, on_trim, h);
    if (httpd_h2_init(h, err, errlen) != 0)
        goto fail;
    struct evutil_addrinfo hints = {.ai_family = AF_UNSPEC,
                                    .ai_socktype = SOCK_STREAM,
                                    .ai_protocol = IPPROTO_TCP,
                                    .ai_flags = EVUTIL_AI_PASSIVE | EVUTIL_AI_ADDRCONFIG};
    struct evutil_addrinfo *ai = NULL;
    char portstr[8];
    snprintf(portstr, sizeof portstr, "%u", port);
    int gai = evutil_getaddrinfo(addr, portstr, &hints, &ai);
    if (gai != 0 || !ai) {
        snprintf(err, errlen, "httpd: cannot listen on %s port %u: %s", addr, port,
                 gai ? evutil_gai_strerror(gai) : "no address");
        goto fail;
    }
    /* A backlog of 1,024: a burst of reconnecting clients (a slowloris wave, a console
     * reload by many operators) would overflow a short queue, the kernel drop the next SYN
     * and a health probe wait the 1 s SYN retransmit. */
    h->lst = evconnlistener_new_bind(
        base, httpd_on_accept, h, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
        1024, ai->ai_addr, (int)ai->ai_addrlen);
    int bind_errno = errno;
    evutil_freeaddrinfo(ai);
    if (!h->lst) {
        snprintf(err, errlen, "httpd: cannot listen on %s port %u: %s", addr, port,
                 strerror(bind_errno));
        goto fail;
    }
    struct sockaddr_storage ss;
    ev_socklen_t sl = sizeof ss;
    if (getsockname(evconnlistener_get_fd(h->lst), (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET)
            h->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        else if (ss.ss_family == AF_INET6)
            h->port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    }
    log_info("httpd: listening on %s port %u (%s, HTTP/1.1 and HTTP/2)", addr, h->port,
             h->ssl_ctx ? "TLS" : "plain");
    return h;
fail:
    httpd_free(h);
    return NULL;
}

void httpd_free(httpd_t *h)
{
    if (!h)
        return;
    h->freeing = true;
    if (h->lst)
        evconnlistener_free(h->lst);
    httpd_conn_close_all(h);
    httpd_h2_free(h);
    if (h->trim_ev)
        event_free(h->trim_ev);
    for (size_t i = 0; i < h->nroutes; i++)
        free(h->routes[i].pattern);
    free(h->routes);
    buf_free(&h->scrape);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

size_t httpd_connections(const httpd_t *h)
{
    return h ? atomic_load(&((httpd_t *)h)->nconn) : 0;
}

uint16_t httpd_port(const httpd_t *h)
{
    return h ? h->port : 0;
}

void httpd_set_metrics(httpd_t *h, metrics_registry_t *reg)
{
    h->reg = reg;
}

void httpd_set_ready(httpd_t *h, bool ready)
{
    pthread_mutex_lock(&h->mu);
    h->ready = ready;
    pthread_mutex_unlock(&h->mu);
}

void httpd_set_ready_reason(httpd_t *h, const char *reason)
{
    pthread_mutex_lock(&h->mu);
    snprintf(h->reason, sizeof h->reason, "%s", reason ? reason : "not ready");
    /* One line in the 503 body. */
    for (char *p = h->reason; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    pthread_mutex_unlock(&h->mu);
}

void httpd_set_ready_detail(httpd_t *h, const char *detail)
{
    pthread_mutex_lock(&h->mu);
    snprintf(h->detail, sizeof h->detail, "%s", detail ? detail : "");
    pthread_mutex_unlock(&h->mu);
}

/* ---- server thread ---- */

struct httpd_thread {
    pthread_t tid;
    struct event_base *base;
    httpd_t *h;
    httpd_options_t opts;
    char bind_addr[128];
    httpd_setup_fn setup;
    void *setup_arg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state; /* 0 starting, 1 running, -1 failed */
    char err[256];
};

static pthread_once_t evthread_once = PTHREAD_ONCE_INIT;
static int evthread_rc;

static void evthread_init(void)
{
    evthread_rc = evthread_use_pthreads();
}

static void *server_thread(void *arg)
{
    httpd_thread_t *t = arg;
    int state = 1;
    t->h = httpd_new_ex(t->base, &t->opts, t->err, sizeof t->err);
    if (!t->h) {
        state = -1;
    } else if (t->setup && t->setup(t->h, t->setup_arg) != 0) {
        snprintf(t->err, sizeof t->err, "httpd: setup callback failed");
        state = -1;
    }
    pthread_mutex_lock(&t->mu);
    t->state = state;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    if (state < 0)
        return NULL;
    event_base_dispatch(t->base);
    return NULL;
}

httpd_thread_t *httpd_thread_start(const httpd_options_t *opts, httpd_setup_fn setup,
                                   void *setup_arg, char *err, size_t errlen)
{
    pthread_once(&evthread_once, evthread_init);
    if (evthread_rc != 0) {
        snprintf(err, errlen, "httpd: libevent pthreads support unavailable");
        return NULL;
    }
    httpd_thread_t *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "httpd: out of memory");
        return NULL;
    }
    if (opts)
        t->opts = *opts;
    if (t->opts.bind_addr) {
        snprintf(t->bind_addr, sizeof t->bind_addr, "%s", t->opts.bind_addr);
        t->opts.bind_addr = t->bind_addr;
    }
    t->setup = setup;
    t->setup_arg = setup_arg;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    t->base = event_base_new();
    if (!t->base) {
        snprintf(err, errlen, "httpd: event_base_new failed");
        goto fail;
    }
    if (pthread_create(&t->tid, NULL, server_thread, t) != 0) {
        snprintf(err, errlen, "httpd: cannot start thread: %s", strerror(errno));
        goto fail;
    }
    pthread_mutex_lock(&t->mu);
    while (t->state == 0)
        pthread_cond_wait(&t->cv, &t->mu);
    int state = t->state;
    pthread_mutex_unlock(&t->mu);
    if (state < 0) {
        pthread_join(t->tid, NULL);
        snprintf(err, errlen, "%s", t->err);
        httpd_free(t->h);
        t->h = NULL;
        goto fail;
    }
    return t;
fail:
    if (t->base)
        event_base_free(t->base);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    free(t);
    return NULL;
}

httpd_t *httpd_thread_server(httpd_thread_t *t)
{
    return t ? t->h : NULL;
}

void httpd_thread_stop(httpd_thread_t *t)
{
    if (!t)
        return;
    /* loopexit, not loopbreak: it is queued in the base, so it also stops a loop that has
     * not started yet (loopbreak before the first iteration would be lost). */
    event_base_loopexit(t->base, NULL);
    pthread_join(t->tid, NULL);
    httpd_free(t->h);
    event_base_free(t->base);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    free(t);
}
