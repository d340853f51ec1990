/* ndd-correlation: pairs the copies on MAIN into xDRs on the XDR topic (docs/correlation.md),
 * the correlation role alone; its settings and its run are corr_role.c's, shared with ndd. */
#include "corr_setup.h"
#include "daemon_role.h"

int main(int argc, char **argv)
{
    return daemon_role_main(&corr_role, argc, argv);
}
