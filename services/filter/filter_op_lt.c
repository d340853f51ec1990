/* Operator "lt": the field holds a decimal number less than the operand (":status",
 * "@timestamp-us", "content-length" ...). A field that is absent or not a number does not
 * match. */
#include "filter.h"

static int filter_lt_compile(filter_pred_t *p, const json_t *v, char *err, size_t errlen)
{
    return filter_number_from_json(v, &p->u.num.lo, err, errlen);
}

static bool filter_lt_match(const filter_pred_t *p, codec_slice_t v)
{
    filter_number_t x;
    if (!filter_number_parse(v.ptr, v.len, &x))
        return false;
    int c = filter_number_cmp(&x, &p->u.num.lo);
    return c < 0;
}

const filter_op_t filter_op_lt = {
    .name = "lt",
    .operand = FILTER_OPERAND_NUMBER,
    .icase_allowed = false,
    .compile = filter_lt_compile,
    .match = filter_lt_match,
    .destroy = NULL,
};
