/* The transport table's rows: one X(descriptor) per transport, the descriptor defined in the
 * transport's own file (adapter/transport_<name>.c). A row here makes the transport known to
 * the admin (feed validation and GET /api/v1/schema/feeds, hence the console and the docs
 * test), to the adapter (transport_ops_for) and to endpoint URL parsing; nothing else
 * names it. The order is the order of the schema and of error messages. */
#ifndef NDD_SERVICES_TRANSPORT_TABLE_H
#define NDD_SERVICES_TRANSPORT_TABLE_H

#include "transport_desc.h"

#define NDD_TRANSPORTS(X)                                                                          \
    X(transport_desc_http2) /* adapter/transport_h2.c */                                           \
    X(transport_desc_tcp)   /* adapter/transport_tcp.c */                                          \
    X(transport_desc_tls)   /* adapter/transport_tcp.c, with a TLS connection layer */             \
    X(transport_desc_file)  /* adapter/transport_file.c */                                         \
    X(transport_desc_kafka) /* adapter/transport_kafka.c */

NDD_TRANSPORTS(TRANSPORT_DECLARE)

#endif
