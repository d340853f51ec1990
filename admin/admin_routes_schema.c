/* GET /api/v1/schema/feeds: the one description of a feed (services/copy/feed_schema.h) that
 * the admin validates feeds with, for the console's form and for any client that builds
 * feeds. Any authenticated role may read it: it holds no configuration, only its shape. */
#include "admin.h"
#include "admin_validate.h"
#include "feed_schema.h"

void admin_h_schema_feeds(admin_ctx_t *ctx, const admin_req_t *req, const char *id,
                          admin_resp_t *resp)
{
    json_t *s = feed_schema_json(ADMIN_NAME_MAX);
    if (!s) {
        admin_resp_errorf(resp, 500, "internal", "", "out of memory building the feed schema");
        return;
    }
    admin_resp_json(resp, 200, s);
}
