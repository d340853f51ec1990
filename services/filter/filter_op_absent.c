/* Operator "absent": the field is not present. */
#include "filter.h"

static bool filter_absent_match(const filter_pred_t *p, codec_slice_t v)
{
    return v.ptr == NULL;
}

const filter_op_t filter_op_absent = {
    .name = "absent",
    .operand = FILTER_OPERAND_NONE,
    .icase_allowed = false,
    .compile = NULL,
    .match = filter_absent_match,
    .destroy = NULL,
};
