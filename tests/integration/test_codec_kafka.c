/* Every test vector through the real broker: a consumed rd_kafka_message_t decodes exactly as
 * the vector's parts do (codec_decode on librdkafka's own header storage), and invalid ones
 * fail with the same reason and field. Needs NDD_TEST_KAFKA. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codec.h"
#include "codec_equal.h"
#include "kafka_testutil.h"
#include "vectors.h"

/* The broker's default max message size is ~1 MB: the body-limit vector cannot travel. */
#define CK_MAX_VALUE (512u * 1024u)

typedef struct ck_state {
    vectors_record_t *v;
    size_t n;
    size_t checked;
} ck_state_t;

static codec_msg_t ck_a, ck_b;

static bool ck_check(void *owner, const rd_kafka_message_t *m)
{
    ck_state_t *st = owner;
    /* The vector index travels in a header of its own, so the check does not depend on the
     * order in which partitions are read. */
    char idx[16];
    if (!ktu_msg_header(m, "@x-vector", idx, sizeof idx))
        fail_msg("consumed record without @x-vector at offset %lld", (long long)m->offset);
    size_t i = (size_t)strtoul(idx, NULL, 10);
    assert_true(i < st->n);
    vectors_record_t *v = &st->v[i];
    codec_error_t ea, eb;
    codec_reason_t ra = codec_decode(&ck_a, m, &ea);
    codec_reason_t rb =
        codec_decode_parts(&ck_b, v->key, v->key_len, v->value, v->value_len, v->headers, &eb);
    if (ra != rb || (ra != CODEC_OK && strcmp(ea.field, eb.field) != 0))
        fail_msg("%s: through Kafka %s '%s', from the file %s '%s'", v->name, codec_reason_name(ra),
                 ea.field, codec_reason_name(rb), eb.field);
    if (ra == CODEC_OK) {
        /* The marker header is an extension header on the Kafka side only. */
        assert_int_equal(ck_a.n_ext, ck_b.n_ext + 1);
        ck_a.n_ext--;
        if (!codec_equal_msg(&ck_a, &ck_b))
            fail_msg("%s: decoded copy differs after the trip through Kafka", v->name);
        assert_true(v->expect_ok);
    } else {
        assert_string_equal(codec_reason_name(ra), v->expect_reason);
        assert_string_equal(ea.field, v->expect_field);
    }
    st->checked++;
    return st->checked < st->n;
}

static void test_every_vector_decodes_the_same_after_a_trip_through_kafka(void **state)
{
    (void)state;
    char topic[96];
    ktu_unique_name("ndd-test-codec", topic, sizeof topic);
    assert_int_equal(ktu_create_topic(topic, 3), 0);
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);

    ck_state_t st = {0};
    st.v = calloc(256, sizeof *st.v);
    const char *subs[] = {"valid", "invalid"};
    for (int s = 0; s < 2; s++) {
        char dir[1024];
        char **paths;
        size_t n;
        assert_int_equal(vectors_list(vectors_dir(subs[s], dir, sizeof dir), &paths, &n), 0);
        for (size_t k = 0; k < n && st.n < 256; k++) {
            vectors_record_t *v = &st.v[st.n];
            char err[512];
            if (vectors_load(paths[k], v, err, sizeof err) != 0)
                fail_msg("%s", err);
            if (v->value_len > CK_MAX_VALUE) {
                vectors_free(v);
                continue;
            }
            char idx[16];
            snprintf(idx, sizeof idx, "%zu", st.n);
            /* The marker goes last, so a vector that fails on a header keeps its reason. */
            rd_kafka_headers_t *h = rd_kafka_headers_copy(v->headers);
            rd_kafka_header_add(h, "@x-vector", -1, idx, -1);
            rd_kafka_resp_err_t e =
                rd_kafka_producev(p, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(v->key, v->key_len),
                                  RD_KAFKA_V_VALUE(v->value, v->value_len), RD_KAFKA_V_HEADERS(h),
                                  RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
            if (e)
                fail_msg("produce %s: %s", v->name, rd_kafka_err2str(e));
            st.n++;
        }
        vectors_list_free(paths, n);
    }
    assert_int_equal(ktu_flush(p, 30000), 0);
    rd_kafka_destroy(p);

    size_t seen = ktu_consume(topic, st.n, 30000, ck_check, &st);
    assert_int_equal(seen, st.n);
    assert_int_equal(st.checked, st.n);
    for (size_t i = 0; i < st.n; i++)
        vectors_free(&st.v[i]);
    free(st.v);
    ktu_delete_topic(topic);
}

int main(void)
{
    ktu_brokers(); /* fails with a clear message when NDD_TEST_KAFKA is unset */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_vector_decodes_the_same_after_a_trip_through_kafka),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
