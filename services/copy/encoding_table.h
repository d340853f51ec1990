/* The encoding table's rows: one X(encoding) per encoding, the encoding_t defined in its own
 * file (services/copy/encoding_<name>.c). A row here makes the encoding known to feed
 * validation, to GET /api/v1/schema/feeds (hence the console and the docs test) and to the
 * adapter; a transport carries it once its descriptor lists its name in .encodings. */
#ifndef NDD_SERVICES_ENCODING_TABLE_H
#define NDD_SERVICES_ENCODING_TABLE_H

#include "encoding.h"

#define NDD_ENCODINGS(X)                                                                           \
    X(encoding_json)        /* encoding_json.c */                                                  \
    X(encoding_frame)       /* encoding_frame.c */                                                 \
    X(encoding_passthrough) /* encoding_passthrough.c */                                           \
    X(encoding_synthetic)   /* encoding_synthetic.c: packets of the copies (docs/synthetic.md) */  \
    X(encoding_xdr_jsonl)   /* encoding_xdr_jsonl.c: JSON lines of xDRs */

NDD_ENCODINGS(ENCODING_DECLARE)

#endif
