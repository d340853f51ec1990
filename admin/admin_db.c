/* PostgreSQL: connection, versioned migrations, and every write as one transaction holding
 * the change and its audit row. Parameterised statements only (PQexecParams); the one
 * identifier that cannot be a parameter, the schema name, is checked against
 * [a-z_][a-z0-9_]* and quoted with PQescapeIdentifier.
 *
 * The connection is synchronous and used from the admin's event loop only. When the server
 * goes away, the next statement fails, the call reports 503, and the following call tries
 * one PQreset: reads keep being served from the cache meanwhile. */
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "admin.h"
#include "admin_migrations.h"
#include "log.h"

struct admin_db {
    PGconn *conn;
    int64_t next_reset_ms; /* no reconnect attempt before this (backoff while down) */
    int64_t reset_backoff_ms;
    char schema[64];
    char *schema_quoted;
    bool ok;
    int version;
};

#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
#define OBJ_COLS "kind, id, name, version, " TS("created_at") ", " TS("updated_at") ", body::text"

/* Keeps the admin's migrations from racing each other when two admins start together. */
#define ADMIN_DB_LOCK_KEY 0x4e444441444d494eLL /* "NDDADMIN" */

static bool admin_db_conn_lost(admin_db_t *db)
{
    return PQstatus(db->conn) != CONNECTION_OK;
}

/* Runs one statement; NULL on failure with err set: 503 when the server is unreachable. */
static PGresult *admin_db_exec(admin_db_t *db, const char *sql, int n, const char *const *params,
                               admin_err_t *err)
{
    PGresult *r = PQexecParams(db->conn, sql, n, NULL, params, NULL, NULL, 0);
    ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
        db->ok = true;
        return r;
    }
    const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    char msg[200];
    snprintf(msg, sizeof(msg), "%s", r ? PQresultErrorMessage(r) : PQerrorMessage(db->conn));
    msg[strcspn(msg, "\n")] = '\0';
    if (admin_db_conn_lost(db) || !state || strncmp(state, "08", 2) == 0 ||
        strncmp(state, "57P", 3) == 0) {
        db->ok = false;
        admin_err_set(err, 503, "database unavailable", "", "PostgreSQL: %s", msg);
        log_error("admin db: database unavailable: %s", msg);
    } else if (strcmp(state, "55P03") == 0 || strcmp(state, "57014") == 0) {
        /* lock_timeout / statement_timeout: the server is there but busy. */
        admin_err_set(err, 503, "database busy", "", "PostgreSQL %s: %s", state, msg);
        log_warn("admin db: statement timed out (%s): %s", state, msg);
    } else if (strcmp(state, "23505") == 0) {
        admin_err_set(err, 409, "duplicate", "name", "an object with this name already exists");
    } else {
        admin_err_set(err, 500, "database error", "", "PostgreSQL %s: %s", state, msg);
        log_error("admin db: statement failed (%s): %s", state, msg);
    }
    PQclear(r);
    return NULL;
}

static int admin_db_simple(admin_db_t *db, const char *sql, admin_err_t *err)
{
    PGresult *r = admin_db_exec(db, sql, 0, NULL, err);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}

static int admin_db_setup_session(admin_db_t *db, admin_err_t *err)
{
    const char *p[1] = {db->schema_quoted};
    /* The connection is used from the event loop: bound how long a statement (or a wait for
     * a row lock held by someone else) may block it. */
    PGresult *r = admin_db_exec(db,
                                "SELECT set_config('search_path', $1, false), "
                                "set_config('statement_timeout', '5000', false), "
                                "set_config('lock_timeout', '2000', false)",
                                1, p, err);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}

/* Makes sure there is a live connection before a statement; 503 otherwise. Reconnects are
 * spaced out (1 s doubling to 8 s) so that an unreachable server costs each request nothing
 * but the 503: a reconnect attempt can block the event loop for up to connect_timeout. */
static int admin_db_ensure(admin_db_t *db, admin_err_t *err)
{
    if (!admin_db_conn_lost(db))
        return 0;
    int64_t now = mono_now_ms();
    if (now < db->next_reset_ms) {
        db->ok = false;
        admin_err_set(err, 503, "database unavailable", "",
                      "PostgreSQL unreachable; next reconnect attempt in %lld ms",
                      (long long)(db->next_reset_ms - now));
        return -1;
    }
    PQreset(db->conn);
    if (admin_db_conn_lost(db)) {
        char msg[200];
        snprintf(msg, sizeof(msg), "%s", PQerrorMessage(db->conn));
        msg[strcspn(msg, "\n")] = '\0';
        db->ok = false;
        db->reset_backoff_ms = db->reset_backoff_ms ? db->reset_backoff_ms * 2 : 1000;
        if (db->reset_backoff_ms > 8000)
            db->reset_backoff_ms = 8000;
        db->next_reset_ms = mono_now_ms() + db->reset_backoff_ms;
        admin_err_set(err, 503, "database unavailable", "", "PostgreSQL: %s", msg);
        return -1;
    }
    db->reset_backoff_ms = 0;
    db->next_reset_ms = 0;
    log_info("admin db: reconnected to PostgreSQL");
    return admin_db_setup_session(db, err);
}

bool admin_db_ok(admin_db_t *db)
{
    return db && db->ok && !admin_db_conn_lost(db);
}

static int admin_db_migrate(admin_db_t *db, admin_err_t *err)
{
    char sql[256];
    if (admin_db_simple(db, "BEGIN", err) != 0)
        return -1;
    snprintf(sql, sizeof(sql), "SELECT pg_advisory_xact_lock(%lld)", (long long)ADMIN_DB_LOCK_KEY);
    /* Migrations (and waiting for another admin's) may take longer than a request may. */
    if (admin_db_simple(db, "SET LOCAL statement_timeout = 0", err) != 0 ||
        admin_db_simple(db, "SET LOCAL lock_timeout = 0", err) != 0 ||
        admin_db_simple(db, sql, err) != 0 ||
        admin_db_simple(db,
                        "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY "
                        "KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
                        err) != 0)
        goto fail;
    PGresult *r =
        admin_db_exec(db, "SELECT coalesce(max(version), 0) FROM schema_migrations", 0, NULL, err);
    if (!r)
        goto fail;
    int current = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    for (size_t i = 0; i < admin_migrations_count; i++) {
        const admin_migration_t *m = &admin_migrations[i];
        if (m->version <= current)
            continue;
        /* Migration files hold several statements and no parameters: PQexec runs them. */
        PGresult *mr = PQexec(db->conn, m->sql);
        if (PQresultStatus(mr) != PGRES_COMMAND_OK && PQresultStatus(mr) != PGRES_TUPLES_OK) {
            admin_err_set(err, 500, "migration failed", "", "migration %d (%s): %s", m->version,
                          m->name, PQresultErrorMessage(mr));
            PQclear(mr);
            goto fail;
        }
        PQclear(mr);
        char ver[16];
        snprintf(ver, sizeof(ver), "%d", m->version);
        const char *p[2] = {ver, m->name};
        r = admin_db_exec(db, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", 2, p,
                          err);
        if (!r)
            goto fail;
        PQclear(r);
        log_info("admin db: applied migration %d (%s) in schema %s", m->version, m->name,
                 db->schema);
        current = m->version;
    }
    if (admin_db_simple(db, "COMMIT", err) != 0)
        return -1;
    db->version = current;
    return 0;
fail:;
    admin_err_t ignore;
    admin_db_simple(db, "ROLLBACK", &ignore);
    return -1;
}

/* Server notices ("schema already exists, skipping") are expected during migrations: debug. */
static void admin_db_notice(void *arg, const char *message)
{
    log_debug("admin db: %.*s", (int)strcspn(message, "\n"), message);
}

admin_db_t *admin_db_open(const char *conninfo, const char *schema, char *err, size_t errlen)
{
    bool valid = schema && *schema && strlen(schema) < 63 &&
                 (islower((unsigned char)schema[0]) || schema[0] == '_');
    for (const char *p = schema; valid && *p; p++)
        valid = islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_';
    if (!valid) {
        snprintf(err, errlen, "schema name \"%s\" must match [a-z_][a-z0-9_]*",
                 schema ? schema : "");
        return NULL;
    }
    admin_db_t *db = calloc(1, sizeof(*db));
    if (!db) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(db->schema, sizeof(db->schema), "%s", schema);
    /* The conninfo may hold a password: never log it (log_redact exists for that). */
    const char *keys[] = {"dbname", "connect_timeout", "application_name", NULL};
    const char *vals[] = {conninfo ? conninfo : "", "3", "ndd-admin", NULL};
    db->conn = PQconnectdbParams(keys, vals, 1);
    if (!db->conn || PQstatus(db->conn) != CONNECTION_OK) {
        snprintf(err, errlen, "cannot connect to PostgreSQL: %s",
                 db->conn ? PQerrorMessage(db->conn) : "out of memory");
        err[strcspn(err, "\n")] = '\0';
        admin_db_close(db);
        return NULL;
    }
    PQsetNoticeProcessor(db->conn, admin_db_notice, NULL);
    char *q = PQescapeIdentifier(db->conn, schema, strlen(schema));
    db->schema_quoted = q ? strdup(q) : NULL;
    PQfreemem(q);
    admin_err_t e;
    char sql[160];
    snprintf(sql, sizeof(sql), "CREATE SCHEMA IF NOT EXISTS %s", db->schema_quoted);
    if (!db->schema_quoted || admin_db_simple(db, sql, &e) != 0 ||
        admin_db_setup_session(db, &e) != 0 || admin_db_migrate(db, &e) != 0) {
        snprintf(err, errlen, "schema %s: %s", schema, db->schema_quoted ? e.reason : "OOM");
        admin_db_close(db);
        return NULL;
    }
    db->ok = true;
    return db;
}

void admin_db_close(admin_db_t *db)
{
    if (!db)
        return;
    if (db->conn)
        PQfinish(db->conn);
    free(db->schema_quoted);
    free(db);
}

int admin_db_schema_version(admin_db_t *db)
{
    return db->version;
}

/* Row (OBJ_COLS, starting at column c0) -> the object as the API shows it. */
static json_t *admin_db_row_object(PGresult *r, int row, int c0)
{
    json_error_t je;
    json_t *body = json_loads(PQgetvalue(r, row, c0 + 6), 0, &je);
    json_t *o = json_object();
    if (!body || !o) {
        json_decref(body);
        json_decref(o);
        return NULL;
    }
    json_object_set_new(o, "id", json_string(PQgetvalue(r, row, c0 + 1)));
    json_object_update(o, body);
    json_decref(body);
    json_object_set_new(o, "version", json_integer(atoll(PQgetvalue(r, row, c0 + 3))));
    json_object_set_new(o, "created_at", json_string(PQgetvalue(r, row, c0 + 4)));
    json_object_set_new(o, "updated_at", json_string(PQgetvalue(r, row, c0 + 5)));
    return o;
}

int admin_db_load(admin_db_t *db, admin_ctx_t *ctx, char *err, size_t errlen)
{
    admin_err_t e;
    if (admin_db_ensure(db, &e) != 0) {
        snprintf(err, errlen, "%s", e.reason);
        return -1;
    }
    PGresult *r =
        admin_db_exec(db, "SELECT " OBJ_COLS " FROM objects ORDER BY kind, name", 0, NULL, &e);
    if (!r) {
        snprintf(err, errlen, "%s", e.reason);
        return -1;
    }
    for (int k = 0; k < ADMIN_KIND_COUNT; k++)
        admin_cache_clear(&ctx->cache[k]);
    int n = PQntuples(r);
    for (int i = 0; i < n; i++) {
        admin_kind_t kind;
        if (admin_kind_from_name(PQgetvalue(r, i, 0), &kind) != 0)
            continue;
        json_t *o = admin_db_row_object(r, i, 0);
        if (!o || admin_cache_put(&ctx->cache[kind], o) != 0) {
            snprintf(err, errlen, "cannot cache %s %s (cache full or bad row)", PQgetvalue(r, i, 0),
                     PQgetvalue(r, i, 1));
            PQclear(r);
            return -1;
        }
    }
    PQclear(r);
    return n;
}

static char *admin_db_dump(json_t *j)
{
    return j ? json_dumps(j, JSON_COMPACT) : NULL;
}

/* Fails the write when a feed names a filter that does not exist (422). The row lock keeps
 * the filter from being deleted or renamed before this transaction commits. */
static int admin_db_check_filter_ref(admin_db_t *db, json_t *body, admin_err_t *err)
{
    const char *ref = admin_feed_filter_ref(body);
    if (!ref)
        return 0;
    const char *p[1] = {ref};
    PGresult *r = admin_db_exec(
        db, "SELECT id FROM objects WHERE kind = 'filter' AND name = $1 FOR SHARE", 1, p, err);
    if (!r)
        return -1;
    int found = PQntuples(r);
    PQclear(r);
    if (!found) {
        admin_err_set(err, 422, "missing reference", "filter", "no filter named \"%s\" exists",
                      ref);
        return -1;
    }
    return 0;
}

/* A filter referenced by a feed may be neither deleted nor renamed (409). */
static int admin_db_check_filter_unused(admin_db_t *db, const char *old_name, admin_err_t *err,
                                        const char *field)
{
    const char *p[1] = {old_name};
    PGresult *r = admin_db_exec(db,
                                "SELECT name FROM objects WHERE kind = 'feed' AND body ->> "
                                "'filter' = $1 ORDER BY name LIMIT 1",
                                1, p, err);
    if (!r)
        return -1;
    if (PQntuples(r)) {
        admin_err_set(err, 409, "in use", field, "filter \"%s\" is used by feed \"%s\"", old_name,
                      PQgetvalue(r, 0, 0));
        PQclear(r);
        return -1;
    }
    PQclear(r);
    return 0;
}

int admin_db_begin(admin_db_t *db, admin_err_t *err)
{
    if (admin_db_ensure(db, err) != 0)
        return -1;
    return admin_db_simple(db, "BEGIN", err);
}

int admin_db_commit(admin_db_t *db, admin_err_t *err)
{
    return admin_db_simple(db, "COMMIT", err);
}

void admin_db_rollback(admin_db_t *db)
{
    admin_err_t ignore;
    if (!admin_db_conn_lost(db))
        admin_db_simple(db, "ROLLBACK", &ignore);
}

int admin_db_write(admin_db_t *db, admin_kind_t kind, const char *action, const char *id,
                   json_t *body, int64_t if_match, const char *who, json_t **out, json_t **before,
                   admin_err_t *err)
{
    *out = NULL;
    *before = NULL;
    if (admin_db_begin(db, err) != 0)
        return -1;
    if (admin_db_write_in(db, kind, action, id, body, if_match, who, out, before, err) != 0) {
        admin_db_rollback(db);
        return -1;
    }
    if (admin_db_commit(db, err) == 0)
        return 0;
    json_decref(*out);
    json_decref(*before);
    *out = NULL;
    *before = NULL;
    return -1;
}

/* Locks the stored row of (kind, id) and returns it as the API shows it; NULL with err: 404,
 * 412 when if_match (>= 0) names another version, or the database's error. */
static json_t *admin_db_lock_current(admin_db_t *db, admin_kind_t kind, const char *id,
                                     int64_t if_match, admin_err_t *err)
{
    const char *kname = admin_kind_name(kind);
    const char *p[2] = {kname, id};
    PGresult *r = admin_db_exec(
        db, "SELECT " OBJ_COLS " FROM objects WHERE kind = $1 AND id = $2 FOR UPDATE", 2, p, err);
    if (!r)
        return NULL;
    if (PQntuples(r) == 0) {
        admin_err_set(err, 404, "not found", "", "%s %s does not exist", kname, id);
        PQclear(r);
        return NULL;
    }
    json_t *cur = admin_db_row_object(r, 0, 0);
    PQclear(r);
    if (!cur) {
        admin_err_set(err, 500, "database error", "", "stored %s %s is not valid JSON", kname, id);
        return NULL;
    }
    int64_t v = json_integer_value(json_object_get(cur, "version"));
    if (if_match >= 0 && v != if_match) {
        admin_err_set(err, 412, "version mismatch", "version",
                      "If-Match names version %lld but the current version is %lld",
                      (long long)if_match, (long long)v);
        json_decref(cur);
        return NULL;
    }
    return cur;
}

/* A patch merged against the locked row, not the cache, so concurrent admins cannot lose an
 * update; the result is validated like a full replacement. NULL with err. */
static json_t *admin_db_patched(admin_kind_t kind, json_t *current, json_t *patch, admin_err_t *err)
{
    json_t *stripped = admin_strip_server_fields(current);
    json_t *merged = admin_merge_patch(stripped, patch);
    json_decref(stripped);
    if (!merged || !json_is_object(merged)) {
        json_decref(merged);
        admin_err_set(err, 400, "wrong type", "", "the patch must produce a JSON object");
        return NULL;
    }
    json_t *clean = admin_strip_server_fields(merged);
    json_decref(merged);
    if (!clean)
        admin_err_set(err, 500, "internal", "", "out of memory");
    else if (admin_validate(kind, clean, err) != 0) {
        json_decref(clean);
        return NULL;
    }
    return clean;
}

int admin_db_write_in(admin_db_t *db, admin_kind_t kind, const char *action, const char *id,
                      json_t *body, int64_t if_match, const char *who, json_t **out,
                      json_t **before, admin_err_t *err)
{
    *out = NULL;
    *before = NULL;
    const char *kname = admin_kind_name(kind);
    bool is_create = strcmp(action, "create") == 0, is_delete = strcmp(action, "delete") == 0,
         is_patch = strcmp(action, "patch") == 0;
    json_t *newbody = NULL;
    char *before_text = NULL, *after_text = NULL, *body_text = NULL;
    PGresult *r = NULL;

    if (!is_create && !(*before = admin_db_lock_current(db, kind, id, if_match, err)))
        goto fail;
    if (is_patch) {
        if (!(newbody = admin_db_patched(kind, *before, body, err)))
            goto fail;
    } else if (!is_delete) {
        newbody = admin_strip_server_fields(body);
    }
    const char *newname = newbody ? json_string_value(json_object_get(newbody, "name")) : NULL;
    const char *oldname = *before ? json_string_value(json_object_get(*before, "name")) : NULL;
    if (kind == ADMIN_KIND_FEED && newbody && admin_db_check_filter_ref(db, newbody, err) != 0)
        goto fail;
    if (kind == ADMIN_KIND_FILTER && oldname &&
        (is_delete || (newname && strcmp(newname, oldname) != 0)) &&
        admin_db_check_filter_unused(db, oldname, err, is_delete ? "" : "name") != 0)
        goto fail;

    if (newbody) {
        body_text = admin_db_dump(newbody);
        if (!body_text || !newname) {
            admin_err_set(err, 400, "missing field", "name", "field \"name\" is required");
            goto fail;
        }
    }
    if (is_create) {
        const char *p[3] = {kname, newname, body_text};
        r = admin_db_exec(db,
                          "INSERT INTO objects (kind, id, name, version, body) VALUES ($1, "
                          "gen_random_uuid()::text, $2, 1, $3::jsonb) RETURNING " OBJ_COLS,
                          3, p, err);
    } else if (is_delete) {
        const char *p[2] = {kname, id};
        r = admin_db_exec(db, "DELETE FROM objects WHERE kind = $1 AND id = $2", 2, p, err);
    } else {
        const char *p[4] = {kname, id, newname, body_text};
        r = admin_db_exec(db,
                          "UPDATE objects SET name = $3, body = $4::jsonb, version = version + 1, "
                          "updated_at = now() WHERE kind = $1 AND id = $2 RETURNING " OBJ_COLS,
                          4, p, err);
    }
    if (!r)
        goto fail;
    if (!is_delete) {
        *out = admin_db_row_object(r, 0, 0);
        if (!*out) {
            admin_err_set(err, 500, "internal", "", "out of memory");
            goto fail;
        }
    }
    PQclear(r);
    r = NULL;

    const char *oid = *out ? json_string_value(json_object_get(*out, "id")) : id;
    before_text = admin_db_dump(*before);
    after_text = admin_db_dump(*out);
    const char *ap[6] = {who, action, kname, oid, before_text, after_text};
    r = admin_db_exec(db,
                      "INSERT INTO audit (who, action, kind, object_id, before, after) VALUES ($1, "
                      "$2, $3, $4, $5::jsonb, $6::jsonb)",
                      6, ap, err);
    if (!r)
        goto fail;
    PQclear(r);
    r = NULL;
    json_decref(newbody);
    free(body_text);
    free(before_text);
    free(after_text);
    return 0;

fail:
    PQclear(r);
    json_decref(newbody);
    free(body_text);
    free(before_text);
    free(after_text);
    json_decref(*out);
    json_decref(*before);
    *out = NULL;
    *before = NULL;
    return -1;
}

/* ---- listings and single rows (audit, alarms) ---- */

/* Maps row i of a result to its JSON object. */
typedef json_t *(*admin_db_row_fn)(PGresult *r, int i);

/* Runs a listing query (its parameters p[0..n-1]) and returns {"items": [...], "count": N},
 * one item per row; NULL with err. */
static json_t *admin_db_list(admin_db_t *db, const char *sql, int n, const char *const *p,
                             admin_db_row_fn row, admin_err_t *err)
{
    PGresult *r = admin_db_exec(db, sql, n, p, err);
    if (!r)
        return NULL;
    json_t *items = json_array();
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(items, row(r, i));
    PQclear(r);
    return json_pack("{s:o,s:I}", "items", items, "count", (json_int_t)json_array_size(items));
}

/* Runs a query selecting the row whose id is $1 and maps it; NULL with err, a 404 naming
 * what ("alarm") when there is no such row. */
static json_t *admin_db_get_by_id(admin_db_t *db, const char *sql, int64_t id, const char *what,
                                  admin_db_row_fn row, admin_err_t *err)
{
    if (admin_db_ensure(db, err) != 0)
        return NULL;
    char id_s[24];
    snprintf(id_s, sizeof(id_s), "%lld", (long long)id);
    const char *p[1] = {id_s};
    PGresult *r = admin_db_exec(db, sql, 1, p, err);
    if (!r)
        return NULL;
    json_t *o = NULL;
    if (PQntuples(r))
        o = row(r, 0);
    else
        admin_err_set(err, 404, "not found", "", "%s %lld does not exist", what, (long long)id);
    PQclear(r);
    return o;
}

/* ---- audit ---- */

#define AUDIT_COLS "id, " TS("at") ", who, action, kind, object_id, before::text, after::text"

static json_t *admin_db_audit_row(PGresult *r, int i)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(atoll(PQgetvalue(r, i, 0))));
    json_object_set_new(o, "at", json_string(PQgetvalue(r, i, 1)));
    json_object_set_new(o, "who", json_string(PQgetvalue(r, i, 2)));
    json_object_set_new(o, "action", json_string(PQgetvalue(r, i, 3)));
    json_object_set_new(o, "kind", json_string(PQgetvalue(r, i, 4)));
    json_object_set_new(o, "object_id", json_string(PQgetvalue(r, i, 5)));
    for (int c = 6; c <= 7; c++) {
        json_t *v = PQgetisnull(r, i, c) ? json_null() : json_loads(PQgetvalue(r, i, c), 0, NULL);
        json_object_set_new(o, c == 6 ? "before" : "after", v ? v : json_null());
    }
    return o;
}

int admin_db_audit_sql(const admin_audit_query_t *q, char *sql, size_t sqllen, const char *p[7],
                       char num[2][24])
{
    static const struct {
        size_t off;
        const char *cond;
    } conds[] = {
        {offsetof(admin_audit_query_t, kind), "kind = $%d"},
        {offsetof(admin_audit_query_t, object_id), "object_id = $%d"},
        {offsetof(admin_audit_query_t, who), "who = $%d"},
        {offsetof(admin_audit_query_t, since), "at >= $%d::timestamptz"},
        {offsetof(admin_audit_query_t, until), "at < $%d::timestamptz"},
    };
    int n = 0;
    size_t len = (size_t)snprintf(sql, sqllen, "SELECT " AUDIT_COLS " FROM audit");
    for (size_t i = 0; i < sizeof(conds) / sizeof(*conds) && len < sqllen; i++) {
        const char *v = *(const char *const *)((const char *)q + conds[i].off);
        if (!v)
            continue;
        p[n++] = v;
        len += (size_t)snprintf(sql + len, sqllen - len, "%s", n == 1 ? " WHERE " : " AND ");
        if (len < sqllen)
            len += (size_t)snprintf(sql + len, sqllen - len, conds[i].cond, n);
    }
    if (q->before_id > 0 && len < sqllen) {
        snprintf(num[0], sizeof(num[0]), "%lld", (long long)q->before_id);
        p[n++] = num[0];
        len += (size_t)snprintf(sql + len, sqllen - len, "%sid < $%d::bigint",
                                n == 1 ? " WHERE " : " AND ", n);
    }
    snprintf(num[1], sizeof(num[1]), "%d", q->limit);
    p[n++] = num[1];
    if (len < sqllen)
        len += (size_t)snprintf(sql + len, sqllen - len, " ORDER BY id DESC LIMIT $%d::integer", n);
    return len < sqllen ? n : -1;
}

json_t *admin_db_audit_list(admin_db_t *db, const admin_audit_query_t *q, admin_err_t *err)
{
    if (admin_db_ensure(db, err) != 0)
        return NULL;
    char sql[512], num[2][24];
    const char *p[7];
    int n = admin_db_audit_sql(q, sql, sizeof(sql), p, num);
    if (n < 0) {
        admin_err_set(err, 500, "internal", "", "audit query too long");
        return NULL;
    }
    return admin_db_list(db, sql, n, p, admin_db_audit_row, err);
}

json_t *admin_db_audit_get(admin_db_t *db, int64_t id, admin_err_t *err)
{
    return admin_db_get_by_id(db, "SELECT " AUDIT_COLS " FROM audit WHERE id = $1::bigint", id,
                              "audit entry", admin_db_audit_row, err);
}

/* ---- tokens ---- */

/* The audit row of a token: what it is, never its salt or hash. */
#define TOKEN_AUDIT_JSON(t)                                                                        \
    "jsonb_build_object('id', " t ".id, 'name', " t ".name, 'role', " t ".role, 'created_at', " t  \
    ".created_at, 'revoked_at', " t ".revoked_at)"

int admin_db_token_insert(admin_db_t *db, const char *id, const char *name, admin_role_t role,
                          const char *salt_hex, const char *hash_hex, const char *who, char *err,
                          size_t errlen)
{
    admin_err_t e;
    const char *p[6] = {id, name, admin_role_name(role), salt_hex, hash_hex, who};
    /* One statement: the token and its audit row commit together or not at all. */
    PGresult *r = admin_db_exec(
        db,
        "WITH t AS (INSERT INTO api_tokens (id, name, role, salt, hash) VALUES ($1, $2, $3, $4, "
        "$5) RETURNING id, name, role, created_at, revoked_at) INSERT INTO audit (who, action, "
        "kind, object_id, before, after) SELECT $6, 'create', 'token', t.id, "
        "NULL, " TOKEN_AUDIT_JSON("t") " FROM t",
        6, p, &e);
    if (!r) {
        snprintf(err, errlen, "%s", e.status == 409 ? "a token with this name exists" : e.reason);
        return -1;
    }
    PQclear(r);
    return 0;
}

int admin_db_token_lookup(admin_db_t *db, const char *id, admin_role_t *role, char *name,
                          size_t namelen, char *salt_hex, char *hash_hex)
{
    admin_err_t e;
    if (admin_db_ensure(db, &e) != 0)
        return -1;
    const char *p[1] = {id};
    PGresult *r = admin_db_exec(
        db, "SELECT role, name, salt, hash FROM api_tokens WHERE id = $1 AND revoked_at IS NULL", 1,
        p, &e);
    if (!r)
        return -1;
    int found = PQntuples(r) == 1;
    if (found) {
        *role = admin_role_parse(PQgetvalue(r, 0, 0));
        snprintf(name, namelen, "%s", PQgetvalue(r, 0, 1));
        snprintf(salt_hex, 65, "%s", PQgetvalue(r, 0, 2));
        snprintf(hash_hex, 65, "%s", PQgetvalue(r, 0, 3));
    }
    PQclear(r);
    return found;
}

int admin_db_token_revoke(admin_db_t *db, const char *name, const char *who, char *err,
                          size_t errlen)
{
    admin_err_t e;
    const char *p[2] = {name, who};
    PGresult *r = admin_db_exec(
        db,
        "WITH old AS (SELECT * FROM api_tokens WHERE name = $1 AND revoked_at IS NULL FOR "
        "UPDATE), t AS (UPDATE api_tokens a SET revoked_at = now() FROM old WHERE a.id = old.id "
        "RETURNING a.id, a.name, a.role, a.created_at, a.revoked_at), au AS (INSERT INTO audit "
        "(who, action, kind, object_id, before, after) SELECT $2, 'revoke', 'token', t.id, "
        "(SELECT " TOKEN_AUDIT_JSON("old") " FROM old), " TOKEN_AUDIT_JSON(
            "t") " FROM t) SELECT count(*) FROM t",
        2, p, &e);
    if (!r) {
        snprintf(err, errlen, "%s", e.reason);
        return -1;
    }
    int n = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    if (n == 0) {
        snprintf(err, errlen, "no active token named \"%s\"", name);
        return -1;
    }
    return 0;
}

json_t *admin_db_token_list(admin_db_t *db, char *err, size_t errlen)
{
    admin_err_t e;
    PGresult *r = admin_db_exec(db,
                                "SELECT id, name, role, " TS("created_at") ", " TS(
                                    "revoked_at") " FROM api_tokens ORDER BY name",
                                0, NULL, &e);
    if (!r) {
        snprintf(err, errlen, "%s", e.reason);
        return NULL;
    }
    json_t *a = json_array();
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(
            a, json_pack("{s:s,s:s,s:s,s:s,s:o}", "id", PQgetvalue(r, i, 0), "name",
                         PQgetvalue(r, i, 1), "role", PQgetvalue(r, i, 2), "created_at",
                         PQgetvalue(r, i, 3), "revoked_at",
                         PQgetisnull(r, i, 4) ? json_null() : json_string(PQgetvalue(r, i, 4))));
    PQclear(r);
    return a;
}

/* ---- alarms ---- */

#define ALARM_COLS                                                                                 \
    "id, type, resource, severity, state, text, " TS("raised_at") ", " TS("updated_at") ", " TS(   \
        "cleared_at") ", " TS("acked_at") ", acked_by, count"

static json_t *admin_db_alarm_row(PGresult *r, int i)
{
    static const char *const names[] = {"id",         "type",     "resource",  "severity",
                                        "state",      "text",     "raised_at", "updated_at",
                                        "cleared_at", "acked_at", "acked_by",  "count"};
    json_t *o = json_object();
    for (int c = 0; c < 12; c++) {
        json_t *v;
        if (PQgetisnull(r, i, c))
            v = json_null();
        else if (c == 0 || c == 11)
            v = json_integer(atoll(PQgetvalue(r, i, c)));
        else
            v = json_string(PQgetvalue(r, i, c));
        json_object_set_new(o, names[c], v);
    }
    return o;
}

/* One alarm statement (p[0] the type, p[1] the resource): its result, or NULL with the
 * failure logged ("cannot raise" / "cannot clear") when PostgreSQL is away or refuses. */
static PGresult *admin_db_alarm_exec(admin_db_t *db, const char *what, const char *sql, int n,
                                     const char *const *p)
{
    admin_err_t e;
    PGresult *r = admin_db_ensure(db, &e) == 0 ? admin_db_exec(db, sql, n, p, &e) : NULL;
    if (!r)
        log_error("admin alarms: cannot %s %s on %s: %s", what, p[0], p[1], e.reason);
    return r;
}

int admin_db_alarm_raise(admin_db_t *db, const char *type, const char *resource,
                         const char *severity, const char *text)
{
    const char *p[4] = {type, resource, severity, text ? text : ""};
    PGresult *r = admin_db_alarm_exec(
        db, "raise",
        "INSERT INTO alarms (type, resource, severity, state, text) VALUES ($1, $2, $3, "
        "'active', $4) ON CONFLICT (type, resource) WHERE state = 'active' DO UPDATE SET count = "
        "alarms.count + 1, updated_at = now(), severity = EXCLUDED.severity, text = EXCLUDED.text",
        4, p);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}

int admin_db_alarm_clear(admin_db_t *db, const char *type, const char *resource)
{
    const char *p[2] = {type, resource};
    PGresult *r = admin_db_alarm_exec(db, "clear",
                                      "UPDATE alarms SET state = 'cleared', cleared_at = now(), "
                                      "updated_at = now() WHERE type = $1 AND resource = $2 AND "
                                      "state = 'active'",
                                      2, p);
    if (!r)
        return -1;
    int n = atoi(PQcmdTuples(r));
    PQclear(r);
    return n;
}

json_t *admin_db_alarm_list(admin_db_t *db, const char *state, const char *type,
                            const char *severity, int limit, admin_err_t *err)
{
    if (admin_db_ensure(db, err) != 0)
        return NULL;
    char limit_s[16];
    snprintf(limit_s, sizeof(limit_s), "%d", limit);
    const char *p[4] = {state, type, severity, limit_s};
    return admin_db_list(db,
                         "SELECT " ALARM_COLS " FROM alarms WHERE ($1::text IS NULL OR state = "
                         "$1) AND ($2::text IS NULL OR type = $2) AND ($3::text IS NULL OR "
                         "severity = $3) ORDER BY id DESC LIMIT $4::integer",
                         4, p, admin_db_alarm_row, err);
}

json_t *admin_db_alarm_get(admin_db_t *db, int64_t id, admin_err_t *err)
{
    return admin_db_get_by_id(db, "SELECT " ALARM_COLS " FROM alarms WHERE id = $1::bigint", id,
                              "alarm", admin_db_alarm_row, err);
}

/* The audit row of an alarm: the fields an acknowledgement changes and what names it. */
#define ALARM_AUDIT_JSON(a)                                                                        \
    "jsonb_build_object('id', " a ".id, 'type', " a ".type, 'resource', " a ".resource, "          \
    "'severity', " a ".severity, 'state', " a ".state, 'acked_at', " a ".acked_at, 'acked_by', " a \
    ".acked_by)"

int admin_db_alarm_ack(admin_db_t *db, int64_t id, const char *who, json_t **out, admin_err_t *err)
{
    *out = NULL;
    if (admin_db_ensure(db, err) != 0)
        return -1;
    char id_s[24];
    snprintf(id_s, sizeof(id_s), "%lld", (long long)id);
    const char *p[2] = {id_s, who};
    /* One statement: the acknowledgement and its audit row commit together. */
    PGresult *r = admin_db_exec(
        db,
        "WITH old AS (SELECT * FROM alarms WHERE id = $1::bigint FOR UPDATE), a AS (UPDATE "
        "alarms SET acked_at = now(), acked_by = $2, updated_at = now() FROM old WHERE alarms.id "
        "= old.id RETURNING alarms.*), au AS (INSERT INTO audit (who, action, kind, object_id, "
        "before, after) SELECT $2, 'ack', 'alarm', a.id::text, (SELECT " ALARM_AUDIT_JSON(
            "old") " FROM old), " ALARM_AUDIT_JSON("a") " FROM a) SELECT " ALARM_COLS " FROM a",
        2, p, err);
    if (!r)
        return -1;
    if (PQntuples(r) == 0) {
        admin_err_set(err, 404, "not found", "", "alarm %lld does not exist", (long long)id);
        PQclear(r);
        return -1;
    }
    *out = admin_db_alarm_row(r, 0);
    PQclear(r);
    return 0;
}

bool admin_db_ping(admin_db_t *db)
{
    if (!db)
        return false;
    admin_err_t e;
    if (admin_db_ensure(db, &e) != 0)
        return false;
    PGresult *r = admin_db_exec(db, "SELECT 1", 0, NULL, &e);
    if (r)
        PQclear(r);
    return admin_db_ok(db);
}
