/* ndd-gui-api's live figures from a metrics URL whose name resolves to several workers (a
 * headless Service with replicas > 1): two real /metrics servers on 127.0.0.2:P and
 * 127.0.0.3:P behind the one name "pods.test", scraped by the real poller (gui_live.c) and
 * its HTTP client (gui_http.c). Only the name lookup is the test's (gui_live_set_resolver
 * answers the two loopback addresses through gui_http_resolve); the rest is the product's
 * path. The figures of one poll must hold both servers' samples summed (counter, gauge,
 * histogram buckets), each server must see the URL's host in Host, and with one server gone
 * the other's figures must still come, the failure counted by ndd_gui_scrape_errors_total;
 * when it comes back, its rate adds in again without its whole count as one interval's.
 * Over https:// each address is asked for the URL's host (SNI) and verified against it: the
 * test certificate names localhost, not 127.0.0.2 or 127.0.0.3.
 * No Kafka, no PostgreSQL: the admin is a closed port (its /status failing is logged). */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/ssl.h>

#include "gui.h"
#include "metrics.h"
#include "tls.h"
#include "tls_testutil.h"

/* One fake worker: every scrape advances its counters, so rates and quantiles move. */
typedef struct server {
    const char *ip;
    int fd;
    unsigned port;
    pthread_t th;
    volatile int stop;
    int acked_step, dlq, lag;
    double le; /* where its latency observations fall */
    pthread_mutex_t mu;
    int scrapes;
    char host_seen[128];
    SSL_CTX *tls;       /* https: the PKI's certificate for localhost */
    char sni_seen[128]; /* the server name the client asked for */
} server_t;

/* One exchange's I/O, through TLS when ssl. */
static ssize_t io(int c, SSL *ssl, bool wr, void *p, size_t n)
{
    if (ssl)
        return wr ? SSL_write(ssl, p, (int)n) : SSL_read(ssl, p, (int)n);
    return wr ? send(c, p, n, MSG_NOSIGNAL) : recv(c, p, n, 0);
}

static void server_reply(server_t *s, int c, SSL *ssl)
{
    char req[4096] = "";
    size_t n = 0;
    while (n < sizeof(req) - 1 && !strstr(req, "\r\n\r\n")) {
        ssize_t r = io(c, ssl, false, req + n, sizeof(req) - 1 - n);
        if (r <= 0)
            return;
        n += (size_t)r;
        req[n] = '\0';
    }
    pthread_mutex_lock(&s->mu);
    int k = ++s->scrapes;
    const char *h = strstr(req, "\r\nHost: ");
    if (h)
        snprintf(s->host_seen, sizeof(s->host_seen), "%.*s", (int)strcspn(h + 8, "\r\n"), h + 8);
    const char *sni = ssl ? SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name) : NULL;
    if (sni)
        snprintf(s->sni_seen, sizeof(s->sni_seen), "%s", sni);
    pthread_mutex_unlock(&s->mu);
    char body[1024], out[1400];
    int bl = snprintf(body, sizeof(body),
                      "# TYPE ndd_adapter_messages_acked_total counter\n"
                      "ndd_adapter_messages_acked_total{feed=\"f1\",endpoint=\"h:1\"} %d\n"
                      "ndd_adapter_messages_dead_lettered_total{feed=\"f1\"} %d\n"
                      "ndd_adapter_consumer_lag_messages{feed=\"f1\"} %d\n"
                      "ndd_adapter_e2e_latency_seconds_bucket{feed=\"f1\",le=\"0.01\"} %d\n"
                      "ndd_adapter_e2e_latency_seconds_bucket{feed=\"f1\",le=\"0.1\"} %d\n"
                      "ndd_adapter_e2e_latency_seconds_bucket{feed=\"f1\",le=\"1\"} %d\n"
                      "ndd_adapter_e2e_latency_seconds_bucket{feed=\"f1\",le=\"+Inf\"} %d\n",
                      k * s->acked_step, s->dlq, s->lag, s->le <= 0.01 ? k : 0,
                      s->le <= 0.1 ? k : 0, k, k);
    int ol = snprintf(out, sizeof(out),
                      "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
                      "Content-Length: %d\r\nConnection: close\r\n\r\n%s",
                      bl, body);
    for (int w = 0; w < ol;) {
        ssize_t r = io(c, ssl, true, out + w, (size_t)(ol - w));
        if (r <= 0)
            return;
        w += (int)r;
    }
}

static void *server_main(void *arg)
{
    server_t *s = arg;
    while (!s->stop) {
        struct pollfd p = {.fd = s->fd, .events = POLLIN};
        if (poll(&p, 1, 50) != 1)
            continue;
        int c = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        /* blocking, each exchange bounded: a stuck client cannot hold the server */
        struct timeval tv = {2, 0};
        setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        SSL *ssl = s->tls ? SSL_new(s->tls) : NULL;
        if (!s->tls || (ssl && SSL_set_fd(ssl, c) == 1 && SSL_accept(ssl) == 1))
            server_reply(s, c, ssl);
        if (ssl) {
            SSL_shutdown(ssl);
            SSL_free(ssl);
        }
        close(c);
    }
    return NULL;
}

/* Listens on ip:port (port 0: any); 0, or -1 when the port is taken. */
static int server_listen(server_t *s, unsigned port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, s->ip, &a.sin_addr);
    s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(s->fd >= 0);
    int one = 1; /* B comes back on its port past the TIME_WAIT of its last connections */
    setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(s->fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(s->fd, 16) != 0) {
        close(s->fd);
        return -1;
    }
    socklen_t al = sizeof(a);
    getsockname(s->fd, (struct sockaddr *)&a, &al);
    s->port = ntohs(a.sin_port);
    pthread_mutex_init(&s->mu, NULL);
    s->stop = 0;
    assert_int_equal(pthread_create(&s->th, NULL, server_main, s), 0);
    return 0;
}

static void server_stop(server_t *s)
{
    s->stop = 1;
    pthread_join(s->th, NULL);
    close(s->fd);
    s->fd = -1;
}

/* The test's name lookup: the URL's host (pods.test over HTTP; localhost over HTTPS, the name
 * the test certificate carries) is 127.0.0.2 and 127.0.0.3, each resolved by the product's
 * gui_http_resolve as a literal (so the addresses carry the URL's port). */
static const char *pods_name;
static const char *const two_ips[] = {"127.0.0.2", "127.0.0.3", NULL};
static const char *const *pod_ips = two_ips;
static int two_pods(const gui_url_t *u, gui_addr_t *out, size_t max, char *err, size_t errlen)
{
    if (strcmp(u->host, pods_name) != 0)
        return gui_http_resolve(u, out, max, err, errlen);
    gui_url_t lit = *u;
    size_t n = 0;
    for (const char *const *ip = pod_ips; *ip; ip++) {
        snprintf(lit.host, sizeof(lit.host), "%s", *ip);
        if (n < max && gui_http_resolve(&lit, out + n, max - n, err, errlen) == 1)
            n++;
    }
    return (int)n;
}

/* The highest egress/f1 of every frame wait_frame has looked at. */
static double max_egress;

/* The values of the newest frame after *seq that has key, or NULL before the deadline. */
static json_t *wait_frame(gui_live_t *l, const char *key, int64_t *seq, int64_t deadline)
{
    while (mono_now_ms() < deadline) {
        json_t *m = gui_live_snapshot(l, *seq), *f, *found = NULL;
        size_t i;
        *seq = json_integer_value(json_object_get(m, "seq"));
        json_array_foreach(json_object_get(m, "frames"), i, f)
        {
            json_t *v = json_array_get(f, 1), *e = json_object_get(v, "egress/f1");
            if (json_is_number(e) && json_number_value(e) > max_egress)
                max_egress = json_number_value(e);
            if (json_object_get(v, key)) {
                json_decref(found);
                found = json_incref(v);
            }
        }
        json_decref(m);
        if (found)
            return found;
        usleep(20000);
    }
    return NULL;
}

static double num(json_t *v, const char *key)
{
    json_t *x = json_object_get(v, key);
    return json_is_number(x) ? json_number_value(x) : NAN;
}

/* The token file ndd-gui-api reads (the poller sends it to the admin): a fresh file from
 * mkstemp's template, its name in out; the caller unlinks it. */
static void token_file_make(char *out, size_t outlen)
{
    snprintf(out, outlen, "/tmp/ndd_gui_scrape_tok_XXXXXX"); /* mkstemp's template */
    int tfd = mkstemp(out);
    assert_true(tfd >= 0);
    assert_int_equal(write(tfd, "ndd_test\n", 9), 9);
    close(tfd);
}

static void show(const char *what, json_t *v, int64_t t0)
{
    char *d = json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(6));
    printf("%s, after %lld ms: %s\n", what, (long long)(mono_now_ms() - t0), d);
    free(d);
}

/* The whole scenario over http:// (pki NULL) or https:// with pki's CA. */
static void scenario(const tls_testutil_pki_t *pki)
{
    char err[512];
    SSL_CTX *tls = NULL;
    if (pki) {
        tls_config_t tc = {.cert_file = pki->server_cert, .key_file = pki->server_key};
        tls = tls_server_ctx_new(&tc, err, sizeof(err));
        assert_non_null(tls);
    }
    pods_name = pki ? "localhost" : "pods.test";
    server_t a = {.ip = "127.0.0.2", .acked_step = 10, .dlq = 1, .lag = 5, .le = 0.005, .tls = tls};
    server_t b = {
        .ip = "127.0.0.3", .acked_step = 1000, .dlq = 2, .lag = 70, .le = 0.5, .tls = tls};
    assert_int_equal(server_listen(&a, 0), 0);
    int tries = 0;
    while (server_listen(&b, a.port) != 0) { /* the same port on the second address */
        assert_true(++tries < 20);
        server_stop(&a);
        assert_int_equal(server_listen(&a, 0), 0);
    }
    char tokfile[64], urls[128];
    token_file_make(tokfile, sizeof(tokfile));
    snprintf(urls, sizeof(urls), "%s://%s:%u/metrics", pki ? "https" : "http", pods_name, a.port);
    gui_settings_t s = {.admin_url = "http://127.0.0.1:1", /* refused: /status is not needed */
                        .poll_ms = 100,
                        .history_points = 100,
                        .metrics_urls = urls,
                        .token_file = tokfile,
                        .admin_tls_ca = pki ? pki->ca_cert : NULL,
                        .upstream_timeout_ms = 2000};
    if (pki) /* as gui_server_run does for an https:// metrics URL */
        assert_int_equal(gui_http_tls_init(&s, err, sizeof(err)), 0);
    gui_live_t *l = gui_live_new(&s, NULL, err, sizeof(err));
    assert_non_null(l);
    gui_live_set_resolver(l, two_pods);
    char ep[64];
    snprintf(ep, sizeof(ep), "%s:%u", pods_name, a.port);
    metrics_counter_t *errors =
        metrics_counter_labels(metrics_counter_new(metrics_default_registry(),
                                                   "ndd_gui_scrape_errors_total", "", "endpoint"),
                               ep);
    assert_non_null(errors);
    uint64_t errors0 = metrics_counter_get(errors);
    int64_t t0 = mono_now_ms(), seq = 0;
    assert_int_equal(gui_live_start(l), 0);

    /* Both pods: the first frame with a rate (two polls read) holds both servers' samples. */
    json_t *v = wait_frame(l, "egress/f1", &seq, mono_now_ms() + 15000);
    assert_non_null(v);
    show("both up", v, t0);
    assert_true(num(v, "dlq/f1") == 3);  /* 1 + 2: a counter of each pod */
    assert_true(num(v, "lag/f1") == 75); /* 5 + 70: a gauge of each pod */
    assert_true(num(v, "egress/f1") > 0);
    /* one observation per poll in each pod: A's at 5 ms, B's between 0.1 and 1 s */
    assert_true(num(v, "p50/f1") <= 10);
    assert_true(num(v, "p99/f1") > 100);
    json_decref(v);
    pthread_mutex_lock(&a.mu);
    pthread_mutex_lock(&b.mu);
    assert_string_equal(a.host_seen, ep);
    assert_string_equal(b.host_seen, ep);
    assert_true(a.scrapes >= 2 && b.scrapes >= 2);
    if (pki) { /* the URL's host as SNI, and verified: the certificate names no 127.0.0.2/3 */
        assert_string_equal(a.sni_seen, "localhost");
        assert_string_equal(b.sni_seen, "localhost");
    }
    pthread_mutex_unlock(&b.mu);
    pthread_mutex_unlock(&a.mu);
    assert_int_equal(metrics_counter_get(errors), errors0);

    /* Pod B gone: A's figures still come; B's failure is counted. */
    server_stop(&b);
    /* The first frame without B still has B's counters in its previous sample (its rate
     * reads as a reset): wait for one whose both samples are A's alone. */
    int64_t deadline = mono_now_ms() + 15000;
    while ((v = wait_frame(l, "dlq/f1", &seq, deadline)) &&
           !(num(v, "dlq/f1") == 1 && num(v, "egress/f1") > 0 && num(v, "p99/f1") <= 10))
        json_decref(v);
    assert_non_null(v);
    show("one down", v, t0);
    assert_true(num(v, "lag/f1") == 5); /* A's alone */
    json_decref(v);
    printf("ndd_gui_scrape_errors_total{endpoint=\"%s\"} %llu\n", ep,
           (unsigned long long)(metrics_counter_get(errors) - errors0));
    assert_true(metrics_counter_get(errors) > errors0);

    /* B back, with counters of a long life (100,000 scrapes: 10^8 copies acknowledged): its
     * first answer has no previous one to take a rate from, so no frame may show its whole
     * count as one interval's (10^9 copies/s); one poll later its rate adds in again. */
    b.scrapes = 100000;
    assert_int_equal(server_listen(&b, a.port), 0);
    max_egress = 0;
    deadline = mono_now_ms() + 15000;
    while ((v = wait_frame(l, "dlq/f1", &seq, deadline)) &&
           !(num(v, "dlq/f1") == 3 && num(v, "p99/f1") > 100))
        json_decref(v);
    assert_non_null(v);
    show("back", v, t0);
    json_decref(v);
    printf("highest egress/f1 since B came back: %.0f copies/s\n", max_egress);
    assert_true(max_egress < 1e6); /* about 1,010 copies per poll of 100 ms */

    gui_live_free(l);
    server_stop(&a);
    server_stop(&b); /* back since "B back": its thread must not outlive this frame */
    unlink(tokfile);
    gui_http_tls_free();
    tls_ctx_free(tls);
    printf("took %lld ms\n", (long long)(mono_now_ms() - t0));
}

static void test_every_address_of_the_name_is_scraped_and_summed(void **st)
{
    (void)st;
    scenario(NULL);
}

static void test_https_names_the_url_host_to_every_address(void **st)
{
    (void)st;
    tls_testutil_pki_t pki;
    assert_int_equal(tls_testutil_make_pki(&pki), 0);
    scenario(&pki);
    tls_testutil_remove_pki(&pki);
}

/* Eight addresses that accept a connection (the kernel's backlog) and never answer, listed
 * before the two pods: read at once, they cost one upstream-timeout (1 s) per poll, not
 * eight, and the pods' figures still come. */
static void test_silent_addresses_cost_one_timeout_not_one_each(void **st)
{
    (void)st;
    server_t a = {.ip = "127.0.0.2", .acked_step = 10, .dlq = 1, .lag = 5, .le = 0.005};
    server_t b = {.ip = "127.0.0.3", .acked_step = 1000, .dlq = 2, .lag = 70, .le = 0.5};
    static const char *const ips[] = {"127.0.0.4", "127.0.0.5", "127.0.0.6",  "127.0.0.7",
                                      "127.0.0.8", "127.0.0.9", "127.0.0.10", "127.0.0.11",
                                      "127.0.0.2", "127.0.0.3", NULL};
    int silent[8];
    assert_int_equal(server_listen(&a, 0), 0);
    assert_int_equal(server_listen(&b, a.port), 0);
    for (int i = 0; i < 8; i++) {
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)a.port)};
        inet_pton(AF_INET, ips[i], &sa.sin_addr);
        silent[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_int_equal(bind(silent[i], (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(listen(silent[i], 64), 0);
    }
    pods_name = "slow.test";
    pod_ips = ips;
    char tokfile[64], urls[128], err[512], ep[64];
    token_file_make(tokfile, sizeof(tokfile));
    snprintf(urls, sizeof(urls), "http://slow.test:%u/metrics", a.port);
    snprintf(ep, sizeof(ep), "slow.test:%u", a.port);
    gui_settings_t s = {.admin_url = "http://127.0.0.1:1",
                        .poll_ms = 100,
                        .history_points = 100,
                        .metrics_urls = urls,
                        .token_file = tokfile,
                        .upstream_timeout_ms = 1000};
    gui_live_t *l = gui_live_new(&s, NULL, err, sizeof(err));
    assert_non_null(l);
    gui_live_set_resolver(l, two_pods);
    metrics_counter_t *errors =
        metrics_counter_labels(metrics_counter_new(metrics_default_registry(),
                                                   "ndd_gui_scrape_errors_total", "", "endpoint"),
                               ep);
    int64_t t0 = mono_now_ms(), seq = 0;
    assert_int_equal(gui_live_start(l), 0);
    json_t *v = wait_frame(l, "egress/f1", &seq, mono_now_ms() + 30000);
    int64_t took = mono_now_ms() - t0;
    assert_non_null(v);
    show("with 8 silent addresses", v, t0);
    assert_true(num(v, "dlq/f1") == 3 && num(v, "lag/f1") == 75);
    json_decref(v);
    printf("two polls took %lld ms (one after the other: 16 s); scrape errors %llu\n",
           (long long)took, (unsigned long long)metrics_counter_get(errors));
    assert_true(took < 6000);
    assert_true(metrics_counter_get(errors) >= 8);
    gui_live_free(l);
    for (int i = 0; i < 8; i++)
        close(silent[i]);
    server_stop(&a);
    server_stop(&b);
    unlink(tokfile);
    pod_ips = two_ips;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_address_of_the_name_is_scraped_and_summed),
        cmocka_unit_test(test_https_names_the_url_host_to_every_address),
        cmocka_unit_test(test_silent_addresses_cost_one_timeout_not_one_each),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
