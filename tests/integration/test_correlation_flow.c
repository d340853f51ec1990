/* ndd-correlation on the real broker, the daemon as a child process: complete transactions
 * give complete xDRs with the right latencies, copies out of order still correlate,
 * transactions missing copies give incomplete xDRs naming them once the timeout passed, the
 * open-transaction limit emits the oldest as evicted (and the stored offset stays below the
 * open ones), and an undecodable copy goes to the dead-letter topic with its reason.
 * Needs NDD_TEST_KAFKA. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>

#include "agg_testutil.h"
#include "codec.h"
#include "corr_testutil.h"
#include "kafka_testutil.h"

#define TS0 1764486000000000LL

static const codec_trigger_t ORDER_PROXY[] = {CODEC_TRIGGER_RX_REQUEST, CODEC_TRIGGER_TX_REQUEST,
                                              CODEC_TRIGGER_RX_RESPONSE, CODEC_TRIGGER_TX_RESPONSE};
static const codec_trigger_t ORDER_ENDPOINT[] = {CODEC_TRIGGER_RX_REQUEST,
                                                 CODEC_TRIGGER_TX_RESPONSE};
#define ALL_PROXY                                                                                  \
    ((1u << CODEC_TRIGGER_RX_REQUEST) | (1u << CODEC_TRIGGER_TX_REQUEST) |                         \
     (1u << CODEC_TRIGGER_RX_RESPONSE) | (1u << CODEC_TRIGGER_TX_RESPONSE))

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Gauges are refreshed a few times a second: wait until the metric reaches want. */
static bool metric_is(uint16_t port, const char *series, double want)
{
    int64_t deadline = ktu_now_ms() + 5000;
    double v;
    while ((v = corr_metric(port, series)) != want && ktu_now_ms() < deadline)
        ktu_sleep_ms(50);
    if (v != want)
        fprintf(stderr, "metric %s is %g, want %g\n", series, v, want);
    return v == want;
}

static void make_id(char *out, size_t len, const char *tag, long i)
{
    snprintf(out, len, "%s-%ld", tag, i);
}

/* Waits until the XDR topic holds `want` records and reads them all back; fails otherwise. */
static void read_all(const corr_env_t *e, size_t want, int timeout_ms, corr_xdrs_t *out)
{
    int64_t n = agg_wait_count(e->xdr, (int64_t)want, timeout_ms);
    if (n < (int64_t)want)
        fail_msg("%s holds %lld xDRs after %d ms, want %zu (daemon log: %s)", e->xdr, (long long)n,
                 timeout_ms, want, e->log_path);
    size_t got = corr_read_xdrs(e->xdr, (size_t)n, 10000, out);
    assert_int_equal(got, (size_t)n);
}

static void check_complete(const corr_xdr_t *x, const char *nf, bool proxy, long i)
{
    if (!x->parsed || strcmp(x->completion, "complete") != 0 || strcmp(x->nf, nf) != 0 ||
        x->status != 200 || x->lat_rx != CTU_LAT_RX ||
        (proxy ? x->lat_tx != CTU_LAT_TX : x->lat_tx != CTU_NONE) || x->missing != 0 ||
        strcmp(x->service, "nudm-sdm") != 0 || strcmp(x->operation, "am-data") != 0 ||
        strcmp(x->supi, "imsi-208930000000001") != 0 || strcmp(x->key, x->id) != 0)
        fail_msg("transaction %ld (%s): completion %s nf %s status %d latency rx %lld tx %lld "
                 "missing %#x service %s operation %s supi %s key %s",
                 i, x->id, x->completion, x->nf, x->status, (long long)x->lat_rx,
                 (long long)x->lat_tx, x->missing, x->service, x->operation, x->supi, x->key);
    for (int t = 1; t < CODEC_TRIGGER__COUNT; t++) {
        bool expected = proxy || t == CODEC_TRIGGER_RX_REQUEST || t == CODEC_TRIGGER_TX_RESPONSE;
        int64_t want = expected ? TS0 + i * 10000 + ctu_ts_offset[t] : CTU_NONE;
        if (x->ts[t] != want)
            fail_msg("transaction %ld: timestamp of %s is %lld, want %lld", i,
                     codec_trigger_name((codec_trigger_t)t), (long long)x->ts[t], (long long)want);
    }
}

static void test_complete_transactions_give_one_complete_xdr_each_with_latencies(void **state)
{
    (void)state;
    enum { N_SCP = 120, N_NRF = 60 };
    static corr_env_t e; /* static: the teardown may still use it */
    corr_test_env = &e;
    assert_int_equal(corr_env_init(&e, "corrflow", 3), 0);
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    char id[64];
    for (long i = 0; i < N_SCP + N_NRF; i++) {
        bool scp = i < N_SCP;
        make_id(id, sizeof(id), "ok", i);
        assert_int_equal(corr_produce_txn(p, e.main, id, scp ? "SCP" : "NRF", TS0 + i * 10000,
                                          scp ? ORDER_PROXY : ORDER_ENDPOINT, scp ? 4 : 2, 200),
                         0);
    }
    assert_int_equal(ktu_flush(p, 30000), 0);
    rd_kafka_destroy(p);

    assert_true(corr_start(&e, NULL) > 0);
    corr_xdrs_t xs = {0};
    read_all(&e, N_SCP + N_NRF, 30000, &xs);
    assert_int_equal(xs.n, N_SCP + N_NRF);
    static unsigned seen[N_SCP + N_NRF];
    memset(seen, 0, sizeof(seen));
    for (size_t k = 0; k < xs.n; k++) {
        long i = corr_txn_number(xs.v[k].id);
        assert_true(i >= 0 && i < N_SCP + N_NRF);
        seen[i]++;
        check_complete(&xs.v[k], i < N_SCP ? "SCP" : "NRF", i < N_SCP, i);
    }
    for (long i = 0; i < N_SCP + N_NRF; i++)
        if (seen[i] != 1)
            fail_msg("transaction %ld has %u xDRs", i, seen[i]);

    /* The KPIs say the same. */
    uint16_t port = corr_http_port(&e, 5000);
    assert_true(port > 0);
    assert_true(metric_is(port, "ndd_correlation_xdrs_produced_total", N_SCP + N_NRF));
    assert_true(metric_is(port,
                          "ndd_correlation_transactions_total{nf_type=\"SCP\",service=\"nudm-sdm\","
                          "status_code=\"200\",completion=\"complete\"",
                          N_SCP));
    assert_true(metric_is(port,
                          "ndd_correlation_transaction_latency_seconds_count{nf_type=\"NRF\","
                          "service=\"nudm-sdm\",side=\"rx\"",
                          N_NRF));
    assert_true(metric_is(port, "ndd_correlation_messages_consumed_total", N_SCP * 4 + N_NRF * 2));

    /* A clean stop commits everything: nothing is open. */
    assert_true(corr_stop_clean(&e));
    assert_int_equal(agg_committed_sum(e.group, e.main, 3), N_SCP * 4 + N_NRF * 2);
    corr_xdrs_free(&xs);
    corr_env_cleanup(&e);
    corr_test_env = NULL;
}

static void test_responses_before_requests_still_correlate(void **state)
{
    (void)state;
    enum { N = 90, N_NRF = 30 };
    static const codec_trigger_t orders[3][4] = {
        {CODEC_TRIGGER_TX_RESPONSE, CODEC_TRIGGER_RX_RESPONSE, CODEC_TRIGGER_TX_REQUEST,
         CODEC_TRIGGER_RX_REQUEST},
        {CODEC_TRIGGER_RX_RESPONSE, CODEC_TRIGGER_TX_RESPONSE, CODEC_TRIGGER_RX_REQUEST,
         CODEC_TRIGGER_TX_REQUEST},
        {CODEC_TRIGGER_TX_REQUEST, CODEC_TRIGGER_TX_RESPONSE, CODEC_TRIGGER_RX_RESPONSE,
         CODEC_TRIGGER_RX_REQUEST},
    };
    static const codec_trigger_t nrf_reversed[] = {CODEC_TRIGGER_TX_RESPONSE,
                                                   CODEC_TRIGGER_RX_REQUEST};
    static corr_env_t e; /* static: the teardown may still use it */
    corr_test_env = &e;
    assert_int_equal(corr_env_init(&e, "corrorder", 3), 0);
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    char id[64];
    for (long i = 0; i < N + N_NRF; i++) {
        make_id(id, sizeof(id), "rev", i);
        if (i < N)
            assert_int_equal(
                corr_produce_txn(p, e.main, id, "SCP", TS0 + i * 10000, orders[i % 3], 4, 200), 0);
        else
            assert_int_equal(
                corr_produce_txn(p, e.main, id, "NRF", TS0 + i * 10000, nrf_reversed, 2, 200), 0);
    }
    assert_int_equal(ktu_flush(p, 30000), 0);
    rd_kafka_destroy(p);

    /* A long timeout: only correlation can produce these xDRs within the test. */
    const char *extra[] = {"--timeout=60s", NULL};
    assert_true(corr_start(&e, extra) > 0);
    corr_xdrs_t xs = {0};
    read_all(&e, N + N_NRF, 30000, &xs);
    assert_int_equal(xs.n, N + N_NRF);
    for (size_t k = 0; k < xs.n; k++) {
        long i = corr_txn_number(xs.v[k].id);
        assert_true(i >= 0 && i < N + N_NRF);
        check_complete(&xs.v[k], i < N ? "SCP" : "NRF", i < N, i);
    }
    corr_xdrs_free(&xs);
    corr_env_cleanup(&e);
    corr_test_env = NULL;
}

static void test_missing_copies_give_incomplete_xdrs_after_the_timeout(void **state)
{
    (void)state;
    enum { N_NO_TXRESP = 20, N_NO_REQ = 20, N_NRF_HALF = 20, N_FULL = 10 };
    const long total = N_NO_TXRESP + N_NO_REQ + N_NRF_HALF + N_FULL;
    static const codec_trigger_t responses_only[] = {CODEC_TRIGGER_RX_RESPONSE,
                                                     CODEC_TRIGGER_TX_RESPONSE};
    static corr_env_t e; /* static: the teardown may still use it */
    corr_test_env = &e;
    assert_int_equal(corr_env_init(&e, "corrtimeout", 2), 0);
    const char *extra[] = {"--timeout=1s", NULL};
    assert_true(corr_start(&e, extra) > 0);
    assert_true(corr_log_wait(&e, "kafka consumer assigned", 20000));

    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    int64_t produced_at = wall_ms();
    char id[64];
    for (long i = 0; i < total; i++) {
        make_id(id, sizeof(id), "to", i);
        int64_t ts0 = TS0 + i * 10000;
        if (i < N_NO_TXRESP)
            assert_int_equal(corr_produce_txn(p, e.main, id, "SCP", ts0, ORDER_PROXY, 3, 200), 0);
        else if (i < N_NO_TXRESP + N_NO_REQ)
            assert_int_equal(corr_produce_txn(p, e.main, id, "SCP", ts0, responses_only, 2, 200),
                             0);
        else if (i < N_NO_TXRESP + N_NO_REQ + N_NRF_HALF)
            assert_int_equal(corr_produce_txn(p, e.main, id, "NRF", ts0, ORDER_ENDPOINT, 1, 200),
                             0);
        else
            assert_int_equal(corr_produce_txn(p, e.main, id, "SCP", ts0, ORDER_PROXY, 4, 200), 0);
    }
    assert_int_equal(ktu_flush(p, 30000), 0);
    rd_kafka_destroy(p);

    corr_xdrs_t xs = {0};
    read_all(&e, (size_t)total, 30000, &xs);
    assert_int_equal(xs.n, (size_t)total);
    for (size_t k = 0; k < xs.n; k++) {
        const corr_xdr_t *x = &xs.v[k];
        long i = corr_txn_number(x->id);
        assert_true(i >= 0 && i < total);
        if (i >= total - N_FULL) {
            check_complete(x, "SCP", true, i);
            continue;
        }
        uint8_t want_missing;
        if (i < N_NO_TXRESP)
            want_missing = 1u << CODEC_TRIGGER_TX_RESPONSE;
        else if (i < N_NO_TXRESP + N_NO_REQ)
            want_missing = (1u << CODEC_TRIGGER_RX_REQUEST) | (1u << CODEC_TRIGGER_TX_REQUEST);
        else
            want_missing = 1u << CODEC_TRIGGER_TX_RESPONSE;
        if (strcmp(x->completion, "timeout") != 0 || x->missing != want_missing)
            fail_msg("transaction %ld: completion %s missing %#x, want timeout %#x", i,
                     x->completion, x->missing, want_missing);
        /* The copies that did arrive are in the record; latencies need both ends. */
        if (i < N_NO_TXRESP &&
            (x->lat_tx != CTU_LAT_TX || x->lat_rx != CTU_NONE || x->status != 200))
            fail_msg("transaction %ld: latency rx %lld tx %lld status %d", i, (long long)x->lat_rx,
                     (long long)x->lat_tx, x->status);
        if (i >= N_NO_TXRESP && i < N_NO_TXRESP + N_NO_REQ && strcmp(x->nf, "SCP") != 0)
            fail_msg("transaction %ld: nf %s", i, x->nf);
        /* Never before the timeout: the engine's clock starts when the copy arrives, which
         * is after it was produced. */
        if (x->create_ms < produced_at + 1000)
            fail_msg("transaction %ld: timeout xDR written %lld ms after the copies were "
                     "produced (timeout 1 s)",
                     i, (long long)(x->create_ms - produced_at));
    }
    uint16_t port = corr_http_port(&e, 5000);
    assert_true(port > 0);
    assert_true(metric_is(port,
                          "ndd_correlation_messages_missing_total{nf_type=\"SCP\","
                          "trigger_point=\"tx-response\"",
                          N_NO_TXRESP));
    assert_true(metric_is(port,
                          "ndd_correlation_transactions_total{nf_type=\"NRF\",service=\"nudm-sdm\","
                          "status_code=\"none\",completion=\"timeout\"",
                          N_NRF_HALF));
    corr_xdrs_free(&xs);
    corr_env_cleanup(&e);
    corr_test_env = NULL;
}

static void test_open_transaction_limit_emits_the_oldest_as_evicted(void **state)
{
    (void)state;
    enum { LIMIT = 10, N = 25 };
    static corr_env_t e; /* static: the teardown may still use it */
    corr_test_env = &e;
    assert_int_equal(corr_env_init(&e, "corrlimit", 1), 0);
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    char id[64];
    for (long i = 0; i < N; i++) {
        make_id(id, sizeof(id), "lim", i);
        assert_int_equal(
            corr_produce_txn(p, e.main, id, "SCP", TS0 + i * 10000, ORDER_PROXY, 1, 200), 0);
    }
    assert_int_equal(ktu_flush(p, 30000), 0);
    rd_kafka_destroy(p);

    const char *extra[] = {"--timeout=120s", "--max-open=10", NULL};
    assert_true(corr_start(&e, extra) > 0);
    corr_xdrs_t xs = {0};
    read_all(&e, N - LIMIT, 30000, &xs);
    uint16_t port = corr_http_port(&e, 5000);
    assert_true(port > 0);
    /* Everything consumed, exactly the oldest N - LIMIT emitted, the newest LIMIT open. */
    assert_true(metric_is(port, "ndd_correlation_messages_consumed_total", N));
    assert_true(metric_is(port, "ndd_correlation_transactions_open", LIMIT));
    assert_true(metric_is(port,
                          "ndd_correlation_transactions_total{nf_type=\"SCP\",service=\"nudm-sdm\","
                          "status_code=\"none\",completion=\"evicted\"",
                          N - LIMIT));
    assert_int_equal(ktu_topic_record_count(e.xdr, 5000), N - LIMIT);
    unsigned seen[N] = {0};
    for (size_t k = 0; k < xs.n; k++) {
        const corr_xdr_t *x = &xs.v[k];
        long i = corr_txn_number(x->id);
        assert_true(i >= 0 && i < N - LIMIT);
        seen[i]++;
        if (strcmp(x->completion, "evicted") != 0 ||
            x->missing != (ALL_PROXY & ~(1u << CODEC_TRIGGER_RX_REQUEST)) ||
            x->ts[CODEC_TRIGGER_RX_REQUEST] != TS0 + i * 10000)
            fail_msg("transaction %ld: completion %s missing %#x", i, x->completion, x->missing);
    }
    for (long i = 0; i < N - LIMIT; i++)
        assert_int_equal(seen[i], 1);

    /* A clean stop hands the open ones over: the committed offset is the first copy of the
     * oldest open transaction (one copy per transaction, one partition: offset N - LIMIT). */
    assert_true(corr_stop_clean(&e));
    assert_int_equal(agg_committed_sum(e.group, e.main, 1), N - LIMIT);
    assert_int_equal(ktu_topic_record_count(e.xdr, 5000), N - LIMIT);
    corr_xdrs_free(&xs);
    corr_env_cleanup(&e);
    corr_test_env = NULL;
}

static void test_undecodable_copy_goes_to_the_dead_letter_topic_with_its_reason(void **state)
{
    (void)state;
    static corr_env_t e; /* static: the teardown may still use it */
    corr_test_env = &e;
    assert_int_equal(corr_env_init(&e, "corrdlq", 1), 0);
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    const char *bad[] = {"@correlation-id", "bad-0",   "@timestamp-us",  "1764486000000000",
                         "@message-type",   "request", "@trigger-point", "rx-request",
                         ":method",         "GET",     ":path",          "/nudm-sdm/v2/x"};
    assert_int_equal(ktu_produce(p, e.main, 0, "bad-0", 5, "{}", 2, bad, 6), 0);
    assert_int_equal(
        corr_produce_txn(p, e.main, "good-1", "NRF", TS0 + 10000, ORDER_ENDPOINT, 2, 200), 0);
    assert_int_equal(ktu_flush(p, 30000), 0);
    rd_kafka_destroy(p);

    assert_true(corr_start(&e, NULL) > 0);
    corr_xdrs_t xs = {0};
    read_all(&e, 1, 30000, &xs);
    assert_int_equal(xs.n, 1);
    check_complete(&xs.v[0], "NRF", false, 1);

    assert_true(agg_wait_count(e.dlq, 1, 20000) == 1);
    ktu_records_t recs = {0};
    assert_int_equal(ktu_consume_records(e.dlq, 1, 10000, &recs), 1);
    const ktu_record_t *r = &recs.v[0];
    assert_string_equal(r->key, "bad-0");
    assert_string_equal(r->value, "{}");
    size_t len;
    assert_string_equal(ktu_record_header(r, "@dlq-reason", &len), "missing-field");
    assert_string_equal(ktu_record_header(r, "@dlq-field", &len), "@nf-type");
    char origin[200];
    snprintf(origin, sizeof(origin), "%s/0/0", e.main);
    assert_string_equal(ktu_record_header(r, "@dlq-origin", &len), origin);
    /* The original headers travel with it. */
    assert_string_equal(ktu_record_header(r, ":path", &len), "/nudm-sdm/v2/x");
    ktu_records_free(&recs);

    uint16_t port = corr_http_port(&e, 5000);
    assert_true(port > 0);
    assert_true(metric_is(
        port, "ndd_correlation_messages_dead_lettered_total{reason=\"missing-field\"", 1));
    /* Both records are done: the dead-letter one too is below the committed offset. */
    assert_true(corr_stop_clean(&e));
    assert_int_equal(agg_committed_sum(e.group, e.main, 1), 3);
    corr_xdrs_free(&xs);
    corr_env_cleanup(&e);
    corr_test_env = NULL;
}

int main(void)
{
    ktu_brokers(); /* fails with a clear message when NDD_TEST_KAFKA is unset */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(
            test_complete_transactions_give_one_complete_xdr_each_with_latencies,
            corr_test_teardown),
        cmocka_unit_test_teardown(test_responses_before_requests_still_correlate,
                                  corr_test_teardown),
        cmocka_unit_test_teardown(test_missing_copies_give_incomplete_xdrs_after_the_timeout,
                                  corr_test_teardown),
        cmocka_unit_test_teardown(test_open_transaction_limit_emits_the_oldest_as_evicted,
                                  corr_test_teardown),
        cmocka_unit_test_teardown(
            test_undecodable_copy_goes_to_the_dead_letter_topic_with_its_reason,
            corr_test_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
