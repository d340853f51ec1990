/* Operator "contains": the field is present and holds the operand somewhere (an empty
 * operand is found in any present value). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"

static int filter_contains_compile(filter_pred_t *p, const json_t *v, char *err, size_t errlen)
{
    p->u.str.len = json_string_length(v);
    p->u.str.s = filter_strdup(json_string_value(v), p->u.str.len, p->icase);
    if (!p->u.str.s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

static bool filter_contains_match(const filter_pred_t *p, codec_slice_t v)
{
    size_t n = p->u.str.len;
    if (!v.ptr || v.len < n)
        return false;
    if (n == 0)
        return true;
    if (!p->icase)
        return memmem(v.ptr, v.len, p->u.str.s, n) != NULL;
    unsigned char first = (unsigned char)p->u.str.s[0];
    for (size_t i = 0; i + n <= v.len; i++)
        if (tolower((unsigned char)v.ptr[i]) == first &&
            filter_eq_icase(v.ptr + i + 1, p->u.str.s + 1, n - 1))
            return true;
    return false;
}

static void filter_contains_destroy(filter_pred_t *p)
{
    free(p->u.str.s);
    p->u.str.s = NULL;
}

const filter_op_t filter_op_contains = {
    .name = "contains",
    .operand = FILTER_OPERAND_STRING,
    .icase_allowed = true,
    .compile = filter_contains_compile,
    .match = filter_contains_match,
    .destroy = filter_contains_destroy,
};
