/* HTTP/1.1 connections of the HTTP server (httpd.h): the socket (plain, or TLS by OpenSSL on
 * the same descriptor), an in-place parser over one input buffer per connection, keep-alive
 * and pipelining, and the guard that keeps a slow or hostile client from making the server
 * unreachable (a "slowloris": many connections, each with a partial request and a byte now
 * and then).
 *
 * The hot path of a keep-alive request is: one read into the connection's buffer, the header
 * parsed where it lies (field names and values NUL-terminated in place, offsets kept), the
 * handler, the whole reply (status line, headers, body) appended to the connection's output
 * buffer and sent with one write once every pipelined request of that read is answered. No
 * allocation per request, and no timer work when a request arrives whole (the common case):
 * the header deadline is armed only when a read ends part-way through a request.
 *
 * The guard: the first byte of a request starts its header deadline (header_timeout_s), the
 * end of the header starts the body's (header_timeout_s plus 1 s per 64 KiB of
 * Content-Length); a deadline that passes closes the connection however often bytes came.
 * request_timeout_s closes a connection without a byte read or written for that long.
 * Admission happens at accept, by client address: over a cap, the connection waiting longest
 * without a request in service is evicted (partial requests first), else the new connection
 * is admitted from the probe reserve (only /healthz and /readyz, 2 s, then closed); see
 * httpd.h and docs/observability.md.
 *
 * A connection that opens with the HTTP/2 preface (h2c, prior knowledge), or whose TLS
 * handshake selected ALPN "h2", is handed to httpd_h2.c with the bytes read so far. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "clock.h"
#include "httpd_conn-int.h"
#include "httpd_int.h"
#include "netconn.h"
#include "log.h"
#include "tls.h"

#define CONN_IN_INITIAL 4096
#define CONN_OUT_KEEP (64 * 1024)   /* an output buffer larger than this is freed when sent */
#define CONN_OUT_PAUSE (256 * 1024) /* pipelined requests wait while this much is unsent */
#define GUARD_BODY_RATE (64 * 1024) /* bytes/s a body must average, past header_timeout_s */
#define GUARD_WARN_EVERY_MS 10000
#define GUARD_LINGER_MS 2000 /* reading what follows an error reply, before the close */

static const char h2_preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
#define H2_PREFACE_LEN 24

void *httpd_conn_memo(httpd_conn_t *c)
{
    return c->memo;
}

void httpd_conn_warn_limited(httpd_t *h, const char *what, const httpd_conn_t *c)
{
    int64_t now = mono_now_ms();
    if (now - h->warned_ms < GUARD_WARN_EVERY_MS) {
        log_debug("httpd: port %u: %s (%s)", h->port, what, c->addr);
        return;
    }
    h->warned_ms = now;
    log_warn("httpd: port %u: %s (client %s, %zu connections open; logged at most every %d s)",
             h->port, what, c->addr, (size_t)h->nconn, GUARD_WARN_EVERY_MS / 1000);
}

/* ---- life of a connection ---- */

static void conn_unlink(httpd_conn_t *c)
{
    httpd_t *h = c->h;
    if (h->nconn)
        h->nconn--;
    if (c->reserve && h->nreserve)
        h->nreserve--;
    if (c->prev)
        c->prev->next = c->next;
    else
        h->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    if (c->later)
        c->later->c = NULL; /* its owner still answers; the answer then only frees it */
    c->later = NULL;
    netconn_release(&c->nc);
    if (c->timer)
        event_free(c->timer);
    httpd_note_freed(h, c->in_cap + c->out_cap);
    free(c->in);
    free(c->out);
    OPENSSL_cleanse(c->memo, sizeof c->memo); /* a handler may keep a credential there */
}

/* Closes the connection now. Callers return at once: c is gone. */
void httpd_conn_free(httpd_conn_t *c)
{
    conn_unlink(c);
    netconn_close(&c->nc, c->closing && c->state != HC_HANDSHAKE);
    log_debug("httpd: port %u: connection closed, %zu open", c->h->port, (size_t)c->h->nconn);
    free(c);
}

void httpd_conn_close_all(httpd_t *h)
{
    while (h->conns)
        httpd_conn_free(h->conns);
}

/* Never while a request waits for its later answer: what follows it stays in the socket. */
static void want_read(httpd_conn_t *c, bool on)
{
    netconn_want_read(&c->nc, on && !c->later);
}

static void want_write(httpd_conn_t *c, bool on)
{
    netconn_want_write(&c->nc, on);
}

/* The one timer: the earlier of the request's deadline and the idle limit. */
static void timer_arm(httpd_conn_t *c)
{
    int64_t at = c->last_io_ms + (int64_t)c->h->request_timeout_s * 1000;
    if (c->deadline_ms && c->deadline_ms < at)
        at = c->deadline_ms;
    if (c->timer_at_ms && c->timer_at_ms <= at)
        return; /* fires earlier and looks again */
    int64_t ms = at - mono_now_ms();
    if (ms < 0)
        ms = 0;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
    event_add(c->timer, &tv);
    c->timer_at_ms = at;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    httpd_conn_t *c = arg;
    (void)fd;
    (void)what;
    int64_t now = mono_now_ms();
    c->timer_at_ms = 0;
    if (c->lingering && now >= c->deadline_ms) {
        httpd_conn_free(c);
        return;
    }
    if (c->later)
        c->last_io_ms = now; /* waiting for its answer is service, not idleness */
    if (c->deadline_ms && now >= c->deadline_ms) {
        if (c->serving || c->later) {
            c->deadline_ms = now + 1000; /* a pipelined request waits for the reply before it */
        } else {
            httpd_conn_warn_limited(
                c->h,
                c->state == HC_IDLE || c->state == HC_HANDSHAKE
                    ? "connection closed: no request in time"
                    : "connection closed: request not read whole by its deadline",
                c);
            httpd_conn_free(c);
            return;
        }
    }
    if (now - c->last_io_ms >= (int64_t)c->h->request_timeout_s * 1000) {
        log_debug("httpd: port %u: %s: idle for %d s, closed", c->h->port, c->peer,
                  c->h->request_timeout_s);
        httpd_conn_free(c);
        return;
    }
    timer_arm(c);
}

/* ---- socket I/O, plain or TLS ---- */

#define IO_AGAIN NETCONN_AGAIN

static ssize_t io_read(httpd_conn_t *c, char *p, size_t n)
{
    return netconn_read(&c->nc, p, n);
}

static ssize_t io_write(httpd_conn_t *c, const char *p, size_t n)
{
    return netconn_write(&c->nc, p, n);
}

/* Sends what the output holds. -1 when c was freed. While output is unsent the connection
 * is in service (never evicted) and is not read: a client that does not read its replies
 * cannot make the server queue more. */
static int conn_flush(httpd_conn_t *c)
{
    while (c->out_off < c->out_len) {
        ssize_t w = io_write(c, c->out + c->out_off, c->out_len - c->out_off);
        if (w == IO_AGAIN)
            break;
        if (w <= 0) {
            log_debug("httpd: port %u: %s: write failed, closed", c->h->port, c->peer);
            httpd_conn_free(c);
            return -1;
        }
        c->out_off += (size_t)w;
        c->last_io_ms = mono_now_ms();
    }
    if (c->out_off < c->out_len) {
        c->serving = true;
        if (!c->nc.write_wants_read)
            want_write(c, true);
        if (!c->nc.write_wants_read)
            want_read(c, false);
        return 0;
    }
    c->out_off = c->out_len = 0;
    if (c->out_cap > CONN_OUT_KEEP) {
        free(c->out);
        c->out = NULL;
        c->out_cap = 0;
    }
    if (c->serving) {
        c->serving = false;
        if (c->state == HC_IDLE)
            c->since_ms = mono_now_ms();
    }
    if (c->closing && c->linger && !c->nc.ssl && !c->lingering &&
        shutdown(c->nc.fd, SHUT_WR) == 0) {
        /* An error reply usually leaves part of the request unread (a body over the limit):
         * closing now would answer the client's next segment with a reset, which can discard
         * the reply before the client reads it. So the write side is shut (the client sees
         * the end of the reply) and what it still sends is read and dropped, for at most
         * GUARD_LINGER_MS or until it closes too. */
        c->lingering = true;
        c->deadline_ms = mono_now_ms() + GUARD_LINGER_MS;
        want_write(c, false);
        want_read(c, true);
        timer_arm(c);
        return 0;
    }
    if (c->closing && !c->later) {
        httpd_conn_free(c);
        return -1;
    }
    if (!c->nc.read_wants_write)
        want_write(c, false);
    want_read(c, true);
    return 0;
}

static int out_reserve(httpd_conn_t *c, size_t n)
{
    if (c->out_len + n <= c->out_cap)
        return 0;
    size_t cap = c->out_cap ? c->out_cap : 4096;
    while (cap < c->out_len + n)
        cap *= 2;
    char *o = realloc(c->out, cap);
    if (!o)
        return -1;
    c->out = o;
    c->out_cap = cap;
    return 0;
}

static char *put(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}

static char *put_uint(char *p, size_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

void httpd_conn_reply(httpd_req_t *req, int status, const char *content_type, const void *body,
                      size_t len)
{
    httpd_conn_t *c = req->c;
    bool no_body = status == 204 || status == 304 || (status >= 100 && status < 200);
    const char *reason = httpd_reason_phrase(status);
    const char *date = httpd_date(c->h);
    size_t ctl = content_type ? strlen(content_type) : 0;
    size_t send_len = no_body || req->head ? 0 : len;
    if (out_reserve(c, 160 + strlen(reason) + ctl + req->resp_hdrs_len + send_len) != 0) {
        log_error("httpd: port %u: %s %s: out of memory for a reply of %zu bytes; connection "
                  "closed",
                  c->h->port, req->method, req->path, len);
        c->closing = true;
        return;
    }
    char *p = c->out + c->out_len;
    p = put(p, req->minor == 0 ? "HTTP/1.0 " : "HTTP/1.1 ", 9);
    p = put_uint(p, (size_t)(status < 0 ? 500 : status));
    *p++ = ' ';
    p = put(p, reason, strlen(reason));
    p = put(p, "\r\nDate: ", 8);
    p = put(p, date, strlen(date));
    p = put(p, "\r\n", 2);
    if (content_type) {
        p = put(p, "Content-Type: ", 14);
        p = put(p, content_type, ctl);
        p = put(p, "\r\n", 2);
    }
    if (!no_body) {
        p = put(p, "Content-Length: ", 16);
        p = put_uint(p, len);
        p = put(p, "\r\n", 2);
    }
    p = put(p, req->resp_hdrs, req->resp_hdrs_len);
    if (req->close)
        p = put(p, "Connection: close\r\n", 19);
    else if (req->minor == 0)
        p = put(p, "Connection: keep-alive\r\n", 24);
    p = put(p, "\r\n", 2);
    if (send_len)
        p = put(p, body, send_len);
    c->out_len = (size_t)(p - c->out);
    if (req->close)
        c->closing = true;
}

/* ---- parsing ---- */

static bool method_known(const char *m, size_t n)
{
    switch (n) {
    case 3:
        return memcmp(m, "GET", 3) == 0 || memcmp(m, "PUT", 3) == 0;
    case 4:
        return memcmp(m, "POST", 4) == 0 || memcmp(m, "HEAD", 4) == 0;
    case 5:
        return memcmp(m, "PATCH", 5) == 0;
    case 6:
        return memcmp(m, "DELETE", 6) == 0;
    case 7:
        return memcmp(m, "OPTIONS", 7) == 0;
    default:
        return false;
    }
}

/* An error the server answers itself, then closes the connection (its input cannot be
 * trusted to be in step any more). */
static void conn_error(httpd_conn_t *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void conn_error(httpd_conn_t *c, int status, const char *fmt, ...)
{
    httpd_req_t req;
    httpd_req_init(&req, c->h);
    req.c = c;
    req.method = "-";
    req.path = "-";
    req.peer = c->peer;
    req.close = true;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_info("httpd: port %u: %s: %d %s", c->h->port, c->peer, status, msg);
    httpd_reply_error(&req, status, "%s", msg);
    c->closing = true;
    c->linger = true;
    c->in_off = c->in_len = 0;
}

/* Whether a header value holds token tok (comma separated, case-insensitive). */
static bool has_token(const char *v, const char *tok)
{
    size_t tl = strlen(tok);
    while (*v) {
        while (*v == ' ' || *v == '\t' || *v == ',')
            v++;
        size_t n = strcspn(v, ",");
        size_t m = n;
        while (m && (v[m - 1] == ' ' || v[m - 1] == '\t'))
            m--;
        if (m == tl && strncasecmp(v, tok, tl) == 0)
            return true;
        v += n;
    }
    return false;
}

/* The end of the header at p[0..n): its length, or 0 when not there yet. */
static size_t header_end(const char *p, size_t n, size_t from)
{
    size_t i = from;
    while (i < n) {
        const char *q = memchr(p + i, '\n', n - i);
        if (!q)
            return 0;
        size_t k = (size_t)(q - p);
        if (k + 1 < n && p[k + 1] == '\n')
            return k + 2;
        if (k + 2 < n && p[k + 1] == '\r' && p[k + 2] == '\n')
            return k + 3;
        if (k + 2 >= n)
            return 0;
        i = k + 1;
    }
    return 0;
}

/* A chunked body at p[0..n): 1 complete (*consumed bytes of it, decoded in place to
 * *decoded bytes at p when decode), 0 incomplete, -1 malformed, -2 over max. */
static int chunked_body(char *p, size_t n, size_t max, bool decode, size_t *consumed,
                        size_t *decoded)
{
    size_t i = 0, o = 0;
    for (;;) {
        const char *nl = memchr(p + i, '\n', n - i);
        if (!nl)
            return n - i > 64 ? -1 : 0;
        char *end;
        unsigned long long sz = strtoull(p + i, &end, 16);
        if (end == p + i)
            return -1;
        size_t line_end = (size_t)(nl - p) + 1;
        if (sz > max || o + sz > max)
            return -2;
        if (sz == 0) {
            /* trailers, then an empty line */
            size_t j = line_end;
            for (;;) {
                const char *t = memchr(p + j, '\n', n - j);
                if (!t)
                    return n - j > 8192 ? -1 : 0;
                size_t ll = (size_t)(t - (p + j));
                j = (size_t)(t - p) + 1;
                if (ll == 0 || (ll == 1 && p[j - 2] == '\r'))
                    break;
            }
            *consumed = j;
            *decoded = o;
            return 1;
        }
        if (line_end + sz + 1 > n)
            return 0;
        size_t after = line_end + sz;
        if (p[after] == '\r') {
            if (after + 1 >= n)
                return 0;
            if (p[after + 1] != '\n')
                return -1;
            after += 2;
        } else if (p[after] == '\n') {
            after += 1;
        } else {
            return -1;
        }
        if (decode)
            memmove(p + o, p + line_end, sz);
        o += sz;
        i = after;
    }
}

static int conn_h2_handoff(httpd_conn_t *c, const char *data, size_t len);

/* What a request's header says, kept from the parse for the answer: offsets and lengths
 * only, the bytes stay where they were read. */
typedef struct {
    char *sp1, *sp2; /* the spaces around the target */
    char *fields;    /* the first header field line */
    size_t ml;       /* method length */
    int minor;
    field_off_t fo[HTTPD_MAX_FIELDS];
    size_t nf;
    int64_t cl; /* Content-Length, -1 when absent */
    bool chunked, conn_close, expect;
} conn_head_t;

/* Drops the bytes between requests (a CRLF after a body); returns how many. */
static size_t conn_skip_blank(httpd_conn_t *c)
{
    const char *p = c->in + c->in_off;
    size_t n = c->in_len - c->in_off, skip = 0;
    while (skip < n && (p[skip] == '\r' || p[skip] == '\n'))
        skip++;
    if (skip) {
        c->in_off += skip;
        if (c->scan_off >= skip)
            c->scan_off -= skip;
    }
    return skip;
}

/* Whether the header at p[0..n) is whole (its length then in c->hdr_len). The scan resumes
 * where the last read left it, so a header trickling in is not rescanned from its start. */
static bool conn_header_whole(httpd_conn_t *c, const char *p, size_t n)
{
    httpd_t *h = c->h;
    if (c->have_header)
        return true;
    size_t hl = header_end(p, n, c->scan_off);
    if (!hl) {
        c->scan_off = n > 3 ? n - 3 : 0;
        if (n > h->max_header)
            conn_error(c, 431, "request header over the limit of %zu bytes", h->max_header);
        return false;
    }
    c->scan_off = 0;
    if (hl > h->max_header) {
        conn_error(c, 431, "request header over the limit of %zu bytes", h->max_header);
        return false;
    }
    c->hdr_len = hl;
    c->have_header = true;
    return true;
}

/* The request line, METHOD SP target SP HTTP/1.x; false when answered with an error. */
static bool conn_request_line(httpd_conn_t *c, char *p, conn_head_t *hd)
{
    char *le = memchr(p, '\n', c->hdr_len);
    size_t ll = (size_t)(le - p);
    if (ll && p[ll - 1] == '\r')
        ll--;
    char *sp1 = memchr(p, ' ', ll);
    char *sp2 = sp1 ? memchr(sp1 + 1, ' ', ll - (size_t)(sp1 + 1 - p)) : NULL;
    if (!sp1 || !sp2 || sp2 == sp1 + 1 || (size_t)(p + ll - (sp2 + 1)) != 8 ||
        memcmp(sp2 + 1, "HTTP/1.", 7) != 0 || (sp2[8] != '0' && sp2[8] != '1')) {
        conn_error(c, 400, "malformed request line");
        return false;
    }
    size_t ml = (size_t)(sp1 - p);
    if (!method_known(p, ml)) {
        char m[16];
        size_t k = ml < 15 ? ml : 15;
        for (size_t i = 0; i < k; i++) /* a client's bytes, printable in the log */
            m[i] = p[i] > ' ' && p[i] < 127 ? p[i] : '?';
        m[k] = '\0';
        conn_error(c, 501, "method %s not implemented", m);
        return false;
    }
    if (sp1[1] != '/') {
        conn_error(c, 400, "request target must be a path starting with '/'");
        return false;
    }
    hd->sp1 = sp1;
    hd->sp2 = sp2;
    hd->fields = le + 1;
    hd->ml = ml;
    hd->minor = sp2[8] - '0';
    return true;
}

/* One of the few fields the server reads itself (Expect, Connection, Content-Length,
 * Transfer-Encoding; nl tells which), its value v[0..vl); false when answered with an
 * error. */
static bool conn_field_own(httpd_conn_t *c, size_t nl, const char *v, size_t vl, conn_head_t *hd)
{
    /* a NUL-terminated copy: the header is only terminated in place once the request is
     * whole */
    char val[256];
    if (vl >= sizeof val) {
        conn_error(c, 400, "header field %s too long",
                   nl == 6    ? "Expect"
                   : nl == 10 ? "Connection"
                   : nl == 14 ? "Content-Length"
                              : "Transfer-Encoding");
        return false;
    }
    memcpy(val, v, vl);
    val[vl] = '\0';
    if (nl == 6) {
        if (strcasecmp(val, "100-continue") == 0)
            hd->expect = true;
    } else if (nl == 10) {
        if (has_token(val, "close"))
            hd->conn_close = true;
        else if (hd->minor == 0 && has_token(val, "keep-alive"))
            hd->conn_close = false;
    } else if (nl == 14) {
        char *end;
        errno = 0;
        long long x = strtoll(val, &end, 10);
        if (end == val || *end || x < 0 || errno || (hd->cl >= 0 && hd->cl != x)) {
            conn_error(c, 400, "bad Content-Length");
            return false;
        }
        hd->cl = x;
    } else {
        if (!has_token(val, "chunked") || strcasestr(val, "gzip") || strcasestr(val, "deflate") ||
            strcasestr(val, "compress")) {
            for (char *x = val; *x; x++)
                if (*x < ' ' || *x >= 127)
                    *x = '?';
            conn_error(c, 501, "transfer coding %s not implemented", val);
            return false;
        }
        hd->chunked = true;
    }
    return true;
}

/* The header fields after the request line, their offsets into hd->fo; false when answered
 * with an error. */
static bool conn_header_fields(httpd_conn_t *c, char *p, conn_head_t *hd)
{
    hd->nf = 0;
    hd->cl = -1;
    hd->chunked = false;
    hd->conn_close = hd->minor == 0;
    hd->expect = false;
    char *q = hd->fields;
    char *hend = p + c->hdr_len;
    while (q < hend) {
        char *e = memchr(q, '\n', (size_t)(hend - q));
        size_t l = (size_t)(e - q);
        if (l && q[l - 1] == '\r')
            l--;
        if (l == 0)
            break;
        if (*q == ' ' || *q == '\t') {
            conn_error(c, 400, "obsolete header line folding");
            return false;
        }
        char *colon = memchr(q, ':', l);
        if (!colon || colon == q) {
            conn_error(c, 400, "malformed header line");
            return false;
        }
        if (hd->nf == HTTPD_MAX_FIELDS) {
            conn_error(c, 431, "more than %d header fields", HTTPD_MAX_FIELDS);
            return false;
        }
        size_t nl = (size_t)(colon - q);
        char *v = colon + 1, *ve = q + l;
        while (v < ve && (*v == ' ' || *v == '\t'))
            v++;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
            ve--;
        hd->fo[hd->nf++] =
            (field_off_t){(uint32_t)(q - p), (uint32_t)nl, (uint32_t)(v - p), (uint32_t)(ve - v)};
        bool mine = (nl == 6 && strncasecmp(q, "expect", 6) == 0) ||
                    (nl == 10 && strncasecmp(q, "connection", 10) == 0) ||
                    (nl == 14 && strncasecmp(q, "content-length", 14) == 0) ||
                    (nl == 17 && strncasecmp(q, "transfer-encoding", 17) == 0);
        if (mine && !conn_field_own(c, nl, v, (size_t)(ve - v), hd))
            return false;
        q = e + 1;
    }
    return true;
}

/* Where the body at p + hdr_len ends: 1 whole (*total bytes of request, *body_len of body,
 * a chunked one decoded in place), 0 not all there yet, -1 answered with an error. */
static int conn_body_find(httpd_conn_t *c, char *p, size_t n, const conn_head_t *hd, size_t *total,
                          size_t *body_len)
{
    httpd_t *h = c->h;
    size_t hl = c->hdr_len;
    if (hd->chunked && hd->cl >= 0) {
        conn_error(c, 400, "both Content-Length and Transfer-Encoding");
        return -1;
    }
    if (hd->cl > (int64_t)h->max_body) {
        conn_error(c, 413, "request body exceeds the limit of %zu bytes", h->max_body);
        return -1;
    }
    *total = hl;
    *body_len = 0;
    char *body = p + hl;
    if (hd->chunked) {
        size_t consumed, decoded;
        /* decoded in place only once whole: a partial body is parsed again from its start
         * when more arrives */
        int r = chunked_body(body, n - hl, h->max_body, false, &consumed, &decoded);
        if (r == -2) {
            conn_error(c, 413, "request body exceeds the limit of %zu bytes", h->max_body);
            return -1;
        }
        if (r < 0) {
            conn_error(c, 400, "malformed chunked body");
            return -1;
        }
        if (r == 0)
            return 0;
        chunked_body(body, n - hl, h->max_body, true, &consumed, &decoded);
        *total = hl + consumed;
        *body_len = decoded;
    } else if (hd->cl > 0) {
        if (n - hl < (size_t)hd->cl)
            return 0;
        *total = hl + (size_t)hd->cl;
        *body_len = (size_t)hd->cl;
    }
    return 1;
}

/* The header is whole and the body is not: the body's deadline starts once, and a client
 * that asked is told to send it. */
static void conn_body_wait(httpd_conn_t *c, const conn_head_t *hd)
{
    httpd_t *h = c->h;
    if (c->state == HC_BODY)
        return;
    c->state = HC_BODY;
    c->since_ms = mono_now_ms();
    if (!c->reserve) {
        int64_t rate_ms = hd->chunked ? (int64_t)h->max_body * 1000 / GUARD_BODY_RATE
                                      : hd->cl * 1000 / GUARD_BODY_RATE;
        c->deadline_ms = c->since_ms + (int64_t)h->header_timeout_s * 1000 + rate_ms;
    }
    if (hd->expect && out_reserve(c, 32) == 0) {
        memcpy(c->out + c->out_len, "HTTP/1.1 100 Continue\r\n\r\n", 25);
        c->out_len += 25;
    }
}

/* Answers the whole request at p (total bytes, its body at p + hdr_len): the header is
 * terminated in place and the handler runs on it. */
static void conn_answer(httpd_conn_t *c, char *p, conn_head_t *hd, size_t total, size_t body_len)
{
    httpd_t *h = c->h;
    char *body = p + c->hdr_len;
    c->have_header = false;
    c->fresh = false;
    c->deadline_ms = 0;
    c->state = HC_IDLE;
    h2server_field_t fields[HTTPD_MAX_FIELDS];
    const field_off_t *fo = hd->fo;
    for (size_t i = 0; i < hd->nf; i++) {
        p[fo[i].name + fo[i].name_len] = '\0';
        p[fo[i].value + fo[i].value_len] = '\0';
        fields[i] =
            (h2server_field_t){p + fo[i].name, fo[i].name_len, p + fo[i].value, fo[i].value_len};
    }
    httpd_req_t req;
    httpd_req_init(&req, h);
    req.c = c;
    *hd->sp1 = '\0';
    *hd->sp2 = '\0';
    req.method = p;
    req.head = hd->ml == 4 && p[0] == 'H';
    req.minor = hd->minor;
    req.close = hd->conn_close;
    req.fields = fields;
    req.nfields = hd->nf;
    req.peer = c->peer;
    req.body = body;
    req.body_len = body_len;
    /* NUL after the body for convenience: the byte there (the next pipelined request's
     * first, or free space) is put back after the handler. */
    char saved = body[body_len];
    body[body_len] = '\0';
    c->in_off += total;
    if (httpd_req_begin(&req, hd->sp1 + 1) != 0) {
        req.path = "-";
        req.close = true;
        httpd_reply_error(&req, 500, "out of memory");
    } else if (c->reserve) {
        req.close = true; /* one probe, then the slot is free again */
        if (strcmp(req.path, "/healthz") != 0 && strcmp(req.path, "/readyz") != 0) {
            httpd_resp_header(&req, "Retry-After", "1");
            httpd_reply_error(&req, 503,
                              "server busy: every connection slot is in use; only /healthz and "
                              "/readyz are served now");
        }
    }
    if (!req.replied)
        httpd_dispatch(&req);
    /* answered later: this connection waits for it, unread (want_read) */
    c->later = httpd_req_later_detach(&req, c, NULL);
    httpd_req_end(&req);
    body[body_len] = saved;
}

/* Parses the request at in_off. 1: one was answered; 0: more bytes are needed (or an error
 * was answered and the connection closes); -1: c was freed or handed over. */
static int conn_request(httpd_conn_t *c)
{
    if (conn_skip_blank(c) && c->in_off == c->in_len)
        return 0;
    char *p = c->in + c->in_off;
    size_t n = c->in_len - c->in_off;
    if (c->fresh && !c->nc.ssl) {
        size_t k = n < H2_PREFACE_LEN ? n : H2_PREFACE_LEN;
        if (memcmp(p, h2_preface, k) == 0) {
            if (k < H2_PREFACE_LEN)
                return 0;
            return conn_h2_handoff(c, p, n);
        }
    }
    if (!conn_header_whole(c, p, n))
        return 0;
    conn_head_t hd;
    if (!conn_request_line(c, p, &hd) || !conn_header_fields(c, p, &hd))
        return 0;
    size_t total, body_len;
    int r = conn_body_find(c, p, n, &hd, &total, &body_len);
    if (r < 0)
        return 0;
    if (r == 0) {
        conn_body_wait(c, &hd);
        return 0;
    }
    conn_answer(c, p, &hd, total, body_len);
    return 1;
}

/* Answers every whole request in the input, then sends the replies. -1 when c is gone. */
static int conn_process(httpd_conn_t *c)
{
    bool paused = false;
    while (c->in_off < c->in_len && !c->closing && !c->later) {
        if (c->out_len - c->out_off > CONN_OUT_PAUSE) {
            paused = true; /* the rest waits until the client reads */
            break;
        }
        int r = conn_request(c);
        if (r < 0)
            return -1;
        if (r == 0)
            break;
    }
    if (c->later)
        want_read(c, false);
    if (c->in_off >= c->in_len) {
        c->in_off = c->in_len = 0;
        c->scan_off = 0;
        if (c->state != HC_IDLE && !c->have_header) {
            c->state = HC_IDLE;
            c->since_ms = mono_now_ms();
        }
        if (c->in_cap > 4 * CONN_IN_INITIAL && !c->closing) {
            char *s = realloc(c->in, CONN_IN_INITIAL);
            if (s) {
                httpd_note_freed(c->h, c->in_cap);
                c->in = s;
                c->in_cap = CONN_IN_INITIAL;
            }
        }
    } else {
        if (c->in_off) {
            memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
            c->in_len -= c->in_off;
            c->in_off = 0;
        }
        if (c->state == HC_IDLE) {
            c->state = HC_HEADER;
            c->req_start_ms = c->since_ms = mono_now_ms();
        }
        if (c->state == HC_HEADER && !c->deadline_ms && !c->reserve)
            c->deadline_ms = c->req_start_ms + (int64_t)c->h->header_timeout_s * 1000;
        if (c->deadline_ms)
            timer_arm(c);
    }
    if (c->out_len > c->out_off || c->closing) {
        if (conn_flush(c) < 0)
            return -1;
        /* Sent at once: the requests that waited behind the pause are answered on the next
         * turn of the loop, after the other connections' (no read event would come for
         * requests already read). */
        if (paused && !c->serving && !c->closing)
            event_active(c->nc.rev, EV_READ, 0);
    }
    return 0;
}

/* Reads what the socket has, then answers it. -1 when c is gone. */
static int conn_read(httpd_conn_t *c)
{
    if (c->later) {
        want_read(c, false);
        return 0;
    }
    bool eof = false;
    for (;;) {
        /* Full: the whole requests in it are answered first, so the buffer grows only for
         * one request larger than it, never for requests pipelined behind it (else a client
         * that pipelines and never reads its replies makes each of its connections hold
         * max_header + 2 * max_body). Replies unsent: the rest is read once they are. */
        if (c->in_len + 1 >= c->in_cap) {
            size_t had = c->in_len;
            if (conn_process(c) < 0)
                return -1;
            if (c->in_len < had || c->serving || c->closing)
                return 0; /* the rest on a later turn: other connections get theirs between */
        }
        if (c->in_len + 1 >= c->in_cap) {
            size_t limit = c->h->max_header + 2 * c->h->max_body + 1024;
            if (c->in_cap >= limit)
                break; /* the parser refuses what is too large */
            size_t cap = c->in_cap * 2 < limit ? c->in_cap * 2 : limit;
            char *s = realloc(c->in, cap);
            if (!s) {
                log_error("httpd: port %u: %s: out of memory for a request; connection closed",
                          c->h->port, c->peer);
                httpd_conn_free(c);
                return -1;
            }
            c->in = s;
            c->in_cap = cap;
        }
        size_t space = c->in_cap - c->in_len - 1;
        ssize_t r = io_read(c, c->in + c->in_len, space);
        if (r == IO_AGAIN)
            break;
        if (r < 0) {
            httpd_conn_free(c);
            return -1;
        }
        if (r == 0) {
            eof = true;
            break;
        }
        c->last_io_ms = mono_now_ms();
        if (c->state == HC_IDLE) {
            c->state = HC_HEADER;
            c->req_start_ms = c->since_ms = c->last_io_ms;
        }
        c->request_pending = c->partial_waiting = false;
        c->in_len += (size_t)r;
        if ((size_t)r < space && (!c->nc.ssl || !SSL_has_pending(c->nc.ssl)))
            break; /* drained (level-triggered: the next read event says when more came) */
    }
    if (conn_process(c) < 0)
        return -1;
    if (eof) {
        if (c->out_len > c->out_off || c->later) {
            c->closing = true; /* send the replies, then close */
            return 0;
        }
        httpd_conn_free(c);
        return -1;
    }
    return 0;
}

static int conn_handshake(httpd_conn_t *c)
{
    char e[256];
    int r = netconn_handshake(&c->nc, e, sizeof e);
    if (r == 0)
        return 0;
    if (r < 0) {
        log_debug("httpd: port %u: %s: TLS handshake failed: %s", c->h->port, c->peer, e);
        httpd_conn_free(c);
        return -1;
    }
    c->state = HC_IDLE;
    c->since_ms = c->last_io_ms = mono_now_ms();
    if (!c->reserve)
        c->deadline_ms = 0;
    if (tls_alpn_is(c->nc.ssl, "h2"))
        return conn_h2_handoff(c, NULL, 0);
    return conn_read(c); /* the request may have come with the handshake's last flight */
}

/* Either event during the TLS handshake steps it, whichever direction it waited for: true
 * when it did (the event is spent). */
static bool conn_handshaking(httpd_conn_t *c)
{
    if (c->state != HC_HANDSHAKE)
        return false;
    conn_handshake(c);
    return true;
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    httpd_conn_t *c = arg;
    (void)fd;
    (void)what;
    if (conn_handshaking(c))
        return;
    if (c->lingering) {
        char drop[16384];
        ssize_t r;
        while ((r = recv(c->nc.fd, drop, sizeof drop, 0)) > 0)
            ;
        if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            httpd_conn_free(c); /* the client closed too (or the connection failed) */
        return;
    }
    if (c->nc.write_wants_read) {
        c->nc.write_wants_read = false;
        if (conn_flush(c) < 0 || c->out_len > c->out_off)
            return;
    }
    conn_read(c);
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
    httpd_conn_t *c = arg;
    (void)fd;
    (void)what;
    if (conn_handshaking(c))
        return;
    if (c->nc.read_wants_write) {
        c->nc.read_wants_write = false;
        want_write(c, c->out_len > c->out_off);
        if (conn_read(c) < 0)
            return;
    }
    if (c->out_len > c->out_off) {
        if (conn_flush(c) < 0 || c->out_len > c->out_off)
            return;
        /* sent: requests that waited behind the reply (pipelined, or held by TLS) */
        if (c->in_len > c->in_off || c->nc.ssl)
            conn_read(c);
    }
}

static int conn_h2_handoff(httpd_conn_t *c, const char *data, size_t len)
{
    httpd_t *h = c->h;
    if (c->reserve) {
        httpd_conn_warn_limited(h, "HTTP/2 on a probe-reserve connection: closed", c);
        httpd_conn_free(c);
        return -1;
    }
    evutil_socket_t fd = c->nc.fd;
    SSL *ssl = c->nc.ssl;
    char peer[sizeof c->peer];
    memcpy(peer, c->peer, sizeof peer);
    /* the events on fd go before the HTTP/2 side adds its own */
    c->nc.fd = -1;
    c->nc.ssl = NULL;
    char *in = c->in;
    c->in = NULL;
    conn_unlink(c);
    free(c);
    httpd_h2_adopt(h, fd, ssl, peer, data, len);
    free(in);
    return -1;
}

SSL *httpd_conn_ssl(httpd_conn_t *c)
{
    return c->nc.ssl;
}

void httpd_conn_later_reply(httpd_req_t *req, int status, const char *content_type,
                            const void *body, size_t len)
{
    httpd_conn_t *c = req->c;
    req->h = c->h;
    c->later = NULL;
    httpd_conn_reply(req, status, content_type, body, len);
    c->last_io_ms = mono_now_ms();
    if (c->state == HC_IDLE)
        c->since_ms = c->last_io_ms;
    if (conn_flush(c) < 0 || c->serving)
        return; /* gone, or on_write sends the rest and reads on */
    /* The requests behind it (in the input, or still in the socket) on the next turn of the
     * loop: not from inside the caller (a Kafka delivery report, say), which would serve the
     * next request within its own. */
    event_active(c->nc.rev, EV_READ, 0);
}

void httpd_conn_accept(httpd_t *h, evutil_socket_t fd, const struct sockaddr *sa, int salen)
{
    (void)salen;
    if (h->freeing) {
        evutil_closesocket(fd);
        return;
    }
    httpd_conn_t *c = calloc(1, sizeof *c);
    if (c) {
        c->in = malloc(CONN_IN_INITIAL);
        c->nc.fd = -1;
        c->timer = event_new(h->base, -1, 0, on_timer, c);
    }
    if (!c || !c->in || !c->timer || netconn_init(&c->nc, h->base, fd, on_read, on_write, c)) {
        log_warn("httpd: port %u: cannot take a new connection (out of memory)", h->port);
        if (c) {
            free(c->in);
            if (c->timer)
                event_free(c->timer);
            free(c);
        }
        evutil_closesocket(fd);
        return;
    }
    c->h = h;
    c->in_cap = CONN_IN_INITIAL;
    c->fresh = true;
    c->state = HC_IDLE;
    c->since_ms = c->last_io_ms = mono_now_ms();
    char ip[INET6_ADDRSTRLEN];
    netconn_peer_name(sa, ip, sizeof ip, c->peer, sizeof c->peer);
    snprintf(c->addr, sizeof c->addr, "%s", ip);
    /* The reply goes in one write; without NODELAY a second segment (a large reply) would
     * wait for the client's delayed ACK. */
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->next = h->conns;
    if (h->conns)
        h->conns->prev = c;
    h->conns = c;
    h->nconn++;
    if (h->ssl_ctx) {
        char err[256];
        if (netconn_tls_accept(&c->nc, h->ssl_ctx, err, sizeof err)) {
            log_error("httpd: port %u: %s: TLS: %s", h->port, c->peer, err);
            httpd_conn_free(c);
            return;
        }
        c->state = HC_HANDSHAKE;
    }
    log_debug("httpd: port %u: connection from %s, %zu open", h->port, c->peer, (size_t)h->nconn);
    if (!httpd_conn_admit(c))
        return;
    if (c->nc.ssl && !c->reserve)
        c->deadline_ms = c->since_ms + (int64_t)h->header_timeout_s * 1000;
    want_read(c, true);
    timer_arm(c);
}
