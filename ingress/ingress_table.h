/* The ingress listener table's rows: one X(kind, id) per listener, the kind defined in the
 * listener's own file (ingress/ingress_<name>.c); id names its row (its metrics' index) for
 * its own file. A row here makes the listener start when enabled, count in every
 * ndd_ingress_* family under its label and show in --check-config's listener table; nothing
 * else names it. The order is the table's only; which starts first is the kinds' .needs. */
#ifndef NDD_INGRESS_TABLE_H
#define NDD_INGRESS_TABLE_H

#include "ingress.h"

#define NDD_INGRESS_LISTENERS(X)                                                                   \
    X(ingress_listener_h2, INGRESS_T_H2_COPY)   /* ingress_h2.c: copies, VES over HTTP/2 */        \
    X(ingress_listener_ves, INGRESS_T_VES)      /* ingress_ves.c: VES REST over HTTP/1.1 */        \
    X(ingress_listener_hvves, INGRESS_T_HVVES)  /* ingress_hvves.c: HV-VES, WTP over TCP/TLS */    \
    X(ingress_listener_tcp, INGRESS_T_TCP_COPY) /* ingress_tcp.c: copies in frames over TCP */

NDD_INGRESS_LISTENERS(INGRESS_LISTENER_DECLARE)
enum { NDD_INGRESS_LISTENERS(INGRESS_LISTENER_ID) INGRESS_T__BUILTIN };

#endif
