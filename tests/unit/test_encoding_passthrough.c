/* The pass-through encoding: the output is the record value byte for byte, one record per
 * batch, and the encoding is raw (the adapter does not decode its records as copies). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "encoding.h"

static void test_passthrough_output_is_the_value_byte_for_byte(void **s)
{
    const encoding_t *e = encoding_find("passthrough");
    assert_non_null(e);
    assert_true(e->raw);
    buf_t out;
    assert_int_equal(buf_init(&out, 0, 1024), 0);
    static const char v[] = "\x0a\x05hello\x00\xff";
    codec_msg_t m;
    memset(&m, 0, sizeof m);
    m.body = (codec_slice_t){v, sizeof v - 1};
    m.key = (codec_slice_t){"k", 1};
    encoding_batch_t b;
    assert_int_equal(e->begin_batch(&b, &out, 0), ENCODING_OK);
    assert_int_equal(e->add(&b, &m), ENCODING_OK);
    assert_int_equal(e->add(&b, &m), ENCODING_FULL);
    assert_int_equal(e->end_batch(&b), ENCODING_OK);
    assert_int_equal(out.len, sizeof v - 1);
    assert_memory_equal(out.data, v, sizeof v - 1);
    buf_free(&out);
}

static void test_passthrough_value_too_big_for_the_output_is_refused(void **s)
{
    const encoding_t *e = encoding_find("passthrough");
    buf_t out;
    assert_int_equal(buf_init(&out, 0, 4), 0);
    codec_msg_t m;
    memset(&m, 0, sizeof m);
    m.body = (codec_slice_t){"123456789", 9};
    encoding_batch_t b;
    assert_int_equal(e->begin_batch(&b, &out, 1), ENCODING_OK);
    assert_int_equal(e->add(&b, &m), ENCODING_TOO_BIG);
    assert_int_equal(out.len, 0);
    assert_int_equal(e->end_batch(&b), ENCODING_ERROR);
    buf_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_passthrough_output_is_the_value_byte_for_byte),
        cmocka_unit_test(test_passthrough_value_too_big_for_the_output_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
