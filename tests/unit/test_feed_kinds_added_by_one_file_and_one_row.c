/* The walk-through of docs/contributing.md, "Adding a transport": a test-only transport "toy"
 * and a test-only encoding "toy-lines", each ONE file plus ONE table row
 * (test_feed_kinds_added_by_one_file_and_one_row/: transport_toy.c, encoding_toy.c and
 * tables.c, which this test links in place of the product's tables), with no other change:
 *   - the feed schema the admin serves (GET /api/v1/schema/feeds, `ndd-admin schema feeds`)
 *     lists them with the toy's options and capabilities;
 *   - the docs test's check (tests/docs_feed_schema.py) finds docs/api.md's tables lacking
 *     them, and renders their rows;
 *   - a feed naming them validates, and a wrong one is refused with the field named;
 *   - the adapter's delivery path (an endpoint set) encodes a batch with the toy encoding and
 *     delivers it through the toy transport, acknowledged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

#include "encoding.h"
#include "endpoint.h"
#include "feed_config.h"
#include "feed_schema.h"
#include "test_feed_kinds_added_by_one_file_and_one_row/toy.h"
#include "transport.h"

extern const encoding_t encoding_toy_lines;

#define TOY_FEED                                                                                   \
    "{\"name\":\"toybox\",\"transport\":\"toy\",\"encoding\":\"toy-lines\","                       \
    "\"endpoints\":[{\"url\":\"toy:///box-1\"}],\"toy\":{\"box_size\":8}}"

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

/* The member of array a whose "name" is name; NULL when none. */
static json_t *named(json_t *a, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(
        a, i, v) if (!strcmp(json_string_value(json_object_get(v, "name")), name)) return v;
    return NULL;
}

static void test_admin_schema_lists_the_toy_transport_and_encoding(void **state)
{
    json_t *s = feed_schema_json(63);
    assert_non_null(s);
    json_t *t = named(json_object_get(s, "transports"), "toy");
    assert_non_null(t);
    assert_string_equal(json_string_value(json_object_get(t, "member")), "toy");
    assert_string_equal(json_string_value(json_object_get(t, "url_example")), "toy:///box");
    assert_string_equal(json_string_value(json_object_get(t, "acknowledged")), "peer");
    json_t *o = named(json_object_get(t, "options"), "box_size");
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "path")), "toy.box_size");
    assert_int_equal(json_integer_value(json_object_get(o, "maximum")), 4096);
    assert_non_null(named(json_object_get(s, "encodings"), "toy-lines"));
    /* the feed's "transport" and "encoding" members offer them as choices */
    json_t *tr = named(json_object_get(s, "feed"), "transport");
    char *dump = json_dumps(tr, 0);
    assert_non_null(strstr(dump, "\"toy\""));
    free(dump);
    /* the product's rows are all still there, first */
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(s, "transports"), 0), "name")),
                        "http2");
    json_decref(s);
}

/* Runs tests/docs_feed_schema.py on the schema with the toy and a copy of docs/api.md. */
static int docs_check(const char *schema, const char *doc, bool write, char *out, size_t outlen)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "python3 %s/tests/docs_feed_schema.py %s %s%s 2>&1", NDD_SOURCE_DIR,
             schema, doc, write ? " --write" : "");
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, outlen - 1, p);
    out[n] = 0;
    int st = pclose(p);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static void test_docs_check_finds_the_toy_rows_missing_then_renders_them(void **state)
{
    char dir[] = "/tmp/ndd-toy-docs.XXXXXX", schema[128], doc[128], cmd[512];
    assert_non_null(mkdtemp(dir));
    snprintf(schema, sizeof schema, "%s/schema.json", dir);
    snprintf(doc, sizeof doc, "%s/api.md", dir);
    json_t *s = feed_schema_json(63);
    assert_int_equal(json_dump_file(s, schema, 0), 0);
    json_decref(s);
    snprintf(cmd, sizeof cmd, "cp %s/docs/api.md %s", NDD_SOURCE_DIR, doc);
    assert_int_equal(system(cmd), 0);

    static char out[1 << 16];
    assert_int_equal(docs_check(schema, doc, false, out, sizeof out), 1);
    if (!strstr(out, "+| `toy`") && !strstr(out, "toy"))
        fail_msg("the docs check does not name the toy transport:\n%s", out);
    assert_non_null(strstr(out, "toy.box_size"));
    assert_int_equal(docs_check(schema, doc, true, out, sizeof out), 0);
    assert_int_equal(docs_check(schema, doc, false, out, sizeof out), 0);
    snprintf(cmd, sizeof cmd, "grep -q 'toy.box_size' %s && grep -q 'toy-lines' %s", doc, doc);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_feed_naming_the_toys_validates_and_wrong_ones_are_refused(void **state)
{
    jfield_err_t e;
    feed_config_t *c = parse(TOY_FEED, &e);
    if (!c)
        fail_msg("refused: %s: %s", e.path, e.reason);
    assert_string_equal(c->transport->name, "toy");
    assert_ptr_equal(c->encoding, &encoding_toy_lines);
    assert_int_equal(c->delivery.batch_max, 4); /* the encoding's default batch */
    assert_int_equal(json_integer_value(json_object_get(c->transport_options, "box_size")), 8);
    feed_config_free(c);

    c = parse("{\"name\":\"toybox\",\"transport\":\"toy\",\"encoding\":\"frame\","
              "\"endpoints\":[{\"url\":\"toy:///box\"}]}",
              &e);
    assert_null(c);
    assert_string_equal(e.path, "encoding");
    c = parse("{\"name\":\"toybox\",\"transport\":\"toy\",\"encoding\":\"toy-lines\","
              "\"endpoints\":[{\"url\":\"toy:///box\"}],\"toy\":{\"box_size\":0}}",
              &e);
    assert_null(c);
    assert_string_equal(e.path, "toy.box_size");
}

typedef struct deliver {
    struct event_base *base;
    int ups, acks;
} deliver_t;

static void d_on_ack(void *o, endpoint_t *ep, void *cookie, int status)
{
    deliver_t *d = o;
    d->acks++;
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

static void test_adapter_delivers_a_toy_lines_batch_through_the_toy(void **state)
{
    jfield_err_t e;
    feed_config_t *c = parse(TOY_FEED, &e);
    assert_non_null(c);
    assert_non_null(transport_ops_for(c->transport));
    deliver_t d = {.base = event_base_new()};
    static const endpoint_events_t ev = {d_on_ack, d_on_fail, d_on_capacity, d_on_state};
    endpoint_set_t *set = endpoint_set_new(d.base, &(endpoint_opts_t){0}, &ev, &d);
    /* as feed_start fills it */
    transport_config_t tc = {.kind = c->transport,
                             .feed = c->name,
                             .endpoint = c->endpoints[0].url,
                             .host = c->endpoints[0].u.host,
                             .port = c->endpoints[0].u.port,
                             .path = c->endpoints[0].u.path,
                             .content_type = c->encoding->content_type,
                             .encoding = c->encoding,
                             .options = c->transport_options,
                             .max_in_flight = 1};
    char err[200];
    assert_non_null(endpoint_set_add(set, &tc, 1, err, sizeof err));
    assert_string_equal(toy_sink.box, "/box-1");
    endpoint_set_start(set);
    event_base_dispatch(d.base);
    assert_int_equal(d.ups, 1);

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
    int cookie;
    endpoint_t *ep = endpoint_set_pick(set);
    assert_non_null(ep);
    assert_int_equal(endpoint_send(ep, out.data + b.start, out.len - b.start, &cookie), 0);
    event_base_dispatch(d.base);
    assert_int_equal(d.acks, 1);
    assert_int_equal(toy_sink.sends, 1);
    assert_int_equal(toy_sink.len, strlen("alpha\nbeta\ngamma\n"));
    assert_memory_equal(toy_sink.bytes, "alpha\nbeta\ngamma\n", toy_sink.len);

    buf_free(&out);
    endpoint_set_free(set);
    event_base_free(d.base);
    feed_config_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_admin_schema_lists_the_toy_transport_and_encoding),
        cmocka_unit_test(test_docs_check_finds_the_toy_rows_missing_then_renders_them),
        cmocka_unit_test(test_feed_naming_the_toys_validates_and_wrong_ones_are_refused),
        cmocka_unit_test(test_adapter_delivers_a_toy_lines_batch_through_the_toy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
