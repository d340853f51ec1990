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
    CODEC_REASON__COUNT
} codec_reason_t;

typedef struct codec_error {
    codec_reason_t reason;
    char field[64];   /* the header (or "key", "value") at fault */
    char detail[160]; /* human-readable, no record content beyond the field name */
} codec_error_t;

const char *codec_reason_name(codec_reason_t r);
/* Header name of a metadata field, e.g. "@correlation-id". */
const char *codec_meta_name(codec_meta_t m);

/* Decode from raw parts: headers are visited through rd_kafka_headers_t (may be NULL). */
codec_reason_t codec_decode_parts(codec_msg_t *out, const void *key, size_t key_len,
                                  const void *value, size_t value_len,
                                  const rd_kafka_headers_t *hdrs, codec_error_t *err);
/* Decode a consumed message (no copy; out points into msg). */
codec_reason_t codec_decode(codec_msg_t *out, const rd_kafka_message_t *msg, codec_error_t *err);

/* Value of a field by its header name: "@..." for metadata (known or extension), otherwise
 * an HTTP field matched case-insensitively (first occurrence). Returns false when absent. */
bool codec_msg_field(const codec_msg_t *m, const char *name, size_t name_len, codec_slice_t *out);

/* Appends every header of m (metadata in a fixed order, then HTTP fields, then extension
 * metadata) to hdrs, which the caller owns (rd_kafka_headers_new). Returns 0 or -1. */
int codec_encode_headers(const codec_msg_t *m, rd_kafka_headers_t *hdrs);

#endif
