/* The HTTP/2 transport against nghttpd (Debian nghttp2-server), a server that is not NDD code:
 * h2c prior knowledge and TLS with ALPN h2, many concurrent streams, non-2xx statuses, an
 * unknown CA, connection refused, request timeouts and the server dying mid-flight. */
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cmocka.h>
#include <event2/event.h>
#include <event2/util.h>

#include "adapter_testutil.h"
#include "log.h"
#include "tls.h"
#include "tls_testutil.h"
#include "transport.h"

#define NREQ 300

typedef struct ctx {
    struct event_base *base;
    transport_t *t;
    int acked, failed, failed_retryable, last_status, ups, downs;
    char last_reason[400];
    char down_reason[400];
    uint8_t payload[3400];
    int to_send, sent;
    unsigned window;          /* max_in_flight, when a test watches how the window refills */
    bool window_full;         /* the window has been full once */
    int smallest_refill;      /* fewest requests a pump sent while it still had more to send */
    struct timeval last_wake; /* the loop's cached time at the last ack: one per wake-up */
    int wakes_full;           /* wake-ups that brought acks after the window was full */
    int acks_full;            /* acks those wake-ups brought */
    int wakes_all;            /* wake-ups that brought acks */
} ctx_t;

static void on_ack(void *o, void *cookie, int status)
{
    ctx_t *c = o;
    c->acked++;
    c->last_status = status;
    /* libevent caches the time once per loop turn: a new value is a new wake-up. */
    struct timeval now;
    event_base_gettimeofday_cached(c->base, &now);
    bool new_wake = now.tv_sec != c->last_wake.tv_sec || now.tv_usec != c->last_wake.tv_usec;
    c->last_wake = now;
    c->wakes_all += new_wake;
    if (c->window_full) {
        c->wakes_full += new_wake;
        c->acks_full++;
    }
}

static void on_fail(void *o, void *cookie, const transport_failure_t *f)
{
    ctx_t *c = o;
    c->failed++;
    if (f->retryable)
        c->failed_retryable++;
    c->last_status = f->status;
    snprintf(c->last_reason, sizeof c->last_reason, "%s", f->reason);
}

static void pump(ctx_t *c)
{
    int before = c->sent;
    while (c->sent < c->to_send && transport_send(c->t, c->payload, sizeof c->payload,
                                                  (void *)(intptr_t)(c->sent + 1)) == 0)
        c->sent++;
    int n = c->sent - before;
    /* A refill stopped by the window (not by running out of requests) after it was full. */
    if (c->window_full && n > 0 && c->sent < c->to_send &&
        (c->smallest_refill == 0 || n < c->smallest_refill))
        c->smallest_refill = n;
    if (c->window && transport_in_flight(c->t) >= c->window)
        c->window_full = true;
}

static void on_up(void *o)
{
    ctx_t *c = o;
    c->ups++;
    pump(c);
}

static void on_down(void *o, const char *reason)
{
    ctx_t *c = o;
    c->downs++;
    snprintf(c->down_reason, sizeof c->down_reason, "%s", reason);
}

static void on_writable(void *o)
{
    pump(o);
}

static const transport_events_t EV = {on_ack, on_fail, on_up, on_down, on_writable};

static bool all_done(void *a)
{
    ctx_t *c = a;
    return c->acked + c->failed >= c->to_send;
}
static bool is_down(void *a)
{
    return ((ctx_t *)a)->downs > 0;
}

static tls_testutil_pki_t pki;
static char logdir[600];

static int setup_all(void **state)
{
    log_setup("test_transport_h2", LOG_LEVEL_WARN, 0);
    signal(SIGPIPE, SIG_IGN);
    if (tls_testutil_make_pki(&pki) != 0)
        return -1;
    snprintf(logdir, sizeof logdir, "%s/nghttpd.log", pki.dir);
    return 0;
}

static int teardown_all(void **state)
{
    tls_testutil_remove_pki(&pki);
    atu_remove_tree(pki.dir); /* server logs written next to the certificates */
    return 0;
}

static pid_t start_nghttpd(int port, const char *key, const char *cert)
{
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    pid_t pid;
    if (key) {
        char *argv[] = {"nghttpd", "--echo-upload", "-d",         pki.dir, "-a", "127.0.0.1",
                        ps,        (char *)key,     (char *)cert, NULL};
        pid = atu_spawn(argv, logdir);
    } else {
        char *argv[] = {"nghttpd", "--echo-upload", "--no-tls", "-d", pki.dir,
                        "-a",      "127.0.0.1",     ps,         NULL};
        pid = atu_spawn(argv, logdir);
    }
    assert_true(pid > 0);
    if (!atu_wait_port(port, 5000))
        fail_msg("nghttpd did not listen on %d (see %s)", port, logdir);
    return pid;
}

static void make(ctx_t *c, const char *url, SSL_CTX *ssl, unsigned max_in_flight,
                 uint32_t timeout_ms, const char *method)
{
    static transport_url_t u;
    char err[256];
    assert_int_equal(transport_url_parse(url, &u, err, sizeof err), 0);
    transport_config_t cfg = {.kind = u.kind,
                              .feed = "test",
                              .endpoint = url,
                              .host = u.host,
                              .port = u.port,
                              .use_tls = u.tls,
                              .ssl_ctx = ssl,
                              .max_in_flight = max_in_flight,
                              .timeout_ms = timeout_ms,
                              .out_buf_max = 64 * 1024,
                              .path = u.path,
                              .method = method,
                              .content_type = "application/json",
                              .n_headers = 1,
                              .headers = {{"x-ndd-feed", "test"}}};
    /* A precise clock: the loop's cached time then tells one wake-up from the next (the
     * default coarse clock ticks every few milliseconds). */
    struct event_config *ec = event_config_new();
    assert_non_null(ec);
    event_config_set_flag(ec, EVENT_BASE_FLAG_PRECISE_TIMER);
    c->base = event_base_new_with_config(ec);
    event_config_free(ec);
    assert_non_null(c->base);
    for (size_t i = 0; i < sizeof c->payload; i++)
        c->payload[i] = (uint8_t)('a' + i % 26);
    c->t = transport_desc_http2.ops->create(c->base, &cfg, &EV, c, err, sizeof err);
    assert_non_null(c->t);
}

static void unmake(ctx_t *c)
{
    transport_destroy(c->t);
    event_base_free(c->base);
}

/* NREQ requests over h2c to a fresh nghttpd with max_in_flight streams, every one acked; the
 * server's pid for the caller to stop once it has looked at c. */
static pid_t h2c_deliver_all(ctx_t *c, unsigned max_in_flight)
{
    int port = atu_free_port(27100, 27999);
    pid_t srv = start_nghttpd(port, NULL, NULL);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/ingest", port);
    make(c, url, NULL, max_in_flight, 5000, "POST");
    c->to_send = NREQ;
    transport_connect(c->t);
    assert_true(atu_run_until(c->base, all_done, c, 20000));
    assert_int_equal(c->acked, NREQ);
    assert_int_equal(c->failed, 0);
    return srv;
}

static void test_h2c_delivers_every_request_with_concurrent_streams(void **state)
{
    ctx_t c = {0};
    pid_t srv = h2c_deliver_all(&c, 64);
    assert_int_equal(c.last_status, 200);
    assert_int_equal(c.ups, 1);
    assert_int_equal(transport_in_flight(c.t), 0);
    unmake(&c);
    atu_stop(srv, SIGTERM);
}

/* A full window of streams is refilled a quarter at a time, not one stream per answer: at
 * full rate, one stream per answer means a write and a wake-up of both sides per copy. */
static void test_h2_full_window_refills_a_quarter_at_a_time(void **state)
{
    ctx_t c = {.window = 16};
    pid_t srv = h2c_deliver_all(&c, c.window);
    assert_true(c.window_full);
    if (c.smallest_refill < 4)
        fail_msg("a full window of 16 was refilled with %d stream(s), want at least 4",
                 c.smallest_refill);
    assert_int_equal(transport_in_flight(c.t), 0);
    unmake(&c);
    atu_stop(srv, SIGTERM);
}

/* ---- a minimal HTTP/2 peer: the smallest answers there are, one write each ----
 * nghttpd answers with its headers and an echo of the body; this peer answers a request with
 * one 10-byte HEADERS frame (:status 200, END_STREAM), written on its own after gap_us, and can
 * leave every skip_every-th stream unanswered, so a test sees how the client reads a trickle
 * of answers and that streams which never answer hold back nobody's. */
typedef struct tiny_peer {
    int lfd, port;
    unsigned skip_every;
    int gap_us;
    volatile int stop;
    pthread_t th;
} tiny_peer_t;

static int tp_write(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void tp_frame(uint8_t *f, uint32_t len, uint8_t type, uint8_t flags, uint32_t sid)
{
    f[0] = (uint8_t)(len >> 16);
    f[1] = (uint8_t)(len >> 8);
    f[2] = (uint8_t)len;
    f[3] = type;
    f[4] = flags;
    f[5] = (uint8_t)(sid >> 24);
    f[6] = (uint8_t)(sid >> 16);
    f[7] = (uint8_t)(sid >> 8);
    f[8] = (uint8_t)sid;
}

/* One client connection until it closes: frames parsed just enough to see requests end. */
static void tp_serve(tiny_peer_t *tp, int fd)
{
    /* SETTINGS (initial stream window 16 MiB) and a connection window of 1 GiB: the client's
     * bodies never wait for flow control. */
    uint8_t hello[9 + 6 + 9 + 4];
    tp_frame(hello, 6, 0x4, 0, 0);
    memcpy(hello + 9, "\x00\x04\x01\x00\x00\x00", 6);
    tp_frame(hello + 15, 4, 0x8, 0, 0);
    memcpy(hello + 24, "\x40\x00\x00\x00", 4);
    if (tp_write(fd, hello, sizeof hello) != 0)
        return;
    static uint8_t in[1 << 17];
    size_t have = 0;
    bool preface = false;
    while (!tp->stop) {
        struct pollfd pf = {fd, POLLIN, 0};
        if (poll(&pf, 1, 50) <= 0)
            continue;
        ssize_t r = read(fd, in + have, sizeof in - have);
        if (r <= 0)
            return;
        have += (size_t)r;
        size_t off = 0;
        if (!preface) {
            if (have < 24)
                continue;
            off = 24;
            preface = true;
        }
        while (have - off >= 9) {
            const uint8_t *f = in + off;
            uint32_t len = (uint32_t)f[0] << 16 | (uint32_t)f[1] << 8 | f[2];
            if (have - off < 9 + len)
                break;
            uint8_t type = f[3], flags = f[4];
            uint32_t sid =
                ((uint32_t)f[5] << 24 | (uint32_t)f[6] << 16 | (uint32_t)f[7] << 8 | f[8]) &
                0x7fffffffu;
            off += 9 + len;
            if (type == 0x4 && !(flags & 0x1)) { /* SETTINGS: acknowledge */
                uint8_t ack[9];
                tp_frame(ack, 0, 0x4, 0x1, 0);
                if (tp_write(fd, ack, 9) != 0)
                    return;
            }
            if ((type != 0x0 && type != 0x1) || !(flags & 0x1)) /* DATA or HEADERS, END_STREAM */
                continue;
            if (tp->skip_every && ((sid - 1) / 2 + 1) % tp->skip_every == 0)
                continue;
            if (tp->gap_us)
                usleep((useconds_t)tp->gap_us);
            uint8_t ans[10];
            tp_frame(ans, 1, 0x1, 0x5, sid); /* HEADERS, END_STREAM | END_HEADERS */
            ans[9] = 0x88;                   /* :status 200, static table index 8 */
            if (tp_write(fd, ans, sizeof ans) != 0)
                return;
        }
        memmove(in, in + off, have - off);
        have -= off;
    }
}

static void *tp_main(void *arg)
{
    tiny_peer_t *tp = arg;
    while (!tp->stop) {
        struct pollfd pf = {tp->lfd, POLLIN, 0};
        if (poll(&pf, 1, 100) <= 0)
            continue;
        int fd = accept(tp->lfd, NULL, NULL);
        if (fd < 0)
            continue;
        int one = 1; /* each answer its own segment, as the gap means, not coalesced by Nagle */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        tp_serve(tp, fd);
        close(fd);
    }
    return NULL;
}

static void tiny_peer_start(tiny_peer_t *tp)
{
    tp->port = atu_free_port(27100, 27999);
    tp->lfd = atu_listen_loopback(tp->port);
    assert_true(tp->lfd >= 0);
    assert_int_equal(pthread_create(&tp->th, NULL, tp_main, tp), 0);
}

static void tiny_peer_stop(tiny_peer_t *tp)
{
    tp->stop = 1;
    pthread_join(tp->th, NULL);
    close(tp->lfd);
}

/* n requests through a window of c->window streams to the tiny peer, until each is
 * reported; the peer is stopped. */
static void tiny_deliver(ctx_t *c, tiny_peer_t *tp, uint32_t timeout_ms, int n)
{
    tiny_peer_start(tp);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/ingest", tp->port);
    make(c, url, NULL, c->window, timeout_ms, "POST");
    c->to_send = n;
    transport_connect(c->t);
    assert_true(atu_run_until(c->base, all_done, c, 20000));
    tiny_peer_stop(tp);
}

/* With the window full, answers that trickle in one write at a time are read a quarter of
 * the window at a time (the socket's receive low-water mark), not one wake-up each: at full
 * rate a wake-up per handful of answers was a tenth of the feed thread's CPU. */
static void test_h2_full_window_reads_trickled_answers_a_quarter_at_a_time(void **state)
{
    tiny_peer_t tp = {.gap_us = 300};
    ctx_t c = {.window = 16};
    tiny_deliver(&c, &tp, 5000, 200);
    assert_int_equal(c.acked, 200);
    assert_int_equal(c.failed, 0);
    assert_true(c.window_full);
    assert_true(c.wakes_full > 0);
    double per_wake = (double)c.acks_full / c.wakes_full;
    if (per_wake < 3.0)
        fail_msg("%d answers after the window filled came in %d wake-ups (%.1f each), want >= 3",
                 c.acks_full, c.wakes_full, per_wake);
    assert_int_equal(transport_in_flight(c.t), 0);
    unmake(&c);
}

/* Below a full window, the answers to a batch of requests are read together too (the mark
 * asks for every open stream's answer, the tick bounds the wait): an endpoint answering one
 * write at a time no longer wakes the feed once per answer. */
static void test_h2_answers_below_a_full_window_are_read_together(void **state)
{
    tiny_peer_t tp = {.gap_us = 300};
    ctx_t c = {.window = 64};
    tiny_deliver(&c, &tp, 5000, 40);
    assert_int_equal(c.acked, 40);
    assert_int_equal(c.failed, 0);
    assert_false(c.window_full);
    double per_wake = (double)c.acked / c.wakes_all;
    if (per_wake < 3.0)
        fail_msg("40 answers came in %d wake-ups (%.1f each), want >= 3", c.wakes_all, per_wake);
    unmake(&c);
}

/* Streams that are never answered end on their timers; the others' answers, however few
 * bytes they are, are still read in time (the low-water mark is bounded in time as well as
 * by what the open streams owe): before that bound, some answered streams timed out too. */
static void test_h2_unanswered_streams_do_not_hold_back_other_answers(void **state)
{
    tiny_peer_t tp = {.skip_every = 4};
    ctx_t c = {.window = 16};
    tiny_deliver(&c, &tp, 300, 64);
    assert_int_equal(c.acked, 48);
    assert_int_equal(c.failed, 16);
    assert_int_equal(c.failed_retryable, 16);
    assert_non_null(strstr(c.last_reason, "timeout"));
    unmake(&c);
}

static void test_h2_tls_alpn_delivers_every_request(void **state)
{
    int port = atu_free_port(27100, 27999);
    pid_t srv = start_nghttpd(port, pki.server_key, pki.server_cert);
    char err[256], url[128];
    tls_config_t tc = {.ca_file = pki.ca_cert, .alpn = "h2"};
    SSL_CTX *ssl = tls_client_ctx_new(&tc, err, sizeof err);
    assert_non_null(ssl);
    snprintf(url, sizeof url, "https://127.0.0.1:%d/ingest", port);
    ctx_t c = {0};
    make(&c, url, ssl, 64, 5000, "POST");
    c.to_send = NREQ;
    transport_connect(c.t);
    assert_true(atu_run_until(c.base, all_done, &c, 20000));
    assert_int_equal(c.acked, NREQ);
    assert_int_equal(c.failed, 0);
    unmake(&c);
    tls_ctx_free(ssl);
    atu_stop(srv, SIGTERM);
}

static void test_h2_tls_unknown_ca_is_refused_with_clear_error(void **state)
{
    int port = atu_free_port(27100, 27999);
    pid_t srv = start_nghttpd(port, pki.other_server_key, pki.other_server_cert);
    char err[256], url[128];
    tls_config_t tc = {.ca_file = pki.ca_cert, .alpn = "h2"};
    SSL_CTX *ssl = tls_client_ctx_new(&tc, err, sizeof err);
    assert_non_null(ssl);
    snprintf(url, sizeof url, "https://127.0.0.1:%d/ingest", port);
    ctx_t c = {0};
    make(&c, url, ssl, 8, 5000, "POST");
    c.to_send = 1;
    transport_connect(c.t);
    assert_true(atu_run_until(c.base, is_down, &c, 10000));
    assert_int_equal(c.ups, 0);
    assert_int_equal(c.sent, 0);
    if (!strstr(c.down_reason, "certificate verify failed"))
        fail_msg("unexpected reason: %s", c.down_reason);
    assert_non_null(strstr(c.down_reason, url));
    unmake(&c);
    tls_ctx_free(ssl);
    atu_stop(srv, SIGTERM);
}

static void test_h2_non_2xx_status_fails_not_retryable_with_body_excerpt(void **state)
{
    int port = atu_free_port(27100, 27999);
    pid_t srv = start_nghttpd(port, NULL, NULL);
    char url[128];
    /* nghttpd answers 404 for a PATCH of a file that does not exist. */
    snprintf(url, sizeof url, "http://127.0.0.1:%d/no-such-file", port);
    ctx_t c = {0};
    make(&c, url, NULL, 8, 5000, "PATCH");
    c.to_send = 5;
    transport_connect(c.t);
    assert_true(atu_run_until(c.base, all_done, &c, 10000));
    assert_int_equal(c.failed, 5);
    assert_int_equal(c.failed_retryable, 0);
    assert_int_equal(c.last_status, 404);
    assert_non_null(strstr(c.last_reason, "HTTP 404"));
    unmake(&c);
    atu_stop(srv, SIGTERM);
}

static void test_h2_connection_refused_reports_down(void **state)
{
    int port = atu_free_port(27100, 27999);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", port);
    ctx_t c = {0};
    make(&c, url, NULL, 8, 1000, "POST");
    c.to_send = 1;
    transport_connect(c.t);
    assert_true(atu_run_until(c.base, is_down, &c, 5000));
    assert_false(transport_is_up(c.t));
    assert_int_equal(transport_capacity(c.t), 0);
    assert_non_null(strstr(c.down_reason, "connect"));
    unmake(&c);
}

static void test_h2_silent_server_times_out_requests_as_retryable(void **state)
{
    /* A listening socket that never answers: TCP connects, HTTP/2 never replies. */
    int port = atu_free_port(27100, 27999);
    int lfd = atu_listen_loopback(port);
    assert_true(lfd >= 0);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", port);
    ctx_t c = {0};
    make(&c, url, NULL, 8, 300, "POST");
    c.to_send = 3;
    transport_connect(c.t);
    uint64_t t0 = atu_now_ms();
    assert_true(atu_run_until(c.base, all_done, &c, 5000));
    assert_int_equal(c.failed_retryable, 3);
    assert_non_null(strstr(c.last_reason, "timeout"));
    assert_true(atu_now_ms() - t0 >= 250);
    unmake(&c);
    close(lfd);
}

static void test_h2_server_killed_fails_in_flight_as_retryable_and_goes_down(void **state)
{
    int port = atu_free_port(27100, 27999);
    pid_t srv = start_nghttpd(port, NULL, NULL);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/ingest", port);
    ctx_t c = {0};
    make(&c, url, NULL, 64, 5000, "POST");
    c.to_send = 50;
    transport_connect(c.t);
    assert_true(atu_run_until(c.base, all_done, &c, 10000));
    assert_int_equal(c.acked, 50);
    atu_stop(srv, SIGKILL);
    assert_true(atu_run_until(c.base, is_down, &c, 5000));
    assert_false(transport_is_up(c.t));
    assert_int_equal(transport_in_flight(c.t), 0);
    unmake(&c);
}

static void test_h2_connection_stays_up_without_spurious_reconnects(void **state)
{
    int port = atu_free_port(27100, 27999);
    atu_srv_t *srv = atu_srv_start(ATU_SRV_H2, port, NULL);
    assert_non_null(srv);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/in", port);
    ctx_t c = {0};
    make(&c, url, NULL, 16, 5000, "POST");
    /* A JSON envelope with a seq, as the recorder expects. */
    int n = snprintf((char *)c.payload, sizeof c.payload, "{\"metadata\":{\"seq\":7},\"pad\":\"");
    memset(c.payload + n, 'x', sizeof c.payload - (size_t)n - 2);
    memcpy(c.payload + sizeof c.payload - 2, "\"}", 2);
    c.to_send = 2000;
    transport_connect(c.t);
    uint64_t t0 = atu_now_ms();
    assert_true(atu_run_until(c.base, all_done, &c, 10000));
    fprintf(stderr, "2000 requests in %llu ms\n", (unsigned long long)(atu_now_ms() - t0));
    assert_int_equal(c.acked, 2000);
    assert_int_equal(c.ups, 1);
    if (c.downs)
        fail_msg("spurious down: %s", c.down_reason);
    assert_true(atu_srv_has(srv, 7));
    /* Stopping the endpoint closes the connection; it can listen again on the same port. */
    atu_srv_stop(srv);
    assert_true(atu_run_until(c.base, is_down, &c, 5000));
    srv = atu_srv_start(ATU_SRV_H2, port, NULL);
    assert_non_null(srv);
    unmake(&c);
    atu_srv_stop(srv);
}

static void test_url_parse_accepts_schemes_and_rejects_garbage(void **state)
{
    transport_url_t u;
    char err[200];
    assert_int_equal(transport_url_parse("https://h.example:8443/a/b?x=1", &u, err, sizeof err), 0);
    assert_ptr_equal(u.kind, &transport_desc_http2);
    assert_true(u.tls);
    assert_string_equal(u.host, "h.example");
    assert_string_equal(u.port, "8443");
    assert_string_equal(u.path, "/a/b?x=1");
    assert_int_equal(transport_url_parse("http://[::1]/", &u, err, sizeof err), 0);
    assert_string_equal(u.host, "::1");
    assert_string_equal(u.port, "80");
    assert_int_equal(transport_url_parse("tls://127.0.0.1:9000", &u, err, sizeof err), 0);
    assert_ptr_equal(u.kind, &transport_desc_tls);
    assert_int_equal(transport_url_parse("tcp://127.0.0.1", &u, err, sizeof err), -1);
    assert_non_null(strstr(err, "port"));
    assert_int_equal(transport_url_parse("ftp://x:1", &u, err, sizeof err), -1);
    assert_int_equal(transport_url_parse("tcp://x:99999", &u, err, sizeof err), -1);
    assert_int_equal(transport_url_parse("tcp://x:1/path", &u, err, sizeof err), -1);
}

/* The reason of a refused URL, which must name `want`. */
static void url_refused(const char *url, const char *want)
{
    transport_url_t u;
    char err[300];
    if (transport_url_parse(url, &u, err, sizeof err) == 0)
        fail_msg("accepted but should be refused: %s", url);
    if (!strstr(err, want))
        fail_msg("%s: reason \"%s\" lacks \"%s\"", url, err, want);
}

/* IPv6 literals (libevent checks their syntax, NDD refuses IPvFuture and zone ids), and every
 * policy check with its reason on top of evhttp_uri_parse's RFC 3986 syntax. */
static void test_url_parse_ipv6_literals_and_bad_syntax(void **state)
{
    transport_url_t u;
    char err[300];
    assert_int_equal(transport_url_parse("https://[2001:db8::7]:8443/in?x=1", &u, err, sizeof err),
                     0);
    assert_string_equal(u.host, "2001:db8::7");
    assert_string_equal(u.port, "8443");
    assert_string_equal(u.path, "/in?x=1");
    assert_int_equal(transport_url_parse("tcp://[::ffff:10.0.0.1]:9000", &u, err, sizeof err), 0);
    assert_string_equal(u.host, "::ffff:10.0.0.1");
    assert_int_equal(transport_url_parse("tls://[::1]:1/", &u, err, sizeof err), 0);
    assert_string_equal(u.path, "");
    assert_int_equal(transport_url_parse("http://h:000080", &u, err, sizeof err), 0);
    assert_string_equal(u.port, "80");
    assert_string_equal(u.path, "/");

    url_refused("http://[::1/", "unterminated or empty IPv6 literal");
    url_refused("http://[]/", "unterminated or empty IPv6 literal");
    url_refused("http://[v1.fe]/", "bad IPv6 literal");
    url_refused("http://[fe80::1%25eth0]/", "bad IPv6 literal");
    url_refused("http://[::1]x/", "unexpected character 'x' after host");
    url_refused("http://[:::1::]/", "bad IPv6 literal");
    url_refused("http://ex!ample/", "unexpected character '!' after host");
    url_refused("http://h%41/", "unexpected character '%' after host");
    url_refused("http://u:p@h/", "user info in URLs is refused");
    url_refused("http://h/a b", "space or control character");
    url_refused("http:/h", "is not a URL");
    url_refused("http://:80/", "missing host");
    url_refused("http://h:/x", "port must be 1..65535");
    url_refused("http://h:0/", "port must be 1..65535");
    url_refused("tcp://h:65536", "port must be 1..65535");
    url_refused("tcp://h:12ab", "port must be 1..65535");
    url_refused("tls://h", "a port is required for tls");
    url_refused("tcp://h:1/x", "a tcp endpoint has no path");
    url_refused("tcp://h:1?x", "a tcp endpoint has no path");
    url_refused("http://h/x#frag", "fragment");
    url_refused("gopher://h/", "unknown scheme \"gopher\" (http, https, tcp, tls, file, kafka)");
    url_refused("http://h/%zz", "not a valid URL");
}

static void test_retry_after_and_retryable_statuses(void **state)
{
    assert_int_equal(transport_parse_retry_after("2", 1), 2000);
    assert_int_equal(transport_parse_retry_after(" 10 ", 4), 10000);
    assert_int_equal(transport_parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 29), 0);
    assert_true(transport_status_retryable(503));
    assert_true(transport_status_retryable(429));
    assert_true(transport_status_retryable(408));
    assert_false(transport_status_retryable(400));
    assert_false(transport_status_retryable(401));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url_parse_accepts_schemes_and_rejects_garbage),
        cmocka_unit_test(test_url_parse_ipv6_literals_and_bad_syntax),
        cmocka_unit_test(test_retry_after_and_retryable_statuses),
        cmocka_unit_test(test_h2c_delivers_every_request_with_concurrent_streams),
        cmocka_unit_test(test_h2_connection_stays_up_without_spurious_reconnects),
        cmocka_unit_test(test_h2_full_window_refills_a_quarter_at_a_time),
        cmocka_unit_test(test_h2_full_window_reads_trickled_answers_a_quarter_at_a_time),
        cmocka_unit_test(test_h2_answers_below_a_full_window_are_read_together),
        cmocka_unit_test(test_h2_unanswered_streams_do_not_hold_back_other_answers),
        cmocka_unit_test(test_h2_tls_alpn_delivers_every_request),
        cmocka_unit_test(test_h2_tls_unknown_ca_is_refused_with_clear_error),
        cmocka_unit_test(test_h2_non_2xx_status_fails_not_retryable_with_body_excerpt),
        cmocka_unit_test(test_h2_connection_refused_reports_down),
        cmocka_unit_test(test_h2_silent_server_times_out_requests_as_retryable),
        cmocka_unit_test(test_h2_server_killed_fails_in_flight_as_retryable_and_goes_down),
    };
    return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
