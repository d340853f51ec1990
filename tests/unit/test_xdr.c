/* xDR derivations and encodings (services/xdr.c). */
#include <setjmp.h>
#include <stdarg.h>
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
