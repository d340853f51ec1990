/* See http_testutil.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "http_testutil.h"
#include "kafka_testutil.h"

#define HTU_MAX_RESPONSE (16u * 1024u * 1024u)
#define HTU_MAX_PAIRS 64

static int64_t htu_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int htu_connect(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int htu_write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int htu_request(uint16_t port, const char *method, const char *path, const char *const *headers,
                const char *body, size_t body_len, int timeout_ms, htu_resp_t *out)
{
    memset(out, 0, sizeof(*out));
    int fd = htu_connect(port);
    if (fd < 0)
        return -1;
    size_t cap = 4096 + body_len + strlen(path);
    for (size_t i = 0; headers && headers[i]; i++)
        cap += strlen(headers[i]) + 2;
    char *req = malloc(cap);
    if (!req) {
        close(fd);
        return -1;
    }
    int n = snprintf(req, cap, "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nConnection: close\r\n",
                     method, path, (unsigned)port);
    for (size_t i = 0; headers && headers[i]; i++)
        n += snprintf(req + n, cap - (size_t)n, "%s\r\n", headers[i]);
    if (body || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
        strcmp(method, "PATCH") == 0)
        n += snprintf(req + n, cap - (size_t)n,
                      "Content-Type: application/json\r\nContent-Length: %zu\r\n", body_len);
    n += snprintf(req + n, cap - (size_t)n, "\r\n");
    if (body_len)
        memcpy(req + n, body, body_len);
    int rc = htu_write_all(fd, req, (size_t)n + body_len);
    free(req);
    if (rc != 0) {
        close(fd);
        return -1;
    }
    size_t len = 0, rcap = 8192;
    char *resp = malloc(rcap);
    int64_t deadline = htu_now_ms() + timeout_ms;
    while (resp) {
        int left = (int)(deadline - htu_now_ms());
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&pfd, 1, left) <= 0)
            break;
        if (len + 4096 + 1 > rcap) {
            if (rcap >= HTU_MAX_RESPONSE)
                break;
            rcap *= 2;
            char *nr = realloc(resp, rcap);
            if (!nr)
                break;
            resp = nr;
        }
        ssize_t r = recv(fd, resp + len, rcap - len - 1, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            resp[len] = '\0';
            char *eoh = strstr(resp, "\r\n\r\n");
            if (eoh && sscanf(resp, "HTTP/1.%*d %d", &out->status) == 1) {
                *eoh = '\0';
                out->headers = strdup(resp);
                out->body_len = len - (size_t)(eoh + 4 - resp);
                out->body = malloc(out->body_len + 1);
                if (out->body) {
                    memcpy(out->body, eoh + 4, out->body_len);
                    out->body[out->body_len] = '\0';
                }
            }
            break;
        }
        len += (size_t)r;
    }
    free(resp);
    close(fd);
    return out->status ? 0 : -1;
}

bool htu_header(const htu_resp_t *r, const char *name, char *buf, size_t len)
{
    if (!r->headers)
        return false;
    size_t nl = strlen(name);
    for (const char *line = strstr(r->headers, "\r\n"); line; line = strstr(line + 2, "\r\n")) {
        const char *h = line + 2;
        if (strncasecmp(h, name, nl) == 0 && h[nl] == ':') {
            h += nl + 1;
            while (*h == ' ')
                h++;
            size_t vl = strcspn(h, "\r");
            snprintf(buf, len, "%.*s", (int)vl, h);
            return true;
        }
    }
    return false;
}

void htu_resp_free(htu_resp_t *r)
{
    free(r->headers);
    free(r->body);
    memset(r, 0, sizeof(*r));
}

/* ---- proxy ---- */

struct htu_proxy {
    char host[256];
    uint16_t port;
    int listen_fd;
    uint16_t listen_port;
    int wake[2];
    pthread_t thread;
    atomic_int cut;     /* requested state */
    atomic_int applied; /* generation the thread applied */
    atomic_int gen;     /* generation requested */
    atomic_int stop;
    int pairs[HTU_MAX_PAIRS][2];
    int npairs;
};

static int htu_target_connect(const htu_proxy_t *p)
{
    if (p->host[0] == '/') {
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        if (strlen(p->host) > 80)
            return -1;
        int n = snprintf(a.sun_path, sizeof(a.sun_path), "%.80s/.s.PGSQL.%u", p->host,
                         (unsigned)p->port);
        if (n < 0 || (size_t)n >= sizeof(a.sun_path))
            return -1;
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
            close(fd);
            fd = -1;
        }
        return fd;
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(p->port)};
    if (inet_pton(AF_INET, strcmp(p->host, "localhost") == 0 ? "127.0.0.1" : p->host,
                  &a.sin_addr) != 1)
        return -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static void htu_close_pair(htu_proxy_t *p, int i)
{
    close(p->pairs[i][0]);
    close(p->pairs[i][1]);
    p->pairs[i][0] = p->pairs[p->npairs - 1][0];
    p->pairs[i][1] = p->pairs[p->npairs - 1][1];
    p->npairs--;
}

static void *htu_proxy_main(void *arg)
{
    htu_proxy_t *p = arg;
    char buf[16384];
    while (!atomic_load(&p->stop)) {
        if (atomic_load(&p->cut))
            while (p->npairs)
                htu_close_pair(p, 0);
        atomic_store(&p->applied, atomic_load(&p->gen));
        struct pollfd pfd[2 + 2 * HTU_MAX_PAIRS];
        int n = 0;
        pfd[n++] = (struct pollfd){.fd = p->wake[0], .events = POLLIN};
        pfd[n++] = (struct pollfd){.fd = p->listen_fd, .events = POLLIN};
        for (int i = 0; i < p->npairs; i++) {
            pfd[n++] = (struct pollfd){.fd = p->pairs[i][0], .events = POLLIN};
            pfd[n++] = (struct pollfd){.fd = p->pairs[i][1], .events = POLLIN};
        }
        if (poll(pfd, (nfds_t)n, 200) <= 0)
            continue;
        if (pfd[0].revents) {
            char c;
            ssize_t ignored = read(p->wake[0], &c, 1);
            (void)ignored;
        }
        if (pfd[1].revents & POLLIN) {
            int c = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC);
            if (c >= 0) {
                int t =
                    atomic_load(&p->cut) || p->npairs >= HTU_MAX_PAIRS ? -1 : htu_target_connect(p);
                if (t < 0) {
                    close(c);
                } else {
                    p->pairs[p->npairs][0] = c;
                    p->pairs[p->npairs][1] = t;
                    p->npairs++;
                }
            }
        }
        /* Forward; a pair whose side closed or failed is torn down whole. Backwards, so
         * the pair swapped into a closed slot was already served. */
        int polled = (n - 2) / 2;
        for (int i = polled - 1; i >= 0; i--) {
            bool dead = false;
            for (int side = 0; side < 2 && !dead; side++) {
                if (!pfd[2 + 2 * i + side].revents)
                    continue;
                ssize_t r = recv(p->pairs[i][side], buf, sizeof(buf), 0);
                if (r <= 0 || htu_write_all(p->pairs[i][!side], buf, (size_t)r) != 0)
                    dead = true;
            }
            if (dead)
                htu_close_pair(p, i);
        }
    }
    while (p->npairs)
        htu_close_pair(p, 0);
    return NULL;
}

htu_proxy_t *htu_proxy_start(const char *host, uint16_t port)
{
    htu_proxy_t *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    snprintf(p->host, sizeof(p->host), "%s", host && *host ? host : "127.0.0.1");
    p->port = port;
    p->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof(a);
    if (p->listen_fd < 0 || bind(p->listen_fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        listen(p->listen_fd, 64) != 0 ||
        getsockname(p->listen_fd, (struct sockaddr *)&a, &al) != 0 || pipe(p->wake) != 0) {
        if (p->listen_fd >= 0)
            close(p->listen_fd);
        free(p);
        return NULL;
    }
    p->listen_port = ntohs(a.sin_port);
    if (pthread_create(&p->thread, NULL, htu_proxy_main, p) != 0) {
        close(p->listen_fd);
        close(p->wake[0]);
        close(p->wake[1]);
        free(p);
        return NULL;
    }
    return p;
}

uint16_t htu_proxy_port(const htu_proxy_t *p)
{
    return p->listen_port;
}

static void htu_proxy_set(htu_proxy_t *p, int cut)
{
    atomic_store(&p->cut, cut);
    int g = atomic_fetch_add(&p->gen, 1) + 1;
    ssize_t ignored = write(p->wake[1], "x", 1);
    (void)ignored;
    for (int i = 0; i < 500 && atomic_load(&p->applied) < g; i++)
        usleep(10000);
}

void htu_proxy_cut(htu_proxy_t *p)
{
    htu_proxy_set(p, 1);
}

void htu_proxy_restore(htu_proxy_t *p)
{
    htu_proxy_set(p, 0);
}

void htu_proxy_stop(htu_proxy_t *p)
{
    if (!p)
        return;
    atomic_store(&p->stop, 1);
    ssize_t ignored = write(p->wake[1], "x", 1);
    (void)ignored;
    pthread_join(p->thread, NULL);
    close(p->listen_fd);
    close(p->wake[0]);
    close(p->wake[1]);
    free(p);
}

uint16_t htu_serving_wait(pid_t pid, const char *port_file, int timeout_ms, int *status)
{
    int64_t deadline = ktu_now_ms() + timeout_ms;
    *status = -1;
    while (ktu_now_ms() < deadline) {
        if (!ktu_alive(pid, status))
            return 0;
        *status = -1;
        FILE *f = fopen(port_file, "r");
        unsigned p = 0;
        if (f) {
            if (fscanf(f, "%u", &p) != 1 || p > 65535)
                p = 0;
            fclose(f);
        }
        if (p) {
            htu_resp_t r;
            int rc = htu_request((uint16_t)p, "GET", "/healthz", NULL, NULL, 0, 2000, &r);
            int code = r.status;
            htu_resp_free(&r);
            if (rc == 0 && code == 200)
                return (uint16_t)p;
        }
        ktu_sleep_ms(20);
    }
    return 0;
}
