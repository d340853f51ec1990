/* Eight bytes at a time in a plain 64-bit register (SWAR): the byte checks that run over every
 * header value of a copy (codec.c) and of an HTTP/2 request (h2check.c), where a loop of a
 * compare or three per byte was most of their cost. Exact as booleans (Bit Twiddling Hacks,
 * "has a zero byte", "has a byte less than n" for n <= 128); no alignment needed. */
#ifndef NDD_SWAR_H
#define NDD_SWAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SWAR_ONES 0x0101010101010101ull
#define SWAR_HIGHS 0x8080808080808080ull

static inline uint64_t swar_load(const void *p)
{
    uint64_t x;
    memcpy(&x, p, sizeof x);
    return x;
}

static inline bool swar_has_zero(uint64_t x)
{
    return ((x - SWAR_ONES) & ~x & SWAR_HIGHS) != 0;
}

/* A byte below n (n <= 128). */
static inline bool swar_has_less(uint64_t x, uint8_t n)
{
    return ((x - SWAR_ONES * n) & ~x & SWAR_HIGHS) != 0;
}

/* A byte equal to b. */
static inline bool swar_has_byte(uint64_t x, uint8_t b)
{
    return swar_has_zero(x ^ (SWAR_ONES * b));
}

/* No NUL, CR or LF in p[0..n): what RFC 9110/9113 forbid in any field value. */
static inline bool swar_no_nul_cr_lf(const void *p, size_t n)
{
    const uint8_t *s = p;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x = swar_load(s + i);
        if (swar_has_zero(x) || swar_has_byte(x, '\r') || swar_has_byte(x, '\n'))
            return false;
    }
    for (; i < n; i++)
        if (s[i] == '\0' || s[i] == '\r' || s[i] == '\n')
            return false;
    return true;
}

/* Only bytes 0x21-0x7e and 0x80-0xff in p[0..n): no space, no control character (a request
 * target, an authority). */
static inline bool swar_visible(const void *p, size_t n)
{
    const uint8_t *s = p;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x = swar_load(s + i);
        if (swar_has_less(x, 0x21) || swar_has_byte(x, 0x7f))
            return false;
    }
    for (; i < n; i++)
        if (s[i] <= 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

#endif
