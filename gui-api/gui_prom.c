/* A parser of the Prometheus text format (0.0.4) for the workers' /metrics: what the live
 * figures are computed from. It reads outside input, so it never reads past len, never
 * allocates, and stops at the first malformed line (tests/fuzz/fuzz_prom_parse.c). Names and
 * label sets are NUL-terminated in place; label values are unescaped on demand. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gui.h"

static bool gui_prom_name_char(char c, bool first)
{
    return isalpha((unsigned char)c) || c == '_' || c == ':' ||
           (!first && isdigit((unsigned char)c));
}

/* Past the label set starting after '{' at p (end excluded): the '}' or NULL. */
static char *gui_prom_labels_end(char *p, char *end)
{
    while (p < end) {
        while (p < end && (*p == ' ' || *p == ','))
            p++;
        if (p < end && *p == '}')
            return p;
        if (p >= end || !gui_prom_name_char(*p, true))
            return NULL;
        while (p < end && gui_prom_name_char(*p, false))
            p++;
        if (p >= end || *p != '=' || p + 1 >= end || p[1] != '"')
            return NULL;
        p += 2;
        while (p < end && *p != '"') {
            if (*p == '\\')
                p++;
            if (p < end && *p == '\n')
                return NULL;
            p++;
        }
        if (p >= end)
            return NULL;
        p++;
    }
    return NULL;
}

int gui_prom_parse(char *text, size_t len, gui_prom_fn fn, void *arg, char *err, size_t errlen)
{
    char *p = text, *end = text + len;
    int n = 0, line = 0;
    while (p < end) {
        line++;
        char *eol = memchr(p, '\n', (size_t)(end - p));
        char *le = eol ? eol : end;
        char *s = p;
        p = eol ? eol + 1 : end;
        while (s < le && (*s == ' ' || *s == '\t'))
            s++;
        if (s == le || *s == '#' || (le - s == 1 && *s == '\r'))
            continue;
        gui_prom_sample_t smp = {.name = s, .labels = ""};
        if (!gui_prom_name_char(*s, true))
            goto bad;
        while (s < le && gui_prom_name_char(*s, false))
            s++;
        smp.name_len = (size_t)(s - smp.name);
        char *name_end = s;
        if (s < le && *s == '{') {
            char *close = gui_prom_labels_end(s + 1, le);
            if (!close)
                goto bad;
            smp.labels = s + 1;
            smp.labels_len = (size_t)(close - s - 1);
            *close = '\0';
            s = close + 1;
        }
        if (s >= le || (*s != ' ' && *s != '\t'))
            goto bad;
        s++; /* past the separator first: without labels it is name_end */
        *name_end = '\0';
        while (s < le && (*s == ' ' || *s == '\t'))
            s++;
        char *v = s;
        while (s < le && *s != ' ' && *s != '\t' && *s != '\r')
            s++;
        if (s == v || s - v > 64)
            goto bad;
        char num[72];
        memcpy(num, v, (size_t)(s - v));
        num[s - v] = '\0';
        char *ne;
        smp.value = strtod(num, &ne);
        if (*ne)
            goto bad;
        if (fn)
            fn(&smp, arg);
        n++;
        continue;
    bad:
        snprintf(err, errlen, "line %d: not a sample line", line);
        return -1;
    }
    return n;
}

bool gui_prom_label(const gui_prom_sample_t *s, const char *name, char *out, size_t outlen)
{
    const char *p = s->labels, *end = s->labels + s->labels_len;
    size_t nl = strlen(name);
    while (p < end) {
        while (p < end && (*p == ' ' || *p == ','))
            p++;
        const char *k = p;
        while (p < end && *p != '=')
            p++;
        bool match = (size_t)(p - k) == nl && memcmp(k, name, nl) == 0;
        p += 2; /* =" (checked by the parser) */
        size_t o = 0;
        while (p < end && *p != '"') {
            char c = *p++;
            if (c == '\\' && p < end) {
                c = *p++;
                if (c == 'n')
                    c = '\n';
            }
            if (match && o + 1 < outlen)
                out[o++] = c;
        }
        p++;
        if (match) {
            out[o] = '\0';
            return true;
        }
    }
    return false;
}
