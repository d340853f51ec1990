/* Types of the NF message copy (docs/message-format.md is the contract).
 *
 * A decoded copy points into the librdkafka message (or any caller buffer) it came from:
 * no byte of the key, body or any header is copied, so a codec_msg_t is valid only while
 * that message is alive. */
#ifndef NDD_CODEC_T_H
#define NDD_CODEC_T_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes owned elsewhere. ptr == NULL means "absent"; an empty but present value has
 * ptr != NULL and len == 0. */
typedef struct codec_slice {
    const char *ptr;
    size_t len;
} codec_slice_t;

/* The metadata fields, carried as Kafka headers whose names start with '@' (a character
 * no HTTP field name may contain). Names and rules: docs/message-format.md. The order of
 * this enum is the order codec_encode_headers writes them in. */
typedef enum codec_meta {
    CODEC_META_CORRELATION_ID = 0, /* @correlation-id   required unless the key is set */
    CODEC_META_TIMESTAMP,          /* @timestamp-us     required, decimal µs since epoch */
    CODEC_META_MESSAGE_TYPE,       /* @message-type     required, request | response */
    CODEC_META_TRIGGER_POINT,      /* @trigger-point    required */
    CODEC_META_NF_TYPE,            /* @nf-type          required */
    CODEC_META_NF_INSTANCE,        /* @nf-instance */
    CODEC_META_SRC_ADDR,           /* @src-addr         host:port, [v6]:port */
    CODEC_META_DST_ADDR,           /* @dst-addr */
    CODEC_META_CONSUMER_ID,        /* @consumer-id */
    CODEC_META_CONSUMER_FQDN,      /* @consumer-fqdn */
    CODEC_META_PRODUCER_ID,        /* @producer-id */
    CODEC_META_PRODUCER_FQDN,      /* @producer-fqdn */
    CODEC_META_HOP_ID,             /* @hop-id */
    CODEC_META_REROUTE_CAUSE,      /* @reroute-cause */
    CODEC_META_SEQ,                /* @seq              source sequence number (simulator) */
    CODEC_META_AGG_TIMESTAMP,      /* @agg-timestamp-us set by ndd-aggregation */
    CODEC_META_AGG_SEQ,            /* @agg-seq          per-partition sequence, aggregation */
    CODEC_META_ORIGIN,             /* @origin           topic/partition/offset of the copy */
    CODEC_META__COUNT
} codec_meta_t;

typedef enum codec_msg_type {
    CODEC_MSG_UNKNOWN = 0,
    CODEC_MSG_REQUEST,
    CODEC_MSG_RESPONSE,
} codec_msg_type_t;

/* Where the copy was taken. For an SCP (or SEPP) all four exist; an NF that is an endpoint
 * (NRF, PCF, BSF) sends rx-request + tx-response as a producer, tx-request + rx-response as a
 * consumer. The values index per-copy arrays (correlation), keep them dense from 1. */
typedef enum codec_trigger {
    CODEC_TRIGGER_UNKNOWN = 0,
    CODEC_TRIGGER_RX_REQUEST,
    CODEC_TRIGGER_TX_REQUEST,
    CODEC_TRIGGER_RX_RESPONSE,
    CODEC_TRIGGER_TX_RESPONSE,
    CODEC_TRIGGER__COUNT
} codec_trigger_t;

/* The NF types that may send copies (@nf-type, also the ingest topic names). */
typedef enum codec_nf {
    CODEC_NF_UNKNOWN = 0,
    CODEC_NF_SCP,
    CODEC_NF_NRF,
    CODEC_NF_SEPP,
    CODEC_NF_BSF,
    CODEC_NF_PCF,
    CODEC_NF_NON_NF,
    CODEC_NF__COUNT
} codec_nf_t;

typedef struct codec_header {
    codec_slice_t name;
    codec_slice_t value;
} codec_header_t;

/* Limits of one copy (docs/message-format.md, "Limits"). */
#define CODEC_MAX_HTTP_HEADERS 64      /* HTTP fields incl. pseudo-headers: too-many-headers */
#define CODEC_MAX_EXT_HEADERS 16       /* unknown '@' headers: too-many-headers */
#define CODEC_MAX_KEY 256              /* key and @correlation-id bytes: oversized */
#define CODEC_MAX_META_VALUE 255       /* any '@' header value: oversized */
#define CODEC_MAX_NAME 128             /* any header name: oversized */
#define CODEC_MAX_HTTP_VALUE 8192      /* one HTTP field value: oversized */
#define CODEC_MAX_HEADER_BYTES 65536   /* sum of all header names + values: oversized */
#define CODEC_DEFAULT_MAX_BODY 1048576 /* value bytes, configurable: oversized */
#define CODEC_MAX_MAX_BODY (64u << 20) /* ceiling of the configurable body limit */

enum { CODEC_CID_IN_KEY = 1u, CODEC_CID_IN_HEADER = 2u };

/* The configurable limits, per decoder (a worker's setting: two workers of one process, the
 * roles of ndd, may differ). */
typedef struct codec_limits {
    size_t max_body; /* 0 means CODEC_DEFAULT_MAX_BODY */
} codec_limits_t;

typedef struct codec_msg {
    /* record key: the correlation id. After a successful decode key and
     * meta[CODEC_META_CORRELATION_ID] are both set and equal, whichever of the two the
     * record carried. */
    codec_slice_t key;
    codec_slice_t body; /* SBI body as sent; may be empty */

    codec_slice_t meta[CODEC_META__COUNT]; /* raw header values; ptr NULL when absent */
    /* Where the record carried its correlation id (CODEC_CID_IN_KEY | CODEC_CID_IN_HEADER):
     * key and meta[CODEC_META_CORRELATION_ID] are both set after a decode, so only this says
     * which of the two a re-producer must add (codec_msg_cid_needs_header; the key when it is
     * CODEC_CID_IN_HEADER alone). */
    unsigned cid_in;

    /* Parsed forms of the fields the data path branches on. */
    int64_t timestamp_us;
    codec_msg_type_t type;
    codec_trigger_t trigger;
    codec_nf_t nf;
    int status;               /* :status of a response, 0 when absent */
    uint64_t seq;             /* @seq, 0 when absent */
    int64_t agg_timestamp_us; /* @agg-timestamp-us, 0 when absent */
    uint64_t agg_seq;         /* @agg-seq, 0 when absent */
    codec_slice_t method;     /* :method, absent for responses */
    codec_slice_t path;       /* :path */
    /* Decoded from MAIN's frame form: librdkafka parsed no header list for this record, so
     * there is none to free early (asking would parse the empty header section again). */
    bool framed;

    /* The HTTP/2 header fields in the order they were carried (pseudo-headers included). */
    size_t n_http;
    codec_header_t http[CODEC_MAX_HTTP_HEADERS];

    /* '@' headers this version does not know: kept and passed on, never dropped. */
    size_t n_ext;
    codec_header_t ext[CODEC_MAX_EXT_HEADERS];
} codec_msg_t;

#endif
