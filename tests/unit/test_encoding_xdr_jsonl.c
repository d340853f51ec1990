/* The xdr-jsonl encoding: each xDR record's JSON object becomes one line (whitespace between
 * tokens removed, strings untouched), the encoding is raw, and a value that is not one JSON
 * object, or a binary xDR, is refused with a reason (the feed dead-letters it). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "encoding.h"

static encoding_result_t add(const encoding_t *e, encoding_batch_t *b, const char *v, size_t n)
{
    codec_msg_t m;
    memset(&m, 0, sizeof m);
    m.body = (codec_slice_t){v, n};
    m.key = (codec_slice_t){"cid-1", 5};
    return e->add(b, &m);
}

static void test_each_xdr_becomes_one_compact_line_strings_untouched(void **s)
{
    (void)s;
    const encoding_t *e = encoding_find("xdr-jsonl");
    assert_non_null(e);
    assert_true(e->raw);
    assert_string_equal(e->content_type, ENCODING_NDJSON_CONTENT_TYPE);
    buf_t out;
    assert_int_equal(buf_init(&out, 0, 4096), 0);
    static const char a[] = "{\n  \"correlation_id\": \"c 1\",\n  \"path\": \"/a b\\\" {x}\",\n"
                            "  \"status\" : 200, \"seen\": [1, 2]\n}\n";
    static const char b2[] = "{\"correlation_id\":\"c2\"}";
    encoding_batch_t b;
    assert_int_equal(e->begin_batch(&b, &out, 0), ENCODING_OK);
    assert_int_equal(add(e, &b, a, sizeof a - 1), ENCODING_OK);
    assert_int_equal(add(e, &b, b2, sizeof b2 - 1), ENCODING_OK);
    assert_int_equal(e->end_batch(&b), ENCODING_OK);
    static const char want[] =
        "{\"correlation_id\":\"c 1\",\"path\":\"/a b\\\" {x}\",\"status\":200,\"seen\":[1,2]}\n"
        "{\"correlation_id\":\"c2\"}\n";
    assert_int_equal(out.len, sizeof want - 1);
    assert_memory_equal(out.data, want, sizeof want - 1);
    buf_free(&out);
}

static void test_not_an_object_or_a_binary_xdr_is_refused_with_a_reason(void **s)
{
    (void)s;
    const encoding_t *e = encoding_find("xdr-jsonl");
    buf_t out;
    assert_int_equal(buf_init(&out, 0, 4096), 0);
    static const char bin[] = "XDR1\x01\x00\x01\x00";
    const struct {
        const char *v;
        size_t n;
        const char *why;
    } bad[] = {
        {bin, sizeof bin - 1, "binary xDR"},    {"[1,2]", 5, "not one JSON object"},
        {"{\"a\":1", 6, "not one JSON object"}, {"{\"a\":1}{}", 9, "not one JSON object"},
        {"", 0, "not one JSON object"},         {"  ", 2, "not one JSON object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        encoding_batch_t b;
        assert_int_equal(e->begin_batch(&b, &out, 0), ENCODING_OK);
        assert_int_equal(add(e, &b, bad[i].v, bad[i].n), ENCODING_REFUSED);
        assert_non_null(strstr(b.refused, bad[i].why));
        assert_int_equal(e->end_batch(&b), ENCODING_ERROR); /* nothing was added */
        assert_int_equal(out.len, 0);
    }
    buf_free(&out);
}

static void test_an_xdr_too_big_for_the_output_is_too_big_and_a_full_batch_says_full(void **s)
{
    (void)s;
    const encoding_t *e = encoding_find("xdr-jsonl");
    buf_t out;
    assert_int_equal(buf_init(&out, 0, 16), 0);
    static const char v[] = "{\"correlation_id\":\"0123456789\"}";
    encoding_batch_t b;
    assert_int_equal(e->begin_batch(&b, &out, 0), ENCODING_OK);
    assert_int_equal(add(e, &b, v, sizeof v - 1), ENCODING_TOO_BIG);
    assert_int_equal(out.len, 0);
    buf_free(&out);
    assert_int_equal(buf_init(&out, 0, 40), 0);
    assert_int_equal(e->begin_batch(&b, &out, 0), ENCODING_OK);
    assert_int_equal(add(e, &b, v, sizeof v - 1), ENCODING_OK);
    assert_int_equal(add(e, &b, v, sizeof v - 1), ENCODING_FULL);
    assert_int_equal(e->end_batch(&b), ENCODING_OK);
    assert_int_equal(out.len, sizeof v); /* the line and its '\n' */
    buf_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_xdr_becomes_one_compact_line_strings_untouched),
        cmocka_unit_test(test_not_an_object_or_a_binary_xdr_is_refused_with_a_reason),
        cmocka_unit_test(test_an_xdr_too_big_for_the_output_is_too_big_and_a_full_batch_says_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
