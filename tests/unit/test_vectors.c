/* The test helpers of tests/common/vectors.c: the base64 decoder that reads the vectors'
 * "value_base64" and the product's base64 output, checked against RFC 4648's examples and the
 * product's encoder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "buf.h"
#include "vectors.h"

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
        assert_int_equal(vectors_base64_decode(enc[i], n, out, sizeof out), (long)strlen(raw[i]));
        assert_memory_equal(out, raw[i], strlen(raw[i]));
        while (n && enc[i][n - 1] == '=')
            n--;
        assert_int_equal(vectors_base64_decode(enc[i], n, out, sizeof out), (long)strlen(raw[i]));
        assert_memory_equal(out, raw[i], strlen(raw[i]));
    }
    uint8_t bin[256];
    for (size_t i = 0; i < sizeof bin; i++)
        bin[i] = (uint8_t)(255 - i);
    buf_t b;
    buf_init(&b, 0, 1024);
    assert_int_equal(buf_append_base64(&b, bin, sizeof bin), 0);
    uint8_t back[256];
    assert_int_equal(vectors_base64_decode((const char *)b.data, b.len, back, sizeof back),
                     (long)sizeof bin);
    assert_memory_equal(back, bin, sizeof bin);
    assert_int_equal(vectors_base64_decode((const char *)b.data, b.len, back, sizeof back - 1), -1);
    buf_free(&b);
    assert_int_equal(vectors_base64_decode(" Zm9v", 5, out, sizeof out), -1);
    assert_int_equal(vectors_base64_decode("Zm9v\n", 5, out, sizeof out), -1);
    assert_int_equal(vectors_base64_decode("Zg==Zm8=", 8, out, sizeof out), -1);
    assert_int_equal(vectors_base64_decode("Zm9vY", 5, out, sizeof out), -1);
    assert_int_equal(vectors_base64_decode("Zm-v", 4, out, sizeof out), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_base64_decode_round_trips_and_refuses_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
