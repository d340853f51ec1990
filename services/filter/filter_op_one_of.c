/* Operator "one-of": the field is present and equals one of the listed strings. The list is
 * sorted once (by length, then bytes) so a lookup is a binary search that mostly compares
 * lengths; duplicates are harmless. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"

static int filter_one_of_cmp(const void *a, const void *b)
{
    const codec_slice_t *x = a, *y = b;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return memcmp(x->ptr, y->ptr, x->len);
}

static int filter_one_of_compile(filter_pred_t *p, const json_t *v, char *err, size_t errlen)
{
    size_t n = json_array_size(v), total = 0;
    for (size_t i = 0; i < n; i++)
        total += json_string_length(json_array_get(v, i)) + 1;
    p->u.set.v = calloc(n, sizeof *p->u.set.v);
    p->u.set.storage = malloc(total ? total : 1);
    if (!p->u.set.v || !p->u.set.storage) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    char *w = p->u.set.storage;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(v, i);
        size_t len = json_string_length(e);
        const char *s = json_string_value(e);
        for (size_t k = 0; k < len; k++)
            w[k] = p->icase ? (char)tolower((unsigned char)s[k]) : s[k];
        w[len] = '\0';
        p->u.set.v[i] = (codec_slice_t){w, len};
        w += len + 1;
    }
    p->u.set.n = n;
    qsort(p->u.set.v, n, sizeof *p->u.set.v, filter_one_of_cmp);
    return 0;
}

/* Like filter_one_of_cmp with `v` folded to lower case on the fly when icase. */
static int filter_one_of_probe(codec_slice_t v, const codec_slice_t *e, bool icase)
{
    if (v.len != e->len)
        return v.len < e->len ? -1 : 1;
    if (!icase)
        return memcmp(v.ptr, e->ptr, v.len);
    for (size_t i = 0; i < v.len; i++) {
        int a = tolower((unsigned char)v.ptr[i]), b = (unsigned char)e->ptr[i];
        if (a != b)
            return a - b;
    }
    return 0;
}

static bool filter_one_of_match(const filter_pred_t *p, codec_slice_t v)
{
    if (!v.ptr)
        return false;
    size_t lo = 0, hi = p->u.set.n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = filter_one_of_probe(v, &p->u.set.v[mid], p->icase);
        if (c == 0)
            return true;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return false;
}

static void filter_one_of_destroy(filter_pred_t *p)
{
    free(p->u.set.v);
    free(p->u.set.storage);
    p->u.set.v = NULL;
    p->u.set.storage = NULL;
    p->u.set.n = 0;
}

const filter_op_t filter_op_one_of = {
    .name = "one-of",
    .operand = FILTER_OPERAND_STRINGS,
    .icase_allowed = true,
    .compile = filter_one_of_compile,
    .match = filter_one_of_match,
    .destroy = filter_one_of_destroy,
};
