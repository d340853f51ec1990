/* Codec tests: every vector of tests/vectors/ plus the limits and helpers around them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "codec.h"
#include "codec_equal.h"
#include "frame.h"
#include "vectors.h"

static codec_msg_t g_msg, g_msg2; /* large: keep them off the stack */

/* A request copy with every required field, plus caller-chosen extra headers. */
static rd_kafka_headers_t *base_request(void)
{
    rd_kafka_headers_t *h = rd_kafka_headers_new(16);
    rd_kafka_header_add(h, "@timestamp-us", -1, "1764486000000000", -1);
    rd_kafka_header_add(h, "@message-type", -1, "request", -1);
    rd_kafka_header_add(h, "@trigger-point", -1, "rx-request", -1);
    rd_kafka_header_add(h, "@nf-type", -1, "SCP", -1);
    rd_kafka_header_add(h, ":method", -1, "GET", -1);
    rd_kafka_header_add(h, ":path", -1, "/nudm-sdm/v2/imsi-1/am-data", -1);
    return h;
}

static codec_reason_t decode_h(codec_msg_t *m, const char *key, rd_kafka_headers_t *h,
                               codec_error_t *err)
{
    return codec_decode_parts(m, key, key ? strlen(key) : 0, "", 0, h, err);
}

static size_t load_dir(const char *sub, char ***paths)
{
    char dir[1024];
    size_t n = 0;
    assert_int_equal(vectors_list(vectors_dir(sub, dir, sizeof dir), paths, &n), 0);
    return n;
}

static void test_valid_vectors_decode_and_round_trip(void **state)
{
    (void)state;
    char **paths;
    size_t n = load_dir("valid", &paths);
    assert_true(n >= 10);
    for (size_t i = 0; i < n; i++) {
        vectors_record_t v;
        char err[512];
        if (vectors_load(paths[i], &v, err, sizeof err) != 0)
            fail_msg("%s", err);
        assert_true(v.expect_ok);
        codec_error_t e;
        codec_reason_t r =
            codec_decode_parts(&g_msg, v.key, v.key_len, v.value, v.value_len, v.headers, &e);
        if (r != CODEC_OK)
            fail_msg("%s: %s %s: %s", v.name, codec_reason_name(r), e.field, e.detail);
        assert_non_null(g_msg.key.ptr);
        assert_memory_equal(g_msg.key.ptr, g_msg.meta[CODEC_META_CORRELATION_ID].ptr,
                            g_msg.key.len);
        assert_int_equal(g_msg.body.len, v.value_len);

        rd_kafka_headers_t *h2 = rd_kafka_headers_new(8);
        assert_int_equal(codec_encode_headers(&g_msg, h2), 0);
        r = codec_decode_parts(&g_msg2, g_msg.key.ptr, g_msg.key.len, g_msg.body.ptr,
                               g_msg.body.len, h2, &e);
        if (r != CODEC_OK)
            fail_msg("%s re-decode: %s %s: %s", v.name, codec_reason_name(r), e.field, e.detail);
        if (!codec_equal_msg(&g_msg, &g_msg2))
            fail_msg("%s: decode -> encode -> decode differs", v.name);
        rd_kafka_headers_destroy(h2);
        vectors_free(&v);
    }
    vectors_list_free(paths, n);
}

static void test_invalid_vectors_fail_with_documented_reason_and_field(void **state)
{
    (void)state;
    char **paths;
    size_t n = load_dir("invalid", &paths);
    assert_true(n >= 15);
    bool seen[CODEC_REASON__COUNT] = {0};
    for (size_t i = 0; i < n; i++) {
        vectors_record_t v;
        char err[512];
        if (vectors_load(paths[i], &v, err, sizeof err) != 0)
            fail_msg("%s", err);
        assert_false(v.expect_ok);
        codec_error_t e;
        codec_reason_t r =
            codec_decode_parts(&g_msg, v.key, v.key_len, v.value, v.value_len, v.headers, &e);
        if (r == CODEC_OK)
            fail_msg("%s: accepted, expected %s on %s", v.name, v.expect_reason, v.expect_field);
        if (strcmp(codec_reason_name(r), v.expect_reason) != 0 ||
            strcmp(e.field, v.expect_field) != 0)
            fail_msg("%s: got %s on '%s' (%s), expected %s on '%s'", v.name, codec_reason_name(r),
                     e.field, e.detail, v.expect_reason, v.expect_field);
        assert_int_equal(e.reason, r);
        assert_true(strlen(e.detail) > 0);
        seen[r] = true;
        vectors_free(&v);
    }
    vectors_list_free(paths, n);
    for (int r = CODEC_ERR_MISSING_FIELD; r < CODEC_REASON__COUNT; r++)
        if (!seen[r])
            fail_msg("no invalid vector exercises reason %s", codec_reason_name(r));
}

/* The vector's record in the frame form: its key, its headers in file order, its body. False
 * when the frame form cannot hold it: a header with an empty name (a frame's name length is
 * at least 1, docs/encodings.md). */
static bool vector_frame(const vectors_record_t *v, buf_t *out)
{
    frame_builder_t b;
    buf_reset(out);
    assert_int_equal(frame_data_begin(&b, out, 0, 0, UINT32_MAX), 0);
    assert_int_equal(frame_data_record_begin(&b), 0);
    const char *name;
    const void *val;
    size_t vlen;
    for (size_t i = 0; rd_kafka_header_get_all(v->headers, i, &name, &val, &vlen) == 0; i++) {
        if (!*name)
            return false;
        assert_int_equal(frame_data_record_header(&b, name, strlen(name), val, val ? vlen : 0), 0);
    }
    assert_int_equal(
        frame_data_record_end(&b, v->key, v->key ? v->key_len : 0, v->value, v->value_len), 0);
    assert_int_equal(frame_data_end(&b), 0);
    return true;
}

static void test_every_vector_gets_the_same_verdict_in_the_frame_form(void **state)
{
    (void)state;
    buf_t fb;
    assert_int_equal(buf_init(&fb, 0, 64u << 20), 0);
    const char *dirs[] = {"valid", "invalid"};
    int unframable = 0;
    for (int d = 0; d < 2; d++) {
        char **paths;
        size_t n = load_dir(dirs[d], &paths);
        for (size_t i = 0; i < n; i++) {
            vectors_record_t v;
            char err[512];
            if (vectors_load(paths[i], &v, err, sizeof err) != 0)
                fail_msg("%s", err);
            codec_error_t eh, ef;
            codec_reason_t rh =
                codec_decode_parts(&g_msg, v.key, v.key_len, v.value, v.value_len, v.headers, &eh);
            if (!vector_frame(&v, &fb)) {
                assert_int_equal(rh, CODEC_ERR_BAD_HEADER); /* refused in either form */
                unframable++;
                vectors_free(&v);
                continue;
            }
            codec_reason_t rf = codec_decode_frame_limited(&g_msg2, fb.data, fb.len, NULL, &ef);
            if (rh != rf || (rh != CODEC_OK && strcmp(eh.field, ef.field) != 0))
                fail_msg("%s: headers %s on '%s', frame %s on '%s' (%s)", v.name,
                         codec_reason_name(rh), eh.field, codec_reason_name(rf), ef.field,
                         ef.detail);
            if (rh == CODEC_OK && !codec_equal_msg(&g_msg, &g_msg2))
                fail_msg("%s: the frame form decodes to another copy", v.name);
            vectors_free(&v);
        }
        vectors_list_free(paths, n);
    }
    assert_true(unframable <= 1); /* the empty-name vector alone */
    buf_free(&fb);
}

static void test_aggregated_copy_round_trips_through_one_frame(void **state)
{
    (void)state;
    rd_kafka_headers_t *h = base_request();
    rd_kafka_header_add(h, "@agg-seq", -1, "42", -1);
    rd_kafka_header_add(h, "@x-vendor", -1, "kept", -1);
    assert_int_equal(decode_h(&g_msg, "txn-1", h, NULL), CODEC_OK);
    buf_t fb;
    assert_int_equal(buf_init(&fb, 0, 1u << 20), 0);
    assert_int_equal(frame_build_copy(&fb, &g_msg), 0);
    codec_error_t e;
    assert_int_equal(codec_decode_frame_limited(&g_msg2, fb.data, fb.len, NULL, &e), CODEC_OK);
    assert_true(codec_equal_msg(&g_msg, &g_msg2));
    assert_int_equal(g_msg2.agg_seq, 42);
    /* slices point into the frame: nothing was copied */
    assert_true((const uint8_t *)g_msg2.key.ptr > fb.data &&
                (const uint8_t *)g_msg2.key.ptr < fb.data + fb.len);
    buf_free(&fb);
    rd_kafka_headers_destroy(h);
}

static void test_frame_form_refuses_what_is_not_exactly_one_copy_in_one_frame(void **state)
{
    (void)state;
    rd_kafka_headers_t *h = base_request();
    assert_int_equal(decode_h(&g_msg, "txn-1", h, NULL), CODEC_OK);
    buf_t fb, two;
    assert_int_equal(buf_init(&fb, 0, 1u << 20), 0);
    assert_int_equal(buf_init(&two, 0, 1u << 20), 0);
    assert_int_equal(frame_build_copy(&fb, &g_msg), 0);
    codec_error_t e;
    struct {
        const char *what;
        const uint8_t *data;
        size_t len;
    } bad[4] = {{"truncated", fb.data, fb.len - 1},
                {"header only", fb.data, FRAME_HEADER_LEN},
                {"trailing byte", fb.data, fb.len + 1},
                {"two records", NULL, 0}};
    assert_int_equal(buf_append_u8(&fb, 0), 0); /* the trailing byte */
    frame_builder_t b;
    assert_int_equal(frame_data_begin(&b, &two, 0, 0, 0), 0);
    assert_int_equal(frame_data_add_msg(&b, &g_msg), 0);
    assert_int_equal(frame_data_add_msg(&b, &g_msg), 0);
    assert_int_equal(frame_data_end(&b), 0);
    bad[3].data = two.data;
    bad[3].len = two.len;
    bad[0].data = bad[1].data = bad[2].data = fb.data;
    for (size_t i = 0; i < 4; i++) {
        codec_reason_t r = codec_decode_frame_limited(&g_msg2, bad[i].data, bad[i].len, NULL, &e);
        if (r != CODEC_ERR_BAD_VALUE || strcmp(e.field, "value") != 0)
            fail_msg("%s: got %s on '%s' (%s)", bad[i].what, codec_reason_name(r), e.field,
                     e.detail);
    }
    uint8_t ack[FRAME_HEADER_LEN];
    buf_t ab = {.data = ack, .len = 0, .cap = sizeof ack, .max = sizeof ack};
    assert_int_equal(frame_build_ack(&ab, 7), 0);
    assert_int_equal(codec_decode_frame_limited(&g_msg2, ab.data, ab.len, NULL, &e),
                     CODEC_ERR_BAD_VALUE);
    buf_free(&fb);
    buf_free(&two);
    rd_kafka_headers_destroy(h);
}

static void test_decode_points_into_record_without_copying(void **state)
{
    (void)state;
    rd_kafka_headers_t *h = base_request();
    char body[] = "{\"a\":1}";
    char key[] = "cid-1";
    assert_int_equal(codec_decode_parts(&g_msg, key, 5, body, 7, h, NULL), CODEC_OK);
    assert_ptr_equal(g_msg.body.ptr, body);
    assert_ptr_equal(g_msg.key.ptr, key);
    const void *val;
    size_t len;
    assert_int_equal(rd_kafka_header_get_last(h, ":path", &val, &len), 0);
    assert_ptr_equal(g_msg.path.ptr, val);
    assert_int_equal(rd_kafka_header_get_last(h, "@nf-type", &val, &len), 0);
    assert_ptr_equal(g_msg.meta[CODEC_META_NF_TYPE].ptr, val);
    rd_kafka_headers_destroy(h);
}

static void test_decode_parses_typed_fields(void **state)
{
    (void)state;
    rd_kafka_headers_t *h = rd_kafka_headers_new(8);
    rd_kafka_header_add(h, "@timestamp-us", -1, "1764486000000042", -1);
    rd_kafka_header_add(h, "@message-type", -1, "response", -1);
    rd_kafka_header_add(h, "@trigger-point", -1, "tx-response", -1);
    rd_kafka_header_add(h, "@nf-type", -1, "PCF", -1);
    rd_kafka_header_add(h, "@seq", -1, "18446744073709551615", -1);
    rd_kafka_header_add(h, "@agg-seq", -1, "7", -1);
    rd_kafka_header_add(h, "@agg-timestamp-us", -1, "1764486000000099", -1);
    rd_kafka_header_add(h, ":status", -1, "503", -1);
    assert_int_equal(decode_h(&g_msg, "k", h, NULL), CODEC_OK);
    assert_int_equal(g_msg.timestamp_us, 1764486000000042LL);
    assert_int_equal(g_msg.type, CODEC_MSG_RESPONSE);
    assert_int_equal(g_msg.trigger, CODEC_TRIGGER_TX_RESPONSE);
    assert_int_equal(g_msg.nf, CODEC_NF_PCF);
    assert_int_equal(g_msg.status, 503);
    assert_true(g_msg.seq == UINT64_MAX);
    assert_int_equal(g_msg.agg_seq, 7);
    assert_int_equal(g_msg.agg_timestamp_us, 1764486000000099LL);
    assert_null(g_msg.method.ptr);
    rd_kafka_headers_destroy(h);
}

static void test_seq_overflow_is_bad_value(void **state)
{
    (void)state;
    rd_kafka_headers_t *h = base_request();
    rd_kafka_header_add(h, "@seq", -1, "18446744073709551616", -1);
    codec_error_t e;
    assert_int_equal(decode_h(&g_msg, "k", h, &e), CODEC_ERR_BAD_VALUE);
    assert_string_equal(e.field, "@seq");
    rd_kafka_headers_destroy(h);
}

static void test_key_length_limit_boundary(void **state)
{
    (void)state;
    char key[CODEC_MAX_KEY + 2];
    memset(key, 'k', sizeof key);
    key[CODEC_MAX_KEY] = '\0';
    rd_kafka_headers_t *h = base_request();
    codec_error_t e;
    assert_int_equal(decode_h(&g_msg, key, h, &e), CODEC_OK);
    key[CODEC_MAX_KEY] = 'k';
    key[CODEC_MAX_KEY + 1] = '\0';
    assert_int_equal(decode_h(&g_msg, key, h, &e), CODEC_ERR_OVERSIZED);
    assert_string_equal(e.field, "key");
    rd_kafka_headers_destroy(h);
}

/* Which of key and @correlation-id a copy carried, so that a re-producer adds the other. */
static void test_decode_says_whether_the_id_came_as_key_header_or_both(void **state)
{
    (void)state;
    rd_kafka_headers_t *h = base_request();
    assert_int_equal(decode_h(&g_msg, "txn-1", h, NULL), CODEC_OK);
    assert_int_equal(g_msg.cid_in, CODEC_CID_IN_KEY);
    assert_true(codec_msg_cid_needs_header(&g_msg));
    const void *v = NULL;
    size_t n = 0;
    assert_int_equal(codec_headers_correlation_id(h, &v, &n), -1);

    rd_kafka_header_add(h, "@correlation-id", -1, "txn-1", -1);
    assert_int_equal(decode_h(&g_msg, NULL, h, NULL), CODEC_OK);
    assert_int_equal(g_msg.cid_in, CODEC_CID_IN_HEADER);
    assert_false(codec_msg_cid_needs_header(&g_msg));
    assert_int_equal(g_msg.key.len, 5);
    assert_memory_equal(g_msg.key.ptr, "txn-1", 5);
    assert_int_equal(codec_headers_correlation_id(h, &v, &n), 0);
    assert_int_equal(n, 5);
    assert_memory_equal(v, "txn-1", 5);

    assert_int_equal(decode_h(&g_msg, "txn-1", h, NULL), CODEC_OK);
    assert_int_equal(g_msg.cid_in, CODEC_CID_IN_KEY | CODEC_CID_IN_HEADER);
    assert_false(codec_msg_cid_needs_header(&g_msg));
    rd_kafka_headers_destroy(h);
}

static void test_meta_value_limit_boundary(void **state)
{
    (void)state;
    char v[CODEC_MAX_META_VALUE + 1];
    memset(v, 'a', sizeof v);
    rd_kafka_headers_t *h = base_request();
    rd_kafka_header_add(h, "@producer-fqdn", -1, v, CODEC_MAX_META_VALUE);
    assert_int_equal(decode_h(&g_msg, "k", h, NULL), CODEC_OK);
    assert_int_equal(g_msg.meta[CODEC_META_PRODUCER_FQDN].len, CODEC_MAX_META_VALUE);
    rd_kafka_headers_destroy(h);
    h = base_request();
    rd_kafka_header_add(h, "@producer-fqdn", -1, v, CODEC_MAX_META_VALUE + 1);
    codec_error_t e;
    assert_int_equal(decode_h(&g_msg, "k", h, &e), CODEC_ERR_OVERSIZED);
    assert_string_equal(e.field, "@producer-fqdn");
    rd_kafka_headers_destroy(h);
}

static void test_extension_header_limit_boundary(void **state)
{
    (void)state;
    rd_kafka_headers_t *h = base_request();
    char name[16];
    for (int i = 0; i < CODEC_MAX_EXT_HEADERS; i++) {
        snprintf(name, sizeof name, "@ext-%d", i);
        rd_kafka_header_add(h, name, -1, "v", 1);
    }
    assert_int_equal(decode_h(&g_msg, "k", h, NULL), CODEC_OK);
    assert_int_equal(g_msg.n_ext, CODEC_MAX_EXT_HEADERS);
    rd_kafka_header_add(h, "@ext-last", -1, "v", 1);
    codec_error_t e;
    assert_int_equal(decode_h(&g_msg, "k", h, &e), CODEC_ERR_LIMIT);
    assert_string_equal(e.field, "@ext-last");
    rd_kafka_headers_destroy(h);
}

static void test_body_limit_is_per_decoder_and_the_default_is_one_mib(void **state)
{
    (void)state;
    rd_kafka_headers_t *h = base_request();
    static char body[CODEC_DEFAULT_MAX_BODY + 1];
    codec_limits_t small = {.max_body = 1024}, big = {.max_body = 4096};
    assert_int_equal(codec_limits_check(&small), 0);
    assert_int_equal(codec_decode_parts_limited(&g_msg, "k", 1, body, 1024, h, &small, NULL),
                     CODEC_OK);
    codec_error_t e;
    assert_int_equal(codec_decode_parts_limited(&g_msg, "k", 1, body, 1025, h, &small, &e),
                     CODEC_ERR_OVERSIZED);
    assert_string_equal(e.field, "value");
    /* another decoder of the same process keeps its own limit (two roles of ndd) */
    assert_int_equal(codec_decode_parts_limited(&g_msg, "k", 1, body, 1025, h, &big, NULL),
                     CODEC_OK);
    /* no limits, or 0: the default */
    assert_int_equal(codec_decode_parts(&g_msg, "k", 1, body, CODEC_DEFAULT_MAX_BODY, h, NULL),
                     CODEC_OK);
    assert_int_equal(codec_decode_parts(&g_msg, "k", 1, body, CODEC_DEFAULT_MAX_BODY + 1, h, &e),
                     CODEC_ERR_OVERSIZED);
    codec_limits_t zero = {0};
    assert_int_equal(codec_decode_parts_limited(&g_msg, "k", 1, body, CODEC_DEFAULT_MAX_BODY + 1, h,
                                                &zero, NULL),
                     CODEC_ERR_OVERSIZED);
    codec_limits_t over = {.max_body = CODEC_MAX_MAX_BODY + 1};
    assert_int_equal(codec_limits_check(&over), -1);
    rd_kafka_headers_destroy(h);
}

static void test_null_value_is_empty_body(void **state)
{
    (void)state;
    rd_kafka_headers_t *h = base_request();
    assert_int_equal(codec_decode_parts(&g_msg, "k", 1, NULL, 0, h, NULL), CODEC_OK);
    assert_non_null(g_msg.body.ptr);
    assert_int_equal(g_msg.body.len, 0);
    rd_kafka_headers_destroy(h);
}

static void test_msg_field_finds_meta_ext_and_http_case_insensitive(void **state)
{
    (void)state;
    rd_kafka_headers_t *h = base_request();
    rd_kafka_header_add(h, "content-type", -1, "application/json", -1);
    rd_kafka_header_add(h, "@vendor-x", -1, "42", -1);
    assert_int_equal(decode_h(&g_msg, "cid-9", h, NULL), CODEC_OK);
    codec_slice_t s;
    assert_true(codec_msg_field(&g_msg, "Content-Type", 12, &s));
    assert_int_equal(s.len, 16);
    assert_memory_equal(s.ptr, "application/json", 16);
    assert_true(codec_msg_field(&g_msg, "@nf-type", 8, &s));
    assert_memory_equal(s.ptr, "SCP", 3);
    assert_true(codec_msg_field(&g_msg, "@correlation-id", 15, &s));
    assert_memory_equal(s.ptr, "cid-9", 5);
    assert_true(codec_msg_field(&g_msg, "@vendor-x", 9, &s));
    assert_memory_equal(s.ptr, "42", 2);
    assert_false(codec_msg_field(&g_msg, "@hop-id", 7, &s));
    assert_false(codec_msg_field(&g_msg, "accept", 6, &s));
    rd_kafka_headers_destroy(h);
}

static void test_headers_set_meta_replaces_existing_value(void **state)
{
    (void)state;
    rd_kafka_headers_t *h = base_request();
    rd_kafka_header_add(h, "@agg-seq", -1, "1", -1);
    assert_int_equal(codec_headers_set_meta(h, CODEC_META_AGG_SEQ, "99", 2), 0);
    char origin[64];
    assert_true(codec_format_origin(origin, sizeof origin, "SCP", 3, 123456) > 0);
    assert_int_equal(codec_headers_set_meta(h, CODEC_META_ORIGIN, origin, strlen(origin)), 0);
    codec_error_t e;
    assert_int_equal(decode_h(&g_msg, "k", h, &e), CODEC_OK);
    assert_int_equal(g_msg.agg_seq, 99);
    assert_int_equal(g_msg.meta[CODEC_META_ORIGIN].len, strlen("SCP/3/123456"));
    assert_memory_equal(g_msg.meta[CODEC_META_ORIGIN].ptr, "SCP/3/123456", 12);
    assert_int_equal(codec_format_origin(origin, 8, "SCP", 3, 123456), -1);
    /* Exactly the bytes snprintf wrote: the NUL must fit, a negative number keeps its sign. */
    assert_int_equal(codec_format_origin(origin, 13, "SCP", 3, 123456), 12);
    assert_string_equal(origin, "SCP/3/123456");
    assert_int_equal(codec_format_origin(origin, 12, "SCP", 3, 123456), -1);
    assert_int_equal(codec_format_origin(origin, sizeof origin, "MAIN", -1, INT64_MAX), 27);
    assert_string_equal(origin, "MAIN/-1/9223372036854775807");
    rd_kafka_headers_destroy(h);
}

static void test_dlq_headers_carry_reason_field_detail_origin(void **state)
{
    (void)state;
    rd_kafka_headers_t *h = base_request();
    rd_kafka_header_add(h, "@nf-type", -1, "NRF", -1);
    codec_error_t e;
    assert_int_equal(decode_h(&g_msg, "k", h, &e), CODEC_ERR_DUPLICATE);
    assert_int_equal(codec_dlq_headers(h, &e, "SCP/0/17"), 0);
    const void *v;
    size_t len;
    assert_int_equal(rd_kafka_header_get_last(h, "@dlq-reason", &v, &len), 0);
    assert_int_equal(len, strlen("duplicate-field"));
    assert_memory_equal(v, "duplicate-field", len);
    assert_int_equal(rd_kafka_header_get_last(h, "@dlq-field", &v, &len), 0);
    assert_memory_equal(v, "@nf-type", len);
    assert_int_equal(rd_kafka_header_get_last(h, "@dlq-detail", &v, &len), 0);
    assert_true(len > 0);
    assert_int_equal(rd_kafka_header_get_last(h, "@dlq-origin", &v, &len), 0);
    assert_memory_equal(v, "SCP/0/17", len);
    rd_kafka_headers_destroy(h);
}

static void test_error_field_never_carries_control_bytes(void **state)
{
    (void)state;
    rd_kafka_headers_t *h = base_request();
    rd_kafka_header_add(h, "x\x01y", -1, "v", -1);
    codec_error_t e;
    assert_int_equal(decode_h(&g_msg, "k", h, &e), CODEC_ERR_BAD_HEADER);
    assert_string_equal(e.field, "x?y");
    rd_kafka_headers_destroy(h);
}

/* The lookup by length finds every metadata name, and only exact names: a near miss of the
 * same length, another case, no '@', or a name longer than any is not metadata. */
static void test_meta_lookup_finds_every_name_and_nothing_else(void **state)
{
    (void)state;
    for (int m = 0; m < CODEC_META__COUNT; m++) {
        const char *n = codec_meta_name((codec_meta_t)m);
        size_t len = strlen(n);
        assert_int_equal(codec_meta_lookup(n, len), m);
        char miss[64];
        snprintf(miss, sizeof miss, "%s", n);
        miss[len - 1] ^= 0x20; /* the last letter in the other case, or another byte */
        assert_int_equal(codec_meta_lookup(miss, len), -1);
        miss[len - 1] ^= 0x20;
        miss[0] = 'x';
        assert_int_equal(codec_meta_lookup(miss, len), -1);
        assert_int_equal(codec_meta_lookup(n, len - 1), -1);
    }
    assert_int_equal(codec_meta_lookup("@", 1), -1);
    assert_int_equal(codec_meta_lookup("@NF-TYPE", 8), -1);
    const char *lng = "@agg-timestamp-us-and-some-more-characters";
    assert_int_equal(codec_meta_lookup(lng, strlen(lng)), -1);
}

static void test_names_are_stable(void **state)
{
    (void)state;
    assert_string_equal(codec_reason_name(CODEC_ERR_LIMIT), "too-many-headers");
    assert_string_equal(codec_reason_name(CODEC_ERR_INCONSISTENT), "inconsistent");
    assert_string_equal(codec_reason_name((codec_reason_t)99), "unknown");
    assert_string_equal(codec_meta_name(CODEC_META_AGG_TIMESTAMP), "@agg-timestamp-us");
    for (int m = 0; m < CODEC_META__COUNT; m++) {
        const char *n = codec_meta_name((codec_meta_t)m);
        assert_int_equal(codec_meta_lookup(n, strlen(n)), m);
    }
    assert_int_equal(codec_meta_lookup("@nope", 5), -1);
    assert_int_equal(codec_nf_parse("NON_NF", 6), CODEC_NF_NON_NF);
    assert_int_equal(codec_nf_parse("scp", 3), CODEC_NF_UNKNOWN);
    assert_string_equal(codec_trigger_name(CODEC_TRIGGER_RX_RESPONSE), "rx-response");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_vectors_decode_and_round_trip),
        cmocka_unit_test(test_invalid_vectors_fail_with_documented_reason_and_field),
        cmocka_unit_test(test_every_vector_gets_the_same_verdict_in_the_frame_form),
        cmocka_unit_test(test_aggregated_copy_round_trips_through_one_frame),
        cmocka_unit_test(test_frame_form_refuses_what_is_not_exactly_one_copy_in_one_frame),
        cmocka_unit_test(test_decode_points_into_record_without_copying),
        cmocka_unit_test(test_decode_parses_typed_fields),
        cmocka_unit_test(test_seq_overflow_is_bad_value),
        cmocka_unit_test(test_key_length_limit_boundary),
        cmocka_unit_test(test_decode_says_whether_the_id_came_as_key_header_or_both),
        cmocka_unit_test(test_meta_value_limit_boundary),
        cmocka_unit_test(test_meta_lookup_finds_every_name_and_nothing_else),
        cmocka_unit_test(test_extension_header_limit_boundary),
        cmocka_unit_test(test_body_limit_is_per_decoder_and_the_default_is_one_mib),
        cmocka_unit_test(test_null_value_is_empty_body),
        cmocka_unit_test(test_msg_field_finds_meta_ext_and_http_case_insensitive),
        cmocka_unit_test(test_headers_set_meta_replaces_existing_value),
        cmocka_unit_test(test_dlq_headers_carry_reason_field_detail_origin),
        cmocka_unit_test(test_error_field_never_carries_control_bytes),
        cmocka_unit_test(test_names_are_stable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
