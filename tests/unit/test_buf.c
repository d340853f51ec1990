#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "buf.h"

static void test_append_refuses_growth_past_max_and_keeps_contents(void **state)
{
    buf_t b;
    assert_int_equal(buf_init(&b, 0, 8), 0);
    assert_int_equal(buf_append(&b, "12345678", 8), 0);
    assert_int_equal(buf_append(&b, "9", 1), -1);
    assert_int_equal(b.len, 8);
    assert_memory_equal(b.data, "12345678", 8);
    buf_free(&b);
}

static void test_init_refuses_initial_larger_than_max(void **state)
{
    buf_t b;
    assert_int_equal(buf_init(&b, 16, 8), -1);
}

static void test_big_endian_writers_match_readers(void **state)
{
    buf_t b;
    buf_init(&b, 0, 64);
    buf_append_be16(&b, 0xBEEF);
    buf_append_be32(&b, 0x4E444431);
    buf_append_be64(&b, 0x0102030405060708ULL);
    assert_int_equal(b.len, 14);
    assert_int_equal(buf_rd_be16(b.data), 0xBEEF);
    assert_int_equal(buf_rd_be32(b.data + 2), 0x4E444431);
    assert_true(buf_rd_be64(b.data + 6) == 0x0102030405060708ULL);
    assert_memory_equal(b.data + 2, "NDD1", 4);
    buf_free(&b);
}

static void test_base64_matches_rfc4648_vectors(void **state)
{
    static const char *in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *out[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (size_t i = 0; i < 7; i++) {
        buf_t b;
        buf_init(&b, 0, 64);
        assert_int_equal(buf_append_base64(&b, in[i], strlen(in[i])), 0);
        assert_int_equal(b.len, strlen(out[i]));
        assert_memory_equal(b.data, out[i], b.len);
        buf_free(&b);
    }
}

/* The decoder gives back every vector with or without its padding, and refuses what is not
 * base64 instead of skipping it (EVP_DecodeBlock alone would skip blanks and count the padding
 * as zero bytes). */
static void test_base64_decode_round_trips_and_refuses_garbage(void **state)
{
    static const char *raw[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *enc[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    uint8_t out[16];
    for (size_t i = 0; i < 7; i++) {
        size_t n = strlen(enc[i]);
        assert_int_equal(buf_base64_decode(enc[i], n, out, sizeof out), (long)strlen(raw[i]));
        assert_memory_equal(out, raw[i], strlen(raw[i]));
        while (n && enc[i][n - 1] == '=')
            n--;
        assert_int_equal(buf_base64_decode(enc[i], n, out, sizeof out), (long)strlen(raw[i]));
        assert_memory_equal(out, raw[i], strlen(raw[i]));
    }
    uint8_t bin[256];
    for (size_t i = 0; i < sizeof bin; i++)
        bin[i] = (uint8_t)(255 - i);
    buf_t b;
    buf_init(&b, 0, 1024);
    assert_int_equal(buf_append_base64(&b, bin, sizeof bin), 0);
    uint8_t back[256];
    assert_int_equal(buf_base64_decode((const char *)b.data, b.len, back, sizeof back),
                     (long)sizeof bin);
    assert_memory_equal(back, bin, sizeof bin);
    assert_int_equal(buf_base64_decode((const char *)b.data, b.len, back, sizeof back - 1), -1);
    buf_free(&b);
    assert_int_equal(buf_base64_decode(" Zm9v", 5, out, sizeof out), -1);
    assert_int_equal(buf_base64_decode("Zm9v\n", 5, out, sizeof out), -1);
    assert_int_equal(buf_base64_decode("Zg==Zm8=", 8, out, sizeof out), -1);
    assert_int_equal(buf_base64_decode("Zm9vY", 5, out, sizeof out), -1);
    assert_int_equal(buf_base64_decode("Zm-v", 4, out, sizeof out), -1);
}

/* A base64 output that exactly fills the buffer's limit fits: the encoder needs no byte
 * beyond its output (EVP_EncodeBlock's NUL terminator never lands past it). */
static void test_base64_fills_the_limit_exactly(void **state)
{
    buf_t b;
    buf_init(&b, 0, 8);
    assert_int_equal(buf_append_base64(&b, "foobar", 6), 0);
    assert_int_equal(b.len, 8);
    assert_memory_equal(b.data, "Zm9vYmFy", 8);
    assert_int_equal(buf_append_base64(&b, "f", 1), -1);
    buf_free(&b);
    buf_init(&b, 0, 4);
    assert_int_equal(buf_append_base64(&b, "fo", 2), 0);
    assert_memory_equal(b.data, "Zm8=", 4);
    buf_free(&b);
}

static void test_json_escape_handles_quotes_controls_and_invalid_utf8(void **state)
{
    buf_t b;
    buf_init(&b, 0, 256);
    const char in[] = "a\"b\\c\n\x01\xc3\xa9\xff";
    assert_int_equal(buf_append_json_escaped(&b, in, sizeof in - 1), 0);
    const char want[] = "a\\\"b\\\\c\\n\\u0001\xc3\xa9\xef\xbf\xbd";
    assert_int_equal(b.len, sizeof want - 1);
    assert_memory_equal(b.data, want, b.len);
    buf_free(&b);
}

static void test_printf_formats_long_strings(void **state)
{
    buf_t b;
    buf_init(&b, 0, 4096);
    char big[1000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(buf_printf(&b, "<%s>%d", big, 42), 0);
    assert_int_equal(b.len, 1 + 999 + 1 + 2);
    assert_memory_equal(b.data + b.len - 3, ">42", 3);
    buf_free(&b);
}

static void test_consume_drops_prefix(void **state)
{
    buf_t b;
    buf_init(&b, 0, 64);
    buf_append_str(&b, "hello world");
    buf_consume(&b, 6);
    assert_int_equal(b.len, 5);
    assert_memory_equal(b.data, "world", 5);
    buf_consume(&b, 99);
    assert_int_equal(b.len, 0);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_refuses_growth_past_max_and_keeps_contents),
        cmocka_unit_test(test_init_refuses_initial_larger_than_max),
        cmocka_unit_test(test_big_endian_writers_match_readers),
        cmocka_unit_test(test_base64_matches_rfc4648_vectors),
        cmocka_unit_test(test_base64_decode_round_trips_and_refuses_garbage),
        cmocka_unit_test(test_base64_fills_the_limit_exactly),
        cmocka_unit_test(test_json_escape_handles_quotes_controls_and_invalid_utf8),
        cmocka_unit_test(test_printf_formats_long_strings),
        cmocka_unit_test(test_consume_drops_prefix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
