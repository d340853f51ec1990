/* A daemon's main, and how a stop reaches a libevent loop: see daemon_role.h. */
#include "daemon_role.h"

#include <signal.h>
#include <stdlib.h>

#include <event2/event.h>

#include "log.h"

int daemon_role_main(const daemon_role_t *role, int argc, char **argv)
{
    daemon_heap_setup(role->arena_max);
    daemon_t d;
    int rc = daemon_init(&d, role->def, argc, argv);
    if (rc == DAEMON_CONTINUE)
        rc = role->run(&d);
    daemon_free(&d);
    return rc;
}

struct daemon_evstop {
    daemon_t *d;
    struct event_base *base;
    void (*on_reload)(void *arg);
    void *arg;
    struct event *ev[3]; /* alone: SIGTERM, SIGINT, SIGHUP; embedded: ev[0], the timer */
};

static void daemon_evstop_stop(daemon_evstop_t *s, const char *why)
{
    log_info("%s: %s: stopping", s->d->name, why);
    event_base_loopbreak(s->base);
}

static void daemon_evstop_on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    daemon_evstop_t *s = arg;
    if (sig == SIGHUP) {
        s->on_reload(s->arg);
        return;
    }
    daemon_evstop_stop(s, sig == SIGTERM ? "SIGTERM" : "SIGINT");
}

static void daemon_evstop_on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    daemon_evstop_t *s = arg;
    if (*s->d->stop) {
        daemon_evstop_stop(s, "asked by ndd");
        return;
    }
    if (*s->d->reload) {
        *s->d->reload = 0;
        if (s->on_reload)
            s->on_reload(s->arg);
    }
}

daemon_evstop_t *daemon_evstop_new(daemon_t *d, struct event_base *base,
                                   void (*on_reload)(void *arg), void *arg)
{
    daemon_evstop_t *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    *s = (daemon_evstop_t){.d = d, .base = base, .on_reload = on_reload, .arg = arg};
    bool ok = true;
    if (daemon_is_embedded(d)) {
        s->ev[0] = event_new(base, -1, EV_PERSIST, daemon_evstop_on_tick, s);
        struct timeval tv = {0, 100 * 1000};
        ok = s->ev[0] && event_add(s->ev[0], &tv) == 0;
    } else {
        int sigs[3] = {SIGTERM, SIGINT, SIGHUP};
        for (int i = 0; ok && i < (on_reload ? 3 : 2); i++) {
            s->ev[i] = evsignal_new(base, sigs[i], daemon_evstop_on_signal, s);
            ok = s->ev[i] && event_add(s->ev[i], NULL) == 0;
        }
        signal(SIGPIPE, SIG_IGN);
    }
    if (!ok) {
        daemon_evstop_free(s);
        return NULL;
    }
    return s;
}

void daemon_evstop_free(daemon_evstop_t *s)
{
    if (!s)
        return;
    for (int i = 0; i < 3; i++)
        if (s->ev[i])
            event_free(s->ev[i]);
    free(s);
}
