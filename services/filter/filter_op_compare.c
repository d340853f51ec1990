/* The numeric operators "lt", "le", "gt", "ge" and "between": the field holds a decimal number
 * (":status", "@timestamp-us", "content-length" ...) that compares with the operand as the
 * table below says; "between" is [low, high], both bounds included (":status" between
 * [500, 599]). A field that is absent or not a number does not match.
 *
 * One row per operator: which outcomes of comparing the field with the low operand (and, for
 * between, with the high one) make it match. A new comparison is one row and one filter_op_t. */
#include <stdio.h>
#include <stdlib.h>

#include "filter.h"

#define CMP_LT 1u /* field < operand */
#define CMP_EQ 2u
#define CMP_GT 4u

typedef struct filter_compare {
    const filter_op_t *op;
    uint8_t lo_ok; /* outcomes against the (low) operand that match */
    uint8_t hi_ok; /* outcomes against the high bound that match; 0: no high bound */
} filter_compare_t;

extern const filter_op_t filter_op_lt, filter_op_le, filter_op_gt, filter_op_ge, filter_op_between;

static const filter_compare_t filter_compares[] = {
    {&filter_op_lt, CMP_LT, 0},
    {&filter_op_le, CMP_LT | CMP_EQ, 0},
    {&filter_op_gt, CMP_GT, 0},
    {&filter_op_ge, CMP_GT | CMP_EQ, 0},
    {&filter_op_between, CMP_GT | CMP_EQ, CMP_LT | CMP_EQ},
};

static int filter_compare_compile(filter_pred_t *p, const json_t *v, char *err, size_t errlen)
{
    const filter_compare_t *row = NULL;
    for (size_t i = 0; i < sizeof filter_compares / sizeof filter_compares[0]; i++)
        if (filter_compares[i].op == p->op)
            row = &filter_compares[i];
    if (!row) {
        snprintf(err, errlen, "operator \"%s\" has no comparison", p->op->name);
        return -1;
    }
    p->u.num.lo_ok = row->lo_ok;
    p->u.num.hi_ok = row->hi_ok;
    if (!row->hi_ok)
        return filter_number_from_json(v, &p->u.num.lo, err, errlen);
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

static unsigned filter_compare_outcome(const filter_number_t *x, const filter_number_t *y)
{
    int c = filter_number_cmp(x, y);
    return c < 0 ? CMP_LT : c > 0 ? CMP_GT : CMP_EQ;
}

static bool filter_compare_match(const filter_pred_t *p, codec_slice_t v)
{
    filter_number_t x;
    if (!filter_number_parse(v.ptr, v.len, &x))
        return false;
    if (!(filter_compare_outcome(&x, &p->u.num.lo) & p->u.num.lo_ok))
        return false;
    return !p->u.num.hi_ok || (filter_compare_outcome(&x, &p->u.num.hi) & p->u.num.hi_ok);
}

#define FILTER_COMPARE_OP(var, opname, shape)                                                      \
    const filter_op_t var = {.name = opname,                                                       \
                             .operand = shape,                                                     \
                             .icase_allowed = false,                                               \
                             .compile = filter_compare_compile,                                    \
                             .match = filter_compare_match,                                        \
                             .destroy = NULL}

FILTER_COMPARE_OP(filter_op_lt, "lt", FILTER_OPERAND_NUMBER);
FILTER_COMPARE_OP(filter_op_le, "le", FILTER_OPERAND_NUMBER);
FILTER_COMPARE_OP(filter_op_gt, "gt", FILTER_OPERAND_NUMBER);
FILTER_COMPARE_OP(filter_op_ge, "ge", FILTER_OPERAND_NUMBER);
FILTER_COMPARE_OP(filter_op_between, "between", FILTER_OPERAND_NUMBER2);
