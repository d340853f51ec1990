/* The synthetic packet feed's machinery (docs/synthetic.md): the per-feed context (settings,
 * the L3/L4 mapping table, the table of synthetic TCP connections with their sequence
 * numbers, HTTP/2 stream ids and HPACK deflaters) and the packet builder that turns one copy
 * into the pcap records of its HTTP/2 message. encoding_synthetic.c puts these records into
 * NDD frames; the transports write them as a pcap stream or a pcapng file (pcap.h).
 *
 *   synthetic_conn.c   context, settings and mapping table parsing, connection table (LRU)
 *   synthetic_pkt.c    Ethernet/IP/TCP packets, TCP segmentation, HTTP/2 framing, HPACK
 *
 * A context belongs to one thread (a feed's thread): nothing here locks. */
#ifndef NDD_SYNTHETIC_H
#define NDD_SYNTHETIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "buf.h"
#include "codec-t.h"

#define SYNTH_DEFAULT_MSS4 1460
#define SYNTH_DEFAULT_MSS6 1440
#define SYNTH_DEFAULT_MAX_CONNS 4096
#define SYNTH_MAX_MAX_CONNS 1000000
#define SYNTH_MAX_RULES 1000000
#define SYNTH_H2_MAX_FRAME 16384  /* SETTINGS_MAX_FRAME_SIZE both peers announce (the default) */
#define SYNTH_STREAMS_PER_CONN 64 /* requests awaiting their response, per connection */
#define SYNTH_PCAP_REC_HDR 16     /* ts_sec, ts_usec, incl_len, orig_len (little-endian) */

/* An endpoint of a synthetic connection. */
typedef struct synth_addr {
    uint8_t family; /* 4 or 6; 0: none */
    uint8_t ip[16]; /* IPv4 in the first 4 bytes */
    uint16_t port;
} synth_addr_t;

/* What a mapping rule matches (the copy field it reads). */
typedef enum synth_match {
    SYNTH_MATCH_FQDN = 0, /* @consumer-fqdn / @producer-fqdn, or a host name in @src/@dst-addr */
    SYNTH_MATCH_INSTANCE, /* @nf-instance, @consumer-id, @producer-id (NF instance ids) */
    SYNTH_MATCH__COUNT
} synth_match_t;

typedef struct synth_settings {
    unsigned mss4, mss6;
    unsigned max_connections;
    /* HPACK dynamic table use. Off (the default), every header field is a literal "never
     * indexed" (or a static-table hit), so any header block decodes on its own: a probe that
     * joins a pcap stream late, or one rotated file read alone, still sees every header. On,
     * the deflaters index as an HTTP/2 stack would (smaller, but a capture is then readable
     * only from the connection's start). */
    bool hpack_indexing;
} synth_settings_t;

typedef struct synth_ctx synth_ctx_t;

/* Counters of one context (the encoding's metrics read them). */
typedef struct synth_stats {
    uint64_t packets, connections_opened, connections_evicted, mapped, unmapped;
} synth_stats_t;

/* ---- context ---- */

/* Parses the feed's "synthetic" member (NULL: defaults) into a new context. NULL with the
 * reason (the member's field path) in err on a bad value or rule. */
synth_ctx_t *synth_ctx_new(const json_t *options, char *err, size_t errlen);
void synth_ctx_free(synth_ctx_t *c);
const synth_settings_t *synth_ctx_settings(const synth_ctx_t *c);
const synth_stats_t *synth_ctx_stats(const synth_ctx_t *c);
size_t synth_ctx_open_connections(const synth_ctx_t *c);

/* "10.0.0.1:80", "[2001:db8::1]:443" -> a; false when not an IP literal with a port. */
bool synth_addr_parse(const char *s, size_t len, synth_addr_t *a);
/* The mapping table's address for (kind, value); false when no rule matches. */
bool synth_map_lookup(const synth_ctx_t *c, synth_match_t kind, const char *v, size_t len,
                      synth_addr_t *a);

/* The calling thread's context (encoding_synthetic.c): the feed's, or one with defaults made
 * on first use. NULL only when out of memory. */
synth_ctx_t *encoding_synthetic_context(void);

/* ---- packets ---- */

/* Bytes the packets of m may take at most in the output (with a connection's handshake,
 * an eviction's FIN exchange and the HTTP/2 preface): reserve this before synth_encode. */
size_t synth_bound(const synth_ctx_t *c, const codec_msg_t *m);

/* Resolves the client and server of m's connection. false with a reason (static text) when
 * an address is missing and no mapping rule gives it. */
bool synth_resolve(const synth_ctx_t *c, const codec_msg_t *m, synth_addr_t *client,
                   synth_addr_t *server, const char **reason);

/* Appends the pcap records of m's packets (and of its connection's set-up, or of an evicted
 * connection's FIN exchange) to out, which must have synth_bound() bytes free. Returns the
 * number of records, or -1 with the reason when m cannot be placed (no address). The
 * connection state advances only on success. */
long synth_encode(synth_ctx_t *c, const codec_msg_t *m, buf_t *out, const char **reason);

/* The pcap file header (24 bytes, little-endian, microsecond timestamps, LINKTYPE_ETHERNET). */
void synth_pcap_file_header(uint8_t out[24]);

#endif
