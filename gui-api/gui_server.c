/* The one HTTP(S) server of ndd-gui-api and its routes, on one event loop:
 *   GET  /, /index.html, /assets/...  the console's files (gui_static.c)
 *   POST /console/login, /console/logout; GET /console/session   (gui_auth.c)
 *   GET  /console/live                live figures as server-sent events (gui_live.c)
 *   POST /console/filter-test         the filter editor's test box (gui_filter_test.c)
 *   any  /api/v1/...                  forwarded to ndd-admin (gui_proxy.c)
 *   GET  /metrics /healthz /readyz    services/base/httpd's own
 * A stop (SIGTERM/SIGINT alone, ndd's flag in ndd: daemon_evstop) ends the loop. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "daemon_role.h"
#include "gui.h"
#include "log.h"
#include "tls.h"

static void gui_live_route(httpd_req_t *req, void *arg)
{
    gui_ctx_t *c = arg;
    gui_session_info_t who;
    gui_security_headers(req);
    if (gui_session_require(req, c, &who))
        gui_live_handle(req, c->live, &who);
}

/* The sessions gauge is set by this loop's timer, not computed by a callback: in ndd another
 * thread renders /metrics, and a callback would read the sessions after a stop freed them. */
typedef struct gui_figures {
    metrics_gauge_t *sessions;
    gui_sessions_t *from;
} gui_figures_t;

static void gui_figures_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    gui_figures_t *f = arg;
    metrics_gauge_set(f->sessions, (double)gui_sessions_count(f->from, mono_now_ms()));
}

static int gui_routes(httpd_t *h, gui_ctx_t *c)
{
    static const struct {
        const char *method, *pattern;
        httpd_handler_fn fn;
    } routes[] = {
        {"GET", "/", gui_static_handle},
        {"GET", "/index.html", gui_static_handle},
        {"GET", "/favicon.svg", gui_static_handle},
        {"GET", "/assets/*", gui_static_handle},
        {"POST", "/console/login", gui_session_login},
        {"POST", "/console/logout", gui_session_logout},
        {"GET", "/console/session", gui_session_get},
        {"GET", "/console/live", gui_live_route},
        {"POST", "/console/filter-test", gui_filter_test_handle},
        {"*", "/api/v1/*", gui_proxy_handle},
    };
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
        if (httpd_route(h, routes[i].method, routes[i].pattern, routes[i].fn, c) != 0)
            return -1;
    return 0;
}

int gui_server_run(daemon_t *d)
{
    const gui_settings_t *s = d->def->settings;
    gui_ctx_t c = {.s = s, .tls = s->tls_cert != NULL};
    char err[512];
    int rc = 1;
    SSL_CTX *ssl = NULL;
    struct event_base *base = NULL;
    httpd_t *h = NULL;
    daemon_evstop_t *stop = NULL;
    gui_figures_t fig = {0};
    struct event *fig_tick = NULL;
    daemon_hold(d, DAEMON_COND_CONFIG, false); /* ndd's /readyz: not serving yet */
    if (gui_url_parse(s->admin_url, &c.admin, err, sizeof(err)) != 0) {
        log_error("gui: admin-url: %s", err);
        return 2;
    }
    bool https = c.admin.https || (s->metrics_urls && strstr(s->metrics_urls, "https://"));
    if (https && gui_http_tls_init(s, err, sizeof(err)) != 0) {
        log_error("gui: admin-tls: %s", err);
        return 2;
    }
    c.sessions = gui_sessions_new((size_t)s->max_sessions, s->session_ttl_ms);
    c.live = c.sessions ? gui_live_new(s, c.sessions, err, sizeof(err)) : NULL;
    if (!c.live) {
        log_error("gui: %s", c.sessions ? err : "out of memory");
        goto out;
    }
    if (s->tls_cert) {
        tls_config_t tc = {.cert_file = s->tls_cert, .key_file = s->tls_key};
        if (!(ssl = tls_server_ctx_new(&tc, err, sizeof(err)))) {
            log_error("gui: TLS: %s", err);
            goto out;
        }
    }
    httpd_options_t ho = {.bind_addr = s->common.http_listen,
                          .port = (uint16_t)s->common.http_port,
                          .ssl_ctx = ssl,
                          .max_body_bytes = 1u << 20};
    base = event_base_new();
    h = base ? httpd_new_ex(base, &ho, err, sizeof(err)) : NULL;
    if (!h || gui_routes(h, &c) != 0) {
        log_error("gui: HTTP server: %s", h ? "cannot register routes" : err);
        goto out;
    }
    metrics_registry_t *reg = metrics_default_registry();
    c.m_requests =
        metrics_counter_new(reg, "ndd_gui_requests_total",
                            "console requests forwarded to ndd-admin, by status class", "code");
    metrics_family_t *fs = metrics_gauge_new(reg, "ndd_gui_sessions_active",
                                             "console sessions logged in and not expired", NULL);
    fig = (gui_figures_t){.sessions = fs ? metrics_gauge_labels(fs) : NULL, .from = c.sessions};
    struct timeval second = {1, 0};
    fig_tick = event_new(base, -1, EV_PERSIST, gui_figures_tick, &fig);
    if (!fig_tick || event_add(fig_tick, &second) != 0) {
        log_error("gui: out of memory");
        goto out;
    }
    gui_figures_tick(-1, 0, &fig);
    httpd_set_metrics(h, reg);
    if (gui_live_start(c.live) != 0) {
        log_error("gui: cannot start the live-figures thread");
        goto out;
    }
    if (!(stop = daemon_evstop_new(d, base, NULL, NULL))) {
        log_error("gui: out of memory");
        goto out;
    }
    if (daemon_write_port_file(d, httpd_port(h)) != 0)
        goto out;
    httpd_set_ready(h, true);
    daemon_hold(d, DAEMON_COND_CONFIG, true);
    log_info("gui: console on %s://%s:%u/ (ndd-admin at %s, files from %s)", ssl ? "https" : "http",
             s->common.http_listen, (unsigned)httpd_port(h), s->admin_url, s->web_root);
    event_base_dispatch(base);
    daemon_not_ready(d, "stopping");
    rc = 0;
out:
    daemon_evstop_free(stop);
    if (fig_tick)
        event_free(fig_tick);
    gui_live_free(c.live);
    httpd_free(h);
    if (base)
        event_base_free(base);
    tls_ctx_free(ssl);
    gui_http_tls_free();
    gui_sessions_free(c.sessions);
    return rc;
}
