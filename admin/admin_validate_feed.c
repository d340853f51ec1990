/* The feed object is parsed by the one feed parser (services/copy/feed_config.c) the adapter's
 * workers run too, so a feed the admin accepts is one the adapter applies. What the admin adds:
 * "filter" may name a filter object (resolved when the feed is published), feed names are at
 * most 64 characters like every admin object's, the server's own fields (id, version, …) are
 * let through, and secret files are not opened here (they live where the adapter runs). */
#include "admin.h"
#include "admin_validate.h"
#include "feed_config.h"

int admin_validate_feed(json_t *body, admin_err_t *err)
{
    const feed_config_opts_t opts = {.filter_by_name = true,
                                     .read_secrets = false,
                                     .name_max = ADMIN_NAME_MAX,
                                     .ignore_keys = admin_server_fields};
    jfield_err_t fe;
    feed_config_t *c = feed_config_parse(body, &opts, &fe);
    if (!c) {
        admin_err_from_field(err, &fe);
        return -1;
    }
    feed_config_free(c);
    return 0;
}
