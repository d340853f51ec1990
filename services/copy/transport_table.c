/* The transport table (transport_table.h's rows). Alone in its file so that a test links a
 * table of its own instead (its rows plus a test-only transport) without changing the
 * product: nothing else is defined here. */
#include "transport_table.h"

TRANSPORT_TABLE(NDD_TRANSPORTS)
