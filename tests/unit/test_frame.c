/* Binary frame: build/parse round trips, the incremental stream parser, and every refusal. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "frame.h"

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* A DATA frame with two records built by hand from the spec, byte by byte. */
static const uint8_t spec_frame[] = {
    0x4E, 0x44, 0x44, 0x31,                         /* magic */
    0x01, 0x01, 0x00, 0x01,                         /* version 1, DATA, ack requested */
    0x00, 0x00, 0x00, 0x31,                         /* payload length 49 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, /* id 7 */
    0x00, 0x00, 0x00, 0x02,                         /* 2 records */
    0x00, 0x00, 0x00, 0x1B,                         /* record 1: 27 bytes */
    0x00, 0x01,                                     /* 1 header */
    0x00, 0x04, '@',  's',  'e',  'q',  0x00, 0x00, 0x00, 0x02, '4', '2', /* @seq: 42 */
    0x00, 0x00, 0x00, 0x02, 'k',  '1',                                    /* key k1 */
    0x00, 0x00, 0x00, 0x03, '{',  '}',  '\n',                             /* body */
    0x00, 0x00, 0x00, 0x0A,                                               /* record 2: 10 bytes */
    0x00, 0x00,                                                           /* 0 headers */
    0x00, 0x00, 0x00, 0x00,                                               /* empty key */
    0x00, 0x00, 0x00, 0x00,                                               /* empty body */
};

static void test_parses_frame_written_from_the_spec(void **state)
{
    frame_parser_t p;
    frame_t f;
    size_t used;
    frame_parser_init(&p, 0, true);
    assert_int_equal(frame_parse(&p, spec_frame, sizeof spec_frame, &f, &used), FRAME_OK);
    assert_int_equal(used, sizeof spec_frame);
    assert_int_equal(f.hdr.type, FRAME_TYPE_DATA);
    assert_int_equal(f.hdr.flags, FRAME_FLAG_ACK_REQUESTED);
    assert_int_equal(f.hdr.id, 7);
    assert_int_equal(f.record_count, 2);

    frame_record_iter_t it;
    frame_record_t r;
    codec_slice_t v;
    frame_records(&f, &it);
    assert_true(frame_record_next(&it, &r));
    assert_int_equal(r.header_count, 1);
    assert_true(frame_record_header(&r, "@seq", &v));
    assert_int_equal(v.len, 2);
    assert_memory_equal(v.ptr, "42", 2);
    assert_false(frame_record_header(&r, "@se", &v));
    assert_int_equal(r.key.len, 2);
    assert_memory_equal(r.key.ptr, "k1", 2);
    assert_int_equal(r.body.len, 3);
    /* Slices point into the input: nothing was copied. */
    assert_ptr_equal(r.body.ptr, (const char *)spec_frame + 52);
    assert_true(frame_record_next(&it, &r));
    assert_int_equal(r.header_count, 0);
    assert_int_equal(r.key.len, 0);
    assert_int_equal(r.body.len, 0);
    assert_false(frame_record_next(&it, &r));
}

static void test_builder_output_equals_spec_bytes(void **state)
{
    buf_t out;
    frame_builder_t b;
    buf_init(&out, 0, 4096);
    assert_int_equal(frame_data_begin(&b, &out, 7, FRAME_FLAG_ACK_REQUESTED, 0), 0);
    assert_int_equal(frame_data_record_begin(&b), 0);
    assert_int_equal(frame_data_record_header(&b, "@seq", 4, "42", 2), 0);
    assert_int_equal(frame_data_record_end(&b, "k1", 2, "{}\n", 3), 0);
    assert_int_equal(frame_data_record_begin(&b), 0);
    assert_int_equal(frame_data_record_end(&b, NULL, 0, NULL, 0), 0);
    assert_int_equal(frame_data_end(&b), 0);
    assert_int_equal(frame_data_count(&b), 2);
    assert_int_equal(out.len, sizeof spec_frame);
    assert_memory_equal(out.data, spec_frame, sizeof spec_frame);
    buf_free(&out);
}

static void test_stream_parser_waits_for_partial_frames_byte_by_byte(void **state)
{
    /* Three frames back to back, fed one byte more at a time. */
    buf_t s;
    buf_init(&s, 0, 4096);
    assert_int_equal(buf_append(&s, spec_frame, sizeof spec_frame), 0);
    assert_int_equal(frame_build_ack(&s, 7), 0);
    assert_int_equal(frame_build_nack(&s, 8, 503, "busy", 4), 0);
    frame_parser_t p;
    frame_parser_init(&p, 0, false);
    size_t off = 0, avail = 0;
    int types[3], n = 0;
    while (avail < s.len) {
        avail++;
        frame_t f;
        size_t used;
        frame_status_t st;
        while ((st = frame_parse(&p, s.data + off, avail - off, &f, &used)) == FRAME_OK) {
            assert_true(n < 3);
            types[n++] = f.hdr.type;
            if (f.hdr.type == FRAME_TYPE_NACK) {
                assert_int_equal(f.hdr.id, 8);
                assert_int_equal(f.nack_status, 503);
                assert_int_equal(f.nack_reason.len, 4);
                assert_memory_equal(f.nack_reason.ptr, "busy", 4);
            }
            off += used;
        }
        assert_int_equal(st, FRAME_NEED_MORE);
    }
    assert_int_equal(n, 3);
    assert_int_equal(types[0], FRAME_TYPE_DATA);
    assert_int_equal(types[1], FRAME_TYPE_ACK);
    assert_int_equal(types[2], FRAME_TYPE_NACK);
    assert_int_equal(off, s.len);
    buf_free(&s);
}

static frame_status_t parse_copy(const uint8_t *d, size_t n, uint32_t max, char *why, size_t wl)
{
    frame_parser_t p;
    frame_t f;
    size_t used;
    frame_parser_init(&p, max, false);
    frame_status_t st = frame_parse(&p, d, n, &f, &used);
    snprintf(why, wl, "%s", p.error);
    return st;
}

static void test_rejects_bad_magic_version_type_and_length(void **state)
{
    uint8_t d[sizeof spec_frame];
    char why[160];

    memcpy(d, spec_frame, sizeof d);
    d[0] = 'G'; /* "GET /" from an HTTP client on the frame port */
    assert_int_equal(parse_copy(d, 1, 0, why, sizeof why), FRAME_ERROR);
    assert_non_null(strstr(why, "bad magic"));

    memcpy(d, spec_frame, sizeof d);
    d[4] = 2;
    assert_int_equal(parse_copy(d, sizeof d, 0, why, sizeof why), FRAME_ERROR);
    assert_non_null(strstr(why, "unsupported version 2"));

    memcpy(d, spec_frame, sizeof d);
    d[5] = 9;
    assert_int_equal(parse_copy(d, sizeof d, 0, why, sizeof why), FRAME_ERROR);
    assert_non_null(strstr(why, "unknown frame type 9"));

    /* Above the configured maximum: an error at once, not an endless wait. */
    memcpy(d, spec_frame, sizeof d);
    assert_int_equal(parse_copy(d, FRAME_HEADER_LEN, 48, why, sizeof why), FRAME_ERROR);
    assert_non_null(strstr(why, "above limit 48"));
    assert_int_equal(parse_copy(d, sizeof d, 49, why, sizeof why), FRAME_OK);

    /* A record length that runs past the payload. */
    memcpy(d, spec_frame, sizeof d);
    put32(d + 24, 200);
    assert_int_equal(parse_copy(d, sizeof d, 0, why, sizeof why), FRAME_ERROR);
    assert_non_null(strstr(why, "record 0"));

    /* A record count larger than the records present. */
    memcpy(d, spec_frame, sizeof d);
    put32(d + 20, 3);
    assert_int_equal(parse_copy(d, sizeof d, 0, why, sizeof why), FRAME_ERROR);
    assert_non_null(strstr(why, "record 2"));

    /* Fewer records than bytes: trailing garbage. */
    memcpy(d, spec_frame, sizeof d);
    put32(d + 20, 1);
    assert_int_equal(parse_copy(d, sizeof d, 0, why, sizeof why), FRAME_ERROR);
    assert_non_null(strstr(why, "after the last record"));

    /* Body length inside a record disagreeing with the record length. */
    memcpy(d, spec_frame, sizeof d);
    d[51] = 2;
    assert_int_equal(parse_copy(d, sizeof d, 0, why, sizeof why), FRAME_ERROR);
    assert_non_null(strstr(why, "bytes after body"));

    /* An ACK must be empty. */
    memcpy(d, spec_frame, sizeof d);
    d[5] = FRAME_TYPE_ACK;
    assert_int_equal(parse_copy(d, sizeof d, 0, why, sizeof why), FRAME_ERROR);
    assert_non_null(strstr(why, "ACK with"));
}

static void test_rejects_frame_ids_that_do_not_increase(void **state)
{
    buf_t s;
    frame_builder_t b;
    buf_init(&s, 0, 4096);
    uint64_t ids[] = {5, 6, 6};
    for (int i = 0; i < 3; i++) {
        frame_data_begin(&b, &s, ids[i], 0, 0);
        frame_data_end(&b);
    }
    frame_parser_t p;
    frame_parser_init(&p, 0, true);
    frame_t f;
    size_t used, off = 0;
    assert_int_equal(frame_parse(&p, s.data, s.len, &f, &used), FRAME_OK);
    assert_int_equal(f.record_count, 0);
    off += used;
    assert_int_equal(frame_parse(&p, s.data + off, s.len - off, &f, &used), FRAME_OK);
    off += used;
    assert_int_equal(frame_parse(&p, s.data + off, s.len - off, &f, &used), FRAME_ERROR);
    assert_non_null(strstr(p.error, "frame id 6 not above previous 6"));
    buf_free(&s);
}

static void test_builder_rolls_back_a_record_that_does_not_fit(void **state)
{
    buf_t out;
    frame_builder_t b;
    char body[100];
    memset(body, 'x', sizeof body);
    /* Room for the header, count, and one record of ~110 bytes but not two. */
    buf_init(&out, 0, 20 + 4 + 2 * 118 - 1);
    assert_int_equal(frame_data_begin(&b, &out, 1, 0, 0), 0);
    for (int i = 0; i < 2; i++) {
        int rc = frame_data_record_begin(&b);
        if (rc == 0)
            rc = frame_data_record_header(&b, "@seq", 4, "1", 1);
        if (rc == 0)
            rc = frame_data_record_end(&b, "k", 1, body, sizeof body);
        assert_int_equal(rc, i == 0 ? 0 : -1);
    }
    frame_data_end(&b);
    assert_int_equal(frame_data_count(&b), 1);
    frame_parser_t p;
    frame_t f;
    size_t used;
    frame_parser_init(&p, 0, true);
    assert_int_equal(frame_parse(&p, out.data, out.len, &f, &used), FRAME_OK);
    assert_int_equal(used, out.len);
    assert_int_equal(f.record_count, 1);

    /* max_payload applies on its own too. */
    buf_reset(&out);
    out.max = 1 << 20;
    assert_int_equal(frame_data_begin(&b, &out, 2, 0, 64), 0);
    assert_int_equal(frame_data_record_begin(&b), 0);
    assert_int_equal(frame_data_record_end(&b, "k", 1, body, sizeof body), -1);
    frame_data_end(&b);
    assert_int_equal(frame_data_count(&b), 0);
    assert_int_equal(out.len, FRAME_HEADER_LEN + 4);

    /* An aborted frame leaves nothing behind. */
    size_t before = out.len;
    frame_data_begin(&b, &out, 3, 0, 0);
    frame_data_abort(&b);
    assert_int_equal(out.len, before);
    buf_free(&out);
}

static void test_patching_id_and_flags_in_place(void **state)
{
    buf_t out;
    frame_builder_t b;
    buf_init(&out, 0, 4096);
    frame_data_begin(&b, &out, 0, FRAME_FLAG_ACK_REQUESTED, 0);
    frame_data_end(&b);
    frame_set_id(out.data, 0x0102030405060708ull);
    frame_set_flags(out.data, 0);
    frame_header_t h;
    frame_header_read(out.data, &h);
    assert_int_equal(h.id, 0x0102030405060708ull);
    assert_int_equal(h.flags, 0);
    assert_int_equal(h.payload_len, 4);
    buf_free(&out);
}

static void test_nack_reason_length_checked(void **state)
{
    buf_t out;
    buf_init(&out, 0, 4096);
    assert_int_equal(frame_build_nack(&out, 9, 400, "bad record", 10), 0);
    out.data[19 + 4] = 0xFF; /* corrupt the reason length high byte: 0xFF0A */
    frame_parser_t p;
    frame_t f;
    size_t used;
    frame_parser_init(&p, 0, false);
    assert_int_equal(frame_parse(&p, out.data, out.len, &f, &used), FRAME_ERROR);
    assert_non_null(strstr(p.error, "NACK reason length"));
    /* A full buffer refuses and leaves out unchanged. */
    buf_t small;
    buf_init(&small, 0, 21);
    assert_int_equal(frame_build_nack(&small, 1, 500, "x", 1), -1);
    assert_int_equal(small.len, 0);
    buf_free(&small);
    buf_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parses_frame_written_from_the_spec),
        cmocka_unit_test(test_builder_output_equals_spec_bytes),
        cmocka_unit_test(test_stream_parser_waits_for_partial_frames_byte_by_byte),
        cmocka_unit_test(test_rejects_bad_magic_version_type_and_length),
        cmocka_unit_test(test_rejects_frame_ids_that_do_not_increase),
        cmocka_unit_test(test_builder_rolls_back_a_record_that_does_not_fit),
        cmocka_unit_test(test_patching_id_and_flags_in_place),
        cmocka_unit_test(test_nack_reason_length_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
