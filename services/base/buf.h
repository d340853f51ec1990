/* A byte buffer with a hard ceiling: it grows on demand up to `max` and then refuses,
 * so every user of it has a bounded footprint and a defined "full" behaviour. */
#ifndef NDD_BUF_H
#define NDD_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

typedef struct buf {
    uint8_t *data;
    size_t len; /* bytes in use */
    size_t cap; /* bytes allocated */
    size_t max; /* ceiling for cap; a growth past it fails with -1 */
} buf_t;

/* initial may be 0 (allocate on first use). Returns 0, or -1 when initial > max or OOM. */
int buf_init(buf_t *b, size_t initial, size_t max);
void buf_free(buf_t *b);
static inline void buf_reset(buf_t *b)
{
    b->len = 0;
}
/* Makes room for `extra` more bytes; -1 when that would pass max (buffer unchanged). */
int buf_reserve(buf_t *b, size_t extra);
int buf_append(buf_t *b, const void *p, size_t n);
int buf_append_str(buf_t *b, const char *s);
int buf_append_u8(buf_t *b, uint8_t v);
int buf_append_be16(buf_t *b, uint16_t v);
int buf_append_be32(buf_t *b, uint32_t v);
int buf_append_be64(buf_t *b, uint64_t v);
int buf_printf(buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* v in decimal into dst (room for BUF_DEC_MAX bytes), NUL-terminated; returns the length. The
 * bytes printf's "%" PRIu64 / PRId64 would write, without its format parsing: the aggregation
 * writes three such numbers into every record's headers. */
#define BUF_DEC_MAX 21
size_t buf_format_u64(char *dst, uint64_t v);
size_t buf_format_i64(char *dst, int64_t v);
/* Standard base64 (RFC 4648, with padding). */
int buf_append_base64(buf_t *b, const void *p, size_t n);
/* The bytes as the inside of a JSON string (quotes not added): escapes ", \, control
 * characters; invalid UTF-8 bytes become U+FFFD so the output is always valid JSON. */
int buf_append_json_escaped(buf_t *b, const void *p, size_t n);

/* Room for one more item in the array a of n items (n <= *cap, each size bytes): a when
 * n < *cap, else a grown to twice *cap (first when empty, never beyond max; max 0: no
 * ceiling) with *cap updated. NULL when it cannot grow (max reached, out of memory, a size
 * past SIZE_MAX): a and *cap are then unchanged and a is still the caller's. */
void *buf_array_room(void *a, size_t n, size_t *cap, size_t size, size_t first, size_t max);

/* FNV-1a, 32 bits: a small stable hash of names (label sets, a feed's source topic in its
 * group member id), the same value in every process and release; not for keys an adversary
 * picks. Start from BUF_FNV1A_INIT; buf_fnv1a_byte adds one byte (a separator). */
#define BUF_FNV1A_INIT 2166136261u
static inline uint32_t buf_fnv1a_byte(uint32_t h, uint8_t c)
{
    return (h ^ c) * 16777619u;
}
static inline uint32_t buf_fnv1a_str(uint32_t h, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        h = buf_fnv1a_byte(h, *p);
    return h;
}

/* Big-endian reads for frame parsers; the caller checks lengths first. */
static inline uint16_t buf_rd_be16(const uint8_t *p)
{
    return (uint16_t)((p[0] << 8) | p[1]);
}
static inline uint32_t buf_rd_be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint64_t buf_rd_be64(const uint8_t *p)
{
    return ((uint64_t)buf_rd_be32(p) << 32) | buf_rd_be32(p + 4);
}

/* Length of the leading run of bytes a JSON string can hold as they are (not '"', '\\', a
 * control character or non-ASCII): the scanner shared by the escaper, the envelope's body
 * validator and the xDR encoder, the top of an h2c feed's profile. Sixteen bytes at a time with
 * SSE2 where the target has it (every x86-64): one signed compare flags both the control bytes
 * and the non-ASCII ones (>= 0x80 is negative), so a block costs three compares and a mask.
 * Then eight at a time (SWAR): each term flags the bytes of one class in their high bit,
 * exactly for the lowest flagged byte (a borrow only spoils bytes above a true hit), so the
 * lowest flag is where the run stops. */
static inline size_t buf_json_plain_run(const uint8_t *s, size_t n)
{
    size_t i = 0;
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'),
                  space = _mm_set1_epi8(0x20);
    for (; i + 16 <= n; i += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        __m128i bad =
            _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash)),
                         _mm_cmplt_epi8(x, space));
        unsigned mask = (unsigned)_mm_movemask_epi8(bad);
        if (mask)
            return i + (size_t)__builtin_ctz(mask);
    }
#endif
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    for (; i + 8 <= n; i += 8) {
        uint64_t x;
        memcpy(&x, s + i, 8);
        uint64_t q = x ^ (ones * '"'), bs = x ^ (ones * '\\');
        uint64_t m =
            (((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((bs - ones) & ~bs) | x) & highs;
        if (m)
            return i + (size_t)(__builtin_ctzll(m) >> 3);
    }
#endif
    while (i < n && s[i] >= 0x20 && s[i] < 0x80 && s[i] != '"' && s[i] != '\\')
        i++;
    return i;
}

#endif
