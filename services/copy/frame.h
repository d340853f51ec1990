/* The NDD binary frame (docs/encodings.md): what the TCP and TLS transports carry.
 *
 * All integers big-endian. Header, 20 bytes:
 *   u32 magic 0x4E444431 ("NDD1") | u8 version (1) | u8 type (1 DATA, 2 ACK, 3 NACK)
 *   | u16 flags (bit0: ack requested) | u32 payload length | u64 frame id
 * DATA payload: u32 record count, then per record: u32 record length | record, where
 *   record := u16 header_count | header_count x (u16 name_len | name | u32 value_len | value)
 *             | u32 key_len | key | u32 body_len | body
 * ACK payload: empty; acknowledges every frame id <= the header's id on this connection.
 * NACK payload: u16 status | u16 reason length | reason; rejects exactly that frame id.
 *
 * The parser works on a byte stream the caller accumulates: it returns FRAME_NEED_MORE until
 * a whole frame is there, validates the whole frame once, and hands back slices into the
 * caller's bytes (nothing is allocated or copied). The builder appends to a bounded buf_t. */
#ifndef NDD_FRAME_H
#define NDD_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "codec-t.h"

#define FRAME_MAGIC 0x4E444431u
#define FRAME_VERSION 1
#define FRAME_HEADER_LEN 20
#define FRAME_DEFAULT_MAX_PAYLOAD (16u * 1024u * 1024u)
#define FRAME_FLAG_ACK_REQUESTED 0x0001u
/* Offsets inside the header, for patching a built frame in place (frame_set_id). */
#define FRAME_OFF_FLAGS 6
#define FRAME_OFF_LENGTH 8
#define FRAME_OFF_ID 12

typedef enum frame_type {
    FRAME_TYPE_DATA = 1,
    FRAME_TYPE_ACK = 2,
    FRAME_TYPE_NACK = 3,
} frame_type_t;

typedef enum frame_status {
    FRAME_OK = 0,        /* one frame parsed; *consumed bytes belong to it */
    FRAME_NEED_MORE = 1, /* not a whole frame yet; nothing consumed */
    FRAME_ERROR = -1,    /* the stream is broken (reason in the parser); close the connection */
} frame_status_t;

typedef struct frame_header {
    uint8_t version;
    uint8_t type;
    uint16_t flags;
    uint32_t payload_len;
    uint64_t id;
} frame_header_t;

/* One parsed frame: slices into the input, valid as long as those bytes are. */
typedef struct frame {
    frame_header_t hdr;
    const uint8_t *payload;
    /* DATA */
    uint32_t record_count;
    /* NACK */
    uint16_t nack_status;
    codec_slice_t nack_reason;
} frame_t;

typedef struct frame_parser {
    uint32_t max_payload; /* larger payload lengths are an error, not a wait */
    bool check_ids;       /* DATA ids must strictly increase (receiver side) */
    bool have_last_id;
    uint64_t last_id;
    uint64_t frames; /* frames parsed so far */
    char error[160]; /* why FRAME_ERROR was returned */
} frame_parser_t;

/* One record of a DATA frame (slices into the frame). */
typedef struct frame_record {
    uint16_t header_count;
    const uint8_t *headers; /* raw header block: walk it with frame_header_next */
    size_t headers_len;
    codec_slice_t key;
    codec_slice_t body;
} frame_record_t;

/* Cursor over the records of a DATA frame. */
typedef struct frame_record_iter {
    const uint8_t *p;
    const uint8_t *end;
    uint32_t left;
} frame_record_iter_t;

/* Cursor over the headers of a record. */
typedef struct frame_header_iter {
    const uint8_t *p;
    const uint8_t *end;
    uint16_t left;
} frame_header_iter_t;

/* Incremental DATA frame builder writing into a caller's buf_t. */
typedef struct frame_builder {
    buf_t *out;
    size_t start;      /* offset of this frame's header in out */
    size_t rec_start;  /* offset of the open record's length field, or SIZE_MAX */
    size_t hcount_off; /* offset of the open record's header count */
    uint16_t hcount;   /* headers added to the open record */
    uint32_t count;    /* records completed */
    uint32_t max_payload;
} frame_builder_t;

/* ---- parsing ---- */

/* max_payload 0 means FRAME_DEFAULT_MAX_PAYLOAD. */
void frame_parser_init(frame_parser_t *p, uint32_t max_payload, bool check_ids);
/* Parses the frame at the start of data[0..len). FRAME_OK: *out filled, *consumed = its size.
 * FRAME_NEED_MORE: wait for more bytes (never returned past a complete header with a payload
 * length above max_payload: that is an error). FRAME_ERROR: p->error says why (bad magic,
 * version, type, length, malformed record, id not increasing). */
frame_status_t frame_parse(frame_parser_t *p, const uint8_t *data, size_t len, frame_t *out,
                           size_t *consumed);

void frame_records(const frame_t *f, frame_record_iter_t *it);
/* Next record; false at the end. Never fails on a frame frame_parse accepted. */
bool frame_record_next(frame_record_iter_t *it, frame_record_t *rec);
void frame_headers(const frame_record_t *rec, frame_header_iter_t *it);
bool frame_header_next(frame_header_iter_t *it, codec_slice_t *name, codec_slice_t *value);
/* First header of rec named exactly `name`; false when absent. */
bool frame_record_header(const frame_record_t *rec, const char *name, codec_slice_t *value);

/* ---- building ---- */

/* ACK / NACK frames (appended to out). Return 0, or -1 when out is full (out unchanged). */
int frame_build_ack(buf_t *out, uint64_t id);
int frame_build_nack(buf_t *out, uint64_t id, uint16_t status, const char *reason,
                     size_t reason_len);

/* DATA: begin, then per record: record_begin, header x N, record_end; then end.
 * Every call returns 0, or -1 when out (or max_payload) is full: a failed record call rolls
 * the open record back, so the frame can still be ended with the records before it.
 * max_payload 0 means FRAME_DEFAULT_MAX_PAYLOAD. id may be 0 and patched later. */
int frame_data_begin(frame_builder_t *b, buf_t *out, uint64_t id, uint16_t flags,
                     uint32_t max_payload);
int frame_data_record_begin(frame_builder_t *b);
int frame_data_record_header(frame_builder_t *b, const void *name, size_t name_len,
                             const void *value, size_t value_len);
int frame_data_record_end(frame_builder_t *b, const void *key, size_t key_len, const void *body,
                          size_t body_len);
/* Rolls back an open record (after a failed header or by choice). */
void frame_data_record_abort(frame_builder_t *b);
/* One record from a decoded copy: headers as in the Kafka record (metadata in the codec's
 * fixed order, HTTP fields in order, extension metadata), key, body. */
int frame_data_add_msg(frame_builder_t *b, const codec_msg_t *m);
/* One whole DATA frame holding just m (id 0, no flags), appended to out: the value of a MAIN
 * record in the frame form (docs/message-format.md). 0, or -1 when out is full (unchanged). */
int frame_build_copy(buf_t *out, const codec_msg_t *m);
/* Patches count and payload length. Returns 0 (an open record is aborted first). */
int frame_data_end(frame_builder_t *b);
/* Removes the whole frame from out. */
void frame_data_abort(frame_builder_t *b);
static inline uint32_t frame_data_count(const frame_builder_t *b)
{
    return b->count;
}

/* Patch a built frame in place (the transport assigns ids per connection at send time). */
void frame_set_id(uint8_t *frame, uint64_t id);
void frame_set_flags(uint8_t *frame, uint16_t flags);
/* Read the header fields of a complete frame header (no validation). */
void frame_header_read(const uint8_t *frame, frame_header_t *h);

const char *frame_type_name(uint8_t type);

#endif
