/* ndd-sink, binary frame side: a real ndd-sink process (ephemeral ports, read from its log),
 * a frame client over TCP and over TLS built from services/copy/frame.h and services/base/tls.h,
 * cumulative ACKs, NACKs from an injected fault, dropped connections, bad input, and the
 * summary written on SIGTERM. Needs no Kafka. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/err.h>

#include "frame.h"
#include "tls.h"
#include "tls_testutil.h"

#define SINK_BIN NDD_BINARY_DIR "/bench/sink/ndd-sink"

typedef struct sink_proc {
    pid_t pid;
    int err_fd;
    int tcp_port, tls_port, metrics_port;
    char summary[600];
} sink_proc_t;

static tls_testutil_pki_t pki;
/* The sink of the running test: killed by the per-test teardown when an assertion fails
 * before the test stopped it (cmocka leaves the test function on failure). */
static pid_t live_pid;

/* Reads the child's log until the "listening on" line; takes the ports from it. */
static void sink_start(sink_proc_t *sp, const char *const *extra)
{
    int pfd[2];
    memset(sp, 0, sizeof *sp);
    snprintf(sp->summary, sizeof sp->summary, "%s/summary.json", pki.dir);
    unlink(sp->summary);
    assert_int_equal(pipe(pfd), 0);
    sp->pid = fork();
    assert_true(sp->pid >= 0);
    if (sp->pid == 0) {
        const char *argv[32] = {SINK_BIN,
                                "--tcp-port",
                                "0",
                                "--tls-port",
                                "0",
                                "--metrics-port",
                                "0",
                                "--cert",
                                pki.server_cert,
                                "--key",
                                pki.server_key,
                                "--summary-file",
                                sp->summary};
        int n = 13;
        for (int i = 0; extra && extra[i]; i++)
            argv[n++] = extra[i];
        argv[n] = NULL;
        dup2(pfd[1], 2);
        close(pfd[0]);
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        execv(SINK_BIN, (char *const *)argv);
        _exit(127);
    }
    close(pfd[1]);
    live_pid = sp->pid;
    sp->err_fd = pfd[0];
    char log[8192];
    size_t len = 0;
    time_t deadline = time(NULL) + 10;
    while (time(NULL) < deadline && len < sizeof log - 1) {
        struct pollfd p = {sp->err_fd, POLLIN, 0};
        if (poll(&p, 1, 200) <= 0)
            continue;
        ssize_t r = read(sp->err_fd, log + len, sizeof log - 1 - len);
        if (r <= 0)
            break;
        len += (size_t)r;
        log[len] = '\0';
        const char *l = strstr(log, "sink: listening on");
        if (l && strchr(l, '\n')) {
            const char *t = strstr(l, " tcp="), *s = strstr(l, " tls="),
                       *m = strstr(l, " metrics=");
            assert_non_null(t);
            assert_non_null(s);
            assert_non_null(m);
            sp->tcp_port = atoi(t + 5);
            sp->tls_port = atoi(s + 5);
            sp->metrics_port = atoi(m + 9);
            /* Keep the pipe drained so the sink never blocks on a full stderr. */
            fcntl(sp->err_fd, F_SETFL, O_NONBLOCK);
            return;
        }
    }
    kill(sp->pid, SIGKILL);
    waitpid(sp->pid, NULL, 0);
    live_pid = 0;
    fail_msg("ndd-sink (%s) did not start; its log:\n%s", SINK_BIN, log);
}

static void drain_log(sink_proc_t *sp)
{
    char buf[4096];
    while (read(sp->err_fd, buf, sizeof buf) > 0) {
    }
}

static int sink_stop(sink_proc_t *sp)
{
    int status = 0;
    live_pid = 0;
    drain_log(sp);
    kill(sp->pid, SIGTERM);
    for (int i = 0; i < 100; i++) {
        if (waitpid(sp->pid, &status, WNOHANG) == sp->pid) {
            close(sp->err_fd);
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
        }
        drain_log(sp);
        usleep(50000);
    }
    kill(sp->pid, SIGKILL);
    waitpid(sp->pid, &status, 0);
    close(sp->err_fd);
    fail_msg("ndd-sink did not stop on SIGTERM within 5 s");
    return -1;
}

static int connect_port(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_true(fd >= 0);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* Minimal HTTP/1.1 exchange with the metrics/control port; returns the parsed JSON body. */
static json_t *http_json(int port, const char *method, const char *path, const char *body)
{
    int fd = connect_port(port);
    assert_true(fd >= 0);
    char req[1024];
    int n = snprintf(req, sizeof req,
                     "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                     "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                     method, path, body ? strlen(body) : 0, body ? body : "");
    assert_int_equal(write(fd, req, (size_t)n), n);
    char resp[16384];
    size_t len = 0;
    ssize_t r;
    while (len < sizeof resp - 1 && (r = read(fd, resp + len, sizeof resp - 1 - len)) > 0)
        len += (size_t)r;
    resp[len] = '\0';
    close(fd);
    if (strncmp(resp, "HTTP/1.1 200", 12) != 0)
        fail_msg("%s %s: %s", method, path, resp);
    const char *b = strstr(resp, "\r\n\r\n");
    assert_non_null(b);
    json_error_t je;
    json_t *j = json_loads(b + 4, 0, &je);
    if (!j)
        fail_msg("%s %s: not JSON: %s", method, path, b + 4);
    return j;
}

static long long summary_int(int port, const char *name)
{
    json_t *j = http_json(port, "GET", "/summary", NULL);
    long long v = json_integer_value(json_object_get(j, name));
    json_decref(j);
    return v;
}

/* A DATA frame whose records carry @seq values seqs[0..n). */
static void build_frame(buf_t *out, uint64_t id, const uint64_t *seqs, size_t n, uint16_t flags)
{
    frame_builder_t b;
    assert_int_equal(frame_data_begin(&b, out, id, flags, 0), 0);
    for (size_t i = 0; i < n; i++) {
        char seq[24], ts[24];
        int sl = snprintf(seq, sizeof seq, "%llu", (unsigned long long)seqs[i]);
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        int tl =
            snprintf(ts, sizeof ts, "%lld", (long long)now.tv_sec * 1000000 + now.tv_nsec / 1000);
        assert_int_equal(frame_data_record_begin(&b), 0);
        assert_int_equal(frame_data_record_header(&b, "@seq", 4, seq, (size_t)sl), 0);
        assert_int_equal(frame_data_record_header(&b, "@timestamp-us", 13, ts, (size_t)tl), 0);
        assert_int_equal(frame_data_record_header(&b, ":path", 5, "/x", 2), 0);
        assert_int_equal(frame_data_record_end(&b, "cid", 3, "{\"a\":1}", 7), 0);
    }
    frame_data_end(&b);
}

typedef struct io {
    int fd;
    SSL *ssl;
} io_t;

static ssize_t io_write(io_t *io, const void *p, size_t n)
{
    return io->ssl ? SSL_write(io->ssl, p, (int)n) : write(io->fd, p, n);
}

static ssize_t io_read(io_t *io, void *p, size_t n)
{
    return io->ssl ? SSL_read(io->ssl, p, (int)n) : read(io->fd, p, n);
}

/* Reads the next ACK/NACK frame; returns 0, or -1 on EOF/timeout. */
static int read_reply(io_t *io, frame_t *f, uint8_t *store, size_t cap)
{
    frame_parser_t p;
    frame_parser_init(&p, 0, false);
    size_t len = 0;
    for (;;) {
        size_t used;
        if (len > 0) {
            frame_status_t st = frame_parse(&p, store, len, f, &used);
            if (st == FRAME_OK)
                return 0;
            if (st == FRAME_ERROR)
                fail_msg("bad reply frame: %s", p.error);
        }
        ssize_t r = io_read(io, store + len, 1); /* one byte at a time: no over-read */
        if (r <= 0)
            return -1;
        len += (size_t)r;
        assert_true(len < cap);
    }
}

/* Sends frames and waits until the cumulative ACK covers last_id. */
static void expect_ack(io_t *io, uint64_t last_id)
{
    uint8_t store[256];
    frame_t f;
    for (;;) {
        if (read_reply(io, &f, store, sizeof store) != 0)
            fail_msg("no ACK for frame %llu", (unsigned long long)last_id);
        assert_int_equal(f.hdr.type, FRAME_TYPE_ACK);
        assert_true(f.hdr.id <= last_id);
        if (f.hdr.id == last_id)
            return;
    }
}

static void send_buf(io_t *io, buf_t *b)
{
    assert_int_equal(io_write(io, b->data, b->len), (ssize_t)b->len);
    buf_reset(b);
}

static void test_tcp_frames_acked_cumulatively_and_counted(void **state)
{
    sink_proc_t sp;
    sink_start(&sp, NULL);
    io_t io = {connect_port(sp.tcp_port), NULL};
    assert_true(io.fd >= 0);
    buf_t b;
    buf_init(&b, 0, 1 << 20);
    uint64_t s1[] = {1, 2, 3}, s2[] = {4, 5}, s3[] = {5, 7};
    /* Three frames in one write: one cumulative ACK may answer them all. */
    build_frame(&b, 1, s1, 3, FRAME_FLAG_ACK_REQUESTED);
    build_frame(&b, 2, s2, 2, FRAME_FLAG_ACK_REQUESTED);
    build_frame(&b, 3, s3, 2, FRAME_FLAG_ACK_REQUESTED);
    send_buf(&io, &b);
    expect_ack(&io, 3);
    /* A frame without the ack flag is counted and not answered; the next ACK covers it. */
    uint64_t s4[] = {8}, s5[] = {9};
    build_frame(&b, 4, s4, 1, 0);
    build_frame(&b, 5, s5, 1, FRAME_FLAG_ACK_REQUESTED);
    send_buf(&io, &b);
    expect_ack(&io, 5);

    json_t *j = http_json(sp.metrics_port, "GET", "/summary", NULL);
    assert_int_equal(json_integer_value(json_object_get(j, "received")), 9);
    assert_int_equal(json_integer_value(json_object_get(j, "unique")), 8);
    assert_int_equal(json_integer_value(json_object_get(j, "duplicates")), 1);
    assert_int_equal(json_integer_value(json_object_get(j, "gaps")), 1); /* 6 never came */
    assert_int_equal(json_integer_value(json_object_get(j, "seq_min")), 1);
    assert_int_equal(json_integer_value(json_object_get(j, "seq_max")), 9);
    json_t *lat = json_object_get(j, "latency_ms");
    assert_int_equal(json_integer_value(json_object_get(lat, "count")), 9);
    json_t *tcp = json_object_get(json_object_get(j, "transports"), "tcp");
    assert_int_equal(json_integer_value(json_object_get(tcp, "requests")), 5);
    json_decref(j);
    close(io.fd);
    buf_free(&b);
    assert_int_equal(sink_stop(&sp), 0);
}

static void test_fault_status_nacks_exactly_that_frame(void **state)
{
    sink_proc_t sp;
    sink_start(&sp, NULL);
    json_t *c = http_json(sp.metrics_port, "POST", "/control", "{\"status\":503,\"count\":1}");
    assert_int_equal(json_integer_value(json_object_get(c, "status")), 503);
    json_decref(c);
    io_t io = {connect_port(sp.tcp_port), NULL};
    buf_t b;
    buf_init(&b, 0, 1 << 20);
    uint64_t s1[] = {10}, s2[] = {11};
    build_frame(&b, 1, s1, 1, FRAME_FLAG_ACK_REQUESTED);
    send_buf(&io, &b);
    uint8_t store[256];
    frame_t f;
    assert_int_equal(read_reply(&io, &f, store, sizeof store), 0);
    assert_int_equal(f.hdr.type, FRAME_TYPE_NACK);
    assert_int_equal(f.hdr.id, 1);
    assert_int_equal(f.nack_status, 503);
    assert_true(f.nack_reason.len > 0);
    /* The count was 1: the retry is accepted. */
    build_frame(&b, 2, s1, 1, FRAME_FLAG_ACK_REQUESTED);
    build_frame(&b, 3, s2, 1, FRAME_FLAG_ACK_REQUESTED);
    send_buf(&io, &b);
    expect_ack(&io, 3);
    assert_int_equal(summary_int(sp.metrics_port, "rejected"), 1);
    assert_int_equal(summary_int(sp.metrics_port, "unique"), 2);
    assert_int_equal(summary_int(sp.metrics_port, "duplicates"), 0);
    close(io.fd);
    buf_free(&b);
    assert_int_equal(sink_stop(&sp), 0);
}

static void test_delay_fault_holds_the_ack(void **state)
{
    sink_proc_t sp;
    sink_start(&sp, NULL);
    json_decref(http_json(sp.metrics_port, "POST", "/control", "{\"delay_ms\":300,\"count\":1}"));
    io_t io = {connect_port(sp.tcp_port), NULL};
    buf_t b;
    buf_init(&b, 0, 1 << 20);
    uint64_t s1[] = {1};
    build_frame(&b, 1, s1, 1, FRAME_FLAG_ACK_REQUESTED);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    send_buf(&io, &b);
    expect_ack(&io, 1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    assert_true(ms >= 290);
    close(io.fd);
    buf_free(&b);
    assert_int_equal(sink_stop(&sp), 0);
}

static void test_drop_fault_closes_without_answer(void **state)
{
    sink_proc_t sp;
    sink_start(&sp, NULL);
    json_decref(http_json(sp.metrics_port, "POST", "/control", "{\"close\":true,\"count\":1}"));
    io_t io = {connect_port(sp.tcp_port), NULL};
    buf_t b;
    buf_init(&b, 0, 1 << 20);
    uint64_t s1[] = {1};
    build_frame(&b, 1, s1, 1, FRAME_FLAG_ACK_REQUESTED);
    send_buf(&io, &b);
    uint8_t store[256];
    frame_t f;
    assert_int_equal(read_reply(&io, &f, store, sizeof store), -1); /* EOF, no ACK */
    close(io.fd);
    /* The next connection is served again, and the dropped frame was not counted. */
    io.fd = connect_port(sp.tcp_port);
    build_frame(&b, 1, s1, 1, FRAME_FLAG_ACK_REQUESTED);
    send_buf(&io, &b);
    expect_ack(&io, 1);
    assert_int_equal(summary_int(sp.metrics_port, "received"), 1);
    close(io.fd);
    buf_free(&b);
    assert_int_equal(sink_stop(&sp), 0);
}

static void test_bad_magic_and_decreasing_ids_close_the_connection(void **state)
{
    sink_proc_t sp;
    sink_start(&sp, NULL);
    io_t io = {connect_port(sp.tcp_port), NULL};
    const char *http = "GET / HTTP/1.1\r\n\r\n";
    assert_int_equal(write(io.fd, http, strlen(http)), (ssize_t)strlen(http));
    char c;
    assert_true(read(io.fd, &c, 1) <= 0);
    close(io.fd);

    io.fd = connect_port(sp.tcp_port);
    buf_t b;
    buf_init(&b, 0, 1 << 20);
    uint64_t s1[] = {1};
    build_frame(&b, 5, s1, 1, FRAME_FLAG_ACK_REQUESTED);
    build_frame(&b, 4, s1, 1, FRAME_FLAG_ACK_REQUESTED);
    send_buf(&io, &b);
    expect_ack(&io, 5);
    uint8_t store[256];
    frame_t f;
    assert_int_equal(read_reply(&io, &f, store, sizeof store), -1);
    close(io.fd);
    json_t *j = http_json(sp.metrics_port, "GET", "/summary", NULL);
    json_t *tcp = json_object_get(json_object_get(j, "transports"), "tcp");
    assert_int_equal(json_integer_value(json_object_get(tcp, "protocol_errors")), 2);
    json_decref(j);
    buf_free(&b);
    assert_int_equal(sink_stop(&sp), 0);
}

static SSL *tls_connect(int fd, const char *ca, char *err, size_t errlen)
{
    tls_config_t cc = {.ca_file = ca};
    SSL_CTX *ctx = tls_client_ctx_new(&cc, err, errlen);
    assert_non_null(ctx);
    SSL *ssl = tls_client_ssl_new(ctx, "localhost", err, errlen);
    tls_ctx_free(ctx); /* the SSL keeps a reference */
    assert_non_null(ssl);
    SSL_set_fd(ssl, fd);
    int rc = SSL_connect(ssl);
    if (rc != 1) {
        tls_describe_error(ssl, rc, "ndd-sink", err, errlen);
        SSL_free(ssl);
        return NULL;
    }
    return ssl;
}

static void test_tls_frames_with_test_ca_and_unknown_ca_refused(void **state)
{
    sink_proc_t sp;
    sink_start(&sp, NULL);
    char err[512];
    io_t io = {connect_port(sp.tls_port), NULL};
    io.ssl = tls_connect(io.fd, pki.ca_cert, err, sizeof err);
    if (!io.ssl)
        fail_msg("TLS connect: %s", err);
    buf_t b;
    buf_init(&b, 0, 1 << 20);
    uint64_t s1[] = {100, 101};
    build_frame(&b, 1, s1, 2, FRAME_FLAG_ACK_REQUESTED);
    send_buf(&io, &b);
    expect_ack(&io, 1);
    SSL_shutdown(io.ssl);
    SSL_free(io.ssl);
    close(io.fd);
    json_t *j = http_json(sp.metrics_port, "GET", "/summary", NULL);
    json_t *tls = json_object_get(json_object_get(j, "transports"), "tls");
    assert_int_equal(json_integer_value(json_object_get(tls, "records")), 2);
    json_decref(j);

    /* A client that trusts another CA refuses the sink, and says why. */
    int fd = connect_port(sp.tls_port);
    assert_null(tls_connect(fd, pki.other_ca_cert, err, sizeof err));
    assert_string_equal(err, "certificate verify failed: unable to get local issuer certificate "
                             "(endpoint ndd-sink)");
    close(fd);
    ERR_clear_error();
    buf_free(&b);
    assert_int_equal(sink_stop(&sp), 0);
}

static SSL *tls_connect_cert(int fd, const char *cert, const char *key, char *err, size_t errlen)
{
    tls_config_t cc = {.ca_file = pki.ca_cert, .cert_file = cert, .key_file = key};
    SSL_CTX *ctx = tls_client_ctx_new(&cc, err, errlen);
    assert_non_null(ctx);
    SSL *ssl = tls_client_ssl_new(ctx, "127.0.0.1", err, errlen);
    tls_ctx_free(ctx);
    SSL_set_fd(ssl, fd);
    int rc = SSL_connect(ssl);
    if (rc == 1) {
        /* TLS 1.3: a refused client certificate shows on the first read. */
        buf_t b;
        uint64_t s1[] = {1};
        buf_init(&b, 0, 4096);
        build_frame(&b, 1, s1, 1, FRAME_FLAG_ACK_REQUESTED);
        rc = SSL_write(ssl, b.data, (int)b.len);
        buf_free(&b);
        uint8_t store[64];
        frame_t f;
        io_t io = {fd, ssl};
        if (rc > 0 && read_reply(&io, &f, store, sizeof store) == 0 && f.hdr.type == FRAME_TYPE_ACK)
            return ssl;
        rc = -1;
    }
    tls_describe_error(ssl, rc, "ndd-sink", err, errlen);
    SSL_free(ssl);
    return NULL;
}

static void test_mtls_sink_requires_a_client_certificate(void **state)
{
    const char *extra[] = {"--ca", pki.ca_cert, "--require-client-cert", NULL};
    sink_proc_t sp;
    sink_start(&sp, extra);
    char err[512];
    int fd = connect_port(sp.tls_port);
    SSL *ssl = tls_connect_cert(fd, pki.client_cert, pki.client_key, err, sizeof err);
    if (!ssl)
        fail_msg("mTLS with a client certificate: %s", err);
    SSL_free(ssl);
    close(fd);
    fd = connect_port(sp.tls_port);
    assert_null(tls_connect_cert(fd, NULL, NULL, err, sizeof err));
    close(fd);
    ERR_clear_error();
    assert_int_equal(summary_int(sp.metrics_port, "received"), 1);
    assert_int_equal(sink_stop(&sp), 0);
}

/* Bounded load: 200 frames of 500 records, all acknowledged; prints the rate. */
static void test_frame_throughput_all_acked(void **state)
{
    sink_proc_t sp;
    sink_start(&sp, NULL);
    io_t io = {connect_port(sp.tcp_port), NULL};
    buf_t b;
    buf_init(&b, 0, 16u << 20);
    enum { FRAMES = 200, PER = 500 };
    uint64_t seqs[PER];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int f = 0; f < FRAMES; f++) {
        for (int i = 0; i < PER; i++)
            seqs[i] = (uint64_t)f * PER + (uint64_t)i;
        build_frame(&b, (uint64_t)f + 1, seqs, PER, FRAME_FLAG_ACK_REQUESTED);
        if (b.len > (1u << 20) || f == FRAMES - 1)
            send_buf(&io, &b);
    }
    expect_ack(&io, FRAMES);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("frame load: %d records in %.3f s = %.0f records/s (client build + sink)\n",
           FRAMES * PER, s, FRAMES * PER / s);
    assert_int_equal(summary_int(sp.metrics_port, "unique"), FRAMES * PER);
    assert_int_equal(summary_int(sp.metrics_port, "gaps"), 0);
    close(io.fd);
    buf_free(&b);
    assert_int_equal(sink_stop(&sp), 0);
}

static void test_sigterm_writes_summary_with_expectation(void **state)
{
    const char *extra[] = {"--expect", "5", NULL};
    sink_proc_t sp;
    sink_start(&sp, extra);
    io_t io = {connect_port(sp.tcp_port), NULL};
    buf_t b;
    buf_init(&b, 0, 1 << 20);
    uint64_t s1[] = {1, 2, 4};
    build_frame(&b, 1, s1, 3, FRAME_FLAG_ACK_REQUESTED);
    send_buf(&io, &b);
    expect_ack(&io, 1);
    close(io.fd);
    assert_int_equal(sink_stop(&sp), 0);
    json_error_t je;
    json_t *j = json_load_file(sp.summary, 0, &je);
    if (!j)
        fail_msg("summary file %s: %s", sp.summary, je.text);
    assert_int_equal(json_integer_value(json_object_get(j, "expected")), 5);
    assert_int_equal(json_integer_value(json_object_get(j, "missing")), 2);
    assert_true(json_is_false(json_object_get(j, "complete")));
    assert_int_equal(json_integer_value(json_object_get(j, "gaps")), 1);
    json_decref(j);
    unlink(sp.summary);
    buf_free(&b);
}

static void test_exit_on_expect_stops_when_complete(void **state)
{
    const char *extra[] = {"--expect", "3", "--exit-on-expect", NULL};
    sink_proc_t sp;
    sink_start(&sp, extra);
    io_t io = {connect_port(sp.tcp_port), NULL};
    buf_t b;
    buf_init(&b, 0, 1 << 20);
    uint64_t s1[] = {7, 8, 9};
    build_frame(&b, 1, s1, 3, FRAME_FLAG_ACK_REQUESTED);
    send_buf(&io, &b);
    close(io.fd);
    int status = 0;
    pid_t r = 0;
    for (int i = 0; i < 100 && r == 0; i++) {
        drain_log(&sp);
        r = waitpid(sp.pid, &status, WNOHANG);
        if (r == 0)
            usleep(50000);
    }
    if (r != sp.pid) {
        kill(sp.pid, SIGKILL);
        waitpid(sp.pid, NULL, 0);
        live_pid = 0;
        fail_msg("ndd-sink did not exit after the expected records");
    }
    close(sp.err_fd);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    json_t *j = json_load_file(sp.summary, 0, NULL);
    assert_non_null(j);
    assert_true(json_is_true(json_object_get(j, "complete")));
    json_decref(j);
    unlink(sp.summary);
    buf_free(&b);
}

static int setup(void **state)
{
    signal(SIGPIPE, SIG_IGN);
    if (access(SINK_BIN, X_OK) != 0) {
        fprintf(stderr, "test_sink_frame: %s not built\n", SINK_BIN);
        return -1;
    }
    return tls_testutil_make_pki(&pki);
}

static int kill_leftover_sink(void **state)
{
    if (live_pid > 0) {
        kill(live_pid, SIGKILL);
        waitpid(live_pid, NULL, 0);
        live_pid = 0;
    }
    return 0;
}

static int teardown(void **state)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/summary.json", pki.dir);
    unlink(path);
    tls_testutil_remove_pki(&pki);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_tcp_frames_acked_cumulatively_and_counted,
                                  kill_leftover_sink),
        cmocka_unit_test_teardown(test_fault_status_nacks_exactly_that_frame, kill_leftover_sink),
        cmocka_unit_test_teardown(test_delay_fault_holds_the_ack, kill_leftover_sink),
        cmocka_unit_test_teardown(test_drop_fault_closes_without_answer, kill_leftover_sink),
        cmocka_unit_test_teardown(test_bad_magic_and_decreasing_ids_close_the_connection,
                                  kill_leftover_sink),
        cmocka_unit_test_teardown(test_tls_frames_with_test_ca_and_unknown_ca_refused,
                                  kill_leftover_sink),
        cmocka_unit_test_teardown(test_mtls_sink_requires_a_client_certificate, kill_leftover_sink),
        cmocka_unit_test_teardown(test_frame_throughput_all_acked, kill_leftover_sink),
        cmocka_unit_test_teardown(test_sigterm_writes_summary_with_expectation, kill_leftover_sink),
        cmocka_unit_test_teardown(test_exit_on_expect_stops_when_complete, kill_leftover_sink),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
