/* Operator "suffix": the field is present and ends with the operand. */
#include <string.h>

#include "filter.h"
#include "filter_op_str.h"

static bool filter_suffix_match(const filter_pred_t *p, codec_slice_t v)
{
    if (!v.ptr || v.len < p->u.str.len)
        return false;
    const char *tail = v.ptr + (v.len - p->u.str.len);
    if (p->icase)
        return filter_eq_icase(tail, p->u.str.s, p->u.str.len);
    return memcmp(tail, p->u.str.s, p->u.str.len) == 0;
}

const filter_op_t filter_op_suffix = {
    .name = "suffix",
    .operand = FILTER_OPERAND_STRING,
    .icase_allowed = true,
    .compile = filter_op_str_compile,
    .match = filter_suffix_match,
    .destroy = filter_op_str_destroy,
};
