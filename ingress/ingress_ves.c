/* The VES REST listener (docs/ingress.md, "VES REST"): POST /eventListener/v7 (one event) and
 * /eventListener/v7/eventBatch over HTTP/1.1 (services/base/httpd.c, here) and HTTP/2 (ingress_h2.c
 * calls ingress_ves_handle). Authentication: HTTP basic (ves.user/ves.password) or, on a TLS
 * listener with tls.client-cert, the verified client certificate. A valid request's events go
 * to the topic of their domain (ves.routes, else ves.topic-prefix + domain), keyed by
 * sourceName; the reply is 202 once Kafka acknowledged all of them, and ONAP's error body
 * otherwise. A single event is produced as the request body itself (no copy); the events of
 * a batch each as {"event":...} (serialised, copied by librdkafka). */
#include "ingress.h"
#include "ingress_ves.h"
#include "ves_event.h"

#include <string.h>
#include <strings.h>

#include <openssl/evp.h>
#include <openssl/ssl.h>

#include "httpd.h"
#include "log.h"
#include "tls.h"

/* The HTTP/1.1 listener's connection cap (as the HTTP/2 listener's) and largest header. */
#define VES_H1_MAX_CONNECTIONS 1024
#define VES_H1_MAX_HEADER (64u * 1024u)

typedef struct ves_req ves_req_t;

typedef struct ves {
    ingress_t *g;
    httpd_t *http;
    char body413[512]; /* ONAP's 413 (SVC2000), HTTP/1.1 and HTTP/2 */
    size_t body413_len;
    char body503[512];
    char basic[512];      /* "Basic <base64(user:password)>", "" when off */
    ves_req_t *free_reqs; /* reused request records: no allocation per request once warm */
} ves_t;

struct ves_req {
    ingress_ack_t ack;
    ves_t *v;
    ves_reply_t r;
    size_t pending;
    bool failed, full, produced_all;
    ves_req_t *next;
};

bool ingress_ves_path(const char *path)
{
    return !strncmp(path, "/eventListener/", 15);
}

static void reply_error(ves_t *v, ves_reply_t r, const ves_error_t *e)
{
    char body[1024];
    size_t n = ves_error_body(e, body, sizeof body);
    ingress_request_done(v->g, INGRESS_T_VES, e->status);
    r.send(r.ctx, e->status, e->status == 503 ? "1" : NULL, body, n);
}

static void reply_unavailable(ves_t *v, ves_reply_t r)
{
    ves_error_t e;
    ves_error_set(&e, 503, "ServiceException", "SVC1000",
                  "No server resources (internal processing queue full)", NULL, NULL);
    reply_error(v, r, &e);
}

/* ONAP's collector answers an accepted request with this text under Content-Type
 * application/json (VesRestController); its clients may look at it. */
static const char accepted_body[] = "Successfully send event";

static void req_finish(ves_req_t *q)
{
    if (q->failed || q->full) {
        reply_unavailable(q->v, q->r);
    } else {
        ingress_request_done(q->v->g, INGRESS_T_VES, 202);
        q->r.send(q->r.ctx, 202, NULL, accepted_body, sizeof accepted_body - 1);
    }
    q->next = q->v->free_reqs;
    q->v->free_reqs = q;
}

static void req_done(ingress_ack_t *a, const rd_kafka_message_t *rkm)
{
    ves_req_t *q = (ves_req_t *)a;
    if (rkm->err)
        q->failed = true;
    if (--q->pending == 0 && q->produced_all)
        req_finish(q);
}

/* ONAP's VES collector maps both paths with Spring's consumes = "application/json"
 * (VesRestController.java): a request whose Content-Type is not application/json (parameters
 * such as charset aside, the type case-insensitive) or that has none is answered 415 by
 * Spring before the controller runs. ApiException.INVALID_CONTENT_TYPE (SVC0002, 400) is
 * declared there but never thrown: NDD answers 415 as ONAP does, with that id in the body. */
static bool json_content_type(const char *ct)
{
    if (!ct)
        return false;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    if (strncasecmp(ct, "application/json", 16))
        return false;
    ct += 16;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    return !*ct || *ct == ';';
}

/* Basic auth, or a verified client certificate: either lets a client in (with
 * ves.cert-basic-auth the TLS handshake asks for a certificate without requiring one, as ONAP's
 * certBasicAuth; without it a TLS listener with tls.client-cert has verified one already). */
static bool authorized(ves_t *v, const ves_in_t *in)
{
    if (in->client_cert)
        return true;
    if (!v->basic[0])
        return !v->g->S->ves_cert_basic_auth;
    return in->authorization && strlen(in->authorization) == strlen(v->basic) &&
           CRYPTO_memcmp(in->authorization, v->basic, strlen(v->basic)) == 0;
}

void ingress_ves_handle(void *vv, const ves_in_t *in, ves_reply_t r)
{
    ves_t *v = vv;
    ingress_t *g = v->g;
    ves_error_t e;
    bool batch = !strcmp(in->path, "/eventListener/v7/eventBatch");
    if (!batch && strcmp(in->path, "/eventListener/v7")) {
        ves_error_set(&e, 404, "ServiceException", "SVC2000",
                      "The following service error occurred: %1. Error code is %2", "Not Found",
                      "404");
        return reply_error(v, r, &e);
    }
    if (strcmp(in->method, "POST")) {
        ves_error_set(&e, 405, "ServiceException", "SVC0002",
                      "Bad Parameter (method not allowed: POST only)", NULL, NULL);
        return reply_error(v, r, &e);
    }
    if (!authorized(v, in)) {
        ves_error_set(&e, 401, "PolicyException", "POL2000", "Unauthorized user", NULL, NULL);
        return reply_error(v, r, &e);
    }
    metrics_counter_inc(g->m.received[INGRESS_T_VES]);
    metrics_counter_add(g->m.received_bytes[INGRESS_T_VES], in->len);
    if (!json_content_type(in->content_type)) {
        ingress_dropped(g, INGRESS_T_VES, "bad-content-type");
        ves_error_set(&e, 415, "ServiceException", "SVC0002",
                      "Bad Parameter (Incorrect request Content-Type)", NULL, NULL);
        return reply_error(v, r, &e);
    }
    if (in->len > (size_t)g->S->max_body) {
        ingress_dropped(g, INGRESS_T_VES, "oversized");
        ves_error_set(&e, 413, "ServiceException", "SVC2000",
                      "The following service error occurred: %1. Error code is %2",
                      "Request Entity Too Large", "413");
        return reply_error(v, r, &e);
    }
    ves_parsed_t p;
    if (ves_validate(in->body, in->len, batch, &p, &e)) {
        ingress_dropped(g, INGRESS_T_VES,
                        !strcmp(e.text, "Incorrect JSON payload") ? "bad-json" : "schema");
        return reply_error(v, r, &e);
    }
    char topic[256];
    if (!ingress_route(&g->S->ves_routes, g->S->ves_topic_prefix, p.domain, p.domain_len, topic,
                       sizeof topic)) {
        ingress_dropped(g, INGRESS_T_VES, "unrouted");
        ves_error_set(&e, 400, "ServiceException", "SVC2000",
                      "The following service error occurred: %1. Error code is %2",
                      "No domain defined for stream id", "400");
        ves_parsed_free(&p);
        return reply_error(v, r, &e);
    }
    /* 503 only for what is not produced: refused here when Kafka is silent or there is no
     * room for every event of the request, so a batch is never written in part. */
    if (ingress_kafka_stalled(g) || !ingress_has_room(g, in->len) ||
        (g->in_flight && g->in_flight + (int64_t)p.n_events > g->S->max_in_flight)) {
        ves_parsed_free(&p);
        return reply_unavailable(v, r);
    }
    ves_req_t *q = v->free_reqs;
    if (q)
        v->free_reqs = q->next;
    else
        q = malloc(sizeof *q);
    if (q)
        *q = (ves_req_t){0};
    if (!q) {
        ves_parsed_free(&p);
        return reply_unavailable(v, r);
    }
    q->ack.done = req_done;
    q->v = v;
    q->r = r;
    for (size_t i = 0; i < p.n_events; i++) {
        size_t kl;
        const char *key = ves_parsed_source(&p, i, &kl);
        kafka_produce_result_t pr;
        q->pending++;
        if (!batch) {
            pr = ingress_produce(g, INGRESS_T_VES, topic, key, kl, in->body, in->len, NULL,
                                 in->transient, &q->ack);
        } else {
            json_t *one = json_pack("{s:O}", "event", p.events[i]);
            char *txt = one ? json_dumps(one, JSON_COMPACT) : NULL;
            json_decref(one);
            pr = txt ? ingress_produce(g, INGRESS_T_VES, topic, key, kl, txt, strlen(txt), NULL,
                                       true, &q->ack)
                     : KAFKA_PRODUCE_ERROR;
            free(txt);
        }
        if (pr != KAFKA_PRODUCE_OK) {
            q->pending--;
            q->full = true;
            break;
        }
    }
    ves_parsed_free(&p);
    q->produced_all = true;
    if (q->pending == 0)
        req_finish(q);
}

/* ---- HTTP/1.1 (services/base/httpd.c) ---- */

static void h1_send(void *ctx, int status, const char *retry_after, const char *body, size_t len)
{
    httpd_later_t *l = ctx;
    if (retry_after)
        httpd_later_header(l, "Retry-After", retry_after);
    httpd_later_reply(l, status, len ? "application/json" : NULL, body, len);
}

static void h1_request(httpd_req_t *req, void *arg)
{
    ves_t *v = arg;
    size_t len;
    const char *body = httpd_req_body(req, &len);
    bool cert = false;
    SSL *ssl = httpd_req_ssl(req);
    if (ssl) {
        X509 *x = SSL_get1_peer_certificate(ssl);
        cert = x && SSL_get_verify_result(ssl) == X509_V_OK;
        X509_free(x);
    }
    ves_in_t vi = {.method = httpd_req_method(req),
                   .path = httpd_req_path(req),
                   .authorization = httpd_req_header(req, "Authorization"),
                   .content_type = httpd_req_header(req, "Content-Type"),
                   .client_cert = cert,
                   .body = (const uint8_t *)body,
                   .len = len,
                   .transient = true}; /* the connection's input: reused once answered */
    httpd_later_t *l = httpd_req_later(req);
    if (!l) {
        httpd_resp_header(req, "Retry-After", "1");
        httpd_reply_json(req, 503, v->body503);
        return;
    }
    ingress_ves_handle(v, &vi, (ves_reply_t){h1_send, l});
}

/* The errors httpd answers itself (a body above max-body: 413; a malformed request: 400;
 * header too large: 431; no connection slot: 503) in the shape of ONAP's collector: its 413
 * exactly as ONAP writes it, the others as ONAP's generic SVC2000 with the reason and status. */
static void h1_error_body(int status, const char *kind, const char *message, buf_t *out, void *arg)
{
    (void)arg;
    ves_error_t e;
    char code[8], body[1024];
    snprintf(code, sizeof code, "%d", status);
    if (status == 413)
        ves_error_set(&e, 413, "ServiceException", "SVC2000",
                      "The following service error occurred: %1. Error code is %2",
                      "Request Entity Too Large", "413");
    else if (status == 503)
        ves_error_set(&e, 503, "ServiceException", "SVC1000",
                      "No server resources (internal processing queue full)", NULL, NULL);
    else
        ves_error_set(&e, status, "ServiceException", "SVC2000",
                      "The following service error occurred: %1. Error code is %2",
                      message && *message ? message : kind, code);
    size_t n = ves_error_body(&e, body, sizeof body);
    buf_append(out, body, n);
}

static void body_build(ves_t *v)
{
    ves_error_t e;
    ves_error_set(&e, 413, "ServiceException", "SVC2000",
                  "The following service error occurred: %1. Error code is %2",
                  "Request Entity Too Large", "413");
    v->body413_len = ves_error_body(&e, v->body413, sizeof v->body413);
    ves_error_set(&e, 503, "ServiceException", "SVC1000",
                  "No server resources (internal processing queue full)", NULL, NULL);
    size_t n = ves_error_body(&e, v->body503, sizeof v->body503 - 1);
    v->body503[n] = '\0';
}

void ingress_ves_too_large(void *ves, const char **content_type, const char **body, size_t *len)
{
    ves_t *v = ves;
    if (!v->body413_len)
        return; /* the caller's default stays */
    *content_type = "application/json";
    *body = v->body413;
    *len = v->body413_len;
}

/* Seconds for httpd from a setting in milliseconds, rounded up. */
static int secs(int64_t ms)
{
    int64_t s = (ms + 999) / 1000;
    return s < 1 ? 1 : s > 86400 ? 86400 : (int)s;
}

static bool ves_enabled(const ingress_settings_t *S)
{
    return S->ves_port >= 0;
}

static void ves_stop(void *l)
{
    ves_t *v = l;
    httpd_free(v->http); /* requests still waiting for Kafka keep their handles */
    v->g->ves_h2 = NULL;
    while (v->free_reqs) {
        ves_req_t *q = v->free_reqs;
        v->free_reqs = q->next;
        free(q);
    }
    free(v);
}

static void *ves_start(ingress_t *g, char *err, size_t errlen)
{
    ves_t *v = calloc(1, sizeof *v);
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    v->g = g;
    const ingress_settings_t *S = g->S;
    if (S->ves_user && *S->ves_user) {
        char up[300];
        int n = snprintf(up, sizeof up, "%s:%s", S->ves_user, S->ves_password);
        strcpy(v->basic, "Basic ");
        EVP_EncodeBlock((unsigned char *)v->basic + 6, (const unsigned char *)up, n);
        OPENSSL_cleanse(up, sizeof up);
    }
    g->ves_h2 = v;
    body_build(v);
    if (!ves_enabled(S))
        return v; /* VES over HTTP/2 only */
    /* docs/ingress.md, "Bounds": httpd's guard. A request's header must be whole within
     * frame-timeout of its first byte, its body within frame-timeout more plus 1 s per 64 KiB;
     * idle-timeout closes a connection that moves no byte (one waiting for Kafka's answer
     * excepted); over the connection caps the connection waiting longest part-way through a
     * request is evicted, else the new one gets 503 (probe reserve), else is closed. */
    httpd_options_t o = {.bind_addr = S->listen,
                         .port = (uint16_t)S->ves_port,
                         .ssl_ctx = S->ves_tls ? (g->tls_ves ? g->tls_ves : g->tls_h1) : NULL,
                         .max_connections = VES_H1_MAX_CONNECTIONS,
                         .request_timeout_s = secs(S->idle_timeout_ms),
                         .header_timeout_s = secs(S->frame_timeout_ms),
                         .max_header_bytes = VES_H1_MAX_HEADER,
                         .max_body_bytes = (size_t)S->max_body,
                         .no_builtin_routes = true};
    char e[256];
    v->http = httpd_new_ex(g->base, &o, e, sizeof e);
    if (!v->http) {
        snprintf(err, errlen, "VES: %s", e);
        ves_stop(v);
        return NULL;
    }
    httpd_set_error_format(v->http, h1_error_body, v);
    if (httpd_route(v->http, "*", "/*", h1_request, v)) {
        snprintf(err, errlen, "VES: out of memory");
        ves_stop(v);
        return NULL;
    }
    log_info("VES (HTTP/1.1%s) on %s:%lld", S->ves_tls ? ", TLS" : "", S->listen,
             (long long)S->ves_port);
    return v;
}

static bool ves_tls(const ingress_settings_t *S)
{
    return S->ves_tls;
}

static int ves_check(const ingress_settings_t *S, char *err, size_t errlen)
{
    if (S->ves_cert_basic_auth && (!S->ves_tls || !S->tls_ca || !S->ves_user || !*S->ves_user)) {
        snprintf(err, errlen,
                 "ves.cert-basic-auth needs ves.tls, tls.ca-file (the CA of client "
                 "certificates) and ves.user/ves.password");
        return -1;
    }
    if ((S->ves_user && *S->ves_user) != (S->ves_password && *S->ves_password)) {
        snprintf(err, errlen, "ves.user and ves.password go together");
        return -1;
    }
    return ingress_check_routes(&S->ves_routes, "ves.routes", err, errlen);
}

/* Started also when only the HTTP/2 listener is on (it .needs this one): its handler then
 * serves VES over HTTP/2 and no HTTP/1.1 port is bound. */
const ingress_listener_kind_t ingress_listener_ves = {
    .name = "ves",
    .label = "ves",
    .enabled = ves_enabled,
    .tls = ves_tls,
    .check = ves_check,
    .start = ves_start,
    .stop = ves_stop,
};
