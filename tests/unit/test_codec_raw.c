/* Records that are not copies (xDRs of the XDR topic) as an egress filter sees them
 * (codec_fields_raw_parts, docs/filters.md "Records that are not copies"): the key as
 * @correlation-id, the record's headers, and a JSON object's top-level scalar members. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codec.h"
#include "filter.h"

static const char XDR[] =
    "{\"correlation_id\":\"c-1\",\"nf_type\":\"SCP\",\"nf_instance\":null,"
    "\"method\":\"GET\",\"path\":\"/nudm-sdm/v2/x\",\"status_code\":503,"
    "\"timestamps_us\":{\"rx-request\":1,\"tx-request\":null},\"latency_us\":{\"rx\":2},"
    "\"missing\":[\"tx-response\",\"rx-response\"],\"truncated\":false,"
    "\"supi\":\"imsi-\\\"quoted\\\"\",\"first_offset\":998877}";

static const char *field(const codec_msg_t *m, const char *name, char *buf, size_t size)
{
    for (size_t i = 0; i < m->n_http; i++)
        if (m->http[i].name.len == strlen(name) &&
            !memcmp(m->http[i].name.ptr, name, strlen(name))) {
            snprintf(buf, size, "%.*s", (int)m->http[i].value.len, m->http[i].value.ptr);
            return buf;
        }
    return NULL;
}

static void test_raw_fields_are_the_top_level_scalars_of_a_json_value(void **st)
{
    (void)st;
    codec_msg_t m;
    char b[128];
    codec_fields_raw_parts(&m, "c-1", 3, XDR, strlen(XDR), NULL);
    assert_string_equal(field(&m, "nf_type", b, sizeof b), "SCP");
    assert_string_equal(field(&m, "status_code", b, sizeof b), "503");
    assert_string_equal(field(&m, "path", b, sizeof b), "/nudm-sdm/v2/x");
    assert_string_equal(field(&m, "truncated", b, sizeof b), "false");
    assert_string_equal(field(&m, "first_offset", b, sizeof b), "998877");
    /* null, objects, arrays and strings with escapes are absent; nested members too */
    assert_null(field(&m, "nf_instance", b, sizeof b));
    assert_null(field(&m, "timestamps_us", b, sizeof b));
    assert_null(field(&m, "missing", b, sizeof b));
    assert_null(field(&m, "supi", b, sizeof b));
    assert_null(field(&m, "rx", b, sizeof b));
    assert_int_equal(m.meta[CODEC_META_CORRELATION_ID].len, 3);
    assert_memory_equal(m.meta[CODEC_META_CORRELATION_ID].ptr, "c-1", 3);
    assert_int_equal(m.body.len, strlen(XDR));
}

static void test_raw_fields_keep_record_headers_and_survive_bad_json(void **st)
{
    (void)st;
    rd_kafka_headers_t *h = rd_kafka_headers_new(2);
    rd_kafka_header_add(h, "@nf-type", -1, "NRF", 3);
    rd_kafka_header_add(h, "x-vendor", -1, "a", 1);
    codec_msg_t m;
    char b[64];
    static const char bad[] = "{\"nf_type\":\"SCP\",\"status_code\":";
    codec_fields_raw_parts(&m, NULL, 0, bad, strlen(bad), h);
    assert_int_equal(m.meta[CODEC_META_NF_TYPE].len, 3);
    assert_string_equal(field(&m, "x-vendor", b, sizeof b), "a");
    assert_string_equal(field(&m, "nf_type", b, sizeof b), "SCP"); /* up to the break */
    assert_null(field(&m, "status_code", b, sizeof b));
    assert_null(m.meta[CODEC_META_CORRELATION_ID].ptr);
    codec_fields_raw_parts(&m, "k", 1, "XDR1\x00\x01", 6, NULL); /* binary: no fields */
    assert_int_equal(m.n_http, 0);
    rd_kafka_headers_destroy(h);
}

static void test_an_egress_filter_selects_xdrs_by_their_members(void **st)
{
    (void)st;
    static const char spec[] =
        "{\"name\":\"errors\",\"default\":\"drop\",\"rules\":[{\"name\":\"5xx\",\"action\":"
        "\"allow\",\"match\":{\"all\":[{\"field\":\"status_code\",\"op\":\"ge\",\"value\":500},"
        "{\"field\":\"nf_type\",\"op\":\"equals\",\"value\":\"SCP\"}]}}]}";
    char err[300];
    filter_t *f = filter_compile_text(spec, strlen(spec), err, sizeof err);
    if (!f)
        fail_msg("%s", err);
    codec_msg_t m;
    int rule;
    codec_fields_raw_parts(&m, "c-1", 3, XDR, strlen(XDR), NULL);
    assert_int_equal(filter_eval(f, &m, &rule), FILTER_ALLOW);
    static const char ok[] = "{\"nf_type\":\"SCP\",\"status_code\":200}";
    codec_fields_raw_parts(&m, "c-2", 3, ok, strlen(ok), NULL);
    assert_int_equal(filter_eval(f, &m, &rule), FILTER_DROP);
    filter_release(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_raw_fields_are_the_top_level_scalars_of_a_json_value),
        cmocka_unit_test(test_raw_fields_keep_record_headers_and_survive_bad_json),
        cmocka_unit_test(test_an_egress_filter_selects_xdrs_by_their_members),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
