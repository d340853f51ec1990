/* The xDR: one record per correlated transaction (request and response copies of one
 * correlation id), in JSON or in a compact binary layout. Contract: docs/xdr.md.
 *
 * An xdr_t handed out by the correlation engine points into the engine's slot: its slices are
 * valid only during the callback that receives it. */
#ifndef NDD_XDR_H
#define NDD_XDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "codec-t.h"

/* The text fields of an xDR, in the order of both encodings. */
typedef enum xdr_str {
    XDR_S_CORRELATION_ID = 0,
    XDR_S_NF_INSTANCE,
    XDR_S_CONSUMER_ID,
    XDR_S_CONSUMER_FQDN,
    XDR_S_PRODUCER_ID,
    XDR_S_PRODUCER_FQDN,
    XDR_S_METHOD,
    XDR_S_PATH,
    XDR_S_SERVICE,
    XDR_S_OPERATION,
    XDR_S_SUPI,
    XDR_S_GPSI,
    XDR_S__COUNT
} xdr_str_t;

/* Why the xDR was emitted. The names (xdr_completion_name) are a metrics label. */
typedef enum xdr_completion {
    XDR_COMPLETE = 0, /* every expected copy arrived */
    XDR_TIMEOUT,      /* the timeout passed first: `missing` lists what never came */
    XDR_EVICTED,      /* the partition's open-transaction limit pushed it out (oldest first) */
    XDR_REVOKED,      /* its partition was drained (rebalance) with emission of open ones */
    XDR_COMPLETION__COUNT
} xdr_completion_t;

#define XDR_FLAG_TRUNCATED 0x01 /* a text field did not fit the slot and was cut or left out */

/* A missing value of an int64 field. */
#define XDR_NONE INT64_MIN

typedef struct xdr {
    codec_slice_t s[XDR_S__COUNT]; /* ptr NULL when unknown */
    codec_nf_t nf;
    xdr_completion_t completion;
    uint8_t seen;        /* bit (1 << codec_trigger_t) per copy received */
    uint8_t missing;     /* bit per expected copy that did not arrive */
    uint8_t flags;       /* XDR_FLAG_* */
    int status_code;     /* :status of the first response copy, 0 when none arrived */
    uint32_t duplicates; /* copies of a trigger point already seen (replays) */
    /* @timestamp-us of each copy, indexed by codec_trigger_t (index 0 unused); XDR_NONE when
     * that copy did not arrive. */
    int64_t ts_us[CODEC_TRIGGER__COUNT];
    /* Request-to-response latency at each side of the NF: rx = tx-response - rx-request (the
     * time the NF, and whatever is behind it, took to answer), tx = rx-response - tx-request
     * (the time the next hop took). XDR_NONE when a copy is missing. */
    int64_t latency_rx_us;
    int64_t latency_tx_us;
    int64_t request_bytes;  /* body size of the first request copy; XDR_NONE if none */
    int64_t response_bytes; /* body size of the first response copy; XDR_NONE if none */
    int32_t partition;      /* where the first copy was consumed */
    int64_t first_offset;
    /* With correlate_config_t.hold_until_ack: pass to correlate_ack() once the xDR is
     * written. 0: nothing to acknowledge. Not part of either encoding. */
    uint64_t ticket;
} xdr_t;

/* Where SUPI/GPSI are looked for (docs/xdr.md, "Subscriber identities"). */
typedef struct xdr_subscriber_opts {
    bool from_path;   /* imsi-/nai- (SUPI) and msisdn-/extid- (GPSI) tokens in :path */
    bool from_body;   /* JSON string values starting with those prefixes in the body */
    size_t body_scan; /* bytes of the body scanned; 0 means 4096 */
} xdr_subscriber_opts_t;

/* Binary layout magic "XDR1". */
#define XDR_BIN_MAGIC 0x58445231u
#define XDR_BIN_VERSION 1

/* Upper bound of the JSON form without the text fields' contents (member names, punctuation,
 * every number at its longest). A record needs at most this plus the escaped text (at most
 * 6 bytes per input byte; exactly the input length when nothing needs escaping). */
#define XDR_JSON_FIXED_MAX 1024

/* ---- functions ---- */

const char *xdr_completion_name(xdr_completion_t c);

/* Service name and operation from an SBI path (slices into path; query ignored):
 * "/nudm-sdm/v2/imsi-1/am-data?x" -> "nudm-sdm", "am-data". The operation is the last
 * segment after the API version that is not an identifier (SUPI/GPSI, number, UUID, ...);
 * an empty slice (ptr != NULL, len 0) when every segment is one. Both absent (ptr NULL) when
 * the path does not start with "/<name>". */
void xdr_path_service(const char *path, size_t len, codec_slice_t *service,
                      codec_slice_t *operation);
/* SUPI/GPSI tokens of a path / body (slices into the input). Each fills *supi / *gpsi only
 * while it is absent (ptr NULL), so callers try the path, then the body. */
void xdr_find_subscriber_path(const char *path, size_t len, codec_slice_t *supi,
                              codec_slice_t *gpsi);
void xdr_find_subscriber_body(const char *body, size_t len, size_t scan_max, codec_slice_t *supi,
                              codec_slice_t *gpsi);

/* Appends the xDR as one JSON object (no newline). 0, or -1 when the object does not fit
 * under out's ceiling (out is then left as it was). */
int xdr_encode_json(const xdr_t *x, buf_t *out);
/* Appends the binary layout (docs/xdr.md). 0 or -1 as above. */
int xdr_encode_binary(const xdr_t *x, buf_t *out);
/* Parses a binary xDR (slices into data). 0, or -1 when the bytes are not one. */
int xdr_decode_binary(const uint8_t *data, size_t len, xdr_t *out);

#endif
