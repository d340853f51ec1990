/* ndd-sink internals that decide its verdicts: the duplicate/gap window, latency quantiles,
 * the record scanner of request bodies, and the fault rules. The sink's own sources are
 * compiled in (they are not part of a library). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "../../bench/sink/sink_body.c"
#include "../../bench/sink/sink_fault.c"
#include "../../bench/sink/sink_stats.c"

static void test_seq_window_counts_duplicates_and_gaps(void **state)
{
    sink_seqwin_t w;
    assert_int_equal(sink_seqwin_init(&w, 256), 0);
    uint64_t seqs[] = {1000, 1001, 1003, 1001, 1002, 999, 1006};
    bool fresh[] = {true, true, true, false, true, true, true};
    for (size_t i = 0; i < sizeof seqs / sizeof seqs[0]; i++)
        assert_int_equal(sink_seqwin_add(&w, seqs[i]), fresh[i]);
    assert_int_equal(w.unique, 6);
    assert_int_equal(w.duplicates, 1);
    assert_int_equal(w.min_seen, 999);
    assert_int_equal(w.max_seen, 1006);
    assert_int_equal(sink_seqwin_gaps(&w), 2); /* 1004, 1005 */
    sink_seqwin_free(&w);
}

static void test_seq_window_slides_and_keeps_counting_missing(void **state)
{
    sink_seqwin_t w;
    assert_int_equal(sink_seqwin_init(&w, 128), 0);
    /* 0..9999 except every 100th: far more numbers than the window holds. */
    uint64_t missing = 0;
    for (uint64_t i = 0; i < 10000; i++) {
        if (i % 100 == 50) {
            missing++;
            continue;
        }
        assert_true(sink_seqwin_add(&w, i));
    }
    assert_int_equal(sink_seqwin_gaps(&w), missing);
    /* Long gone: below the window; not counted as new or duplicate. */
    assert_false(sink_seqwin_add(&w, 5));
    assert_int_equal(w.out_of_window, 1);
    assert_int_equal(w.duplicates, 0);
    /* A jump far past the window: everything between is missing. */
    assert_true(sink_seqwin_add(&w, 20000));
    assert_int_equal(sink_seqwin_gaps(&w), missing + (20000 - 10000));
    /* Duplicates inside the window are still found after sliding. */
    assert_false(sink_seqwin_add(&w, 20000));
    assert_int_equal(w.duplicates, 1);
    sink_seqwin_free(&w);
}

static void test_seq_window_starting_at_zero(void **state)
{
    sink_seqwin_t w;
    assert_int_equal(sink_seqwin_init(&w, 64), 0);
    for (uint64_t i = 0; i < 64; i++)
        assert_true(sink_seqwin_add(&w, i));
    assert_true(sink_seqwin_add(&w, 64));
    assert_false(sink_seqwin_add(&w, 64));
    assert_int_equal(sink_seqwin_gaps(&w), 0);
    assert_int_equal(w.unique, 65);
    sink_seqwin_free(&w);
}

static void test_latency_quantiles_within_bucket_precision(void **state)
{
    static sink_latency_t l;
    memset(&l, 0, sizeof l);
    assert_true(sink_latency_quantile_us(&l, 0.5) == 0);
    for (int i = 1; i <= 1000; i++)
        sink_latency_add(&l, i * 1000); /* 1 ms .. 1000 ms */
    double p50 = sink_latency_quantile_us(&l, 0.50);
    double p99 = sink_latency_quantile_us(&l, 0.99);
    assert_true(p50 >= 500000 && p50 <= 500000 * 1.07);
    assert_true(p99 >= 990000 && p99 <= 990000 * 1.07);
    assert_true(sink_latency_quantile_us(&l, 1.0) == 1000000);
    assert_int_equal(l.max_us, 1000000);
    sink_latency_add(&l, -5); /* clock skew: counted, as zero */
    assert_int_equal(l.negative, 1);
    assert_int_equal(l.n, 1001);
    /* Exact below 16 µs. */
    memset(&l, 0, sizeof l);
    sink_latency_add(&l, 7);
    assert_true(sink_latency_quantile_us(&l, 0.5) == 7);
}

typedef struct collected {
    sink_record_info_t r[16];
    int n;
} collected_t;

static void collect(void *arg, const sink_record_info_t *info)
{
    collected_t *c = arg;
    if (c->n < 16)
        c->r[c->n] = *info;
    c->n++;
}

static long scan(const char *body, const char *ctype, collected_t *c, char *err)
{
    memset(c, 0, sizeof *c);
    return sink_body_records((const uint8_t *)body, strlen(body), ctype, collect, c, err, 192);
}

static void test_body_scanner_reads_envelopes_batches_and_ndjson(void **state)
{
    collected_t c;
    char err[192];
    const char *one = "{\"metadata\":{\"correlation-id\":\"a\\\"b\",\"timestamp-us\":"
                      "1764486000000000,\"seq\":42},\"headers\":[[\":path\",\"/x\"]],"
                      "\"key\":\"k\",\"body\":{\"seq\":7,\"nested\":[1,{\"a\":null}]}}";
    assert_int_equal(scan(one, "application/json", &c, err), 1);
    assert_true(c.r[0].has_seq);
    assert_int_equal(c.r[0].seq, 42);
    assert_true(c.r[0].has_ts);
    assert_int_equal(c.r[0].ts_us, 1764486000000000LL);

    const char *batch = "[{\"metadata\":{\"seq\":1}},{\"body\":\"x\",\"metadata\":{\"seq\":\"2\"}},"
                        "{\"metadata\":{}}]";
    assert_int_equal(scan(batch, "application/json; charset=utf-8", &c, err), 3);
    assert_int_equal(c.r[0].seq, 1);
    assert_true(c.r[1].has_seq);
    assert_int_equal(c.r[1].seq, 2);
    assert_false(c.r[2].has_seq);

    assert_int_equal(scan("{\"metadata\":{\"seq\":5}}\n{\"metadata\":{\"seq\":6}}\n",
                          "application/x-ndjson", &c, err),
                     2);
    assert_int_equal(c.r[1].seq, 6);

    /* Not an NDD encoding: one record without a sequence number. */
    assert_int_equal(scan("hello", NULL, &c, err), 1);
    assert_false(c.r[0].has_seq);
    assert_int_equal(scan("[1,2", "text/plain", &c, err), 1);

    /* Claims JSON but is broken: refused with a position. */
    assert_int_equal(scan("[{\"metadata\":{\"seq\":1}},", "application/json", &c, err), -1);
    assert_non_null(strstr(err, "malformed JSON body"));
    assert_int_equal(scan("{\"metadata\":{\"seq\":1}} x", "application/json", &c, err), -1);
    /* A negative or fractional seq is no sequence number. */
    assert_int_equal(scan("{\"metadata\":{\"seq\":-1}}", "application/json", &c, err), 1);
    assert_false(c.r[0].has_seq);
    assert_int_equal(scan("{\"metadata\":{\"seq\":1.5}}", "application/json", &c, err), 1);
    assert_false(c.r[0].has_seq);
}

static void test_body_scanner_reads_frames(void **state)
{
    buf_t b;
    frame_builder_t fb;
    collected_t c;
    char err[192];
    buf_init(&b, 0, 1 << 16);
    frame_data_begin(&fb, &b, 1, 0, 0);
    frame_data_record_begin(&fb);
    frame_data_record_header(&fb, "@timestamp-us", 13, "123", 3);
    frame_data_record_header(&fb, "@seq", 4, "77", 2);
    frame_data_record_end(&fb, "k", 1, "b", 1);
    frame_data_record_begin(&fb);
    frame_data_record_header(&fb, "@seq", 4, "x", 1);
    frame_data_record_end(&fb, "k", 1, "b", 1);
    frame_data_end(&fb);
    memset(&c, 0, sizeof c);
    assert_int_equal(
        sink_body_records(b.data, b.len, "application/vnd.ndd.frame", collect, &c, err, sizeof err),
        2);
    assert_true(c.r[0].has_seq && c.r[0].seq == 77 && c.r[0].has_ts && c.r[0].ts_us == 123);
    assert_false(c.r[1].has_seq);
    assert_int_equal(sink_body_records(b.data, b.len - 1, "application/vnd.ndd.frame", collect, &c,
                                       err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "truncated"));
    buf_free(&b);
}

static void test_fault_status_by_count_then_success(void **state)
{
    sink_fault_t f;
    sink_verdict_t v;
    double refuse;
    bool close_now;
    char err[256];
    memset(&f, 0, sizeof f);
    const char *doc = "{\"status\":429,\"retry_after\":2,\"count\":2,\"delay_ms\":10}";
    assert_int_equal(
        sink_fault_apply_json(&f, doc, strlen(doc), 100.0, &refuse, &close_now, err, sizeof err),
        0);
    sink_fault_next(&f, 100.0, &v);
    assert_int_equal(v.status, 429);
    assert_int_equal(v.retry_after_s, 2);
    assert_int_equal(v.delay_ms, 10);
    sink_fault_next(&f, 100.0, &v);
    assert_int_equal(v.status, 429);
    sink_fault_next(&f, 100.0, &v);
    assert_int_equal(v.status, 0);
    assert_int_equal(v.delay_ms, 0);
}

static void test_fault_by_duration_drop_refuse_and_reset(void **state)
{
    sink_fault_t f;
    sink_verdict_t v;
    double refuse;
    bool close_now;
    char err[256];
    memset(&f, 0, sizeof f);
    const char *d1 = "{\"status\":503,\"duration_ms\":1000}";
    assert_int_equal(
        sink_fault_apply_json(&f, d1, strlen(d1), 10.0, &refuse, &close_now, err, sizeof err), 0);
    sink_fault_next(&f, 10.5, &v);
    assert_int_equal(v.status, 503);
    sink_fault_next(&f, 11.01, &v);
    assert_int_equal(v.status, 0);

    const char *d2 = "{\"close\":true,\"count\":1,\"refuse_s\":3}";
    assert_int_equal(
        sink_fault_apply_json(&f, d2, strlen(d2), 20.0, &refuse, &close_now, err, sizeof err), 0);
    assert_true(refuse == 3.0);
    assert_false(close_now);
    sink_fault_next(&f, 20.0, &v);
    assert_true(v.drop);
    sink_fault_next(&f, 20.0, &v);
    assert_false(v.drop);

    const char *d3 = "{\"close\":true}";
    assert_int_equal(
        sink_fault_apply_json(&f, d3, strlen(d3), 20.0, &refuse, &close_now, err, sizeof err), 0);
    assert_true(close_now);

    const char *d4 = "{\"status\":500}";
    sink_fault_apply_json(&f, d4, strlen(d4), 20.0, &refuse, &close_now, err, sizeof err);
    for (int i = 0; i < 5; i++) {
        sink_fault_next(&f, 1e9, &v);
        assert_int_equal(v.status, 500); /* until reset */
    }
    const char *d5 = "{\"reset\":true}";
    sink_fault_apply_json(&f, d5, strlen(d5), 20.0, &refuse, &close_now, err, sizeof err);
    sink_fault_next(&f, 20.0, &v);
    assert_int_equal(v.status, 0);
}

static void test_fault_control_rejects_bad_documents(void **state)
{
    sink_fault_t f;
    double refuse;
    bool close_now;
    char err[256];
    memset(&f, 0, sizeof f);
    const char *bad[] = {"[]",
                         "{\"status\":99}",
                         "{\"status\":503,\"count\":1,\"duration_ms\":5}",
                         "{\"statsu\":503}",
                         "{\"delay_ms\":\"5\"}",
                         "{\"close\":1}",
                         "not json"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        assert_int_equal(sink_fault_apply_json(&f, bad[i], strlen(bad[i]), 0, &refuse, &close_now,
                                               err, sizeof err),
                         -1);
        assert_true(err[0] != '\0');
    }
    assert_int_equal(f.status, 0);
}

static void test_summary_is_json_with_expectation(void **state)
{
    static sink_stats_t s;
    buf_t out;
    assert_int_equal(sink_stats_init(&s, 1024, 10), 0);
    sink_seqwin_add(&s.seq, 1);
    sink_seqwin_add(&s.seq, 3);
    s.t[SINK_TCP].records = 2;
    buf_init(&out, 0, 1 << 16);
    assert_int_equal(sink_stats_summary(&s, &out), 0);
    json_t *j = json_loadb((const char *)out.data, out.len, 0, NULL);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "received")), 2);
    assert_int_equal(json_integer_value(json_object_get(j, "missing")), 8);
    assert_int_equal(json_integer_value(json_object_get(j, "gaps")), 1);
    assert_true(json_is_false(json_object_get(j, "complete")));
    json_decref(j);
    buf_free(&out);
    sink_stats_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seq_window_counts_duplicates_and_gaps),
        cmocka_unit_test(test_seq_window_slides_and_keeps_counting_missing),
        cmocka_unit_test(test_seq_window_starting_at_zero),
        cmocka_unit_test(test_latency_quantiles_within_bucket_precision),
        cmocka_unit_test(test_body_scanner_reads_envelopes_batches_and_ndjson),
        cmocka_unit_test(test_body_scanner_reads_frames),
        cmocka_unit_test(test_fault_status_by_count_then_success),
        cmocka_unit_test(test_fault_by_duration_drop_refuse_and_reset),
        cmocka_unit_test(test_fault_control_rejects_bad_documents),
        cmocka_unit_test(test_summary_is_json_with_expectation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
