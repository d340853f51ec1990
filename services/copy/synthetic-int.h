/* Internals of the synthetic packet feed shared by synthetic_conn.c and synthetic_pkt.c (not a
 * public interface: synthetic.h is). */
#ifndef NDD_SYNTHETIC_INT_H
#define NDD_SYNTHETIC_INT_H

#include "synthetic.h"

#include <nghttp2/nghttp2.h>

typedef struct synth_stream {
    uint64_t corr; /* hash of the correlation id; 0: free slot */
    uint32_t sid;
} synth_stream_t;

/* One synthetic TCP connection: dir 0 is client -> server, dir 1 server -> client. */
typedef struct synth_conn {
    synth_addr_t end[2]; /* [0] client, [1] server */
    uint64_t hash;
    uint32_t seq[2];   /* next sequence number each side sends */
    uint16_t ip_id[2]; /* IPv4 identification, per sender */
    uint32_t next_sid; /* next client stream id (odd) */
    nghttp2_hd_deflater *hd[2];
    synth_stream_t streams[SYNTH_STREAMS_PER_CONN];
    unsigned st_next;                   /* ring position of the next request */
    uint32_t lru_prev, lru_next, hnext; /* indexes + 1; 0: none */
    bool used;
} synth_conn_t;

typedef struct synth_rule {
    uint64_t hash;
    char *value;
    size_t len;
    synth_match_t kind;
    synth_addr_t addr;
} synth_rule_t;

struct synth_ctx {
    synth_settings_t set;
    synth_stats_t stats;
    /* the mapping table: open addressing over rules, index + 1, 0 empty */
    synth_rule_t *rules;
    size_t n_rules;
    uint32_t *rule_idx;
    size_t rule_mask;
    /* connections: a fixed array, a chained hash index, an LRU list (head = most recent) */
    synth_conn_t *conns;
    size_t n_conns;
    uint32_t *buckets;
    size_t bucket_mask;
    uint32_t lru_head, lru_tail, free_head;
    /* the HPACK output of one header block (fixed size, reused) */
    uint8_t *hb;
    size_t hb_cap;
};

uint64_t synth_hash(uint64_t h, const void *p, size_t n);
#define SYNTH_HASH_SEED 1469598103934665603ull

/* The connection of (client, server), opened when new (evicting the least recently used one
 * into *evicted, whose FIN exchange the caller writes, then synth_conn_release). *fresh: the
 * caller writes the handshake and preface. NULL when an HPACK context cannot be made. */
synth_conn_t *synth_conn_get(synth_ctx_t *c, const synth_addr_t *client, const synth_addr_t *server,
                             synth_conn_t *evicted, bool *fresh);
/* Frees what synth_conn_get moved into *evicted. */
void synth_conn_release(synth_conn_t *evicted);
/* Drops a connection from the table (stream ids exhausted): the caller wrote its FIN. */
void synth_conn_close(synth_ctx_t *c, synth_conn_t *k);

#endif
