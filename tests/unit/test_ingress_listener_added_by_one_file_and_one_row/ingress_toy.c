/* A test-only ingress listener, "toy", added the way docs/contributing.md says: this one file
 * plus one row in the listener table (tables.c, the tests' copy of ingress/ingress_table.c).
 * It listens on no port: started, it counts one message received under its own label. */
#include <stdlib.h>

#include "ingress.h"

extern const ingress_listener_kind_t ingress_listener_toy; /* defined at the end */

typedef struct toy_listener {
    ingress_t *g;
} toy_listener_t;

static bool toy_enabled(const ingress_settings_t *S)
{
    return true;
}

static void *toy_start(ingress_t *g, char *err, size_t errlen)
{
    toy_listener_t *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->g = g;
    /* its row (metrics index), found by the table, not by a number of its own */
    metrics_counter_inc(g->m.received[ingress_listener_index(&ingress_listener_toy)]);
    return l;
}

static void toy_stop(void *l)
{
    free(l);
}

const ingress_listener_kind_t ingress_listener_toy = {
    .name = "toy",
    .label = "toy-copy",
    .enabled = toy_enabled,
    .start = toy_start,
    .stop = toy_stop,
};
