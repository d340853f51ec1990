/* TLS helpers: real handshakes between a client and a server SSL over a socketpair, with the
 * throwaway PKI of tls_testutil. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>

#include "tls.h"
#include "tls_testutil.h"

static tls_testutil_pki_t pki;

static int setup_pki(void **state)
{
    return tls_testutil_make_pki(&pki);
}

static int teardown_pki(void **state)
{
    tls_testutil_remove_pki(&pki);
    return 0;
}

typedef struct hs_result {
    int client_ok;
    int server_ok;
    char client_err[512];
    char server_err[512];
} hs_result_t;

/* Drives both handshakes over a non-blocking socketpair until both finish or one fails. */
static void handshake(SSL_CTX *cctx, SSL_CTX *sctx, const char *host, hs_result_t *r,
                      SSL **cssl_out, SSL **sssl_out)
{
    int sv[2];
    char err[256];
    memset(r, 0, sizeof *r);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    SSL *c = tls_client_ssl_new(cctx, host, err, sizeof err);
    SSL *s = tls_server_ssl_new(sctx, err, sizeof err);
    assert_non_null(c);
    assert_non_null(s);
    SSL_set_fd(c, sv[0]);
    SSL_set_fd(s, sv[1]);
    SSL_set_connect_state(c);
    SSL_set_accept_state(s);
    int cdone = 0, sdone = 0, cfail = 0, sfail = 0;
    for (int i = 0; i < 1000 && !(cdone && sdone) && !cfail && !sfail; i++) {
        if (!cdone) {
            int rc = SSL_do_handshake(c);
            if (rc == 1) {
                cdone = 1;
            } else {
                int e = SSL_get_error(c, rc);
                if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
                    cfail = 1;
                    tls_describe_error(c, rc, "test-endpoint:443", r->client_err,
                                       sizeof r->client_err);
                }
            }
        }
        if (!sdone) {
            int rc = SSL_do_handshake(s);
            if (rc == 1) {
                sdone = 1;
            } else {
                int e = SSL_get_error(s, rc);
                if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
                    sfail = 1;
                    tls_describe_error(s, rc, "test-client", r->server_err, sizeof r->server_err);
                }
            }
        }
    }
    /* TLS 1.3: the server checks the client cert after the client has finished; each side
     * learns of the other's refusal only on its next read. */
    char b;
    if (cdone && sdone) {
        int rc = SSL_read(s, &b, 1);
        int e = SSL_get_error(s, rc);
        if (rc <= 0 && e != SSL_ERROR_WANT_READ) {
            sfail = 1;
            tls_describe_error(s, rc, "test-client", r->server_err, sizeof r->server_err);
        }
    }
    if (cdone && !cfail) {
        int rc = SSL_read(c, &b, 1);
        int e = SSL_get_error(c, rc);
        if (rc <= 0 && e != SSL_ERROR_WANT_READ) {
            cfail = 1;
            tls_describe_error(c, rc, "test-endpoint:443", r->client_err, sizeof r->client_err);
        }
    }
    r->client_ok = cdone && !cfail;
    r->server_ok = sdone && !sfail;
    if (cssl_out && r->client_ok) {
        *cssl_out = c;
    } else {
        SSL_free(c);
    }
    if (sssl_out && r->server_ok) {
        *sssl_out = s;
    } else {
        SSL_free(s);
    }
    close(sv[0]);
    close(sv[1]);
    ERR_clear_error();
}

static SSL_CTX *server_ctx(const tls_config_t *cfg)
{
    char err[512];
    SSL_CTX *ctx = tls_server_ctx_new(cfg, err, sizeof err);
    if (!ctx)
        fail_msg("server ctx: %s", err);
    return ctx;
}

static SSL_CTX *client_ctx(const tls_config_t *cfg)
{
    char err[512];
    SSL_CTX *ctx = tls_client_ctx_new(cfg, err, sizeof err);
    if (!ctx)
        fail_msg("client ctx: %s", err);
    return ctx;
}

static void test_handshake_succeeds_with_test_ca_and_hostname(void **state)
{
    tls_config_t sc = {.cert_file = pki.server_cert, .key_file = pki.server_key};
    tls_config_t cc = {.ca_file = pki.ca_cert};
    SSL_CTX *s = server_ctx(&sc), *c = client_ctx(&cc);
    hs_result_t r;
    SSL *cssl = NULL;
    handshake(c, s, "localhost", &r, &cssl, NULL);
    assert_true(r.client_ok);
    assert_true(r.server_ok);
    assert_non_null(cssl);
    assert_int_equal(SSL_get_verify_result(cssl), X509_V_OK);
    assert_true(SSL_version(cssl) >= TLS1_2_VERSION);
    SSL_free(cssl);
    /* An IP literal is verified against the IP SAN. */
    handshake(c, s, "127.0.0.1", &r, NULL, NULL);
    assert_true(r.client_ok);
    tls_ctx_free(s);
    tls_ctx_free(c);
}

static void test_unknown_ca_refused_with_clear_error(void **state)
{
    tls_config_t sc = {.cert_file = pki.other_server_cert, .key_file = pki.other_server_key};
    tls_config_t cc = {.ca_file = pki.ca_cert};
    SSL_CTX *s = server_ctx(&sc), *c = client_ctx(&cc);
    hs_result_t r;
    handshake(c, s, "localhost", &r, NULL, NULL);
    assert_false(r.client_ok);
    assert_string_equal(r.client_err, "certificate verify failed: unable to get local issuer "
                                      "certificate (endpoint test-endpoint:443)");
    tls_ctx_free(s);
    tls_ctx_free(c);
}

static void test_hostname_mismatch_refused(void **state)
{
    tls_config_t sc = {.cert_file = pki.server_cert, .key_file = pki.server_key};
    tls_config_t cc = {.ca_file = pki.ca_cert};
    SSL_CTX *s = server_ctx(&sc), *c = client_ctx(&cc);
    hs_result_t r;
    handshake(c, s, "other.example.org", &r, NULL, NULL);
    assert_false(r.client_ok);
    assert_non_null(strstr(r.client_err, "certificate verify failed: hostname mismatch"));
    handshake(c, s, "10.9.8.7", &r, NULL, NULL);
    assert_false(r.client_ok);
    assert_non_null(strstr(r.client_err, "IP address mismatch"));
    tls_ctx_free(s);
    tls_ctx_free(c);
}

static void test_insecure_no_verify_accepts_unknown_ca(void **state)
{
    tls_config_t sc = {.cert_file = pki.other_server_cert, .key_file = pki.other_server_key};
    tls_config_t cc = {.ca_file = pki.ca_cert, .insecure_no_verify = true};
    SSL_CTX *s = server_ctx(&sc), *c = client_ctx(&cc);
    hs_result_t r;
    handshake(c, s, "wrong.example.org", &r, NULL, NULL);
    assert_true(r.client_ok);
    tls_ctx_free(s);
    tls_ctx_free(c);
}

static void test_mtls_without_client_cert_refused(void **state)
{
    tls_config_t sc = {.cert_file = pki.server_cert,
                       .key_file = pki.server_key,
                       .ca_file = pki.ca_cert,
                       .require_client_cert = true};
    tls_config_t cc = {.ca_file = pki.ca_cert};
    SSL_CTX *s = server_ctx(&sc), *c = client_ctx(&cc);
    hs_result_t r;
    handshake(c, s, "localhost", &r, NULL, NULL);
    assert_false(r.server_ok);
    assert_non_null(strstr(r.server_err, "peer did not return a certificate"));
    assert_false(r.client_ok);
    tls_ctx_free(s);
    tls_ctx_free(c);
}

static void test_mtls_with_client_cert_succeeds_and_foreign_client_refused(void **state)
{
    tls_config_t sc = {.cert_file = pki.server_cert,
                       .key_file = pki.server_key,
                       .ca_file = pki.ca_cert,
                       .require_client_cert = true};
    tls_config_t cc = {
        .ca_file = pki.ca_cert, .cert_file = pki.client_cert, .key_file = pki.client_key};
    SSL_CTX *s = server_ctx(&sc), *c = client_ctx(&cc);
    hs_result_t r;
    SSL *sssl = NULL;
    handshake(c, s, "localhost", &r, NULL, &sssl);
    assert_true(r.client_ok);
    assert_true(r.server_ok);
    X509 *peer = SSL_get1_peer_certificate(sssl);
    assert_non_null(peer);
    X509_free(peer);
    SSL_free(sssl);

    /* A client cert from another CA is refused by the server. */
    tls_config_t oc = {.ca_file = pki.ca_cert,
                       .cert_file = pki.other_server_cert,
                       .key_file = pki.other_server_key};
    SSL_CTX *o = client_ctx(&oc);
    handshake(o, s, "localhost", &r, NULL, NULL);
    assert_false(r.server_ok);
    assert_non_null(strstr(r.server_err, "certificate verify failed"));
    tls_ctx_free(o);
    tls_ctx_free(s);
    tls_ctx_free(c);
}

static void test_tls11_client_refused_by_default_server(void **state)
{
    tls_config_t sc = {.cert_file = pki.server_cert, .key_file = pki.server_key};
    tls_config_t cc = {
        .ca_file = pki.ca_cert, .min_version = TLS1_1_VERSION, .max_version = TLS1_1_VERSION};
    SSL_CTX *s = server_ctx(&sc), *c = client_ctx(&cc);
    /* Let the client really offer TLS 1.1, so the refusal is the server's (its default
     * minimum, TLS 1.2), not the client library's own policy. */
    SSL_CTX_set_security_level(c, 0);
    SSL_CTX_set_cipher_list(c, "DEFAULT:@SECLEVEL=0");
    hs_result_t r;
    handshake(c, s, "localhost", &r, NULL, NULL);
    assert_false(r.server_ok);
    assert_false(r.client_ok);
    assert_non_null(strstr(r.server_err, "unsupported protocol"));
    assert_int_equal(SSL_CTX_get_min_proto_version(s), TLS1_2_VERSION);
    tls_ctx_free(s);
    tls_ctx_free(c);
}

static void test_alpn_h2_negotiated(void **state)
{
    tls_config_t sc = {
        .cert_file = pki.server_cert, .key_file = pki.server_key, .alpn = "h2,http/1.1"};
    tls_config_t cc = {.ca_file = pki.ca_cert, .alpn = "http/1.1, h2"};
    SSL_CTX *s = server_ctx(&sc), *c = client_ctx(&cc);
    hs_result_t r;
    SSL *cssl = NULL, *sssl = NULL;
    handshake(c, s, "localhost", &r, &cssl, &sssl);
    assert_true(r.client_ok);
    /* The server's preference wins. */
    assert_true(tls_alpn_is(cssl, "h2"));
    assert_true(tls_alpn_is(sssl, "h2"));
    assert_false(tls_alpn_is(cssl, "http/1.1"));
    SSL_free(cssl);
    SSL_free(sssl);
    tls_ctx_free(c);

    /* A client that does not speak h2 gets no ALPN, and can tell. */
    tls_config_t c1 = {.ca_file = pki.ca_cert, .alpn = "spdy/3"};
    c = client_ctx(&c1);
    handshake(c, s, "localhost", &r, &cssl, NULL);
    assert_true(r.client_ok);
    assert_false(tls_alpn_is(cssl, "h2"));
    assert_false(tls_alpn_is(cssl, "spdy/3"));
    SSL_free(cssl);
    tls_ctx_free(c);
    tls_ctx_free(s);
}

static void test_encrypted_key_loads_with_password_file(void **state)
{
    char err[512];
    tls_config_t sc = {.cert_file = pki.server_cert,
                       .key_file = pki.server_key_encrypted,
                       .key_password_file = pki.server_key_password_file};
    SSL_CTX *s = tls_server_ctx_new(&sc, err, sizeof err);
    assert_non_null(s);
    tls_ctx_free(s);

    /* Without the passphrase: refused, and the message names the file, not a secret. */
    sc.key_password_file = NULL;
    assert_null(tls_server_ctx_new(&sc, err, sizeof err));
    assert_non_null(strstr(err, pki.server_key_encrypted));
    assert_null(strstr(err, "test-passphrase"));

    sc.key_password_file = "/nonexistent/ndd-password";
    assert_null(tls_server_ctx_new(&sc, err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent/ndd-password"));
}

static void test_config_errors_name_the_file(void **state)
{
    char err[512];
    tls_config_t cc = {.ca_file = "/nonexistent/ca.pem"};
    assert_null(tls_client_ctx_new(&cc, err, sizeof err));
    assert_non_null(strstr(err, "cannot load CA file /nonexistent/ca.pem"));

    tls_config_t sc = {.cert_file = pki.server_cert, .key_file = pki.client_key};
    assert_null(tls_server_ctx_new(&sc, err, sizeof err));
    assert_non_null(strstr(err, pki.client_key));
    assert_non_null(strstr(err, "mismatch"));

    tls_config_t nc = {.cert_file = pki.server_cert};
    assert_null(tls_server_ctx_new(&nc, err, sizeof err));

    tls_config_t mc = {
        .cert_file = pki.server_cert, .key_file = pki.server_key, .require_client_cert = true};
    assert_null(tls_server_ctx_new(&mc, err, sizeof err));
    assert_non_null(strstr(err, "ca_file"));

    tls_config_t ac = {.ca_file = pki.ca_cert, .alpn = ",,"};
    assert_null(tls_client_ctx_new(&ac, err, sizeof err));
    assert_non_null(strstr(err, "ALPN"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handshake_succeeds_with_test_ca_and_hostname),
        cmocka_unit_test(test_unknown_ca_refused_with_clear_error),
        cmocka_unit_test(test_hostname_mismatch_refused),
        cmocka_unit_test(test_insecure_no_verify_accepts_unknown_ca),
        cmocka_unit_test(test_mtls_without_client_cert_refused),
        cmocka_unit_test(test_mtls_with_client_cert_succeeds_and_foreign_client_refused),
        cmocka_unit_test(test_tls11_client_refused_by_default_server),
        cmocka_unit_test(test_alpn_h2_negotiated),
        cmocka_unit_test(test_encrypted_key_loads_with_password_file),
        cmocka_unit_test(test_config_errors_name_the_file),
    };
    return cmocka_run_group_tests(tests, setup_pki, teardown_pki);
}
