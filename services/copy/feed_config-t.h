/* Types of a feed's configuration (services/copy/feed_config.h parses it; docs/adapter.md has the
 * format). */
#ifndef NDD_SERVICES_FEED_CONFIG_T_H
#define NDD_SERVICES_FEED_CONFIG_T_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "encoding.h"
#include "jfield.h"
#include "transport_url.h"

#define FEED_MAX_ENDPOINTS 32
#define FEED_NAME_MAX 100    /* it becomes part of topic and consumer group names */
#define FEED_REF_NAME_MAX 64 /* a filter named by reference (the admin's object names) */

typedef struct feed_endpoint_config {
    char url[600];
    unsigned weight;
    transport_url_t u;
} feed_endpoint_config_t;

typedef struct feed_delivery_config {
    unsigned max_in_flight;        /* per endpoint (requests/frames), default 64 */
    uint32_t timeout_ms;           /* per request, default 5000 */
    uint32_t retry_max_ms;         /* total retry time per message before the DLQ, default 300000 */
    uint32_t retry_initial_ms;     /* first retry delay, default 100 */
    uint32_t retry_backoff_max_ms; /* retry delay cap, default 5000 */
    unsigned batch_max;            /* messages per request/frame, default the encoding's
                                      default_batch (json 1, frame 16) */
    uint32_t batch_ms;             /* longest wait to fill a batch, default 0 */
    unsigned max_pending;          /* messages held by the feed (in batches, in flight, retrying),
                                      default 1024; beyond it the feed stops taking more */
    size_t max_request_bytes;      /* encoded request/frame ceiling, default 4 MiB */
    bool fire_and_forget;          /* transports whose row allows it */
    uint32_t backoff_initial_ms;   /* endpoint reconnect backoff, default 100 */
    uint32_t backoff_max_ms;       /* default 10000 */
    unsigned fail_threshold;       /* consecutive failures that take an endpoint out, default 5 */
    unsigned memory_mb; /* the feed's memory budget (librdkafka prefetch and fetch sizes, bytes
                           held); 0: the process default (--feed-memory-mb) */
} feed_delivery_config_t;

typedef struct feed_config {
    char name[FEED_NAME_MAX + 1];
    char source_topic[250];
    char dlq_topic[300];
    char group_id[200];
    json_t *filter_json;                    /* an inline filter; NULL: allow everything */
    char filter_ref[FEED_REF_NAME_MAX + 1]; /* "filter" named a filter object (opts) */
    const encoding_t *encoding;             /* a row of the encoding table (encoding.h) */
    const transport_desc_t *transport;      /* a row of the transport table (transport_desc.h) */
    json_t *transport_options;              /* the transport's own member (transport_desc_t.options)
                                               when the feed has one; NULL otherwise */
    json_t *encoding_options;               /* the encoding's own member (encoding_t.options) */
    size_t n_endpoints;
    feed_endpoint_config_t endpoints[FEED_MAX_ENDPOINTS];
    feed_delivery_config_t delivery;
    /* tls */
    char ca_file[512], cert_file[512], key_file[512], key_password_file[512], sni[254];
    bool verify;
    /* http */
    char path[512];
    char method[8];
    size_t n_headers;
    char header_names[TRANSPORT_MAX_HEADERS][64];
    /* heap; values from header_files are secrets, NULL unless the parse read them */
    char *header_values[TRANSPORT_MAX_HEADERS];
    json_t *raw; /* the JSON this was parsed from (change detection) */
} feed_config_t;

/* What a parse may do beyond the format every feed follows. */
typedef struct feed_config_opts {
    /* "filter" may also be the name of a filter object (the admin resolves it when it
     * publishes the feed; workers only ever see inline filters). */
    bool filter_by_name;
    /* Read header_files (secret values) now. The admin validates feeds for workers that run
     * elsewhere: it must not open files on its own host. */
    bool read_secrets;
    /* Longest feed name; 0: FEED_NAME_MAX. The admin keeps all its object names shorter. */
    size_t name_max;
    /* More top-level members to accept and ignore (NULL-terminated; e.g. the admin's
     * server-side fields id, version, …). */
    const char *const *ignore_keys;
} feed_config_opts_t;

#endif
