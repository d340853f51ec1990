/* The feed schema (services/copy/feed_schema.h) against the feed parser: every transport and
 * encoding of the tables is described, and every range the schema states is the range the
 * parser enforces, at both ends, with the refusal naming the option's path. A description
 * that drifted from the check fails here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "encoding.h"
#include "feed_config.h"
#include "feed_schema.h"
#include "transport_desc.h"

static json_t *schema_named(json_t *list, const char *name)
{
    size_t i;
    json_t *x;
    json_array_foreach(
        list, i, x) if (!strcmp(json_string_value(json_object_get(x, "name")), name)) return x;
    return NULL;
}

static void test_every_transport_and_encoding_of_the_tables_is_in_the_schema(void **state)
{
    json_t *s = feed_schema_json(0);
    assert_non_null(s);
    json_t *ts = json_object_get(s, "transports"), *es = json_object_get(s, "encodings");
    assert_int_equal(json_array_size(ts), transport_count());
    assert_int_equal(json_array_size(es), encoding_count());
    for (size_t i = 0; i < transport_count(); i++) {
        const transport_desc_t *d = transport_at(i);
        json_t *t = schema_named(ts, d->name);
        assert_non_null(t);
        for (size_t k = 0; k < TRANSPORT_MAX_ENCODINGS && d->encodings[k]; k++)
            assert_non_null(schema_named(es, d->encodings[k])); /* carried ones exist */
        json_t *member = json_object_get(t, "member");
        assert_true(d->options ? !strcmp(json_string_value(member), d->options)
                               : json_is_null(member));
    }
    /* the feed's transport and encoding members list every row */
    json_t *tr = schema_named(json_object_get(s, "feed"), "transport");
    json_t *en = schema_named(json_object_get(s, "feed"), "encoding");
    assert_int_equal(json_array_size(json_object_get(tr, "enum")), transport_count());
    assert_int_equal(json_array_size(json_object_get(en, "enum")), encoding_count());
    json_decref(s);
}

/* A feed of transport t (and encoding e, else its first) to the transport's example URL. */
static json_t *feed_of(json_t *t, const char *enc)
{
    json_t *encs = json_object_get(t, "encodings");
    return json_pack("{s:s,s:s,s:s,s:[{s:s}]}", "name", "schema-test", "transport",
                     json_string_value(json_object_get(t, "name")), "encoding",
                     enc ? enc : json_string_value(json_array_get(encs, 0)), "endpoints", "url",
                     json_string_value(json_object_get(t, "url_example")));
}

/* Sets path ("delivery.timeout_ms", "kafka.topic.partitions") in f to v, creating objects. */
static void set_path(json_t *f, const char *path, json_t *v)
{
    char buf[192];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *o = f;
    char *save = NULL, *tok = strtok_r(buf, ".", &save), *next;
    while ((next = strtok_r(NULL, ".", &save))) {
        json_t *c = json_object_get(o, tok);
        if (!c)
            json_object_set_new(o, tok, c = json_object());
        o = c;
        tok = next;
    }
    json_object_set_new(o, tok, v);
}

/* Parses f with v at path: 0 accepted; -1 refused, with the refusal's path in *where. */
static int try_value(json_t *base, const char *path, json_int_t v, char *where, size_t n)
{
    json_t *f = json_deep_copy(base);
    set_path(f, path, json_integer(v));
    if (!strcmp(path, "delivery.batch_max")) /* max_pending >= batch_max, another rule */
        set_path(f, "delivery.max_pending", json_integer(1000000));
    jfield_err_t err = {0};
    feed_config_opts_t o = {.filter_by_name = true};
    feed_config_t *c = feed_config_parse(f, &o, &err);
    json_decref(f);
    snprintf(where, n, "%s", err.path);
    feed_config_free(c);
    return c ? 0 : -1;
}

/* Every integer option under list (recursively): min and max accepted, min-1 and max+1
 * refused at the option's path. */
static void check_ranges(json_t *base, json_t *list, int *checked)
{
    size_t i;
    json_t *o;
    json_array_foreach(list, i, o)
    {
        const char *type = json_string_value(json_object_get(o, "type"));
        const char *path = json_string_value(json_object_get(o, "path"));
        if (!strcmp(type, "object")) {
            check_ranges(base, json_object_get(o, "options"), checked);
            continue;
        }
        if (strcmp(type, "integer") || strchr(path, '[')) /* array items: endpoints */
            continue;
        json_int_t lo = json_integer_value(json_object_get(o, "minimum"));
        json_int_t hi = json_integer_value(json_object_get(o, "maximum"));
        char where[192];
        json_int_t ends[2] = {lo, hi};
        for (int e = 0; e < 2; e++)
            if (try_value(base, path, ends[e], where, sizeof where))
                fail_msg("%s = %lld refused (%s) though the schema allows %lld..%lld", path,
                         (long long)ends[e], where, (long long)lo, (long long)hi);
        if (lo > INT64_MIN) {
            assert_int_equal(try_value(base, path, lo - 1, where, sizeof where), -1);
            assert_string_equal(where, path);
        }
        if (hi < INT64_MAX) {
            assert_int_equal(try_value(base, path, hi + 1, where, sizeof where), -1);
            assert_string_equal(where, path);
        }
        (*checked)++;
    }
}

static void test_every_integer_range_in_the_schema_is_the_parsers(void **state)
{
    json_t *s = feed_schema_json(0);
    int checked = 0;
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(s, "transports"), i, t)
    {
        json_t *base = feed_of(t, NULL);
        check_ranges(base, json_object_get(s, "feed"), &checked);
        check_ranges(base, json_object_get(t, "options"), &checked);
        json_decref(base);
        /* the members of the encodings this transport carries */
        size_t k;
        json_t *en;
        json_array_foreach(json_object_get(t, "encodings"), k, en)
        {
            json_t *e = schema_named(json_object_get(s, "encodings"), json_string_value(en));
            if (!json_array_size(json_object_get(e, "options")))
                continue;
            base = feed_of(t, json_string_value(en));
            check_ranges(base, json_object_get(e, "options"), &checked);
            json_decref(base);
        }
    }
    assert_true(checked >= 20); /* delivery alone has 12 */
    json_decref(s);
}

static void test_a_value_of_the_wrong_type_is_refused_at_its_schema_path(void **state)
{
    json_t *s = feed_schema_json(0);
    json_t *http2 = schema_named(json_object_get(s, "transports"), "http2");
    static const struct {
        const char *path;
        const char *json;
    } cases[] = {
        {"delivery.fire_and_forget", "\"yes\""},
        {"tls.verify", "1"},
        {"http.method", "\"GET\""},
        {"http.headers", "[\"x\"]"},
        {"delivery.timeout_ms", "\"5000\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_t *f = feed_of(http2, "json");
        set_path(f, cases[i].path, json_loads(cases[i].json, JSON_DECODE_ANY, NULL));
        jfield_err_t err = {0};
        feed_config_t *c = feed_config_parse(f, NULL, &err);
        assert_null(c);
        assert_string_equal(err.path, cases[i].path);
        json_decref(f);
    }
    json_decref(s);
}

/* The toy transport is one row of this test's table (test_schema_feeds/tables.c) and one file
 * (test_schema_feeds/transport_toy.c), nothing else. */
static void test_a_transport_added_by_a_row_appears_in_the_schema_and_is_checked_by_it(void **state)
{
    json_t *s = feed_schema_json(0);
    json_t *t = schema_named(json_object_get(s, "transports"), "toy");
    assert_non_null(t);
    json_t *depth = json_array_get(json_object_get(t, "options"), 0);
    assert_string_equal(json_string_value(json_object_get(depth, "path")), "toy.depth");
    assert_int_equal(json_integer_value(json_object_get(depth, "default")), 3);
    json_t *f = feed_of(t, NULL);
    char where[192];
    assert_int_equal(try_value(f, "toy.depth", 9, where, sizeof where), 0);
    assert_int_equal(try_value(f, "toy.depth", 10, where, sizeof where), -1);
    assert_string_equal(where, "toy.depth");
    json_decref(f);
    json_decref(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_transport_and_encoding_of_the_tables_is_in_the_schema),
        cmocka_unit_test(test_every_integer_range_in_the_schema_is_the_parsers),
        cmocka_unit_test(test_a_value_of_the_wrong_type_is_refused_at_its_schema_path),
        cmocka_unit_test(
            test_a_transport_added_by_a_row_appears_in_the_schema_and_is_checked_by_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
