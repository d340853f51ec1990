/* Test helpers for talking to a daemon's HTTP API without libcurl: a blocking HTTP/1.1
 * client (one request per connection), and a TCP forwarding proxy whose traffic a test can
 * cut and restore (to make a dependency such as PostgreSQL "unreachable" for one daemon
 * without stopping the server other tests share). */
#ifndef NDD_HTTP_TESTUTIL_H
#define NDD_HTTP_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct htu_resp {
    int status;    /* 0 when no response arrived */
    char *headers; /* the raw header block, NUL-terminated */
    char *body;    /* NUL-terminated copy; body_len excludes the NUL */
    size_t body_len;
} htu_resp_t;

/* Sends one request to 127.0.0.1:port (Connection: close) and reads the whole response.
 * headers: NULL-terminated "Name: value" strings (may be NULL). body may be NULL.
 * Returns 0, or -1 when the connection failed or timed out (out->status is then 0). */
int htu_request(uint16_t port, const char *method, const char *path, const char *const *headers,
                const char *body, size_t body_len, int timeout_ms, htu_resp_t *out);
/* Value of response header `name` (case-insensitive) copied into buf; false when absent. */
bool htu_header(const htu_resp_t *r, const char *name, char *buf, size_t len);
void htu_resp_free(htu_resp_t *r);

/* Waits until process pid has written its --http.port-file and answers GET /healthz with
 * 200 (the start-up wait every admin test needs). The port; 0 when the process exited first
 * (*status its wait status, >= 0) or timeout_ms passed (*status -1). */
uint16_t htu_serving_wait(pid_t pid, const char *port_file, int timeout_ms, int *status);

typedef struct htu_proxy htu_proxy_t;

/* Listens on an ephemeral 127.0.0.1 port and forwards each connection to target: a TCP
 * "host" + port, or, when host starts with '/', the Unix socket host/.s.PGSQL.<port> (the
 * way libpq names them). NULL on failure. */
htu_proxy_t *htu_proxy_start(const char *host, uint16_t port);
uint16_t htu_proxy_port(const htu_proxy_t *p);
/* Cut: closes every forwarded connection and closes new ones at once. Restore: forwards
 * again. Both wait until the proxy thread applied the change. */
void htu_proxy_cut(htu_proxy_t *p);
void htu_proxy_restore(htu_proxy_t *p);
void htu_proxy_stop(htu_proxy_t *p);

#endif
