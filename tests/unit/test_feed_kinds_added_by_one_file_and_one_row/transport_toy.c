/* A test-only transport, "toy", added the way docs/contributing.md says: this one file (its
 * descriptor and its implementation) plus one row in the table (tables.c, the tests' copy of
 * services/copy/transport_table.c). It keeps what it is sent in memory and acknowledges each
 * send from the event loop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "toy.h"
#include "transport.h"

toy_sink_t toy_sink;

typedef struct toy {
    transport_t base;
    struct event_base *evb;
    transport_events_t ev;
    void *owner;
    bool up;
    unsigned in_flight;
    void *cookie;
} toy_t;

static void toy_up_cb(evutil_socket_t fd, short what, void *arg)
{
    toy_t *t = arg;
    t->up = true;
    t->ev.on_up(t->owner);
}

static int toy_connect(transport_t *base)
{
    toy_t *t = (toy_t *)base;
    return event_base_once(t->evb, -1, EV_TIMEOUT, toy_up_cb, t, &(struct timeval){0, 0});
}

static void toy_ack_cb(evutil_socket_t fd, short what, void *arg)
{
    toy_t *t = arg;
    t->in_flight--;
    t->ev.on_ack(t->owner, t->cookie, 0);
}

static int toy_send(transport_t *base, const uint8_t *p, size_t n, void *cookie)
{
    toy_t *t = (toy_t *)base;
    if (!t->up || t->in_flight || toy_sink.len + n > sizeof toy_sink.bytes)
        return -1;
    memcpy(toy_sink.bytes + toy_sink.len, p, n);
    toy_sink.len += n;
    toy_sink.sends++;
    t->cookie = cookie;
    t->in_flight++;
    return event_base_once(t->evb, -1, EV_TIMEOUT, toy_ack_cb, t, &(struct timeval){0, 0});
}

static unsigned toy_capacity(const transport_t *base)
{
    const toy_t *t = (const toy_t *)base;
    return t->up && !t->in_flight ? 1 : 0;
}

static unsigned toy_in_flight(const transport_t *base)
{
    return ((const toy_t *)base)->in_flight;
}

static bool toy_is_up(const transport_t *base)
{
    return ((const toy_t *)base)->up;
}

static void toy_disconnect(transport_t *base, const char *reason)
{
    ((toy_t *)base)->up = false;
}

static void toy_destroy(transport_t *base)
{
    free(base);
}

static const transport_ops_t transport_toy_ops;

static transport_t *toy_create(struct event_base *base, const transport_config_t *cfg,
                               const transport_events_t *ev, void *owner, char *err, size_t errlen)
{
    toy_t *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    t->base.ops = &transport_toy_ops;
    t->evb = base;
    t->ev = *ev;
    t->owner = owner;
    snprintf(toy_sink.box, sizeof toy_sink.box, "%s", cfg->path);
    return &t->base;
}

static const transport_ops_t transport_toy_ops = {
    .name = "toy",
    .create = toy_create,
    .connect = toy_connect,
    .send = toy_send,
    .capacity = toy_capacity,
    .in_flight = toy_in_flight,
    .is_up = toy_is_up,
    .disconnect = toy_disconnect,
    .destroy = toy_destroy,
};

/* ---- the descriptor: the toy as feeds, the admin and the schema see it ---- */

static const optdesc_t transport_toy_desc[] = {
    {.name = "box_size",
     .type = OPTDESC_INT,
     .min = 1,
     .max = 4096,
     .def = "64",
     .unit = "records",
     .help = "records the toy box holds"},
    {0},
};

const transport_desc_t transport_desc_toy = {
    .name = "toy",
    .url_example = "toy:///box",
    .schemes = {{"toy", false, NULL}},
    .url_form = TRANSPORT_URL_LOCAL,
    .url_path = TRANSPORT_PATH_REQUIRED,
    .encodings = {"toy-lines", "json"},
    .options = "toy",
    .option_desc = transport_toy_desc,
    .ops = &transport_toy_ops,
};
