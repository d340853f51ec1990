/* The transport descriptor: what each egress transport IS, as feed configurations see it
 * (its name, URL schemes, default ports, ALPN, which encodings it carries, whether
 * fire-and-forget applies, what its acknowledgement means, its own settings, its
 * capabilities) and the callbacks that implement it. feed_config.c validates feeds from it,
 * transport_url.c parses endpoint URLs from it and feed_schema.c serves it, in the adapter and
 * in the admin alike; the adapter calls its ops.
 *
 * A transport is ONE file, adapter/transport_<name>.c, that defines its transport_desc_t (the
 * description and .ops), plus ONE row in transport_table.h (docs/contributing.md, "Adding a
 * transport"). Shared code asks a descriptor for a capability (exactly_once,
 * provisions_topic, fire_and_forget, ack, sections), never for its name. */
#ifndef NDD_SERVICES_TRANSPORT_DESC_H
#define NDD_SERVICES_TRANSPORT_DESC_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "jfield.h"
#include "optdesc.h"

/* ---- types ---- */

#define TRANSPORT_MAX_SCHEMES 4
#define TRANSPORT_MAX_ENCODINGS 8
#define TRANSPORT_MAX 16 /* rows in the table (TRANSPORT_TABLE refuses more at compile time) */

typedef struct transport_scheme {
    const char *name;         /* "https"; NULL ends the list */
    bool tls;                 /* the connection is TLS */
    const char *default_port; /* when the URL names none; NULL: the URL must name one */
} transport_scheme_t;

/* What an endpoint URL of the transport looks like. */
typedef enum transport_url_form {
    TRANSPORT_URL_NETWORK = 0, /* scheme://host[:port][/path]: host a DNS name or IP literal */
    TRANSPORT_URL_LOCAL,       /* scheme:///absolute/path, no host (e.g. file:///var/ndd) */
} transport_url_form_t;

typedef enum transport_url_path {
    TRANSPORT_PATH_NONE = 0, /* none, or just "/" (tcp://h:p) */
    TRANSPORT_PATH_OPTIONAL, /* "/" when absent (the HTTP request path, query included) */
    TRANSPORT_PATH_REQUIRED, /* the path is the address (file:///dir) */
} transport_url_path_t;

/* What an ack from the transport promises (docs/adapter.md, "Delivery guarantee"). */
typedef enum transport_ack {
    TRANSPORT_ACK_PEER = 0, /* the endpoint answered (HTTP 2xx, an ACK frame) */
    TRANSPORT_ACK_DURABLE,  /* the copy is durably written (fsync'ed file, acks=all produce) */
} transport_ack_t;

/* Which of the feed's common members apply to a transport (the console shows those). The
 * delivery member applies to every transport. */
enum {
    TRANSPORT_SECTION_TLS = 1u << 0,  /* "tls": the transport has a TLS scheme */
    TRANSPORT_SECTION_HTTP = 1u << 1, /* "http": the transport sends HTTP requests */
};

struct transport_ops; /* adapter/transport.h: the implementation's callbacks */

typedef struct transport_desc {
    const char *name;        /* the feed's "transport" value, e.g. "http2" */
    const char *url_example; /* an endpoint URL as an operator writes it, for forms and docs */
    unsigned sections;       /* TRANSPORT_SECTION_* */
    bool exactly_once;       /* can deliver exactly once (transactions with the offsets) */
    /* ndd-admin creates the feed's topic and its consumer's ACLs on the admin's own cluster
     * (the options' "topic" and "consumer" members, feed_kafka_acl.h). */
    bool provisions_topic;
    transport_scheme_t schemes[TRANSPORT_MAX_SCHEMES];
    transport_url_form_t url_form;
    transport_url_path_t url_path;
    const char *alpn;     /* ALPN protocol offered on TLS connections; NULL: none */
    bool fire_and_forget; /* delivery.fire_and_forget applies */
    transport_ack_t ack;
    /* Encodings it carries, by name; NULL ends the list. */
    const char *encodings[TRANSPORT_MAX_ENCODINGS];
    /* The transport's own settings: a member of the feed object named options (e.g. "file"),
     * an object described by option_desc (types, defaults, ranges, help: the check and the
     * schema). NULL: the transport has none. feed_config checks the member against the
     * description and keeps it (feed_config_t.transport_options) for the implementation. */
    const char *options;
    const optdesc_t *option_desc;
    /* Optional: rules across the member's values that the description cannot say, a field
     * error with its path under prefix (the member's name) on the first bad one. */
    int (*check_options)(const json_t *options, const char *prefix, jfield_err_t *err);
    /* The implementation (adapter/transport.h): the adapter creates connections through it;
     * the admin links it too (the same file holds the description) but never calls it. */
    const struct transport_ops *ops;
} transport_desc_t;

/* ---- functions ---- */

/* The table (transport_table.c): the rows of NDD_TRANSPORTS (transport_table.h), NULL ended.
 * A test may link a table of its own in place of transport_table.c. */
extern const transport_desc_t *const transport_builtin[];
#define TRANSPORT_DECLARE(d) extern const transport_desc_t d;
#define TRANSPORT_ROW(d) &d,
/* Defines transport_builtin from a row list (a macro taking X, calling X(descriptor) per row). */
#define TRANSPORT_TABLE(ROWS)                                                                      \
    ROWS(TRANSPORT_DECLARE)                                                                        \
    const transport_desc_t *const transport_builtin[] = {ROWS(TRANSPORT_ROW) NULL};                \
    _Static_assert(sizeof transport_builtin / sizeof *transport_builtin <= TRANSPORT_MAX + 1,      \
                   "more than TRANSPORT_MAX transports");

/* By "transport" name; NULL when unknown. */
const transport_desc_t *transport_find(const char *name);
/* The row owning URL scheme s[0..len), and that scheme's entry; NULL when unknown. */
const transport_desc_t *transport_find_scheme(const char *s, size_t len,
                                              const transport_scheme_t **scheme);
size_t transport_count(void);
const transport_desc_t *transport_at(size_t i);
bool transport_takes_encoding(const transport_desc_t *d, const char *encoding);
/* Lists for error messages: names of every transport ("\"http2\", \"tcp\"") or of those with
 * fire-and-forget; schemes of one row or of all ("http, https"); encodings of one row. */
void transport_names(char *out, size_t outlen, bool only_fire_and_forget);
void transport_schemes(const transport_desc_t *d, char *out, size_t outlen);
void transport_encodings(const transport_desc_t *d, char *out, size_t outlen);

#include "transport_table.h" /* the built-in rows */

#endif
