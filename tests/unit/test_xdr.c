/* xDR derivations and encodings (correlation/xdr.c). */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "codec.h"
#include "xdr.h"

static void expect_slice(codec_slice_t s, const char *want)
{
    if (!want) {
        assert_null(s.ptr);
        return;
    }
    assert_non_null(s.ptr);
    if (s.len != strlen(want) || memcmp(s.ptr, want, s.len) != 0)
        fail_msg("got '%.*s', want '%s'", (int)s.len, s.ptr, want);
}

static void test_path_gives_service_and_operation(void **state)
{
    (void)state;
    static const struct {
        const char *path, *service, *op;
    } cases[] = {
        {"/nudm-sdm/v2/imsi-208930000000001/am-data", "nudm-sdm", "am-data"},
        {"/nudm-sdm/v2/imsi-208930000000001/am-data?plmn-id=x", "nudm-sdm", "am-data"},
        {"/nnrf-nfm/v1/nf-instances/0f0e0d0c-0b0a-4909-8807-060504030201", "nnrf-nfm",
         "nf-instances"},
        {"/npcf-smpolicycontrol/v1/sm-policies/4711/update", "npcf-smpolicycontrol", "update"},
        {"/nausf-auth/v1/ue-authentications/ctx%3D1/5g-aka-confirmation", "nausf-auth",
         "5g-aka-confirmation"},
        {"/n32f-forward/v1/n32f-process", "n32f-forward", "n32f-process"},
        {"/nudm-uecm/v1/msisdn-33612345678", "nudm-uecm", ""},
        {"/nbsf-management/v1/pcfBindings", "nbsf-management", "pcfBindings"},
        {"/custom/resource", "custom", "resource"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        codec_slice_t svc, op;
        xdr_path_service(cases[i].path, strlen(cases[i].path), &svc, &op);
        expect_slice(svc, cases[i].service);
        expect_slice(op, cases[i].op);
    }
    codec_slice_t svc, op;
    xdr_path_service("*", 1, &svc, &op);
    assert_null(svc.ptr);
    assert_null(op.ptr);
    xdr_path_service("//x", 3, &svc, &op);
    assert_null(svc.ptr);
}

static void test_subscriber_found_in_path_segments_and_query(void **state)
{
    (void)state;
    const char *p = "/nudm-sdm/v2/imsi-208930000000001/am-data?gpsi=msisdn-33612345678&x=1";
    codec_slice_t supi = {0}, gpsi = {0};
    xdr_find_subscriber_path(p, strlen(p), &supi, &gpsi);
    expect_slice(supi, "imsi-208930000000001");
    expect_slice(gpsi, "msisdn-33612345678");

    /* Too few digits, and a prefix not at a segment start, are not identities. */
    p = "/nudm-sdm/v2/imsi-123/x-msisdn-33612345678/nai-user@example.org";
    supi = gpsi = (codec_slice_t){0};
    xdr_find_subscriber_path(p, strlen(p), &supi, &gpsi);
    expect_slice(supi, "nai-user@example.org");
    assert_null(gpsi.ptr);
}

static void test_subscriber_found_in_body_json_values(void **state)
{
    (void)state;
    const char *b = "{\"gpsis\":[\"msisdn-33612345678\"],\"x\":\"imsi-1\",\"supi\":"
                    "\"imsi-208930000000001\"}";
    codec_slice_t supi = {0}, gpsi = {0};
    xdr_find_subscriber_body(b, strlen(b), 0, &supi, &gpsi);
    expect_slice(supi, "imsi-208930000000001");
    expect_slice(gpsi, "msisdn-33612345678");

    /* Beyond the scan limit nothing is found. */
    supi = gpsi = (codec_slice_t){0};
    xdr_find_subscriber_body(b, strlen(b), 10, &supi, &gpsi);
    assert_null(supi.ptr);
    assert_null(gpsi.ptr);

    /* Already known values are not replaced. */
    supi = (codec_slice_t){"imsi-00000", 10};
    xdr_find_subscriber_body(b, strlen(b), 0, &supi, &gpsi);
    expect_slice(supi, "imsi-00000");
}

static void fill_sample(xdr_t *x)
{
    memset(x, 0, sizeof *x);
    x->s[XDR_S_CORRELATION_ID] = (codec_slice_t){"scp-1", 5};
    x->s[XDR_S_METHOD] = (codec_slice_t){"GET", 3};
    x->s[XDR_S_PATH] = (codec_slice_t){"/nudm-sdm/v2/imsi-1/am-data \"q\"", 31};
    x->s[XDR_S_SERVICE] = (codec_slice_t){"nudm-sdm", 8};
    x->s[XDR_S_OPERATION] = (codec_slice_t){"", 0};
    x->nf = CODEC_NF_SCP;
    x->completion = XDR_TIMEOUT;
    x->seen = (1u << CODEC_TRIGGER_RX_REQUEST) | (1u << CODEC_TRIGGER_TX_REQUEST);
    x->missing = (1u << CODEC_TRIGGER_RX_RESPONSE) | (1u << CODEC_TRIGGER_TX_RESPONSE);
    x->flags = XDR_FLAG_TRUNCATED;
    x->status_code = 0;
    x->duplicates = 2;
    x->ts_us[0] = XDR_NONE;
    x->ts_us[CODEC_TRIGGER_RX_REQUEST] = 1764486000000000;
    x->ts_us[CODEC_TRIGGER_TX_REQUEST] = 1764486000000180;
    x->ts_us[CODEC_TRIGGER_RX_RESPONSE] = XDR_NONE;
    x->ts_us[CODEC_TRIGGER_TX_RESPONSE] = XDR_NONE;
    x->latency_rx_us = XDR_NONE;
    x->latency_tx_us = XDR_NONE;
    x->request_bytes = 0;
    x->response_bytes = XDR_NONE;
    x->partition = 7;
    x->first_offset = 123456789012;
}

static void test_json_encoding_parses_with_nulls_for_missing(void **state)
{
    (void)state;
    xdr_t x;
    fill_sample(&x);
    buf_t b;
    assert_int_equal(buf_init(&b, 0, 1 << 16), 0);
    assert_int_equal(xdr_encode_json(&x, &b), 0);
    json_error_t je;
    json_t *j = json_loadb((const char *)b.data, b.len, 0, &je);
    if (!j)
        fail_msg("invalid JSON: %s: %.*s", je.text, (int)b.len, b.data);
    assert_string_equal(json_string_value(json_object_get(j, "correlation_id")), "scp-1");
    assert_string_equal(json_string_value(json_object_get(j, "nf_type")), "SCP");
    assert_string_equal(json_string_value(json_object_get(j, "path")),
                        "/nudm-sdm/v2/imsi-1/am-data \"q\"");
    assert_true(json_is_null(json_object_get(j, "supi")));
    assert_true(json_is_null(json_object_get(j, "status_code")));
    assert_string_equal(json_string_value(json_object_get(j, "operation")), "");
    json_t *ts = json_object_get(j, "timestamps_us");
    assert_int_equal(json_integer_value(json_object_get(ts, "tx-request")), 1764486000000180);
    assert_true(json_is_null(json_object_get(ts, "rx-response")));
    assert_true(json_is_null(json_object_get(json_object_get(j, "latency_us"), "rx")));
    assert_int_equal(json_integer_value(json_object_get(j, "request_bytes")), 0);
    assert_true(json_is_null(json_object_get(j, "response_bytes")));
    assert_string_equal(json_string_value(json_object_get(j, "completion")), "timeout");
    json_t *miss = json_object_get(j, "missing");
    assert_int_equal(json_array_size(miss), 2);
    assert_string_equal(json_string_value(json_array_get(miss, 0)), "rx-response");
    assert_string_equal(json_string_value(json_array_get(miss, 1)), "tx-response");
    assert_true(json_is_true(json_object_get(j, "truncated")));
    assert_int_equal(json_integer_value(json_object_get(j, "first_offset")), 123456789012);
    json_decref(j);
    buf_free(&b);
}

static void test_binary_round_trip_keeps_every_field(void **state)
{
    (void)state;
    xdr_t x, y;
    fill_sample(&x);
    buf_t b;
    assert_int_equal(buf_init(&b, 0, 1 << 16), 0);
    assert_int_equal(xdr_encode_binary(&x, &b), 0);
    assert_int_equal(xdr_decode_binary(b.data, b.len, &y), 0);
    for (int i = 0; i < XDR_S__COUNT; i++) {
        if (!x.s[i].ptr) {
            assert_null(y.s[i].ptr);
            continue;
        }
        assert_int_equal(x.s[i].len, y.s[i].len);
        assert_memory_equal(x.s[i].ptr, y.s[i].ptr, x.s[i].len);
    }
    assert_int_equal(y.nf, x.nf);
    assert_int_equal(y.completion, x.completion);
    assert_int_equal(y.seen, x.seen);
    assert_int_equal(y.missing, x.missing);
    assert_int_equal(y.flags, x.flags);
    assert_int_equal(y.duplicates, 2);
    assert_int_equal(y.partition, 7);
    assert_true(y.first_offset == x.first_offset);
    for (int t = 1; t < CODEC_TRIGGER__COUNT; t++)
        assert_true(y.ts_us[t] == x.ts_us[t]);
    assert_true(y.latency_rx_us == XDR_NONE);
    assert_true(y.response_bytes == XDR_NONE);
    assert_true(y.request_bytes == 0);

    /* Every truncation and a wrong magic are refused. */
    for (size_t n = 0; n < b.len; n++)
        assert_int_equal(xdr_decode_binary(b.data, n, &y), -1);
    b.data[0] ^= 0xff;
    assert_int_equal(xdr_decode_binary(b.data, b.len, &y), -1);
    buf_free(&b);
}

/* ---- JSON encoder against a reference ----
 * The printf-based encoder that xdr_encode_json replaced (kept here verbatim as the
 * definition of the bytes): the hand-written one must produce exactly the same output. */

static int ref_json_str(buf_t *out, const char *name, codec_slice_t v)
{
    if (buf_printf(out, "\"%s\":", name) != 0)
        return -1;
    if (!v.ptr)
        return buf_append_str(out, "null");
    if (buf_append_u8(out, '"') != 0 || buf_append_json_escaped(out, v.ptr, v.len) != 0)
        return -1;
    return buf_append_u8(out, '"');
}

static int ref_json_i64(buf_t *out, const char *name, int64_t v)
{
    if (v == XDR_NONE)
        return buf_printf(out, "\"%s\":null", name);
    return buf_printf(out, "\"%s\":%" PRId64, name, v);
}

/* The xDR contract's member names of the text fields (docs/xdr.md), spelled here and not
 * taken from the product, so that a renamed member fails. */
static const char *const ref_str_names[XDR_S__COUNT] = {
    [XDR_S_CORRELATION_ID] = "correlation_id",
    [XDR_S_NF_INSTANCE] = "nf_instance",
    [XDR_S_CONSUMER_ID] = "consumer_id",
    [XDR_S_CONSUMER_FQDN] = "consumer_fqdn",
    [XDR_S_PRODUCER_ID] = "producer_id",
    [XDR_S_PRODUCER_FQDN] = "producer_fqdn",
    [XDR_S_METHOD] = "method",
    [XDR_S_PATH] = "path",
    [XDR_S_SERVICE] = "service",
    [XDR_S_OPERATION] = "operation",
    [XDR_S_SUPI] = "supi",
    [XDR_S_GPSI] = "gpsi",
};

static int ref_encode_json(const xdr_t *x, buf_t *out)
{
    int rc = buf_append_u8(out, '{');
    rc |= ref_json_str(out, ref_str_names[XDR_S_CORRELATION_ID], x->s[XDR_S_CORRELATION_ID]);
    rc |= buf_printf(out, ",\"nf_type\":\"%s\"", codec_nf_name(x->nf));
    for (int i = XDR_S_NF_INSTANCE; i < XDR_S__COUNT; i++) {
        rc |= buf_append_u8(out, ',');
        rc |= ref_json_str(out, ref_str_names[i], x->s[i]);
    }
    rc |= buf_append_u8(out, ',');
    rc |= ref_json_i64(out, "status_code", x->status_code ? x->status_code : XDR_NONE);
    rc |= buf_append_str(out, ",\"timestamps_us\":{");
    for (int t = CODEC_TRIGGER_RX_REQUEST; t < CODEC_TRIGGER__COUNT; t++) {
        if (t > CODEC_TRIGGER_RX_REQUEST)
            rc |= buf_append_u8(out, ',');
        rc |= ref_json_i64(out, codec_trigger_name((codec_trigger_t)t), x->ts_us[t]);
    }
    rc |= buf_append_str(out, "},\"latency_us\":{");
    rc |= ref_json_i64(out, "rx", x->latency_rx_us);
    rc |= buf_append_u8(out, ',');
    rc |= ref_json_i64(out, "tx", x->latency_tx_us);
    rc |= buf_append_str(out, "},");
    rc |= ref_json_i64(out, "request_bytes", x->request_bytes);
    rc |= buf_append_u8(out, ',');
    rc |= ref_json_i64(out, "response_bytes", x->response_bytes);
    rc |=
        buf_printf(out, ",\"completion\":\"%s\",\"missing\":[", xdr_completion_name(x->completion));
    bool first = true;
    for (int t = CODEC_TRIGGER_RX_REQUEST; t < CODEC_TRIGGER__COUNT; t++) {
        if (!(x->missing & (1u << t)))
            continue;
        rc |= buf_printf(out, "%s\"%s\"", first ? "" : ",", codec_trigger_name((codec_trigger_t)t));
        first = false;
    }
    rc |= buf_printf(out,
                     "],\"duplicates\":%" PRIu32 ",\"truncated\":%s,\"partition\":%" PRId32
                     ",\"first_offset\":%" PRId64 "}",
                     x->duplicates, (x->flags & XDR_FLAG_TRUNCATED) ? "true" : "false",
                     x->partition, x->first_offset);
    return rc ? -1 : 0;
}

/* xorshift64*: a fixed seed keeps every run identical (and a failure reproducible). */
static uint64_t rnd_next(uint64_t *st)
{
    *st ^= *st >> 12;
    *st ^= *st << 25;
    *st ^= *st >> 27;
    return *st * 0x2545F4914F6CDD1Dull;
}

static uint64_t rnd_below(uint64_t *st, uint64_t n)
{
    return rnd_next(st) % n;
}

/* Integers at and around every formatting edge: none, 0, one/two/many digits, powers of
 * ten, the int64 extremes (INT64_MIN is XDR_NONE), negatives, random 64-bit values. */
static int64_t rnd_i64(uint64_t *st)
{
    static const int64_t edges[] = {XDR_NONE,
                                    INT64_MIN + 1,
                                    INT64_MAX,
                                    0,
                                    1,
                                    -1,
                                    9,
                                    10,
                                    99,
                                    100,
                                    -100,
                                    999999999999,
                                    1000000000000,
                                    5000000000000000000,
                                    1764486000000000};
    switch (rnd_below(st, 4)) {
    case 0:
        return edges[rnd_below(st, sizeof edges / sizeof edges[0])];
    case 1: {
        int64_t p = 1;
        for (uint64_t k = rnd_below(st, 19); k > 0; k--)
            p *= 10;
        return rnd_below(st, 2) ? p - (int64_t)rnd_below(st, 2) : -p;
    }
    case 2:
        return (int64_t)rnd_below(st, 100000) - 50000;
    default:
        return (int64_t)rnd_next(st);
    }
}

/* Bytes of one text field, mixing plain runs with every class buf_append_json_escaped
 * treats specially: quote, backslash, control characters, DEL, valid multi-byte UTF-8,
 * stray continuation and lead bytes. */
static size_t rnd_text(uint64_t *st, char *out, size_t cap)
{
    size_t len = rnd_below(st, 3) == 0 ? rnd_below(st, cap) : rnd_below(st, 48);
    bool plain = rnd_below(st, 2) == 0;
    size_t n = 0;
    while (n < len) {
        unsigned k = plain ? 0 : (unsigned)rnd_below(st, 10);
        if (k <= 3) {
            out[n++] = (char)(0x20 + rnd_below(st, 0x5f));
            if (out[n - 1] == '"' || out[n - 1] == '\\')
                out[n - 1] = plain ? 'x' : out[n - 1];
        } else if (k == 4) {
            out[n++] = rnd_below(st, 2) ? '"' : '\\';
        } else if (k == 5) {
            out[n++] = (char)rnd_below(st, 0x20);
        } else if (k == 6) {
            out[n++] = 0x7f;
        } else if (k == 7 && n + 4 <= len) {
            static const char *const utf8[] = {"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80",
                                               "\xEF\xBF\xBD"};
            const char *u = utf8[rnd_below(st, 4)];
            memcpy(out + n, u, strlen(u));
            n += strlen(u);
        } else {
            out[n++] = (char)(0x80 + rnd_below(st, 0x80));
        }
    }
    return n;
}

static void test_json_encoding_equals_printf_reference_on_random_xdrs(void **state)
{
    (void)state;
    enum { ROUNDS = 10000, TEXT_CAP = 300 };
    static char text[XDR_S__COUNT][TEXT_CAP];
    uint64_t st = 0x9E3779B97F4A7C15ull;
    buf_t got, want;
    assert_int_equal(buf_init(&got, 0, 1 << 20), 0);
    assert_int_equal(buf_init(&want, 0, 1 << 20), 0);
    for (int r = 0; r < ROUNDS; r++) {
        xdr_t x;
        memset(&x, 0, sizeof x);
        for (int i = 0; i < XDR_S__COUNT; i++) {
            if (rnd_below(&st, 5) == 0)
                continue; /* absent: null */
            x.s[i] = (codec_slice_t){text[i], rnd_text(&st, text[i], TEXT_CAP)};
        }
        /* Out-of-range enum values too: both encoders name them "unknown". */
        x.nf = (codec_nf_t)rnd_below(&st, CODEC_NF__COUNT + 2);
        x.completion = (xdr_completion_t)rnd_below(&st, XDR_COMPLETION__COUNT + 2);
        x.seen = (uint8_t)rnd_next(&st);
        x.missing = (uint8_t)rnd_next(&st);
        x.flags = (uint8_t)rnd_next(&st);
        x.status_code = rnd_below(&st, 3) == 0 ? 0 : (int)rnd_i64(&st);
        x.duplicates = (uint32_t)rnd_next(&st);
        for (int t = 0; t < CODEC_TRIGGER__COUNT; t++)
            x.ts_us[t] = rnd_i64(&st);
        x.latency_rx_us = rnd_i64(&st);
        x.latency_tx_us = rnd_i64(&st);
        x.request_bytes = rnd_i64(&st);
        x.response_bytes = rnd_i64(&st);
        x.partition = (int32_t)rnd_i64(&st);
        x.first_offset = rnd_i64(&st);

        /* Appending after existing bytes, as a batching caller would. */
        size_t pre = (size_t)rnd_below(&st, 3);
        buf_reset(&got);
        buf_reset(&want);
        assert_int_equal(buf_append(&got, "[[", pre), 0);
        assert_int_equal(buf_append(&want, "[[", pre), 0);
        assert_int_equal(xdr_encode_json(&x, &got), 0);
        assert_int_equal(ref_encode_json(&x, &want), 0);
        if (got.len != want.len || memcmp(got.data, want.data, got.len) != 0)
            fail_msg("round %d differs:\n got  %.*s\n want %.*s", r, (int)got.len,
                     (const char *)got.data, (int)want.len, (const char *)want.data);
    }
    buf_free(&got);
    buf_free(&want);
}

static void test_json_encoding_of_longest_numbers_stays_within_fixed_bound(void **state)
{
    (void)state;
    xdr_t x;
    memset(&x, 0, sizeof x);
    for (int i = 0; i < XDR_S__COUNT; i++)
        x.s[i] = (codec_slice_t){"", 0}; /* present but empty: two quotes each */
    x.nf = CODEC_NF_NON_NF;
    x.completion = XDR_COMPLETION__COUNT; /* "unknown", the longest name */
    x.missing = 0xff;
    x.flags = 0; /* "false" */
    x.status_code = INT32_MIN;
    x.duplicates = UINT32_MAX;
    for (int t = 0; t < CODEC_TRIGGER__COUNT; t++)
        x.ts_us[t] = INT64_MIN + 1;
    x.latency_rx_us = x.latency_tx_us = x.request_bytes = x.response_bytes = INT64_MIN + 1;
    x.partition = INT32_MIN;
    x.first_offset = INT64_MIN;
    buf_t b;
    assert_int_equal(buf_init(&b, 0, 1 << 16), 0);
    assert_int_equal(xdr_encode_json(&x, &b), 0);
    assert_true(b.len <= XDR_JSON_FIXED_MAX);
    json_error_t je;
    json_t *j = json_loadb((const char *)b.data, b.len, 0, &je);
    if (!j)
        fail_msg("not JSON: %s: %.*s", je.text, (int)b.len, (const char *)b.data);
    assert_int_equal(json_integer_value(json_object_get(j, "first_offset")), INT64_MIN);
    assert_int_equal(json_array_size(json_object_get(j, "missing")), 4);
    json_decref(j);
    buf_free(&b);
}

/* Near its ceiling, out cannot take the worst-case reservation: the encoder must still
 * succeed whenever the actual bytes fit, and leave out untouched when they do not. */
static void test_json_encoding_fails_only_when_the_bytes_do_not_fit(void **state)
{
    (void)state;
    xdr_t x;
    fill_sample(&x); /* its path needs escaping: the buf_append_json_escaped branch too */
    buf_t want;
    assert_int_equal(buf_init(&want, 0, 1 << 16), 0);
    assert_int_equal(ref_encode_json(&x, &want), 0);
    assert_true(want.len + 3 < XDR_JSON_FIXED_MAX);
    for (size_t max = want.len - 40; max <= want.len + 40; max++) {
        buf_t b;
        assert_int_equal(buf_init(&b, 0, max + 3), 0);
        assert_int_equal(buf_append(&b, "[[[", 3), 0);
        int rc = xdr_encode_json(&x, &b);
        if (max >= want.len) {
            assert_int_equal(rc, 0);
            assert_int_equal(b.len, want.len + 3);
            assert_memory_equal(b.data + 3, want.data, want.len);
        } else {
            assert_int_equal(rc, -1);
            assert_int_equal(b.len, 3);
        }
        buf_free(&b);
    }
    buf_free(&want);
}

static void test_encoders_report_full_buffer(void **state)
{
    (void)state;
    xdr_t x;
    fill_sample(&x);
    buf_t b;
    assert_int_equal(buf_init(&b, 0, 64), 0);
    assert_int_equal(xdr_encode_json(&x, &b), -1);
    buf_reset(&b);
    assert_int_equal(xdr_encode_binary(&x, &b), -1);
    assert_int_equal(b.len, 0);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path_gives_service_and_operation),
        cmocka_unit_test(test_subscriber_found_in_path_segments_and_query),
        cmocka_unit_test(test_subscriber_found_in_body_json_values),
        cmocka_unit_test(test_json_encoding_parses_with_nulls_for_missing),
        cmocka_unit_test(test_binary_round_trip_keeps_every_field),
        cmocka_unit_test(test_encoders_report_full_buffer),
        cmocka_unit_test(test_json_encoding_equals_printf_reference_on_random_xdrs),
        cmocka_unit_test(test_json_encoding_of_longest_numbers_stays_within_fixed_bound),
        cmocka_unit_test(test_json_encoding_fails_only_when_the_bytes_do_not_fit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
