/* The ingress role: HTTP/2 ingest of message copies, VES REST and HV-VES, written to Kafka
 * with nothing lost (docs/ingress.md), as ndd-ingress runs it alone (main.c) and ndd beside
 * the others. The spec table (the listener config map), then ingress_run's event loop until
 * a stop. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "daemon_role.h"
#include "ingress.h"

static ingress_settings_t ingress_standalone;
#define AT(f) CONFIG_AT(ingress_settings_t, f), 0, 0
#define IN(f, lo, hi) CONFIG_AT(ingress_settings_t, f), lo, hi
/* clang-format off */
static const config_spec_t ingress_specs[] = {
    {"listen", CONFIG_STRING, "127.0.0.1", "address of every ingest listener", 0, AT(listen)},
    {"ves.port", CONFIG_INT, "-1", "VES REST over HTTP/1.1 (-1: off)", 0, IN(ves_port, -1, 65535)},
    {"ves.tls", CONFIG_BOOL, "false", "VES over HTTPS", 0, AT(ves_tls)},
    {"ves.user", CONFIG_STRING, "", "VES basic auth user (empty: no basic auth)", 0, AT(ves_user)},
    {"ves.password", CONFIG_STRING, "", "VES basic auth password", CONFIG_F_SECRET,
     AT(ves_password)},
    {"ves.routes", CONFIG_LIST, "", "domain=topic for VES events", 0, AT(ves_routes)},
    {"ves.topic-prefix", CONFIG_STRING, "ves.", "topic of an unlisted VES domain: prefix + "
     "domain (empty: unlisted domains refused)", 0, AT(ves_topic_prefix)},
    {"tls.cert-file", CONFIG_STRING, NULL, "server certificate (PEM)", 0, AT(tls_cert)},
    {"tls.key-file", CONFIG_STRING, NULL, "server key (PEM)", 0, AT(tls_key)},
    {"tls.ca-file", CONFIG_STRING, NULL, "CA of client certificates (PEM)", 0, AT(tls_ca)},
    {"tls.client-cert", CONFIG_BOOL, "false", "require client certificates (mTLS)", 0,
     AT(tls_client_cert)},
    {"copy.topic-prefix", CONFIG_STRING, "", "topic of a copy: prefix + its NF type", 0,
     AT(copy_topic_prefix)},
    {"max-body", CONFIG_BYTES, "1MiB", "largest request body (bigger: 413)", 0,
     IN(max_body, 1024, 64 << 20)},
    {"max-in-flight", CONFIG_INT, "50000", "records awaiting Kafka's acknowledgement (more: "
     "503, HV-VES reading paused)", 0, IN(max_in_flight, 1, 10000000)},
    {"produce-timeout", CONFIG_DURATION_MS, "5s", "Kafka silent this long (the oldest record "
     "unacknowledged): HTTP requests get 503 without being produced", 0,
     IN(produce_timeout_ms, 100, 300000)},
    {"max-in-flight-bytes", CONFIG_BYTES, "256MiB", "bytes of the records awaiting Kafka's "
     "acknowledgement (more: 503, HV-VES and TCP reading paused)", 0,
     IN(max_in_flight_bytes, 1 << 20, (int64_t)16 << 30)},
    {"idle-timeout", CONFIG_DURATION_MS, "60s", "a VES, HTTP/2, HV-VES or TCP connection with no byte "
     "moved this long (a client that stops reading included) is closed", 0,
     IN(idle_timeout_ms, 1000, 3600000)},
    {"frame-timeout", CONFIG_DURATION_MS, "30s", "HV-VES and TCP copies: a frame must be "
     "complete this long after its first byte (else the connection is closed); VES HTTP/1.1: a "
     "request's header, and its body this long plus 1 s per 64 KiB", 0,
     IN(frame_timeout_ms, 500, 3600000)},
    {"max-buffered", CONFIG_BYTES, "64MiB", "HV-VES and TCP copies, each listener: input its "
     "connections may hold together (more: the one stalled longest inside a frame is closed, "
     "else reading pauses)", 0, IN(max_buffered, 8 << 20, (int64_t)16 << 30)},
    {"ves.cert-basic-auth", CONFIG_BOOL, "false", "VES over HTTPS: a client certificate is "
     "asked for, not required; a verified one or basic auth lets a client in", 0,
     AT(ves_cert_basic_auth)},
};
static const config_spec_t ingress_common_specs[] = {
    DAEMON_SPECS_COMMON(ingress_settings_t, "9105"),
};
/* clang-format on */
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
#define INGRESS_SPECS_MAX (N_OF(ingress_specs) + N_OF(ingress_common_specs) + 64)

/* The map: the rows above, then each listener's own (their `at` moved to the listener's part
 * of the settings, ingress_settings_t.own), then the common ones. Built before main: the
 * listener table is known at link time (a test links its own), the map's users read
 * ingress_def from the start. */
static config_spec_t ingress_all_specs[INGRESS_SPECS_MAX];
static daemon_def_t ingress_def = {.name = "ndd-ingress",
                                   .specs = ingress_all_specs,
                                   .settings = &ingress_standalone,
                                   .check = ingress_check};

static void ingress_specs_add(const config_spec_t *rows, size_t n, size_t base)
{
    if (ingress_def.n_specs + n > INGRESS_SPECS_MAX) {
        fprintf(stderr, "ndd-ingress: more than %zu settings: raise INGRESS_SPECS_MAX\n",
                (size_t)INGRESS_SPECS_MAX);
        abort(); /* a programming error, caught by the first test run */
    }
    for (size_t i = 0; i < n; i++) {
        config_spec_t r = rows[i];
        if (r.at)
            r.at += base;
        ingress_all_specs[ingress_def.n_specs++] = r;
    }
}

__attribute__((constructor)) static void ingress_specs_build(void)
{
    ingress_specs_add(ingress_specs, N_OF(ingress_specs), 0);
    for (size_t i = 0; i < INGRESS_MAX_LISTENERS && ingress_listeners[i]; i++)
        ingress_specs_add(ingress_listeners[i]->specs, ingress_listeners[i]->n_specs,
                          offsetof(ingress_settings_t, own) + i * sizeof ingress_standalone.own[0]);
    ingress_specs_add(ingress_common_specs, N_OF(ingress_common_specs), 0);
}

static int ingress_role_run(daemon_t *d)
{
    if (daemon_start(d, false) != 0)
        return 1;
    return ingress_run(d, d->def->settings);
}

const daemon_role_t ingress_role = {.name = "ingress",
                                    .def = &ingress_def,
                                    .settings_size = sizeof(ingress_settings_t),
                                    .arena_max = 1,
                                    .run = ingress_role_run};
