/* The product's transport and encoding tables (transport_table.h, encoding_table.h), checked
 * row by row so that a bad new row fails here rather than in a running daemon: every row is
 * well formed (a name, URL schemes, the implementation's callbacks, an encoding's callbacks
 * and a batch state within ENCODING_STATE_MAX), no name or URL scheme is in a table twice,
 * and every encoding a transport names exists. Then feed_config's refusals that come from a
 * row (a scheme not the transport's, an encoding it does not carry, a host or path a local
 * URL must not or must have, another transport's settings member), each with the field
 * named, on the built-in rows. Adding a transport or an encoding end to end is
 * test_feed_kinds_added_by_one_file_and_one_row. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "encoding.h"
#include "feed_config.h"
#include "transport.h"

static void check_transport_row(const transport_desc_t *d)
{
    if (!d->name || !d->name[0])
        fail_msg("transport row without a name");
    if (!d->schemes[0].name)
        fail_msg("transport \"%s\" has no URL scheme", d->name);
    if (!d->encodings[0])
        fail_msg("transport \"%s\" carries no encoding", d->name);
    for (size_t k = 0; k < TRANSPORT_MAX_ENCODINGS && d->encodings[k]; k++)
        if (!encoding_find(d->encodings[k]))
            fail_msg("transport \"%s\" names unknown encoding \"%s\"", d->name, d->encodings[k]);
    if ((d->options == NULL) != (d->option_desc == NULL))
        fail_msg("transport \"%s\": options and option_desc go together", d->name);
    const transport_ops_t *o = transport_ops_for(d);
    if (!o || !o->create || !o->connect || !o->send || !o->capacity || !o->in_flight || !o->is_up ||
        !o->disconnect || !o->destroy)
        fail_msg("transport \"%s\" lacks its implementation or one of its callbacks", d->name);
}

static void check_encoding_row(const encoding_t *e)
{
    if (!e->name || !e->name[0])
        fail_msg("encoding row without a name");
    if (!e->content_type || !e->begin_batch || !e->add || !e->end_batch)
        fail_msg("encoding \"%s\" lacks its content type or a batch callback", e->name);
    if (e->max_batch == 0 || e->default_batch > e->max_batch)
        fail_msg("encoding \"%s\": default_batch %zu, max_batch %zu", e->name,
                 (size_t)e->default_batch, (size_t)e->max_batch);
    if (e->state_size > ENCODING_STATE_MAX)
        fail_msg("encoding \"%s\": batch state of %zu bytes exceeds %d", e->name, e->state_size,
                 ENCODING_STATE_MAX);
}

static void test_every_row_of_the_tables_is_well_formed(void **state)
{
    assert_true(transport_count() >= 5 && transport_count() <= TRANSPORT_MAX);
    assert_true(encoding_count() >= 5 && encoding_count() <= ENCODING_MAX);
    for (size_t i = 0; i < transport_count(); i++)
        check_transport_row(transport_at(i));
    for (size_t i = 0; i < encoding_count(); i++)
        check_encoding_row(encoding_at(i));
    assert_null(transport_at(transport_count()));
    assert_null(encoding_at(encoding_count()));
    /* The lookups find the rows the product's files define. */
    assert_ptr_equal(encoding_find("frame"), &encoding_frame);
    assert_ptr_equal(transport_find("tls"), &transport_desc_tls);
    assert_ptr_equal(transport_ops_for(&transport_desc_http2), transport_desc_http2.ops);
}

static void test_no_name_or_scheme_is_in_a_table_twice(void **state)
{
    for (size_t i = 0; i < transport_count(); i++) {
        const transport_desc_t *d = transport_at(i);
        assert_ptr_equal(transport_find(d->name), d);
        for (size_t k = 0; k < TRANSPORT_MAX_SCHEMES && d->schemes[k].name; k++) {
            const char *s = d->schemes[k].name;
            const transport_scheme_t *sc = NULL;
            if (transport_find_scheme(s, strlen(s), &sc) != d || sc != &d->schemes[k])
                fail_msg("scheme \"%s\" of transport \"%s\" is another row's too", s, d->name);
        }
    }
    for (size_t i = 0; i < encoding_count(); i++)
        if (encoding_find(encoding_at(i)->name) != encoding_at(i))
            fail_msg("encoding \"%s\" is in the table twice", encoding_at(i)->name);
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

static void test_wrong_scheme_encoding_or_options_are_refused_with_the_field(void **state)
{
    expect_refused(
        "{\"name\":\"q\",\"transport\":\"file\",\"endpoints\":[{\"url\":\"http://h/\"}]}",
        "endpoints[0].url", "scheme does not match transport \"file\" (file)");
    expect_refused(
        "{\"name\":\"q\",\"transport\":\"http2\",\"endpoints\":[{\"url\":\"file:///q\"}]}",
        "endpoints[0].url", "scheme does not match transport \"http2\" (http, https)");
    expect_refused("{\"name\":\"q\",\"transport\":\"file\",\"encoding\":\"frame\","
                   "\"endpoints\":[{\"url\":\"file:///q\"}]}",
                   "encoding",
                   "transport file does not carry \"frame\": use \"json\", \"synthetic\", "
                   "\"xdr-jsonl\"");
    expect_refused("{\"name\":\"q\",\"transport\":\"tcp\",\"encoding\":\"json\","
                   "\"endpoints\":[{\"url\":\"tcp://h:1\"}]}",
                   "encoding", "use \"frame\"");
    expect_refused(
        "{\"name\":\"q\",\"transport\":\"file\",\"endpoints\":[{\"url\":\"file://host/q\"}]}",
        "endpoints[0].url", "a file endpoint has no host");
    expect_refused("{\"name\":\"q\",\"transport\":\"file\",\"endpoints\":[{\"url\":\"file:///\"}]}",
                   "endpoints[0].url", "needs a path");
    expect_refused("{\"name\":\"q\",\"transport\":\"file\",\"endpoints\":[{\"url\":\"file:///q\"}],"
                   "\"file\":{\"colour\":1}}",
                   "file.colour", "");
    expect_refused("{\"name\":\"q\",\"endpoints\":[{\"url\":\"http://h/\"}],\"file\":{}}", "file",
                   "configures transport file");
    expect_refused("{\"name\":\"q\",\"endpoints\":[{\"url\":\"http://h/\"}],"
                   "\"delivery\":{\"fire_and_forget\":true}}",
                   "delivery.fire_and_forget", "\"tcp\", \"tls\"");
    expect_refused("{\"name\":\"q\",\"transport\":\"carrier-pigeon\","
                   "\"endpoints\":[{\"url\":\"http://h/\"}]}",
                   "transport", "\"http2\", \"tcp\", \"tls\", \"file\", \"kafka\"");
    expect_refused("{\"name\":\"q\",\"encoding\":\"xml\",\"endpoints\":[{\"url\":\"http://h/\"}]}",
                   "encoding",
                   "\"json\", \"frame\", \"passthrough\", \"synthetic\", \"xdr-jsonl\"");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_row_of_the_tables_is_well_formed),
        cmocka_unit_test(test_no_name_or_scheme_is_in_a_table_twice),
        cmocka_unit_test(test_wrong_scheme_encoding_or_options_are_refused_with_the_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
