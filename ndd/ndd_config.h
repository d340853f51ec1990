/* ndd's configuration file: one JSON document with ndd's own settings at the top and each
 * role's settings, with the same keys as its daemon, under "roles" (docs/ndd.md):
 *
 *   {"bootstrap": "127.0.0.1:9092", "http": {"port": 9190}, "kafka": {...},
 *    "roles": {"aggregation": {"nf-types": ["SCP", "NRF"], "SCP": {"topic": "scp-copies"}},
 *              "correlation": {}, "adapter": {"feeds-file": "feeds.json"}}}
 *
 * ndd_config_parse splits it: the top-level leaves are ndd's (bootstrap, log.* and kafka.*
 * are every role's too), and each role becomes one instance, or one per NF type for the
 * aggregation (its "nf-types", with the NF's own object overriding the shared keys). */
#ifndef NDD_CONFIG_ROLES_H
#define NDD_CONFIG_ROLES_H

#include <stddef.h>

#include "config.h"
#include "daemon_role.h"

#define NDD_CONFIG_MAX_INSTANCES 16

typedef struct ndd_instance_conf {
    const daemon_role_t *role;
    char name[48]; /* "aggregation-SCP", "adapter": label, log and readiness name */
    char origin[300];
    config_leaf_t *leaves; /* the role's settings, shared ones first (a later leaf wins) */
    size_t n_leaves;
} ndd_instance_conf_t;

typedef struct ndd_config {
    char origin[600];   /* "file /etc/ndd.json"; "" when no file was read (--help, --version) */
    config_leaf_t *own; /* ndd's settings: the top-level leaves */
    size_t n_own;
    ndd_instance_conf_t inst[NDD_CONFIG_MAX_INSTANCES];
    size_t n_inst;
} ndd_config_t;

/* The roles ndd knows, by section name; n_roles of them. */
typedef struct ndd_roles {
    const daemon_role_t *const *roles;
    size_t n_roles;
} ndd_roles_t;

/* Parses text (from origin, "file /etc/ndd.json") into c. 0, or -1 with err naming the key. */
int ndd_config_parse(ndd_config_t *c, const ndd_roles_t *known, const char *text, size_t len,
                     const char *origin, char *err, size_t errlen);
/* The file argv names (--config FILE or NDD_CONFIG, as the config loader finds it), read and
 * parsed into c. 0; 0 with no file and c empty when argv asks for --help or --version only;
 * -1 with err naming the file or the key. */
int ndd_config_load(ndd_config_t *c, const ndd_roles_t *known, int argc, char **argv, char *err,
                    size_t errlen);
void ndd_config_free(ndd_config_t *c);

#endif
