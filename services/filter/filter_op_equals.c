/* Operator "equals": the field is present and its value is exactly the operand
 * (ASCII case-insensitive with "icase"). */
#include <string.h>

#include "filter.h"
#include "filter_op_str.h"

static bool filter_equals_match(const filter_pred_t *p, codec_slice_t v)
{
    if (!v.ptr || v.len != p->u.str.len)
        return false;
    if (p->icase)
        return filter_eq_icase(v.ptr, p->u.str.s, v.len);
    return memcmp(v.ptr, p->u.str.s, v.len) == 0;
}

const filter_op_t filter_op_equals = {
    .name = "equals",
    .operand = FILTER_OPERAND_STRING,
    .icase_allowed = true,
    .compile = filter_op_str_compile,
    .match = filter_equals_match,
    .destroy = filter_op_str_destroy,
};
