/* The transport and encoding tables, used the way a new transport or encoding is added
 * (docs/adapter.md, "Adding a transport or an encoding"): a test transport "memq" (no host in
 * its URLs, memq:///queue, like a file transport; acks on durable write; fire-and-forget; its
 * own "memq" settings) and a test encoding "lines" (newline-separated bodies, with its own
 * batch state) are registered at run time through the same functions the built-in rows go
 * through. feed_config accepts a feed naming them, refuses wrong combinations with the field
 * named, and the adapter's delivery path (an endpoint set) encodes a batch with the encoding
 * and sends it through the transport. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/event.h>

#include "encoding.h"
#include "endpoint.h"
#include "feed_config.h"
#include "transport.h"

/* ---- the test encoding: one file and one row, as a new encoding would be ---- */

typedef struct lines_state {
    size_t bytes;   /* body bytes in the batch */
    uint32_t check; /* a sum of those bytes, written as the last line by end_batch */
} lines_state_t;

static lines_state_t *lines_state(encoding_batch_t *b)
{
    return (lines_state_t *)(void *)b->state.bytes;
}

extern const encoding_t encoding_lines;

static encoding_result_t lines_begin(encoding_batch_t *b, buf_t *out, size_t max_count)
{
    encoding_batch_open(b, &encoding_lines, out, max_count);
    return ENCODING_OK;
}

static encoding_result_t lines_add(encoding_batch_t *b, const codec_msg_t *m)
{
    if (b->count >= b->max_count)
        return ENCODING_FULL;
    size_t at = b->out->len;
    if (buf_append(b->out, m->body.ptr, m->body.len) || buf_append_u8(b->out, '\n')) {
        b->out->len = at;
        return b->count ? ENCODING_FULL : ENCODING_TOO_BIG;
    }
    lines_state_t *s = lines_state(b);
    s->bytes += m->body.len;
    for (size_t i = 0; i < m->body.len; i++)
        s->check += (uint8_t)m->body.ptr[i];
    b->count++;
    return ENCODING_OK;
}

static encoding_result_t lines_end(encoding_batch_t *b)
{
    if (b->count == 0)
        return ENCODING_ERROR;
    lines_state_t *s = lines_state(b);
    return buf_printf(b->out, "# %zu bytes, sum %u\n", s->bytes, (unsigned)s->check)
               ? ENCODING_ERROR
               : ENCODING_OK;
}

const encoding_t encoding_lines = {
    .name = "lines",
    .content_type = "text/plain",
    .max_batch = 100,
    .default_batch = 8,
    .state_size = sizeof(lines_state_t),
    .begin_batch = lines_begin,
    .add = lines_add,
    .end_batch = lines_end,
};

/* ---- the test transport: its description row and its implementation ---- */

static const optdesc_t memq_desc[] = {
    {.name = "capacity",
     .type = OPTDESC_INT,
     .min = 1,
     .max = 1000,
     .def = "16",
     .unit = "records",
     .help = "records the queue holds"},
    {0},
};

/* Records what it was given and acks each send from the event loop. */
typedef struct memq {
    transport_t base;
    struct event_base *evb;
    transport_events_t ev;
    void *owner;
    bool up;
    unsigned in_flight;
    char sent[1024];
    size_t sent_len;
    void *cookie;
    char queue[128];
} memq_t;

static memq_t *memq_last; /* the one the test's endpoint set created */

static transport_t *memq_create(struct event_base *base, const transport_config_t *cfg,
                                const transport_events_t *ev, void *owner, char *err,
                                size_t errlen);

static void memq_up_cb(evutil_socket_t fd, short what, void *arg)
{
    memq_t *q = arg;
    q->up = true;
    q->ev.on_up(q->owner);
}

static int memq_connect(transport_t *t)
{
    memq_t *q = (memq_t *)t;
    return event_base_once(q->evb, -1, EV_TIMEOUT, memq_up_cb, q, &(struct timeval){0, 0});
}

static void memq_ack_cb(evutil_socket_t fd, short what, void *arg)
{
    memq_t *q = arg;
    q->in_flight--;
    q->ev.on_ack(q->owner, q->cookie, 0);
}

static int memq_send(transport_t *t, const uint8_t *p, size_t n, void *cookie)
{
    memq_t *q = (memq_t *)t;
    if (!q->up || q->in_flight || n > sizeof q->sent)
        return -1;
    memcpy(q->sent, p, n);
    q->sent_len = n;
    q->cookie = cookie;
    q->in_flight++;
    return event_base_once(q->evb, -1, EV_TIMEOUT, memq_ack_cb, q, &(struct timeval){0, 0});
}

static unsigned memq_capacity(const transport_t *t)
{
    const memq_t *q = (const memq_t *)t;
    return q->up && !q->in_flight ? 1 : 0;
}

static unsigned memq_in_flight(const transport_t *t)
{
    return ((const memq_t *)t)->in_flight;
}

static bool memq_is_up(const transport_t *t)
{
    return ((const memq_t *)t)->up;
}

static void memq_disconnect(transport_t *t, const char *reason)
{
    memq_t *q = (memq_t *)t;
    q->up = false;
}

static void memq_destroy(transport_t *t)
{
    if (memq_last == (memq_t *)t)
        memq_last = NULL;
    free(t);
}

static const transport_ops_t transport_memq_ops = {
    .name = "memq",
    .create = memq_create,
    .connect = memq_connect,
    .send = memq_send,
    .capacity = memq_capacity,
    .in_flight = memq_in_flight,
    .is_up = memq_is_up,
    .disconnect = memq_disconnect,
    .destroy = memq_destroy,
};

static const transport_desc_t transport_desc_memq = {
    .name = "memq",
    .schemes = {{"memq", false, NULL}},
    .url_form = TRANSPORT_URL_LOCAL,
    .url_path = TRANSPORT_PATH_REQUIRED,
    .fire_and_forget = true,
    .ack = TRANSPORT_ACK_DURABLE,
    .encodings = {"lines"},
    .options = "memq",
    .option_desc = memq_desc,
    .ops = &transport_memq_ops,
};

static transport_t *memq_create(struct event_base *base, const transport_config_t *cfg,
                                const transport_events_t *ev, void *owner, char *err, size_t errlen)
{
    memq_t *q = calloc(1, sizeof *q);
    if (!q) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    q->base.ops = &transport_memq_ops;
    q->evb = base;
    q->ev = *ev;
    q->owner = owner;
    snprintf(q->queue, sizeof q->queue, "%s", cfg->path);
    memq_last = q;
    return &q->base;
}

/* ---- tests ---- */

static int registry_setup(void **state)
{
    char err[200];
    assert_int_equal(encoding_register(&encoding_lines, err, sizeof err), 0);
    assert_int_equal(transport_register(&transport_desc_memq, err, sizeof err), 0);
    return 0;
}

static feed_config_t *parse(const char *text, jfield_err_t *e)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j)
        fail_msg("bad test JSON: %s", je.text);
    memset(e, 0, sizeof *e);
    feed_config_t *c = feed_config_parse(j, NULL, e);
    json_decref(j);
    return c;
}

/* The refusal of text: the field it names, and a piece of its reason. */
static void expect_refused(const char *text, const char *path, const char *reason)
{
    jfield_err_t e;
    feed_config_t *c = parse(text, &e);
    if (c) {
        feed_config_free(c);
        fail_msg("accepted but should be refused: %s", text);
    }
    assert_string_equal(e.path, path);
    if (!strstr(e.reason, reason))
        fail_msg("reason \"%s\" lacks \"%s\"", e.reason, reason);
}

static void test_registering_a_taken_name_or_scheme_is_refused(void **state)
{
    char err[200];
    assert_int_equal(encoding_register(&encoding_lines, err, sizeof err), -1);
    assert_non_null(strstr(err, "already registered"));
    assert_int_equal(transport_register(&transport_desc_memq, err, sizeof err), -1);
    assert_non_null(strstr(err, "already registered"));
    transport_desc_t steals_https = {.name = "other", .schemes = {{"https", true, "443"}}};
    assert_int_equal(transport_register(&steals_https, err, sizeof err), -1);
    assert_non_null(strstr(err, "scheme \"https\""));
    encoding_t too_big = encoding_lines;
    too_big.name = "big";
    too_big.state_size = ENCODING_STATE_MAX + 1;
    assert_int_equal(encoding_register(&too_big, err, sizeof err), -1);
    assert_non_null(strstr(err, "batch state"));
    /* The built-in rows are in the same tables. */
    assert_ptr_equal(encoding_find("frame"), &encoding_frame);
    assert_ptr_equal(transport_find("tls"), &transport_desc_tls);
    assert_ptr_equal(transport_ops_for(&transport_desc_http2), transport_desc_http2.ops);
    assert_non_null(transport_desc_http2.ops);
}

static void test_feed_naming_the_new_transport_and_encoding_is_accepted(void **state)
{
    jfield_err_t e;
    feed_config_t *c = parse("{\"name\":\"q\",\"transport\":\"memq\",\"encoding\":\"lines\","
                             "\"endpoints\":[{\"url\":\"memq:///spool/q1\"}],"
                             "\"memq\":{\"capacity\":8},\"delivery\":{\"fire_and_forget\":true}}",
                             &e);
    if (!c)
        fail_msg("refused: %s: %s", e.path, e.reason);
    assert_ptr_equal(c->transport, &transport_desc_memq);
    assert_ptr_equal(c->encoding, &encoding_lines);
    assert_ptr_equal(c->endpoints[0].u.kind, &transport_desc_memq);
    assert_string_equal(c->endpoints[0].u.host, "");
    assert_string_equal(c->endpoints[0].u.path, "/spool/q1");
    assert_int_equal(c->delivery.batch_max, encoding_lines.default_batch);
    assert_true(c->delivery.fire_and_forget);
    assert_non_null(c->transport_options);
    assert_int_equal(json_integer_value(json_object_get(c->transport_options, "capacity")), 8);
    feed_config_free(c);
}

static void test_wrong_scheme_encoding_or_options_are_refused_with_the_field(void **state)
{
    expect_refused("{\"name\":\"q\",\"transport\":\"memq\",\"encoding\":\"lines\","
                   "\"endpoints\":[{\"url\":\"http://h/\"}]}",
                   "endpoints[0].url", "scheme does not match transport \"memq\" (memq)");
    expect_refused(
        "{\"name\":\"q\",\"transport\":\"http2\",\"endpoints\":[{\"url\":\"memq:///q\"}]}",
        "endpoints[0].url", "scheme does not match transport \"http2\" (http, https)");
    expect_refused("{\"name\":\"q\",\"transport\":\"memq\","
                   "\"endpoints\":[{\"url\":\"memq:///q\"}]}",
                   "encoding", "transport memq does not carry \"json\": use \"lines\"");
    expect_refused("{\"name\":\"q\",\"transport\":\"tcp\",\"encoding\":\"lines\","
                   "\"endpoints\":[{\"url\":\"tcp://h:1\"}]}",
                   "encoding", "use \"frame\"");
    expect_refused("{\"name\":\"q\",\"transport\":\"memq\",\"encoding\":\"lines\","
                   "\"endpoints\":[{\"url\":\"memq://host/q\"}]}",
                   "endpoints[0].url", "a memq endpoint has no host");
    expect_refused("{\"name\":\"q\",\"transport\":\"memq\",\"encoding\":\"lines\","
                   "\"endpoints\":[{\"url\":\"memq:///\"}]}",
                   "endpoints[0].url", "needs a path");
    expect_refused("{\"name\":\"q\",\"transport\":\"memq\",\"encoding\":\"lines\","
                   "\"endpoints\":[{\"url\":\"memq:///q\"}],\"memq\":{\"colour\":1}}",
                   "memq.colour", "");
    expect_refused("{\"name\":\"q\",\"endpoints\":[{\"url\":\"http://h/\"}],\"memq\":{}}", "memq",
                   "configures transport memq");
    expect_refused("{\"name\":\"q\",\"endpoints\":[{\"url\":\"http://h/\"}],"
                   "\"delivery\":{\"fire_and_forget\":true}}",
                   "delivery.fire_and_forget", "\"tcp\", \"tls\", \"memq\"");
    expect_refused("{\"name\":\"q\",\"transport\":\"carrier-pigeon\","
                   "\"endpoints\":[{\"url\":\"http://h/\"}]}",
                   "transport", "\"http2\", \"tcp\", \"tls\", \"file\", \"kafka\", \"memq\"");
    expect_refused("{\"name\":\"q\",\"encoding\":\"xml\",\"endpoints\":[{\"url\":\"http://h/\"}]}",
                   "encoding",
                   "\"json\", \"frame\", \"passthrough\", \"synthetic\", \"xdr-jsonl\", \"lines\"");
}

typedef struct deliver {
    struct event_base *base;
    int ups, acks;
    void *cookie;
} deliver_t;

static void d_on_ack(void *o, endpoint_t *ep, void *cookie, int status)
{
    deliver_t *d = o;
    d->acks++;
    d->cookie = cookie;
    event_base_loopbreak(d->base);
}

static void d_on_fail(void *o, endpoint_t *ep, void *cookie, const transport_failure_t *f)
{
    fail_msg("send failed: %s", f->reason);
}

static void d_on_capacity(void *o)
{
    event_base_loopbreak(((deliver_t *)o)->base);
}

static void d_on_state(void *o, endpoint_t *ep, bool up, const char *reason)
{
    ((deliver_t *)o)->ups += up;
}

static void test_delivery_path_encodes_and_sends_through_the_new_transport(void **state)
{
    jfield_err_t e;
    feed_config_t *c = parse("{\"name\":\"q\",\"transport\":\"memq\",\"encoding\":\"lines\","
                             "\"endpoints\":[{\"url\":\"memq:///spool/q2\"}]}",
                             &e);
    assert_non_null(c);
    deliver_t d = {.base = event_base_new()};
    static const endpoint_events_t ev = {d_on_ack, d_on_fail, d_on_capacity, d_on_state};
    endpoint_set_t *set = endpoint_set_new(d.base, &(endpoint_opts_t){0}, &ev, &d);
    transport_config_t tc = {.kind = c->transport,
                             .feed = c->name,
                             .endpoint = c->endpoints[0].url,
                             .host = c->endpoints[0].u.host,
                             .port = c->endpoints[0].u.port,
                             .path = c->endpoints[0].u.path,
                             .content_type = c->encoding->content_type,
                             .max_in_flight = 1};
    char err[200];
    assert_non_null(endpoint_set_add(set, &tc, 1, err, sizeof err));
    assert_non_null(memq_last);
    assert_string_equal(memq_last->queue, "/spool/q2");
    endpoint_set_start(set);
    event_base_dispatch(d.base);
    assert_int_equal(d.ups, 1);

    /* A batch as feed_consume builds one: begin, add until full or done, end. */
    buf_t out;
    buf_init(&out, 0, 4096);
    encoding_batch_t b;
    assert_int_equal(c->encoding->begin_batch(&b, &out, c->delivery.batch_max), ENCODING_OK);
    const char *bodies[] = {"alpha", "beta", "gamma"};
    for (size_t i = 0; i < 3; i++) {
        codec_msg_t m;
        memset(&m, 0, sizeof m);
        m.body = (codec_slice_t){bodies[i], strlen(bodies[i])};
        assert_int_equal(c->encoding->add(&b, &m), ENCODING_OK);
    }
    assert_int_equal(c->encoding->end_batch(&b), ENCODING_OK);
    const char want[] = "alpha\nbeta\ngamma\n# 14 bytes, sum 1445\n";
    assert_int_equal(out.len - b.start, strlen(want));

    endpoint_t *ep = endpoint_set_pick(set);
    assert_non_null(ep);
    int cookie;
    assert_int_equal(endpoint_send(ep, out.data + b.start, out.len - b.start, &cookie), 0);
    event_base_dispatch(d.base);
    assert_int_equal(d.acks, 1);
    assert_ptr_equal(d.cookie, &cookie);
    assert_memory_equal(memq_last->sent, want, strlen(want));

    buf_free(&out);
    endpoint_set_free(set);
    event_base_free(d.base);
    feed_config_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registering_a_taken_name_or_scheme_is_refused),
        cmocka_unit_test(test_feed_naming_the_new_transport_and_encoding_is_accepted),
        cmocka_unit_test(test_wrong_scheme_encoding_or_options_are_refused_with_the_field),
        cmocka_unit_test(test_delivery_path_encodes_and_sends_through_the_new_transport),
    };
    return cmocka_run_group_tests(tests, registry_setup, NULL);
}
