/* Names of the configuration kinds: one table so the API path, the audit "kind" and the
 * ndd.config key prefix never disagree. */
#include <string.h>

#include "admin.h"

static const struct {
    const char *name;
    const char *collection;
} admin_kinds[ADMIN_KIND_COUNT] = {
    [ADMIN_KIND_FEED] = {"feed", "feeds"},
    [ADMIN_KIND_FILTER] = {"filter", "filters"},
    [ADMIN_KIND_SOURCE] = {"source", "sources"},
    [ADMIN_KIND_CORRELATION] = {"correlation", "correlation"},
};

const char *admin_kind_name(admin_kind_t kind)
{
    return kind < ADMIN_KIND_COUNT ? admin_kinds[kind].name : "?";
}

const char *admin_kind_collection(admin_kind_t kind)
{
    return kind < ADMIN_KIND_COUNT ? admin_kinds[kind].collection : "?";
}

int admin_kind_from_collection(const char *segment, size_t len, admin_kind_t *out)
{
    for (int k = 0; k < ADMIN_KIND_COUNT; k++) {
        const char *c = admin_kinds[k].collection;
        if (strlen(c) == len && memcmp(c, segment, len) == 0) {
            *out = (admin_kind_t)k;
            return 0;
        }
    }
    return -1;
}

int admin_kind_from_name(const char *name, admin_kind_t *out)
{
    for (int k = 0; k < ADMIN_KIND_COUNT; k++) {
        if (strcmp(admin_kinds[k].name, name) == 0) {
            *out = (admin_kind_t)k;
            return 0;
        }
    }
    return -1;
}
