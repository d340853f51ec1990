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
    assert_string_equal(ves_event_source_name(p.events[1]), "s");
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ves_single_event_and_batch_of_one_domain_accepted),
        cmocka_unit_test(test_ves_refusals_carry_onap_ids_and_name_the_field),
        cmocka_unit_test(test_ves_error_body_is_onap_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
