#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int buf_init(buf_t *b, size_t initial, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
    if (initial > max)
        return -1;
    if (initial) {
        b->data = malloc(initial);
        if (!b->data)
            return -1;
        b->cap = initial;
    }
    return 0;
}

void buf_free(buf_t *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

int buf_reserve(buf_t *b, size_t extra)
{
    if (extra > b->max || b->len > b->max - extra)
        return -1;
    size_t need = b->len + extra;
    if (need <= b->cap)
        return 0;
    /* Doubling keeps appends amortised O(1); the ceiling keeps the footprint bounded. */
    size_t ncap = b->cap ? b->cap : 256;
    while (ncap < need)
        ncap = ncap > b->max / 2 ? b->max : ncap * 2;
    if (ncap < need)
        ncap = need;
    uint8_t *nd = realloc(b->data, ncap);
    if (!nd)
        return -1;
    b->data = nd;
    b->cap = ncap;
    return 0;
}

int buf_append(buf_t *b, const void *p, size_t n)
{
    if (n == 0)
        return 0;
    if (buf_reserve(b, n) != 0)
        return -1;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

int buf_append_str(buf_t *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

int buf_append_u8(buf_t *b, uint8_t v)
{
    return buf_append(b, &v, 1);
}

int buf_append_be16(buf_t *b, uint16_t v)
{
    uint8_t o[2] = {(uint8_t)(v >> 8), (uint8_t)v};
    return buf_append(b, o, 2);
}

int buf_append_be32(buf_t *b, uint32_t v)
{
    uint8_t o[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    return buf_append(b, o, 4);
}

int buf_append_be64(buf_t *b, uint64_t v)
{
    if (buf_append_be32(b, (uint32_t)(v >> 32)) != 0)
        return -1;
    return buf_append_be32(b, (uint32_t)v);
}

int buf_printf(buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    if ((size_t)n < sizeof small)
        return buf_append(b, small, (size_t)n);
    if (buf_reserve(b, (size_t)n + 1) != 0)
        return -1;
    va_start(ap, fmt);
    vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

size_t buf_format_u64(char *dst, uint64_t v)
{
    /* Two digits per division, written backwards into a scratch then moved to the front. */
    static const char pairs[201] = "00010203040506070809101112131415161718192021222324"
                                   "25262728293031323334353637383940414243444546474849"
                                   "50515253545556575859606162636465666768697071727374"
                                   "75767778798081828384858687888990919293949596979899";
    char tmp[BUF_DEC_MAX];
    char *e = tmp + sizeof tmp, *p = e;
    while (v >= 100) {
        unsigned d = (unsigned)(v % 100) * 2;
        v /= 100;
        *--p = pairs[d + 1];
        *--p = pairs[d];
    }
    if (v >= 10) {
        *--p = pairs[v * 2 + 1];
        *--p = pairs[v * 2];
    } else {
        *--p = (char)('0' + v);
    }
    size_t n = (size_t)(e - p);
    memcpy(dst, p, n);
    dst[n] = '\0';
    return n;
}

size_t buf_format_i64(char *dst, int64_t v)
{
    if (v >= 0)
        return buf_format_u64(dst, (uint64_t)v);
    dst[0] = '-';
    /* The magnitude in unsigned arithmetic: -INT64_MIN does not fit an int64_t. */
    return 1 + buf_format_u64(dst + 1, 0 - (uint64_t)v);
}

/* The encoder (RFC 4648, padded), twelve bits at a time: a table of every pair of output
 * characters (4,096 x 2 bytes, built by the compiler) turns each 12 input bits into two
 * output bytes with one load, and six input bytes go out as one eight-byte store. That is
 * about 4 instructions per input byte against OpenSSL's EVP_EncodeBlock at 10, which made it
 * the largest cost of a JSON envelope with a non-JSON body; tests/unit/test_buf.c checks
 * the bytes against EVP_EncodeBlock on every length up to 256. */
#define B64C(x)                                                                                    \
    (char)((x) < 26    ? 'A' + (x)                                                                 \
           : (x) < 52  ? 'a' + (x)-26                                                              \
           : (x) < 62  ? '0' + (x)-52                                                              \
           : (x) == 62 ? '+'                                                                       \
                       : '/')
#define B64P(i)                                                                                    \
    {                                                                                              \
        B64C(((i) >> 6) & 63), B64C((i)&63)                                                        \
    }
#define B64P4(i) B64P(i), B64P((i) + 1), B64P((i) + 2), B64P((i) + 3)
#define B64P16(i) B64P4(i), B64P4((i) + 4), B64P4((i) + 8), B64P4((i) + 12)
#define B64P64(i) B64P16(i), B64P16((i) + 16), B64P16((i) + 32), B64P16((i) + 48)
#define B64P256(i) B64P64(i), B64P64((i) + 64), B64P64((i) + 128), B64P64((i) + 192)
#define B64P1024(i) B64P256(i), B64P256((i) + 256), B64P256((i) + 512), B64P256((i) + 768)
static const char b64_pairs[4096][2] = {B64P1024(0), B64P1024(1024), B64P1024(2048),
                                        B64P1024(3072)};
static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int buf_append_base64(buf_t *b, const void *p, size_t n)
{
    size_t out = 4 * ((n + 2) / 3);
    if (out == 0)
        return 0; /* nothing to write; data may still be NULL */
    if (buf_reserve(b, out) != 0)
        return -1;
    const unsigned char *s = p;
    unsigned char *d = b->data + b->len;
    size_t i = 0;
    /* Six bytes per step, read as eight (the two extra stay inside the input). */
    for (; n - i >= 8; i += 6, d += 8) {
        uint64_t x = buf_rd_be64(s + i);
        memcpy(d, b64_pairs[(x >> 52) & 0xFFF], 2);
        memcpy(d + 2, b64_pairs[(x >> 40) & 0xFFF], 2);
        memcpy(d + 4, b64_pairs[(x >> 28) & 0xFFF], 2);
        memcpy(d + 6, b64_pairs[(x >> 16) & 0xFFF], 2);
    }
    for (; n - i >= 3; i += 3, d += 4) {
        uint32_t x = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        memcpy(d, b64_pairs[x >> 12], 2);
        memcpy(d + 2, b64_pairs[x & 0xFFF], 2);
    }
    if (n - i == 1) {
        d[0] = (unsigned char)b64_alphabet[s[i] >> 2];
        d[1] = (unsigned char)b64_alphabet[(s[i] & 3) << 4];
        d[2] = d[3] = '=';
    } else if (n - i == 2) {
        d[0] = (unsigned char)b64_alphabet[s[i] >> 2];
        d[1] = (unsigned char)b64_alphabet[(s[i] & 3) << 4 | s[i + 1] >> 4];
        d[2] = (unsigned char)b64_alphabet[(s[i + 1] & 15) << 2];
        d[3] = '=';
    }
    b->len += out;
    return 0;
}

/* Length of a valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
static size_t utf8_seq(const uint8_t *s, size_t n)
{
    uint8_t c = s[0];
    size_t len;
    uint32_t min;
    if (c < 0x80)
        return 1;
    if ((c & 0xE0) == 0xC0) {
        len = 2;
        min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3;
        min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    uint32_t cp = c & (0x7F >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

/* buf_append with the common case (room already allocated) inlined: same result, same
 * failure (only when the bytes would pass max). */
static inline int put_bytes(buf_t *b, const void *p, size_t n)
{
    /* cap may exceed max (the first allocation is 256 bytes), so both bound the fast path. */
    if (b->cap - b->len >= n && b->len <= b->max && b->max - b->len >= n) {
        memcpy(b->data + b->len, p, n);
        b->len += n;
        return 0;
    }
    return buf_append(b, p, n);
}

int buf_append_json_escaped(buf_t *b, const void *p, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const uint8_t *s = p;
    size_t i = 0;
    while (i < n) {
        /* Copy the longest run that needs no escaping in one go. */
        size_t run = buf_json_plain_run(s + i, n - i);
        if (run > 0 && put_bytes(b, s + i, run) != 0)
            return -1;
        i += run;
        if (i >= n)
            break;
        uint8_t c = s[i];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            if (put_bytes(b, e, 2) != 0)
                return -1;
            i++;
        } else if (c < 0x20) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            size_t el = 6;
            if (c == '\n' || c == '\r' || c == '\t') {
                e[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
                el = 2;
            }
            if (put_bytes(b, e, el) != 0)
                return -1;
            i++;
        } else {
            size_t l = utf8_seq(s + i, n - i);
            if (l == 0) {
                if (put_bytes(b, "\xEF\xBF\xBD", 3) != 0)
                    return -1;
                i++;
            } else {
                if (put_bytes(b, s + i, l) != 0)
                    return -1;
                i += l;
            }
        }
    }
    return 0;
}

void *buf_array_room(void *a, size_t n, size_t *cap, size_t size, size_t first, size_t max)
{
    if (n < *cap)
        return a;
    size_t c = *cap ? *cap * 2 : first;
    if (max && c > max)
        c = max;
    if (c <= n || c > SIZE_MAX / size)
        return NULL;
    void *grown = realloc(a, c * size);
    if (grown)
        *cap = c;
    return grown;
}
