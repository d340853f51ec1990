/* test_schema_feeds' transport table: the product's rows plus ONE row for the toy transport
 * (transport_toy.c), the way a new transport is added (docs/contributing.md). Linked in place
 * of services/copy/transport_table.c; the encoding table is the product's. */
#include "transport_table.h"

#define SCHEMA_TOY_TRANSPORTS(X) NDD_TRANSPORTS(X) X(transport_desc_schema_toy)
TRANSPORT_TABLE(SCHEMA_TOY_TRANSPORTS)
