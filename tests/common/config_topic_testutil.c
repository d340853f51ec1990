/* See config_topic_testutil.h. */
#include "config_topic_testutil.h"

#include <string.h>

#include "clock.h"

typedef struct cttu_find {
    const char *kind, *id;
    json_t *found;
} cttu_find_t;

static int cttu_match(void *arg, const char *kind, const char *id, json_t *record)
{
    cttu_find_t *f = arg;
    if (strcmp(kind, f->kind) != 0 || strcmp(id, f->id) != 0)
        return 0;
    f->found = record;
    return 1;
}

json_t *cttu_held(const config_topic_t *ft, const char *kind, const char *id)
{
    cttu_find_t f = {kind, id, NULL};
    config_topic_foreach(ft, cttu_match, &f);
    return f.found;
}

int cttu_wait_loaded(config_topic_t *ft, int timeout_ms)
{
    int64_t end = mono_now_ms() + timeout_ms;
    while (!config_topic_loaded(ft)) {
        int64_t left = end - mono_now_ms();
        if (left <= 0)
            return -1;
        config_topic_poll(ft, left < 100 ? (int)left : 100);
    }
    return 0;
}
