/* The small blocking HTTP/1.1 client of ndd-gui-api: one request per connection
 * (Connection: close), a deadline for the whole exchange, the reply bounded by the caller's
 * buffer. The admin and the workers' /metrics are on the operator's network, usually the
 * same host, so a blocking exchange of a few milliseconds is simpler than an asynchronous
 * client and bounded by upstream-timeout. Chunked replies are decoded (evhttp sends them). */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gui.h"

int gui_url_parse(const char *url, gui_url_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (strncmp(url, "http://", 7) != 0) {
        snprintf(err, errlen, "%s: only http:// URLs are supported", url);
        return -1;
    }
    const char *h = url + 7, *slash = strchr(h, '/');
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
        strcpy(out->port, "80");
    }
    if (slash && strlen(slash) < sizeof(out->path))
        strcpy(out->path, slash);
    else if (slash) {
        snprintf(err, errlen, "%s: path too long", url);
        return -1;
    }
    return 0;
}

static int gui_http_connect(const gui_url_t *u, int timeout_ms, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
    int rc = getaddrinfo(u->host, u->port, &hints, &ai);
    if (rc != 0) {
        snprintf(err, errlen, "%s:%s: %s", u->host, u->port, gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
            snprintf(err, errlen, "%s:%s: connect: %s", u->host, u->port, strerror(errno));
            close(fd);
            fd = -1;
            continue;
        }
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        int soerr = 0;
        socklen_t sl = sizeof(soerr);
        if (poll(&p, 1, timeout_ms) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) ||
            soerr) {
            snprintf(err, errlen, "%s:%s: connect: %s", u->host, u->port,
                     soerr ? strerror(soerr) : "timed out");
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    return fd;
}

static int gui_http_io(int fd, bool wr, void *p, size_t n, int64_t deadline)
{
    int64_t left = deadline - gui_now_ms();
    struct pollfd pf = {.fd = fd, .events = wr ? POLLOUT : POLLIN};
    if (left <= 0 || poll(&pf, 1, (int)left) != 1)
        return -2;
    ssize_t r = wr ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
    return r < 0 && (errno == EAGAIN || errno == EINTR) ? 0 : (int)r;
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
    int64_t deadline = gui_now_ms() + timeout_ms;
    resp->status = 0;
    resp->etag[0] = resp->location[0] = resp->content_type[0] = '\0';
    buf_reset(&resp->body);
    int fd = gui_http_connect(u, timeout_ms, err, errlen);
    if (fd < 0)
        return -1;
    char head[2048];
    int hl = snprintf(head, sizeof(head),
                      "%s %s HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n%sContent-Length: "
                      "%zu\r\n\r\n",
                      method, path, u->host, u->port, headers ? headers : "", body_len);
    int rc = -1;
    if (hl < 0 || (size_t)hl >= sizeof(head)) {
        snprintf(err, errlen, "%s:%s: request head too long", u->host, u->port);
        goto out;
    }
    for (int pass = 0; pass < 2; pass++) {
        const char *p = pass ? body : head;
        size_t n = pass ? body_len : (size_t)hl;
        while (n) {
            int w = gui_http_io(fd, true, (void *)p, n, deadline);
            if (w < 0) {
                snprintf(err, errlen, "%s:%s: %s", u->host, u->port,
                         w == -2 ? "timed out sending" : strerror(errno));
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
        int r = gui_http_io(fd, false, resp->body.data + resp->body.len,
                            resp->body.cap - resp->body.len, deadline);
        if (r == 0)
            break;
        if (r < 0) {
            snprintf(err, errlen, "%s:%s: %s", u->host, u->port,
                     r == -2 ? "timed out waiting for the reply" : strerror(errno));
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
    close(fd);
    return rc;
}
