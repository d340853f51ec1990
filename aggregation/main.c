/* ndd-aggregation: one NF type's worker (docs/aggregation.md), the aggregation role alone.
 *
 *   ndd-aggregation --nf-type SCP [--bootstrap HOST:PORT] [--filter-file F] ...
 *
 * Its settings and its run are agg_role.c's, shared with ndd. */
#include "agg_setup.h"
#include "daemon_role.h"

int main(int argc, char **argv)
{
    return daemon_role_main(&agg_role, argc, argv);
}
