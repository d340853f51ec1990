/* Transport kinds and endpoint URLs: what a feed's configuration names
 * (services/copy/feed_config.h) and what the adapter's transports (adapter/transport.h) connect to.
 * Here, not in the adapter, so the admin refuses exactly the URLs the adapter would refuse. */
#ifndef NDD_SERVICES_TRANSPORT_URL_H
#define NDD_SERVICES_TRANSPORT_URL_H

#include <stdbool.h>
#include <stddef.h>

/* ---- types ---- */

typedef enum transport_kind {
    TRANSPORT_HTTP2 = 0, /* "http2": http:// (h2c prior knowledge) or https:// (TLS + ALPN h2) */
    TRANSPORT_TCP,       /* "tcp":   tcp://host:port, binary frames */
    TRANSPORT_TLS,       /* "tls":   tls://host:port, binary frames over TLS */
} transport_kind_t;

#define TRANSPORT_MAX_HEADERS 16 /* configured HTTP headers of a feed, plain and from files */

/* A parsed endpoint URL. */
typedef struct transport_url {
    transport_kind_t kind; /* from the scheme: http/https -> HTTP2, tcp -> TCP, tls -> TLS */
    bool tls;
    char host[256];
    char port[8];
    char path[512]; /* HTTP only; "/" when absent */
} transport_url_t;

/* ---- functions ---- */

const char *transport_kind_name(transport_kind_t kind);
/* "http2" | "tcp" | "tls" -> kind; -1 when unknown. */
int transport_kind_parse(const char *name, transport_kind_t *out);

/* Parses http://h[:p][/path], https://…, tcp://h:p, tls://h:p (host a DNS name, an IPv4 or a
 * bracketed IPv6 literal). No user info (credentials belong in files, never in URLs stored in
 * the admin's database), no spaces or control characters. Returns 0, or -1 with the reason
 * (one line, naming the URL where that helps) in err. */
int transport_url_parse(const char *url, transport_url_t *out, char *err, size_t errlen);

#endif
