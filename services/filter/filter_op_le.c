/* Operator "le": the field holds a decimal number less than or equal to the operand (":status",
 * "@timestamp-us", "content-length" ...). A field that is absent or not a number does not
 * match. */
#include "filter.h"

static int filter_le_compile(filter_pred_t *p, const json_t *v, char *err, size_t errlen)
{
    return filter_number_from_json(v, &p->u.num.lo, err, errlen);
}

static bool filter_le_match(const filter_pred_t *p, codec_slice_t v)
{
    filter_number_t x;
    if (!filter_number_parse(v.ptr, v.len, &x))
        return false;
    int c = filter_number_cmp(&x, &p->u.num.lo);
    return c <= 0;
}

const filter_op_t filter_op_le = {
    .name = "le",
    .operand = FILTER_OPERAND_NUMBER,
    .icase_allowed = false,
    .compile = filter_le_compile,
    .match = filter_le_match,
    .destroy = NULL,
};
