/* Test vectors of the NF message copy (tests/vectors/{valid,invalid}/NAME.json, format in
 * docs/message-format.md, "Test vectors"): load one into the parts of a Kafka record.
 *
 * Used by the codec unit tests and by integration tests that produce every vector through a
 * real broker. Everything a loaded vector holds is owned by it: vectors_free releases it. */
#ifndef NDD_TEST_VECTORS_H
#define NDD_TEST_VECTORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

typedef struct vectors_record {
    char name[128];    /* file name, e.g. "scp_rx_request.json" */
    char *description; /* never NULL after a successful load */
    char *key;         /* NULL when the vector's key is null */
    size_t key_len;
    uint8_t *value; /* never NULL after a load (empty body: value_len 0) */
    size_t value_len;
    rd_kafka_headers_t *headers; /* in file order; never NULL after a load */
    bool expect_ok;
    char expect_reason[32]; /* codec_reason_name of the expected failure, "" when ok */
    char expect_field[64];  /* header name (or "key", "value", "headers") at fault */
} vectors_record_t;

/* Loads one vector file. Returns 0, or -1 with a message naming the file and the JSON member
 * at fault in err (v is then empty and needs no vectors_free). */
int vectors_load(const char *path, vectors_record_t *v, char *err, size_t errlen);
void vectors_free(vectors_record_t *v);

/* The *.json files of dir, as full paths sorted by name. Returns 0 (caller frees with
 * vectors_list_free), or -1 when dir cannot be read. */
int vectors_list(const char *dir, char ***paths, size_t *n);
void vectors_list_free(char **paths, size_t n);

/* Standard base64 s[0..n) decoded into out (cap bytes), as a vector's "value_base64" and a
 * test reading the product's base64 output need it; the padding may be absent. Returns the
 * byte count, or -1 for a character outside the alphabet (blanks included), a length no
 * base64 text has, or more than cap bytes. */
long vectors_base64_decode(const char *s, size_t n, uint8_t *out, size_t cap);

/* NDD_SOURCE_DIR "/tests/vectors/" sub, e.g. vectors_dir("valid", buf, sizeof buf). */
const char *vectors_dir(const char *sub, char *dst, size_t dstlen);

#endif
