/* What a daemon says about itself: --version (NDD's version and git revision, the versions of
 * the libraries it runs on) and the ndd_build_info gauge every daemon exports. NDD's version
 * is defined once, in the top CMakeLists.txt's project(), and reaches here through the
 * generated ndd_version.h. nghttp2 is not linked by every daemon: a daemon that links it
 * prints it from its def->version hook. */
#include <event2/event.h>
#include <librdkafka/rdkafka.h>
#include <openssl/crypto.h>

#include "daemon-int.h"
#include "daemon.h"
#include "ndd_version.h"

const char *daemon_version(void)
{
    return NDD_VERSION;
}

void daemon_print_version(const daemon_t *d, FILE *out)
{
    fprintf(out, "%s %s (revision %s)\n", d->name, NDD_VERSION, NDD_GIT_REVISION);
    fprintf(out, "librdkafka %s\n", rd_kafka_version_str());
    fprintf(out, "OpenSSL %s\n", OpenSSL_version(OPENSSL_VERSION_STRING));
    fprintf(out, "libevent %s\n", event_get_version());
    if (d->def->version)
        d->def->version(out);
}

void daemon_build_info(daemon_t *d)
{
    metrics_family_t *f =
        metrics_gauge_new(d->metrics, "ndd_build_info",
                          "Always 1: the NDD version, git revision and daemon of this process",
                          "version,revision,daemon");
    metrics_gauge_t *g = f ? metrics_gauge_labels(f, NDD_VERSION, NDD_GIT_REVISION, d->name) : NULL;
    if (g)
        metrics_gauge_set(g, 1);
}
