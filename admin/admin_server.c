/* Glue between services/base/httpd and the transport-free handlers (admin_handle), plus the
 * periodic work on the same event loop: ndd.config delivery reports and reconcile, ndd.events
 * consumption and missing-heartbeat checks, database liveness. One thread: handlers,
 * caches and the database connection are never shared across threads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pwd.h>
#include <unistd.h>

#include <event2/event.h>

#include "admin.h"
#include "admin_server.h"
#include "admin_feed_health.h"
#include "daemon_role.h"
#include "httpd.h"
#include "log.h"
#include "metrics.h"
#include "tls.h"

/* The figures the tick copies into the registry: values, not callbacks, because in ndd another
 * thread (ndd's HTTP server) renders /metrics, and a callback would read this loop's state
 * (the PostgreSQL connection, the caches) there, and after a stop read freed memory. */
typedef struct admin_figures {
    metrics_gauge_t *objects[ADMIN_KIND_COUNT];
    metrics_gauge_t *db_up, *kacl_pending;
    metrics_counter_t *publish_errors, *kacl_errors;
    uint64_t publish_errors_seen, kacl_errors_seen; /* this run's counts already added */
} admin_figures_t;

typedef struct admin_server {
    admin_ctx_t ctx;
    const admin_settings_t *s;
    struct event_base *base;
    httpd_t *httpd;
    struct event *tick;
    int64_t last_db_check_ms;
    metrics_counter_t *requests[ADMIN_METHOD_OTHER + 1][6];
    admin_figures_t fig;
    SSL_CTX *ssl;          /* the listener's TLS, NULL for plain HTTP */
    daemon_evstop_t *stop; /* the stop flag's watch on the loop */
} admin_server_t;

static void admin_figures_update(admin_server_t *srv);

static void admin_http_cb(httpd_req_t *hr, void *arg)
{
    admin_server_t *srv = arg;
    admin_req_t req;
    memset(&req, 0, sizeof(req));
    req.method = admin_method_parse(httpd_req_method(hr));
    req.path = httpd_req_path(hr);
    req.query = httpd_req_query_string(hr);
    _Static_assert(sizeof(admin_token_memo_t) <= HTTPD_CONN_MEMO_BYTES,
                   "the token memo fits the HTTP server's per-connection memo");
    req.token_memo = httpd_req_conn_memo(hr);
    req.body = httpd_req_body(hr, &req.body_len);
    req.if_match = httpd_req_header(hr, "If-Match");
    req.if_none_match = req.method == ADMIN_GET ? httpd_req_header(hr, "If-None-Match") : NULL;
    admin_resp_t resp;
    if (admin_resp_init(&resp) != 0) {
        httpd_reply_error(hr, 503, "out of memory");
        return;
    }
    admin_handle(&srv->ctx, &req, httpd_req_header(hr, "Authorization"), &resp);
    if (resp.etag[0])
        httpd_resp_header(hr, "ETag", resp.etag);
    if (resp.location[0])
        httpd_resp_header(hr, "Location", resp.location);
    if (resp.status == 401)
        httpd_resp_header(hr, "WWW-Authenticate", "Bearer realm=\"ndd-admin\"");
    bool empty = resp.status == 204 || resp.status == 304;
    const void *body = resp.body_ref ? (const void *)resp.body_ref : (const void *)resp.body.data;
    size_t body_len = resp.body_ref ? resp.body_ref_len : resp.body.len;
    httpd_reply(hr, resp.status, empty ? NULL : resp.content_type, empty ? NULL : body,
                empty ? 0 : body_len);
    int cls = resp.status / 100;
    /* a server-side failure is the operator's to see, with its reason (the client has it too) */
    if (cls == 5) {
        const char *nl = memchr(body, '\n', body_len);
        int shown = (int)(nl ? (size_t)(nl - (const char *)body) : body_len);
        log_warn("admin: %s %s answered %d: %.*s", httpd_req_method(hr), req.path, resp.status,
                 shown < 400 ? shown : 400, (const char *)body);
    }
    if (cls >= 1 && cls <= 5 && srv->requests[req.method][cls])
        metrics_counter_inc(srv->requests[req.method][cls]);
    admin_resp_free(&resp);
    admin_figures_update(srv); /* a scrape right after a write sees its object counted */
}

/* Errors the HTTP server produces itself (a path outside /api/v1, a body over max-body,
 * libevent's own refusals) in the admin's Error shape, like every other status. */
static void admin_http_error_format(int status, const char *kind, const char *message, buf_t *out,
                                    void *arg)
{
    buf_append_str(out, "{\"error\":\"");
    buf_append_json_escaped(out, kind, strlen(kind));
    buf_append_str(out, "\",\"field\":\"\",\"reason\":\"");
    buf_append_json_escaped(out, message, strlen(message));
    buf_append_str(out, "\"}\n");
}

static void admin_figures_update(admin_server_t *srv)
{
    admin_figures_t *f = &srv->fig;
    for (int k = 0; k < ADMIN_KIND_COUNT; k++)
        metrics_gauge_set(f->objects[k], (double)srv->ctx.cache[k].count);
    metrics_gauge_set(f->db_up, admin_db_ok(srv->ctx.db) ? 1 : 0);
    metrics_gauge_set(f->kacl_pending, admin_kacl_pending(srv->ctx.kacl) ? 1 : 0);
    /* The counters go on across a restart of the role in ndd: this run adds what it counted. */
    uint64_t n = admin_publisher_failed(srv->ctx.pub);
    metrics_counter_add(f->publish_errors, n - f->publish_errors_seen);
    f->publish_errors_seen = n;
    n = admin_kacl_errors(srv->ctx.kacl);
    metrics_counter_add(f->kacl_errors, n - f->kacl_errors_seen);
    f->kacl_errors_seen = n;
}

static void admin_metrics_setup(admin_server_t *srv)
{
    metrics_registry_t *r = metrics_default_registry();
    metrics_family_t *req =
        metrics_counter_new(r, "ndd_admin_requests_total",
                            "REST API requests by method and status class", "method,code");
    static const char *const classes[] = {"", "1xx", "2xx", "3xx", "4xx", "5xx"};
    for (int m = 0; req && m <= ADMIN_METHOD_OTHER; m++)
        for (int c = 1; c <= 5; c++)
            srv->requests[m][c] = metrics_counter_labels(
                req, m == ADMIN_METHOD_OTHER ? "other" : admin_method_name((admin_method_t)m),
                classes[c]);
    admin_figures_t *f = &srv->fig;
    metrics_family_t *obj =
        metrics_gauge_new(r, "ndd_admin_objects", "Configuration objects by kind", "kind");
    for (int k = 0; obj && k < ADMIN_KIND_COUNT; k++)
        f->objects[k] = metrics_gauge_labels(obj, admin_kind_name((admin_kind_t)k));
    metrics_family_t *up =
        metrics_gauge_new(r, "ndd_admin_database_up", "1 while PostgreSQL answers", NULL);
    f->db_up = up ? metrics_gauge_labels(up) : NULL;
    metrics_family_t *pf = metrics_counter_new(r, "ndd_admin_publish_errors_total",
                                               "ndd.config records whose delivery failed", NULL);
    f->publish_errors = pf ? metrics_counter_labels(pf) : NULL;
    metrics_family_t *du =
        metrics_counter_new(r, "ndd_admin_database_unavailable_total",
                            "Writes refused with 503: PostgreSQL unreachable", NULL);
    srv->ctx.db_unavailable = du ? metrics_counter_labels(du) : NULL;
    metrics_family_t *ke =
        metrics_counter_new(r, "ndd_admin_kafka_acl_errors_total",
                            "Kafka admin calls for feed topics and ACLs that failed", NULL);
    f->kacl_errors = ke ? metrics_counter_labels(ke) : NULL;
    metrics_family_t *kp =
        metrics_gauge_new(r, "ndd_admin_kafka_acl_reconcile_pending",
                          "1 while feed topics and ACLs do not yet match the database", NULL);
    f->kacl_pending = kp ? metrics_gauge_labels(kp) : NULL;
    admin_kacl_metrics(srv->ctx.kacl, r);
    admin_figures_update(srv);
    httpd_set_metrics(srv->httpd, r);
}

static void admin_tick(evutil_socket_t fd, short what, void *arg)
{
    admin_server_t *srv = arg;
    admin_publisher_poll(srv->ctx.pub, &srv->ctx);
    admin_kacl_poll(srv->ctx.kacl, &srv->ctx, srv->s->kafka_status_ms);
    if (srv->ctx.events)
        admin_events_poll(srv->ctx.events, 1000);
    int64_t now = wall_now_ms();
    if (now - srv->last_db_check_ms >= 2000) {
        srv->last_db_check_ms = now;
        bool was = admin_db_ok(srv->ctx.db);
        bool is = admin_db_ping(srv->ctx.db);
        if (was != is)
            log_warn("admin: PostgreSQL is %s", is ? "reachable again" : "unreachable");
    }
    admin_figures_update(srv);
}

static admin_db_t *admin_open_db_wait(daemon_t *d, const admin_settings_t *s)
{
    char err[512];
    int64_t deadline = mono_now_ms() + s->db_wait_ms;
    for (;;) {
        admin_db_t *db = admin_db_open(s->db, s->db_schema, err, sizeof(err));
        if (db)
            return db;
        /* In ndd no signal ends this wait: the stop flag does. */
        if (*d->stop) {
            log_info("admin: stopped while waiting for PostgreSQL");
            return NULL;
        }
        if (mono_now_ms() >= deadline) {
            log_error("admin: PostgreSQL (schema %s): %s", s->db_schema, err);
            return NULL;
        }
        log_warn("admin: waiting for PostgreSQL: %s", err);
        usleep(500 * 1000);
    }
}

/* PostgreSQL, then the configuration in it: false when the role cannot serve, *rc then its
 * exit status (0 when a stop ended the wait). */
static bool admin_start_db(daemon_t *d, admin_server_t *srv, int *rc)
{
    const admin_settings_t *s = srv->s;
    char err[512];
    /* ndd's /readyz line for the role (alone, the listener below says ready once it serves) */
    daemon_hold(d, DAEMON_COND_CONFIG, false);
    daemon_not_ready(d, "waiting for PostgreSQL");
    srv->ctx.db = admin_open_db_wait(d, s);
    if (!srv->ctx.db) {
        *rc = *d->stop ? 0 : 1;
        return false;
    }
    daemon_not_ready(d, NULL);
    log_info("admin: PostgreSQL schema %s at migration %d", s->db_schema,
             admin_db_schema_version(srv->ctx.db));
    int n = admin_db_load(srv->ctx.db, &srv->ctx, err, sizeof(err));
    if (n < 0) {
        log_error("admin: loading configuration: %s", err);
        *rc = 1;
        return false;
    }
    log_info("admin: %d configuration objects loaded", n);
    srv->ctx.tokens = admin_tokens_new(srv->ctx.db, 4096, s->token_ttl_ms);
    return true;
}

/* The Kafka side: the ndd.config publisher (reconciled with the database), the admin client
 * for feed topics and ACLs, the ndd.events consumer and the dead-letter reader. A failed
 * start-up reconcile is retried in the background; a client that cannot be made is fatal. */
static int admin_start_kafka(admin_server_t *srv, const char *brokers)
{
    const admin_settings_t *s = srv->s;
    char err[512];
    if (!brokers || !*brokers) {
        log_warn("admin: no --brokers: configuration is not published to ndd.config");
        return 0;
    }
    srv->ctx.pub =
        admin_publisher_new(brokers, s->config_topic, s->config_replication, err, sizeof(err));
    if (!srv->ctx.pub) {
        log_error("admin: ndd.config publisher (%s at %s): %s", s->config_topic, brokers, err);
        return -1;
    }
    int r = admin_reconcile(srv->ctx.pub, &srv->ctx, 15000, err, sizeof(err));
    if (r < 0)
        log_error("admin: start-up reconcile of %s failed: %s (retrying in the background)",
                  s->config_topic, err);
    else
        log_info("admin: %s reconciled with the database (%d records written)", s->config_topic, r);
    srv->ctx.kacl = admin_kacl_new(brokers, 0, err, sizeof(err));
    if (!srv->ctx.kacl) {
        log_error("admin: Kafka admin client for feed topics and ACLs (%s): %s", brokers, err);
        return -1;
    }
    if (admin_kacl_reconcile(srv->ctx.kacl, &srv->ctx) != 0)
        log_error("admin: start-up reconcile of Kafka feed topics and ACLs failed (retrying "
                  "every 30 s)");
    srv->ctx.events = admin_events_new(brokers, s->events_topic, s->events_group, srv->ctx.db,
                                       s->down_after_ms, err, sizeof(err));
    if (!srv->ctx.events) {
        log_error("admin: ndd.events consumer (%s at %s): %s", s->events_topic, brokers, err);
        return -1;
    }
    admin_events_set_lag_policy(srv->ctx.events, s->feed_lag_window_ms, (double)s->feed_lag_floor);
    admin_publisher_track(srv->ctx.pub, admin_events_prop(srv->ctx.events));
    srv->ctx.dlq = admin_dlq_new(brokers, err, sizeof(err));
    if (!srv->ctx.dlq) {
        log_error("admin: dead-letter reader (%s): %s", brokers, err);
        return -1;
    }
    return 0;
}

/* The event loop, with libevent's default base when the configured one cannot be made. */
static struct event_base *admin_event_base_new(void)
{
    /* The changelist coalesces enable/disable of read and write events within one loop turn
     * (docs/api.md, bench/admin). */
    struct event_config *ecfg = event_config_new();
    if (ecfg)
        event_config_set_flag(ecfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
    struct event_base *base = ecfg ? event_base_new_with_config(ecfg) : NULL;
    if (ecfg)
        event_config_free(ecfg);
    if (!base)
        base = event_base_new();
    return base;
}

/* The listener: TLS when configured, the event loop, the HTTP server and its /api/v1 route.
 * -1 when one of them cannot be made (what was made is freed by admin_server_free). */
static int admin_start_http(admin_server_t *srv)
{
    const admin_settings_t *s = srv->s;
    char err[512];
    if (s->tls_cert) {
        tls_config_t tc = {.cert_file = s->tls_cert,
                           .key_file = s->tls_key,
                           .ca_file = s->tls_ca,
                           .require_client_cert = s->tls_client_auth,
                           .alpn = "h2,http/1.1"};
        srv->ssl = tls_server_ctx_new(&tc, err, sizeof(err));
        if (!srv->ssl) {
            log_error("admin: TLS: %s", err);
            return -1;
        }
    }
    srv->base = admin_event_base_new();
    httpd_options_t ho = {.bind_addr = s->common.http_listen,
                          .port = (uint16_t)s->common.http_port,
                          .ssl_ctx = srv->ssl,
                          .max_connections = 1024,
                          .max_body_bytes = (size_t)s->max_body};
    srv->httpd = srv->base ? httpd_new_ex(srv->base, &ho, err, sizeof(err)) : NULL;
    if (!srv->httpd) {
        log_error("admin: HTTP server: %s", err);
        return -1;
    }
    httpd_set_error_format(srv->httpd, admin_http_error_format, NULL);
    if (httpd_route(srv->httpd, "*", "/api/v1/*", admin_http_cb, srv) != 0) {
        log_error("admin: cannot register /api/v1 routes");
        return -1;
    }
    return 0;
}

/* Frees whatever admin_serve made, on every path out: the loop's users before the loop,
 * the clients before the database they read. */
static void admin_server_free(admin_server_t *srv)
{
    daemon_evstop_free(srv->stop);
    if (srv->tick)
        event_free(srv->tick);
    httpd_free(srv->httpd);
    if (srv->base)
        event_base_free(srv->base);
    tls_ctx_free(srv->ssl);
    admin_events_free(srv->ctx.events);
    admin_publisher_free(srv->ctx.pub);
    admin_kacl_free(srv->ctx.kacl);
    admin_dlq_free(srv->ctx.dlq);
    admin_tokens_free(srv->ctx.tokens);
    admin_db_close(srv->ctx.db);
    admin_ctx_free(&srv->ctx);
}

int admin_serve(daemon_t *d)
{
    const admin_settings_t *s = d->def->settings;
    admin_server_t srv;
    memset(&srv, 0, sizeof(srv));
    srv.s = s;
    int rc = 1;
    if (admin_ctx_init(&srv.ctx, (size_t)s->max_objects, (size_t)s->max_body) != 0) {
        log_error("admin: out of memory");
        return 1;
    }
    if (!admin_start_db(d, &srv, &rc) || admin_start_kafka(&srv, d->brokers) != 0 ||
        admin_start_http(&srv) != 0)
        goto out;
    admin_metrics_setup(&srv);
    srv.tick = event_new(srv.base, -1, EV_PERSIST, admin_tick, &srv);
    struct timeval tv = {0, 100 * 1000};
    event_add(srv.tick, &tv);
    if (!(srv.stop = daemon_evstop_new(d, srv.base, NULL, NULL))) {
        log_error("admin: out of memory");
        goto out;
    }
    if (daemon_write_port_file(d, httpd_port(srv.httpd)) != 0)
        goto out;
    httpd_set_ready(srv.httpd, true);
    daemon_hold(d, DAEMON_COND_CONFIG, true);
    log_info("admin: serving %s on %s:%u",
             srv.ssl ? (s->tls_client_auth ? "HTTPS (mTLS)" : "HTTPS") : "HTTP",
             s->common.http_listen, (unsigned)httpd_port(srv.httpd));
    event_base_dispatch(srv.base);
    daemon_not_ready(d, "stopping");
    rc = 0;
out:
    admin_server_free(&srv);
    return rc;
}

int admin_token_command(const admin_settings_t *s, const char *verb, const char *name,
                        const char *role)
{
    char err[512];
    admin_db_t *db = admin_db_open(s->db, s->db_schema, err, sizeof(err));
    if (!db) {
        fprintf(stderr, "ndd-admin token: PostgreSQL (schema %s): %s\n", s->db_schema, err);
        return 1;
    }
    int rc = 1;
    /* The audit's "who" of a command run on the database host: no token, the OS user. */
    char who[80];
    const struct passwd *pw = getpwuid(geteuid());
    snprintf(who, sizeof(who), "cli:%s", pw && pw->pw_name ? pw->pw_name : "unknown");
    if (strcmp(verb, "create") == 0) {
        admin_role_t r = admin_role_parse(role);
        if (r == ADMIN_ROLE_NONE || !name || !*name) {
            fprintf(stderr, "ndd-admin token create: --role admin|viewer and --name NAME are "
                            "required\n");
            goto out;
        }
        char id[32], token[160], salt[65], hash[65];
        if (admin_token_generate(id, token, salt, hash) != 0 ||
            admin_db_token_insert(db, id, name, r, salt, hash, who, err, sizeof(err)) != 0) {
            fprintf(stderr, "ndd-admin token create: %s\n", err);
            goto out;
        }
        /* The only time the token is ever shown. */
        printf("%s\n", token);
        fprintf(stderr, "token \"%s\" (role %s, id %s) created; it is shown only once\n", name,
                admin_role_name(r), id);
        rc = 0;
    } else if (strcmp(verb, "revoke") == 0) {
        if (!name || admin_db_token_revoke(db, name, who, err, sizeof(err)) != 0) {
            fprintf(stderr, "ndd-admin token revoke: %s\n", name ? err : "--name is required");
            goto out;
        }
        rc = 0;
    } else if (strcmp(verb, "list") == 0) {
        json_t *l = admin_db_token_list(db, err, sizeof(err));
        if (!l) {
            fprintf(stderr, "ndd-admin token list: %s\n", err);
            goto out;
        }
        json_dumpf(l, stdout, JSON_INDENT(2));
        printf("\n");
        json_decref(l);
        rc = 0;
    } else {
        fprintf(stderr, "ndd-admin token: unknown verb \"%s\" (create, list, revoke)\n", verb);
    }
out:
    admin_db_close(db);
    return rc;
}
