/* HTTP server: built-in routes, routing rules, limits, TLS; a real server on a thread and a
 * raw-socket client, so what is tested is the bytes on the wire. */
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
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <event2/event.h>

#include "clock.h"
#include "httpd.h"
#include "log.h"
#include "metrics.h"

/* ---- client ---- */

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

static void send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return; /* the server may close early (413) */
        p += w;
        n -= (size_t)w;
    }
}

/* Reads until EOF into a malloc'd NUL-terminated string. */
static char *recv_all(int fd)
{
    size_t cap = 4096, len = 0;
    char *s = malloc(cap);
    for (;;) {
        if (len + 1024 > cap)
            s = realloc(s, cap *= 2);
        ssize_t r = recv(fd, s + len, cap - len - 1, 0);
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    s[len] = '\0';
    return s;
}

static int status_of(const char *resp)
{
    int st = 0;
    if (sscanf(resp, "HTTP/1.%*d %d", &st) != 1) {
        fprintf(stderr, "unparsable response: \"%.200s\"\n", resp);
        return -1;
    }
    return st;
}

static const char *body_of(const char *resp)
{
    const char *p = strstr(resp, "\r\n\r\n");
    return p ? p + 4 : "";
}

/* One request with Connection: close; returns the whole response. */
static char *do_request(uint16_t port, const char *method, const char *path, const char *extra,
                        const char *body)
{
    size_t bl = body ? strlen(body) : 0;
    char *req = NULL;
    int n = asprintf(&req,
                     "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n%s"
                     "Content-Length: %zu\r\n\r\n",
                     method, path, extra ? extra : "", bl);
    assert_true(n > 0);
    int fd = connect_port(port);
    send_all(fd, req, (size_t)n);
    free(req);
    if (bl)
        send_all(fd, body, bl);
    char *resp = recv_all(fd);
    close(fd);
    return resp;
}

/* ---- server fixture ---- */

struct fixture {
    httpd_thread_t *t;
    uint16_t port;
    metrics_registry_t *reg;
};

static void echo_handler(httpd_req_t *req, void *arg)
{
    size_t len;
    const char *body = httpd_req_body(req, &len);
    char qv[256];
    const char *q =
        httpd_query_get(httpd_req_query_string(req), "name", qv, sizeof(qv)) ? qv : NULL;
    const char *hdr = httpd_req_header(req, "X-Test");
    char out[2048];
    snprintf(out, sizeof out, "method=%s path=%s q=%s hdr=%s len=%zu body=%s tag=%s",
             httpd_req_method(req), httpd_req_path(req), q ? q : "-", hdr ? hdr : "-", len, body,
             (const char *)arg);
    httpd_resp_header(req, "X-Reply", "yes");
    httpd_reply_text(req, 200, out);
}

static void json_handler(httpd_req_t *req, void *arg)
{
    httpd_reply_jansson(req, 201, json_pack("{s:s}", "id", "f1"));
}

static void silent_handler(httpd_req_t *req, void *arg) {}

/* 32 MiB: more than loopback socket buffers hold, so a client that does not read keeps the
 * reply in flight (its connection in service). */
#define BIG_REPLY (32u * 1024 * 1024)
static void big_handler(httpd_req_t *req, void *arg)
{
    char *b = malloc(BIG_REPLY);
    memset(b, 'b', BIG_REPLY);
    httpd_reply(req, 200, "application/octet-stream", b, BIG_REPLY);
    free(b);
}

/* A page of the daemon's own (ndd-gui-api serves the console's index.html). */
static void html_handler(httpd_req_t *req, void *arg)
{
    (void)arg;
    static const char page[] = "<!doctype html><title>ok</title>";
    httpd_reply(req, 200, "text/html; charset=utf-8", page, sizeof page - 1);
}

/* Requests answered later (httpd_req_later): kept here, on the server's thread, until a
 * GET /release answers them all. */
static httpd_later_t *later_q[8];
static char later_body[8][32];
static int later_n;

static void later_handler(httpd_req_t *req, void *arg)
{
    (void)arg;
    size_t len;
    const char *body = httpd_req_body(req, &len);
    if (later_n == 8) {
        httpd_reply_text(req, 503, "full");
        return;
    }
    snprintf(later_body[later_n], sizeof later_body[0], "later:%.*s", (int)len, body);
    httpd_later_t *l = httpd_req_later(req);
    assert_non_null(l);
    later_q[later_n++] = l; /* the body is gone when the handler returns: copied above */
}

static void release_handler(httpd_req_t *req, void *arg)
{
    (void)arg;
    char out[32];
    snprintf(out, sizeof out, "released=%d", later_n);
    for (int i = 0; i < later_n; i++) {
        httpd_later_header(later_q[i], "Retry-After", "1");
        httpd_later_reply(later_q[i], 202, "text/plain", later_body[i], strlen(later_body[i]));
    }
    later_n = 0;
    httpd_reply_text(req, 200, out);
}

static int setup_routes(httpd_t *h, void *arg)
{
    struct fixture *f = arg;
    httpd_set_metrics(h, f->reg);
    httpd_set_ready_reason(h, "waiting for kafka");
    if (httpd_route(h, "GET", "/api/v1/feeds*", echo_handler, "list") ||
        httpd_route(h, "POST", "/api/v1/feeds", echo_handler, "create") ||
        httpd_route(h, "GET", "/api/v1/feeds/special", echo_handler, "special") ||
        httpd_route(h, "*", "/any", echo_handler, "any") ||
        httpd_route(h, "PUT", "/json", json_handler, NULL) ||
        httpd_route(h, "GET", "/silent", silent_handler, NULL) ||
        httpd_route(h, "GET", "/big", big_handler, NULL) ||
        httpd_route(h, "GET", "/page", html_handler, NULL) ||
        httpd_route(h, "POST", "/later", later_handler, NULL) ||
        httpd_route(h, "GET", "/release", release_handler, NULL))
        return -1;
    return 0;
}

static int start_server(void **state, const httpd_options_t *opts)
{
    struct fixture *f = calloc(1, sizeof *f);
    f->reg = metrics_registry_new();
    metrics_counter_inc(metrics_counter_labels(
        metrics_counter_new(f->reg, "ndd_test_requests_total", "Test counter.", "kind"), "a\"b"));
    char err[256];
    httpd_options_t o = {.port = 0, .max_body_bytes = 1024, .max_connections = 4};
    if (opts)
        o = *opts;
    f->t = httpd_thread_start(&o, setup_routes, f, err, sizeof err);
    if (!f->t) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    f->port = httpd_port(httpd_thread_server(f->t));
    *state = f;
    return 0;
}

static int setup(void **state)
{
    return start_server(state, NULL);
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    httpd_thread_stop(f->t);
    metrics_registry_free(f->reg);
    free(f);
    return 0;
}

/* ---- tests ---- */

static void test_healthz_answers_200_while_loop_runs(void **state)
{
    struct fixture *f = *state;
    assert_true(f->port > 0);
    char *r = do_request(f->port, "GET", "/healthz", NULL, NULL);
    assert_int_equal(status_of(r), 200);
    assert_string_equal(body_of(r), "ok\n");
    free(r);
}

static void test_readyz_is_503_with_reason_until_set_ready(void **state)
{
    struct fixture *f = *state;
    httpd_t *h = httpd_thread_server(f->t);
    char *r = do_request(f->port, "GET", "/readyz", NULL, NULL);
    assert_int_equal(status_of(r), 503);
    assert_string_equal(body_of(r), "waiting for kafka\n");
    free(r);
    httpd_set_ready(h, true); /* from this (non-server) thread */
    r = do_request(f->port, "GET", "/readyz", NULL, NULL);
    assert_int_equal(status_of(r), 200);
    assert_string_equal(body_of(r), "ready\n");
    free(r);
    httpd_set_ready(h, false);
    r = do_request(f->port, "GET", "/readyz", NULL, NULL);
    assert_int_equal(status_of(r), 503);
    free(r);
}

static void test_metrics_serves_registry_as_text_0_0_4(void **state)
{
    struct fixture *f = *state;
    char *r = do_request(f->port, "GET", "/metrics", NULL, NULL);
    assert_int_equal(status_of(r), 200);
    assert_non_null(strstr(r, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
    assert_non_null(strstr(body_of(r), "ndd_test_requests_total{kind=\"a\\\"b\"} 1\n"));
    assert_non_null(strstr(body_of(r), "# TYPE process_resident_memory_bytes gauge\n"));
    free(r);
}

static void test_head_gets_headers_without_a_body(void **state)
{
    struct fixture *f = *state;
    char *r = do_request(f->port, "HEAD", "/healthz", NULL, NULL);
    assert_int_equal(status_of(r), 200);
    assert_string_equal(body_of(r), "");
    free(r);
}

static void test_builtin_routes_refuse_other_methods_with_405(void **state)
{
    struct fixture *f = *state;
    char *r = do_request(f->port, "POST", "/metrics", NULL, "x");
    assert_int_equal(status_of(r), 405);
    assert_non_null(strstr(r, "Allow: GET, HEAD\r\n"));
    free(r);
}

static void test_unknown_path_is_404_with_json_body(void **state)
{
    struct fixture *f = *state;
    char *r = do_request(f->port, "GET", "/nope", NULL, NULL);
    assert_int_equal(status_of(r), 404);
    assert_non_null(strstr(r, "Content-Type: application/json\r\n"));
    json_error_t je;
    json_t *j = json_loads(body_of(r), 0, &je);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "error"), "status")),
                     404);
    assert_non_null(strstr(
        json_string_value(json_object_get(json_object_get(j, "error"), "message")), "/nope"));
    json_decref(j);
    free(r);
}

static void test_known_path_with_wrong_method_is_405_with_allow(void **state)
{
    struct fixture *f = *state;
    char *r = do_request(f->port, "DELETE", "/api/v1/feeds", NULL, NULL);
    assert_int_equal(status_of(r), 405);
    const char *allow = strstr(r, "Allow: ");
    assert_non_null(allow);
    assert_non_null(strstr(allow, "GET"));
    assert_non_null(strstr(allow, "POST"));
    free(r);
}

static void test_longest_pattern_wins_and_a_prefix_matches_below_it(void **state)
{
    struct fixture *f = *state;
    char *r = do_request(f->port, "GET", "/api/v1/feeds/f%201?name=a%26b", "X-Test: hi\r\n", NULL);
    assert_int_equal(status_of(r), 200);
    assert_non_null(strstr(r, "X-Reply: yes\r\n"));
    assert_string_equal(body_of(r),
                        "method=GET path=/api/v1/feeds/f 1 q=a&b hdr=hi len=0 body= tag=list");
    free(r);
    r = do_request(f->port, "GET", "/api/v1/feeds/special", NULL, NULL);
    assert_non_null(strstr(body_of(r), "tag=special"));
    free(r);
    r = do_request(f->port, "GET", "/api/v1/feeds", NULL, NULL);
    assert_non_null(strstr(body_of(r), "tag=list"));
    free(r);
    r = do_request(f->port, "PATCH", "/any", NULL, "p");
    assert_int_equal(status_of(r), 200);
    assert_non_null(strstr(body_of(r), "method=PATCH"));
    free(r);
}

static void test_post_body_reaches_handler(void **state)
{
    struct fixture *f = *state;
    char *r = do_request(f->port, "POST", "/api/v1/feeds", "Content-Type: application/json\r\n",
                         "{\"name\":\"f1\"}");
    assert_int_equal(status_of(r), 200);
    assert_non_null(strstr(body_of(r), "len=13 body={\"name\":\"f1\"} tag=create"));
    free(r);
}

static void test_body_over_limit_is_413(void **state)
{
    struct fixture *f = *state;
    char big[2049];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    char *r = do_request(f->port, "POST", "/api/v1/feeds", NULL, big);
    assert_int_equal(status_of(r), 413);
    /* the server's JSON error body, not libevent's HTML page */
    assert_non_null(strstr(r, "Content-Type: application/json\r\n"));
    assert_null(strstr(r, "text/html"));
    json_error_t je;
    json_t *j = json_loads(body_of(r), 0, &je);
    if (!j)
        fail_msg("413 body is not JSON: %s", body_of(r));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "error"), "status")),
                     413);
    json_decref(j);
    free(r);
    /* the server still serves afterwards */
    r = do_request(f->port, "GET", "/healthz", NULL, NULL);
    assert_int_equal(status_of(r), 200);
    free(r);
}

/* Only libevent's error pages become JSON: a handler's own HTML page passes untouched. */
static void test_a_handlers_html_page_is_not_rewritten(void **state)
{
    struct fixture *f = *state;
    char *r = do_request(f->port, "GET", "/page", NULL, NULL);
    assert_int_equal(status_of(r), 200);
    assert_non_null(strstr(r, "Content-Type: text/html; charset=utf-8\r\n"));
    assert_string_equal(body_of(r), "<!doctype html><title>ok</title>");
    free(r);
}

static void test_jansson_reply_and_missing_reply(void **state)
{
    struct fixture *f = *state;
    char *r = do_request(f->port, "PUT", "/json", NULL, "");
    assert_int_equal(status_of(r), 201);
    assert_string_equal(body_of(r), "{\"id\":\"f1\"}");
    free(r);
    r = do_request(f->port, "GET", "/silent", NULL, NULL);
    assert_int_equal(status_of(r), 500);
    free(r);
}

static bool eof_within(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, ms) != 1)
        return false;
    char c[256];
    return recv(fd, c, sizeof c, MSG_DONTWAIT) <= 0;
}

/* A request answered later: nothing comes back until its answer is given (from another
 * connection's request here, a Kafka delivery report in ndd-ingress), and the request
 * pipelined behind it is not read before: the answers come in order, the later one with the
 * header added to it. */
static void test_a_later_answer_comes_after_the_handler_and_before_the_next_request(void **state)
{
    struct fixture *f = *state;
    int fd = connect_port(f->port);
    const char two[] = "POST /later HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\none"
                       "GET /any HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    send_all(fd, two, sizeof two - 1);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 300), 0); /* no answer yet, neither for the second request */
    char *r = do_request(f->port, "GET", "/release", NULL, NULL);
    assert_int_equal(status_of(r), 200);
    assert_string_equal(body_of(r), "released=1");
    free(r);
    r = recv_all(fd);
    close(fd);
    assert_int_equal(status_of(r), 202);
    assert_non_null(strstr(r, "Retry-After: 1\r\n"));
    const char *second = strstr(r, "later:one");
    assert_non_null(second);
    assert_int_equal(status_of(second + 9), 200);
    assert_non_null(strstr(second, "path=/any"));
    free(r);
}

/* A client that leaves before its later answer: the answer is dropped, the server goes on. */
static void test_a_later_answer_to_a_client_gone_is_dropped(void **state)
{
    struct fixture *f = *state;
    int fd = connect_port(f->port);
    const char one[] = "POST /later HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\ntwo";
    send_all(fd, one, sizeof one - 1);
    usleep(100 * 1000);
    close(fd);
    usleep(100 * 1000);
    char *r = do_request(f->port, "GET", "/release", NULL, NULL);
    assert_int_equal(status_of(r), 200);
    assert_string_equal(body_of(r), "released=1");
    free(r);
    r = do_request(f->port, "GET", "/healthz", NULL, NULL);
    assert_int_equal(status_of(r), 200);
    free(r);
}

/* With max_connections = 4: four idle connections hold every slot; a fifth is served at once,
 * and the connection that waited longest without a request (the first) is closed for it. */
static void test_at_the_cap_a_new_connection_evicts_the_longest_waiting_one(void **state)
{
    struct fixture *f = *state;
    int idle[4];
    httpd_t *h = httpd_thread_server(f->t);
    for (int i = 0; i < 4; i++) {
        idle[i] = connect_port(f->port);
        for (int k = 0; k < 500 && httpd_connections(h) < (size_t)i + 1; k++)
            usleep(10 * 1000); /* accepted in this order */
        usleep(20 * 1000);
    }
    assert_int_equal(httpd_connections(h), 4);
    char *r = do_request(f->port, "GET", "/healthz", NULL, NULL);
    assert_int_equal(status_of(r), 200);
    free(r);
    assert_true(eof_within(idle[0], 2000));
    for (int i = 1; i < 4; i++)
        assert_false(eof_within(idle[i], 0));
    for (int i = 0; i < 4; i++)
        close(idle[i]);
}

/* header_timeout_s = 1: a byte every 200 ms does not keep a request alive; the connection is
 * closed one second after the request's first byte. */
static void test_a_connection_that_trickles_its_header_is_closed_at_the_deadline(void **state)
{
    void *fx = NULL;
    httpd_options_t o = {.port = 0, .header_timeout_s = 1};
    assert_int_equal(start_server(&fx, &o), 0);
    struct fixture *f = fx;
    int fd = connect_port(f->port);
    const char *start = "GET /healthz HTTP/1.1\r\nX-Slow: ";
    send_all(fd, start, strlen(start));
    int64_t t0 = mono_now_ms();
    bool closed = false;
    while (mono_now_ms() - t0 < 4000) {
        if (eof_within(fd, 200)) {
            closed = true;
            break;
        }
        send(fd, "a", 1, MSG_NOSIGNAL);
    }
    int64_t took = mono_now_ms() - t0;
    assert_true(closed);
    if (took < 900 || took > 3000) /* 1 s, with room for a loaded machine */
        fail_msg("closed after %lld ms, want about 1000", (long long)took);
    close(fd);
    teardown(&fx);
}

/* A body is allowed header_timeout_s plus 1 s per 64 KiB: a 100-byte body trickled a byte
 * per 100 ms (10 s in all) is cut at about 1 s after its header. */
static void test_a_body_that_trickles_is_closed_at_its_deadline(void **state)
{
    void *fx = NULL;
    httpd_options_t o = {.port = 0, .header_timeout_s = 1, .max_body_bytes = 1024};
    assert_int_equal(start_server(&fx, &o), 0);
    struct fixture *f = fx;
    int fd = connect_port(f->port);
    const char *hdr = "POST /api/v1/feeds HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n";
    send_all(fd, hdr, strlen(hdr));
    int64_t t0 = mono_now_ms();
    bool closed = false;
    while (mono_now_ms() - t0 < 5000) {
        if (eof_within(fd, 100)) {
            closed = true;
            break;
        }
        send(fd, "b", 1, MSG_NOSIGNAL);
    }
    assert_true(closed);
    assert_true(mono_now_ms() - t0 < 4000); /* about 1 s; the trickle alone would last 10 s */
    close(fd);
    teardown(&fx);
}

static void raise_nofile(rlim_t want)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want) {
        rl.rlim_cur = want < rl.rlim_max ? want : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* Connects without waiting (the server may be evicting while we connect). */
static int connect_nb(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The daemons' defaults (256 connections): 300 connections from 127.0.0.1, each with a
 * partial header and a byte every 500 ms, reopened when the server closes them, for 6 s;
 * meanwhile /healthz from the same address answers every time within 1 s. */
static void test_slowloris_of_300_connections_leaves_healthz_answering_within_1s(void **state)
{
    enum { N = 300 };
    raise_nofile(2048);
    void *fx = NULL;
    httpd_options_t o = {.port = 0};
    assert_int_equal(start_server(&fx, &o), 0);
    struct fixture *f = fx;
    int fds[N];
    for (int i = 0; i < N; i++)
        fds[i] = -1;
    const char *partial = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-a: ";
    int64_t t0 = mono_now_ms(), next_tick = 0, worst = 0;
    int probes = 0, reopened = 0;
    while (mono_now_ms() - t0 < 6000) {
        int64_t now = mono_now_ms();
        if (now >= next_tick) {
            for (int i = 0; i < N; i++) {
                if (fds[i] >= 0 && send(fds[i], "a", 1, MSG_NOSIGNAL) < 0 && errno != EAGAIN &&
                    errno != ENOTCONN) {
                    close(fds[i]);
                    fds[i] = -1;
                }
                if (fds[i] < 0) {
                    fds[i] = connect_nb(f->port);
                    if (fds[i] >= 0 && now > t0)
                        reopened++;
                } else {
                    char buf[512];
                    if (recv(fds[i], buf, sizeof buf, MSG_DONTWAIT) == 0) {
                        close(fds[i]);
                        fds[i] = -1;
                        continue;
                    }
                }
                if (fds[i] >= 0)
                    send(fds[i], partial, strlen(partial), MSG_NOSIGNAL);
            }
            next_tick = now + 500;
        }
        int64_t p0 = mono_now_ms();
        char *r = do_request(f->port, "GET", "/healthz", NULL, NULL);
        int64_t took = mono_now_ms() - p0;
        if (status_of(r) != 200)
            fail_msg("probe %d: %.100s", probes, r);
        free(r);
        if (took > worst)
            worst = took;
        probes++;
        usleep(200 * 1000);
    }
    for (int i = 0; i < N; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    fprintf(stderr, "slowloris: %d probes, slowest %lld ms, %d connections reopened\n", probes,
            (long long)worst, reopened);
    assert_true(probes >= 10);
    assert_true(worst < 1000);
    teardown(&fx);
}

/* A probe's connection is idle from its accept until its one-packet request arrives; a burst
 * of slow connections admitted before the server has read any of them must not evict it in
 * that window. Cap 2: the probe connects (nothing sent yet), a slow client connects and sends
 * a partial header, a third connection comes: the slow one is closed, not the probe, which
 * then sends its request and gets 200. Repeated 30 times, so that the burst is often admitted
 * before the slow client's bytes are read. */
static void test_a_new_connection_awaiting_its_request_outlives_unread_slow_ones(void **state)
{
    (void)state;
    void *fx = NULL;
    httpd_options_t o = {.port = 0, .max_connections = 2, .max_per_client = 2};
    assert_int_equal(start_server(&fx, &o), 0);
    struct fixture *f = fx;
    httpd_t *h = httpd_thread_server(f->t);
    const char *partial = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    const char *req = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    for (int round = 0; round < 30; round++) {
        int probe = connect_port(f->port);
        for (int k = 0; k < 500 && httpd_connections(h) < 1; k++)
            usleep(1000);
        int slow = connect_port(f->port);
        send_all(slow, partial, strlen(partial));
        int next = connect_port(f->port);
        send_all(next, partial, strlen(partial));
        assert_true(eof_within(slow, 2000));
        send_all(probe, req, strlen(req));
        char buf[512];
        ssize_t n = 0;
        struct pollfd pf = {.fd = probe, .events = POLLIN};
        if (poll(&pf, 1, 2000) == 1)
            n = recv(probe, buf, sizeof buf - 1, 0);
        buf[n > 0 ? n : 0] = '\0';
        if (strncmp(buf, "HTTP/1.1 200", 12) != 0)
            fail_msg("round %d: the probe got '%.60s' instead of 200", round, buf);
        close(probe);
        close(slow);
        close(next);
        for (int k = 0; k < 2000 && httpd_connections(h) > 0; k++)
            usleep(1000);
    }
    teardown(&fx);
}

/* max_connections = 2, both in service (32 MiB replies their clients do not read): nothing can
 * be evicted, so a third connection comes from the probe reserve: /healthz answers (and the
 * connection is closed after it), anything else is 503 with the JSON error body. */
static void test_probe_reserve_answers_healthz_when_every_slot_is_in_service(void **state)
{
    void *fx = NULL;
    httpd_options_t o = {.port = 0, .max_connections = 2, .max_per_client = 2};
    assert_int_equal(start_server(&fx, &o), 0);
    struct fixture *f = fx;
    httpd_t *h = httpd_thread_server(f->t);
    int busy[2];
    const char *get_big = "GET /big HTTP/1.1\r\nHost: x\r\n\r\n";
    for (int i = 0; i < 2; i++) {
        busy[i] = connect_port(f->port);
        int rcv = 4096;
        setsockopt(busy[i], SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
        send_all(busy[i], get_big, strlen(get_big));
    }
    for (int k = 0; k < 500 && httpd_connections(h) < 2; k++)
        usleep(10 * 1000);
    for (int i = 0; i < 2; i++) { /* both replies started: their first bytes are here */
        struct pollfd pf = {.fd = busy[i], .events = POLLIN};
        assert_int_equal(poll(&pf, 1, 10000), 1);
    }
    int64_t t0 = mono_now_ms();
    char *r = do_request(f->port, "GET", "/healthz", NULL, NULL);
    assert_int_equal(status_of(r), 200);
    assert_true(mono_now_ms() - t0 < 1000);
    free(r);
    r = do_request(f->port, "GET", "/api/v1/feeds", NULL, NULL);
    assert_int_equal(status_of(r), 503);
    assert_non_null(strstr(r, "Content-Type: application/json\r\n"));
    assert_non_null(strstr(body_of(r), "only /healthz and /readyz"));
    free(r);
    for (int i = 0; i < 2; i++)
        close(busy[i]);
    teardown(&fx);
}

static void test_oversized_headers_are_refused(void **state)
{
    struct fixture *f = *state;
    size_t n = 20 * 1024; /* past the 16 KiB default */
    char *hdr = malloc(n + 16);
    memcpy(hdr, "X-Big: ", 7);
    memset(hdr + 7, 'h', n);
    memcpy(hdr + 7 + n, "\r\n", 3);
    char *r = do_request(f->port, "GET", "/healthz", hdr, NULL);
    /* refused: either a 4xx, or (when the close resets the unread request) no answer */
    int st = r[0] ? status_of(r) : 0;
    if (!(st == 0 || (st >= 400 && st < 500)))
        fprintf(stderr, "oversized headers got: %.300s\n", r);
    assert_true(st == 0 || (st >= 400 && st < 500));
    free(r);
    free(hdr);
    r = do_request(f->port, "GET", "/healthz", NULL, NULL);
    assert_int_equal(status_of(r), 200);
    free(r);
}

/* request_timeout_s = 1: a connection that sends nothing is closed by the server. */
static void test_idle_connection_is_closed_after_request_timeout(void **state)
{
    void *fx = NULL;
    httpd_options_t o = {.port = 0, .request_timeout_s = 1};
    assert_int_equal(start_server(&fx, &o), 0);
    struct fixture *f = fx;
    int fd = connect_port(f->port);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 5000), 1); /* readable = EOF from the server */
    char c;
    assert_true(recv(fd, &c, 1, 0) <= 0);
    close(fd);
    teardown(&fx);
}

static void test_bind_conflict_names_address_and_port(void **state)
{
    struct fixture *f = *state;
    struct event_base *base = event_base_new();
    char err[256];
    httpd_t *h = httpd_new(base, "127.0.0.1", f->port, err, sizeof err);
    assert_null(h);
    char want[64];
    snprintf(want, sizeof want, "127.0.0.1 port %u", f->port);
    assert_non_null(strstr(err, want));
    event_base_free(base);
}

/* ---- TLS ---- */

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
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    assert_int_equal(SSL_CTX_use_certificate(ctx, x), 1);
    assert_int_equal(SSL_CTX_use_PrivateKey(ctx, pkey), 1);
    X509_free(x);
    EVP_PKEY_free(pkey);
    return ctx;
}

static void test_tls_listener_serves_healthz_over_tls(void **state)
{
    SSL_CTX *sctx = self_signed_ctx();
    httpd_options_t o = {.port = 0, .ssl_ctx = sctx};
    void *fx = NULL;
    assert_int_equal(start_server(&fx, &o), 0);
    struct fixture *f = fx;

    SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(cctx, SSL_VERIFY_NONE, NULL); /* self-signed test certificate */
    int fd = connect_port(f->port);
    SSL *ssl = SSL_new(cctx);
    SSL_set_fd(ssl, fd);
    assert_int_equal(SSL_connect(ssl), 1);
    const char *req = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    assert_int_equal(SSL_write(ssl, req, (int)strlen(req)), (int)strlen(req));
    char resp[2048];
    int len = 0, n;
    while ((n = SSL_read(ssl, resp + len, (int)sizeof resp - 1 - len)) > 0)
        len += n;
    resp[len] = '\0';
    assert_int_equal(status_of(resp), 200);
    assert_string_equal(body_of(resp), "ok\n");
    SSL_free(ssl);
    close(fd);
    SSL_CTX_free(cctx);

    /* a plain-text client gets no HTTP answer from a TLS listener */
    char *r = do_request(f->port, "GET", "/healthz", NULL, NULL);
    assert_int_not_equal(status_of(r), 200);
    free(r);
    teardown(&fx);
    SSL_CTX_free(sctx);
}

int main(void)
{
    log_setup("test_httpd", getenv("NDD_TEST_LOG") ? LOG_LEVEL_DEBUG : LOG_LEVEL_OFF, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_healthz_answers_200_while_loop_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_readyz_is_503_with_reason_until_set_ready, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_metrics_serves_registry_as_text_0_0_4, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_head_gets_headers_without_a_body, setup, teardown),
        cmocka_unit_test_setup_teardown(test_builtin_routes_refuse_other_methods_with_405, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_unknown_path_is_404_with_json_body, setup, teardown),
        cmocka_unit_test_setup_teardown(test_known_path_with_wrong_method_is_405_with_allow, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_longest_pattern_wins_and_a_prefix_matches_below_it,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_post_body_reaches_handler, setup, teardown),
        cmocka_unit_test_setup_teardown(test_body_over_limit_is_413, setup, teardown),
        cmocka_unit_test_setup_teardown(test_jansson_reply_and_missing_reply, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_later_answer_comes_after_the_handler_and_before_the_next_request, setup,
            teardown),
        cmocka_unit_test_setup_teardown(test_a_later_answer_to_a_client_gone_is_dropped, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_handlers_html_page_is_not_rewritten, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_at_the_cap_a_new_connection_evicts_the_longest_waiting_one, setup, teardown),
        cmocka_unit_test(test_a_connection_that_trickles_its_header_is_closed_at_the_deadline),
        cmocka_unit_test(test_a_body_that_trickles_is_closed_at_its_deadline),
        cmocka_unit_test(test_slowloris_of_300_connections_leaves_healthz_answering_within_1s),
        cmocka_unit_test(test_probe_reserve_answers_healthz_when_every_slot_is_in_service),
        cmocka_unit_test(test_a_new_connection_awaiting_its_request_outlives_unread_slow_ones),
        cmocka_unit_test_setup_teardown(test_oversized_headers_are_refused, setup, teardown),
        cmocka_unit_test(test_idle_connection_is_closed_after_request_timeout),
        cmocka_unit_test_setup_teardown(test_bind_conflict_names_address_and_port, setup, teardown),
        cmocka_unit_test(test_tls_listener_serves_healthz_over_tls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
