/* ndd-gui-api against a TLS admin that requires client certificates (ndd-admin's tls-ca +
 * tls-client-auth), as the chart runs them with admin.tls.enabled: the console's login goes
 * through the admin's GET /api/v1/whoami, so a login answered 200 proves the TLS exchange
 * (the admin verified the console's client certificate, the console the admin's certificate
 * against admin-tls-ca and its name), and 502 that it was refused. Real PostgreSQL
 * (NDD_TEST_PG); no Kafka. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "kafka_testutil.h"
#include "pg_testutil.h"
#include "tls_testutil.h"

#ifndef NDD_ADMIN_BIN
#define NDD_ADMIN_BIN NDD_BINARY_DIR "/admin/ndd-admin"
#endif
#define NDD_GUI_BIN NDD_BINARY_DIR "/gui-api/ndd-gui-api"

static struct {
    tls_testutil_pki_t pki;
    char schema[64];
    char dir[128]; /* port files, logs, the web root */
    char token[100];
    pid_t admin_pid;
    unsigned admin_port;
} fx;

/* Waits for a daemon's port file; fails the test when the daemon exits or 20 s pass. */
static unsigned wait_port(pid_t pid, const char *port_file, const char *log)
{
    unsigned port = 0;
    int64_t deadline = ktu_now_ms() + 20000;
    while (ktu_now_ms() < deadline && !port) {
        int st;
        if (!ktu_alive(pid, &st))
            fail_msg("daemon exited (status %d); see %s", st, log);
        FILE *f = fopen(port_file, "r");
        if (f) {
            if (fscanf(f, "%u", &port) != 1)
                port = 0;
            fclose(f);
        }
        if (!port)
            ktu_sleep_ms(50);
    }
    if (!port)
        fail_msg("no port file %s within 20 s; see %s", port_file, log);
    return port;
}

static int setup(void **state)
{
    setenv("NDD_PG", ptu_conninfo(), 1);
    unsetenv("NDD_KAFKA");
    char suffix[64];
    ktu_unique_name("x", suffix, sizeof(suffix));
    snprintf(fx.schema, sizeof(fx.schema), "ndd_test_tlsgui_%.40s", suffix + 2);
    for (char *p = fx.schema; *p; p++)
        if (*p == '-')
            *p = '_';
    snprintf(fx.dir, sizeof(fx.dir), "/tmp/%s", fx.schema);
    char path[256];
    snprintf(path, sizeof(path), "%s/web", fx.dir);
    if (mkdir(fx.dir, 0700) != 0 || mkdir(path, 0700) != 0)
        fail_msg("cannot make %s", path);
    snprintf(path, sizeof(path), "%s/web/index.html", fx.dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("<!doctype html><title>console</title>\n", f);
    fclose(f);
    if (tls_testutil_make_pki(&fx.pki) != 0)
        fail_msg("cannot make the test PKI");
    char log[256], port_file[256];
    snprintf(log, sizeof(log), "%s/admin.log", fx.dir);
    snprintf(port_file, sizeof(port_file), "%s/admin.port", fx.dir);
    ptu_admin_token(NDD_ADMIN_BIN, fx.schema, "viewer", "console", log, fx.token, sizeof(fx.token));
    char *argv[] = {NDD_ADMIN_BIN,
                    "--http.port",
                    "0",
                    "--http.port-file",
                    port_file,
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
    fx.admin_pid = ktu_spawn(argv, NULL, log);
    assert_true(fx.admin_pid > 0);
    fx.admin_port = wait_port(fx.admin_pid, port_file, log);
    return 0;
}

static int teardown(void **state)
{
    if (fx.admin_pid > 0)
        ktu_stop(fx.admin_pid, SIGTERM, 10000);
    ptu_drop_schema(fx.schema);
    tls_testutil_remove_pki(&fx.pki);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx.dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", fx.dir);
    return 0;
}

/* Runs ndd-gui-api with admin-url https://127.0.0.1:<admin> and the given TLS settings (NULL:
 * not set), logs in with the token and returns the login's HTTP status. */
static int console_login(const char *name, const char *ca, const char *cert, const char *key)
{
    char log[256], port_file[256], web[256], url[64];
    snprintf(log, sizeof(log), "%s/%s.log", fx.dir, name);
    snprintf(port_file, sizeof(port_file), "%s/%s.port", fx.dir, name);
    snprintf(web, sizeof(web), "%s/web", fx.dir);
    snprintf(url, sizeof(url), "https://127.0.0.1:%u", fx.admin_port);
    char *argv[20] = {NDD_GUI_BIN, "--http.port", "0", "--http.port-file", port_file, "--web-root",
                      web,         "--admin-url", url, "--log.level",      "debug"};
    int n = 11;
    if (ca) {
        argv[n++] = "--admin-tls-ca";
        argv[n++] = (char *)ca;
    }
    if (cert) {
        argv[n++] = "--admin-tls-cert";
        argv[n++] = (char *)cert;
        argv[n++] = "--admin-tls-key";
        argv[n++] = (char *)key;
    }
    argv[n] = NULL;
    pid_t pid = ktu_spawn(argv, NULL, log);
    assert_true(pid > 0);
    unsigned port = wait_port(pid, port_file, log);
    char cmd[512];
    snprintf(cmd, sizeof(cmd),
             "curl -s -o /dev/null -w '%%{http_code}' --max-time 10 -X POST "
             "-H 'Content-Type: application/json' --data '{\"token\":\"%s\"}' "
             "http://127.0.0.1:%u/console/login",
             fx.token, port);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char out[16] = "";
    if (!fgets(out, sizeof(out), p))
        out[0] = '\0';
    pclose(p);
    ktu_stop(pid, SIGTERM, 10000);
    return atoi(out);
}

static void test_console_with_client_certificate_logs_in(void **state)
{
    assert_int_equal(console_login("mtls", fx.pki.ca_cert, fx.pki.client_cert, fx.pki.client_key),
                     200);
}

static void test_console_without_client_certificate_is_refused(void **state)
{
    assert_int_equal(console_login("nocert", fx.pki.ca_cert, NULL, NULL), 502);
}

static void test_console_refuses_an_admin_from_another_ca(void **state)
{
    assert_int_equal(
        console_login("otherca", fx.pki.other_ca_cert, fx.pki.client_cert, fx.pki.client_key), 502);
}

/* --check-config: exit status of ndd-gui-api with these arguments appended. */
static int check_config(const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "'%s' --web-root /tmp --check-config %s >/dev/null 2>&1",
             NDD_GUI_BIN, args);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_check_config_of_the_admin_tls_settings(void **state)
{
    assert_int_equal(check_config("--admin-url https://admin:9100 --admin-tls-ca /x/ca.crt "
                                  "--admin-tls-cert /x/tls.crt --admin-tls-key /x/tls.key"),
                     0);
    assert_int_equal(check_config("--admin-url https://admin:9100 --admin-tls-cert /x/tls.crt"), 2);
    assert_int_equal(check_config("--admin-url http://admin:9100 --admin-tls-ca /x/ca.crt"), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_console_with_client_certificate_logs_in),
        cmocka_unit_test(test_console_without_client_certificate_is_refused),
        cmocka_unit_test(test_console_refuses_an_admin_from_another_ca),
        cmocka_unit_test(test_check_config_of_the_admin_tls_settings),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
