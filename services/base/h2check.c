/* RFC 9113 request checks for h2server (h2check.h). */
#include "h2check.h"

#include "swar.h"

#include <string.h>
#include <strings.h>

/* Byte classes as 256-bit sets, one bit per byte value (tests/unit/test_h2check.c holds each
 * against its definition, byte by byte):
 *   NAME   a field name's characters in HTTP/2: RFC 9110 tchar without upper case,
 *   TOKEN  tchar (a method),
 *   SCHEME RFC 3986 scheme characters after the first (ALPHA DIGIT + - .). */
static const uint64_t NAME[4] = {0x03ff6cfa00000000ULL, 0x57ffffffc0000000ULL, 0, 0};
static const uint64_t TOKEN[4] = {0x03ff6cfa00000000ULL, 0x57ffffffc7fffffeULL, 0, 0};
static const uint64_t SCHEME[4] = {0x03ff680000000000ULL, 0x07fffffe07fffffeULL, 0, 0};

static bool all_in(const uint64_t set[4], const uint8_t *p, size_t n)
{
    uint64_t ok = 1;
    for (size_t i = 0; i < n; i++)
        ok &= set[p[i] >> 6] >> (p[i] & 63);
    return ok & 1;
}

/* RFC 9113 §8.2.1: no NUL, CR or LF anywhere, no SP or HTAB at either end. The scans go
 * eight bytes a step (swar.h): a value is a hundred bytes or so (a bearer token, a path), and
 * a byte loop of three compares was most of h2check's cost. */
static bool value_ok(const uint8_t *v, size_t n)
{
    if (n && (v[0] == ' ' || v[0] == '\t' || v[n - 1] == ' ' || v[n - 1] == '\t'))
        return false;
    return swar_no_nul_cr_lf(v, n);
}

static bool is(const uint8_t *p, size_t n, const char *lit, size_t litlen)
{
    return n == litlen && memcmp(p, lit, n) == 0;
}

static const char *pseudo(h2check_t *c, const uint8_t *name, size_t nl, const uint8_t *v, size_t vl)
{
    if (c->regular)
        return "a pseudo-header field after a regular field";
    uint8_t bit;
    if (is(name, nl, ":method", 7)) {
        if (!vl || !all_in(TOKEN, v, vl))
            return ":method is not a token";
        bit = H2CHECK_METHOD;
        if (is(v, vl, "CONNECT", 7))
            c->pseudo |= H2CHECK_CONNECT;
    } else if (is(name, nl, ":path", 5)) {
        if (!vl || !swar_visible(v, vl))
            return ":path is empty or has a space or control character";
        bit = H2CHECK_PATH;
    } else if (is(name, nl, ":scheme", 7)) {
        if (!vl || (v[0] | 0x20) < 'a' || (v[0] | 0x20) > 'z' || !all_in(SCHEME, v, vl))
            return ":scheme is not a URI scheme";
        bit = H2CHECK_SCHEME;
    } else if (is(name, nl, ":authority", 10)) {
        if (!swar_visible(v, vl))
            return ":authority has a space or control character";
        bit = H2CHECK_AUTHORITY;
    } else {
        return "an unknown pseudo-header field";
    }
    if (c->pseudo & bit)
        return "a pseudo-header field twice";
    c->pseudo |= bit;
    return NULL;
}

/* content-length: 1*DIGIT; a repeated one must say the same. */
static const char *length(h2check_t *c, const uint8_t *v, size_t vl)
{
    if (!vl || vl > 19)
        return "content-length is not a number";
    uint64_t n = 0;
    for (size_t i = 0; i < vl; i++) {
        if (v[i] < '0' || v[i] > '9')
            return "content-length is not a number";
        n = n * 10 + (uint64_t)(v[i] - '0');
    }
    if (c->has_length && c->length != n)
        return "two different content-length values";
    c->has_length = true;
    c->length = n;
    return NULL;
}

const char *h2check_field(h2check_t *c, const uint8_t *name, size_t nl, bool name_known,
                          const uint8_t *value, size_t vl, bool trailer)
{
    if (!nl)
        return "an empty field name";
    if (name[0] == ':')
        return trailer ? "a pseudo-header field in trailers" : pseudo(c, name, nl, value, vl);
    if (!name_known && !all_in(NAME, name, nl))
        return "a field name with an upper-case or invalid character";
    if (!value_ok(value, vl))
        return "a field value with NUL, CR, LF or surrounding white space";
    c->regular = true;
    /* RFC 9113 §8.2.2: connection-specific fields do not exist in HTTP/2. By length first:
     * most names match none of these lengths. */
    switch (nl) {
    case 2:
        if (name[0] == 't' && name[1] == 'e' &&
            !(vl == 8 && !strncasecmp((const char *)value, "trailers", 8)))
            return "te other than \"trailers\"";
        break;
    case 7:
        if (is(name, nl, "upgrade", 7))
            return "a connection-specific field (upgrade)";
        break;
    case 10:
        if (is(name, nl, "connection", 10) || is(name, nl, "keep-alive", 10))
            return "a connection-specific field (connection, keep-alive)";
        break;
    case 14:
        if (!trailer && is(name, nl, "content-length", 14))
            return length(c, value, vl);
        break;
    case 16:
        if (is(name, nl, "proxy-connection", 16))
            return "a connection-specific field (proxy-connection)";
        break;
    case 17:
        if (is(name, nl, "transfer-encoding", 17))
            return "a connection-specific field (transfer-encoding)";
        break;
    }
    return NULL;
}

const char *h2check_headers_end(const h2check_t *c, bool end_stream)
{
    if (!(c->pseudo & H2CHECK_METHOD))
        return "no :method";
    if (c->pseudo & H2CHECK_CONNECT) {
        /* RFC 9113 §8.5: authority only */
        if (!(c->pseudo & H2CHECK_AUTHORITY) || (c->pseudo & (H2CHECK_SCHEME | H2CHECK_PATH)))
            return "CONNECT without :authority, or with :scheme or :path";
    } else if ((c->pseudo & (H2CHECK_SCHEME | H2CHECK_PATH)) != (H2CHECK_SCHEME | H2CHECK_PATH)) {
        return "no :scheme or no :path";
    }
    if (end_stream && c->has_length && c->length != 0)
        return "content-length announces a body that never came";
    return NULL;
}

const char *h2check_data(h2check_t *c, size_t len, bool end_stream)
{
    c->received += len;
    if (c->has_length && c->received > c->length)
        return "more body than content-length";
    if (end_stream && c->has_length && c->received != c->length)
        return "less body than content-length";
    return NULL;
}

const char *h2check_trailers_end(h2check_t *c, bool end_stream)
{
    return end_stream ? h2check_data(c, 0, true) : "trailers that do not end the stream";
}
