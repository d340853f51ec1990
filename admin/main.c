/* ndd-admin: the REST API that manages feeds, filters, sources and correlation settings,
 * backed by PostgreSQL and distributed through ndd.config (docs/api.md); the admin role alone.
 *
 *   ndd-admin [--pg CONNINFO] [--bootstrap HOST:PORT] [--http.port 9100] ...   serve
 *   ndd-admin token create --role admin|viewer --name NAME        prints a new token once
 *   ndd-admin token list | token revoke --name NAME
 *   ndd-admin apply [--dry-run] [--prune] [--url URL] [--token-file F] FILE|DIR
 *   ndd-admin schema feeds                                         prints the feed schema
 *   ndd-admin backup FILE | restore FILE [--pg-file F] [--db-schema S]   pg_dump / pg_restore
 *
 * Its settings and its run are admin_role.c's, shared with ndd. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "admin_server.h"
#include "admin_validate.h"
#include "daemon_role.h"
#include "feed_schema.h"

/* `schema feeds`: what GET /api/v1/schema/feeds serves, without a database or a server (for
 * GitOps pipelines that check their files, and for the docs test). */
static int admin_schema_command(const char *what)
{
    if (strcmp(what, "feeds") != 0) {
        fprintf(stderr, "ndd-admin schema: unknown schema \"%s\" (known: feeds)\n", what);
        return 2;
    }
    json_t *s = feed_schema_json(ADMIN_NAME_MAX);
    int rc = s && json_dumpf(s, stdout, JSON_INDENT(2) | JSON_SORT_KEYS) == 0 ? 0 : 1;
    putchar('\n');
    json_decref(s);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "schema") == 0)
        return admin_schema_command(argv[2]);
    if (argc >= 2 && strcmp(argv[1], "apply") == 0)
        return admin_apply_command(argc - 1, argv + 1);
    bool backup = argc >= 3 && (strcmp(argv[1], "backup") == 0 || strcmp(argv[1], "restore") == 0);
    if (!(argc >= 3 && strcmp(argv[1], "token") == 0) && !backup)
        return daemon_role_main(&admin_role, argc, argv);
    /* `token VERB ...`, `backup FILE ...`: VERB or FILE takes argv[0]'s place for the settings
     * parser. */
    daemon_t d;
    int rc = daemon_init(&d, admin_role.def, argc - 2, argv + 2);
    if (rc == DAEMON_CONTINUE) {
        const admin_settings_t *S = admin_role.def->settings;
        rc = backup ? admin_backup_command(S, argv[1], argv[2])
                    : admin_token_command(S, argv[2], S->name, S->role);
    }
    daemon_free(&d);
    return rc;
}
