/* The frame transport (tcp:// and tls://): cumulative ACK frames, NACK statuses, the
 * fire-and-forget option, a missing ACK (timeout), TLS with verification, an unknown CA
 * against `openssl s_server` (not NDD code), and mTLS. */
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
#include <sys/socket.h>

#include <cmocka.h>
#include <event2/event.h>

#include "adapter_testutil.h"
#include "buf.h"
#include "frame.h"
#include "log.h"
#include "tls.h"
#include "tls_testutil.h"
#include "transport.h"

typedef struct ctx {
    struct event_base *base;
    transport_t *t;
    int acked, failed, failed_retryable, last_status, ups, downs;
    char last_reason[400], down_reason[400];
    buf_t frames[64]; /* one DATA frame per request, with @seq = index */
    int to_send, sent;
} ctx_t;

static void on_ack(void *o, void *cookie, int status)
{
    ((ctx_t *)o)->acked++;
}

static void on_fail(void *o, void *cookie, const transport_failure_t *f)
{
    ctx_t *c = o;
    c->failed++;
    c->failed_retryable += f->retryable;
    c->last_status = f->status;
    snprintf(c->last_reason, sizeof c->last_reason, "%s", f->reason);
}

static void pump(ctx_t *c)
{
    while (c->sent < c->to_send) {
        buf_t *b = &c->frames[c->sent % 64];
        if (transport_send(c->t, b->data, b->len, (void *)(intptr_t)(c->sent + 1)) != 0)
            break;
        c->sent++;
    }
}

static void on_up(void *o)
{
    ((ctx_t *)o)->ups++;
    pump(o);
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

static int setup_all(void **state)
{
    log_setup("test_transport_tcp", LOG_LEVEL_WARN, 0);
    signal(SIGPIPE, SIG_IGN);
    return tls_testutil_make_pki(&pki);
}

static int teardown_all(void **state)
{
    tls_testutil_remove_pki(&pki);
    atu_remove_tree(pki.dir); /* server logs written next to the certificates */
    return 0;
}

static void make(ctx_t *c, const char *url, SSL_CTX *ssl, unsigned max_in_flight,
                 uint32_t timeout_ms, bool ff)
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
                              .out_buf_max = 256 * 1024,
                              .fire_and_forget = ff};
    memset(c, 0, sizeof *c);
    c->base = event_base_new();
    static uint8_t body[3400];
    memset(body, 'b', sizeof body);
    for (int i = 0; i < 64; i++) {
        buf_init(&c->frames[i], 0, 1 << 20);
        frame_builder_t fb;
        char seq[16];
        snprintf(seq, sizeof seq, "%d", i);
        assert_int_equal(frame_data_begin(&fb, &c->frames[i], 0, 0, 0), 0);
        assert_int_equal(frame_data_record_begin(&fb), 0);
        assert_int_equal(frame_data_record_header(&fb, "@seq", 4, seq, strlen(seq)), 0);
        assert_int_equal(frame_data_record_end(&fb, "k", 1, body, sizeof body), 0);
        assert_int_equal(frame_data_end(&fb), 0);
    }
    c->t = transport_desc_tcp.ops->create(c->base, &cfg, &EV, c, err, sizeof err);
    assert_non_null(c->t);
}

static void unmake(ctx_t *c)
{
    transport_destroy(c->t);
    for (int i = 0; i < 64; i++)
        buf_free(&c->frames[i]);
    event_base_free(c->base);
}

static void test_tcp_frames_are_acked_by_ack_frames(void **state)
{
    int port = atu_free_port(27100, 27999);
    atu_srv_t *s = atu_srv_start(ATU_SRV_FRAME, port, NULL);
    assert_non_null(s);
    char url[64];
    snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
    ctx_t c;
    make(&c, url, NULL, 16, 5000, false);
    c.to_send = 640;
    transport_connect(c.t);
    assert_true(atu_run_until(c.base, all_done, &c, 10000));
    assert_int_equal(c.acked, 640);
    assert_int_equal(c.failed, 0);
    assert_int_equal(atu_srv_total(s), 640);
    assert_true(atu_srv_has_range(s, 0, 64));
    unmake(&c);
    atu_srv_stop(s);
}

static void test_tcp_nack_fails_that_frame_with_its_status(void **state)
{
    int port = atu_free_port(27100, 27999);
    atu_srv_t *s = atu_srv_start(ATU_SRV_FRAME, port, NULL);
    atu_srv_script(s, 400, 3, 0);
    char url[64];
    snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
    ctx_t c;
    make(&c, url, NULL, 4, 5000, false);
    c.to_send = 10;
    transport_connect(c.t);
    assert_true(atu_run_until(c.base, all_done, &c, 10000));
    assert_int_equal(c.failed, 3);
    assert_int_equal(c.failed_retryable, 0);
    assert_int_equal(c.last_status, 400);
    assert_non_null(strstr(c.last_reason, "NACK 400"));
    assert_int_equal(c.acked, 7);
    unmake(&c);
    atu_srv_stop(s);
}

static void test_tcp_nack_503_is_retryable(void **state)
{
    int port = atu_free_port(27100, 27999);
    atu_srv_t *s = atu_srv_start(ATU_SRV_FRAME, port, NULL);
    atu_srv_script(s, 503, 2, 0);
    char url[64];
    snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
    ctx_t c;
    make(&c, url, NULL, 4, 5000, false);
    c.to_send = 5;
    transport_connect(c.t);
    assert_true(atu_run_until(c.base, all_done, &c, 10000));
    assert_int_equal(c.failed_retryable, 2);
    assert_int_equal(c.acked, 3);
    unmake(&c);
    atu_srv_stop(s);
}

/* A listener that accepts nothing and never answers: frames reach the kernel only. */
static int silent_listener(int port)
{
    int lfd = atu_listen_loopback(port);
    assert_true(lfd >= 0);
    return lfd;
}

static void test_tcp_missing_ack_times_out_and_fails_retryable(void **state)
{
    int port = atu_free_port(27100, 27999);
    int lfd = silent_listener(port);
    char url[64];
    snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
    ctx_t c;
    make(&c, url, NULL, 8, 300, false);
    c.to_send = 5;
    transport_connect(c.t);
    assert_true(atu_run_until(c.base, all_done, &c, 5000));
    assert_int_equal(c.acked, 0);
    assert_int_equal(c.failed_retryable, 5);
    assert_non_null(strstr(c.last_reason, "no ACK"));
    assert_true(c.downs >= 1);
    unmake(&c);
    close(lfd);
}

static void test_tcp_fire_and_forget_acks_on_write_without_ack_frames(void **state)
{
    int port = atu_free_port(27100, 27999);
    int lfd = silent_listener(port);
    char url[64];
    snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
    ctx_t c;
    make(&c, url, NULL, 8, 300, true);
    c.to_send = 5;
    transport_connect(c.t);
    assert_true(atu_run_until(c.base, all_done, &c, 5000));
    assert_int_equal(c.acked, 5);
    assert_int_equal(c.failed, 0);
    unmake(&c);
    close(lfd);
}

static void test_tls_frames_with_verified_server_and_mtls(void **state)
{
    int port = atu_free_port(27100, 27999);
    char err[256];
    tls_config_t sc = {.cert_file = pki.server_cert,
                       .key_file = pki.server_key,
                       .ca_file = pki.ca_cert,
                       .require_client_cert = true};
    SSL_CTX *sctx = tls_server_ctx_new(&sc, err, sizeof err);
    assert_non_null(sctx);
    atu_srv_t *s = atu_srv_start(ATU_SRV_FRAME, port, sctx);
    char url[64];
    snprintf(url, sizeof url, "tls://127.0.0.1:%d", port);
    tls_config_t cc = {
        .ca_file = pki.ca_cert, .cert_file = pki.client_cert, .key_file = pki.client_key};
    SSL_CTX *cctx = tls_client_ctx_new(&cc, err, sizeof err);
    assert_non_null(cctx);
    ctx_t c;
    make(&c, url, cctx, 16, 5000, false);
    c.to_send = 200;
    transport_connect(c.t);
    assert_true(atu_run_until(c.base, all_done, &c, 10000));
    assert_int_equal(c.acked, 200);
    unmake(&c);
    tls_ctx_free(cctx);

    /* Without a client certificate the server refuses the connection. */
    tls_config_t nc = {.ca_file = pki.ca_cert};
    cctx = tls_client_ctx_new(&nc, err, sizeof err);
    make(&c, url, cctx, 16, 2000, false);
    c.to_send = 1;
    transport_connect(c.t);
    assert_true(atu_run_until(c.base, all_done, &c, 5000) || c.downs > 0);
    assert_int_equal(c.acked, 0);
    assert_true(c.downs > 0);
    unmake(&c);
    tls_ctx_free(cctx);
    atu_srv_stop(s);
    tls_ctx_free(sctx);
}

static void test_tls_unknown_ca_refused_by_openssl_s_server(void **state)
{
    int port = atu_free_port(27100, 27999);
    char ps[16], log[600];
    snprintf(ps, sizeof ps, "%d", port);
    snprintf(log, sizeof log, "%s/s_server.log", pki.dir);
    char *argv[] = {
        "openssl", "s_server",           "-quiet", "-accept", ps, "-cert", pki.other_server_cert,
        "-key",    pki.other_server_key, NULL};
    pid_t srv = atu_spawn(argv, log);
    assert_true(atu_wait_port(port, 5000));
    char err[256], url[64];
    tls_config_t cc = {.ca_file = pki.ca_cert};
    SSL_CTX *cctx = tls_client_ctx_new(&cc, err, sizeof err);
    snprintf(url, sizeof url, "tls://127.0.0.1:%d", port);
    ctx_t c;
    make(&c, url, cctx, 4, 2000, false);
    transport_connect(c.t);
    assert_true(atu_run_until(c.base, is_down, &c, 5000));
    assert_int_equal(c.ups, 0);
    if (!strstr(c.down_reason, "certificate verify failed"))
        fail_msg("unclear reason: %s", c.down_reason);
    unmake(&c);
    tls_ctx_free(cctx);
    atu_stop(srv, SIGTERM);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tcp_frames_are_acked_by_ack_frames),
        cmocka_unit_test(test_tcp_nack_fails_that_frame_with_its_status),
        cmocka_unit_test(test_tcp_nack_503_is_retryable),
        cmocka_unit_test(test_tcp_missing_ack_times_out_and_fails_retryable),
        cmocka_unit_test(test_tcp_fire_and_forget_acks_on_write_without_ack_frames),
        cmocka_unit_test(test_tls_frames_with_verified_server_and_mtls),
        cmocka_unit_test(test_tls_unknown_ca_refused_by_openssl_s_server),
    };
    return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
