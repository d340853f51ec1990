/* ndd-admin's optional TLS and mTLS listener, against the real PostgreSQL (NDD_TEST_PG; no
 * Kafka needed). The client is the Debian curl CLI, so the TLS peer is not NDD code. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "kafka_testutil.h"
#include "tls_testutil.h"
#include "pg_testutil.h"

#ifndef NDD_ADMIN_BIN
#define NDD_ADMIN_BIN NDD_BINARY_DIR "/admin/ndd-admin"
#endif

static struct {
    tls_testutil_pki_t pki;
    char schema[64];
    char port_file[128];
    char log_file[128];
    char token[160];
    pid_t pid;
    unsigned port;
} fx;

/* curl's HTTP status ("000" when no HTTP exchange happened) for one request. */
static int curl_status(const char *extra, const char *scheme, const char *auth)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "curl -s -o /dev/null -w '%%{http_code}' --max-time 10 %s %s "
             "'%s://127.0.0.1:%u/api/v1/feeds' 2>/dev/null",
             extra, auth ? auth : "", scheme, fx.port);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char out[16] = "";
    if (!fgets(out, sizeof(out), p))
        out[0] = '\0';
    pclose(p);
    return atoi(out);
}

static int setup(void **state)
{
    setenv("NDD_PG", ptu_conninfo(), 1);
    unsetenv("NDD_KAFKA");
    char suffix[64];
    ktu_unique_name("x", suffix, sizeof(suffix));
    if (snprintf(fx.schema, sizeof(fx.schema), "ndd_test_tls_%s", suffix + 2) >=
        (int)sizeof(fx.schema))
        fail_msg("schema name for suffix %s is too long", suffix);
    for (char *p = fx.schema; *p; p++)
        if (*p == '-')
            *p = '_';
    snprintf(fx.port_file, sizeof(fx.port_file), "/tmp/%s.port", fx.schema);
    snprintf(fx.log_file, sizeof(fx.log_file), "/tmp/%s.log", fx.schema);
    if (tls_testutil_make_pki(&fx.pki) != 0)
        fail_msg("cannot make the test PKI");

    char tok[100]; /* "ndd_" + 16 + "_" + 64 hex digits */
    ptu_admin_token(NDD_ADMIN_BIN, fx.schema, "viewer", "tls", fx.log_file, tok, sizeof(tok));
    snprintf(fx.token, sizeof(fx.token), "-H 'Authorization: Bearer %s'", tok);

    char *argv[] = {NDD_ADMIN_BIN,
                    "--http.port",
                    "0",
                    "--http.port-file",
                    fx.port_file,
                    "--db-schema",
                    fx.schema,
                    "--bootstrap",
                    "",
                    "--tls-cert",
                    fx.pki.server_cert,
                    "--tls-key",
                    fx.pki.server_key,
                    "--tls-ca",
                    fx.pki.ca_cert,
                    "--tls-client-auth",
                    "true",
                    NULL};
    fx.pid = ktu_spawn(argv, NULL, fx.log_file);
    assert_true(fx.pid > 0);
    int64_t deadline = ktu_now_ms() + 20000;
    while (ktu_now_ms() < deadline && !fx.port) {
        int st;
        if (!ktu_alive(fx.pid, &st))
            fail_msg("ndd-admin exited (status %d); see %s", st, fx.log_file);
        FILE *f = fopen(fx.port_file, "r");
        if (f) {
            if (fscanf(f, "%u", &fx.port) != 1)
                fx.port = 0;
            fclose(f);
        }
        if (!fx.port)
            ktu_sleep_ms(50);
    }
    assert_true(fx.port > 0);
    return 0;
}

static int teardown(void **state)
{
    if (fx.pid > 0)
        ktu_stop(fx.pid, SIGTERM, 10000);
    ptu_drop_schema(fx.schema);
    tls_testutil_remove_pki(&fx.pki);
    unlink(fx.port_file);
    unlink(fx.log_file);
    return 0;
}

static void test_mtls_client_with_certificate_and_token_gets_200(void **state)
{
    char extra[1600];
    snprintf(extra, sizeof(extra), "--cacert '%s' --cert '%s' --key '%s'", fx.pki.ca_cert,
             fx.pki.client_cert, fx.pki.client_key);
    assert_int_equal(curl_status(extra, "https", fx.token), 200);
    /* the certificate does not replace the token */
    assert_int_equal(curl_status(extra, "https", NULL), 401);
}

static void test_mtls_refuses_a_client_without_certificate(void **state)
{
    char extra[600];
    snprintf(extra, sizeof(extra), "--cacert '%s'", fx.pki.ca_cert);
    assert_int_equal(curl_status(extra, "https", fx.token), 0);
}

static void test_tls_listener_refuses_plain_http(void **state)
{
    assert_int_equal(curl_status("", "http", fx.token), 0);
}

static void test_client_refuses_server_from_unknown_ca(void **state)
{
    char extra[1600];
    snprintf(extra, sizeof(extra), "--cacert '%s' --cert '%s' --key '%s'", fx.pki.other_ca_cert,
             fx.pki.client_cert, fx.pki.client_key);
    assert_int_equal(curl_status(extra, "https", fx.token), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mtls_client_with_certificate_and_token_gets_200),
        cmocka_unit_test(test_mtls_refuses_a_client_without_certificate),
        cmocka_unit_test(test_tls_listener_refuses_plain_http),
        cmocka_unit_test(test_client_refuses_server_from_unknown_ca),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
