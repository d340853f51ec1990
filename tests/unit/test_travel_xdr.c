/* What ndd-travel reads from xDR records (bench/probes/travel_xdr.c): completion and latest
 * trigger-point timestamp from the records correlation/xdr.c really writes, JSON and binary, and
 * nothing mistaken for an xDR that is not one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "xdr.h"
/* The reader is one file of bench/probes; the test builds it in. */
#include "../../bench/probes/travel_xdr.c"

static void set_str(xdr_t *x, xdr_str_t i, const char *v)
{
    x->s[i] = (codec_slice_t){v, strlen(v)};
}

/* An xDR as ndd-correlation emits it; text fields that look like the members the reader wants
 * (escaped by the encoder), so a reader that searched the text would be fooled. */
static xdr_t sample(xdr_completion_t c)
{
    xdr_t x;
    memset(&x, 0, sizeof x);
    set_str(&x, XDR_S_CORRELATION_ID, "sim-1-\"completion\":\"timeout\"");
    set_str(&x, XDR_S_METHOD, "GET");
    set_str(&x, XDR_S_PATH, "/nudm-sdm/v2/imsi-1/am-data?q=\"timestamps_us\":{\"a\":9e18}\\");
    set_str(&x, XDR_S_PRODUCER_FQDN, "udm01\\\"}, \"completion\":\"evicted\"");
    x.nf = CODEC_NF_SCP;
    x.completion = c;
    x.status_code = 200;
    x.ts_us[0] = XDR_NONE;
    x.ts_us[CODEC_TRIGGER_RX_REQUEST] = 1764486000000000;
    x.ts_us[CODEC_TRIGGER_TX_REQUEST] = 1764486000000180;
    x.ts_us[CODEC_TRIGGER_RX_RESPONSE] = 1764486000002310;
    x.ts_us[CODEC_TRIGGER_TX_RESPONSE] = 1764486000002420;
    x.latency_rx_us = 2420;
    x.latency_tx_us = 2130;
    x.request_bytes = XDR_NONE;
    x.response_bytes = 118;
    x.partition = 3;
    x.first_offset = 998877;
    return x;
}

static travel_xdr_form_t read_encoded(const xdr_t *x, bool binary, travel_xdr_t *out)
{
    buf_t b;
    assert_int_equal(buf_init(&b, 256, 1 << 20), 0);
    assert_int_equal(binary ? xdr_encode_binary(x, &b) : xdr_encode_json(x, &b), 0);
    /* an exact-size copy, so a read past the record is caught by the sanitizer build */
    void *exact = malloc(b.len);
    assert_non_null(exact);
    memcpy(exact, b.data, b.len);
    travel_xdr_form_t f = travel_xdr_read(exact, b.len, out);
    free(exact);
    buf_free(&b);
    return f;
}

static void test_every_completion_and_latest_timestamp_read_from_json_and_binary(void **state)
{
    (void)state;
    for (int bin = 0; bin < 2; bin++) {
        for (int c = 0; c < XDR_COMPLETION__COUNT; c++) {
            xdr_t x = sample((xdr_completion_t)c);
            travel_xdr_t r;
            assert_int_equal(read_encoded(&x, bin, &r), bin ? TRAVEL_XDR_BINARY : TRAVEL_XDR_JSON);
            assert_int_equal(r.completion, c);
            assert_string_equal(travel_xdr_completion_name(r.completion),
                                xdr_completion_name((xdr_completion_t)c));
            assert_true(r.has_ts);
            assert_int_equal(r.ts_us, 1764486000002420);
        }
    }
}

static void test_timeout_xdr_takes_latest_of_the_copies_that_arrived(void **state)
{
    (void)state;
    for (int bin = 0; bin < 2; bin++) {
        xdr_t x = sample(XDR_TIMEOUT);
        x.ts_us[CODEC_TRIGGER_RX_RESPONSE] = XDR_NONE;
        x.ts_us[CODEC_TRIGGER_TX_RESPONSE] = XDR_NONE;
        x.latency_rx_us = x.latency_tx_us = XDR_NONE;
        x.missing = (1u << CODEC_TRIGGER_RX_RESPONSE) | (1u << CODEC_TRIGGER_TX_RESPONSE);
        travel_xdr_t r;
        assert_int_not_equal(read_encoded(&x, bin, &r), TRAVEL_XDR_NOT);
        assert_int_equal(r.completion, XDR_TIMEOUT);
        assert_true(r.has_ts);
        assert_int_equal(r.ts_us, 1764486000000180);
        /* no copy at all: an xDR, but without a timestamp */
        for (int t = 0; t < CODEC_TRIGGER__COUNT; t++)
            x.ts_us[t] = XDR_NONE;
        assert_int_not_equal(read_encoded(&x, bin, &r), TRAVEL_XDR_NOT);
        assert_false(r.has_ts);
    }
}

static travel_xdr_form_t read_text(const char *s, travel_xdr_t *out)
{
    size_t n = strlen(s);
    char *exact = malloc(n ? n : 1);
    assert_non_null(exact);
    memcpy(exact, s, n);
    travel_xdr_form_t f = travel_xdr_read(exact, n, out);
    free(exact);
    return f;
}

static void test_json_members_in_any_order_with_nulls_and_non_integers_skipped(void **state)
{
    (void)state;
    travel_xdr_t r;
    assert_int_equal(
        read_text(" {\"missing\":[\"rx-response\",{\"x\":[1,{}]}], \"timestamps_us\" : "
                  "{ \"a\" : null, \"b\":1.5, \"c\":12345678901234567890, "
                  "\"d\":7e3, \"e\":42 } ,\"completion\" : \"revoked\" }",
                  &r),
        TRAVEL_XDR_JSON);
    assert_int_equal(r.completion, XDR_REVOKED);
    assert_true(r.has_ts);
    assert_int_equal(r.ts_us, 42);
    assert_int_equal(read_text("{\"completion\":\"closed-by-moon\",\"timestamps_us\":{}}", &r),
                     TRAVEL_XDR_JSON);
    assert_int_equal(r.completion, TRAVEL_XDR_UNKNOWN);
    assert_false(r.has_ts);
    assert_int_equal(read_text("{\"completion\":null}", &r), TRAVEL_XDR_JSON);
    assert_int_equal(r.completion, TRAVEL_XDR_UNKNOWN);
    assert_string_equal(travel_xdr_completion_name(r.completion), "unknown");
    assert_string_equal(travel_xdr_completion_name(99), "unknown");
}

static void test_records_that_are_not_xdrs_are_not_taken_for_one(void **state)
{
    (void)state;
    travel_xdr_t r;
    static const char *const not_xdr[] = {
        "",
        "{}",
        "[]",
        "null",
        "XDR1",
        "XDR1\x01\x00\x01",
        "{\"supi\":\"imsi-1\",\"body\":{\"completion\":\"complete\"}}",
        "{\"note\":\"\\\"completion\\\":\\\"complete\\\"\"}",
        "{\"completion\"",
        "{\"completion\":",
        "{\"a\":\"unterminated",
        "{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"completion\":\"complete\"]]]]]]]]]]]]]]]]]]]]]]]]"
        "]]]]]]]]]"
        "}",
        "not json at all",
    };
    for (size_t i = 0; i < sizeof not_xdr / sizeof *not_xdr; i++) {
        if (read_text(not_xdr[i], &r) != TRAVEL_XDR_NOT)
            fail_msg("'%s' was taken for an xDR", not_xdr[i]);
    }
    assert_int_equal(travel_xdr_read(NULL, 0, &r), TRAVEL_XDR_NOT);
    assert_false(r.has_ts);
    /* a JSON object with timestamps but no completion still gives its timestamp */
    assert_int_equal(read_text("{\"timestamps_us\":{\"rx-request\":5,\"tx-response\":9}}", &r),
                     TRAVEL_XDR_NOT);
    assert_true(r.has_ts);
    assert_int_equal(r.ts_us, 9);
}

static void test_every_cut_of_a_real_xdr_is_read_without_overrun(void **state)
{
    (void)state;
    for (int bin = 0; bin < 2; bin++) {
        xdr_t x = sample(XDR_COMPLETE);
        buf_t b;
        assert_int_equal(buf_init(&b, 256, 1 << 20), 0);
        assert_int_equal(bin ? xdr_encode_binary(&x, &b) : xdr_encode_json(&x, &b), 0);
        for (size_t n = 0; n < b.len; n++) {
            void *exact = malloc(n ? n : 1);
            assert_non_null(exact);
            memcpy(exact, b.data, n);
            travel_xdr_t r;
            travel_xdr_form_t f = travel_xdr_read(exact, n, &r);
            free(exact);
            /* a cut binary record is refused whole; a cut JSON one may only have what it kept */
            if (bin)
                assert_int_equal(f, TRAVEL_XDR_NOT);
            else if (r.has_ts)
                assert_true(r.ts_us <= 1764486000002420);
        }
        buf_free(&b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_completion_and_latest_timestamp_read_from_json_and_binary),
        cmocka_unit_test(test_timeout_xdr_takes_latest_of_the_copies_that_arrived),
        cmocka_unit_test(test_json_members_in_any_order_with_nulls_and_non_integers_skipped),
        cmocka_unit_test(test_records_that_are_not_xdrs_are_not_taken_for_one),
        cmocka_unit_test(test_every_cut_of_a_real_xdr_is_read_without_overrun),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
