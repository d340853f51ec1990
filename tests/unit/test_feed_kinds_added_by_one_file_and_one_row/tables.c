/* The tests' transport and encoding tables: the product's rows, plus ONE row each for the toy
 * transport and the toy encoding. Linked in place of services/copy/transport_table.c and
 * encoding_table.c, which define nothing else. */
#include "encoding_table.h"
#include "transport_table.h"

#define TOY_TRANSPORTS(X) NDD_TRANSPORTS(X) X(transport_desc_toy)
TRANSPORT_TABLE(TOY_TRANSPORTS)

#define TOY_ENCODINGS(X) NDD_ENCODINGS(X) X(encoding_toy_lines)
ENCODING_TABLE(TOY_ENCODINGS)
