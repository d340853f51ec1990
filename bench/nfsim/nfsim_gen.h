/* The traffic model of ndd-nf-sim: transactions of realistic SBI requests and responses,
 * turned into NF message copies (docs/message-format.md) one copy at a time.
 *
 * A generator owns every buffer it needs (sized once from the largest copy it may make), so
 * producing a copy allocates nothing but the rd_kafka_headers_t handed to librdkafka. */
#ifndef NDD_NFSIM_GEN_H
#define NDD_NFSIM_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <librdkafka/rdkafka.h>

typedef enum nfsim_nf {
    NFSIM_SCP = 0,
    NFSIM_NRF,
    NFSIM_SEPP,
    NFSIM_BSF,
    NFSIM_PCF,
    NFSIM_NF__COUNT
} nfsim_nf_t;

/* Size of a copy = key + value + every header name and value, in bytes. */
typedef enum nfsim_size_mode {
    NFSIM_SIZE_NATURAL = 0, /* whatever the SBI message is (no padding) */
    NFSIM_SIZE_FIXED,       /* padded to exactly `size` (when the natural copy is smaller) */
    NFSIM_SIZE_MIX,         /* per transaction: 1,941 / 3,400 / 3,769 bytes ±5 % */
    NFSIM_SIZE_RANGE,       /* per transaction: uniform in size..size_max */
} nfsim_size_mode_t;

#define NFSIM_MAX_SIZE (1024 * 1024) /* the codec's default body limit */
#define NFSIM_MAX_COPIES 4

typedef struct nfsim_config {
    unsigned weights[NFSIM_NF__COUNT]; /* NF mix; at least one > 0 */
    int copies;                        /* 2 or 4 per transaction */
    nfsim_size_mode_t size_mode;
    size_t size;          /* NFSIM_SIZE_FIXED; the least of NFSIM_SIZE_RANGE */
    size_t size_max;      /* NFSIM_SIZE_RANGE: the largest */
    double error_rate;    /* share of transactions answered with an error status */
    uint64_t subscribers; /* SUPI population */
    uint64_t seed;
    bool pad_x;         /* pad with a run of 'x' (compresses ~250:1) instead of SBI-like text */
    const char *run_id; /* part of every correlation id; NULL: random */
} nfsim_config_t;

typedef struct nfsim_op nfsim_op_t;

/* One copy ready to produce. key/value/headers stay valid until the next nfsim_next call. */
typedef struct nfsim_copy {
    nfsim_nf_t nf;
    const char *topic_suffix; /* "SCP", "NRF", ... */
    const char *key;
    size_t key_len;
    const char *value;
    size_t value_len;
    size_t size; /* key + value + headers, as defined above */
    uint64_t seq;
    int index;  /* 0 .. copies-1 within the transaction */
    bool first; /* first copy of a new transaction */
} nfsim_copy_t;

typedef struct nfsim_gen nfsim_gen_t;

/* Parses "SCP=1,NRF=2" into weights (names case-insensitive). -1 with err on a bad list. */
int nfsim_parse_mix(const char *s, unsigned weights[NFSIM_NF__COUNT], char *err, size_t errlen);
const char *nfsim_nf_name(nfsim_nf_t nf);

nfsim_gen_t *nfsim_gen_new(const nfsim_config_t *cfg, uint64_t seq_start, char *err, size_t errlen);
void nfsim_gen_free(nfsim_gen_t *g);
/* Fills *out with the next copy (a new transaction begins when the last one is complete) and
 * returns its headers, which the caller hands to librdkafka or destroys. NULL only on OOM. */
rd_kafka_headers_t *nfsim_next(nfsim_gen_t *g, nfsim_copy_t *out);
/* Transactions begun so far. */
uint64_t nfsim_transactions(const nfsim_gen_t *g);

#endif
