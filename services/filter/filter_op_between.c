/* Operator "between": the field holds a decimal number within [low, high], both bounds
 * included (e.g. ":status" between [500, 599]). */
#include <stdio.h>
#include <stdlib.h>
#include "filter.h"

static int filter_between_compile(filter_pred_t *p, const json_t *v, char *err, size_t errlen)
{
    char why[160];
    if (filter_number_from_json(json_array_get(v, 0), &p->u.num.lo, why, sizeof why) < 0) {
        snprintf(err, errlen, "low bound: %s", why);
        return -1;
    }
    if (filter_number_from_json(json_array_get(v, 1), &p->u.num.hi, why, sizeof why) < 0) {
        snprintf(err, errlen, "high bound: %s", why);
        return -1;
    }
    if (filter_number_cmp(&p->u.num.lo, &p->u.num.hi) > 0) {
        snprintf(err, errlen, "low bound is greater than high bound");
        return -1;
    }
    return 0;
}

static bool filter_between_match(const filter_pred_t *p, codec_slice_t v)
{
    filter_number_t x;
    if (!filter_number_parse(v.ptr, v.len, &x))
        return false;
    return filter_number_cmp(&x, &p->u.num.lo) >= 0 && filter_number_cmp(&x, &p->u.num.hi) <= 0;
}

const filter_op_t filter_op_between = {
    .name = "between",
    .operand = FILTER_OPERAND_NUMBER2,
    .icase_allowed = false,
    .compile = filter_between_compile,
    .match = filter_between_match,
    .destroy = NULL,
};
