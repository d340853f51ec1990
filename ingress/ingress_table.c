/* The ingress listener table (ingress_table.h's rows). Alone in its file so that a test links a
 * table of its own instead (these rows plus a test-only listener) without changing the
 * product: nothing else is defined here. */
#include "ingress_table.h"

INGRESS_LISTENER_TABLE(NDD_INGRESS_LISTENERS)
