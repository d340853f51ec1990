/* h2check: RFC 9113's checks of a request's fields, byte classes held against their
 * definitions byte by byte, and the rules of pseudo-headers, connection-specific fields,
 * content-length and trailers. (Whole requests through the server:
 * test_httpd_h2.c, test_malformed_h2_requests_are_reset_and_never_reach_a_handler.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "h2check.h"

static const char *field(h2check_t *c, const char *name, const char *value)
{
    return h2check_field(c, (const uint8_t *)name, strlen(name), false, (const uint8_t *)value,
                         strlen(value), false);
}

static const char *field_n(h2check_t *c, const char *name, size_t nl, const uint8_t *value,
                           size_t vl)
{
    return h2check_field(c, (const uint8_t *)name, nl, false, value, vl, false);
}

static h2check_t request(void)
{
    h2check_t c = {0};
    assert_null(field(&c, ":method", "GET"));
    assert_null(field(&c, ":scheme", "https"));
    assert_null(field(&c, ":path", "/api/v1/feeds?state=active"));
    assert_null(field(&c, ":authority", "admin.example:8443"));
    return c;
}

static void test_field_names_accept_exactly_lower_case_tchar(void **state)
{
    (void)state;
    const char *tchar = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz";
    for (int b = 0; b < 256; b++) {
        char name[3] = {'x', (char)b, 'y'};
        h2check_t c = request();
        bool want = b != 0 && strchr(tchar, b) != NULL;
        bool got = field_n(&c, name, 3, (const uint8_t *)"v", 1) == NULL;
        if (want != got)
            fail_msg("name byte 0x%02x: %s, want %s", b, got ? "accepted" : "refused",
                     want ? "accepted" : "refused");
    }
}

static void test_field_values_refuse_nul_cr_lf_anywhere_and_white_space_at_either_end(void **state)
{
    (void)state;
    /* every byte at every position of a value as long as a bearer token */
    uint8_t v[93];
    for (int b = 0; b < 256; b++) {
        for (size_t at = 0; at < sizeof v; at += 7) {
            memset(v, 'a', sizeof v);
            v[at] = (uint8_t)b;
            bool edge = at == 0 || at == sizeof v - 1;
            bool want = b != 0 && b != '\r' && b != '\n' && !(edge && (b == ' ' || b == '\t'));
            h2check_t c = request();
            bool got = field_n(&c, "x-v", 3, v, sizeof v) == NULL;
            if (want != got)
                fail_msg("value byte 0x%02x at %zu of %zu: %s", b, at, sizeof v,
                         got ? "accepted" : "refused");
        }
    }
    h2check_t c = request();
    assert_null(field(&c, "x-empty", ""));
    assert_null(field(&c, "x-inner", "a b\tc"));
}

static void test_path_refuses_space_and_control_characters_and_keeps_obs_text(void **state)
{
    (void)state;
    for (int b = 0; b < 256; b++) {
        uint8_t path[20];
        memset(path, 'p', sizeof path);
        path[0] = '/';
        path[17] = (uint8_t)b;
        h2check_t c = {0};
        bool want = b > 0x20 && b != 0x7f;
        bool got = field_n(&c, ":path", 5, path, sizeof path) == NULL;
        if (want != got)
            fail_msg(":path byte 0x%02x: %s", b, got ? "accepted" : "refused");
    }
    h2check_t c = {0};
    assert_non_null(field(&c, ":path", ""));
}

static void test_pseudo_headers_once_each_before_regular_fields_and_only_known_ones(void **state)
{
    (void)state;
    h2check_t c = request();
    assert_null(h2check_headers_end(&c, true));
    assert_non_null(field(&c, ":method", "GET")); /* twice */
    c = request();
    assert_null(field(&c, "accept", "*/*"));
    assert_non_null(field(&c, ":authority", "late")); /* after a regular field */
    c = (h2check_t){0};
    assert_non_null(field(&c, ":status", "200"));
    assert_non_null(field(&c, ":protocol", "websocket")); /* no extended CONNECT here */
    c = (h2check_t){0};
    assert_non_null(field(&c, ":method", "G ET"));
    assert_non_null(field(&c, ":scheme", "1http"));
    assert_null(field(&c, ":scheme", "coap+tcp"));
}

static void test_a_request_needs_method_scheme_and_path_and_connect_only_authority(void **state)
{
    (void)state;
    h2check_t c = {0};
    assert_null(field(&c, ":method", "GET"));
    assert_null(field(&c, ":path", "/"));
    assert_non_null(h2check_headers_end(&c, true)); /* no :scheme */
    c = (h2check_t){0};
    assert_null(field(&c, ":scheme", "http"));
    assert_null(field(&c, ":path", "/"));
    assert_non_null(h2check_headers_end(&c, true)); /* no :method */
    c = (h2check_t){0};
    assert_null(field(&c, ":method", "CONNECT"));
    assert_null(field(&c, ":authority", "example:443"));
    assert_null(h2check_headers_end(&c, false));
    assert_null(field(&c, ":path", "/"));
    assert_non_null(h2check_headers_end(&c, false)); /* CONNECT with :path */
}

static void test_connection_specific_fields_and_te_other_than_trailers_are_refused(void **state)
{
    (void)state;
    const char *names[] = {"connection", "keep-alive", "proxy-connection", "transfer-encoding",
                           "upgrade"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        h2check_t c = request();
        if (!field(&c, names[i], "x"))
            fail_msg("%s accepted", names[i]);
    }
    h2check_t c = request();
    assert_null(field(&c, "te", "trailers"));
    assert_null(field(&c, "te", "Trailers"));
    assert_non_null(field(&c, "te", "gzip"));
    assert_null(field(&c, "tf", "gzip"));
}

static void test_content_length_must_be_digits_agree_and_match_the_body(void **state)
{
    (void)state;
    h2check_t c = request();
    assert_null(field(&c, "content-length", "5"));
    assert_null(field(&c, "content-length", "5"));
    assert_non_null(field(&c, "content-length", "6"));
    c = request();
    assert_non_null(field(&c, "content-length", "5 "));
    c = request();
    assert_non_null(field(&c, "content-length", "-1"));
    c = request();
    assert_non_null(field(&c, "content-length", "99999999999999999999"));

    c = request();
    assert_null(field(&c, "content-length", "5"));
    assert_non_null(h2check_headers_end(&c, true)); /* announced, never came */
    assert_null(h2check_headers_end(&c, false));
    assert_null(h2check_data(&c, 3, false));
    assert_non_null(h2check_data(&c, 0, true)); /* 3 of 5 */
    c = request();
    assert_null(field(&c, "content-length", "5"));
    assert_null(h2check_data(&c, 3, false));
    assert_non_null(h2check_data(&c, 3, false)); /* 6 of 5 */
    c = request();
    assert_null(field(&c, "content-length", "5"));
    assert_null(h2check_data(&c, 5, false));
    assert_null(h2check_data(&c, 0, true));
    c = request();
    assert_null(h2check_data(&c, 1 << 20, true)); /* no content-length: any length */
}

static void test_trailers_carry_no_pseudo_headers_and_end_the_stream(void **state)
{
    (void)state;
    h2check_t c = request();
    assert_null(field(&c, "content-length", "2"));
    assert_null(h2check_data(&c, 2, false));
    assert_null(h2check_field(&c, (const uint8_t *)"grpc-status", 11, false, (const uint8_t *)"0",
                              1, true));
    assert_non_null(
        h2check_field(&c, (const uint8_t *)":path", 5, true, (const uint8_t *)"/", 1, true));
    assert_non_null(h2check_trailers_end(&c, false));
    assert_null(h2check_trailers_end(&c, true));
    c = request();
    assert_null(field(&c, "content-length", "2"));
    assert_non_null(h2check_trailers_end(&c, true)); /* the body never came */
}

static void test_a_known_name_is_not_looked_at_again(void **state)
{
    (void)state;
    /* name_known is for HPACK static-table names: the caller vouches for the characters */
    h2check_t c = request();
    assert_null(
        h2check_field(&c, (const uint8_t *)"accept", 6, true, (const uint8_t *)"*/*", 3, false));
    /* the value is still checked */
    assert_non_null(
        h2check_field(&c, (const uint8_t *)"accept", 6, true, (const uint8_t *)"a\r\nb", 4, false));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_field_names_accept_exactly_lower_case_tchar),
        cmocka_unit_test(test_field_values_refuse_nul_cr_lf_anywhere_and_white_space_at_either_end),
        cmocka_unit_test(test_path_refuses_space_and_control_characters_and_keeps_obs_text),
        cmocka_unit_test(test_pseudo_headers_once_each_before_regular_fields_and_only_known_ones),
        cmocka_unit_test(test_a_request_needs_method_scheme_and_path_and_connect_only_authority),
        cmocka_unit_test(test_connection_specific_fields_and_te_other_than_trailers_are_refused),
        cmocka_unit_test(test_content_length_must_be_digits_agree_and_match_the_body),
        cmocka_unit_test(test_trailers_carry_no_pseudo_headers_and_end_the_stream),
        cmocka_unit_test(test_a_known_name_is_not_looked_at_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
