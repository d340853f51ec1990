/* ndd-ingress: HTTP/2 ingest of message copies, VES REST and HV-VES, written to Kafka with
 * nothing lost (docs/ingress.md), the ingress role alone; its settings and its run are
 * ingress_role.c's, shared with ndd.
 *
 *   ndd-ingress --bootstrap HOST:PORT [--h2.port 8443] [--ves.port 8080] [--hvves.port 6061] */
#include "daemon_role.h"
#include "ingress.h"

int main(int argc, char **argv)
{
    return daemon_role_main(&ingress_role, argc, argv);
}
