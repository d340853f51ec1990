/* The codec's byte checks of header values scan eight bytes at a time (the check runs on every
 * header of every copy): a forbidden byte is found at every position of a value, inside the
 * 8-byte words and in the tail, and every allowed byte (UTF-8 included) still passes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "codec.h"

static codec_msg_t g_msg; /* large: off the stack */

static codec_reason_t decode_with(const char *name, const char *v, size_t len)
{
    rd_kafka_headers_t *h = rd_kafka_headers_new(16);
    rd_kafka_header_add(h, "@timestamp-us", -1, "1764486000000000", -1);
    rd_kafka_header_add(h, "@message-type", -1, "request", -1);
    rd_kafka_header_add(h, "@trigger-point", -1, "rx-request", -1);
    rd_kafka_header_add(h, "@nf-type", -1, "SCP", -1);
    rd_kafka_header_add(h, ":method", -1, "GET", -1);
    rd_kafka_header_add(h, ":path", -1, "/nudm-sdm/v2/imsi-1/am-data", -1);
    rd_kafka_header_add(h, name, -1, v, (ssize_t)len);
    codec_error_t e;
    codec_reason_t r = codec_decode_parts(&g_msg, "k", 1, "", 0, h, &e);
    rd_kafka_headers_destroy(h);
    return r;
}

static void test_http_value_rejects_nul_cr_lf_at_every_position(void **state)
{
    (void)state;
    const char bad[] = {'\0', '\r', '\n'};
    char v[40];
    for (size_t len = 1; len <= sizeof v; len++) {
        memset(v, 'a', len);
        assert_int_equal(decode_with("x-probe", v, len), CODEC_OK);
        for (size_t pos = 0; pos < len; pos++) {
            for (size_t b = 0; b < sizeof bad; b++) {
                memset(v, 'a', len);
                v[pos] = bad[b];
                assert_int_equal(decode_with("x-probe", v, len), CODEC_ERR_BAD_VALUE);
            }
        }
    }
}

static void test_http_value_accepts_every_other_byte(void **state)
{
    (void)state;
    char v[256];
    size_t n = 0;
    for (int c = 1; c < 256; c++)
        if (c != '\r' && c != '\n')
            v[n++] = (char)c;
    assert_int_equal(decode_with("x-probe", v, n), CODEC_OK);
    assert_int_equal(decode_with("x-probe", v + 3, n - 3), CODEC_OK); /* unaligned start */
}

static void test_meta_text_rejects_control_bytes_at_every_position(void **state)
{
    (void)state;
    char v[40];
    for (size_t len = 1; len <= sizeof v; len++) {
        for (size_t pos = 0; pos < len; pos++) {
            for (int c = 0; c < 0x20; c += 0x1f) { /* 0x00 and 0x1f: both ends of the range */
                memset(v, 'b', len);
                v[pos] = (char)c;
                assert_int_equal(decode_with("@producer-fqdn", v, len), CODEC_ERR_BAD_VALUE);
            }
            memset(v, 'b', len);
            v[pos] = 0x7f;
            assert_int_equal(decode_with("@producer-fqdn", v, len), CODEC_ERR_BAD_VALUE);
        }
    }
}

static void test_meta_text_accepts_printable_ascii_and_utf8(void **state)
{
    (void)state;
    char v[256];
    size_t n = 0;
    for (int c = 0x20; c < 256; c++)
        if (c != 0x7f)
            v[n++] = (char)c;
    assert_int_equal(decode_with("@producer-fqdn", v, n), CODEC_OK);
    assert_int_equal(decode_with("@producer-fqdn", v + 5, n - 5), CODEC_OK);
}

static void test_field_names_with_dashes_and_other_tchars_pass(void **state)
{
    (void)state;
    assert_int_equal(decode_with("3gpp-sbi-target-apiroot", "x", 1), CODEC_OK);
    assert_int_equal(decode_with("x!#$%&'*+.^_`|~-1", "x", 1), CODEC_OK);
    assert_int_equal(decode_with("x(y", "x", 1), CODEC_ERR_BAD_HEADER);
    assert_int_equal(decode_with("Upper-Case", "x", 1), CODEC_ERR_BAD_HEADER);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_http_value_rejects_nul_cr_lf_at_every_position),
        cmocka_unit_test(test_http_value_accepts_every_other_byte),
        cmocka_unit_test(test_meta_text_rejects_control_bytes_at_every_position),
        cmocka_unit_test(test_meta_text_accepts_printable_ascii_and_utf8),
        cmocka_unit_test(test_field_names_with_dashes_and_other_tchars_pass),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
