/* Looking up the transport table (transport_desc.h): by name, by URL scheme, by position, and
 * the lists error messages name. The rows themselves are the transports' own files
 * (transport_table.h lists them). */
#include "transport_desc.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The rows: the built-in table (transport_table.c, or a test's), NULL ended. */
static size_t transport_rows(void)
{
    size_t n = 0;
    while (transport_builtin[n])
        n++;
    return n;
}

static const transport_desc_t *transport_row(size_t i)
{
    return transport_builtin[i];
}

const transport_desc_t *transport_find(const char *name)
{
    for (size_t i = 0; name && i < transport_rows(); i++)
        if (!strcmp(transport_row(i)->name, name))
            return transport_row(i);
    return NULL;
}

const transport_desc_t *transport_find_scheme(const char *s, size_t len,
                                              const transport_scheme_t **scheme)
{
    for (size_t i = 0; i < transport_rows(); i++)
        for (const transport_scheme_t *sc = transport_row(i)->schemes;
             sc < transport_row(i)->schemes + TRANSPORT_MAX_SCHEMES && sc->name; sc++)
            if (strlen(sc->name) == len && !strncmp(sc->name, s, len)) {
                if (scheme)
                    *scheme = sc;
                return transport_row(i);
            }
    return NULL;
}

size_t transport_count(void)
{
    return transport_rows();
}

const transport_desc_t *transport_at(size_t i)
{
    return i < transport_rows() ? transport_row(i) : NULL;
}

bool transport_takes_encoding(const transport_desc_t *d, const char *encoding)
{
    for (size_t i = 0; encoding && i < TRANSPORT_MAX_ENCODINGS && d->encodings[i]; i++)
        if (!strcmp(d->encodings[i], encoding))
            return true;
    return false;
}

/* Appends item to out[0..outlen) after a ", " when out is not empty; truncates quietly. */
static void transport_list_add(char *out, size_t outlen, const char *fmt, const char *item)
{
    size_t n = strlen(out);
    if (n + 1 >= outlen)
        return;
    if (n)
        n += (size_t)snprintf(out + n, outlen - n, ", ");
    if (n < outlen)
        snprintf(out + n, outlen - n, fmt, item);
}

void transport_names(char *out, size_t outlen, bool only_fire_and_forget)
{
    out[0] = 0;
    for (size_t i = 0; i < transport_rows(); i++)
        if (!only_fire_and_forget || transport_row(i)->fire_and_forget)
            transport_list_add(out, outlen, "\"%s\"", transport_row(i)->name);
}

void transport_schemes(const transport_desc_t *d, char *out, size_t outlen)
{
    out[0] = 0;
    for (size_t i = 0; i < transport_rows(); i++) {
        const transport_desc_t *t = transport_row(i);
        if (d && t != d)
            continue;
        for (size_t k = 0; k < TRANSPORT_MAX_SCHEMES && t->schemes[k].name; k++)
            transport_list_add(out, outlen, "%s", t->schemes[k].name);
    }
}

void transport_encodings(const transport_desc_t *d, char *out, size_t outlen)
{
    out[0] = 0;
    for (size_t i = 0; i < TRANSPORT_MAX_ENCODINGS && d->encodings[i]; i++)
        transport_list_add(out, outlen, "\"%s\"", d->encodings[i]);
}
