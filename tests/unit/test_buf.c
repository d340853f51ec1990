#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include <inttypes.h>
#include <stdio.h>

#include "buf.h"

#include <openssl/evp.h>

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

/* The scanner's reference: the byte-at-a-time definition the SSE2 and SWAR loops must match. */
static size_t plain_run_reference(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n && s[i] >= 0x20 && s[i] < 0x80 && s[i] != '"' && s[i] != '\\')
        i++;
    return i;
}

static void test_json_plain_run_stops_at_every_stop_byte_at_every_position(void **state)
{
    (void)state;
    /* One byte of each class that ends a run (and the edges of the classes) at every position
     * of every length up to 70, at every start alignment: covers the 16-byte, 8-byte and
     * byte-wise loops and their hand-overs. */
    static const uint8_t stops[] = {'"', '\\', 0x00, 0x1F, 0x0A, 0x80, 0xC3, 0xFF, 0x7F, 0x20};
    uint8_t buf[96];
    for (size_t align = 0; align < 8; align++)
        for (size_t n = 0; n <= 70; n++)
            for (size_t at = 0; at <= n; at++)
                for (size_t k = 0; k < sizeof stops; k++) {
                    uint8_t *s = buf + align;
                    for (size_t i = 0; i < n; i++)
                        s[i] = (uint8_t)('a' + (i % 26));
                    if (at < n)
                        s[at] = stops[k];
                    assert_int_equal(buf_json_plain_run(s, n), plain_run_reference(s, n));
                }
}

static void test_format_decimal_matches_printf(void **state)
{
    (void)state;
    const uint64_t u[] = {0,
                          1,
                          9,
                          10,
                          11,
                          99,
                          100,
                          101,
                          999,
                          1000,
                          123456789,
                          4294967295u,
                          4294967296ull,
                          999999999999999999ull,
                          1000000000000000000ull,
                          UINT64_MAX - 1,
                          UINT64_MAX};
    char got[BUF_DEC_MAX], want[32];
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) {
        size_t n = buf_format_u64(got, u[i]);
        snprintf(want, sizeof want, "%" PRIu64, u[i]);
        assert_string_equal(got, want);
        assert_int_equal(n, strlen(want));
    }
    const int64_t v[] = {
        0,         1,         -1,           9, -9, 10, -10, 1764620000123456ll, -1764620000123456ll,
        INT64_MAX, INT64_MIN, INT64_MIN + 1};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        size_t n = buf_format_i64(got, v[i]);
        snprintf(want, sizeof want, "%" PRId64, v[i]);
        assert_string_equal(got, want);
        assert_int_equal(n, strlen(want));
    }
    /* Every power of ten and its neighbours: the digit-pair loop's hand-over to the last one
     * or two digits. */
    for (uint64_t p = 1; p <= 1000000000000000000ull; p *= 10)
        for (uint64_t d = 0; d < 3; d++) {
            uint64_t x = p - 1 + d;
            buf_format_u64(got, x);
            snprintf(want, sizeof want, "%" PRIu64, x);
            assert_string_equal(got, want);
        }
}

static void test_base64_matches_openssl_on_every_length(void **state)
{
    /* The table encoder against OpenSSL's (what this used before): every length up to 200, a
     * input whose first 256 bytes are every byte value in a scrambled order, at every start
     * alignment; the output must be the same bytes, and its length exactly theirs. */
    (void)state;
    uint8_t in[264];
    for (size_t i = 0; i < sizeof in; i++)
        in[i] = (uint8_t)(i * 167u + (i >> 8));
    unsigned char want[400];
    for (size_t align = 0; align < 8; align++)
        for (size_t n = 0; n <= 256; n++) {
            buf_t b;
            assert_int_equal(buf_init(&b, 16, 4096), 0);
            assert_int_equal(buf_append_u8(&b, 'x'), 0);
            assert_int_equal(buf_append_base64(&b, in + align, n), 0);
            int wl = EVP_EncodeBlock(want, in + align, (int)n);
            assert_int_equal(b.len, 1 + (size_t)wl);
            assert_memory_equal(b.data + 1, want, (size_t)wl);
            buf_free(&b);
        }
}

/* An array grows by doubling from its first size, stops at its ceiling, and a refusal leaves
 * it as it was. */
static void test_array_room_doubles_up_to_its_ceiling(void **state)
{
    (void)state;
    size_t cap = 0, n = 0;
    int *a = NULL;
    for (; n < 10; n++) {
        int *g = buf_array_room(a, n, &cap, sizeof(*a), 4, 10);
        assert_non_null(g);
        a = g;
        a[n] = (int)n;
    }
    assert_int_equal(cap, 10); /* 4, 8, then the ceiling rather than 16 */
    assert_null(buf_array_room(a, n, &cap, sizeof(*a), 4, 10));
    assert_int_equal(cap, 10);
    assert_int_equal(a[9], 9);
    size_t big = SIZE_MAX / 2 + 1; /* twice that does not fit a size_t of bytes */
    assert_null(buf_array_room(a, big, &big, sizeof(*a), 4, 0));
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_refuses_growth_past_max_and_keeps_contents),
        cmocka_unit_test(test_init_refuses_initial_larger_than_max),
        cmocka_unit_test(test_big_endian_writers_match_readers),
        cmocka_unit_test(test_base64_matches_rfc4648_vectors),
        cmocka_unit_test(test_base64_fills_the_limit_exactly),
        cmocka_unit_test(test_json_escape_handles_quotes_controls_and_invalid_utf8),
        cmocka_unit_test(test_printf_formats_long_strings),
        cmocka_unit_test(test_json_plain_run_stops_at_every_stop_byte_at_every_position),
        cmocka_unit_test(test_format_decimal_matches_printf),
        cmocka_unit_test(test_base64_matches_openssl_on_every_length),
        cmocka_unit_test(test_array_room_doubles_up_to_its_ceiling),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
