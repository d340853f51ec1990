/* What ndd-travel reads from an xDR record (docs/xdr.md): its completion and the latest of its
 * trigger-point timestamps, from the JSON form (one pass over the top-level members, nothing
 * built or allocated) or the binary form ("XDR1" magic, decoded by correlation/xdr.c). */
#ifndef NDD_TRAVEL_XDR_H
#define NDD_TRAVEL_XDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Completions as in xdr_completion_t (complete, timeout, evicted, revoked), then one bucket for
 * an xDR whose completion is missing or not one of those. */
#define TRAVEL_XDR_COMPLETIONS 5
#define TRAVEL_XDR_UNKNOWN 4

typedef enum travel_xdr_form {
    TRAVEL_XDR_NOT = 0, /* not an xDR: neither "XDR1" binary nor a JSON object with "completion" */
    TRAVEL_XDR_JSON,
    TRAVEL_XDR_BINARY,
} travel_xdr_form_t;

typedef struct travel_xdr {
    int completion; /* 0..3 = xdr_completion_t, TRAVEL_XDR_UNKNOWN otherwise */
    bool has_ts;    /* at least one trigger point had a timestamp */
    int64_t ts_us;  /* the latest of them: when the last copy was taken */
} travel_xdr_t;

/* ---- functions ---- */

/* Reads one record value. For TRAVEL_XDR_NOT, out->has_ts may still be set: a JSON object with
 * "timestamps_us" but no "completion" (kept so that older records still count). */
travel_xdr_form_t travel_xdr_read(const void *data, size_t len, travel_xdr_t *out);
/* "complete", "timeout", "evicted", "revoked", "unknown". */
const char *travel_xdr_completion_name(int completion);

#endif
