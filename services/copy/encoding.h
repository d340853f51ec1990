/* Egress encodings: one interface, one file per encoding, one table (encoding.c) that
 * feed_config.c looks names up in (docs/encodings.md).
 *
 *   "json"   the JSON envelope; a batch of one is the object itself, a batch of several a
 *            JSON array of objects (application/json either way)
 *   "frame"  one binary DATA frame (services/copy/frame.h) holding the batch's records
 *   "passthrough"  one record's value as it is (VES / HV-VES events from ndd-ingress)
 *   "synthetic"    the packets of each copy (docs/synthetic.md)
 *   "xdr-jsonl"    one JSON line per xDR record (a feed of the XDR topic)
 *
 * A batch is built straight into the caller's bounded buf_t: begin_batch, add per message,
 * end_batch. Nothing is allocated per message and the body is copied once, into the output.
 * When a message does not fit, add rolls it back and returns ENCODING_FULL: end the batch,
 * send it, and add the message to the next one. A message that does not fit an empty batch
 * returns ENCODING_TOO_BIG (it can never be sent: dead-letter it). */
#ifndef NDD_ENCODING_H
#define NDD_ENCODING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "buf.h"
#include "codec-t.h"
#include "metrics.h"
#include "optdesc.h"

typedef enum encoding_result {
    ENCODING_OK = 0,
    ENCODING_FULL = 1,     /* the batch is full (count or bytes); the message was not added */
    ENCODING_TOO_BIG = -1, /* the message alone exceeds the output limit */
    ENCODING_ERROR = -2,   /* misuse (no open batch) */
    ENCODING_REFUSED = -3, /* this message cannot be encoded (reason in batch.refused): DLQ */
} encoding_result_t;

/* Room for an encoding's own batch state (encoding_t.state_size at most this). */
#define ENCODING_STATE_MAX 64
/* Rows in the encoding table (ENCODING_TABLE refuses more at compile time). */
#define ENCODING_MAX 16

/* One batch being built. Owned by the caller (on the stack or in a feed), no heap. out, start
 * and count are the caller's to read; state belongs to the encoding that began the batch
 * (e.g. the frame builder of "frame") and is opaque to everyone else. */
typedef struct encoding_batch {
    buf_t *out;
    size_t start;        /* offset of the batch in out */
    size_t count;        /* messages added */
    size_t max_count;    /* from begin_batch */
    const char *refused; /* why add returned ENCODING_REFUSED (static text) */
    union {
        max_align_t align;
        unsigned char bytes[ENCODING_STATE_MAX];
    } state;
} encoding_batch_t;

/* What a batch's bytes are, for a transport that writes them its own way instead of as they
 * are (encoding_t.form; a transport asks these, never an encoding's name). */
enum {
    ENCODING_FORM_FRAME = 1u << 0,        /* one DATA frame (frame.h), one record per message */
    ENCODING_FORM_PCAP_RECORDS = 1u << 1, /* each record's body is pcap records (a stream of
                                             them after a pcap file header is a capture) */
    ENCODING_FORM_JSON_LINES = 1u << 2,   /* newline-ended JSON lines (batches concatenate) */
};

/* One row of the encoding table: a new encoding is one file defining one of these and one
 * row in encoding_table.h (docs/contributing.md, "Adding an encoding"). */
typedef struct encoding {
    const char *name;         /* the feed's "encoding" value: "json", "frame" */
    const char *content_type; /* for HTTP: "application/json", "application/vnd.ndd.frame" */
    size_t max_batch;         /* most messages one batch can hold */
    unsigned default_batch;   /* delivery.batch_max when the feed names none (0: 1) */
    size_t state_size;        /* bytes of encoding_batch_t.state it uses (<= ENCODING_STATE_MAX) */
    /* Takes any record, not only message copies: the adapter does not decode it, add sees
     * only the key and body set ("passthrough"). */
    bool raw;
    /* ENCODING_FORM_*: what its batches are (0: one document, sent as it is). */
    unsigned form;
    /* Opens a batch at the end of out holding at most max_count messages (0 or more than
     * max_batch: max_batch). Returns ENCODING_OK or ENCODING_TOO_BIG (out full). */
    encoding_result_t (*begin_batch)(encoding_batch_t *b, buf_t *out, size_t max_count);
    encoding_result_t (*add)(encoding_batch_t *b, const codec_msg_t *m);
    /* Closes the batch; its bytes are out->data[b->start .. out->len). An empty batch is
     * removed from out and returns ENCODING_ERROR (nothing to send). */
    encoding_result_t (*end_batch)(encoding_batch_t *b);
    /* Optional: the encoding's own member of the feed object (e.g. "synthetic"), checked by
     * check_options when a feed is parsed, and given to thread_start on the feed's thread
     * before its first batch (thread_stop when the thread ends). NULL: none. thread_start
     * also gets the feed's name and registry: the encoding's own families (label feed) are
     * resolved there, once per feed; the adapter removes the feed's series when it stops. */
    const char *options;
    const optdesc_t *option_desc; /* the member's options (types, defaults, ranges, help) */
    int (*check_options)(const json_t *options, char *err, size_t errlen);
    int (*thread_start)(const json_t *options, const char *feed, metrics_registry_t *metrics,
                        char *err, size_t errlen);
    void (*thread_stop)(void);
    /* Optional: removes the feed's series of the families thread_start resolved (called by
     * the adapter once the feed's thread has ended). NULL: the encoding has none. */
    void (*metrics_remove)(metrics_registry_t *metrics, const char *feed);
} encoding_t;

#define ENCODING_SYNTHETIC_CONTENT_TYPE "application/vnd.tcpdump.pcap"
#define ENCODING_NDJSON_CONTENT_TYPE "application/x-ndjson"

/* The table (encoding_table.c): the rows of NDD_ENCODINGS (encoding_table.h), NULL ended. A
 * test may link a table of its own in place of encoding_table.c. */
extern const encoding_t *const encoding_builtin[];
#define ENCODING_DECLARE(e) extern const encoding_t e;
#define ENCODING_ROW(e) &e,
/* Defines encoding_builtin from a row list (a macro taking X, calling X(encoding) per row). */
#define ENCODING_TABLE(ROWS)                                                                       \
    ROWS(ENCODING_DECLARE)                                                                         \
    const encoding_t *const encoding_builtin[] = {ROWS(ENCODING_ROW) NULL};                        \
    _Static_assert(sizeof encoding_builtin / sizeof *encoding_builtin <= ENCODING_MAX + 1,         \
                   "more than ENCODING_MAX encodings");

/* By name ("json", "frame", ...); NULL when unknown. */
const encoding_t *encoding_find(const char *name);
size_t encoding_count(void);
const encoding_t *encoding_at(size_t i);
/* "\"json\", \"frame\"": every encoding's name, for error messages. */
void encoding_names(char *out, size_t outlen);
/* Common start of every begin_batch: the caller's fields set, the state zeroed. */
void encoding_batch_open(encoding_batch_t *b, const encoding_t *e, buf_t *out, size_t max_count);
/* The end_batch of an encoding whose batch is its records' bytes as added (no closing bytes):
 * OK, or ERROR with the output rolled back when nothing was added or the batch failed. */
encoding_result_t encoding_batch_close(encoding_batch_t *b);

/* The JSON envelope of one message appended to out (no batch wrapping): used by the json
 * encoding and by tools. Returns 0, or -1 when out is full (out unchanged). */
int encoding_json_envelope(buf_t *out, const codec_msg_t *m);

/* true when p[0..n) is one complete RFC 8259 JSON value (whitespace around allowed),
 * valid UTF-8, nesting at most 64 deep. No allocation. */
int encoding_json_valid(const uint8_t *p, size_t n);

/* Where the JSON string opening at p[i] (a '"') ends: the index just past its closing quote,
 * an escaped quote not ending it; n when it is not closed within p[0..n). The scanners that
 * reshape JSON without parsing it (xdr-jsonl's compaction, the file transport's JSON lines)
 * step over strings with it, so that nothing inside a string counts as structure. Inline:
 * it runs for every string of every record those encode. */
static inline size_t encoding_json_string_end(const uint8_t *p, size_t n, size_t i)
{
    for (i++; i < n; i++) {
        if (p[i] == '\\')
            i++; /* the escaped byte; a \u escape's hex digits are plain bytes */
        else if (p[i] == '"')
            return i + 1;
    }
    return n;
}

#include "encoding_table.h" /* the built-in rows */

#endif
