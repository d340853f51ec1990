/* WTP frame parser and HV-VES event validation: every result class of wtp_parse, and every
 * skip cause of hvves_event_decode, on frames and events built byte by byte / with protobuf-c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "VesEvent.pb-c.h"
#include "hvves_event.h"
#include "wtp.h"

static size_t frame(uint8_t *out, uint8_t magic, uint8_t major, uint16_t type, uint32_t len)
{
    uint8_t h[12] = {magic,
                     major,
                     0,
                     0,
                     0,
                     0,
                     (uint8_t)(type >> 8),
                     (uint8_t)type,
                     (uint8_t)(len >> 24),
                     (uint8_t)(len >> 16),
                     (uint8_t)(len >> 8),
                     (uint8_t)len};
    memcpy(out, h, 12);
    memset(out + 12, 'p', len);
    return 12 + len;
}

static void test_wtp_complete_frame_covers_header_and_payload(void **s)
{
    uint8_t b[64];
    size_t n = frame(b, 0xAA, 1, 1, 10);
    wtp_frame_t f;
    assert_int_equal(wtp_parse(b, n, 100, &f), WTP_FRAME);
    assert_int_equal(f.size, 22);
    assert_int_equal(f.payload_len, 10);
    assert_ptr_equal(f.payload, b + 12);
}

static void test_wtp_partial_frame_needs_more(void **s)
{
    uint8_t b[64];
    size_t n = frame(b, 0xAA, 1, 1, 10);
    wtp_frame_t f;
    assert_int_equal(wtp_parse(b, 0, 100, &f), WTP_NEED_MORE);
    assert_int_equal(wtp_parse(b, 5, 100, &f), WTP_NEED_MORE);
    assert_int_equal(wtp_parse(b, n - 1, 100, &f), WTP_NEED_MORE);
}

static void test_wtp_bad_magic_is_seen_on_the_first_byte(void **s)
{
    uint8_t b[64];
    frame(b, 0x55, 1, 1, 10);
    wtp_frame_t f;
    assert_int_equal(wtp_parse(b, 1, 100, &f), WTP_BAD_MAGIC);
}

static void test_wtp_oversized_refused_from_the_header_alone(void **s)
{
    uint8_t b[64];
    frame(b, 0xAA, 1, 1, 0);
    b[8] = 0x01; /* 16 MiB */
    wtp_frame_t f;
    assert_int_equal(wtp_parse(b, 12, WTP_DEFAULT_MAX_PAYLOAD, &f), WTP_TOO_BIG);
}

static void test_wtp_unknown_version_and_type_are_skipped_whole(void **s)
{
    uint8_t b[64];
    wtp_frame_t f;
    size_t n = frame(b, 0xAA, 2, 1, 4);
    assert_int_equal(wtp_parse(b, n, 100, &f), WTP_SKIP_VERSION);
    assert_int_equal(f.size, 16);
    n = frame(b, 0xAA, 1, 7, 4);
    assert_int_equal(wtp_parse(b, n, 100, &f), WTP_SKIP_TYPE);
    assert_int_equal(f.size, 16);
}

/* HV-VES (wire_frame.kt) checks only the major version: a minor version is forward
 * compatible, so 1.1 is a frame, 2.0 is not. */
static void test_wtp_minor_version_is_forward_compatible(void **s)
{
    uint8_t b[64];
    wtp_frame_t f;
    size_t n = frame(b, 0xAA, 1, 1, 4);
    b[2] = 1; /* version 1.1 */
    assert_int_equal(wtp_parse(b, n, 100, &f), WTP_FRAME);
    assert_int_equal(f.minor, 1);
    b[1] = 2; /* version 2.1 */
    assert_int_equal(wtp_parse(b, n, 100, &f), WTP_SKIP_VERSION);
}

static size_t pack_event(uint8_t *out, const char *listener, const char *source, bool header)
{
    Org__Onap__Ves__VesEvent ev = ORG__ONAP__VES__VES_EVENT__INIT;
    Org__Onap__Ves__CommonEventHeader h = ORG__ONAP__VES__COMMON_EVENT_HEADER__INIT;
    h.version = "1.0";
    h.domain = "perf3gpp";
    h.eventid = "e1";
    h.eventname = "n";
    h.reportingentityname = "r";
    h.sourcename = (char *)source;
    h.veseventlistenerversion = (char *)listener;
    h.priority = ORG__ONAP__VES__COMMON_EVENT_HEADER__PRIORITY__NORMAL;
    h.startepochmicrosec = 1;
    h.lastepochmicrosec = 2;
    ev.commoneventheader = header ? &h : NULL;
    ev.eventfields.data = (uint8_t *)"xyz";
    ev.eventfields.len = 3;
    return org__onap__ves__ves_event__pack(&ev, out);
}

static void test_hvves_valid_event_key_is_the_serialised_header(void **s)
{
    hvves_arena_t a;
    assert_int_equal(hvves_arena_init(&a, 4096), 0);
    uint8_t b[512];
    size_t n = pack_event(b, "7.2", "src", true);
    hvves_event_t ev;
    assert_int_equal(hvves_event_decode(&a, b, n, &ev), HVVES_OK);
    assert_string_equal(ev.domain, "perf3gpp");
    assert_int_equal(ev.last_epoch_us, 2);
    Org__Onap__Ves__CommonEventHeader *h =
        org__onap__ves__common_event_header__unpack(NULL, ev.key_len, ev.key);
    assert_non_null(h);
    assert_string_equal(h->sourcename, "src");
    org__onap__ves__common_event_header__free_unpacked(h, NULL);
    hvves_arena_free(&a);
}

static void test_hvves_invalid_events_are_refused_by_cause(void **s)
{
    hvves_arena_t a;
    assert_int_equal(hvves_arena_init(&a, 4096), 0);
    uint8_t b[512];
    hvves_event_t ev;
    size_t n = pack_event(b, "5.4", "src", true);
    assert_int_equal(hvves_event_decode(&a, b, n, &ev), HVVES_ERR_VERSION);
    n = pack_event(b, "7.2", "", true);
    assert_int_equal(hvves_event_decode(&a, b, n, &ev), HVVES_ERR_MISSING_FIELD);
    assert_string_equal(ev.field, "sourceName");
    n = pack_event(b, "7.2", "src", false);
    assert_int_equal(hvves_event_decode(&a, b, n, &ev), HVVES_ERR_NO_HEADER);
    static const uint8_t junk[] = {0xff, 0xff, 0xff, 0x0f};
    assert_int_equal(hvves_event_decode(&a, junk, sizeof junk, &ev), HVVES_ERR_PROTOBUF);
    assert_string_equal(hvves_reason_name(HVVES_ERR_PROTOBUF), "invalid-protobuf");
    hvves_arena_free(&a);
}

/* HV-VES's vesEventListenerVersionRegex 7\.[0-9].* (hv-collector-domain validation.kt),
 * matched whole: "7." and a digit, then anything but a line terminator. */
static void test_hvves_listener_version_follows_hv_ves_regex(void **s)
{
    hvves_arena_t a;
    assert_int_equal(hvves_arena_init(&a, 4096), 0);
    uint8_t b[512];
    hvves_event_t ev;
    static const char *const ok[] = {"7.0", "7.2.1", "7.0.2.4", "7.1-rc1", "7.9x"};
    static const char *const bad[] = {"7",      "7.",    "7.x",         "70.1", "5.4",
                                      "7.1\nx", "7.1\r", "7.1\xc2\x85", " 7.1", "7.1\xe2\x80\xa8"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        size_t n = pack_event(b, ok[i], "src", true);
        assert_int_equal(hvves_event_decode(&a, b, n, &ev), HVVES_OK);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t n = pack_event(b, bad[i], "src", true);
        assert_int_equal(hvves_event_decode(&a, b, n, &ev), HVVES_ERR_VERSION);
    }
    hvves_arena_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wtp_complete_frame_covers_header_and_payload),
        cmocka_unit_test(test_wtp_partial_frame_needs_more),
        cmocka_unit_test(test_wtp_bad_magic_is_seen_on_the_first_byte),
        cmocka_unit_test(test_wtp_oversized_refused_from_the_header_alone),
        cmocka_unit_test(test_wtp_unknown_version_and_type_are_skipped_whole),
        cmocka_unit_test(test_wtp_minor_version_is_forward_compatible),
        cmocka_unit_test(test_hvves_valid_event_key_is_the_serialised_header),
        cmocka_unit_test(test_hvves_invalid_events_are_refused_by_cause),
        cmocka_unit_test(test_hvves_listener_version_follows_hv_ves_regex),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
