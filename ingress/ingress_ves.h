/* The VES REST handling (ingress_ves.c) that the HTTP/1.1 listener (in the same file) and the
 * HTTP/2 listener (ingress_h2.c) both call: one request in, one reply out, after Kafka's
 * acknowledgement of every event it carried. */
#ifndef NDD_INGRESS_VES_H
#define NDD_INGRESS_VES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ves_reply {
    /* Sends the response; retry_after may be NULL. Called exactly once per request. */
    void (*send)(void *ctx, int status, const char *retry_after, const char *body, size_t len);
    void *ctx;
} ves_reply_t;

typedef struct ves_in {
    const char *method, *path;
    const char *authorization; /* NULL when absent */
    const char *content_type;  /* NULL when absent */
    bool client_cert;          /* a verified client certificate was presented */
    const uint8_t *body;       /* alive until the reply was sent, unless transient */
    size_t len;
    bool transient; /* the body is gone when ingress_ves_handle returns: produced as a copy */
} ves_in_t;

/* true when path is one of VES's (the HTTP/2 listener routes them here). */
bool ingress_ves_path(const char *path);
void ingress_ves_handle(void *ves, const ves_in_t *in, ves_reply_t r);
/* The answer to a VES body above max-body, ONAP's SVC2000 JSON (content type and body, alive
 * as long as ves): what HTTP/1.1 and HTTP/2 clients both get. */
void ingress_ves_too_large(void *ves, const char **content_type, const char **body, size_t *len);

#endif
