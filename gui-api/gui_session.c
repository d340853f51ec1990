/* Console sessions: a login exchanges an admin API token (checked by the admin's
 * GET /api/v1/whoami) for a random session id carried in an HttpOnly, SameSite=Strict cookie
 * (Secure on HTTPS) with an expiry, so the token never reaches a URL or the browser's storage.
 * Each session also has a random CSRF token the console sends in X-CSRF-Token on every write
 * (a cross-site page can neither read it nor, with SameSite=Strict, send the cookie).
 * Sessions live in memory (a restart logs everyone out), at most max-sessions: beyond it the
 * oldest is dropped. Ids are compared in constant time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "gui.h"

typedef struct gui_session {
    char id[65];
    int64_t created_ms;
    gui_session_info_t info;
} gui_session_t;

struct gui_sessions {
    pthread_mutex_t mu; /* the poller thread reads a token */
    gui_session_t *v;
    size_t n, max;
    int64_t ttl_ms;
};

static int gui_random_hex(char *out, size_t bytes)
{
    unsigned char r[32];
    if (bytes > sizeof(r) || RAND_bytes(r, (int)bytes) != 1)
        return -1;
    for (size_t i = 0; i < bytes; i++)
        sprintf(out + 2 * i, "%02x", r[i]);
    return 0;
}

gui_sessions_t *gui_sessions_new(size_t max, int64_t ttl_ms)
{
    gui_sessions_t *s = calloc(1, sizeof(*s));
    if (!s || !(s->v = calloc(max, sizeof(*s->v)))) {
        free(s);
        return NULL;
    }
    pthread_mutex_init(&s->mu, NULL);
    s->max = max;
    s->ttl_ms = ttl_ms;
    return s;
}

void gui_sessions_free(gui_sessions_t *s)
{
    if (!s)
        return;
    OPENSSL_cleanse(s->v, s->max * sizeof(*s->v));
    free(s->v);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static void gui_sessions_expire(gui_sessions_t *s, int64_t now_ms)
{
    size_t w = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].info.expires_ms > now_ms)
            s->v[w++] = s->v[i];
    if (w < s->n)
        OPENSSL_cleanse(s->v + w, (s->n - w) * sizeof(*s->v));
    s->n = w;
}

int gui_sessions_create(gui_sessions_t *s, const char *token, const char *name, const char *role,
                        int64_t now_ms, char *id_out, gui_session_info_t *info)
{
    gui_session_t ns;
    memset(&ns, 0, sizeof(ns));
    if (gui_random_hex(ns.id, 32) != 0 || gui_random_hex(ns.info.csrf, 32) != 0)
        return -1;
    snprintf(ns.info.token, sizeof(ns.info.token), "%s", token);
    snprintf(ns.info.name, sizeof(ns.info.name), "%s", name);
    snprintf(ns.info.role, sizeof(ns.info.role), "%s", role);
    ns.created_ms = now_ms;
    ns.info.expires_ms = now_ms + s->ttl_ms;
    pthread_mutex_lock(&s->mu);
    gui_sessions_expire(s, now_ms);
    if (s->n == s->max) { /* full: the oldest goes (sorted by creation) */
        memmove(s->v, s->v + 1, (s->n - 1) * sizeof(*s->v));
        s->n--;
    }
    s->v[s->n++] = ns;
    pthread_mutex_unlock(&s->mu);
    strcpy(id_out, ns.id);
    *info = ns.info;
    OPENSSL_cleanse(&ns, sizeof(ns));
    return 0;
}

bool gui_cookie_get(const char *h, const char *name, char *out, size_t outlen)
{
    size_t nl = strlen(name);
    for (const char *p = h; p && *p;) {
        while (*p == ' ' || *p == ';')
            p++;
        const char *e = strchr(p, ';');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l > nl && strncmp(p, name, nl) == 0 && p[nl] == '=') {
            size_t vl = l - nl - 1;
            if (vl >= outlen)
                return false;
            memcpy(out, p + nl + 1, vl);
            out[vl] = '\0';
            return true;
        }
        p = e;
    }
    return false;
}

static gui_session_t *gui_sessions_find(gui_sessions_t *s, const char *cookie_header)
{
    char id[65];
    if (!cookie_header || !gui_cookie_get(cookie_header, "ndd_session", id, sizeof(id)) ||
        strlen(id) != 64)
        return NULL;
    for (size_t i = 0; i < s->n; i++)
        if (CRYPTO_memcmp(s->v[i].id, id, 64) == 0)
            return &s->v[i];
    return NULL;
}

bool gui_sessions_lookup(gui_sessions_t *s, const char *cookie_header, int64_t now_ms,
                         gui_session_info_t *info)
{
    pthread_mutex_lock(&s->mu);
    gui_sessions_expire(s, now_ms);
    gui_session_t *f = gui_sessions_find(s, cookie_header);
    if (f)
        *info = f->info;
    pthread_mutex_unlock(&s->mu);
    return f != NULL;
}

void gui_sessions_remove(gui_sessions_t *s, const char *cookie_header)
{
    pthread_mutex_lock(&s->mu);
    gui_session_t *f = gui_sessions_find(s, cookie_header);
    if (f) {
        size_t i = (size_t)(f - s->v);
        memmove(s->v + i, s->v + i + 1, (s->n - i - 1) * sizeof(*s->v));
        s->n--;
        OPENSSL_cleanse(s->v + s->n, sizeof(*s->v));
    }
    pthread_mutex_unlock(&s->mu);
}

bool gui_sessions_any_token(gui_sessions_t *s, int64_t now_ms, char *token, size_t len)
{
    pthread_mutex_lock(&s->mu);
    gui_sessions_expire(s, now_ms);
    bool found = s->n > 0;
    if (found)
        snprintf(token, len, "%s", s->v[s->n - 1].info.token);
    pthread_mutex_unlock(&s->mu);
    return found;
}

size_t gui_sessions_count(gui_sessions_t *s, int64_t now_ms)
{
    pthread_mutex_lock(&s->mu);
    gui_sessions_expire(s, now_ms);
    size_t n = s->n;
    pthread_mutex_unlock(&s->mu);
    return n;
}
