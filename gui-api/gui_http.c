/* The small blocking HTTP/1.1 client of ndd-gui-api: one request per connection
 * (Connection: close), a deadline for the whole exchange, the reply bounded by the caller's
 * buffer. The admin and the workers' /metrics are on the operator's network, usually the
 * same host, so a blocking exchange of a few milliseconds is simpler than an asynchronous
 * client and bounded by upstream-timeout. Chunked replies are decoded (evhttp sends them).
 * https:// upstreams (a TLS admin) go through one client TLS context (services/base/tls:
 * the peer verified against admin-tls-ca and its name, and the client certificate an admin
 * with tls-client-auth requires). gui_http_resolve lists every address of a host and
 * gui_http_request_at talks to one of them, still naming the URL's host (Host, SNI, the
 * certificate's name): how the live figures reach every pod behind one Service name. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gui.h"
#include "tls.h"

/* One context for the process (ndd runs one gui-api role): made by gui_server_run before
 * any request or the poller thread, then only read (SSL_new is thread-safe on it). */
static SSL_CTX *gui_tls_ctx;

int gui_http_tls_init(const gui_settings_t *s, char *err, size_t errlen)
{
    tls_config_t tc = {
        .ca_file = s->admin_tls_ca, .cert_file = s->admin_tls_cert, .key_file = s->admin_tls_key};
    if (gui_tls_ctx)
        return 0;
    gui_tls_ctx = tls_client_ctx_new(&tc, err, errlen);
    return gui_tls_ctx ? 0 : -1;
}

void gui_http_tls_free(void)
{
    tls_ctx_free(gui_tls_ctx);
    gui_tls_ctx = NULL;
}

int gui_url_parse(const char *url, gui_url_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    out->https = strncmp(url, "https://", 8) == 0;
    if (!out->https && strncmp(url, "http://", 7) != 0) {
        snprintf(err, errlen, "%s: only http:// and https:// URLs are supported", url);
        return -1;
    }
    const char *h = url + (out->https ? 8 : 7), *slash = strchr(h, '/');
    size_t hl = slash ? (size_t)(slash - h) : strlen(h);
    const char *colon = memchr(h, ':', hl);
    if (h[0] == '[') {
        const char *rb = memchr(h, ']', hl);
        colon = rb && rb + 1 < h + hl && rb[1] == ':' ? rb + 1 : NULL;
        if (!rb || rb - h - 1 >= (long)sizeof(out->host)) {
            snprintf(err, errlen, "%s: bad IPv6 host", url);
            return -1;
        }
        memcpy(out->host, h + 1, (size_t)(rb - h - 1));
    } else {
        size_t n = colon ? (size_t)(colon - h) : hl;
        if (n == 0 || n >= sizeof(out->host)) {
            snprintf(err, errlen, "%s: bad host", url);
            return -1;
        }
        memcpy(out->host, h, n);
    }
    if (colon) {
        size_t n = (size_t)(h + hl - colon - 1);
        if (n == 0 || n >= sizeof(out->port) || strspn(colon + 1, "0123456789") < n) {
            snprintf(err, errlen, "%s: bad port", url);
            return -1;
        }
        memcpy(out->port, colon + 1, n);
    } else {
        strcpy(out->port, out->https ? "443" : "80");
    }
    if (slash && strlen(slash) < sizeof(out->path))
        strcpy(out->path, slash);
    else if (slash) {
        snprintf(err, errlen, "%s: path too long", url);
        return -1;
    }
    return 0;
}

/* "127.0.0.2:9102", "[::1]:9102": how logs and errors name one address of an upstream. */
void gui_addr_format(const gui_addr_t *a, char *out, size_t outlen)
{
    char h[INET6_ADDRSTRLEN] = "?";
    const struct sockaddr *sa = (const struct sockaddr *)&a->sa;
    int port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, h, sizeof(h));
        port = ntohs(in->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, h, sizeof(h));
        port = ntohs(in6->sin6_port);
    }
    snprintf(out, outlen, sa->sa_family == AF_INET6 ? "[%s]:%d" : "%s:%d", h, port);
}

int gui_http_resolve(const gui_url_t *u, gui_addr_t *out, size_t max, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
    int rc = getaddrinfo(u->host, u->port, &hints, &ai);
    if (rc != 0) {
        snprintf(err, errlen, "%s:%s: %s", u->host, u->port, gai_strerror(rc));
        return -1;
    }
    /* Distinct addresses only: a hosts file or a resolver may list one twice, and a process
     * scraped twice would count twice. Past max, the rest are counted, not kept. */
    size_t n = 0, total = 0;
    for (struct addrinfo *a = ai; a; a = a->ai_next) {
        if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) ||
            a->ai_addrlen > sizeof(out[0].sa))
            continue;
        bool dup = false;
        for (size_t i = 0; i < n && !dup; i++)
            dup = out[i].len == a->ai_addrlen && memcmp(&out[i].sa, a->ai_addr, a->ai_addrlen) == 0;
        if (dup)
            continue;
        if (n < max) {
            memset(&out[n], 0, sizeof(out[n]));
            memcpy(&out[n].sa, a->ai_addr, a->ai_addrlen);
            out[n++].len = (socklen_t)a->ai_addrlen;
        }
        total++;
    }
    freeaddrinfo(ai);
    if (total == 0) {
        snprintf(err, errlen, "%s:%s: no IPv4 or IPv6 address", u->host, u->port);
        return -1;
    }
    return total > INT32_MAX ? INT32_MAX : (int)total;
}

size_t gui_addrs_one_family(gui_addr_t *a, size_t n)
{
    size_t v4 = 0;
    for (size_t i = 0; i < n; i++)
        if (a[i].sa.ss_family == AF_INET)
            a[v4++] = a[i];
    return v4 ? v4 : n;
}

/* A connected socket to at, or else to the first address of u's host that accepts. */
static int gui_http_connect(const gui_url_t *u, const gui_addr_t *at, int timeout_ms, char *err,
                            size_t errlen)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL, one = {0};
    char where[340];
    if (at) {
        char a[64];
        gui_addr_format(at, a, sizeof(a));
        snprintf(where, sizeof(where), "%s:%s (%s)", u->host, u->port, a);
        one = (struct addrinfo){.ai_family = at->sa.ss_family,
                                .ai_socktype = SOCK_STREAM,
                                .ai_addr = (struct sockaddr *)&at->sa,
                                .ai_addrlen = at->len};
    } else {
        snprintf(where, sizeof(where), "%s:%s", u->host, u->port);
        int rc = getaddrinfo(u->host, u->port, &hints, &ai);
        if (rc != 0) {
            snprintf(err, errlen, "%s: %s", where, gai_strerror(rc));
            return -1;
        }
    }
    int fd = -1;
    for (struct addrinfo *a = at ? &one : ai; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            snprintf(err, errlen, "%s: socket: %s", where, strerror(errno));
            continue;
        }
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
            snprintf(err, errlen, "%s: connect: %s", where, strerror(errno));
            close(fd);
            fd = -1;
            continue;
        }
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        int soerr = 0;
        socklen_t sl = sizeof(soerr);
        if (poll(&p, 1, timeout_ms) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) ||
            soerr) {
            snprintf(err, errlen, "%s: connect: %s", where, soerr ? strerror(soerr) : "timed out");
            close(fd);
            fd = -1;
        }
    }
    if (ai)
        freeaddrinfo(ai);
    return fd;
}

/* One read or write of at most n bytes before the deadline, through TLS when ssl: the bytes
 * moved, 0 at the end of the stream (or a retry for plain sockets), -2 on the deadline, -1 on
 * an error (err says which). */
static int gui_http_io(int fd, SSL *ssl, bool wr, void *p, size_t n, int64_t deadline,
                       const gui_url_t *u, char *err, size_t errlen)
{
    struct pollfd pf = {.fd = fd, .events = wr ? POLLOUT : POLLIN};
    if (!ssl) {
        int64_t left = deadline - mono_now_ms();
        if (left <= 0 || poll(&pf, 1, (int)left) != 1)
            return -2;
        ssize_t r = wr ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
        if (r < 0 && errno != EAGAIN && errno != EINTR)
            snprintf(err, errlen, "%s:%s: %s", u->host, u->port, strerror(errno));
        return r < 0 && (errno == EAGAIN || errno == EINTR) ? 0 : (int)r;
    }
    /* TLS: try first (a record already read may hold the bytes), wait only when asked to. */
    for (;;) {
        int r = wr ? SSL_write(ssl, p, (int)n) : SSL_read(ssl, p, (int)n);
        if (r > 0)
            return r;
        int e = SSL_get_error(ssl, r);
        if (e == SSL_ERROR_ZERO_RETURN)
            return 0;
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
            char ep[300];
            snprintf(ep, sizeof(ep), "%s:%s", u->host, u->port);
            tls_describe_error(ssl, r, ep, err, errlen);
            return -1;
        }
        pf.events = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
        int64_t left = deadline - mono_now_ms();
        if (left <= 0 || poll(&pf, 1, (int)left) != 1)
            return -2;
    }
}

/* The TLS handshake with an https:// upstream, before the deadline: the SSL, or NULL with err
 * (e.g. "certificate verify failed ... (endpoint admin:9100)"). */
static SSL *gui_http_handshake(int fd, const gui_url_t *u, int64_t deadline, char *err,
                               size_t errlen)
{
    if (!gui_tls_ctx) {
        snprintf(err, errlen, "%s:%s: https:// upstream without a TLS context", u->host, u->port);
        return NULL;
    }
    SSL *ssl = tls_client_ssl_new(gui_tls_ctx, u->host, err, errlen);
    if (!ssl)
        return NULL;
    /* Connection: close: the reply ends where the admin closes, with or without a
     * close_notify; a cut reply still fails its HTTP or JSON parse. */
    SSL_set_options(ssl, SSL_OP_IGNORE_UNEXPECTED_EOF);
    if (SSL_set_fd(ssl, fd) != 1) {
        snprintf(err, errlen, "%s:%s: SSL_set_fd failed", u->host, u->port);
        SSL_free(ssl);
        return NULL;
    }
    for (;;) {
        int r = SSL_connect(ssl);
        if (r == 1)
            return ssl;
        int e = SSL_get_error(ssl, r);
        int64_t left = deadline - mono_now_ms();
        struct pollfd pf = {.fd = fd, .events = e == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN};
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
            char ep[300];
            snprintf(ep, sizeof(ep), "%s:%s", u->host, u->port);
            tls_describe_error(ssl, r, ep, err, errlen);
        } else if (left > 0 && poll(&pf, 1, (int)left) == 1)
            continue;
        else
            snprintf(err, errlen, "%s:%s: TLS handshake timed out", u->host, u->port);
        SSL_free(ssl);
        return NULL;
    }
}

/* Decodes a chunked body in place; -1 when malformed. */
static int gui_http_unchunk(buf_t *b, size_t start)
{
    char *p = (char *)b->data + start, *end = (char *)b->data + b->len, *w = p;
    for (;;) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            return -1;
        unsigned long n = strtoul(p, NULL, 16);
        p = nl + 1;
        if (n == 0)
            break;
        if ((size_t)(end - p) < n + 2)
            return -1;
        memmove(w, p, n);
        w += n;
        p += n + 2;
    }
    b->len = (size_t)(w - (char *)b->data);
    return 0;
}

static void gui_http_header(const char *hs, const char *he, const char *name, char *out,
                            size_t outlen)
{
    size_t nl = strlen(name);
    for (const char *l = hs; l < he;) {
        const char *e = memchr(l, '\n', (size_t)(he - l));
        if (!e)
            e = he;
        if ((size_t)(e - l) > nl + 1 && strncasecmp(l, name, nl) == 0 && l[nl] == ':') {
            const char *v = l + nl + 1;
            while (v < e && *v == ' ')
                v++;
            size_t vl = (size_t)(e - v);
            while (vl && (v[vl - 1] == '\r' || v[vl - 1] == ' '))
                vl--;
            snprintf(out, outlen, "%.*s", (int)vl, v);
            return;
        }
        l = e + 1;
    }
}

int gui_http_request(const gui_url_t *u, const char *method, const char *path, const char *headers,
                     const char *body, size_t body_len, int timeout_ms, gui_http_resp_t *resp,
                     char *err, size_t errlen)
{
    return gui_http_request_at(u, NULL, method, path, headers, body, body_len, timeout_ms, resp,
                               err, errlen);
}

int gui_http_request_at(const gui_url_t *u, const gui_addr_t *at, const char *method,
                        const char *path, const char *headers, const char *body, size_t body_len,
                        int timeout_ms, gui_http_resp_t *resp, char *err, size_t errlen)
{
    int64_t deadline = mono_now_ms() + timeout_ms;
    resp->status = 0;
    resp->etag[0] = resp->location[0] = resp->content_type[0] = '\0';
    buf_reset(&resp->body);
    int fd = gui_http_connect(u, at, timeout_ms, err, errlen);
    if (fd < 0)
        return -1;
    SSL *ssl = u->https ? gui_http_handshake(fd, u, deadline, err, errlen) : NULL;
    if (u->https && !ssl) {
        close(fd);
        return -1;
    }
    /* The URL's host, not the address: a virtual host or an ingress in front of the pods
     * routes by it (an IPv6 literal in brackets, RFC 9110). */
    bool v6 = strchr(u->host, ':') != NULL;
    char head[2048];
    int hl = snprintf(head, sizeof(head),
                      "%s %s HTTP/1.1\r\nHost: %s%s%s:%s\r\nConnection: close\r\n%sContent-Length: "
                      "%zu\r\n\r\n",
                      method, path, v6 ? "[" : "", u->host, v6 ? "]" : "", u->port,
                      headers ? headers : "", body_len);
    int rc = -1;
    if (hl < 0 || (size_t)hl >= sizeof(head)) {
        snprintf(err, errlen, "%s:%s: request head too long", u->host, u->port);
        goto out;
    }
    for (int pass = 0; pass < 2; pass++) {
        const char *p = pass ? body : head;
        size_t n = pass ? body_len : (size_t)hl;
        while (n) {
            int w = gui_http_io(fd, ssl, true, (void *)p, n, deadline, u, err, errlen);
            if (w < 0) {
                if (w == -2)
                    snprintf(err, errlen, "%s:%s: timed out sending", u->host, u->port);
                goto out;
            }
            p += w;
            n -= (size_t)w;
        }
    }
    for (;;) {
        if (buf_reserve(&resp->body, 8192) != 0) {
            snprintf(err, errlen, "%s:%s: reply larger than %zu bytes", u->host, u->port,
                     resp->body.max);
            goto out;
        }
        int r = gui_http_io(fd, ssl, false, resp->body.data + resp->body.len,
                            resp->body.cap - resp->body.len, deadline, u, err, errlen);
        if (r == 0)
            break;
        if (r < 0) {
            if (r == -2)
                snprintf(err, errlen, "%s:%s: timed out waiting for the reply", u->host, u->port);
            goto out;
        }
        resp->body.len += (size_t)r;
    }
    char *d = (char *)resp->body.data;
    size_t len = resp->body.len;
    char *sep = len ? memmem(d, len, "\r\n\r\n", 4) : NULL;
    if (!sep || len < 12 || strncmp(d, "HTTP/1.", 7) != 0) {
        snprintf(err, errlen, "%s:%s: malformed HTTP reply", u->host, u->port);
        goto out;
    }
    resp->status = atoi(d + 9);
    char te[32] = "";
    gui_http_header(d, sep, "ETag", resp->etag, sizeof(resp->etag));
    gui_http_header(d, sep, "Location", resp->location, sizeof(resp->location));
    gui_http_header(d, sep, "Content-Type", resp->content_type, sizeof(resp->content_type));
    gui_http_header(d, sep, "Transfer-Encoding", te, sizeof(te));
    size_t hdr = (size_t)(sep + 4 - d);
    memmove(d, d + hdr, len - hdr);
    resp->body.len = len - hdr;
    if (strcasecmp(te, "chunked") == 0 && gui_http_unchunk(&resp->body, 0) != 0) {
        snprintf(err, errlen, "%s:%s: malformed chunked reply", u->host, u->port);
        goto out;
    }
    if (buf_reserve(&resp->body, 1) == 0)
        resp->body.data[resp->body.len] = '\0'; /* for text consumers; not counted in len */
    rc = 0;
out:
    if (ssl) {
        SSL_shutdown(ssl); /* close_notify, best effort: the connection ends here */
        SSL_free(ssl);
    }
    close(fd);
    return rc;
}
