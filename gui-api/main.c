/* ndd-gui-api: the web console's server (docs/console.md), the gui-api role alone.
 *
 *   ndd-gui-api --admin-url http://127.0.0.1:9100 --web-root build/gui-api/console [--http.port
 * 9108]
 *
 * Its settings and its run are gui_role.c's, shared with ndd. */
#include "daemon_role.h"
#include "gui.h"

int main(int argc, char **argv)
{
    return daemon_role_main(&gui_role, argc, argv);
}
