/* Operator "prefix": the field is present and starts with the operand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"

static int filter_prefix_compile(filter_pred_t *p, const json_t *v, char *err, size_t errlen)
{
    p->u.str.len = json_string_length(v);
    p->u.str.s = filter_strdup(json_string_value(v), p->u.str.len, p->icase);
    if (!p->u.str.s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

static bool filter_prefix_match(const filter_pred_t *p, codec_slice_t v)
{
    if (!v.ptr || v.len < p->u.str.len)
        return false;
    if (p->icase)
        return filter_eq_icase(v.ptr, p->u.str.s, p->u.str.len);
    return memcmp(v.ptr, p->u.str.s, p->u.str.len) == 0;
}

static void filter_prefix_destroy(filter_pred_t *p)
{
    free(p->u.str.s);
    p->u.str.s = NULL;
}

const filter_op_t filter_op_prefix = {
    .name = "prefix",
    .operand = FILTER_OPERAND_STRING,
    .icase_allowed = true,
    .compile = filter_prefix_compile,
    .match = filter_prefix_match,
    .destroy = filter_prefix_destroy,
};
