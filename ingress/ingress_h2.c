/* The HTTP/2 listener (docs/ingress.md, "HTTP/2 ingest of message copies"): h2c with prior
 * knowledge, or TLS with ALPN h2 (mTLS with tls.client-cert), on services/base/h2server.
 *
 *   POST /ndd/v1/copy          one message copy: metadata and HTTP fields in x-ndd-* request
 *                              headers (the mapping below), the body as the copy's body
 *   POST /eventListener/v7...  VES over HTTP/2 (ingress_ves.c)
 *
 * Mapping of request headers to the copy's Kafka headers (docs/message-format.md):
 *   x-ndd-method, x-ndd-path, x-ndd-status, x-ndd-authority, x-ndd-scheme
 *                              -> the copied message's :method, :path, :status, ...
 *   x-ndd-h-<name>             -> the copied message's HTTP field <name>
 *   x-ndd-<field>              -> the metadata field @<field> (x-ndd-nf-type -> @nf-type)
 *   any other header           -> the ingest request's own (content-type, user-agent): ignored
 * The copy is then decoded by the codec as ndd-aggregation would decode it from Kafka: a
 * refused copy gets 400 {"reason","field","detail"} with the codec's reason names. A valid one
 * is produced to <copy.topic-prefix><NF type> keyed by its correlation id; 202 once Kafka
 * acknowledged it, 503 with Retry-After when Kafka could not take it in time. */
#include "codec.h"
#include "ingress.h"
#include "ingress_ves.h"

#include <string.h>
#include <strings.h>

#include <event2/event.h>

#include "log.h"

/* The listener's own settings (its .specs, at the end of this file: keys of ndd-ingress's
 * config map like every other). */
typedef struct h2_settings {
    int64_t port; /* -1: off */
    bool tls;
    int64_t max_streams;
} h2_settings_t;

static const h2_settings_t *h2_own(const ingress_settings_t *S);

typedef struct copy_req copy_req_t;

typedef struct h2l {
    ingress_t *g;
    h2server_t *srv;
    copy_req_t *free_reqs; /* reused request records: no allocation per copy once warm */
    struct event *sample;  /* 100 ms: ndd_ingress_h2_buffered_bytes */
    metrics_gauge_t *buffered;
} h2l_t;

struct copy_req {
    ingress_ack_t ack;
    h2l_t *l;
    h2server_stream_t *s;
    copy_req_t *next;
};

static void req_put(h2l_t *l, copy_req_t *q)
{
    q->next = l->free_reqs;
    l->free_reqs = q;
}

static void respond(ingress_t *g, ingress_transport_t t, h2server_stream_t *s, int status,
                    const char *body)
{
    h2server_header_t hdrs[2];
    size_t n = 0;
    if (body && *body)
        hdrs[n++] = (h2server_header_t){"content-type", "application/json"};
    if (status == 503)
        hdrs[n++] = (h2server_header_t){"retry-after", "1"};
    ingress_request_done(g, t, status);
    h2server_respond(s, status, hdrs, n, body, body ? strlen(body) : 0);
}

static void copy_done(ingress_ack_t *a, const rd_kafka_message_t *rkm)
{
    copy_req_t *q = (copy_req_t *)a;
    respond(q->l->g, INGRESS_T_H2_COPY, q->s, rkm->err ? 503 : 202,
            rkm->err ? "{\"reason\":\"kafka-unavailable\"}" : NULL);
    req_put(q->l, q);
}

static const struct {
    const char *name;
    size_t len;
} pseudo[] = {{"method", 6}, {"path", 4}, {"status", 6}, {"authority", 9}, {"scheme", 6}};

/* Builds the copy's Kafka headers from the request headers (the mapping above). */
static int copy_headers(const h2server_request_t *r, rd_kafka_headers_t *h, char *field,
                        size_t flen)
{
    for (size_t i = 0; i < r->n_fields; i++) {
        const h2server_field_t *f = &r->fields[i];
        if (f->name_len <= 6 || strncmp(f->name, "x-ndd-", 6))
            continue;
        const char *n = f->name + 6;
        size_t nl = f->name_len - 6;
        /* The name is built with memcpy (snprintf per header was a sixth of a copy's cost);
         * rd_kafka_header_add takes it with its length. */
        char name[160];
        size_t len;
        if (nl > 2 && n[0] == 'h' && n[1] == '-') {
            len = nl - 2 < sizeof name ? nl - 2 : sizeof name - 1; /* as the snprintf cut it */
            memcpy(name, n + 2, len);
        } else {
            bool ps = false;
            for (size_t k = 0; k < 5 && !ps; k++)
                ps = pseudo[k].len == nl && !memcmp(pseudo[k].name, n, nl);
            if (nl + 2 > sizeof name) {
                snprintf(field, flen, "%.*s", (int)(f->name_len > 60 ? 60 : f->name_len), f->name);
                return -1;
            }
            name[0] = ps ? ':' : '@';
            memcpy(name + 1, n, nl);
            len = nl + 1;
        }
        if (rd_kafka_header_add(h, name, (ssize_t)len, f->value, (ssize_t)f->value_len))
            return -1;
    }
    return 0;
}

static void copy_request(h2l_t *l, h2server_stream_t *s, const h2server_request_t *r)
{
    ingress_t *g = l->g;
    char body[512];
    metrics_counter_inc(g->m.received[INGRESS_T_H2_COPY]);
    metrics_counter_add(g->m.received_bytes[INGRESS_T_H2_COPY], r->body_len);
    if (strcmp(r->method, "POST")) {
        ingress_dropped(g, INGRESS_T_H2_COPY, "bad-method");
        return respond(g, INGRESS_T_H2_COPY, s, 405, "{\"reason\":\"bad-method\"}");
    }
    if (r->too_many_fields) {
        ingress_dropped(g, INGRESS_T_H2_COPY, "too-many-headers");
        return respond(g, INGRESS_T_H2_COPY, s, 400,
                       "{\"reason\":\"too-many-headers\",\"field\":\"headers\"}");
    }
    rd_kafka_headers_t *h = rd_kafka_headers_new(r->n_fields);
    char field[64] = "headers";
    if (copy_headers(r, h, field, sizeof field)) {
        rd_kafka_headers_destroy(h);
        ingress_dropped(g, INGRESS_T_H2_COPY, "oversized");
        snprintf(body, sizeof body, "{\"reason\":\"oversized\",\"field\":\"%s\"}", field);
        return respond(g, INGRESS_T_H2_COPY, s, 400, body);
    }
    codec_msg_t m;
    codec_error_t ce;
    if (codec_decode_parts(&m, NULL, 0, r->body, r->body_len, h, &ce) != CODEC_OK) {
        rd_kafka_headers_destroy(h);
        const char *reason = codec_reason_name(ce.reason);
        ingress_dropped(g, INGRESS_T_H2_COPY, reason);
        json_t *o =
            json_pack("{s:s,s:s,s:s}", "reason", reason, "field", ce.field, "detail", ce.detail);
        char *txt = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        /* 413 is the body's (above the codec's body limit); an oversized header is a 400. */
        bool big_body = ce.reason == CODEC_ERR_OVERSIZED && !strcmp(ce.field, "value");
        respond(g, INGRESS_T_H2_COPY, s, big_body ? 413 : 400,
                txt ? txt : "{\"reason\":\"bad-value\"}");
        free(txt);
        return;
    }
    char topic[160];
    const char *nf = codec_nf_name(m.nf);
    size_t pl = strlen(g->S->copy_topic_prefix), nl = strlen(nf);
    if (pl + nl < sizeof topic) {
        memcpy(topic, g->S->copy_topic_prefix, pl);
        memcpy(topic + pl, nf, nl + 1);
    } else {
        snprintf(topic, sizeof topic, "%s%s", g->S->copy_topic_prefix, nf);
    }
    /* 503 only for what is not produced (a record produced is written, however late). */
    if (ingress_kafka_stalled(g)) {
        rd_kafka_headers_destroy(h);
        return respond(g, INGRESS_T_H2_COPY, s, 503, "{\"reason\":\"kafka-unavailable\"}");
    }
    copy_req_t *q = l->free_reqs;
    if (q)
        l->free_reqs = q->next;
    else
        q = malloc(sizeof *q);
    if (!q) {
        rd_kafka_headers_destroy(h);
        return respond(g, INGRESS_T_H2_COPY, s, 503, "{\"reason\":\"out-of-memory\"}");
    }
    *q = (copy_req_t){.ack.done = copy_done, .l = l, .s = s};
    kafka_produce_result_t pr = ingress_produce(g, INGRESS_T_H2_COPY, topic, m.key.ptr, m.key.len,
                                                r->body, r->body_len, h, false, &q->ack);
    if (pr != KAFKA_PRODUCE_OK) {
        rd_kafka_headers_destroy(h);
        req_put(l, q);
        respond(g, INGRESS_T_H2_COPY, s, 503, "{\"reason\":\"kafka-queue-full\"}");
    }
}

static void ves_send(void *ctx, int status, const char *retry_after, const char *body, size_t len)
{
    h2server_header_t hdrs[2];
    size_t n = 0;
    if (len)
        hdrs[n++] = (h2server_header_t){"content-type", "application/json"};
    if (retry_after)
        hdrs[n++] = (h2server_header_t){"retry-after", retry_after};
    h2server_respond(ctx, status, hdrs, n, body, len);
}

static const char *field(const h2server_request_t *r, const char *name)
{
    for (size_t i = 0; i < r->n_fields; i++)
        if (!strcasecmp(r->fields[i].name, name))
            return r->fields[i].value;
    return NULL;
}

/* A VES body above max-body gets VES's own 413 over HTTP/2 too (ONAP's SVC2000 JSON). */
static void on_too_large(void *arg, const char *path, const char **content_type, const char **body,
                         size_t *len)
{
    h2l_t *l = arg;
    if (ingress_ves_path(path) && l->g->ves_h2)
        ingress_ves_too_large(l->g->ves_h2, content_type, body, len);
}

static void on_request(void *arg, h2server_stream_t *s, const h2server_request_t *r)
{
    h2l_t *l = arg;
    size_t pl = strcspn(r->path, "?");
    if (pl == 12 && !strncmp(r->path, "/ndd/v1/copy", 12))
        return copy_request(l, s, r);
    if (ingress_ves_path(r->path) && l->g->ves_h2) {
        char path[256];
        snprintf(path, sizeof path, "%.*s", (int)(pl < 255 ? pl : 255), r->path);
        bool cert = false;
        if (r->ssl) {
            X509 *x = SSL_get1_peer_certificate(r->ssl);
            cert = x && SSL_get_verify_result(r->ssl) == X509_V_OK;
            X509_free(x);
        }
        ves_in_t vi = {.method = r->method,
                       .path = path,
                       .authorization = field(r, "authorization"),
                       .content_type = field(r, "content-type"),
                       .client_cert = cert,
                       .body = r->body,
                       .len = r->body_len};
        return ingress_ves_handle(l->g->ves_h2, &vi, (ves_reply_t){ves_send, s});
    }
    respond(l->g, INGRESS_T_H2_COPY, s, 404, "{\"reason\":\"no-such-path\"}");
}

static bool h2_enabled(const ingress_settings_t *S)
{
    return h2_own(S)->port >= 0;
}

/* The server's held bytes, sampled on the loop's thread (h2server is not thread-safe, a
 * scrape-time callback would run on the metrics thread): what the memory bound is about. */
static void sample_buffered(evutil_socket_t fd, short what, void *arg)
{
    h2l_t *l = arg;
    metrics_gauge_set(l->buffered, (double)h2server_buffered_bytes(l->srv));
}

static void h2_stop(void *p)
{
    h2l_t *l = p;
    if (l->sample)
        event_free(l->sample);
    h2server_free(l->srv);
    while (l->free_reqs) {
        copy_req_t *q = l->free_reqs;
        l->free_reqs = q->next;
        free(q);
    }
    free(l);
}

static void *h2_start(ingress_t *g, char *err, size_t errlen)
{
    h2l_t *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    l->g = g;
    const ingress_settings_t *S = g->S;
    h2server_options_t o = {.bind_addr = S->listen,
                            .port = (uint16_t)h2_own(S)->port,
                            .ssl_ctx = h2_own(S)->tls ? g->tls : NULL,
                            .max_streams = (uint32_t)h2_own(S)->max_streams,
                            .max_body = (size_t)S->max_body,
                            .idle_timeout_s = (int)((S->idle_timeout_ms + 999) / 1000),
                            .on_request = on_request,
                            .too_large = on_too_large,
                            .arg = l};
    l->srv = h2server_new(g->base, &o, err, errlen);
    if (!l->srv) {
        free(l);
        return NULL;
    }
    metrics_family_t *bf = metrics_gauge_new(
        g->d->metrics, "ndd_ingress_h2_buffered_bytes",
        "HTTP/2 listener: request bodies held and response bytes not yet written", NULL);
    l->buffered = bf ? metrics_gauge_labels(bf) : NULL;
    struct timeval tv = {0, 100000};
    if (!l->buffered || !(l->sample = event_new(g->base, -1, EV_PERSIST, sample_buffered, l)) ||
        event_add(l->sample, &tv)) {
        snprintf(err, errlen, "cannot set up the buffered-bytes gauge");
        h2_stop(l);
        return NULL;
    }
    log_info("HTTP/2 ingest (%s) on %s:%u", h2_own(S)->tls ? "TLS, ALPN h2" : "h2c", S->listen,
             h2server_port(l->srv));
    return l;
}

static bool h2_tls(const ingress_settings_t *S)
{
    return h2_own(S)->tls;
}

/* clang-format off */
static const config_spec_t h2_specs[] = {
    {"h2.port", CONFIG_INT, "-1", "HTTP/2 listener: copies (/ndd/v1/copy) and VES (-1: off)", 0,
     CONFIG_AT(h2_settings_t, port), -1, 65535},
    {"h2.tls", CONFIG_BOOL, "false", "HTTP/2 over TLS with ALPN h2 (else h2c)", 0,
     CONFIG_AT(h2_settings_t, tls), 0, 0},
    {"h2.max-streams", CONFIG_INT, "100", "concurrent streams per HTTP/2 connection", 0,
     CONFIG_AT(h2_settings_t, max_streams), 1, 10000},
};
/* clang-format on */

static const h2_settings_t *h2_own(const ingress_settings_t *S)
{
    return ingress_own_settings(S, &ingress_listener_h2);
}

const ingress_listener_kind_t ingress_listener_h2 = {
    .name = "h2",
    .label = "h2-copy",
    .enabled = h2_enabled,
    .tls = h2_tls,
    .needs = &ingress_listener_ves, /* VES over HTTP/2 goes through the VES handler */
    .specs = h2_specs,
    .n_specs = sizeof h2_specs / sizeof h2_specs[0],
    .start = h2_start,
    .stop = h2_stop,
};
