/* The VES REST listener (docs/ingress.md, "VES REST"): POST /eventListener/v7 (one event) and
 * /eventListener/v7/eventBatch over HTTP/1.1 (libevent's evhttp, here) and HTTP/2 (ingress_h2.c
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

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/http.h>
#include <openssl/evp.h>

#include "log.h"
#include "tls.h"

typedef struct ves_req ves_req_t;

typedef struct ves {
    ingress_t *g;
    struct evhttp *http;
    char resp413[640]; /* the whole HTTP/1.1 413 answer given in place of evhttp's page */
    size_t resp413_len;
    bool rewriting;       /* in h1_out_cb: its own changes call it again */
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
            pr = ingress_produce(g, INGRESS_T_VES, topic, key, kl, in->body, in->len, NULL, false,
                                 &q->ack);
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

/* ---- HTTP/1.1 (evhttp) ---- */

static void h1_send(void *ctx, int status, const char *retry_after, const char *body, size_t len)
{
    struct evhttp_request *req = ctx;
    struct evkeyvalq *oh = evhttp_request_get_output_headers(req);
    if (len)
        evhttp_add_header(oh, "Content-Type", "application/json");
    if (retry_after)
        evhttp_add_header(oh, "Retry-After", retry_after);
    /* No buffer for an empty body (the 202s): evhttp sends the status line and headers. */
    struct evbuffer *b = len ? evbuffer_new() : NULL;
    if (b)
        evbuffer_add(b, body, len);
    evhttp_send_reply(req, status, status == 202 ? "Accepted" : "Error", b);
    if (b)
        evbuffer_free(b);
}

static void h1_request(struct evhttp_request *req, void *arg)
{
    ves_t *v = arg;
    struct evkeyvalq *ih = evhttp_request_get_input_headers(req);
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    const uint8_t *body = len ? evbuffer_pullup(in, -1) : (const uint8_t *)"";
    bool cert = false;
    struct evhttp_connection *ec = evhttp_request_get_connection(req);
    struct bufferevent *bev = ec ? evhttp_connection_get_bufferevent(ec) : NULL;
    SSL *ssl = bev ? bufferevent_openssl_get_ssl(bev) : NULL;
    if (ssl) {
        X509 *x = SSL_get1_peer_certificate(ssl);
        cert = x && SSL_get_verify_result(ssl) == X509_V_OK;
        X509_free(x);
    }
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    const char *uri = evhttp_request_get_uri(req);
    char path[256];
    size_t pl = strcspn(uri, "?");
    if (pl >= sizeof path)
        pl = sizeof path - 1;
    memcpy(path, uri, pl);
    path[pl] = 0;
    ves_in_t vi = {.method = cmd == EVHTTP_REQ_POST ? "POST" : "OTHER",
                   .path = path,
                   .authorization = evhttp_find_header(ih, "Authorization"),
                   .content_type = evhttp_find_header(ih, "Content-Type"),
                   .client_cert = cert,
                   .body = body,
                   .len = len};
    ingress_ves_handle(v, &vi, (ves_reply_t){h1_send, req});
}

/* Input held per connection before evhttp stops reading it: one largest header (64 KiB, the
 * evhttp limit set below) plus a little. evhttp keeps reading a connection while it writes an
 * answer (to notice a close), so a client that pipelines requests and never reads the answers
 * would otherwise make the input buffer grow without bound (1 GiB in 6 s measured). With the
 * watermark, reading stops once this much waits (TCP pushes back on the client); evhttp parses
 * the header line by line and moves the body out of this buffer, so no request is refused
 * by it. */
#define VES_H1_INPUT_MAX (72u * 1024u)

/* evhttp answers a Content-Length above max-body itself, before any handler runs, with an HTML
 * page (libevent 2.1 has no hook for it; its error callback came in 2.2). ONAP's clients
 * expect the collector's JSON (SVC2000, "Request Entity Too Large"). This callback on a
 * connection's output replaces that answer while it is still whole in the buffer: evhttp
 * writes a response's status line, headers and page in one go, and the socket is written
 * only later, from the event loop. Only an answer at the start of the buffer is replaced (one
 * behind unsent answers of a pipelining client keeps evhttp's page); the connection closes
 * after it either way (evhttp's Connection: close). */
static void h1_out_cb(struct evbuffer *b, const struct evbuffer_cb_info *info, void *arg)
{
    ves_t *v = arg;
    if (!info->n_added || v->rewriting)
        return;
    size_t len = evbuffer_get_length(b);
    char head[64]; /* ours is told apart by its first 64 bytes (its Content-Type line) */
    if (evbuffer_copyout(b, head, sizeof head) != (ev_ssize_t)sizeof head ||
        memcmp(head, "HTTP/1.", 7) || memcmp(head + 8, " 413 ", 5))
        return;
    if (!memcmp(head, v->resp413, sizeof head) && len == v->resp413_len)
        return; /* already ours, nothing after it */
    v->rewriting = true;
    evbuffer_drain(b, len);
    evbuffer_add(b, v->resp413, v->resp413_len);
    v->rewriting = false;
}

static void h1_413_build(ves_t *v)
{
    ves_error_t e;
    char body[512];
    ves_error_set(&e, 413, "ServiceException", "SVC2000",
                  "The following service error occurred: %1. Error code is %2",
                  "Request Entity Too Large", "413");
    size_t n = ves_error_body(&e, body, sizeof body);
    int k = snprintf(v->resp413, sizeof v->resp413,
                     "HTTP/1.1 413 Request Entity Too Large\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n%.*s",
                     n, (int)n, body);
    v->resp413_len = k > 0 && (size_t)k < sizeof v->resp413 ? (size_t)k : 0;
}

void ingress_ves_too_large(void *ves, const char **content_type, const char **body, size_t *len)
{
    ves_t *v = ves;
    const char *b = v->resp413_len ? strstr(v->resp413, "\r\n\r\n") : NULL;
    if (!b)
        return; /* the caller's default stays */
    *content_type = "application/json";
    *body = b + 4;
    *len = v->resp413_len - (size_t)(b + 4 - v->resp413);
}

static struct bufferevent *h1_bev(struct event_base *base, void *arg)
{
    ves_t *v = arg;
    struct bufferevent *bev;
    if (v->g->S->ves_tls) {
        char err[256];
        SSL *ssl =
            tls_server_ssl_new(v->g->tls_ves ? v->g->tls_ves : v->g->tls_h1, err, sizeof err);
        if (!ssl)
            return NULL;
        bev = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                             BEV_OPT_CLOSE_ON_FREE);
    } else {
        bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    }
    if (bev) {
        bufferevent_setwatermark(bev, EV_READ, 0, VES_H1_INPUT_MAX);
        if (v->resp413_len)
            evbuffer_add_cb(bufferevent_get_output(bev), h1_out_cb, v);
    }
    return bev;
}

static bool ves_enabled(const ingress_settings_t *S)
{
    return S->ves_port >= 0;
}

static void ves_stop(void *l)
{
    ves_t *v = l;
    if (v->http)
        evhttp_free(v->http);
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
    h1_413_build(v);
    if (!ves_enabled(S))
        return v; /* VES over HTTP/2 only */
    v->http = evhttp_new(g->base);
    if (!v->http) {
        snprintf(err, errlen, "evhttp_new failed");
        ves_stop(v);
        return NULL;
    }
    evhttp_set_max_body_size(v->http, (ev_ssize_t)S->max_body);
    evhttp_set_max_headers_size(v->http, 65536);
    /* idle-timeout: a connection that moves no byte this long is closed; that includes one
     * whose answer cannot be written because its client does not read (bufferevent's write
     * timeout). */
    struct timeval itv = {(time_t)(S->idle_timeout_ms / 1000),
                          (suseconds_t)(S->idle_timeout_ms % 1000) * 1000};
    evhttp_set_timeout_tv(v->http, &itv);
    evhttp_set_allowed_methods(v->http, EVHTTP_REQ_POST | EVHTTP_REQ_GET | EVHTTP_REQ_PUT |
                                            EVHTTP_REQ_DELETE);
    evhttp_set_gencb(v->http, h1_request, v);
    evhttp_set_bevcb(v->http, h1_bev, v);
    if (!evhttp_bind_socket_with_handle(v->http, S->listen, (uint16_t)S->ves_port)) {
        snprintf(err, errlen, "cannot listen on %s:%lld", S->listen, (long long)S->ves_port);
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
