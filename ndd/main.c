/* ndd: the whole director in one process, for a small site (docs/ndd.md).
 *
 *   ndd --config ndd.json [--http.port 9190] [--check-config] [--version]
 *
 * The file lists the roles and their settings, with each daemon's own keys under its role
 * (ndd_config.h); ndd reads it, keeps the top-level settings for itself (its one /metrics
 * /healthz /readyz, the log, the broker list), checks every role as its daemon would, and
 * runs each on its own threads (ndd_supervise.c) until SIGTERM/SIGINT; SIGHUP reloads every
 * role that reloads. */
#include <stdio.h>

#include "adapter_control.h"
#include "admin_server.h"
#include "agg_setup.h"
#include "corr_setup.h"
#include "daemon_role.h"
#include "gui.h"
#include "ingress.h"
#include "ndd_config.h"
#include "ndd_supervise.h"

typedef struct ndd_settings {
    daemon_settings_t common; /* first: the skeleton reads it at the settings' address */
    const char *events_topic;
} ndd_settings_t;

static ndd_settings_t S;
static ndd_config_t ndd_conf;

/* clang-format off */
static const config_spec_t ndd_specs[] = {
    {"events-topic", CONFIG_STRING, "ndd.events", "topic of ndd's own alarms (role-restarted) "
     "and heartbeat; every role's events go through ndd's one producer", 0,
     CONFIG_AT(ndd_settings_t, events_topic), 0, 0},
    DAEMON_SPECS_COMMON(ndd_settings_t, "9190"),
};
/* clang-format on */

static const daemon_role_t *const ndd_known_roles[] = {&agg_role,     &corr_role,  &adapter_role,
                                                       &ingress_role, &admin_role, &gui_role};
static const ndd_roles_t ndd_roles = {ndd_known_roles,
                                      sizeof(ndd_known_roles) / sizeof(ndd_known_roles[0])};

static int ndd_check(daemon_t *d, FILE *out, char *err, size_t errlen)
{
    if (out)
        for (size_t i = 0; i < ndd_conf.n_inst; i++)
            fprintf(out, "role %s\n", ndd_conf.inst[i].name);
    return ndd_supervise_check(&ndd_conf, d, out, err, errlen);
}

static const daemon_def_t ndd_def = {
    .name = "ndd",
    .usage = "usage: ndd --config FILE [settings]   run the roles FILE lists (docs/ndd.md)",
    .specs = ndd_specs,
    .n_specs = sizeof(ndd_specs) / sizeof(ndd_specs[0]),
    .settings = &S,
    .check = ndd_check,
    .ready_needs = DAEMON_NEEDS(DAEMON_COND_KAFKA),
};

int main(int argc, char **argv)
{
    /* One arena: every role's librdkafka threads would each keep their own free memory. */
    daemon_heap_setup(1);
    char err[1024];
    if (ndd_config_load(&ndd_conf, &ndd_roles, argc, argv, err, sizeof(err)) != 0) {
        fprintf(stderr, "ndd: %s\n", err);
        return 2;
    }
    /* The loader skips --config: the leaves take the file's place (none for --help). */
    daemon_t d;
    int rc = daemon_init_leaves(&d, &ndd_def, argc, argv, ndd_conf.own, ndd_conf.n_own,
                                ndd_conf.origin[0] ? ndd_conf.origin : NULL);
    if (rc == DAEMON_CONTINUE) {
        rc = 1;
        ndd_supervisor_t *s = NULL;
        if (daemon_start(&d, true) == 0 &&
            (s = ndd_supervise_start(&ndd_conf, &d, S.events_topic, err, sizeof(err))) != NULL) {
            ndd_supervise_run(s);
            rc = 0;
        } else if (!s) {
            fprintf(stderr, "ndd: %s\n", err);
        }
        ndd_supervise_free(s);
    }
    daemon_free(&d);
    ndd_config_free(&ndd_conf);
    return rc;
}
