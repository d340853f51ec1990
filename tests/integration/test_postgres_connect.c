/* The real PostgreSQL of the local stack (NDD_TEST_PG, a libpq conninfo string): connect,
 * create a table with a unique name, write and read back through PQexecParams (parameters
 * only, text and binary), and drop it. Also proves the stack enforces password (SCRAM)
 * authentication on TCP, so a wrong secret is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <cmocka.h>
#include <libpq-fe.h>

typedef struct pg_fixture {
    PGconn *conn;
    char table[64];  /* unquoted unique name, for messages */
    char *table_sql; /* quoted identifier from PQescapeIdentifier */
} pg_fixture_t;

static const char *pg_conninfo(void)
{
    const char *ci = getenv("NDD_TEST_PG");
    if (ci == NULL || ci[0] == '\0') {
        fprintf(stderr, "NDD_TEST_PG is not set: this integration test needs the real PostgreSQL "
                        "of the local stack.\nStart one with `deploy/local/stack.sh start` and "
                        "export the NDD_PG=... line it prints as NDD_TEST_PG (tests/run.sh does "
                        "this).\n");
        return NULL;
    }
    return ci;
}

/* Runs a statement that returns no rows; fails the test with the server's message. */
static void pg_must_exec(PGconn *conn, const char *what, const char *sql)
{
    PGresult *r = PQexec(conn, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        fail_msg("%s failed: %s", what, PQerrorMessage(conn));
    PQclear(r);
}

static int group_setup(void **state)
{
    const char *ci = pg_conninfo();
    if (ci == NULL)
        return -1;
    pg_fixture_t *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    f->conn = PQconnectdb(ci);
    if (PQstatus(f->conn) != CONNECTION_OK) {
        fprintf(stderr, "cannot connect to PostgreSQL with NDD_TEST_PG='%s': %s\n", ci,
                PQerrorMessage(f->conn));
        PQfinish(f->conn);
        free(f);
        return -1;
    }
    /* Cleanup's DROP ... IF EXISTS must not print NOTICE lines into the test output. */
    PGresult *quiet = PQexec(f->conn, "SET client_min_messages TO warning");
    PQclear(quiet);
    /* Unique per process and run: the same test may run at once in the sanitizer build. */
    unsigned seed = (unsigned)time(NULL) ^ ((unsigned)getpid() << 16);
    snprintf(f->table, sizeof(f->table), "ndd_it_pg_%ld_%08x", (long)getpid(), rand_r(&seed));
    f->table_sql = PQescapeIdentifier(f->conn, f->table, strlen(f->table));
    if (f->table_sql == NULL) {
        fprintf(stderr, "PQescapeIdentifier(%s): %s\n", f->table, PQerrorMessage(f->conn));
        PQfinish(f->conn);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int group_teardown(void **state)
{
    pg_fixture_t *f = *state;
    if (f == NULL)
        return 0;
    /* Whatever a test left behind goes, so the shared database stays clean. */
    char sql[160];
    snprintf(sql, sizeof(sql), "DROP TABLE IF EXISTS %s", f->table_sql);
    PGresult *r = PQexec(f->conn, sql);
    PQclear(r);
    PQfreemem(f->table_sql);
    PQfinish(f->conn);
    free(f);
    return 0;
}

static void test_connects_over_loopback_tcp_as_ndd_to_postgres_15(void **state)
{
    pg_fixture_t *f = *state;
    assert_int_equal(PQstatus(f->conn), CONNECTION_OK);
    assert_true(PQserverVersion(f->conn) >= 150000);
    assert_string_equal(PQhost(f->conn), "127.0.0.1");

    PGresult *r = PQexecParams(f->conn, "SELECT current_user, current_database(), $1::int + 1", 1,
                               NULL, (const char *const[]){"41"}, NULL, NULL, 0);
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    assert_int_equal(PQntuples(r), 1);
    assert_string_equal(PQgetvalue(r, 0, 0), "ndd");
    assert_string_equal(PQgetvalue(r, 0, 1), "ndd");
    assert_string_equal(PQgetvalue(r, 0, 2), "42");
    PQclear(r);
}

static void test_table_round_trips_values_through_parameters_only(void **state)
{
    pg_fixture_t *f = *state;
    char sql[256];
    snprintf(sql, sizeof(sql),
             "CREATE TABLE %s (id int PRIMARY KEY, name text, note text, body bytea)",
             f->table_sql);
    pg_must_exec(f->conn, "CREATE TABLE", sql);

    /* Values that would break a query built by string pasting must come back verbatim. */
    static const char *const names[] = {"plain", "O'Reilly; DROP TABLE x; --", "ünïcødé \"q\""};
    static const unsigned char body[] = {0x00, 0x01, 0xff, '\'', '\\', 0x00, 'z'};
    snprintf(sql, sizeof(sql), "INSERT INTO %s (id, name, note, body) VALUES ($1, $2, $3, $4)",
             f->table_sql);
    for (int i = 0; i < 3; i++) {
        char id[16];
        snprintf(id, sizeof(id), "%d", i + 1);
        /* Row 2 carries a NULL note; every row carries the binary body with NUL bytes. */
        const char *values[4] = {id, names[i], i == 1 ? NULL : "n", (const char *)body};
        const int lengths[4] = {0, 0, 0, (int)sizeof(body)};
        const int formats[4] = {0, 0, 0, 1};
        PGresult *r = PQexecParams(f->conn, sql, 4, NULL, values, lengths, formats, 0);
        if (PQresultStatus(r) != PGRES_COMMAND_OK)
            fail_msg("INSERT row %d into %s: %s", i + 1, f->table, PQerrorMessage(f->conn));
        assert_string_equal(PQcmdTuples(r), "1");
        PQclear(r);
    }

    snprintf(sql, sizeof(sql), "SELECT id, name, note, body FROM %s WHERE id >= $1 ORDER BY id",
             f->table_sql);
    /* Binary results: body must come back byte for byte, not as an escaped text form. */
    PGresult *r = PQexecParams(f->conn, sql, 1, NULL, (const char *const[]){"1"}, NULL, NULL, 1);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("SELECT from %s: %s", f->table, PQerrorMessage(f->conn));
    assert_int_equal(PQntuples(r), 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(PQgetlength(r, i, 0), 4);
        const unsigned char *idb = (const unsigned char *)PQgetvalue(r, i, 0);
        uint32_t id =
            ((uint32_t)idb[0] << 24) | ((uint32_t)idb[1] << 16) | ((uint32_t)idb[2] << 8) | idb[3];
        assert_int_equal(id, (uint32_t)(i + 1));
        assert_int_equal(PQgetlength(r, i, 1), (int)strlen(names[i]));
        assert_memory_equal(PQgetvalue(r, i, 1), names[i], strlen(names[i]));
        assert_int_equal(PQgetisnull(r, i, 2), i == 1);
        assert_int_equal(PQgetlength(r, i, 3), (int)sizeof(body));
        assert_memory_equal(PQgetvalue(r, i, 3), body, sizeof(body));
    }
    PQclear(r);

    snprintf(sql, sizeof(sql), "DROP TABLE %s", f->table_sql);
    pg_must_exec(f->conn, "DROP TABLE", sql);
    r = PQexecParams(f->conn, "SELECT to_regclass($1) IS NULL", 1, NULL,
                     (const char *const[]){f->table}, NULL, NULL, 0);
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    assert_string_equal(PQgetvalue(r, 0, 0), "t");
    PQclear(r);
}

static void test_wrong_password_is_refused(void **state)
{
    (void)state;
    const char *ci = pg_conninfo();
    assert_non_null(ci);
    /* An explicit password outranks the passfile; the server must refuse it (no trust auth). */
    char bad[1024];
    snprintf(bad, sizeof(bad), "%s password=not-the-password connect_timeout=10", ci);
    PGconn *c = PQconnectdb(bad);
    assert_int_not_equal(PQstatus(c), CONNECTION_OK);
    const char *msg = PQerrorMessage(c);
    if (strstr(msg, "password authentication failed") == NULL)
        fail_msg("expected a password authentication failure, got: %s", msg);
    PQfinish(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connects_over_loopback_tcp_as_ndd_to_postgres_15),
        cmocka_unit_test(test_table_round_trips_values_through_parameters_only),
        cmocka_unit_test(test_wrong_password_is_refused),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
