#include "pg_testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <libpq-fe.h>

const char *ptu_conninfo(void)
{
    const char *pg = getenv("NDD_TEST_PG");
    if (!pg || !*pg) {
        fprintf(stderr, "NDD_TEST_PG is not set: give a libpq conninfo of a PostgreSQL the test "
                        "may create schemas in (deploy/local/stack.sh start prints one)\n");
        exit(1);
    }
    return pg;
}

/* key='value' with ' and \ escaped, as libpq reads it. */
static size_t ptu_param(char *buf, size_t n, size_t cap, const char *key, const char *val)
{
    if (n + 1 >= cap)
        return n;
    n += (size_t)snprintf(buf + n, cap - n, "%s='", key);
    for (const char *v = val; *v && n + 3 < cap; v++) {
        if (*v == '\'' || *v == '\\')
            buf[n++] = '\\';
        buf[n++] = *v;
    }
    if (n < cap)
        n += (size_t)snprintf(buf + n, cap - n, "' ");
    return n < cap ? n : cap - 1;
}

htu_proxy_t *ptu_proxy_conninfo(char *out, size_t cap)
{
    char *errmsg = NULL;
    PQconninfoOption *opts = PQconninfoParse(ptu_conninfo(), &errmsg);
    if (!opts)
        fail_msg("NDD_TEST_PG does not parse: %s", errmsg ? errmsg : "?");
    const char *host = NULL, *port = "5432";
    for (PQconninfoOption *o = opts; o->keyword; o++) {
        if (strcmp(o->keyword, "host") == 0 && o->val)
            host = o->val;
        if (strcmp(o->keyword, "port") == 0 && o->val)
            port = o->val;
    }
    htu_proxy_t *proxy = htu_proxy_start(host ? host : "/var/run/postgresql", (uint16_t)atoi(port));
    assert_non_null(proxy);
    size_t n = 0;
    out[0] = '\0';
    for (PQconninfoOption *o = opts; o->keyword; o++)
        if (o->val && strcmp(o->keyword, "host") != 0 && strcmp(o->keyword, "hostaddr") != 0 &&
            strcmp(o->keyword, "port") != 0)
            n = ptu_param(out, n, cap, o->keyword, o->val);
    PGconn *c = PQconnectdb(ptu_conninfo());
    if (PQstatus(c) != CONNECTION_OK)
        fail_msg("NDD_TEST_PG: cannot connect: %s", PQerrorMessage(c));
    const char *pw = PQpass(c);
    if (pw && *pw && !strstr(out, "password="))
        n = ptu_param(out, n, cap, "password", pw);
    PQfinish(c);
    snprintf(out + n, cap - n, "host=127.0.0.1 port=%u", (unsigned)htu_proxy_port(proxy));
    PQconninfoFree(opts);
    return proxy;
}

static void ptu_quiet_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

void ptu_drop_schema(const char *schema)
{
    PGconn *c = PQconnectdb(ptu_conninfo());
    PQsetNoticeProcessor(c, ptu_quiet_notice, NULL);
    if (PQstatus(c) == CONNECTION_OK) {
        char *q = PQescapeIdentifier(c, schema, strlen(schema));
        if (q) {
            char sql[200];
            snprintf(sql, sizeof(sql), "DROP SCHEMA IF EXISTS %s CASCADE", q);
            PQfreemem(q);
            PQclear(PQexec(c, sql));
        }
    }
    PQfinish(c);
}

void ptu_admin_token(const char *admin_bin, const char *schema, const char *role, const char *name,
                     const char *log, char *tok, size_t len)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "'%s' token create --role %s --name %s --db-schema %s 2>>%s",
             admin_bin, role, name, schema, log);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char buf[256] = "";
    char *got = fgets(buf, sizeof(buf), p);
    int st = pclose(p);
    if (!got || st != 0)
        fail_msg("token create --role %s failed (status %d); see %s", role, st, log);
    buf[strcspn(buf, "\n")] = '\0';
    assert_true(strncmp(buf, "ndd_", 4) == 0);
    snprintf(tok, len, "%s", buf);
}
