/* A feed's configuration, parsed strictly from its JSON (docs/adapter.md has the format):
 * {"name","source_topic","filter","encoding","transport","endpoints":[{"url","weight"}],
 *  "delivery":{…},"tls":{…},"http":{…}}. Unknown keys and wrong types are refused with the
 * JSON path of the problem, e.g. `feeds[2].delivery.timeout_ms: must be an integer >= 1`. */
#ifndef NDD_ADAPTER_FEED_CONFIG_H
#define NDD_ADAPTER_FEED_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "encoding.h"
#include "filter.h"
#include "transport.h"

#define FEED_MAX_ENDPOINTS 32
#define FEED_FRAME_BATCH_DEFAULT 16 /* delivery.batch_max of "frame" feeds (JSON: 1) */

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
    unsigned batch_max;            /* messages per request/frame, default 1 (frame: 16) */
    uint32_t batch_ms;             /* longest wait to fill a batch, default 0 */
    unsigned max_pending;          /* messages held by the feed (in batches, in flight, retrying),
                                      default 1024; beyond it the feed stops taking more */
    size_t max_request_bytes;      /* encoded request/frame ceiling, default 4 MiB */
    bool fire_and_forget;          /* tcp/tls only */
    uint32_t backoff_initial_ms;   /* endpoint reconnect backoff, default 100 */
    uint32_t backoff_max_ms;       /* default 10000 */
    unsigned fail_threshold;       /* consecutive failures that take an endpoint out, default 5 */
    unsigned memory_mb; /* the feed's memory budget (librdkafka prefetch and fetch sizes, bytes
                           held); 0: the process default (--feed-memory-mb) */
} feed_delivery_config_t;

typedef struct feed_config {
    char name[128];
    char source_topic[250];
    char dlq_topic[300];
    char group_id[200];
    json_t *filter_json; /* NULL: allow everything */
    const encoding_t *encoding;
    transport_kind_t transport;
    size_t n_endpoints;
    feed_endpoint_config_t endpoints[FEED_MAX_ENDPOINTS];
    feed_delivery_config_t delivery;
    /* tls */
    char ca_file[512], cert_file[512], key_file[512], key_password_file[512], sni[256];
    bool verify;
    /* http */
    char path[512];
    char method[16];
    size_t n_headers;
    char header_names[TRANSPORT_MAX_HEADERS][64];
    char *header_values[TRANSPORT_MAX_HEADERS]; /* heap; values from files are secrets */
    json_t *raw; /* the JSON this was parsed from (change detection) */
} feed_config_t;

/* Parses one feed object. `where` prefixes error paths (e.g. "feeds[2]"). NULL + err. */
feed_config_t *feed_config_parse(const json_t *j, const char *where, char *err, size_t errlen);
void feed_config_free(feed_config_t *c);
/* true when both were parsed from equal JSON. */
bool feed_config_equal(const feed_config_t *a, const feed_config_t *b);
/* A valid feed name: [A-Za-z0-9._-]{1,100} (it becomes part of topic and group names). */
bool feed_name_valid(const char *name);

#endif
