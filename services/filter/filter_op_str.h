/* What the string operators (equals, not-equals, prefix, suffix, contains) share: their
 * operand is one string, kept lowercased with "icase" so a match lowers only the field side.
 * For services/filter/filter_op_*.c only. */
#ifndef NDD_FILTER_OP_STR_H
#define NDD_FILTER_OP_STR_H

#include <stddef.h>

#include "filter.h"

/* filter_op_t.compile of a string operator: copies the JSON string operand into p->u.str
 * (lowercased when p->icase). -1 with err when out of memory. */
int filter_op_str_compile(filter_pred_t *p, const json_t *v, char *err, size_t errlen);
/* filter_op_t.destroy of a string operator: frees what filter_op_str_compile copied. */
void filter_op_str_destroy(filter_pred_t *p);

#endif
