/* Operator "not-equals": the field is present and its value differs from the operand.
 * An absent field does not match (write {"not": {... "equals" ...}} for "absent or
 * different"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"

static int filter_not_equals_compile(filter_pred_t *p, const json_t *v, char *err, size_t errlen)
{
    p->u.str.len = json_string_length(v);
    p->u.str.s = filter_strdup(json_string_value(v), p->u.str.len, p->icase);
    if (!p->u.str.s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

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

static void filter_not_equals_destroy(filter_pred_t *p)
{
    free(p->u.str.s);
    p->u.str.s = NULL;
}

const filter_op_t filter_op_not_equals = {
    .name = "not-equals",
    .operand = FILTER_OPERAND_STRING,
    .icase_allowed = true,
    .compile = filter_not_equals_compile,
    .match = filter_not_equals_match,
    .destroy = filter_not_equals_destroy,
};
