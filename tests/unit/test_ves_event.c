/* VES 7.x request validation: the accepted shapes, every refusal with ONAP's messageId and a
 * text naming the field, and the error body's JSON. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdbool.h>
#include <string.h>

#include "ves_event.h"

#define HDR(dom, extra)                                                                            \
    "{\"commonEventHeader\":{\"domain\":\"" dom "\",\"eventId\":\"e1\",\"eventName\":\"n\","       \
    "\"lastEpochMicrosec\":1,\"priority\":\"Normal\",\"reportingEntityName\":\"r\","               \
    "\"sequence\":1,\"sourceName\":\"s\",\"startEpochMicrosec\":1,\"version\":\"4.1\","            \
    "\"vesEventListenerVersion\":\"7.2.1\"" extra "}}"

static int check(const char *body, bool batch, ves_error_t *e)
{
    ves_parsed_t p;
    int rc = ves_validate((const uint8_t *)body, strlen(body), batch, &p, e);
    if (rc == 0)
        ves_parsed_free(&p);
    return rc;
}

static void test_ves_single_event_and_batch_of_one_domain_accepted(void **s)
{
    ves_parsed_t p;
    ves_error_t e;
    const char *one = "{\"event\":" HDR("fault", "") "}";
    assert_int_equal(ves_validate((const uint8_t *)one, strlen(one), false, &p, &e), 0);
    assert_int_equal(p.n_events, 1);
    assert_string_equal(p.domain, "fault");
    ves_parsed_free(&p);
    const char *b = "{\"eventList\":[" HDR("measurement", "") "," HDR("measurement", "") "]}";
    assert_int_equal(ves_validate((const uint8_t *)b, strlen(b), true, &p, &e), 0);
    assert_int_equal(p.n_events, 2);
    size_t slen;
    const char *src = ves_parsed_source(&p, 1, &slen);
    assert_int_equal(slen, 1);
    assert_memory_equal(src, "s", 1);
    ves_parsed_free(&p);
}

/* The messageIds and texts of ONAP's VES collector (dcaegen2-collectors-ves, ApiException):
 * INVALID_JSON_INPUT, SCHEMA_VALIDATION_FAILED, DIFFERENT_DOMAIN_FIELDS_IN_BATCH_EVENT. */
static void test_ves_refusals_carry_onap_ids_and_name_the_field(void **s)
{
    ves_error_t e;
    assert_int_equal(check("{\"event\":", false, &e), -1);
    assert_string_equal(e.message_id, "SVC0002");
    assert_string_equal(e.text, "Incorrect JSON payload");
    assert_int_equal(e.status, 400);
    assert_int_equal(check("{\"event\":" HDR("nope", "") "}", false, &e), -1);
    assert_string_equal(e.message_id, "SVC0002");
    assert_string_equal(e.text, "Bad Parameter (JSON does not conform to schema)");
    assert_non_null(strstr(e.var1, "commonEventHeader.domain is not a VES domain"));
    assert_int_equal(check("{\"event\":" HDR("fault", ",\"eventType\":3") "}", false, &e), -1);
    assert_non_null(strstr(e.var1, "commonEventHeader.eventType is not a string"));
    assert_int_equal(
        check("{\"eventList\":[" HDR("fault", "") "," HDR("syslog", "") "]}", true, &e), -1);
    assert_string_equal(e.message_id, "SVC0001");
    assert_string_equal(e.text, "Different value of domain fields in Batch Event");
    assert_int_equal(check("{\"eventList\":[]}", true, &e), -1);
    assert_int_equal(e.status, 400);
    assert_int_equal(check("{\"events\":{}}", false, &e), -1);
    assert_string_equal(e.text, "Incorrect JSON payload");
    assert_non_null(strstr(e.var1, "event is missing"));
}

/* ONAP's toJSON writes "variables" only when there are some. */
static void test_ves_error_body_is_onap_shape(void **s)
{
    ves_error_t e;
    ves_error_set(&e, 401, "PolicyException", "POL2000", "Unauthorized user", NULL, NULL);
    char b[512];
    ves_error_body(&e, b, sizeof b);
    assert_string_equal(b, "{\"requestError\":{\"PolicyException\":{\"messageId\":\"POL2000\","
                           "\"text\":\"Unauthorized user\"}}}");
    ves_error_set(&e, 413, "ServiceException", "SVC2000",
                  "The following service error occurred: %1. Error code is %2",
                  "Request Entity Too Large", "413");
    ves_error_body(&e, b, sizeof b);
    assert_string_equal(b, "{\"requestError\":{\"ServiceException\":{\"messageId\":\"SVC2000\","
                           "\"text\":\"The following service error occurred: %1. Error code is "
                           "%2\",\"variables\":[\"Request Entity Too Large\",\"413\"]}}}");
}

/* A single event is validated without jansson's tree when it can be (ves_event.c's fast
 * path): for every body, accepted or refused, the answer is the tree's, with the same status,
 * messageId and variable, and an accepted event has the same domain and key. The bodies
 * cover what the fast path hands to jansson (escapes, UTF-8, exponents, long numbers,
 * duplicates at any depth, depth, trailing bytes) and the header rules. */
static void test_ves_single_event_fast_path_answers_as_jansson(void **s)
{
    static const char *const bodies[] = {
        "{\"event\":" HDR("fault", "") "}",
        " \r\n{\"event\":" HDR("fault", "") "} \t\n",
        "{\"event\":" HDR("fault", ",\"eventType\":\"a\\u00e9\"") "}",
        "{\"event\":" HDR("fault", ",\"eventType\":\"\xc3\xa9\"") "}",
        "{\"event\":" HDR("fault", ",\"eventType\":\"\xc3\"") "}",
        "{\"event\":" HDR("fault", ",\"eventType\":\"a\x7f\x1f\"") "}",
        "{\"event\":" HDR("fault", ",\"eventType\":\"a\x7f"
                                   "b\"") "}",
        "{\"event\":" HDR("fault", ",\"x\":1e3") "}",
        "{\"event\":" HDR("fault", ",\"x\":123456789012345678901234567890") "}",
        "{\"event\":" HDR("fault", ",\"x\":-0,\"y\":-0.0") "}",
        "{\"event\":" HDR("fault", ",\"sourceName\":\"dup\"") "}",
        "{\"event\":" HDR("fault", "") ",\"event\":{}}",
        "{\"event\":" HDR("fault", "") ",\"m\":{\"a\":1,\"a\":2}}",
        "{\"event\":" HDR("fault", "") ",\"m\":{\"a\":{\"b\":[1,{\"a\":1}]},\"b\":2}}",
        "{\"event\":" HDR("fault",
                          "") ",\"m\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]"
                              "]]]]]]]]]]]]}",
        "{\"event\":" HDR("fault", "") "}x",
        "{\"event\":" HDR("fault", "") "",
        "{\"event\":" HDR("fault", ",\"x\":01") "}",
        "{\"event\":" HDR("fault", ",\"x\":1.") "}",
        "{\"event\":" HDR("fault", ",\"x\":tru") "}",
        "{\"event\":" HDR("fault", ",\"x\":[true,false,null,\"\",{}]") "}",
        "{\"event\":{\"commonEventHeader\":{\"domain\":\"fault\",\"eventId\":\"e1\",\"eventName\":"
        "\"n\",\"lastEpochMicrosec\":-0.5,\"priority\":\"Normal\",\"reportingEntityName\":\"r\","
        "\"sequence\":1,\"sourceName\":\"s\",\"startEpochMicrosec\":1,\"version\":\"4.1\","
        "\"vesEventListenerVersion\":\"7.2.1\"}}}",
        "{\"event\":{\"commonEventHeader\":{\"domain\":\"fault\",\"eventId\":\"e1\",\"eventName\":"
        "\"n\",\"lastEpochMicrosec\":1.5,\"priority\":\"Normal\",\"reportingEntityName\":\"r\","
        "\"sequence\":1.0,\"sourceName\":\"s\",\"startEpochMicrosec\":1,\"version\":\"4.1\","
        "\"vesEventListenerVersion\":\"7.2.1\"}}}",
        "{\"event\":{\"commonEventHeader\":{\"domain\":\"fault\",\"eventId\":\"e1\",\"eventName\":"
        "\"n\",\"lastEpochMicrosec\":1,\"priority\":\"Normal\",\"reportingEntityName\":\"r\","
        "\"sequence\":-1,\"sourceName\":\"s\",\"startEpochMicrosec\":1,\"version\":\"4.x\","
        "\"vesEventListenerVersion\":\"7.2.1\"}}}",
        "{\"event\":{\"commonEventHeader\":[]}}",
        "{\"event\":[]}",
        "{\"x\":{\"event\":" HDR("fault", "") "}}",
        "[{\"event\":" HDR("fault", "") "}]",
        "{\"event\":" HDR("fault", ",\"version\":\"4.1\"") "}",
        "{\"event\":" HDR("heartbeat",
                          ",\"timeZoneOffset\":\"UTC+1\",\"reportingEntityId\":null") "}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        const uint8_t *b = (const uint8_t *)bodies[i];
        size_t n = strlen(bodies[i]);
        ves_parsed_t p, t;
        ves_error_t e1 = {0}, e2 = {0};
        int r1 = ves_validate(b, n, false, &p, &e1), r2 = ves_validate_tree(b, n, false, &t, &e2);
        if (r1 != r2)
            fail_msg("body %zu: fast %d, tree %d: %s", i, r1, r2, bodies[i]);
        if (r1 == 0) {
            size_t l1, l2;
            const char *s1 = ves_parsed_source(&p, 0, &l1), *s2 = ves_parsed_source(&t, 0, &l2);
            assert_string_equal(p.domain, t.domain);
            assert_int_equal(l1, l2);
            assert_memory_equal(s1, s2, l1);
            if (i < 2)
                assert_null(p.root); /* the plain event took the fast path */
            ves_parsed_free(&p);
            ves_parsed_free(&t);
        } else {
            assert_int_equal(e1.status, e2.status);
            assert_string_equal(e1.message_id, e2.message_id);
            assert_string_equal(e1.text, e2.text);
            assert_string_equal(e1.var1, e2.var1);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ves_single_event_and_batch_of_one_domain_accepted),
        cmocka_unit_test(test_ves_refusals_carry_onap_ids_and_name_the_field),
        cmocka_unit_test(test_ves_error_body_is_onap_shape),
        cmocka_unit_test(test_ves_single_event_fast_path_answers_as_jansson),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
