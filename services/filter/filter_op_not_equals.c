/* Operator "not-equals": the field is present and its value differs from the operand.
 * An absent field does not match (write {"not": {... "equals" ...}} for "absent or
 * different"). */
#include <string.h>

#include "filter.h"
#include "filter_op_str.h"

static bool filter_not_equals_match(const filter_pred_t *p, codec_slice_t v)
{
    if (!v.ptr)
        return false;
    if (v.len != p->u.str.len)
        return true;
    if (p->icase)
        return !filter_eq_icase(v.ptr, p->u.str.s, v.len);
    return memcmp(v.ptr, p->u.str.s, v.len) != 0;
}

const filter_op_t filter_op_not_equals = {
    .name = "not-equals",
    .operand = FILTER_OPERAND_STRING,
    .icase_allowed = true,
    .compile = filter_op_str_compile,
    .match = filter_not_equals_match,
    .destroy = filter_op_str_destroy,
};
