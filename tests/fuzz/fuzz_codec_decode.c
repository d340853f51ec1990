/* libFuzzer target on the message-copy decoder (services/copy/codec.c).
 *
 * Input layout (all lengths big-endian u16; 0xFFFF means "null", no bytes follow):
 *
 *   input  := field(key) field(value) { field(header name) field(header value) }*
 *   field  := u16 len | len bytes
 *
 * A truncated field ends the input (a header name without its value is dropped). Header
 * names are handed to librdkafka with their length, so a NUL inside a name is possible and
 * must be handled. Seeds: tests/fuzz/corpus/fuzz_codec_decode/, generated from every test
 * vector by tests/fuzz/make_codec_corpus.py.
 *
 * Properties checked: decode never crashes or reads out of bounds; an error names a reason
 * and a NUL-terminated field; an accepted copy encodes, and decoding the encoding gives an
 * equal copy (the round trip the aggregation tier relies on when it re-produces copies). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "codec_equal.h"

#define FUZZ_NULL 0xFFFFu

typedef struct fuzz_cursor {
    const uint8_t *p;
    size_t left;
} fuzz_cursor_t;

/* 1: field read (ptr NULL for a null field), 0: input exhausted. */
static int fuzz_field(fuzz_cursor_t *c, const uint8_t **ptr, size_t *len)
{
    if (c->left < 2)
        return 0;
    unsigned n = ((unsigned)c->p[0] << 8) | c->p[1];
    c->p += 2;
    c->left -= 2;
    if (n == FUZZ_NULL) {
        *ptr = NULL;
        *len = 0;
        return 1;
    }
    if (n > c->left)
        return 0;
    *ptr = c->p;
    *len = n;
    c->p += n;
    c->left -= n;
    return 1;
}

static codec_msg_t fuzz_m1, fuzz_m2;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_cursor_t c = {data, size};
    const uint8_t *key = NULL, *value = NULL;
    size_t key_len = 0, value_len = 0;
    if (!fuzz_field(&c, &key, &key_len) || !fuzz_field(&c, &value, &value_len))
        return 0;

    rd_kafka_headers_t *hdrs = rd_kafka_headers_new(8);
    const uint8_t *name, *val;
    size_t nlen, vlen;
    while (fuzz_field(&c, &name, &nlen) && fuzz_field(&c, &val, &vlen)) {
        if (!name)
            continue; /* librdkafka needs a name */
        rd_kafka_header_add(hdrs, (const char *)name, (ssize_t)nlen, val, (ssize_t)vlen);
    }

    codec_error_t err;
    codec_reason_t r = codec_decode_parts(&fuzz_m1, key, key_len, value, value_len, hdrs, &err);
    if (r != CODEC_OK) {
        if (err.reason != r || strnlen(err.field, sizeof err.field) == sizeof err.field ||
            strnlen(err.detail, sizeof err.detail) == sizeof err.detail ||
            strcmp(codec_reason_name(r), "unknown") == 0)
            abort();
        rd_kafka_headers_destroy(hdrs);
        return 0;
    }

    rd_kafka_headers_t *out = rd_kafka_headers_new(8);
    if (codec_encode_headers(&fuzz_m1, out) != 0)
        abort();
    r = codec_decode_parts(&fuzz_m2, fuzz_m1.key.ptr, fuzz_m1.key.len, fuzz_m1.body.ptr,
                           fuzz_m1.body.len, out, &err);
    if (r != CODEC_OK) {
        fprintf(stderr, "re-decode failed: %s %s: %s\n", codec_reason_name(r), err.field,
                err.detail);
        abort();
    }
    if (!codec_equal_msg(&fuzz_m1, &fuzz_m2)) {
        fprintf(stderr, "decode -> encode -> decode differs\n");
        abort();
    }
    rd_kafka_headers_destroy(out);
    rd_kafka_headers_destroy(hdrs);
    return 0;
}
