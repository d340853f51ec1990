/* HTTP server: HTTP/1.1 keep-alive and pipelining on the server's own parser, and HTTP/2 on
 * the same port: h2c with prior knowledge and TLS with ALPN "h2" (nghttp2's client session as
 * the independent peer), one request API for both, and ALPN "http/1.1" still HTTP/1.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "httpd.h"
#include "log.h"
#include "tls.h"

static int connect_port(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

/* ---- server ---- */

static _Atomic unsigned echo_calls; /* requests that reached a handler */

static void echo_handler(httpd_req_t *req, void *arg)
{
    (void)arg;
    echo_calls++;
    size_t len;
    const char *body = httpd_req_body(req, &len);
    char qv[256];
    const char *q =
        httpd_query_get(httpd_req_query_string(req), "name", qv, sizeof(qv)) ? qv : NULL;
    const char *hdr = httpd_req_header(req, "X-Test");
    char out[1024];
    snprintf(out, sizeof out, "method=%s path=%s q=%s hdr=%s len=%zu body=%s",
             httpd_req_method(req), httpd_req_path(req), q ? q : "-", hdr ? hdr : "-", len, body);
    httpd_resp_header(req, "X-Reply", "yes");
    httpd_reply_text(req, 200, out);
}

/* Counts the requests of its connection in the connection's memo. */
static void memo_handler(httpd_req_t *req, void *arg)
{
    (void)arg;
    unsigned *n = httpd_req_conn_memo(req);
    char out[32];
    if (n)
        snprintf(out, sizeof out, "n=%u", ++*n);
    else
        snprintf(out, sizeof out, "n=none");
    httpd_reply_text(req, 200, out);
}

#define BIG_LEN (1u << 20)

/* Byte i of the body of /big?seed=S: a pattern the client checks byte by byte. */
static unsigned char big_byte(unsigned seed, size_t i)
{
    return (unsigned char)(i * 31 + seed * 7 + i / 4099);
}

/* 1 MiB, more than a socket takes at once from a client that does not read. */
static void big_handler(httpd_req_t *req, void *arg)
{
    (void)arg;
    char qv[256];
    const char *q =
        httpd_query_get(httpd_req_query_string(req), "seed", qv, sizeof(qv)) ? qv : NULL;
    unsigned seed = q ? (unsigned)atoi(q) : 0;
    unsigned char *body = malloc(BIG_LEN);
    assert_non_null(body);
    for (size_t i = 0; i < BIG_LEN; i++)
        body[i] = big_byte(seed, i);
    httpd_reply(req, 200, "application/octet-stream", body, BIG_LEN);
    free(body);
}

static int setup_routes(httpd_t *h, void *arg)
{
    (void)arg;
    return httpd_route(h, "*", "/api/v1/feeds*", echo_handler, NULL) ||
           httpd_route(h, "GET", "/memo", memo_handler, NULL) ||
           httpd_route(h, "GET", "/big", big_handler, NULL);
}

static SSL_CTX *self_signed_ctx(void)
{
    EVP_PKEY *pkey = EVP_EC_gen("P-256");
    assert_non_null(pkey);
    X509 *x = X509_new();
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, pkey);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"localhost", -1, -1,
                               0);
    X509_set_issuer_name(x, name);
    assert_true(X509_sign(x, pkey, EVP_sha256()) > 0);
    /* the context the daemons make: tls.c's ALPN selection, "h2" first */
    char dir[] = "/tmp/test_httpd_h2_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char cert[128], key[128];
    snprintf(cert, sizeof cert, "%s/c.pem", dir);
    snprintf(key, sizeof key, "%s/k.pem", dir);
    FILE *f = fopen(cert, "w");
    PEM_write_X509(f, x);
    fclose(f);
    f = fopen(key, "w");
    PEM_write_PrivateKey(f, pkey, NULL, NULL, 0, NULL, NULL);
    fclose(f);
    X509_free(x);
    EVP_PKEY_free(pkey);
    char err[256];
    tls_config_t tc = {.cert_file = cert, .key_file = key, .alpn = "h2,http/1.1"};
    SSL_CTX *ctx = tls_server_ctx_new(&tc, err, sizeof err);
    if (!ctx)
        fail_msg("%s", err);
    unlink(cert);
    unlink(key);
    rmdir(dir);
    return ctx;
}

static httpd_thread_t *start_timeout(SSL_CTX *ctx, uint16_t *port, int timeout_s)
{
    httpd_options_t o = {
        .port = 0, .max_body_bytes = 1024, .ssl_ctx = ctx, .request_timeout_s = timeout_s};
    char err[256];
    httpd_thread_t *t = httpd_thread_start(&o, setup_routes, NULL, err, sizeof err);
    if (!t)
        fail_msg("%s", err);
    *port = httpd_port(httpd_thread_server(t));
    return t;
}

static httpd_thread_t *start(SSL_CTX *ctx, uint16_t *port)
{
    return start_timeout(ctx, port, 0);
}

/* ---- an HTTP/2 client: nghttp2's session over a socket, plain or TLS ---- */

typedef struct h2c {
    int fd;
    SSL *ssl;
    int status;
    char body[4096];
    size_t body_len;
    char x_reply[16];
    bool done;
    uint32_t close_code; /* the stream's RST_STREAM code, 0 when it ended normally */
} h2c_t;

static ssize_t h2c_send(nghttp2_session *s, const uint8_t *data, size_t len, int flags, void *u)
{
    (void)s;
    (void)flags;
    h2c_t *c = u;
    int n = c->ssl ? SSL_write(c->ssl, data, (int)len) : (int)send(c->fd, data, len, MSG_NOSIGNAL);
    return n > 0 ? n : NGHTTP2_ERR_CALLBACK_FAILURE;
}

static int h2c_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t nl,
                      const uint8_t *value, size_t vl, uint8_t flags, void *u)
{
    (void)s;
    (void)f;
    (void)flags;
    h2c_t *c = u;
    if (nl == 7 && memcmp(name, ":status", 7) == 0)
        c->status = atoi((const char *)value);
    if (nl == 7 && memcmp(name, "x-reply", 7) == 0 && vl < sizeof c->x_reply) {
        memcpy(c->x_reply, value, vl);
        c->x_reply[vl] = '\0';
    }
    return 0;
}

static int h2c_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *d, size_t len,
                    void *u)
{
    (void)s;
    (void)flags;
    (void)id;
    h2c_t *c = u;
    if (c->body_len + len < sizeof c->body) {
        memcpy(c->body + c->body_len, d, len);
        c->body_len += len;
        c->body[c->body_len] = '\0';
    }
    return 0;
}

static int h2c_close(nghttp2_session *s, int32_t id, uint32_t code, void *u)
{
    (void)s;
    (void)id;
    ((h2c_t *)u)->close_code = code;
    ((h2c_t *)u)->done = true;
    return 0;
}

typedef struct h2c_src {
    const char *p;
    size_t len, off;
} h2c_src_t;

static ssize_t h2c_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                        nghttp2_data_source *src, void *u)
{
    (void)s;
    (void)id;
    (void)u;
    h2c_src_t *b = src->ptr;
    size_t n = b->len - b->off < len ? b->len - b->off : len;
    memcpy(buf, b->p + b->off, n);
    b->off += n;
    if (b->off == b->len)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

/* A client session over c's socket (and TLS), its SETTINGS submitted. */
static nghttp2_session *h2c_session(h2c_t *c)
{
    nghttp2_session_callbacks *cb;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_send_callback(cb, h2c_send);
    nghttp2_session_callbacks_set_on_header_callback(cb, h2c_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, h2c_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, h2c_close);
    nghttp2_session *s;
    assert_int_equal(nghttp2_session_client_new(&s, cb, c), 0);
    nghttp2_session_callbacks_del(cb);
    assert_int_equal(nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, NULL, 0), 0);
    return s;
}

/* One request of the fields nv (sent as they are, whatever they say) and body on session s;
 * c tells how it ended. */
static void h2c_raw(nghttp2_session *s, h2c_t *c, const nghttp2_nv *nv, size_t n, const char *body)
{
    c->done = false;
    c->status = 0;
    c->close_code = 0;
    c->body_len = 0;
    c->body[0] = '\0';
    h2c_src_t src = {body, body ? strlen(body) : 0, 0};
    nghttp2_data_provider dp = {.source.ptr = &src, .read_callback = h2c_read};
    assert_true(nghttp2_submit_request(s, NULL, nv, n, body ? &dp : NULL, NULL) > 0);
    for (int i = 0; i < 200 && !c->done; i++) {
        assert_int_equal(nghttp2_session_send(s), 0);
        uint8_t buf[16384];
        int r = c->ssl ? SSL_read(c->ssl, buf, sizeof buf) : (int)recv(c->fd, buf, sizeof buf, 0);
        if (r <= 0)
            break;
        assert_true(nghttp2_session_mem_recv(s, buf, (size_t)r) == r);
    }
    assert_true(c->done);
}

/* n requests, one after the other, on one fresh HTTP/2 session over fd (and ssl); c holds
 * the last one's answer. */
static void h2c_requests(h2c_t *c, const char *method, const char *path, const char *body,
                         unsigned n_req)
{
    nghttp2_session *s = h2c_session(c);
    nghttp2_nv nv[] = {
        {(uint8_t *)":method", (uint8_t *)method, 7, strlen(method), 0},
        {(uint8_t *)":path", (uint8_t *)path, 5, strlen(path), 0},
        {(uint8_t *)":scheme", (uint8_t *)(c->ssl ? "https" : "http"), 7, c->ssl ? 5 : 4, 0},
        {(uint8_t *)":authority", (uint8_t *)"localhost", 10, 9, 0},
        {(uint8_t *)"x-test", (uint8_t *)"hi", 6, 2, 0},
    };
    for (unsigned r = 0; r < n_req; r++)
        h2c_raw(s, c, nv, 5, body);
    nghttp2_session_del(s);
}

/* One request on a fresh HTTP/2 session over fd (and ssl); fills c. */
static void h2c_request(h2c_t *c, const char *method, const char *path, const char *body)
{
    h2c_requests(c, method, path, body, 1);
}

#define NV(n, v)                                                                                   \
    {                                                                                              \
        (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, sizeof(v) - 1, NGHTTP2_NV_FLAG_NONE         \
    }

/* ---- tests ---- */

static void test_h2c_prior_knowledge_is_served_on_the_http1_port(void **state)
{
    (void)state;
    uint16_t port;
    httpd_thread_t *t = start(NULL, &port);
    h2c_t c = {.fd = connect_port(port)};
    h2c_request(&c, "GET", "/api/v1/feeds/f%201?name=a%26b", NULL);
    assert_int_equal(c.status, 200);
    assert_string_equal(c.x_reply, "yes");
    assert_string_equal(c.body, "method=GET path=/api/v1/feeds/f 1 q=a&b hdr=hi len=0 body=");
    close(c.fd);
    h2c_t p = {.fd = connect_port(port)};
    h2c_request(&p, "POST", "/api/v1/feeds", "{\"name\":\"f1\"}");
    assert_int_equal(p.status, 200);
    assert_non_null(strstr(p.body, "len=13 body={\"name\":\"f1\"}"));
    close(p.fd);
    h2c_t n = {.fd = connect_port(port)};
    h2c_request(&n, "GET", "/nope", NULL);
    assert_int_equal(n.status, 404);
    assert_non_null(strstr(n.body, "\"status\":404"));
    close(n.fd);
    httpd_thread_stop(t);
}

/* RFC 9113 §8.1.1: a malformed request never reaches a handler; it is answered 400 with the
 * check it failed, and the connection goes on serving well-formed requests. The client is nghttp2's
 * own session, which sends fields as given (it checks only what it receives; a name it is not to
 * copy it does not lower-case either). */
static void
test_malformed_h2_requests_get_400_naming_the_fault_and_never_reach_a_handler(void **state)
{
    (void)state;
    uint16_t port;
    httpd_thread_t *t = start(NULL, &port);
    h2c_t c = {.fd = connect_port(port)};
    nghttp2_session *s = h2c_session(&c);
#define REQ(...)                                                                                   \
    {                                                                                              \
        __VA_ARGS__                                                                                \
    }
    static const struct {
        const char *what;
        nghttp2_nv nv[6];
        size_t n;
        const char *body;
        const char *reason; /* in the 400's body */
    } bad[] = {
        {"an upper-case field name",
         REQ(NV(":method", "GET"), NV(":path", "/api/v1/feeds"), NV(":scheme", "http"),
             {(uint8_t *)"X-Test", (uint8_t *)"hi", 6, 2, NGHTTP2_NV_FLAG_NO_COPY_NAME}),
         4, NULL, "upper-case"},
        {"a connection-specific field",
         REQ(NV(":method", "GET"), NV(":path", "/api/v1/feeds"), NV(":scheme", "http"),
             NV("connection", "keep-alive")),
         4, NULL, "connection-specific"},
        {"te other than trailers",
         REQ(NV(":method", "GET"), NV(":path", "/api/v1/feeds"), NV(":scheme", "http"),
             NV("te", "gzip")),
         4, NULL, "te other than"},
        {"no :path", REQ(NV(":method", "GET"), NV(":scheme", "http")), 2, NULL,
         "no :scheme or no :path"},
        {"a pseudo-header after a regular field",
         REQ(NV(":method", "GET"), NV("x-test", "hi"), NV(":path", "/api/v1/feeds"),
             NV(":scheme", "http")),
         4, NULL, "after a regular field"},
        {":method twice",
         REQ(NV(":method", "GET"), NV(":method", "GET"), NV(":path", "/api/v1/feeds"),
             NV(":scheme", "http")),
         4, NULL, "twice"},
        {"an unknown pseudo-header",
         REQ(NV(":method", "GET"), NV(":path", "/api/v1/feeds"), NV(":scheme", "http"),
             NV(":status", "200")),
         4, NULL, "unknown pseudo-header"},
        {"a value with a leading space",
         REQ(NV(":method", "GET"), NV(":path", "/api/v1/feeds"), NV(":scheme", "http"),
             NV("x-test", " hi")),
         4, NULL, "white space"},
        {"a space in :path",
         REQ(NV(":method", "GET"), NV(":path", "/api/v1/feeds a"), NV(":scheme", "http")), 3, NULL,
         ":path"},
        {"less body than content-length",
         REQ(NV(":method", "POST"), NV(":path", "/api/v1/feeds"), NV(":scheme", "http"),
             NV("content-length", "10")),
         4, "abc", "less body than content-length"},
        {"more body than content-length",
         REQ(NV(":method", "POST"), NV(":path", "/api/v1/feeds"), NV(":scheme", "http"),
             NV("content-length", "2")),
         4, "abc", "more body than content-length"},
        {"content-length not a number",
         REQ(NV(":method", "POST"), NV(":path", "/api/v1/feeds"), NV(":scheme", "http"),
             NV("content-length", "3x")),
         4, "abc", "content-length is not a number"},
    };
#undef REQ
    unsigned calls0 = echo_calls;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        h2c_raw(s, &c, bad[i].nv, bad[i].n, bad[i].body);
        if (c.status != 400 || !strstr(c.body, "malformed HTTP/2 request: ") ||
            !strstr(c.body, bad[i].reason))
            fail_msg("%s: status %d, body \"%s\"; want 400 saying \"%s\"", bad[i].what, c.status,
                     c.body, bad[i].reason);
    }
    assert_int_equal(echo_calls, calls0);
    /* the same connection still serves, a body with its exact length too */
    const nghttp2_nv good[] = {NV(":method", "POST"),     NV(":path", "/api/v1/feeds"),
                               NV(":scheme", "http"),     NV(":authority", "localhost"),
                               NV("content-length", "3"), NV("x-test", "hi")};
    h2c_raw(s, &c, good, 6, "abc");
    assert_int_equal(c.close_code, 0);
    assert_int_equal(c.status, 200);
    assert_non_null(strstr(c.body, "hdr=hi len=3 body=abc"));
    assert_int_equal(echo_calls, calls0 + 1);
    nghttp2_session_del(s);
    close(c.fd);
    httpd_thread_stop(t);
}

static void test_tls_alpn_h2_and_http11_share_the_listener(void **state)
{
    (void)state;
    SSL_CTX *sctx = self_signed_ctx();
    uint16_t port;
    httpd_thread_t *t = start(sctx, &port);
    SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(cctx, SSL_VERIFY_NONE, NULL); /* self-signed test certificate */
    static const unsigned char h2[] = "\x02h2", h11[] = "\x08http/1.1";

    h2c_t c = {.fd = connect_port(port)};
    c.ssl = SSL_new(cctx);
    SSL_set_alpn_protos(c.ssl, h2, sizeof h2 - 1);
    SSL_set_fd(c.ssl, c.fd);
    assert_int_equal(SSL_connect(c.ssl), 1);
    h2c_request(&c, "GET", "/api/v1/feeds/x?name=tls", NULL);
    assert_int_equal(c.status, 200);
    assert_non_null(strstr(c.body, "path=/api/v1/feeds/x q=tls"));
    SSL_free(c.ssl);
    close(c.fd);

    int fd = connect_port(port);
    SSL *ssl = SSL_new(cctx);
    SSL_set_alpn_protos(ssl, h11, sizeof h11 - 1);
    SSL_set_fd(ssl, fd);
    assert_int_equal(SSL_connect(ssl), 1);
    const char *req = "GET /api/v1/feeds/y HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    assert_int_equal(SSL_write(ssl, req, (int)strlen(req)), (int)strlen(req));
    char resp[2048];
    int len = 0, n;
    while ((n = SSL_read(ssl, resp + len, (int)sizeof resp - 1 - len)) > 0)
        len += n;
    resp[len] = '\0';
    assert_non_null(strstr(resp, "HTTP/1.1 200 OK\r\n"));
    assert_non_null(strstr(resp, "path=/api/v1/feeds/y q="));
    SSL_free(ssl);
    close(fd);
    SSL_CTX_free(cctx);
    httpd_thread_stop(t);
    SSL_CTX_free(sctx);
}

/* Three requests in one segment (one with a body), answered in order on one connection; a
 * fourth in a second segment on the same connection; "Connection: close" ends it. */
static void test_keep_alive_pipelined_requests_are_answered_in_order(void **state)
{
    (void)state;
    uint16_t port;
    httpd_thread_t *t = start(NULL, &port);
    int fd = connect_port(port);
    const char *three = "GET /api/v1/feeds/a HTTP/1.1\r\nHost: x\r\n\r\n"
                        "POST /api/v1/feeds/b HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nxyz"
                        "GET /api/v1/feeds/c HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_int_equal(send(fd, three, strlen(three), 0), (ssize_t)strlen(three));
    char buf[8192];
    size_t len = 0;
    for (int i = 0; i < 50; i++) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) == 1) {
            ssize_t r = recv(fd, buf + len, sizeof buf - 1 - len, 0);
            assert_true(r > 0);
            len += (size_t)r;
            buf[len] = '\0';
        }
        const char *c = strstr(buf, "feeds/c q=");
        if (c)
            break;
    }
    const char *a = strstr(buf, "feeds/a q="), *b = strstr(buf, "feeds/b q="),
               *c = strstr(buf, "feeds/c q=");
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_true(a < b && b < c);
    assert_non_null(strstr(b, "len=3 body=xyz"));
    assert_null(strstr(buf, "Connection: close"));
    const char *last = "GET /api/v1/feeds/d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    assert_int_equal(send(fd, last, strlen(last), 0), (ssize_t)strlen(last));
    len = 0;
    ssize_t r;
    while ((r = recv(fd, buf + len, sizeof buf - 1 - len, 0)) > 0)
        len += (size_t)r;
    buf[len] = '\0';
    assert_non_null(strstr(buf, "feeds/d q="));
    assert_non_null(strstr(buf, "Connection: close\r\n"));
    close(fd);
    httpd_thread_stop(t);
}

static void recv_until(int fd, char *buf, size_t cap, const char *want)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < 50 && !strstr(buf, want); i++) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) != 1)
            continue;
        ssize_t r = recv(fd, buf + len, cap - 1 - len, 0);
        if (r <= 0)
            break;
        len += (size_t)r;
        buf[len] = '\0';
    }
}

/* The memo lives as long as the connection: zero on a new one, kept across its requests. */
static void test_connection_memo_is_kept_across_a_connections_requests(void **state)
{
    (void)state;
    uint16_t port;
    httpd_thread_t *t = start(NULL, &port);
    const char *get = "GET /memo HTTP/1.1\r\nHost: x\r\n\r\n";
    char buf[4096];
    int fd = connect_port(port);
    for (unsigned i = 1; i <= 3; i++) {
        assert_int_equal(send(fd, get, strlen(get), 0), (ssize_t)strlen(get));
        char want[16];
        snprintf(want, sizeof want, "n=%u", i);
        recv_until(fd, buf, sizeof buf, want);
        assert_non_null(strstr(buf, want));
    }
    int fd2 = connect_port(port);
    assert_int_equal(send(fd2, get, strlen(get), 0), (ssize_t)strlen(get));
    recv_until(fd2, buf, sizeof buf, "n=1");
    assert_non_null(strstr(buf, "n=1"));
    close(fd2);
    close(fd);
    /* HTTP/2: the memo is the connection's, kept across its streams, new with a connection. */
    h2c_t c = {.fd = connect_port(port)};
    h2c_requests(&c, "GET", "/memo", NULL, 3);
    assert_string_equal(c.body, "n=3");
    close(c.fd);
    h2c_t c2 = {.fd = connect_port(port)};
    h2c_request(&c2, "GET", "/memo", NULL);
    assert_string_equal(c2.body, "n=1");
    close(c2.fd);
    httpd_thread_stop(t);
}

/* ---- a client that does not read for a while ---- */

#define SLOW_STREAMS 3

typedef struct slow {
    int fd;
    int32_t id[SLOW_STREAMS];
    size_t got[SLOW_STREAMS];
    bool bad, closed[SLOW_STREAMS];
} slow_t;

static int slow_index(const slow_t *sl, int32_t id)
{
    for (int i = 0; i < SLOW_STREAMS; i++)
        if (sl->id[i] == id)
            return i;
    return -1;
}

static int slow_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *d, size_t len,
                     void *u)
{
    (void)s;
    (void)flags;
    slow_t *sl = u;
    int k = slow_index(sl, id);
    if (k < 0)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (d[i] != big_byte((unsigned)k, sl->got[k] + i))
            sl->bad = true;
    sl->got[k] += len;
    return 0;
}

static int slow_close(nghttp2_session *s, int32_t id, uint32_t code, void *u)
{
    (void)s;
    (void)code;
    slow_t *sl = u;
    int k = slow_index(sl, id);
    if (k >= 0)
        sl->closed[k] = true;
    return 0;
}

static ssize_t slow_send(nghttp2_session *s, const uint8_t *data, size_t len, int flags, void *u)
{
    (void)s;
    (void)flags;
    ssize_t n = send(((slow_t *)u)->fd, data, len, MSG_NOSIGNAL);
    return n > 0 ? n : NGHTTP2_ERR_CALLBACK_FAILURE;
}

/* HTTP/2 h2c writes a flush's frames to the socket itself while nothing is queued before them;
 * what the socket does not take goes to the bufferevent, and later frames queue behind it.
 * Three 1 MiB responses to a client with a tiny receive buffer and large windows that reads
 * nothing for a while: every byte arrives, in order, each stream's body intact. */
static void test_responses_larger_than_the_socket_arrive_whole_and_in_order(void **state)
{
    (void)state;
    uint16_t port;
    httpd_thread_t *t = start(NULL, &port);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    int rcv = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    slow_t sl = {.fd = fd};
    nghttp2_session_callbacks *cb;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_send_callback(cb, slow_send);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, slow_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, slow_close);
    nghttp2_session *s;
    assert_int_equal(nghttp2_session_client_new(&s, cb, &sl), 0);
    nghttp2_session_callbacks_del(cb);
    /* Windows large enough that flow control does not pace the server: the socket does. */
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 30}};
    assert_int_equal(nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, iv, 1), 0);
    assert_int_equal(nghttp2_session_set_local_window_size(s, NGHTTP2_FLAG_NONE, 0, 1 << 30), 0);
    for (int k = 0; k < SLOW_STREAMS; k++) {
        char path[32];
        snprintf(path, sizeof path, "/big?seed=%d", k);
        nghttp2_nv nv[] = {
            {(uint8_t *)":method", (uint8_t *)"GET", 7, 3, 0},
            {(uint8_t *)":path", (uint8_t *)path, 5, strlen(path), 0},
            {(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, 0},
            {(uint8_t *)":authority", (uint8_t *)"localhost", 10, 9, 0},
        };
        sl.id[k] = nghttp2_submit_request(s, NULL, nv, 4, NULL, NULL);
        assert_true(sl.id[k] > 0);
    }
    assert_int_equal(nghttp2_session_send(s), 0);
    usleep(300 * 1000); /* the server fills the socket and queues the rest */
    bool all = false;
    for (int i = 0; i < 100000 && !all; i++) {
        assert_int_equal(nghttp2_session_send(s), 0);
        uint8_t buf[16384];
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0)
            fail_msg("recv %zd (%s) after %zu %zu %zu bytes", n, strerror(errno), sl.got[0],
                     sl.got[1], sl.got[2]);
        assert_true(nghttp2_session_mem_recv(s, buf, (size_t)n) == n);
        all = true;
        for (int k = 0; k < SLOW_STREAMS; k++)
            all = all && sl.closed[k];
    }
    assert_true(all);
    for (int k = 0; k < SLOW_STREAMS; k++)
        assert_int_equal(sl.got[k], BIG_LEN);
    assert_false(sl.bad);
    nghttp2_session_del(s);
    close(fd);
    httpd_thread_stop(t);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The HTTP/2 side's idle limit (request_timeout_s) is a timer looked at lazily, not re-armed
 * per read: a connection that keeps asking outlives the limit several times over, one that
 * goes quiet is closed about the limit after its last byte. */
static void test_h2c_connection_is_closed_after_the_idle_limit_and_kept_while_busy(void **state)
{
    (void)state;
    uint16_t port;
    httpd_thread_t *t = start_timeout(NULL, &port, 1);
    h2c_t c = {.fd = connect_port(port)};
    nghttp2_session_callbacks *cb;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_send_callback(cb, h2c_send);
    nghttp2_session_callbacks_set_on_header_callback(cb, h2c_header);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, h2c_close);
    nghttp2_session *s;
    assert_int_equal(nghttp2_session_client_new(&s, cb, &c), 0);
    nghttp2_session_callbacks_del(cb);
    assert_int_equal(nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, NULL, 0), 0);
    nghttp2_nv nv[] = {
        {(uint8_t *)":method", (uint8_t *)"GET", 7, 3, 0},
        {(uint8_t *)":path", (uint8_t *)"/api/v1/feeds/x", 5, 15, 0},
        {(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, 0},
        {(uint8_t *)":authority", (uint8_t *)"localhost", 10, 9, 0},
    };
    /* 8 requests 400 ms apart: 3.2 s on one connection with a 1 s limit */
    for (int r = 0; r < 8; r++) {
        c.done = false;
        c.status = 0;
        assert_true(nghttp2_submit_request(s, NULL, nv, 4, NULL, NULL) > 0);
        for (int i = 0; i < 200 && !c.done; i++) {
            assert_int_equal(nghttp2_session_send(s), 0);
            uint8_t buf[16384];
            ssize_t n = recv(c.fd, buf, sizeof buf, 0);
            assert_true(n > 0);
            assert_true(nghttp2_session_mem_recv(s, buf, (size_t)n) == n);
        }
        assert_true(c.done);
        assert_int_equal(c.status, 200);
        usleep(400 * 1000);
    }
    nghttp2_session_del(s);
    /* quiet from here: the server closes it (recv sees the end) between 0.6 s (the last
     * request was 0.4 s ago) and 2.5 s */
    double t0 = now_s();
    uint8_t buf[4096];
    ssize_t n;
    while ((n = recv(c.fd, buf, sizeof buf, 0)) > 0)
        ;
    double waited = now_s() - t0;
    assert_int_equal(n, 0);
    assert_true(waited >= 0.4 && waited < 2.5);
    close(c.fd);
    httpd_thread_stop(t);
}

int main(void)
{
    log_setup("test_httpd_h2", getenv("NDD_TEST_LOG") ? LOG_LEVEL_DEBUG : LOG_LEVEL_OFF, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h2c_prior_knowledge_is_served_on_the_http1_port),
        cmocka_unit_test(
            test_malformed_h2_requests_get_400_naming_the_fault_and_never_reach_a_handler),
        cmocka_unit_test(test_tls_alpn_h2_and_http11_share_the_listener),
        cmocka_unit_test(test_keep_alive_pipelined_requests_are_answered_in_order),
        cmocka_unit_test(test_connection_memo_is_kept_across_a_connections_requests),
        cmocka_unit_test(test_responses_larger_than_the_socket_arrive_whole_and_in_order),
        cmocka_unit_test(test_h2c_connection_is_closed_after_the_idle_limit_and_kept_while_busy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
