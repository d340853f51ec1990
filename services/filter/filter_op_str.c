/* The string operators' shared operand handling: see filter_op_str.h. */
#include "filter_op_str.h"

#include <stdio.h>
#include <stdlib.h>

int filter_op_str_compile(filter_pred_t *p, const json_t *v, char *err, size_t errlen)
{
    p->u.str.len = json_string_length(v);
    p->u.str.s = filter_strdup(json_string_value(v), p->u.str.len, p->icase);
    if (!p->u.str.s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

void filter_op_str_destroy(filter_pred_t *p)
{
    free(p->u.str.s);
    p->u.str.s = NULL;
}
