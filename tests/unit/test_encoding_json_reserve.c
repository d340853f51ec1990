/* The JSON envelope reserves about its real size, not a worst case: a typical NF copy must not
 * grow the output buffer to several times the envelope, and a copy whose strings need escaping
 * (more than the reserve) still comes out whole, with the same bounded-buffer behaviour. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "codec.h"
#include "encoding.h"

/* A 3,400-byte JSON body shaped like an NF profile (short keys, numbers, arrays). */
static char body_json[3400];
static char body_bin[3400];

static void fill_bodies(void)
{
    size_t n = 0;
    n += (size_t)snprintf(body_json + n, sizeof body_json - n, "{\"nfInstances\":[");
    for (int i = 0; n + 80 < sizeof body_json; i++)
        n += (size_t)snprintf(body_json + n, sizeof body_json - n,
                              "%s{\"nfInstanceId\":\"id-%04d\",\"load\":%d,\"s\":[1,2]}",
                              i ? "," : "", i, i % 100);
    n += (size_t)snprintf(body_json + n, sizeof body_json - n, "]}");
    while (n < sizeof body_json - 1) /* pad with whitespace to the exact size */
        body_json[n++] = ' ';
    body_json[n] = '\0';
    for (size_t i = 0; i < sizeof body_bin; i++)
        body_bin[i] = (char)(i * 131u + 7u);
}

static void make_copy(codec_msg_t *m, const char *ctype, const char *body, size_t body_len)
{
    memset(m, 0, sizeof *m);
    m->key = (codec_slice_t){"imsi-208930000000001", 20};
    m->meta[CODEC_META_CORRELATION_ID] = (codec_slice_t){"imsi-208930000000001", 20};
    m->meta[CODEC_META_TIMESTAMP] = (codec_slice_t){"1764486000000000", 16};
    m->meta[CODEC_META_SEQ] = (codec_slice_t){"42", 2};
    m->n_http = 4;
    m->http[0] = (codec_header_t){{":method", 7}, {"PUT", 3}};
    m->http[1] =
        (codec_header_t){{":path", 5}, {"/nnrf-nfm/v1/nf-instances/4947a69a-f61b-4bc1", 44}};
    m->http[2] = (codec_header_t){{"content-type", 12}, {ctype, strlen(ctype)}};
    m->http[3] = (codec_header_t){{"user-agent", 10}, {"AMF-amf1", 8}};
    m->n_ext = 1;
    m->ext[0] = (codec_header_t){{"@feed", 5}, {"nrf", 3}};
    m->body = (codec_slice_t){body, body_len};
}

/* Encodes into a fresh buffer (no initial allocation) and checks the capacity it ended with:
 * doubling from 256 bytes, a reserve of the real size leaves less than twice the envelope. */
static size_t encode_fresh(const codec_msg_t *m, size_t *cap)
{
    buf_t out;
    assert_int_equal(buf_init(&out, 0, 1 << 20), 0);
    assert_int_equal(encoding_json_envelope(&out, m), 0);
    json_error_t err;
    json_t *j = json_loadb((const char *)out.data, out.len, 0, &err);
    assert_non_null(j);
    json_decref(j);
    size_t len = out.len;
    *cap = out.cap;
    buf_free(&out);
    return len;
}

static void test_json_envelope_reserve_stays_near_real_size(void **state)
{
    (void)state;
    codec_msg_t m;
    size_t cap, len;

    make_copy(&m, "application/json", body_json, strlen(body_json));
    len = encode_fresh(&m, &cap);
    assert_true(len > 3400);
    assert_true(cap < 2 * len);
    assert_true(cap <= 4096); /* was 16 KiB with the worst-case reserve */

    make_copy(&m, "application/octet-stream", body_bin, sizeof body_bin);
    len = encode_fresh(&m, &cap);
    assert_true(len > 4 * 3400 / 3);
    assert_true(cap < 2 * len);
}

/* Strings that escape to 6 bytes a byte overrun the reserve: the checked appends grow the
 * buffer and the envelope is still complete and valid. */
static void test_json_envelope_with_escapes_beyond_reserve_is_whole(void **state)
{
    (void)state;
    static char ctl[2000];
    for (size_t i = 0; i < sizeof ctl; i++)
        ctl[i] = (char)(1 + i % 31);
    codec_msg_t m;
    make_copy(&m, "application/json", body_json, strlen(body_json));
    m.http[3].value = (codec_slice_t){ctl, sizeof ctl};
    m.key = (codec_slice_t){ctl, sizeof ctl};

    buf_t out;
    assert_int_equal(buf_init(&out, 0, 1 << 20), 0);
    assert_int_equal(encoding_json_envelope(&out, &m), 0);
    assert_true(out.len > 3400 + 2 * 5 * sizeof ctl); /* most escape to \u00XX */
    json_error_t err;
    json_t *j = json_loadb((const char *)out.data, out.len, 0, &err);
    assert_non_null(j);
    json_t *key = json_object_get(j, "key");
    assert_true(json_is_string(key));
    assert_int_equal(json_string_length(key), sizeof ctl);
    assert_memory_equal(json_string_value(key), ctl, sizeof ctl);
    json_decref(j);
    buf_free(&out);
}

/* With the limit at the envelope's exact size it fits; one byte less and it fails leaving the
 * buffer as it was: the reserve is a hint, the appends decide. */
static void test_json_envelope_fits_exact_limit_and_fails_one_below(void **state)
{
    (void)state;
    const char *ctypes[] = {"application/json", "application/octet-stream"};
    const char *bodies[] = {body_json, body_bin};
    size_t lens[] = {strlen(body_json), sizeof body_bin};
    for (int k = 0; k < 2; k++) {
        codec_msg_t m;
        make_copy(&m, ctypes[k], bodies[k], lens[k]);
        buf_t ref;
        assert_int_equal(buf_init(&ref, 0, 1 << 20), 0);
        assert_int_equal(encoding_json_envelope(&ref, &m), 0);

        buf_t out;
        assert_int_equal(buf_init(&out, 0, ref.len), 0);
        assert_int_equal(encoding_json_envelope(&out, &m), 0);
        assert_int_equal(out.len, ref.len);
        assert_memory_equal(out.data, ref.data, ref.len);
        buf_free(&out);

        assert_int_equal(buf_init(&out, 0, ref.len - 1), 0);
        assert_int_equal(buf_append(&out, "x", 1), 0);
        assert_int_not_equal(encoding_json_envelope(&out, &m), 0);
        assert_int_equal(out.len, 1);
        buf_free(&out);
        buf_free(&ref);
    }
}

int main(void)
{
    fill_bodies();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_envelope_reserve_stays_near_real_size),
        cmocka_unit_test(test_json_envelope_with_escapes_beyond_reserve_is_whole),
        cmocka_unit_test(test_json_envelope_fits_exact_limit_and_fails_one_below),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
