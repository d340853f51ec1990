/* ndd-gui-api: the web console's server (docs/console.md). One HTTP server (services/base/httpd,
 * HTTPS with services/base/tls) on one event loop serves the console's built files
 * (gui_static.c), logs users in by exchanging an admin API token for a session cookie
 * (gui_session.c), forwards /api/v1/... to ndd-admin with the session's token
 * (gui_proxy.c), and streams live figures (gui_live.c) that a poller thread gathers from the
 * admin's /status and the workers' /metrics (gui_prom.c parses them). gui_http.c is the
 * small blocking HTTP/1.1 client the proxy and the poller share.
 *
 * Functions are named gui_<file>_<action>. */
#ifndef NDD_GUI_H
#define NDD_GUI_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <jansson.h>

#include "buf.h"
#include "clock.h"
#include "daemon.h"
#include "daemon_role.h"
#include "httpd.h"

typedef struct gui_settings {
    daemon_settings_t common;
    const char *admin_url; /* http[s]://host:port of ndd-admin */
    /* https:// upstreams: trust anchors (default: the system's), and the client certificate
     * and key for an admin that requires one (its tls-client-auth) */
    const char *admin_tls_ca, *admin_tls_cert, *admin_tls_key;
    const char *web_root; /* the console's built files (gui-api/web/dist) */
    const char *tls_cert, *tls_key;
    int64_t session_ttl_ms; /* a session's lifetime from login */
    int64_t max_sessions;
    int64_t poll_ms;          /* live figures sampling period */
    int64_t history_points;   /* points kept per series */
    const char *metrics_urls; /* extra worker /metrics URLs, comma separated */
    const char *token_file;   /* token the poller reads /status with; else a session's */
    int64_t upstream_timeout_ms;
} gui_settings_t;

/* ---- gui_http.c: a blocking HTTP/1.1 client (HTTP or HTTPS, Connection: close) ---- */
typedef struct gui_url {
    char host[256];
    char port[8];
    char path[512]; /* "" when the URL has none */
    bool https;
} gui_url_t;
/* http[s]://host[:port][/path]; 0 or -1 with err. */
int gui_url_parse(const char *url, gui_url_t *out, char *err, size_t errlen);
/* The one client TLS context of every https:// upstream, from admin-tls-ca/-cert/-key: made
 * before the poller thread starts, read-only after. 0, or -1 with err naming the file. */
int gui_http_tls_init(const gui_settings_t *s, char *err, size_t errlen);
void gui_http_tls_free(void);

typedef struct gui_http_resp {
    int status;
    char etag[64];
    char location[256];
    char content_type[96];
    buf_t body; /* bounded by the caller's buf_init max */
} gui_http_resp_t;
/* One address of an upstream's host. */
typedef struct gui_addr {
    struct sockaddr_storage sa; /* AF_INET or AF_INET6, the URL's port */
    socklen_t len;
} gui_addr_t;
/* At most this many addresses of one metrics URL are scraped per poll (a headless Service
 * resolves to every pod of its workers). */
#define GUI_HTTP_MAX_ADDRS 64
/* Every distinct IPv4 and IPv6 address u's host resolves to now, in the resolver's order: the
 * first max into out. Returns how many there are (more than max when some were left out),
 * or -1 with err naming host:port. */
int gui_http_resolve(const gui_url_t *u, gui_addr_t *out, size_t max, char *err, size_t errlen);
/* Keeps, in place and in order, only the IPv4 addresses when there are any: one process
 * listening on both families (localhost, a dual-stack Service's pods) is then counted once.
 * Returns the count kept. */
size_t gui_addrs_one_family(gui_addr_t *a, size_t n);
/* "127.0.0.2:9102" or "[::1]:9102". */
void gui_addr_format(const gui_addr_t *a, char *out, size_t outlen);

/* Sends method path to u with the headers ("Name: value" lines each ending in \r\n, may be
 * NULL) and the body; fills resp (whose body buf the caller initialised). 0, or -1 with err
 * naming the upstream (connect refused, timeout, malformed reply, reply too large). */
int gui_http_request(const gui_url_t *u, const char *method, const char *path, const char *headers,
                     const char *body, size_t body_len, int timeout_ms, gui_http_resp_t *resp,
                     char *err, size_t errlen);
/* The same to one address of u's host: at, or when at is NULL the first address that
 * accepts. The Host header, the TLS server name (SNI) and the name the certificate must
 * carry stay u->host. */
int gui_http_request_at(const gui_url_t *u, const gui_addr_t *at, const char *method,
                        const char *path, const char *headers, const char *body, size_t body_len,
                        int timeout_ms, gui_http_resp_t *resp, char *err, size_t errlen);

/* ---- gui_session.c ---- */
typedef struct gui_sessions gui_sessions_t;
typedef struct gui_session_info {
    char token[160];
    char name[64];
    char role[16];
    char csrf[65];
    int64_t expires_ms;
} gui_session_info_t;
gui_sessions_t *gui_sessions_new(size_t max, int64_t ttl_ms);
void gui_sessions_free(gui_sessions_t *s);
/* Creates a session; id_out (65 bytes) is the cookie value. -1 when out of random bytes. */
int gui_sessions_create(gui_sessions_t *s, const char *token, const char *name, const char *role,
                        int64_t now_ms, char *id_out, gui_session_info_t *info);
/* Copies the session named by the request's cookie into info; false when none or expired. */
bool gui_sessions_lookup(gui_sessions_t *s, const char *cookie_header, int64_t now_ms,
                         gui_session_info_t *info);
void gui_sessions_remove(gui_sessions_t *s, const char *cookie_header);
/* The token of the newest live session (for the poller without a token file). */
bool gui_sessions_any_token(gui_sessions_t *s, int64_t now_ms, char *token, size_t len);
size_t gui_sessions_count(gui_sessions_t *s, int64_t now_ms);
/* The value of cookie `name` in a Cookie header into out; false when absent. */
bool gui_cookie_get(const char *cookie_header, const char *name, char *out, size_t outlen);

/* ---- gui_prom.c: Prometheus text format 0.0.4 ---- */
typedef struct gui_prom_sample {
    const char *name; /* points into the parsed text (NUL-terminated by the parser) */
    size_t name_len;
    const char *labels; /* between the braces, "" without; raw, escapes left as they are */
    size_t labels_len;
    double value;
} gui_prom_sample_t;
/* Calls fn for every sample line of text (modified in place: never past len). Comments and
 * blank lines are skipped; a malformed line stops the parse. Returns the number of samples,
 * or -1 with err naming the line. */
typedef void (*gui_prom_fn)(const gui_prom_sample_t *s, void *arg);
int gui_prom_parse(char *text, size_t len, gui_prom_fn fn, void *arg, char *err, size_t errlen);
/* The unescaped value of label `name` of a sample into out; false when absent. */
bool gui_prom_label(const gui_prom_sample_t *s, const char *name, char *out, size_t outlen);

/* ---- gui_live.c ---- */
typedef struct gui_live gui_live_t;
gui_live_t *gui_live_new(const gui_settings_t *s, gui_sessions_t *sessions, char *err,
                         size_t errlen);
/* Starts the poller thread. */
int gui_live_start(gui_live_t *l);
void gui_live_free(gui_live_t *l);
/* GET /console/live: the series as server-sent events (docs/console.md). */
void gui_live_handle(httpd_req_t *req, gui_live_t *l, const gui_session_info_t *who);
/* What one event of /console/live carries: {seq, poll_ms, frames after `after`, status}. */
json_t *gui_live_snapshot(gui_live_t *l, int64_t after);
/* How a metrics URL's host becomes addresses: gui_http_resolve unless set (tests give a
 * name two loopback addresses with it); before gui_live_start. */
typedef int (*gui_resolve_fn)(const gui_url_t *u, gui_addr_t *out, size_t max, char *err,
                              size_t errlen);
void gui_live_set_resolver(gui_live_t *l, gui_resolve_fn fn);

/* ---- gui_server.c, gui_role.c ---- */
typedef struct gui_server gui_server_t;
/* Serves on d (its settings d->def->settings) until a stop: SIGINT/SIGTERM alone, ndd's flag
 * embedded. The exit code: 0 after a stop. */
int gui_server_run(daemon_t *d);
/* The gui-api role: ndd-gui-api's settings and its run. */
extern const daemon_role_t gui_role;

/* ---- shared by the handlers ---- */
typedef struct gui_ctx {
    const gui_settings_t *s;
    gui_url_t admin;
    gui_sessions_t *sessions;
    gui_live_t *live;
    bool tls;
    metrics_family_t *m_requests;
} gui_ctx_t;
/* The security headers every response carries (CSP and friends). */
void gui_security_headers(httpd_req_t *req);
void gui_static_handle(httpd_req_t *req, void *arg);
void gui_proxy_handle(httpd_req_t *req, void *arg);
void gui_session_login(httpd_req_t *req, void *arg);
void gui_session_logout(httpd_req_t *req, void *arg);
void gui_session_get(httpd_req_t *req, void *arg);
/* The session of the request, answering 401 itself when there is none. */
bool gui_session_require(httpd_req_t *req, gui_ctx_t *c, gui_session_info_t *info);
/* The request's X-CSRF-Token is the session's (constant-time). */
bool gui_session_csrf_ok(httpd_req_t *req, const gui_session_info_t *info);
/* POST /console/filter-test: evaluates a filter on a sample copy (gui_filter_test.c). */
void gui_filter_test_handle(httpd_req_t *req, void *arg);

#endif
