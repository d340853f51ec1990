/* Types of ndd-admin shared by its modules. Functions live in admin.h.
 *
 * The request handling core is transport-free: a request is a method, a path, a query, a
 * body and a few headers; a response is a status, a JSON body and a few headers. The HTTP
 * glue (admin_server.c), the unit tests and the fuzzer all drive the same admin_handle(). */
#ifndef NDD_ADMIN_T_H
#define NDD_ADMIN_T_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "buf.h"

/* The configuration collections: stored in PostgreSQL, cached in memory, published to
 * ndd.config under "<kind>/<id>". */
typedef enum admin_kind {
    ADMIN_KIND_FEED = 0,
    ADMIN_KIND_FILTER,
    ADMIN_KIND_SOURCE,
    ADMIN_KIND_CORRELATION,
    ADMIN_KIND_COUNT
} admin_kind_t;

typedef enum admin_role {
    ADMIN_ROLE_NONE = 0,
    ADMIN_ROLE_VIEWER,
    ADMIN_ROLE_ADMIN,
} admin_role_t;

typedef enum admin_method {
    ADMIN_GET = 0,
    ADMIN_POST,
    ADMIN_PUT,
    ADMIN_PATCH,
    ADMIN_DELETE,
    ADMIN_METHOD_OTHER,
} admin_method_t;

/* A validation or processing error: HTTP status, the JSON path of the field at fault ("" when
 * the body as a whole is at fault) and a reason a human can act on. */
typedef struct admin_err {
    int status;
    char error[64];
    char field[128];
    char reason[256];
} admin_err_t;

/* Who is calling: resolved from the bearer token before a handler runs. */
typedef struct admin_principal {
    admin_role_t role;
    char name[64];
    char token_id[32];
    /* role NONE because PostgreSQL could not be asked about a token never seen before: the
     * credential may well be right, so the caller gets 503, not 401. */
    bool unverifiable;
} admin_principal_t;

/* The token a connection last presented and what verifying it gave (kept in the HTTP
 * server's per-connection memo): the next request of that keep-alive connection with the same
 * Authorization is compared against it byte for byte instead of hashed again. It expires when
 * the token cache's entry does (token-ttl), so revocation takes effect as before. */
typedef struct admin_token_memo {
    char token[128];
    size_t len; /* 0: empty */
    admin_role_t role;
    char name[64];
    char id[32];
    int64_t expires_ms;
} admin_token_memo_t;

typedef struct admin_req {
    admin_method_t method;
    const char *path;  /* without query, not decoded */
    const char *query; /* after '?', may be NULL */
    const char *body;  /* may be NULL when body_len is 0 */
    size_t body_len;
    const char *if_match;      /* header value or NULL */
    const char *if_none_match; /* header value or NULL: a matching ETag gets 304 */
    admin_principal_t principal;
    admin_token_memo_t *token_memo; /* the connection's, or NULL */
} admin_req_t;

typedef struct admin_resp {
    int status;
    buf_t body; /* JSON text (or Prometheus text for /metrics) */
    /* When set, the body is these bytes instead of `body`: a cached object's text, sent
     * without copying it into a per-request buffer. Valid until the handler's caller returns
     * (the cache is only written on the same thread, between requests). */
    const char *body_ref;
    size_t body_ref_len;
    const char *content_type;
    char etag[32];
    char location[192];
} admin_resp_t;

/* One cached configuration object: the full representation (as GET returns it) both as JSON
 * and pre-serialised, so a read never serialises. */
typedef struct admin_obj {
    char *id;
    char *name;
    int64_t version;
    char etag[24]; /* "\"<version>\"", rendered once per version */
    json_t *json;
    char *text;
    size_t text_len;
    struct admin_obj *next_in_bucket; /* chain by id */
    struct admin_obj *next_by_name;   /* chain by name (names are unique per kind) */
} admin_obj_t;

/* A kind's cache: a chained hash table by id, with a hard ceiling on entries. */
typedef struct admin_cache {
    admin_obj_t **buckets;         /* by id */
    admin_obj_t **buckets_by_name; /* same size, by name: reference checks stay O(1) */
    size_t nbuckets;
    size_t count;
    size_t max;
    /* Every object in (name, id) order, kept on each put/remove (writes are rare, a memmove
     * of pointers): a list page is a binary search and a walk, never a sort. */
    admin_obj_t **sorted;
    size_t sorted_cap;
} admin_cache_t;

typedef struct admin_db admin_db_t;
typedef struct admin_publisher admin_publisher_t;
typedef struct admin_events admin_events_t;
typedef struct admin_prop admin_prop_t;
typedef struct admin_tokens admin_tokens_t;
typedef struct admin_kacl admin_kacl_t;
typedef struct admin_dlq admin_dlq_t;

/* Everything a request handler may reach. */
typedef struct admin_ctx {
    admin_db_t *db;         /* NULL in transport/validation-only tests */
    admin_publisher_t *pub; /* NULL: no Kafka (publishing disabled) */
    admin_events_t *events; /* NULL: no ndd.events consumer */
    admin_tokens_t *tokens; /* NULL: every request is anonymous (401) */
    admin_kacl_t *kacl;     /* NULL: Kafka feed topics and ACLs are not managed */
    admin_dlq_t *dlq;       /* NULL: no Kafka, no dead-letter view (503) */
    admin_cache_t cache[ADMIN_KIND_COUNT];
    size_t max_body; /* bytes; larger bodies get 413 */
    /* Writes refused with 503 (ndd_admin_database_unavailable_total; NULL: not counted). */
    struct metrics_child *db_unavailable;
} admin_ctx_t;

typedef void (*admin_handler_fn)(admin_ctx_t *ctx, const admin_req_t *req, const char *id,
                                 admin_resp_t *resp);

/* One registered route. `pattern` uses {id} for one path segment; the same strings appear in
 * docs/openapi.yaml (a unit test keeps the two in step). A NULL handler marks a route served
 * by services/base/httpd itself (/healthz, /readyz, /metrics). */
typedef struct admin_route {
    admin_method_t method;
    const char *pattern;
    admin_handler_fn handler;
    bool write;     /* needs role admin */
    bool anonymous; /* no token needed (health probes) */
} admin_route_t;

#endif
