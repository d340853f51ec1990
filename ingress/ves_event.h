/* VES 7.x event validation (docs/ingress.md, "VES REST"): a pure function over a request body,
 * for ingress_ves.c and the fuzz target. It checks what the VES 7.x event format says of the
 * commonEventHeader (required fields, their types, the domain and priority enumerations, the
 * versions), the shape of a single event ({"event":{...}}) and of a batch ({"eventList":[...]},
 * every event of one domain, as ONAP's VES collector requires), and gives the ONAP error
 * (status, exception kind, messageId, text and variables) for what it refuses. */
#ifndef NDD_VES_EVENT_H
#define NDD_VES_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define VES_MAX_BATCH 1000 /* events in one eventBatch request */

/* An ONAP VES collector error: {"requestError":{"<kind>":{"messageId","text","variables"}}}. */
typedef struct ves_error {
    int status;             /* HTTP status */
    const char *kind;       /* "ServiceException" or "PolicyException" */
    const char *message_id; /* "SVC2000", "SVC0002", "POL2000", "SVC1000" */
    const char *text;       /* with %1, %2 for the variables */
    char var1[192];
    char var2[16];
} ves_error_t;

typedef struct ves_parsed {
    json_t *root;    /* owned: json_decref when done (ves_parsed_free) */
    json_t **events; /* borrowed from root: the event objects */
    size_t n_events;
    json_t *one[1];     /* storage for a single event */
    const char *domain; /* of every event (NUL-terminated) */
    size_t domain_len;
    /* A single event validated without a tree (root and events NULL): its domain is copied
     * here, its sourceName points into the request body. */
    char domain_buf[32];
    const char *source;
    size_t source_len;
} ves_parsed_t;

/* Validates body as a single event (batch false) or an eventBatch. 0 with *out filled (free it
 * with ves_parsed_free), or -1 with *err set (nothing to free). */
int ves_validate(const uint8_t *body, size_t len, bool batch, ves_parsed_t *out, ves_error_t *err);
/* The same with jansson's tree only (no fast path): what ves_validate falls back to, and
 * what fuzz_ves_json compares it with. */
int ves_validate_tree(const uint8_t *body, size_t len, bool batch, ves_parsed_t *out,
                      ves_error_t *err);
/* The sourceName of event i of a valid request (the Kafka key), not NUL-terminated. */
const char *ves_parsed_source(const ves_parsed_t *p, size_t i, size_t *len);
void ves_parsed_free(ves_parsed_t *p);

/* Fills err with an ONAP error by kind of failure. */
void ves_error_set(ves_error_t *err, int status, const char *kind, const char *id, const char *text,
                   const char *var1, const char *var2);
/* The JSON error body into out (NUL-terminated); its length. */
size_t ves_error_body(const ves_error_t *err, char *out, size_t outlen);

#endif
