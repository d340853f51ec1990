/* Operator "contains": the field is present and holds the operand somewhere (an empty
 * operand is found in any present value). */
#include <ctype.h>
#include <string.h>

#include "filter.h"
#include "filter_op_str.h"

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

const filter_op_t filter_op_contains = {
    .name = "contains",
    .operand = FILTER_OPERAND_STRING,
    .icase_allowed = true,
    .compile = filter_op_str_compile,
    .match = filter_contains_match,
    .destroy = filter_op_str_destroy,
};
