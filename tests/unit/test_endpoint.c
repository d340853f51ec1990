/* Endpoints of a feed: smooth weighted round-robin in exact proportions, failover when an
 * endpoint dies, reconnection once it is back, and the backoff schedule (exponential, capped,
 * jittered). Endpoints are recording HTTP/2 servers run by the test. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/event.h>

#include "adapter_testutil.h"
#include "endpoint.h"
#include "log.h"

#define NEP 3

typedef struct ctx {
    struct event_base *base;
    endpoint_set_t *set;
    endpoint_t *eps[NEP];
    int per_ep[NEP];
    int acked, failed, to_send, sent, ups, downs;
    char payload[200];
} ctx_t;

static int ep_index(ctx_t *c, endpoint_t *ep)
{
    for (int i = 0; i < NEP; i++)
        if (c->eps[i] == ep)
            return i;
    return -1;
}

static void pump(ctx_t *c)
{
    endpoint_t *ep;
    while (c->sent < c->to_send && (ep = endpoint_set_pick(c->set))) {
        if (endpoint_send(ep, (const uint8_t *)c->payload, strlen(c->payload), NULL) != 0)
            break;
        c->per_ep[ep_index(c, ep)]++;
        c->sent++;
    }
}

static void on_ack(void *o, endpoint_t *ep, void *cookie, int status)
{
    ((ctx_t *)o)->acked++;
    pump(o);
}

static void on_fail(void *o, endpoint_t *ep, void *cookie, const transport_failure_t *f)
{
    ctx_t *c = o;
    c->failed++;
    c->sent--; /* resend later through another endpoint */
    c->per_ep[ep_index(c, ep)]--;
}

static void on_capacity(void *o)
{
    pump(o);
}

static void on_state(void *o, endpoint_t *ep, bool up, const char *reason)
{
    ctx_t *c = o;
    if (up)
        c->ups++;
    else
        c->downs++;
}

static const endpoint_events_t EV = {on_ack, on_fail, on_capacity, on_state};

static bool done(void *a)
{
    ctx_t *c = a;
    return c->acked >= c->to_send;
}
static bool all_up(void *a)
{
    return endpoint_set_up_count(((ctx_t *)a)->set) == NEP;
}
static bool one_down(void *a)
{
    return endpoint_set_up_count(((ctx_t *)a)->set) == NEP - 1;
}

static void test_smooth_wrr_failover_and_reconnect(void **state)
{
    log_setup("test_endpoint", LOG_LEVEL_ERROR, 0);
    signal(SIGPIPE, SIG_IGN);
    ctx_t c = {0};
    snprintf(c.payload, sizeof c.payload, "{\"metadata\":{\"seq\":1}}");
    c.base = event_base_new();
    endpoint_opts_t o = {.backoff_initial_ms = 50, .backoff_max_ms = 200, .fail_threshold = 3};
    c.set = endpoint_set_new(c.base, &o, &EV, &c);
    int ports[NEP];
    atu_srv_t *srv[NEP];
    static char urls[NEP][64];
    static transport_url_t u[NEP];
    unsigned weights[NEP] = {1, 2, 3};
    for (int i = 0; i < NEP; i++) {
        ports[i] = atu_free_port(27100, 27999);
        srv[i] = atu_srv_start(ATU_SRV_H2, ports[i], NULL);
        assert_non_null(srv[i]);
        snprintf(urls[i], sizeof urls[i], "http://127.0.0.1:%d/in", ports[i]);
        char err[200];
        assert_int_equal(transport_url_parse(urls[i], &u[i], err, sizeof err), 0);
        transport_config_t tc = {.kind = &transport_desc_http2,
                                 .feed = "t",
                                 .endpoint = urls[i],
                                 .host = u[i].host,
                                 .port = u[i].port,
                                 .max_in_flight = 1000,
                                 .timeout_ms = 2000,
                                 .path = "/in"};
        c.eps[i] = endpoint_set_add(c.set, &tc, weights[i], err, sizeof err);
        assert_non_null(c.eps[i]);
    }
    endpoint_set_start(c.set);
    assert_true(atu_run_until(c.base, all_up, &c, 5000));
    /* Room everywhere (fewer than any stream limit): the picks follow the weights exactly. */
    c.to_send = 90;
    pump(&c);
    assert_int_equal(c.per_ep[0], 15);
    assert_int_equal(c.per_ep[1], 30);
    assert_int_equal(c.per_ep[2], 45);
    assert_true(atu_run_until(c.base, done, &c, 10000));

    /* Endpoint 2 dies: it is taken out and everything goes to the other two. */
    atu_srv_stop(srv[2]);
    assert_true(atu_run_until(c.base, one_down, &c, 5000));
    memset(c.per_ep, 0, sizeof c.per_ep);
    c.to_send += 300;
    pump(&c);
    assert_true(atu_run_until(c.base, done, &c, 10000));
    assert_int_equal(c.per_ep[2], 0);
    assert_int_equal(c.per_ep[0] + c.per_ep[1], 300);

    /* It comes back: the reconnect (backoff <= 200 ms) makes it eligible again. */
    srv[2] = atu_srv_start(ATU_SRV_H2, ports[2], NULL);
    assert_true(atu_run_until(c.base, all_up, &c, 5000));
    memset(c.per_ep, 0, sizeof c.per_ep);
    c.to_send += 60;
    pump(&c);
    assert_true(c.per_ep[2] > 0);
    assert_true(atu_run_until(c.base, done, &c, 10000));
    endpoint_set_free(c.set);
    for (int i = 0; i < NEP; i++)
        atu_srv_stop(srv[i]);
    event_base_free(c.base);
}

static void test_backoff_is_exponential_capped_and_jittered(void **state)
{
    unsigned seed = 42;
    bool saw_different = false;
    uint32_t prev = 0;
    for (unsigned attempt = 1; attempt <= 12; attempt++) {
        uint32_t d = 100;
        for (unsigned i = 1; i < attempt && d < 5000; i++)
            d *= 2;
        if (d > 5000)
            d = 5000;
        for (int k = 0; k < 50; k++) {
            uint32_t b = endpoint_backoff_ms(100, 5000, attempt, &seed);
            assert_true(b >= d / 2);
            assert_true(b <= d);
            saw_different |= k > 0 && b != prev;
            prev = b;
        }
    }
    assert_true(saw_different);
    assert_true(endpoint_backoff_ms(100, 5000, 30, &seed) <= 5000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backoff_is_exponential_capped_and_jittered),
        cmocka_unit_test(test_smooth_wrr_failover_and_reconnect),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
