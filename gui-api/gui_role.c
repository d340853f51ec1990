/* The gui-api role: the web console's server (docs/console.md), as ndd-gui-api runs it alone
 * (main.c) and ndd beside the other roles.
 *
 * The spec table, the settings check, then the run (gui_server.c serves the console, the
 * login, the proxy to ndd-admin and the live figures until a stop). The console has its own
 * listener (own_http): its port, its TLS and its session cookies stay the console's in ndd. */
#include <stdio.h>

#include "daemon_role.h"
#include "gui.h"

static gui_settings_t gui_standalone;
#define AT(f) CONFIG_AT(gui_settings_t, f), 0, 0
#define IN(f, lo, hi) CONFIG_AT(gui_settings_t, f), lo, hi
/* clang-format off */
static const config_spec_t gui_specs[] = {
    {"admin-url", CONFIG_STRING, "http://127.0.0.1:9100", "ndd-admin's REST API "
     "(http://host:port, or https:// to a TLS admin)", 0, AT(admin_url)},
    {"admin-tls-ca", CONFIG_STRING, NULL, "PEM trust anchors for an https:// admin-url "
     "(default: the system's)", 0, AT(admin_tls_ca)},
    {"admin-tls-cert", CONFIG_STRING, NULL, "PEM client certificate for an admin that requires "
     "one (its tls-client-auth)", 0, AT(admin_tls_cert)},
    {"admin-tls-key", CONFIG_STRING, NULL, "PEM private key of --admin-tls-cert", 0,
     AT(admin_tls_key)},
    {"web-root", CONFIG_STRING, NULL, "directory of the built console (BUILD/gui-api/console)", 0,
     AT(web_root)},
    {"tls-cert", CONFIG_STRING, NULL, "PEM certificate: serve HTTPS (session cookies get Secure)",
     0, AT(tls_cert)},
    {"tls-key", CONFIG_STRING, NULL, "PEM private key of --tls-cert", 0, AT(tls_key)},
    {"session-ttl", CONFIG_DURATION_MS, "8h", "how long a login lasts", 0,
     IN(session_ttl_ms, 60000, 7 * 86400000LL)},
    {"max-sessions", CONFIG_INT, "1024", "sessions at once (beyond: the oldest ends)", 0,
     IN(max_sessions, 1, 1000000)},
    {"poll-interval", CONFIG_DURATION_MS, "1s", "how often the live figures are sampled", 0,
     IN(poll_ms, 200, 60000)},
    {"history-points", CONFIG_INT, "300", "samples kept per live series", 0,
     IN(history_points, 10, 100000)},
    {"metrics-urls", CONFIG_STRING, "", "workers' /metrics URLs, comma separated "
     "(http://host:port/metrics), for rates and latency", 0, AT(metrics_urls)},
    {"token-file", CONFIG_STRING, NULL, "file with a viewer token the live figures read /status "
     "with (default: a logged-in user's)", 0, AT(token_file)},
    {"upstream-timeout", CONFIG_DURATION_MS, "5s", "deadline of a request to ndd-admin or a "
     "worker", 0, IN(upstream_timeout_ms, 100, 120000)},
    DAEMON_SPECS_COMMON(gui_settings_t, "9108"),
};
/* clang-format on */

static int gui_check(daemon_t *d, FILE *out, char *err, size_t errlen)
{
    const gui_settings_t *S = d->def->settings;
    gui_url_t u;
    if (!S->web_root || !*S->web_root)
        snprintf(err, errlen, "web-root: set the directory of the built console");
    else if (S->common.http_port < 0)
        snprintf(err, errlen, "http.port: the console needs a port (0..65535)");
    else if (!S->tls_cert != !S->tls_key)
        snprintf(err, errlen, "tls-key: --tls-cert and --tls-key go together");
    else if (!S->admin_tls_cert != !S->admin_tls_key)
        snprintf(err, errlen, "admin-tls-key: --admin-tls-cert and --admin-tls-key go together");
    else if (gui_url_parse(S->admin_url, &u, err, errlen) != 0)
        return -1;
    else if (!u.https && (S->admin_tls_ca || S->admin_tls_cert))
        snprintf(err, errlen, "admin-tls-%s: set for an admin-url that is not https://",
                 S->admin_tls_ca ? "ca" : "cert");
    else {
        if (out)
            fprintf(out, "console on %s:%lld (%s), ndd-admin at %s, files from %s\n",
                    S->common.http_listen, (long long)S->common.http_port,
                    S->tls_cert ? "HTTPS" : "HTTP", S->admin_url, S->web_root);
        return 0;
    }
    return -1;
}

static const daemon_def_t gui_def = {.name = "ndd-gui-api",
                                     .specs = gui_specs,
                                     .n_specs = sizeof(gui_specs) / sizeof(gui_specs[0]),
                                     .settings = &gui_standalone,
                                     .check = gui_check,
                                     .kafka_optional = true,
                                     /* ready once the console serves: it needs no Kafka */
                                     .ready_needs = DAEMON_NEEDS(DAEMON_COND_CONFIG)};

const daemon_role_t gui_role = {.name = "gui-api",
                                .def = &gui_def,
                                .settings_size = sizeof(gui_settings_t),
                                .arena_max = 0,
                                .own_http = true,
                                .run = gui_server_run};
