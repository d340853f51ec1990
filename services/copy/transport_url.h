/* Endpoint URLs: what a feed's configuration names (services/copy/feed_config.h) and what the
 * adapter's transports (adapter/transport.h) connect to. The schemes and URL shapes come from
 * the transport table (transport_desc.h); libevent's evhttp_uri_parse does the RFC 3986
 * syntax, NDD's policy is checked on top. Here, not in the adapter, so the admin refuses
 * exactly the URLs the adapter would refuse. */
#ifndef NDD_SERVICES_TRANSPORT_URL_H
#define NDD_SERVICES_TRANSPORT_URL_H

#include <stdbool.h>
#include <stddef.h>

#include "transport_desc.h"

/* ---- types ---- */

#define TRANSPORT_MAX_HEADERS 16 /* configured HTTP headers of a feed, plain and from files */

/* A parsed endpoint URL. */
typedef struct transport_url {
    const transport_desc_t *kind; /* the transport owning the scheme */
    bool tls;
    char host[256]; /* empty for a TRANSPORT_URL_LOCAL transport */
    char port[8];   /* empty when the transport has no port (TRANSPORT_URL_LOCAL) */
    char path[512]; /* "/" when absent for TRANSPORT_PATH_OPTIONAL; query included */
} transport_url_t;

/* ---- functions ---- */

/* Parses scheme://host[:port][/path] for the schemes of the transport table, e.g.
 * http://h[:p][/path], https://…, tcp://h:p, tls://h:p (host a DNS name, an IPv4 or a
 * bracketed IPv6 literal), or scheme:///path for a transport without host. No user info
 * (credentials belong in files, never in URLs stored in the admin's database), no fragment,
 * no spaces or control characters. Returns 0, or -1 with the reason (one line, naming the URL
 * where that helps) in err. */
int transport_url_parse(const char *url, transport_url_t *out, char *err, size_t errlen);

#endif
