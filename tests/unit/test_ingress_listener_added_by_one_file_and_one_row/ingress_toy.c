/* A test-only ingress listener, "toy", added the way docs/contributing.md says: this one file
 * plus one row in the listener table (tables.c, the tests' copy of ingress/ingress_table.c).
 * It listens on no port: started, it counts `toy.messages` messages received under its own
 * label. Its settings are its own (toy_settings_t, described by its specs). */
#include <stdint.h>
#include <stdlib.h>

#include "ingress.h"

extern const ingress_listener_kind_t ingress_listener_toy; /* defined at the end */

typedef struct toy_listener {
    ingress_t *g;
} toy_listener_t;

typedef struct toy_settings {
    bool enabled;
    int64_t messages;
} toy_settings_t;

static const config_spec_t toy_specs[] = {
    {"toy.enabled", CONFIG_BOOL, "true", "the toy listener", 0, CONFIG_AT(toy_settings_t, enabled),
     0, 0},
    {"toy.messages", CONFIG_INT, "1", "messages the toy counts when it starts", 0,
     CONFIG_AT(toy_settings_t, messages), 0, 1000},
};

static const toy_settings_t *toy_settings(const ingress_settings_t *S)
{
    return ingress_own_settings(S, &ingress_listener_toy);
}

static bool toy_enabled(const ingress_settings_t *S)
{
    return toy_settings(S)->enabled;
}

static void *toy_start(ingress_t *g, char *err, size_t errlen)
{
    toy_listener_t *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->g = g;
    /* its row (metrics index), found by the table, not by a number of its own */
    metrics_counter_add(g->m.received[ingress_listener_index(&ingress_listener_toy)],
                        (uint64_t)toy_settings(g->S)->messages);
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
    .specs = toy_specs,
    .n_specs = sizeof toy_specs / sizeof toy_specs[0],
    .start = toy_start,
    .stop = toy_stop,
};
