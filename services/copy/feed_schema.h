/* The feed schema: one JSON description of a feed object, its transports and its encodings
 * (docs/api.md, "Feed schema"), generated from the option descriptions the feed parser checks
 * with (feed_config.c, each transport's and each encoding's own file). ndd-admin serves it at
 * GET /api/v1/schema/feeds, the console renders its feed form from it, and the docs test
 * compares docs/api.md with it: one description, never a copy. */
#ifndef NDD_SERVICES_FEED_SCHEMA_H
#define NDD_SERVICES_FEED_SCHEMA_H

#include <stddef.h>

#include <jansson.h>

#include "feed_config.h"

/* {"feed": [option...], "transports": [...], "encodings": [...]}; name_max: the longest
 * feed name the caller accepts (0: the parser's). A new reference, NULL when out of memory. */
json_t *feed_schema_json(size_t name_max);

#endif
