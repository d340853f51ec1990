/* The tests' listener table: the product's rows plus ONE row for the toy listener. Linked in
 * place of ingress/ingress_table.c, which defines nothing else. */
#include "ingress_table.h"

#define TOY_LISTENERS(X) NDD_INGRESS_LISTENERS(X) X(ingress_listener_toy, INGRESS_T_TOY)
TOY_LISTENERS(INGRESS_LISTENER_DECLARE)
INGRESS_LISTENER_TABLE(TOY_LISTENERS)
