/* ndd-adapter: runs the feeds of a feeds file or of the ndd.config topic (docs/adapter.md),
 * the adapter role alone; its settings and its run are adapter_role.c's, shared with ndd.
 *
 *   ndd-adapter --bootstrap HOST:PORT --feeds-file feeds.json | --config-topic ndd.config */
#include "adapter_control.h"
#include "daemon_role.h"

int main(int argc, char **argv)
{
    return daemon_role_main(&adapter_role, argc, argv);
}
