/* The console's built files (web-root, BUILD/gui-api/console): index.html for "/", the rest by
 * path. The build names assets by content hash (assets/index-3f2a9c.js), so they are cached
 * for a year as immutable; index.html is revalidated every time, so a new build shows at the
 * next load. A precompressed NAME.gz (written by the build) is served to clients accepting
 * gzip. Paths with "..", hidden files and anything outside web-root are 404. Also the
 * security headers every response carries. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gui.h"
#include "log.h"

#define GUI_STATIC_MAX (16u << 20)

void gui_security_headers(httpd_req_t *req)
{
    /* No inline script or style, nothing from elsewhere: the build emits every file. */
    httpd_resp_header(req, "Content-Security-Policy",
                      "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' "
                      "data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri "
                      "'none'; form-action 'self'; frame-ancestors 'none'");
    httpd_resp_header(req, "X-Content-Type-Options", "nosniff");
    httpd_resp_header(req, "X-Frame-Options", "DENY");
    httpd_resp_header(req, "Referrer-Policy", "no-referrer");
    httpd_resp_header(req, "Cross-Origin-Opener-Policy", "same-origin");
}

static const char *gui_static_type(const char *path)
{
    static const char *const types[][2] = {
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".ico", "image/x-icon"},
        {".json", "application/json"},
        {".woff2", "font/woff2"},
        {".txt", "text/plain; charset=utf-8"},
        {".map", "application/json"},
    };
    const char *dot = strrchr(path, '.');
    for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
        if (strcmp(dot, types[i][0]) == 0)
            return types[i][1];
    return "application/octet-stream";
}

/* Reads path (a regular file at most GUI_STATIC_MAX) into *out; size, or -1. */
static long gui_static_read(const char *path, char **out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > GUI_STATIC_MAX) {
        close(fd);
        return -1;
    }
    char *p = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (p && got < (size_t)st.st_size) {
        ssize_t r = read(fd, p + got, (size_t)st.st_size - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (!p || got != (size_t)st.st_size) {
        free(p);
        return -1;
    }
    *out = p;
    return (long)got;
}

void gui_static_handle(httpd_req_t *req, void *arg)
{
    gui_ctx_t *c = arg;
    gui_security_headers(req);
    const char *p = httpd_req_path(req);
    if (strcmp(p, "/") == 0)
        p = "/index.html";
    if (strstr(p, "..") || strstr(p, "/.") || strlen(p) > 200) {
        httpd_reply_error(req, 404, "no such file");
        return;
    }
    char file[1024], gz[1100];
    snprintf(file, sizeof(file), "%s%s", c->s->web_root, p);
    snprintf(gz, sizeof(gz), "%s.gz", file);
    const char *ae = httpd_req_header(req, "Accept-Encoding");
    char *data = NULL;
    long n = -1;
    bool gzipped = false;
    if (ae && strstr(ae, "gzip") && (n = gui_static_read(gz, &data)) >= 0)
        gzipped = true;
    else
        n = gui_static_read(file, &data);
    if (n < 0) {
        httpd_reply_error(req, 404, "no such file: %s", p);
        return;
    }
    if (gzipped)
        httpd_resp_header(req, "Content-Encoding", "gzip");
    httpd_resp_header(req, "Vary", "Accept-Encoding");
    httpd_resp_header(req, "Cache-Control",
                      strncmp(p, "/assets/", 8) == 0 ? "public, max-age=31536000, immutable"
                                                     : "no-cache");
    httpd_reply(req, 200, gui_static_type(p), data, (size_t)n);
    free(data);
}
