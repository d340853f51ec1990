/* Operational collections: status (from heartbeats), alarms (list, get, acknowledge) and the
 * audit log. Status is in memory; alarms and audit come from PostgreSQL. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "httpd.h"

static int admin_parse_id64(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < 1)
        return -1;
    *out = v;
    return 0;
}

static int admin_limit(const admin_req_t *req, int def, int *out, admin_resp_t *resp)
{
    char v[16];
    *out = def;
    if (!httpd_query_get(req->query, "limit", v, sizeof(v)))
        return 0;
    char *end;
    long n = strtol(v, &end, 10);
    if (end == v || *end || n < 1 || n > 1000) {
        admin_resp_errorf(resp, 400, "invalid parameter", "limit", "expected an integer 1..1000");
        return -1;
    }
    *out = (int)n;
    return 0;
}

void admin_h_status(admin_ctx_t *ctx, const admin_req_t *req, const char *id, admin_resp_t *resp)
{
    /* ?changes=N: the last N configuration changes with their propagation (default 10). */
    char v[16];
    int changes = 10;
    if (httpd_query_get(req->query, "changes", v, sizeof(v))) {
        char *end;
        long n = strtol(v, &end, 10);
        if (end == v || *end || n < 0 || n > 1024) {
            admin_resp_errorf(resp, 400, "invalid parameter", "changes",
                              "expected an integer 0..1024");
            return;
        }
        changes = (int)n;
    }
    json_t *st = ctx->events ? admin_events_status(ctx->events, wall_now_ms())
                             : json_pack("{s:[],s:[]}", "workers", "feeds");
    if (ctx->events)
        json_object_set_new(st, "config",
                            admin_prop_status(admin_events_prop(ctx->events), changes));
    json_object_set_new(st, "database", json_string(admin_db_ok(ctx->db) ? "up" : "down"));
    if (ctx->kacl)
        json_object_set_new(st, "kafka_feeds", admin_kacl_status(ctx->kacl, wall_now_ms()));
    admin_resp_json(resp, 200, st);
}

static int admin_need_db(admin_ctx_t *ctx, admin_resp_t *resp)
{
    if (ctx->db)
        return 0;
    admin_resp_errorf(resp, 503, "database unavailable", "", "no database configured");
    return -1;
}

/* The id of an alarm or audit entry (what) in the path, for a handler that needs the
 * database: 0, or -1 once answered (503 without a database, 404 when id is not a positive
 * integer: no such entry can exist). */
static int admin_ops_id(admin_ctx_t *ctx, const char *id, const char *what, int64_t *n,
                        admin_resp_t *resp)
{
    if (admin_need_db(ctx, resp))
        return -1;
    if (admin_parse_id64(id, n) != 0) {
        admin_resp_errorf(resp, 404, "not found", "", "%s ids are positive integers", what);
        return -1;
    }
    return 0;
}

/* Answers 200 with j, or err when the database gave nothing. */
static void admin_ops_reply(admin_resp_t *resp, json_t *j, const admin_err_t *err)
{
    if (!j) {
        admin_resp_error(resp, err);
        return;
    }
    admin_resp_json(resp, 200, j);
}

void admin_h_alarms_list(admin_ctx_t *ctx, const admin_req_t *req, const char *id,
                         admin_resp_t *resp)
{
    char state[16], type[64], severity[16];
    int limit;
    if (admin_need_db(ctx, resp) || admin_limit(req, 100, &limit, resp))
        return;
    bool has_state = httpd_query_get(req->query, "state", state, sizeof(state));
    if (has_state && strcmp(state, "active") && strcmp(state, "cleared")) {
        admin_resp_errorf(resp, 400, "invalid parameter", "state",
                          "expected \"active\" or \"cleared\"");
        return;
    }
    bool has_type = httpd_query_get(req->query, "type", type, sizeof(type));
    bool has_sev = httpd_query_get(req->query, "severity", severity, sizeof(severity));
    admin_err_t err;
    json_t *j = admin_db_alarm_list(ctx->db, has_state ? state : NULL, has_type ? type : NULL,
                                    has_sev ? severity : NULL, limit, &err);
    admin_ops_reply(resp, j, &err);
}

void admin_h_alarms_get(admin_ctx_t *ctx, const admin_req_t *req, const char *id,
                        admin_resp_t *resp)
{
    int64_t n;
    if (admin_ops_id(ctx, id, "alarm", &n, resp))
        return;
    admin_err_t err;
    json_t *j = admin_db_alarm_get(ctx->db, n, &err);
    admin_ops_reply(resp, j, &err);
}

void admin_h_alarms_ack(admin_ctx_t *ctx, const admin_req_t *req, const char *id,
                        admin_resp_t *resp)
{
    int64_t n;
    if (admin_ops_id(ctx, id, "alarm", &n, resp))
        return;
    admin_err_t err;
    json_t *j;
    if (admin_db_alarm_ack(ctx->db, n, req->principal.name, &j, &err) != 0) {
        admin_resp_error(resp, &err);
        return;
    }
    admin_resp_json(resp, 200, j);
}

/* YYYY-MM-DD, then optionally T/space hh:mm[:ss[.frac]] and Z or +hh:mm: checked here so a
 * typo is a 400 naming the parameter rather than a database error. */
static bool admin_timestamp_ok(const char *s)
{
    static const char shape[] = "dddd-dd-dd";
    for (size_t i = 0; i < sizeof(shape) - 1; i++)
        if (shape[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != shape[i])
            return false;
    for (const char *c = s + 10; *c; c++)
        if (!strchr("0123456789:.+-TZ ", *c))
            return false;
    return strlen(s) <= 40;
}

void admin_h_audit_list(admin_ctx_t *ctx, const admin_req_t *req, const char *id,
                        admin_resp_t *resp)
{
    char kind[32], object_id[160], before[24];
    int limit;
    int64_t before_id = 0;
    if (admin_need_db(ctx, resp) || admin_limit(req, 100, &limit, resp))
        return;
    bool has_kind = httpd_query_get(req->query, "kind", kind, sizeof(kind));
    admin_kind_t k;
    if (has_kind && admin_kind_from_name(kind, &k) != 0 && strcmp(kind, "token") &&
        strcmp(kind, "alarm")) {
        admin_resp_errorf(resp, 400, "invalid parameter", "kind",
                          "expected feed, filter, source, correlation, token or alarm");
        return;
    }
    char who[80], since[48], until[48];
    bool has_obj = httpd_query_get(req->query, "object_id", object_id, sizeof(object_id));
    bool has_who = httpd_query_get(req->query, "who", who, sizeof(who));
    bool has_since = httpd_query_get(req->query, "since", since, sizeof(since));
    bool has_until = httpd_query_get(req->query, "until", until, sizeof(until));
    if ((has_since && !admin_timestamp_ok(since)) || (has_until && !admin_timestamp_ok(until))) {
        admin_resp_errorf(resp, 400, "invalid parameter",
                          has_since && !admin_timestamp_ok(since) ? "since" : "until",
                          "expected an RFC 3339 timestamp, e.g. 2026-12-01T10:00:00Z");
        return;
    }
    if (httpd_query_get(req->query, "before", before, sizeof(before)) &&
        admin_parse_id64(before, &before_id) != 0) {
        admin_resp_errorf(resp, 400, "invalid parameter", "before",
                          "expected an audit id (positive integer)");
        return;
    }
    admin_err_t err;
    admin_audit_query_t q = {.kind = has_kind ? kind : NULL,
                             .object_id = has_obj ? object_id : NULL,
                             .who = has_who ? who : NULL,
                             .since = has_since ? since : NULL,
                             .until = has_until ? until : NULL,
                             .before_id = before_id,
                             .limit = limit};
    json_t *j = admin_db_audit_list(ctx->db, &q, &err);
    admin_ops_reply(resp, j, &err);
}

void admin_h_audit_get(admin_ctx_t *ctx, const admin_req_t *req, const char *id, admin_resp_t *resp)
{
    int64_t n;
    if (admin_ops_id(ctx, id, "audit", &n, resp))
        return;
    admin_err_t err;
    json_t *j = admin_db_audit_get(ctx->db, n, &err);
    admin_ops_reply(resp, j, &err);
}
