/* `ndd-admin backup FILE` and `ndd-admin restore FILE`: the admin's PostgreSQL schema (its
 * objects, tokens, audit log, alarms and migrations) saved to, and brought back from, one
 * file in pg_dump's custom format (docs/georedundancy.md).
 *
 * Both run PostgreSQL's own pg_dump / pg_restore (from $NDD_PG_BIN, else PATH) so the file is
 * a standard one an operator can also inspect with `pg_restore --list`. The admin's conninfo
 * (--pg, --pg-file or NDD_PG) is split with libpq and handed to the child as PG* environment
 * variables, never as arguments: a password in it would otherwise show in the process list.
 * Nothing here prints the conninfo.
 *
 * backup writes FILE.partial and renames it, so FILE is either the previous one or a whole new
 * dump. restore refuses a schema that already has tables (it is for an empty database, a new
 * site or a rebuilt one) and a file that does not hold the configured schema; it runs in one
 * transaction, so a failure leaves the database as it was. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "admin_server.h"

/* The program's path: $NDD_PG_BIN/name when set, else name (looked up in PATH). */
static void pg_tool(char *out, size_t len, const char *name)
{
    const char *dir = getenv("NDD_PG_BIN");
    if (dir && *dir)
        snprintf(out, len, "%s/%s", dir, name);
    else
        snprintf(out, len, "%s", name);
}

/* In the child: the conninfo's parameters as the PG* variables libpq's tools read. */
static int conninfo_to_env(const char *conninfo)
{
    char *perr = NULL;
    PQconninfoOption *opts = PQconninfoParse(conninfo, &perr);
    if (!opts) {
        /* libpq's message names the bad keyword, not the values */
        fprintf(stderr, "ndd-admin: pg: %s", perr ? perr : "cannot parse the conninfo\n");
        PQfreemem(perr);
        return -1;
    }
    for (PQconninfoOption *o = opts; o->keyword; o++)
        if (o->val && *o->val && o->envvar)
            setenv(o->envvar, o->val, 1);
    PQconninfoFree(opts);
    return 0;
}

/* Runs argv with the conninfo in its environment; stdout to out_fd when >= 0. Returns the
 * child's exit status, -1 when it could not run. */
static int run_pg_tool(const char *conninfo, char *const argv[], int out_fd)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "ndd-admin: fork for %s: %s\n", argv[0], strerror(errno));
        return -1;
    }
    if (pid == 0) {
        if (conninfo_to_env(conninfo) != 0)
            _exit(125);
        if (out_fd >= 0 && dup2(out_fd, STDOUT_FILENO) < 0)
            _exit(125);
        execvp(argv[0], argv);
        fprintf(stderr,
                "ndd-admin: cannot run %s: %s (PostgreSQL's client tools; set "
                "NDD_PG_BIN to their folder)\n",
                argv[0], strerror(errno));
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The database name restore connects to (pg_restore needs one): the conninfo's dbname, else
 * its user (libpq's own default), else "" (then PGDATABASE or the login name apply). */
static void conninfo_dbname(const char *conninfo, char *out, size_t len)
{
    out[0] = '\0';
    PQconninfoOption *opts = PQconninfoParse(conninfo, NULL);
    for (PQconninfoOption *o = opts; o && o->keyword; o++)
        if ((strcmp(o->keyword, "dbname") == 0 || (!out[0] && strcmp(o->keyword, "user") == 0)) &&
            o->val && *o->val)
            snprintf(out, len, "%s", o->val);
    PQconninfoFree(opts);
}

static int admin_backup(const admin_settings_t *s, const char *file)
{
    char tool[512], part[4096], fopt[4200], nopt[300];
    pg_tool(tool, sizeof(tool), "pg_dump");
    snprintf(part, sizeof(part), "%s.partial", file);
    snprintf(fopt, sizeof(fopt), "--file=%s", part);
    snprintf(nopt, sizeof(nopt), "--schema=%s", s->db_schema);
    char *argv[] = {tool, "--format=custom", "--no-owner", "--no-privileges", nopt, fopt, NULL};
    int rc = run_pg_tool(s->db, argv, -1);
    struct stat st;
    if (rc != 0 || stat(part, &st) != 0) {
        fprintf(stderr, "ndd-admin backup: pg_dump of schema %s failed (exit %d); %s not written\n",
                s->db_schema, rc, file);
        unlink(part);
        return 1;
    }
    if (rename(part, file) != 0) {
        fprintf(stderr, "ndd-admin backup: rename %s to %s: %s\n", part, file, strerror(errno));
        unlink(part);
        return 1;
    }
    printf("backup: schema %s -> %s (%lld bytes)\n", s->db_schema, file, (long long)st.st_size);
    return 0;
}

/* 1 when the file's table of contents creates schema `schema`, 0 when not, -1 on error. */
static int dump_has_schema(const admin_settings_t *s, const char *file)
{
    char tool[512], path[4096];
    pg_tool(tool, sizeof(tool), "pg_restore");
    snprintf(path, sizeof(path), "%s", file);
    char *argv[] = {tool, "--list", path, NULL};
    FILE *toc = tmpfile();
    if (!toc)
        return -1;
    int rc = run_pg_tool(s->db, argv, fileno(toc)), found = 0;
    char line[1024], want[300];
    /* a TOC line: "5; 2615 16385 SCHEMA - ndd ndd" (the owner last) */
    snprintf(want, sizeof(want), " SCHEMA - %s ", s->db_schema);
    rewind(toc);
    while (rc == 0 && fgets(line, sizeof(line), toc))
        if (line[0] != ';' && strstr(line, want))
            found = 1;
    fclose(toc);
    return rc == 0 ? found : -1;
}

/* Tables already in the schema (-1: cannot tell): restore goes into an empty one only. */
static long schema_tables(const admin_settings_t *s)
{
    PGconn *c = PQconnectdb(s->db);
    long n = -1;
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "ndd-admin restore: PostgreSQL: %s", PQerrorMessage(c));
    } else {
        const char *p[1] = {s->db_schema};
        PGresult *r = PQexecParams(c, "SELECT count(*) FROM pg_tables WHERE schemaname = $1", 1,
                                   NULL, p, NULL, NULL, 0);
        if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
            n = strtol(PQgetvalue(r, 0, 0), NULL, 10);
        else
            fprintf(stderr, "ndd-admin restore: schema %s: %s", s->db_schema,
                    PQresultErrorMessage(r));
        PQclear(r);
    }
    PQfinish(c);
    return n;
}

static int admin_restore(const admin_settings_t *s, const char *file)
{
    if (access(file, R_OK) != 0) {
        fprintf(stderr, "ndd-admin restore: %s: %s\n", file, strerror(errno));
        return 1;
    }
    int has = dump_has_schema(s, file);
    if (has != 1) {
        fprintf(stderr, "ndd-admin restore: %s %s schema %s (--db-schema)\n", file,
                has < 0 ? "is not a readable pg_dump custom-format file with" : "does not hold",
                s->db_schema);
        return 1;
    }
    long tables = schema_tables(s);
    if (tables != 0) {
        if (tables > 0)
            fprintf(stderr,
                    "ndd-admin restore: schema %s already has %ld tables; restore goes "
                    "into an empty database or schema (drop it first)\n",
                    s->db_schema, tables);
        return 1;
    }
    char tool[512], dbopt[600], path[4096];
    pg_tool(tool, sizeof(tool), "pg_restore");
    conninfo_dbname(s->db, dbopt + 9, sizeof(dbopt) - 9);
    memcpy(dbopt, "--dbname=", 9);
    snprintf(path, sizeof(path), "%s", file);
    char *argv[] = {
        tool, "--no-owner", "--no-privileges", "--exit-on-error", "--single-transaction", dbopt,
        path, NULL};
    int rc = run_pg_tool(s->db, argv, -1);
    if (rc != 0) {
        fprintf(stderr, "ndd-admin restore: pg_restore of %s failed (exit %d); nothing restored\n",
                file, rc);
        return 1;
    }
    printf("restore: %s -> schema %s (%ld tables)\n", file, s->db_schema, schema_tables(s));
    return 0;
}

int admin_backup_command(const admin_settings_t *s, const char *verb, const char *file)
{
    if (!s->db || !*s->db) {
        fprintf(stderr,
                "ndd-admin %s: no PostgreSQL: set --pg CONNINFO, --pg-file FILE or "
                "NDD_PG\n",
                verb);
        return 2;
    }
    if (!file || !*file || file[0] == '-') {
        fprintf(stderr, "usage: ndd-admin backup|restore FILE [--pg-file F] [--db-schema S]\n");
        return 2;
    }
    return strcmp(verb, "backup") == 0 ? admin_backup(s, file) : admin_restore(s, file);
}
