/* The traffic model of ndd-nf-sim without a broker: every copy of every operation decodes
 * with the codec, sizes are exact, transactions are shaped as documented. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "codec.h"
/* The generator is one file of bench/nfsim; the test builds it in. */
#include "../../bench/nfsim/nfsim_gen.c"

static size_t headers_bytes(const rd_kafka_headers_t *h)
{
    size_t sum = 0;
    const char *name;
    const void *val;
    size_t len;
    for (size_t i = 0; rd_kafka_header_get_all(h, i, &name, &val, &len) == 0; i++)
        sum += strlen(name) + len;
    return sum;
}

/* Generates n copies and decodes each; checks the shape of transactions. */
static void run(const nfsim_config_t *cfg, size_t n, size_t want_size, uint64_t seq0)
{
    char err[128];
    nfsim_gen_t *g = nfsim_gen_new(cfg, seq0, err, sizeof err);
    if (!g)
        fail_msg("gen: %s", err);
    char key[96] = "";
    int64_t last_ts = 0;
    for (size_t i = 0; i < n; i++) {
        nfsim_copy_t c;
        rd_kafka_headers_t *h = nfsim_next(g, &c);
        assert_non_null(h);
        codec_msg_t m;
        codec_error_t e;
        codec_reason_t r = codec_decode_parts(&m, c.key, c.key_len, c.value, c.value_len, h, &e);
        if (r != CODEC_OK)
            fail_msg("copy %zu (%s): %s %s %s", i, c.topic_suffix, codec_reason_name(r), e.field,
                     e.detail);
        assert_int_equal(c.seq, seq0 + i);
        assert_int_equal(m.seq, seq0 + i);
        assert_int_equal(c.index, (int)(i % (size_t)cfg->copies));
        assert_int_equal(c.size, c.key_len + c.value_len + headers_bytes(h));
        if (want_size)
            assert_int_equal(c.size, want_size);
        assert_true(m.meta[CODEC_META_NF_TYPE].len == strlen(c.topic_suffix) &&
                    memcmp(m.meta[CODEC_META_NF_TYPE].ptr, c.topic_suffix,
                           m.meta[CODEC_META_NF_TYPE].len) == 0);
        if (c.first) {
            assert_true(strlen(c.key) != strlen(key) || strcmp(c.key, key) != 0);
            snprintf(key, sizeof key, "%s", c.key);
        } else {
            assert_string_equal(c.key, key);
            assert_true(m.timestamp_us > last_ts);
        }
        last_ts = m.timestamp_us;
        /* request copies first, then responses */
        bool req = c.index < cfg->copies / 2;
        assert_int_equal(m.type, req ? CODEC_MSG_REQUEST : CODEC_MSG_RESPONSE);
        /* a JSON body stays JSON after padding */
        if (c.value_len > 0) {
            json_error_t je;
            json_t *j = json_loadb(c.value, c.value_len, 0, &je);
            if (!j)
                fail_msg("copy %zu body is not JSON: %s", i, je.text);
            json_decref(j);
        }
        rd_kafka_headers_destroy(h);
    }
    assert_int_equal(nfsim_transactions(g), (n + (size_t)cfg->copies - 1) / (size_t)cfg->copies);
    nfsim_gen_free(g);
}

static nfsim_config_t all_nf(int copies)
{
    nfsim_config_t c = {.copies = copies, .error_rate = 0.2, .subscribers = 1000, .seed = 7};
    for (int i = 0; i < NFSIM_NF__COUNT; i++)
        c.weights[i] = 1;
    return c;
}

static void test_every_copy_decodes_natural_size(void **state)
{
    nfsim_config_t c = all_nf(2);
    run(&c, 4000, 0, 0);
    c = all_nf(4);
    run(&c, 4000, 0, 77);
}

static void test_fixed_sizes_are_exact(void **state)
{
    static const size_t sizes[] = {1941, 3400, 3769, 9000, 20000, 100000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        nfsim_config_t c = all_nf(i % 2 ? 4 : 2);
        c.size_mode = NFSIM_SIZE_FIXED;
        c.size = sizes[i];
        run(&c, 1000, sizes[i], 0);
    }
}

static void test_mix_sizes_stay_near_the_published_profiles(void **state)
{
    nfsim_config_t c = all_nf(2);
    c.size_mode = NFSIM_SIZE_MIX;
    char err[64];
    nfsim_gen_t *g = nfsim_gen_new(&c, 0, err, sizeof err);
    size_t bins[3] = {0, 0, 0};
    for (int i = 0; i < 6000; i++) {
        nfsim_copy_t cp;
        rd_kafka_headers_t *h = nfsim_next(g, &cp);
        if (cp.size >= 1843 && cp.size <= 2039)
            bins[0]++;
        else if (cp.size >= 3230 && cp.size <= 3570)
            bins[1]++;
        else if (cp.size >= 3580 && cp.size <= 3958)
            bins[2]++;
        else
            fail_msg("size %zu is outside every profile", cp.size);
        rd_kafka_headers_destroy(h);
    }
    for (int b = 0; b < 3; b++)
        assert_true(bins[b] > 1500); /* about 2000 each */
    nfsim_gen_free(g);
}

static void test_nf_mix_weights_shape_the_traffic(void **state)
{
    unsigned w[NFSIM_NF__COUNT];
    char err[128];
    assert_int_equal(nfsim_parse_mix("scp=3,NRF=1", w, err, sizeof err), 0);
    assert_int_equal(w[NFSIM_SCP], 3);
    assert_int_equal(w[NFSIM_NRF], 1);
    assert_int_equal(w[NFSIM_PCF], 0);
    assert_int_equal(nfsim_parse_mix("PCF", w, err, sizeof err), 0);
    assert_int_equal(w[NFSIM_PCF], 1);
    assert_int_equal(nfsim_parse_mix("AMF=1", w, err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown NF type \"AMF\""));
    assert_int_equal(nfsim_parse_mix("SCP=x", w, err, sizeof err), -1);
    assert_int_equal(nfsim_parse_mix("SCP=0", w, err, sizeof err), -1);

    nfsim_config_t c = {.copies = 2, .subscribers = 10, .seed = 3};
    c.weights[NFSIM_SCP] = 3;
    c.weights[NFSIM_BSF] = 1;
    nfsim_gen_t *g = nfsim_gen_new(&c, 0, err, sizeof err);
    size_t per[NFSIM_NF__COUNT] = {0};
    for (int i = 0; i < 8000; i++) {
        nfsim_copy_t cp;
        rd_kafka_headers_t *h = nfsim_next(g, &cp);
        per[cp.nf]++;
        rd_kafka_headers_destroy(h);
    }
    assert_int_equal(per[NFSIM_NRF] + per[NFSIM_SEPP] + per[NFSIM_PCF], 0);
    assert_true(per[NFSIM_SCP] > 5400 && per[NFSIM_SCP] < 6600);
    nfsim_gen_free(g);
}

/* The longest run of one byte in any copy's value and padding header, over n copies. */
static size_t longest_run(const nfsim_config_t *c, int n)
{
    char err[128];
    nfsim_gen_t *g = nfsim_gen_new(c, 0, err, sizeof err);
    assert_non_null(g);
    size_t best = 0;
    for (int i = 0; i < n; i++) {
        nfsim_copy_t cp;
        rd_kafka_headers_t *h = nfsim_next(g, &cp);
        const void *pv = NULL;
        size_t pl = 0;
        const char *parts[2] = {cp.value, NULL};
        size_t lens[2] = {cp.value_len, 0};
        if (rd_kafka_header_get_last(h, NFSIM_PAD_HEADER, &pv, &pl) == 0) {
            parts[1] = pv;
            lens[1] = pl;
        }
        for (int k = 0; k < 2; k++)
            for (size_t j = 0, run = 0; j < lens[k]; j++) {
                run = j > 0 && parts[k][j] == parts[k][j - 1] ? run + 1 : 1;
                best = run > best ? run : best;
            }
        rd_kafka_headers_destroy(h);
    }
    nfsim_gen_free(g);
    return best;
}

/* The padding is SBI-like text, so that lz4 or zstd on MAIN and the NF topics are measured on
 * bodies that compress like real ones; --pad x keeps the old run of one letter. */
static void test_padding_is_text_unless_a_run_of_x_is_asked_for(void **state)
{
    (void)state;
    nfsim_config_t c = all_nf(2);
    c.size_mode = NFSIM_SIZE_FIXED;
    c.size = 3400;
    assert_true(longest_run(&c, 400) < 16);
    c.pad_x = true;
    assert_true(longest_run(&c, 400) > 1000);
}

static void test_bad_generator_settings_are_refused(void **state)
{
    char err[128];
    nfsim_config_t c = all_nf(3);
    assert_null(nfsim_gen_new(&c, 0, err, sizeof err));
    assert_string_equal(err, "--copies must be 2 or 4");
    c = all_nf(2);
    c.size_mode = NFSIM_SIZE_FIXED;
    c.size = NFSIM_MAX_SIZE + 1;
    assert_null(nfsim_gen_new(&c, 0, err, sizeof err));
    c = all_nf(2);
    memset(c.weights, 0, sizeof c.weights);
    assert_null(nfsim_gen_new(&c, 0, err, sizeof err));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_copy_decodes_natural_size),
        cmocka_unit_test(test_fixed_sizes_are_exact),
        cmocka_unit_test(test_mix_sizes_stay_near_the_published_profiles),
        cmocka_unit_test(test_nf_mix_weights_shape_the_traffic),
        cmocka_unit_test(test_padding_is_text_unless_a_run_of_x_is_asked_for),
        cmocka_unit_test(test_bad_generator_settings_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
