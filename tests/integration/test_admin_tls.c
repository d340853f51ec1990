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

static const char *test_pg(void)
{
    const char *pg = getenv("NDD_TEST_PG");
    if (!pg || !*pg) {
        fprintf(stderr, "NDD_TEST_PG is not set: give a libpq conninfo of a PostgreSQL the test "
                        "may create schemas in (deploy/local/stack.sh start prints one)\n");
        exit(1);
    }
    return pg;
}

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
    setenv("NDD_PG", test_pg(), 1);
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

    char cmd[512];
    snprintf(cmd, sizeof(cmd), "'%s' token create --role viewer --name tls --db-schema %s 2>>%s",
             NDD_ADMIN_BIN, fx.schema, fx.log_file);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char tok[128] = "";
    assert_non_null(fgets(tok, sizeof(tok), p));
    assert_int_equal(pclose(p), 0);
    tok[strcspn(tok, "\n")] = '\0';
    snprintf(fx.token, sizeof(fx.token), "-H 'Authorization: Bearer %s'", tok);

    char *argv[] = {NDD_ADMIN_BIN,
                    "--port",
                    "0",
                    "--port-file",
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
    PGconn *c = PQconnectdb(test_pg());
    if (PQstatus(c) == CONNECTION_OK) {
        char sql[160];
        snprintf(sql, sizeof(sql), "DROP SCHEMA IF EXISTS %s CASCADE", fx.schema);
        PQclear(PQexec(c, "SET client_min_messages = warning"));
        PQclear(PQexec(c, sql));
    }
    PQfinish(c);
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
