/* ndd: the whole director in one process, for a small site (docs/ndd.md).
 *
 *   ndd --config ndd.json [--http.port 9190] [--check-config] [--version]
 *
 * The file lists the roles and their settings, with each daemon's own keys under its role
 * (ndd_config.h); ndd reads it, keeps the top-level settings for itself (its one /metrics
 * /healthz /readyz, the log, the broker list), checks every role as its daemon would, and
 * runs each on its own threads (ndd_supervise.c) until SIGTERM/SIGINT; SIGHUP reloads every
 * role that reloads. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter_control.h"
#include "agg_setup.h"
#include "corr_setup.h"
#include "daemon_role.h"
#include "ingress.h"
#include "ndd_config.h"
#include "ndd_supervise.h"

typedef struct ndd_settings {
    daemon_settings_t common;
} ndd_settings_t;

static ndd_settings_t S;
static ndd_config_t ndd_conf;

/* clang-format off */
static const config_spec_t ndd_specs[] = {
    DAEMON_SPECS_COMMON(ndd_settings_t, "9190"),
};
/* clang-format on */

static const daemon_role_t *const ndd_known_roles[] = {&agg_role, &corr_role, &adapter_role,
                                                       &ingress_role};
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

/* The file ndd was given: --config FILE, --config=FILE or NDD_CONFIG. NULL when none. */
static const char *ndd_config_path(int argc, char **argv)
{
    const char *path = getenv("NDD_CONFIG");
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            path = argv[i + 1];
        else if (strncmp(argv[i], "--config=", 9) == 0)
            path = argv[i] + 9;
    }
    return path;
}

static char *ndd_read_file(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "--config %s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 20;
    char *buf = malloc(cap + 1);
    size_t n = buf ? fread(buf, 1, cap + 1, f) : 0;
    bool bad = !buf || ferror(f) || n > cap;
    fclose(f);
    if (bad) {
        snprintf(err, errlen, "--config %s: cannot read it (or larger than 1 MiB)", path);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* argv without --config and its value (the file is read here, not by the config loader). */
static int ndd_strip_config(int argc, char **argv, char **out)
{
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (i > 0 && strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
            i++;
            continue;
        }
        if (i > 0 && strncmp(argv[i], "--config=", 9) == 0)
            continue;
        out[n++] = argv[i];
    }
    out[n] = NULL;
    return n;
}

static bool ndd_help_or_version(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0 ||
            strcmp(argv[i], "--version") == 0)
            return true;
    return false;
}

int main(int argc, char **argv)
{
    /* One arena: every role's librdkafka threads would each keep their own free memory. */
    daemon_heap_setup(true);
    char err[1024], origin[600];
    const char *path = ndd_config_path(argc, argv);
    if (!path && !ndd_help_or_version(argc, argv)) {
        fprintf(stderr, "ndd: --config FILE (or NDD_CONFIG) names the file of roles "
                        "(docs/ndd.md)\n");
        return 2;
    }
    if (path) {
        size_t len = 0;
        char *text = ndd_read_file(path, &len, err, sizeof(err));
        snprintf(origin, sizeof origin, "file %s", path);
        if (!text ||
            ndd_config_parse(&ndd_conf, &ndd_roles, text, len, origin, err, sizeof(err)) != 0) {
            fprintf(stderr, "ndd: %s\n", err);
            free(text);
            return 2;
        }
        free(text);
    }
    char **args = calloc((size_t)argc + 1, sizeof(*args));
    if (!args)
        return 1;
    int nargs = ndd_strip_config(argc, argv, args);
    /* The environment is unset for this: NDD_CONFIG is ndd's, not the loader's. */
    unsetenv("NDD_CONFIG");
    daemon_t d;
    int rc = daemon_init_leaves(&d, &ndd_def, nargs, args, ndd_conf.own, ndd_conf.n_own, origin);
    if (rc == DAEMON_CONTINUE) {
        rc = 1;
        ndd_supervisor_t *s = NULL;
        if (daemon_start(&d, true) == 0 &&
            (s = ndd_supervise_start(&ndd_conf, &d, err, sizeof(err))) != NULL) {
            ndd_supervise_run(s);
            rc = 0;
        } else if (!s) {
            fprintf(stderr, "ndd: %s\n", err);
        }
        ndd_supervise_free(s);
    }
    daemon_free(&d);
    free(args);
    ndd_config_free(&ndd_conf);
    return rc;
}
