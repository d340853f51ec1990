/* Operator "exists": the field is present (with any value, empty included). */
#include "filter.h"

static bool filter_exists_match(const filter_pred_t *p, codec_slice_t v)
{
    return v.ptr != NULL;
}

const filter_op_t filter_op_exists = {
    .name = "exists",
    .operand = FILTER_OPERAND_NONE,
    .icase_allowed = false,
    .compile = NULL,
    .match = filter_exists_match,
    .destroy = NULL,
};
