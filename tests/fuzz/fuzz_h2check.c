/* Fuzz target: h2check, RFC 9113's checks of a request's fields (a client's bytes, decoded by
 * HPACK). The input is a list of fields, each [flags][name length][value length][name][value]
 * (flags bit 0: a trailer, bit 1: the end of the header block, bit 2: DATA of value length
 * instead of a field); every verdict is held against the plain definitions byte by byte, so
 * the eight-bytes-a-step checks are differential-tested, not only run. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "h2check.h"

static int lower_tchar(uint8_t b)
{
    return b && strchr("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz", b) != NULL;
}

static int value_fine(const uint8_t *v, size_t n)
{
    if (n && (v[0] == ' ' || v[0] == '\t' || v[n - 1] == ' ' || v[n - 1] == '\t'))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (v[i] == 0 || v[i] == '\r' || v[i] == '\n')
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    h2check_t c = {0};
    size_t at = 0;
    while (at + 3 <= size) {
        uint8_t flags = data[at];
        size_t nl = data[at + 1], vl = data[at + 2];
        at += 3;
        if (at + nl + vl > size)
            break;
        const uint8_t *name = data + at, *value = data + at + nl;
        at += nl + vl;
        bool trailer = flags & 1, end = flags & 2;
        if (flags & 4) {
            (void)h2check_data(&c, vl, end);
            continue;
        }
        const char *why = h2check_field(&c, name, nl, false, value, vl, trailer);
        if (!why && nl && name[0] != ':') {
            for (size_t i = 0; i < nl; i++)
                if (!lower_tchar(name[i]))
                    abort(); /* a name byte outside lower-case tchar accepted */
            if (!value_fine(value, vl))
                abort(); /* NUL, CR, LF or edge white space accepted */
        }
        if (!why && nl && name[0] == ':' && trailer)
            abort();
        if (!why && nl == 5 && !memcmp(name, ":path", 5))
            for (size_t i = 0; i < vl; i++)
                if (value[i] <= 0x20 || value[i] == 0x7f)
                    abort();
        if (end)
            (void)(trailer ? h2check_trailers_end(&c, true) : h2check_headers_end(&c, flags & 8));
    }
    return 0;
}
