/* The request context: caches and limits shared by every handler. */
#include <string.h>

#include "admin.h"

int admin_ctx_init(admin_ctx_t *ctx, size_t max_objects, size_t max_body)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->max_body = max_body;
    for (int k = 0; k < ADMIN_KIND_COUNT; k++)
        if (admin_cache_init(&ctx->cache[k], max_objects) != 0) {
            admin_ctx_free(ctx);
            return -1;
        }
    return 0;
}

void admin_ctx_free(admin_ctx_t *ctx)
{
    for (int k = 0; k < ADMIN_KIND_COUNT; k++)
        admin_cache_free(&ctx->cache[k]);
}
