/* The checks RFC 9113 (§8.1–8.3) asks of an HTTP/2 server for a request's fields and body,
 * done by h2server itself instead of nghttp2's "HTTP messaging": nghttp2 checks every field
 * in passes of its own (name, value, then per pseudo-header again) and that was an eighth of
 * the instructions of an admin read. Here each field is looked at once, in the pass that
 * classifies it. A request that fails a check is malformed: the server resets its stream
 * with PROTOCOL_ERROR and never hands it on (RFC 9113 §8.1.1).
 *
 * Each function returns NULL when what it saw is acceptable, or the reason (a constant
 * string, for the server's debug log). */
#ifndef NDD_H2CHECK_H
#define NDD_H2CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One request's state; zeroed when its stream begins. */
typedef struct h2check {
    uint8_t pseudo;    /* H2CHECK_* bits of the pseudo-header fields seen */
    bool regular;      /* a regular field came: a pseudo-header after it is malformed */
    bool has_length;   /* content-length was given */
    uint64_t length;   /* its value */
    uint64_t received; /* DATA payload bytes so far */
} h2check_t;

#define H2CHECK_METHOD 0x01
#define H2CHECK_SCHEME 0x02
#define H2CHECK_AUTHORITY 0x04
#define H2CHECK_PATH 0x08
#define H2CHECK_CONNECT 0x10 /* :method is CONNECT (no :scheme or :path then) */

/* One field of the request's header block (trailer false) or of its trailers (true).
 * name_known: the name is one of HPACK's static table (RFC 7541, appendix A), all valid
 * lower-case names, so its characters need no look (a client's usual fields are). */
const char *h2check_field(h2check_t *c, const uint8_t *name, size_t name_len, bool name_known,
                          const uint8_t *value, size_t value_len, bool trailer);

/* The request's header block is complete; end_stream: the HEADERS frame ended the stream. */
const char *h2check_headers_end(const h2check_t *c, bool end_stream);

/* The trailers' block is complete: it must end the stream, and the body must then have the
 * announced length. */
const char *h2check_trailers_end(h2check_t *c, bool end_stream);

/* len more bytes of body; end_stream: the DATA frame ended the stream. */
const char *h2check_data(h2check_t *c, size_t len, bool end_stream);

#endif
