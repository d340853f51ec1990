/* The encoding table (encoding_table.h's rows). Alone in its file so that a test links a table
 * of its own instead (these rows plus a test-only encoding) without changing the product:
 * nothing else is defined here. */
#include "encoding_table.h"

ENCODING_TABLE(NDD_ENCODINGS)
