/* Endpoint URL parsing (transport_url.h): RFC 3986 syntax by libevent's evhttp_uri_parse, then
 * NDD's policy, in the order a reader fixes a URL: scheme known, no user info, host a DNS name
 * or an IP literal, port 1..65535 or the scheme's default, path as the transport allows. */
#include "transport_url.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>

/* libevent refused the URL: say why in NDD's words where the cause is one of the policy
 * checks (a port or an IPv6 literal libevent cannot even parse), else name the syntax. */
static int transport_url_syntax(const char *url, const char *auth, char *err, size_t errlen)
{
    size_t al = strcspn(auth, "/?#");
    const char *close = memchr(auth, ']', al);
    if (*auth == '[' && (!close || close == auth + 1)) {
        snprintf(err, errlen, "\"%s\": unterminated or empty IPv6 literal", url);
        return -1;
    }
    const char *after = *auth == '[' ? close + 1 : auth;
    const char *colon = memchr(after, ':', (size_t)(auth + al - after));
    if (*auth == '[' && after < auth + al && *after != ':') {
        snprintf(err, errlen, "\"%s\": unexpected character '%c' after host", url, *after);
        return -1;
    }
    if (*auth == '[' && !colon) {
        snprintf(err, errlen, "\"%s\": bad IPv6 literal", url);
        return -1;
    }
    if (colon) {
        snprintf(err, errlen, "\"%s\": port must be 1..65535", url);
        return -1;
    }
    snprintf(err, errlen, "\"%s\" is not a valid URL (RFC 3986)", url);
    return -1;
}

/* The host libevent found: a bracketed IPv6 literal (libevent checked its syntax; IPvFuture
 * is refused here) or a DNS name of [A-Za-z0-9._-]. */
static int transport_url_host(const char *url, const char *h, transport_url_t *out, char *err,
                              size_t errlen)
{
    size_t hl = strlen(h);
    if (*h == '[') {
        for (const char *q = h + 1; q < h + hl - 1; q++)
            if (!isxdigit((unsigned char)*q) && *q != ':' && *q != '.') {
                snprintf(err, errlen, "\"%s\": bad IPv6 literal", url);
                return -1;
            }
        h++;
        hl -= 2;
    } else {
        for (const char *q = h; *q; q++)
            if (!isalnum((unsigned char)*q) && !strchr(".-_", *q)) {
                snprintf(err, errlen, "\"%s\": unexpected character '%c' after host", url, *q);
                return -1;
            }
    }
    if (hl == 0) {
        snprintf(err, errlen, "\"%s\": missing host", url);
        return -1;
    }
    if (hl >= sizeof out->host) {
        snprintf(err, errlen, "\"%s\": host longer than %zu bytes", url, sizeof out->host - 1);
        return -1;
    }
    memcpy(out->host, h, hl);
    out->host[hl] = 0;
    return 0;
}

/* The port: libevent gives -1 both for none and for an empty one ("h:/x"); the text tells. */
static int transport_url_port(const char *url, const char *auth, int port,
                              const transport_scheme_t *sc, const transport_desc_t *d,
                              transport_url_t *out, char *err, size_t errlen)
{
    size_t al = strcspn(auth, "/?#");
    if (port == 0 || port > 65535 || (port < 0 && al > 0 && auth[al - 1] == ':')) {
        snprintf(err, errlen, "\"%s\": port must be 1..65535", url);
        return -1;
    }
    if (port > 0)
        snprintf(out->port, sizeof out->port, "%u", (unsigned)(uint16_t)port);
    else if (sc->default_port)
        snprintf(out->port, sizeof out->port, "%s", sc->default_port);
    else {
        snprintf(err, errlen, "\"%s\": a port is required for %s", url, d->name);
        return -1;
    }
    return 0;
}

static int transport_url_path(const char *url, const struct evhttp_uri *u,
                              const transport_desc_t *d, transport_url_t *out, char *err,
                              size_t errlen)
{
    const char *path = evhttp_uri_get_path(u), *query = evhttp_uri_get_query(u);
    if (evhttp_uri_get_fragment(u)) {
        snprintf(err, errlen, "\"%s\": a fragment (#…) has no meaning in an endpoint URL", url);
        return -1;
    }
    if (!path)
        path = "";
    if (d->url_path == TRANSPORT_PATH_NONE) {
        if ((*path && strcmp(path, "/")) || query) {
            snprintf(err, errlen, "\"%s\": a %s endpoint has no path", url, d->name);
            return -1;
        }
        return 0;
    }
    if (d->url_path == TRANSPORT_PATH_REQUIRED && (!*path || !strcmp(path, "/"))) {
        snprintf(err, errlen, "\"%s\": a %s endpoint needs a path (%s:///dir)", url, d->name,
                 d->schemes[0].name);
        return -1;
    }
    int n = snprintf(out->path, sizeof out->path, "%s%s%s", *path ? path : "/", query ? "?" : "",
                     query ? query : "");
    if (n < 0 || (size_t)n >= sizeof out->path) {
        snprintf(err, errlen, "\"%s\": path longer than %zu bytes", url, sizeof out->path - 1);
        return -1;
    }
    return 0;
}

int transport_url_parse(const char *url, transport_url_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *sep = url ? strstr(url, "://") : NULL;
    if (!sep) {
        snprintf(err, errlen, "\"%s\" is not a URL (scheme://host:port expected)", url ? url : "");
        return -1;
    }
    size_t sl = (size_t)(sep - url);
    const transport_scheme_t *sc;
    const transport_desc_t *d = transport_find_scheme(url, sl, &sc);
    if (!d) {
        char all[128];
        transport_schemes(NULL, all, sizeof all);
        snprintf(err, errlen, "\"%s\": unknown scheme \"%.*s\" (%s)", url, (int)sl, url, all);
        return -1;
    }
    out->kind = d;
    out->tls = sc->tls;
    for (const char *q = url; *q; q++)
        if ((unsigned char)*q <= 0x20 || *q == 0x7f) {
            snprintf(err, errlen, "URL contains a space or control character");
            return -1;
        }
    const char *auth = sep + 3;
    if (memchr(auth, '@', strcspn(auth, "/?#"))) {
        snprintf(err, errlen, "user info in URLs is refused; put credentials in files");
        return -1;
    }
    struct evhttp_uri *u = evhttp_uri_parse(url);
    if (!u)
        return transport_url_syntax(url, auth, err, errlen);
    int rc = -1;
    const char *host = evhttp_uri_get_host(u);
    if (d->url_form == TRANSPORT_URL_LOCAL) {
        if (host && *host)
            snprintf(err, errlen, "\"%s\": a %s endpoint has no host (%s:///path)", url, d->name,
                     sc->name);
        else
            rc = transport_url_path(url, u, d, out, err, errlen);
    } else if (transport_url_host(url, host ? host : "", out, err, errlen) == 0 &&
               transport_url_port(url, auth, evhttp_uri_get_port(u), sc, d, out, err, errlen) ==
                   0) {
        rc = transport_url_path(url, u, d, out, err, errlen);
    }
    evhttp_uri_free(u);
    return rc;
}
