#include "transport_url.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *transport_kind_name(transport_kind_t kind)
{
    switch (kind) {
    case TRANSPORT_HTTP2:
        return "http2";
    case TRANSPORT_TCP:
        return "tcp";
    case TRANSPORT_TLS:
        return "tls";
    }
    return "?";
}

int transport_kind_parse(const char *name, transport_kind_t *out)
{
    if (!name)
        return -1;
    if (!strcmp(name, "http2"))
        *out = TRANSPORT_HTTP2;
    else if (!strcmp(name, "tcp"))
        *out = TRANSPORT_TCP;
    else if (!strcmp(name, "tls"))
        *out = TRANSPORT_TLS;
    else
        return -1;
    return 0;
}

/* The host part at h: a bracketed IPv6 literal or [A-Za-z0-9._-]+. Returns where it ends. */
static const char *transport_url_host(const char *url, const char *h, transport_url_t *out,
                                      char *err, size_t errlen)
{
    const char *hs = h, *he;
    const char *rest;
    if (*h == '[') {
        he = strchr(h, ']');
        if (!he || he == h + 1) {
            snprintf(err, errlen, "\"%s\": unterminated or empty IPv6 literal", url);
            return NULL;
        }
        for (const char *q = h + 1; q < he; q++)
            if (!isxdigit((unsigned char)*q) && *q != ':' && *q != '.') {
                snprintf(err, errlen, "\"%s\": bad IPv6 literal", url);
                return NULL;
            }
        hs = h + 1;
        rest = he + 1;
    } else {
        he = h;
        while (isalnum((unsigned char)*he) || (*he && strchr(".-_", *he)))
            he++;
        rest = he;
    }
    size_t hl = (size_t)(he - hs);
    if (hl == 0) {
        snprintf(err, errlen, "\"%s\": missing host", url);
        return NULL;
    }
    if (hl >= sizeof out->host) {
        snprintf(err, errlen, "\"%s\": host longer than %zu bytes", url, sizeof out->host - 1);
        return NULL;
    }
    memcpy(out->host, hs, hl);
    return rest;
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
    const char *def_port = NULL;
    if (sl == 4 && !strncmp(url, "http", 4)) {
        out->kind = TRANSPORT_HTTP2;
        def_port = "80";
    } else if (sl == 5 && !strncmp(url, "https", 5)) {
        out->kind = TRANSPORT_HTTP2;
        out->tls = true;
        def_port = "443";
    } else if (sl == 3 && !strncmp(url, "tcp", 3)) {
        out->kind = TRANSPORT_TCP;
    } else if (sl == 3 && !strncmp(url, "tls", 3)) {
        out->kind = TRANSPORT_TLS;
        out->tls = true;
    } else {
        snprintf(err, errlen, "\"%s\": unknown scheme \"%.*s\" (http, https, tcp, tls)", url,
                 (int)sl, url);
        return -1;
    }
    for (const char *q = url; *q; q++)
        if ((unsigned char)*q <= 0x20 || *q == 0x7f) {
            snprintf(err, errlen, "URL contains a space or control character");
            return -1;
        }
    const char *auth = sep + 3;
    if (memchr(auth, '@', strcspn(auth, "/"))) {
        snprintf(err, errlen, "user info in URLs is refused; put credentials in files");
        return -1;
    }
    const char *rest = transport_url_host(url, sep + 3, out, err, errlen);
    if (!rest)
        return -1;
    if (*rest == ':') {
        rest++;
        size_t pl = strspn(rest, "0123456789");
        if (pl == 0 || pl >= sizeof out->port || atoi(rest) <= 0 || atoi(rest) > 65535) {
            snprintf(err, errlen, "\"%s\": port must be 1..65535", url);
            return -1;
        }
        memcpy(out->port, rest, pl);
        rest += pl;
    } else if (def_port) {
        strcpy(out->port, def_port);
    } else {
        snprintf(err, errlen, "\"%s\": a port is required for %s", url,
                 transport_kind_name(out->kind));
        return -1;
    }
    if (*rest && *rest != '/') {
        snprintf(err, errlen, "\"%s\": unexpected character '%c' after host", url, *rest);
        return -1;
    }
    if (out->kind == TRANSPORT_HTTP2) {
        const char *p = *rest ? rest : "/";
        if (strlen(p) >= sizeof out->path) {
            snprintf(err, errlen, "\"%s\": path longer than %zu bytes", url, sizeof out->path - 1);
            return -1;
        }
        strcpy(out->path, p);
    } else if (*rest && strcmp(rest, "/")) {
        snprintf(err, errlen, "\"%s\": a %s endpoint has no path", url,
                 transport_kind_name(out->kind));
        return -1;
    }
    return 0;
}
