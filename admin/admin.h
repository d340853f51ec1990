/* ndd-admin modules: validation, merge patch, tokens, PostgreSQL store, in-memory cache,
 * request routing, ndd.config publisher and ndd.events consumer. Types are in admin-t.h. */
#ifndef NDD_ADMIN_H
#define NDD_ADMIN_H

#include "admin-t.h"
#include "clock.h"

/* ---- kinds (admin_kind.c) ---- */
/* "feed", "filter", "source", "correlation": the ndd.config key prefix and audit "kind". */
const char *admin_kind_name(admin_kind_t kind);
/* "feeds", "filters", "sources", "correlation": the collection path segment. */
const char *admin_kind_collection(admin_kind_t kind);
int admin_kind_from_collection(const char *segment, size_t len, admin_kind_t *out);
int admin_kind_from_name(const char *name, admin_kind_t *out);

/* ---- errors and responses (admin_resp.c) ---- */
void admin_err_set(admin_err_t *err, int status, const char *error, const char *field,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
int admin_resp_init(admin_resp_t *resp);
void admin_resp_free(admin_resp_t *resp);
/* Body = {"error":…, "field":…, "reason":…}. */
void admin_resp_error(admin_resp_t *resp, const admin_err_t *err);
void admin_resp_errorf(admin_resp_t *resp, int status, const char *error, const char *field,
                       const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Serialises json (reference stolen) as the body. */
void admin_resp_json(admin_resp_t *resp, int status, json_t *json);
void admin_resp_text(admin_resp_t *resp, int status, const char *text, size_t len);

/* ---- validation (admin_validate.c, admin_validate_<kind>.c) ---- */
/* Checks a client body for `kind`: types, unknown and missing fields, URLs, regular
 * expressions (through the filter engine). Server-managed fields (id, version, created_at,
 * updated_at) are accepted and ignored so that GET, edit, PUT works. Returns 0, or -1 with
 * err set (status 400 or 422). Does not look at other objects (see admin_db for 409/422). */
int admin_validate(admin_kind_t kind, json_t *body, admin_err_t *err);
/* The body without the server-managed fields (a new reference). */
json_t *admin_strip_server_fields(json_t *body);
/* Parses a request body: 400 for malformed JSON or a non-object, 413 over max. */
json_t *admin_parse_body(const char *body, size_t len, size_t max, admin_err_t *err);
/* The feed's filter reference: its name when "filter" is a string, else NULL. */
const char *admin_feed_filter_ref(json_t *feed);

/* ---- changed paths (admin_diff.c) ---- */
/* [{"path":"delivery.timeout_ms","before":5000,"after":2000}, ...] between two objects
 * (either NULL: absent), server fields (id, version, created_at, updated_at) ignored, in path
 * order. A member only one side has carries only "before" or only "after". New reference. */
json_t *admin_json_diff(json_t *before, json_t *after);

/* ---- JSON merge patch, RFC 7396 (admin_patch.c) ---- */
/* Returns a new value: target with patch applied (target is not modified). */
json_t *admin_merge_patch(json_t *target, json_t *patch);

/* ---- tokens (admin_auth.c) ---- */
/* A new token "ndd_<id>_<secret>" plus what the database keeps: a random salt and
 * SHA-256(salt || secret), hex. id_out >= 17 bytes, token_out >= 96, salt/hash >= 65. */
int admin_token_generate(char *id_out, char *token_out, char *salt_hex, char *hash_hex);
/* Splits a presented token into id and secret; -1 when it is not of our shape. */
int admin_token_parse(const char *token, char *id_out, size_t idlen, const char **secret);
/* Constant-time check of secret against the stored salt/hash. */
bool admin_token_verify(const char *secret, const char *salt_hex, const char *hash_hex);
admin_role_t admin_role_parse(const char *s);
const char *admin_role_name(admin_role_t role);
/* Token cache in front of the database: a token is looked up in PostgreSQL at first use and
 * remembered for ttl_ms (so a revoke takes effect within the TTL); bounded to max entries. */
admin_tokens_t *admin_tokens_new(admin_db_t *db, size_t max, int64_t ttl_ms);
void admin_tokens_free(admin_tokens_t *t);
/* Resolves "Bearer <token>" into a principal (role NONE when absent or invalid), consulting and
 * then updating memo (may be NULL): the connection's last verified token, compared in constant
 * time, until the cache entry it came from expires. */
void admin_tokens_authenticate_memo(admin_tokens_t *t, const char *authorization,
                                    admin_token_memo_t *memo, admin_principal_t *out);

/* ---- in-memory cache (admin_cache.c) ---- */
int admin_cache_init(admin_cache_t *c, size_t max);
void admin_cache_free(admin_cache_t *c);
admin_obj_t *admin_cache_get(const admin_cache_t *c, const char *id);
admin_obj_t *admin_cache_find_name(const admin_cache_t *c, const char *name);
/* Inserts or replaces the object with this id; json is the full representation (reference
 * stolen). Returns -1 when full (and json is released). */
int admin_cache_put(admin_cache_t *c, json_t *json);
void admin_cache_remove(admin_cache_t *c, const char *id);
void admin_cache_clear(admin_cache_t *c);
/* Calls fn for every object (order unspecified); stops when fn returns non-zero. */
int admin_cache_foreach(const admin_cache_t *c, int (*fn)(admin_obj_t *, void *), void *arg);
/* (name, id) order: a < b -> negative (an absent name sorts as ""). */
int admin_obj_key_cmp(const char *aname, const char *aid, const char *bname, const char *bid);
/* The index in c->sorted of the first object whose key is after (name, id); name NULL and id
 * NULL: 0 (the first object). */
size_t admin_cache_after(const admin_cache_t *c, const char *name, const char *id);

/* ---- PostgreSQL (admin_db.c) ---- */
/* Connects (conninfo as libpq takes it), creates the schema if needed, applies pending
 * migrations. schema must match [a-z_][a-z0-9_]*. NULL with err on failure. */
admin_db_t *admin_db_open(const char *conninfo, const char *schema, char *err, size_t errlen);
void admin_db_close(admin_db_t *db);
/* Current migration version (for tests and /readyz). */
int admin_db_schema_version(admin_db_t *db);
/* Loads every object of every kind into the caches. */
int admin_db_load(admin_db_t *db, admin_ctx_t *ctx, char *err, size_t errlen);
/* One write: the object row and its audit row in one transaction. action is "create",
 * "replace", "patch" or "delete". For create, id is NULL and a new id is assigned. body is the
 * stripped client object (for patch: the merge-patched result). if_match: expected version or
 * -1. On success *out is the full new representation (NULL after delete) and *before the old
 * one (NULL for create); both new references. Errors: 404, 409 (duplicate name, filter in
 * use), 412 (stale version), 422 (missing filter), 503 (database unavailable). */
int admin_db_write(admin_db_t *db, admin_kind_t kind, const char *action, const char *id,
                   json_t *body, int64_t if_match, const char *who, json_t **out, json_t **before,
                   admin_err_t *err);
/* The same steps inside a transaction the caller opened with admin_db_begin (the declarative
 * apply: many writes, one transaction). On failure the caller rolls back. */
int admin_db_begin(admin_db_t *db, admin_err_t *err);
int admin_db_write_in(admin_db_t *db, admin_kind_t kind, const char *action, const char *id,
                      json_t *body, int64_t if_match, const char *who, json_t **out,
                      json_t **before, admin_err_t *err);
int admin_db_commit(admin_db_t *db, admin_err_t *err);
void admin_db_rollback(admin_db_t *db);
/* An audit query: every filter optional (NULL / 0 = any); since/until are timestamps
 * PostgreSQL reads as timestamptz (since inclusive, until exclusive). */
typedef struct admin_audit_query {
    const char *kind;
    const char *object_id;
    const char *who;
    const char *since;
    const char *until;
    int64_t before_id;
    int limit;
} admin_audit_query_t;
/* The statement the admin runs for q, with only the conditions q sets (so the planner picks
 * the index of that condition; integration tests EXPLAIN exactly this text): fills sql and
 * p[0..n-1] (num holds the numbers' text, kept alive by the caller), returns n or -1. */
int admin_db_audit_sql(const admin_audit_query_t *q, char *sql, size_t sqllen, const char *p[7],
                       char num[2][24]);
/* Audit: newest first; returns {"items":[…]} or NULL + err. */
json_t *admin_db_audit_list(admin_db_t *db, const admin_audit_query_t *q, admin_err_t *err);
json_t *admin_db_audit_get(admin_db_t *db, int64_t id, admin_err_t *err);
/* Tokens. */
/* Insert and revoke each write their audit row (kind "token", action "create"/"revoke", who:
 * the acting token's name or "cli:<user>"; before/after without salt or hash) in the same
 * statement. */
int admin_db_token_insert(admin_db_t *db, const char *id, const char *name, admin_role_t role,
                          const char *salt_hex, const char *hash_hex, const char *who, char *err,
                          size_t errlen);
/* 1 found (role/name/salt/hash filled), 0 not found or revoked, -1 database error. */
int admin_db_token_lookup(admin_db_t *db, const char *id, admin_role_t *role, char *name,
                          size_t namelen, char *salt_hex, char *hash_hex);
int admin_db_token_revoke(admin_db_t *db, const char *name, const char *who, char *err,
                          size_t errlen);
json_t *admin_db_token_list(admin_db_t *db, char *err, size_t errlen);
/* Alarms: raise is idempotent per (type, resource) while active; clear sets state cleared. */
int admin_db_alarm_raise(admin_db_t *db, const char *type, const char *resource,
                         const char *severity, const char *text);
int admin_db_alarm_clear(admin_db_t *db, const char *type, const char *resource);
json_t *admin_db_alarm_list(admin_db_t *db, const char *state, const char *type,
                            const char *severity, int limit, admin_err_t *err);
json_t *admin_db_alarm_get(admin_db_t *db, int64_t id, admin_err_t *err);
/* Acknowledges and writes the audit row (kind "alarm", action "ack") in one statement. */
int admin_db_alarm_ack(admin_db_t *db, int64_t id, const char *who, json_t **out, admin_err_t *err);
/* true while the last statement reached the server. */
bool admin_db_ok(admin_db_t *db);
/* Checks the server now (reconnecting if needed); returns admin_db_ok afterwards. */
bool admin_db_ping(admin_db_t *db);

/* ---- ndd.config publisher (admin_publish.c) ---- */
admin_publisher_t *admin_publisher_new(const char *bootstrap, const char *topic, int replication,
                                       char *err, size_t errlen);
void admin_publisher_free(admin_publisher_t *p);
/* Queues the record of one object (json NULL = tombstone) under "<kind>/<id>". Asynchronous:
 * a failed delivery marks the publisher dirty and the next admin_publisher_poll reconciles. */
int admin_publish(admin_publisher_t *p, admin_ctx_t *ctx, admin_kind_t kind, const char *id,
                  json_t *json);
/* The record value for an object: {"kind","id","version","updated_at","spec":{…}} where spec
 * is what workers apply (for a feed, a filter reference is resolved into the filter's rules).
 * New reference, NULL when a referenced filter is missing. */
json_t *admin_config_record(admin_ctx_t *ctx, admin_kind_t kind, json_t *obj);
/* Reads ndd.config to its end and makes it match the caches: republishes objects whose record
 * differs, tombstones keys the database no longer has. Returns records produced or -1. */
int admin_reconcile(admin_publisher_t *p, admin_ctx_t *ctx, int timeout_ms, char *err,
                    size_t errlen);
/* Serves delivery reports; reconciles when a delivery failed. Call from a timer. */
void admin_publisher_poll(admin_publisher_t *p, admin_ctx_t *ctx);
/* Feeds referencing the filter named `name` are republished (their spec embeds it). */
void admin_publish_feeds_using(admin_publisher_t *p, admin_ctx_t *ctx, const char *filter_name);
uint64_t admin_publisher_failed(const admin_publisher_t *p);
/* Delivered records are handed to prop (NULL: none), which tracks when workers applied them. */
void admin_publisher_track(admin_publisher_t *p, admin_prop_t *prop);
/* Creates topic if missing (an existing topic keeps its settings); compact selects the
 * compacted configuration of ndd.config (ADMIN_CONFIG_TOPIC_SETTINGS, docs/control-path.md). */
int admin_kafka_create_topic(const char *bootstrap, const char *topic, int partitions,
                             int replication, bool compact, char *err, size_t errlen);

/* ---- Kafka feed topics and ACLs (admin_kafka_acl.c, docs/kafka-feed.md) ---- */
/* A client of the admin's cluster for its admin calls, each bounded by timeout_ms (0: 5 s).
 * NULL with err on failure. */
admin_kacl_t *admin_kacl_new(const char *bootstrap, int timeout_ms, char *err, size_t errlen);
void admin_kacl_free(admin_kacl_t *k);
/* Creates the topic(s) of a stored feed object and its consumer's ACLs (both idempotent).
 * Does nothing (0) for a feed the admin does not manage (k NULL, not kafka, another cluster).
 * -1 with err: 422 naming the field Kafka refused, 503 when the cluster does not answer. */
int admin_kacl_grant(admin_kacl_t *k, json_t *feed, admin_err_t *err);
/* Deletes the ACLs of `feed` that neither `keep` (its next version, may be NULL) nor another
 * feed of the cache needs. The topic is kept (docs/kafka-feed.md says why). */
int admin_kacl_revoke(admin_kacl_t *k, admin_ctx_t *ctx, json_t *feed, json_t *keep,
                      admin_err_t *err);
/* Grants every feed of the cache (start-up: repairs a crash between a commit and its grant).
 * -1 when one failed; admin_kacl_poll then retries every 30 s. */
int admin_kacl_reconcile(admin_kacl_t *k, admin_ctx_t *ctx);
/* From the timer: the retried reconcile, and a status sample every sample_ms (0: none). */
void admin_kacl_poll(admin_kacl_t *k, admin_ctx_t *ctx, int64_t sample_ms);
/* One status sample of every managed feed: end offsets (high watermarks) of its topic, the
 * committed offsets of the consumer groups under its prefix, the produce rate between two
 * samples; sets the metrics of admin_kacl_metrics. Blocking, each call bounded by 2 s. */
void admin_kacl_sample(admin_kacl_t *k, admin_ctx_t *ctx, int64_t now);
/* The last samples as the "kafka_feeds" array of /status (a new reference). */
json_t *admin_kacl_status(const admin_kacl_t *k, int64_t now);
struct metrics_registry;
void admin_kacl_metrics(admin_kacl_t *k, struct metrics_registry *r);
bool admin_kacl_pending(const admin_kacl_t *k);
uint64_t admin_kacl_errors(const admin_kacl_t *k);

/* ---- dead-letter view (admin_dlq.c, docs/api.md "Dead letters") ---- */
/* A reader of the admin's cluster: assign with offsets from the watermarks, never a consumer
 * group, never a commit. NULL with err on failure. */
admin_dlq_t *admin_dlq_new(const char *bootstrap, char *err, size_t errlen);
void admin_dlq_free(admin_dlq_t *d);
/* Whether topic is a dead-letter topic: ndd.dlq.* or the dlq_topic of a stored feed. */
bool admin_dlq_topic_ok(admin_ctx_t *ctx, const char *topic);
/* {"topics":[{"topic","records"}]}: every dead-letter topic of the cluster, by name; records
 * = the sum of end - begin offsets of its partitions. NULL with err (503) when Kafka does not
 * answer in time. */
json_t *admin_dlq_topics(admin_dlq_t *d, admin_ctx_t *ctx, admin_err_t *err);
/* {"topic","items":[…]}: the last `limit` records of topic, newest first (by timestamp);
 * with_body: the first ADMIN_DLQ_BODY_MAX bytes of each value. 404 for an unknown topic, 503
 * when Kafka does not answer. Blocks for at most ADMIN_DLQ_TIMEOUT_MS. */
#define ADMIN_DLQ_BODY_MAX 512
#define ADMIN_DLQ_TIMEOUT_MS 3000
json_t *admin_dlq_read(admin_dlq_t *d, const char *topic, int limit, bool with_body,
                       admin_err_t *err);

/* ---- ndd.events consumer, status and alarms (admin_events.c) ---- */
admin_events_t *admin_events_new(const char *bootstrap, const char *topic, const char *group,
                                 admin_db_t *db, int64_t down_after_ms, char *err, size_t errlen);
void admin_events_free(admin_events_t *ev);
/* Handles up to max queued events and runs the missing-heartbeat check; call from a timer. */
void admin_events_poll(admin_events_t *ev, int max);
/* Applies one event (JSON text) at time now_ms; used by poll and by tests. */
int admin_events_apply(admin_events_t *ev, const char *json, size_t len, int64_t now_ms);
void admin_events_check(admin_events_t *ev, int64_t now_ms);
/* {"workers":[…],"feeds":[…]} */
json_t *admin_events_status(admin_events_t *ev, int64_t now_ms);
/* The consumer's propagation tracker (never NULL once made). */
admin_prop_t *admin_events_prop(admin_events_t *ev);

/* ---- propagation of configuration changes (admin_prop.c) ---- */
admin_prop_t *admin_prop_new(void);
void admin_prop_free(admin_prop_t *p);
/* A record of ndd.config was delivered (publisher's delivery report). version 0: tombstone. */
void admin_prop_published(admin_prop_t *p, const char *key, size_t key_len, int64_t version,
                          int32_t partition, int64_t offset, int64_t publish_ms);
/* A worker's applied state, the "config" object of its config event or heartbeat
 * ({"kinds":[…],"offsets":[…],"applied_ms":W}). 0, or -1 when malformed or over the bound. */
int admin_prop_worker(admin_prop_t *p, const char *service, const char *instance, json_t *config);
/* A worker is down (no heartbeat) or back: followers that are down are not waited for. */
void admin_prop_worker_down(admin_prop_t *p, const char *service, const char *instance, bool down);
/* {"followers":{kind:n},"changes_pending":n,"changes":[newest first, at most `changes`]} */
json_t *admin_prop_status(admin_prop_t *p, int changes);

/* ---- routing (admin_routes.c) ---- */
const admin_route_t *admin_routes(size_t *count);
/* Authenticates (unless the route is anonymous), matches a route and runs it. */
void admin_handle(admin_ctx_t *ctx, const admin_req_t *req, const char *authorization,
                  admin_resp_t *resp);
admin_method_t admin_method_parse(const char *s);
const char *admin_method_name(admin_method_t m);

/* Handlers (admin_routes_objects.c, admin_routes_ops.c). */
void admin_h_list(admin_ctx_t *, const admin_req_t *, const char *, admin_resp_t *);
/* The list cursor: "c1" + hex of name '\n' id (admin_routes_list.c). 0, or -1 when the
 * output does not fit / the text is not a cursor. */
int admin_cursor_encode(const char *name, const char *id, char *out, size_t outlen);
int admin_cursor_decode(const char *cursor, char *name, size_t namelen, char *id, size_t idlen);
/* After a committed write of one object (out NULL: deleted): the cache, then ndd.config (a
 * filter also republishes the feeds that embed it). admin_routes_objects.c. */
void admin_after_write(admin_ctx_t *ctx, admin_kind_t kind, const char *id, json_t *out);
void admin_h_get(admin_ctx_t *, const admin_req_t *, const char *, admin_resp_t *);
void admin_h_create(admin_ctx_t *, const admin_req_t *, const char *, admin_resp_t *);
void admin_h_replace(admin_ctx_t *, const admin_req_t *, const char *, admin_resp_t *);
void admin_h_patch(admin_ctx_t *, const admin_req_t *, const char *, admin_resp_t *);
void admin_h_delete(admin_ctx_t *, const admin_req_t *, const char *, admin_resp_t *);
void admin_h_status(admin_ctx_t *, const admin_req_t *, const char *, admin_resp_t *);
void admin_h_alarms_list(admin_ctx_t *, const admin_req_t *, const char *, admin_resp_t *);
void admin_h_alarms_get(admin_ctx_t *, const admin_req_t *, const char *, admin_resp_t *);
void admin_h_alarms_ack(admin_ctx_t *, const admin_req_t *, const char *, admin_resp_t *);
void admin_h_audit_list(admin_ctx_t *, const admin_req_t *, const char *, admin_resp_t *);
void admin_h_audit_get(admin_ctx_t *, const admin_req_t *, const char *, admin_resp_t *);
/* admin_routes_tokens.c; GET /tokens checks for role admin itself (the list names every holder) */
void admin_h_whoami(admin_ctx_t *, const admin_req_t *, const char *, admin_resp_t *);
void admin_h_schema_feeds(admin_ctx_t *, const admin_req_t *, const char *, admin_resp_t *);
void admin_h_tokens_list(admin_ctx_t *, const admin_req_t *, const char *, admin_resp_t *);
void admin_h_tokens_create(admin_ctx_t *, const admin_req_t *, const char *, admin_resp_t *);
void admin_h_tokens_revoke(admin_ctx_t *, const admin_req_t *, const char *, admin_resp_t *);

/* admin_apply.c: POST /api/v1/apply (role admin) */
void admin_h_apply(admin_ctx_t *, const admin_req_t *, const char *, admin_resp_t *);
/* admin_routes_dlq.c: GET /api/v1/deadletters (bodies for role admin only) */
void admin_h_deadletters(admin_ctx_t *, const admin_req_t *, const char *, admin_resp_t *);

/* ---- context ---- */
int admin_ctx_init(admin_ctx_t *ctx, size_t max_objects, size_t max_body);
void admin_ctx_free(admin_ctx_t *ctx);

#endif
