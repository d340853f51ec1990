/* Fuzz target: the HTTP server's connection handling (services/base/httpd_conn.c) on whatever
 * bytes a client sends: the in-place HTTP/1.1 parser (request line, header fields, chunked and
 * Content-Length bodies, pipelining, Expect), the errors it answers itself (400, 413, 431,
 * 501), answers given later (httpd_req_later: a POST under /later/ is answered on the next
 * turn of the loop, after the client may have sent more or gone), and the hand-over of a
 * connection that opens with the HTTP/2 preface. The input is written into one end of a
 * socket pair whose other end the server took as an accepted connection, then the write side
 * is shut; the loop runs until the server has closed its end. Invariants: no crash, leak or
 * out-of-bounds access (ASan/UBSan builds), every reply starts with a status line, and the
 * server always closes (no connection left behind). */
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "httpd_int.h"
#include "log.h"

static struct event_base *base;
static httpd_t *srv;

static void echo(httpd_req_t *req, void *arg)
{
    (void)arg;
    size_t len;
    const char *body = httpd_req_body(req, &len);
    if (body[len] != '\0')
        abort(); /* httpd.h: the body is NUL-terminated */
    char qv[64]; /* a longer value is cut: the echo only shows it */
    const char *q =
        httpd_query_get(httpd_req_query_string(req), "name", qv, sizeof(qv)) ? qv : NULL;
    const char *h = httpd_req_header(req, "X-Test");
    char out[256];
    snprintf(out, sizeof out, "%s %s %s %s %zu", httpd_req_method(req), httpd_req_path(req),
             q ? q : "-", h ? h : "-", len);
    httpd_resp_header(req, "X-Reply", "yes");
    httpd_reply_text(req, 200, out);
}

/* The later answer, one turn of the loop after the handler (as a delivery report comes). */
static void later_answer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    httpd_later_t *l = arg;
    httpd_later_header(l, "X-Later", "yes");
    httpd_later_reply(l, 202, "application/json", "{}", 2);
}

static void later(httpd_req_t *req, void *arg)
{
    (void)arg;
    httpd_later_t *l = httpd_req_later(req);
    if (!l) {
        httpd_reply_text(req, 503, "no memory");
        return;
    }
    struct timeval now = {0, 0};
    if (event_base_once(base, -1, EV_TIMEOUT, later_answer, l, &now) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!base) {
        log_setup("fuzz_httpd_request", LOG_LEVEL_OFF, 0);
        base = event_base_new();
        char err[256];
        httpd_options_t o = {.port = 0, .max_body_bytes = 4096, .max_header_bytes = 4096};
        srv = base ? httpd_new_ex(base, &o, err, sizeof err) : NULL;
        if (!srv || httpd_route(srv, "*", "/api/*", echo, NULL) != 0 ||
            httpd_route(srv, "POST", "/later/*", later, NULL) != 0)
            abort();
    }
    if (size > 60000)
        size = 60000; /* within a socket pair's buffer: one write */
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0)
        abort();
    struct sockaddr_in peer = {.sin_family = AF_INET, .sin_port = htons(4242)};
    peer.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    httpd_conn_accept(srv, sv[0], (struct sockaddr *)&peer, sizeof peer);
    if (size && write(sv[1], data, size) != (ssize_t)size)
        abort();
    shutdown(sv[1], SHUT_WR);
    char buf[65536];
    bool closed = false, first = true;
    for (int i = 0; i < 2000 && !closed; i++) {
        event_base_loop(base, EVLOOP_NONBLOCK);
        for (;;) {
            ssize_t r = read(sv[1], buf, sizeof buf);
            if (r == 0) {
                closed = true;
                break;
            }
            if (r < 0)
                break;
            /* HTTP/1.x replies begin with a status line; HTTP/2 with a SETTINGS frame */
            if (first && r >= 5 && memcmp(buf, "HTTP/", 5) != 0 && buf[3] != 0x04)
                abort();
            first = false;
        }
    }
    /* after an error reply the server shuts its side first and closes when it reads the
     * client's end (lingering close): a few more turns of the loop */
    for (int i = 0; i < 100 && httpd_connections(srv) != 0; i++)
        event_base_loop(base, EVLOOP_NONBLOCK);
    if (!closed || httpd_connections(srv) != 0)
        abort(); /* the server must close a connection whose client has finished */
    close(sv[1]);
    return 0;
}
