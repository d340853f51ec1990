/* The NF message copy codec: decode a Kafka record into codec_msg_t without copying,
 * encode one back into Kafka headers. Contract: docs/message-format.md. */
#ifndef NDD_CODEC_H
#define NDD_CODEC_H

#include <stdbool.h>
#include <librdkafka/rdkafka.h>

#include "codec-t.h"

/* Why a record was refused. The names (codec_reason_name) are stable: they are the
 * `reason` of a dead-letter record and a metrics label. */
typedef enum codec_reason {
    CODEC_OK = 0,
    CODEC_ERR_MISSING_FIELD, /* "missing-field" */
    CODEC_ERR_BAD_VALUE,     /* "bad-value" */
    CODEC_ERR_OVERSIZED,     /* "oversized" */
    CODEC_ERR_LIMIT,         /* "too-many-headers" */
    CODEC_ERR_BAD_HEADER,    /* "bad-header" (name not a valid field name) */
    CODEC_ERR_DUPLICATE,     /* "duplicate-field" */
    CODEC_ERR_KEY_MISMATCH,  /* "key-mismatch" (key differs from @correlation-id) */
    CODEC_ERR_INCONSISTENT,  /* "inconsistent" (fields contradict each other) */
    CODEC_REASON__COUNT
} codec_reason_t;

typedef struct codec_error {
    codec_reason_t reason;
    char field[64];   /* the header (or "key", "value", "headers") at fault */
    char detail[160]; /* human-readable, no record content beyond the field name */
} codec_error_t;

/* Names of the dead-letter headers (docs/message-format.md, "Dead-letter records"). */
#define CODEC_DLQ_REASON "@dlq-reason"
#define CODEC_DLQ_FIELD "@dlq-field"
#define CODEC_DLQ_DETAIL "@dlq-detail"
#define CODEC_DLQ_ORIGIN "@dlq-origin"

const char *codec_reason_name(codec_reason_t r);
/* Header name of a metadata field, e.g. "@correlation-id". */
const char *codec_meta_name(codec_meta_t m);
/* strlen(codec_meta_name(m)), known at compile time: the frame and JSON writers take it per
 * field of every copy. */
size_t codec_meta_name_len(codec_meta_t m);
/* Metadata field of a header name ("@nf-type" -> CODEC_META_NF_TYPE); -1 if not one. */
int codec_meta_lookup(const char *name, size_t len);
/* "rx-request"..., "SCP"...; "unknown" for the zero value. */
const char *codec_trigger_name(codec_trigger_t t);
const char *codec_nf_name(codec_nf_t nf);
codec_nf_t codec_nf_parse(const char *s, size_t len);

/* 0 when l's values are in range, -1 when not (max_body > CODEC_MAX_MAX_BODY). */
int codec_limits_check(const codec_limits_t *l);

/* Decode from raw parts: headers are visited through rd_kafka_headers_t (may be NULL).
 * key == NULL or key_len == 0 means "no key". On error, *err (may be NULL) says why and
 * *out is partly filled and must not be used. No allocation, O(headers). */
codec_reason_t codec_decode_parts(codec_msg_t *out, const void *key, size_t key_len,
                                  const void *value, size_t value_len,
                                  const rd_kafka_headers_t *hdrs, codec_error_t *err);
/* codec_decode_parts and codec_decode with limits l (NULL: the defaults) instead of the
 * defaults. */
codec_reason_t codec_decode_parts_limited(codec_msg_t *out, const void *key, size_t key_len,
                                          const void *value, size_t value_len,
                                          const rd_kafka_headers_t *hdrs, const codec_limits_t *l,
                                          codec_error_t *err);
codec_reason_t codec_decode_limited(codec_msg_t *out, const rd_kafka_message_t *msg,
                                    const codec_limits_t *l, codec_error_t *err);
/* A copy in the frame form (docs/message-format.md, "MAIN in the frame form"): the value is
 * one NDD DATA frame (services/copy/frame.h) holding exactly one record, with the key and
 * every header inside it; the same checks as the header form, in the same order. */
codec_reason_t codec_decode_frame_limited(codec_msg_t *out, const void *data, size_t len,
                                          const codec_limits_t *l, codec_error_t *err);
/* True when msg is a copy in the frame form: no Kafka headers and a value that starts with
 * the frame magic. */
bool codec_record_is_frame(const rd_kafka_message_t *msg);
/* A record of MAIN, in either form (ndd-aggregation's main-format): the readers of MAIN
 * (adapter, correlation) decode with this. */
codec_reason_t codec_decode_main_limited(codec_msg_t *out, const rd_kafka_message_t *msg,
                                         const codec_limits_t *l, codec_error_t *err);
/* The fields of a record that is not a copy (an xDR of the XDR topic, a VES event), for
 * egress filters (docs/filters.md, "Records that are not copies"): key and body as they are,
 * the key also as @correlation-id, the record's headers ('@' names as metadata, others as
 * fields), and, when the value is a JSON object, each top-level member whose value is a
 * string without escapes, a number, true or false as a field named by the member (null,
 * objects and arrays are absent). Nothing is validated or refused; no allocation. */
void codec_fields_raw(codec_msg_t *out, const rd_kafka_message_t *msg);
/* The same from raw parts (hdrs may be NULL). */
void codec_fields_raw_parts(codec_msg_t *out, const void *key, size_t key_len, const void *value,
                            size_t value_len, const rd_kafka_headers_t *hdrs);
/* Decode a consumed message (no copy; out points into msg). */
codec_reason_t codec_decode(codec_msg_t *out, const rd_kafka_message_t *msg, codec_error_t *err);

/* Value of a field by its header name: "@..." for metadata (known or extension), otherwise
 * an HTTP field matched case-insensitively (first occurrence). Returns false when absent. */
bool codec_msg_field(const codec_msg_t *m, const char *name, size_t name_len, codec_slice_t *out);

/* Appends every header of m (metadata in a fixed order, then HTTP fields, then extension
 * metadata) to hdrs, which the caller owns (rd_kafka_headers_new). Returns 0 or -1. */
int codec_encode_headers(const codec_msg_t *m, rd_kafka_headers_t *hdrs);

/* Replaces every header called `name` in hdrs by one with this value (used by aggregation to
 * stamp @agg-timestamp-us, @agg-seq, @origin on a copy it re-produces). Returns 0 or -1. */
int codec_headers_set(rd_kafka_headers_t *hdrs, const char *name, const void *value, size_t len);
int codec_headers_set_meta(rd_kafka_headers_t *hdrs, codec_meta_t m, const void *value, size_t len);
/* What a re-producer (ndd-aggregation on MAIN) adds so that every record downstream carries
 * both the key and @correlation-id (docs/message-format.md, "Key and correlation id"): a
 * decoded copy that gave its id only as the key needs the header. One that gave it only as
 * @correlation-id (cid_in == CODEC_CID_IN_HEADER) is produced with it as key, found again
 * with codec_headers_correlation_id. */
bool codec_msg_cid_needs_header(const codec_msg_t *m);
/* The @correlation-id value of hdrs (the last one), pointing into hdrs: the key to produce a
 * copy that carried no key with, found again from the headers a retry holds. 0, or -1 when
 * hdrs has none. */
int codec_headers_correlation_id(const rd_kafka_headers_t *hdrs, const void **value, size_t *len);
/* "<topic>/<partition>/<offset>", the text of @origin and @dlq-origin. Returns the length
 * written, or -1 when dst is too small. */
int codec_format_origin(char *dst, size_t dstlen, const char *topic, int32_t partition,
                        int64_t offset);
/* Appends the four @dlq-* headers for a refused record to hdrs (which normally holds a copy
 * of the original headers). origin may be NULL. Returns 0 or -1. */
int codec_dlq_headers(rd_kafka_headers_t *hdrs, const codec_error_t *err, const char *origin);

#endif
