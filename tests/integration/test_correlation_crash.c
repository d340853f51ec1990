/* ndd-correlation across a crash: kill -9 in the middle of the stream (xDRs in flight,
 * transactions open whose remaining copies arrive only after the crash) and a restart leave
 * the XDR topic with a complete xDR, with the right latencies, for every transaction.
 * Duplicates (at-least-once) are counted and bounded by what was not yet committed.
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

#include <cmocka.h>

#include "agg_testutil.h"
#include "codec.h"
#include "corr_testutil.h"
#include "kafka_testutil.h"

#define PARTS 3
#define N_FIRST 12000 /* complete before the crash */
#define N_SPLIT 600   /* two copies before the crash, two after */
#define N_AFTER 2000  /* complete, produced after the crash */
#define N_TOTAL (N_FIRST + N_SPLIT + N_AFTER)
#define TS0 1764486000000000LL

static const codec_trigger_t ORDER[] = {CODEC_TRIGGER_RX_REQUEST, CODEC_TRIGGER_TX_REQUEST,
                                        CODEC_TRIGGER_RX_RESPONSE, CODEC_TRIGGER_TX_RESPONSE};

static void produce_range(rd_kafka_t *p, const char *topic, long from, long to, size_t first_copy,
                          size_t n_copies)
{
    char id[64];
    for (long i = from; i < to; i++) {
        snprintf(id, sizeof(id), "crash-%ld", i);
        assert_int_equal(corr_produce_txn(p, topic, id, "SCP", TS0 + i * 10000, ORDER + first_copy,
                                          n_copies, 200),
                         0);
        if (i % 500 == 0)
            rd_kafka_poll(p, 0);
    }
    assert_int_equal(ktu_flush(p, 60000), 0);
}

/* Runs one life of the daemon, slowed down (xDRs wait a second in the producer before they
 * are sent, at most max_unacked unacknowledged: that many xDRs per second), and kills it with
 * -9 once the XDR topic holds `until` records and some offsets were committed: the kill
 * comes before the end of the input, with many xDRs not yet acknowledged, most of them
 * emitted before the last offset commit. A long timeout: nothing times out here. Returns
 * the number of xDRs written at the kill. */
static int64_t kill_slow_life(corr_env_t *e, int64_t before, int64_t until, const char *max_unacked)
{
    const char *slow[] = {"--timeout=120s",
                          max_unacked,
                          "--batch=500",
                          "--kafka.producer.linger.ms=1000",
                          "--kafka.consumer.auto.commit.interval.ms=100",
                          NULL};
    assert_true(corr_start(e, slow) > 0);
    int64_t deadline = ktu_now_ms() + 40000;
    while ((agg_committed_sum(e->group, e->main, PARTS) <= 0 ||
            ktu_topic_record_count(e->xdr, 5000) < until) &&
           ktu_now_ms() < deadline)
        ktu_sleep_ms(20);
    /* xDRs are acknowledged in bursts a second apart. Killing while some wait in the
     * producer (the daemon says so: after a burst, once new ones are emitted), 300 ms after
     * they were emitted, finds them unacknowledged
     * while offset commits (every 100 ms) went on: only offsets that waited for the
     * acknowledgements save them. */
    uint16_t port = corr_http_port(e, 5000);
    assert_true(port > 0);
    while (corr_metric(port, "ndd_correlation_messages_in_flight") > 0 && ktu_now_ms() < deadline)
        ktu_sleep_ms(10);
    while (corr_metric(port, "ndd_correlation_messages_in_flight") < 1 && ktu_now_ms() < deadline)
        ktu_sleep_ms(10);
    assert_true(ktu_now_ms() < deadline);
    ktu_sleep_ms(300);
    int st = ktu_stop(e->pid, SIGKILL, 5000);
    e->pid = 0;
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    int64_t xdrs = ktu_topic_record_count(e->xdr, 5000);
    int64_t committed = agg_committed_sum(e->group, e->main, PARTS);
    print_message("killed with %lld xDRs written (%lld in this life), %lld MAIN offsets "
                  "committed (of %d)\n",
                  (long long)xdrs, (long long)(xdrs - before), (long long)committed,
                  N_FIRST * 4 + N_SPLIT * 2);
    assert_true(xdrs >= until);
    assert_true(committed > 0);
    /* Killed mid-stream: not every complete transaction had its xDR yet. */
    assert_true(xdrs - before < N_FIRST);
    return xdrs;
}

static void test_kill_9_mid_stream_and_restart_loses_no_xdr(void **state)
{
    (void)state;
    static corr_env_t e; /* static: the teardown may still use it */
    corr_test_env = &e;
    assert_int_equal(corr_env_init(&e, "corrcrash", PARTS), 0);
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    /* Before the crashes: N_FIRST complete transactions, with the first half (requests) of
     * N_SPLIT more in the middle: those stay open through the first two lives, so their
     * first copies must hold the stored offsets back while the daemon goes on past them. */
    produce_range(p, e.main, 0, N_FIRST / 2, 0, 4);
    produce_range(p, e.main, N_FIRST, N_FIRST + N_SPLIT, 0, 2);
    produce_range(p, e.main, N_FIRST / 2, N_FIRST, 0, 4);

    /* Life 1 is killed before the split transactions, life 2 after it went past them. */
    int64_t xdrs_at_kill = kill_slow_life(&e, 0, N_FIRST / 5, "--max-unacked=1000");
    xdrs_at_kill =
        kill_slow_life(&e, xdrs_at_kill, xdrs_at_kill + N_FIRST * 2 / 5, "--max-unacked=1000");

    /* While it is down: the second half of the split transactions, and new ones. */
    produce_range(p, e.main, N_FIRST, N_FIRST + N_SPLIT, 2, 2);
    produce_range(p, e.main, N_FIRST + N_SPLIT, N_TOTAL, 0, 4);
    rd_kafka_destroy(p);

    const char *normal[] = {"--timeout=120s", NULL};
    assert_true(corr_start(&e, normal) > 0);
    /* Every transaction has exactly one complete xDR in the end; wait for the distinct ones. */
    static unsigned complete[N_TOTAL];
    memset(complete, 0, sizeof(complete));
    size_t distinct = 0, duplicates = 0, total = 0;
    corr_xdrs_t xs = {0};
    int64_t deadline = ktu_now_ms() + 45000;
    while (distinct < N_TOTAL && ktu_now_ms() < deadline) {
        int64_t have = agg_wait_count(e.xdr, (int64_t)N_TOTAL, 2000);
        corr_xdrs_free(&xs);
        memset(complete, 0, sizeof(complete));
        distinct = duplicates = 0;
        total = corr_read_xdrs(e.xdr, (size_t)have, 10000, &xs);
        for (size_t k = 0; k < xs.n; k++) {
            const corr_xdr_t *x = &xs.v[k];
            long i = corr_txn_number(x->id);
            if (!x->parsed || i < 0 || i >= N_TOTAL)
                fail_msg("foreign or unparsable xDR %s", x->key);
            if (strcmp(x->completion, "complete") != 0)
                fail_msg("transaction %ld: %s xDR (missing %#x): a copy was lost across the "
                         "crash",
                         i, x->completion, x->missing);
            if (x->lat_rx != CTU_LAT_RX || x->lat_tx != CTU_LAT_TX || x->status != 200 ||
                x->ts[CODEC_TRIGGER_RX_REQUEST] != TS0 + i * 10000)
                fail_msg("transaction %ld: latency rx %lld tx %lld status %d", i,
                         (long long)x->lat_rx, (long long)x->lat_tx, x->status);
            if (complete[i]++)
                duplicates++;
            else
                distinct++;
        }
    }
    print_message("%zu xDRs read: %zu distinct transactions, %zu duplicates\n", total, distinct,
                  duplicates);
    for (long i = 0; i < N_TOTAL; i++)
        if (!complete[i])
            fail_msg("transaction %ld has no xDR after the restart (of %d, %zu distinct)", i,
                     N_TOTAL, distinct);
    /* Duplicates come only from copies re-read above the committed offsets: at most one per
     * xDR written before the last crash. */
    assert_true(duplicates <= (size_t)xdrs_at_kill);

    /* The restarted daemon drains cleanly and commits everything. */
    assert_true(corr_stop_clean(&e));
    assert_int_equal(agg_committed_sum(e.group, e.main, PARTS), N_TOTAL * 4);
    corr_xdrs_free(&xs);
    corr_env_cleanup(&e);
    corr_test_env = NULL;
}

/* A second replica joins while transactions are open: the partitions that move are handed
 * over (their open transactions dropped by the first replica, offsets committed below them)
 * and rebuilt by the second from MAIN, so every transaction still gets exactly one complete
 * xDR: none is lost, none is emitted incomplete. */
static void test_rebalance_hands_open_transactions_over_to_the_new_owner(void **state)
{
    (void)state;
    enum { N = 300, NPARTS = 6 };
    static corr_env_t e; /* static: the teardown may still use it */
    corr_test_env = &e;
    assert_int_equal(corr_env_init(&e, "corrrebal", NPARTS), 0);
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    char id[64];
    for (long i = 0; i < N; i++) {
        snprintf(id, sizeof(id), "rebal-%ld", i);
        assert_int_equal(corr_produce_txn(p, e.main, id, "SCP", TS0 + i * 10000, ORDER, 2, 200), 0);
    }
    assert_int_equal(ktu_flush(p, 30000), 0);

    const char *args[] = {"--timeout=120s", NULL};
    pid_t a = corr_start(&e, args);
    assert_true(a > 0);
    uint16_t port_a = corr_http_port(&e, 10000);
    assert_true(port_a > 0);
    int64_t deadline = ktu_now_ms() + 30000;
    while ((corr_metric(port_a, "ndd_correlation_messages_consumed_total") < 2 * N ||
            corr_metric(port_a, "ndd_correlation_transactions_open") < N) &&
           ktu_now_ms() < deadline)
        ktu_sleep_ms(50);
    assert_true(corr_metric(port_a, "ndd_correlation_transactions_open") == N);

    /* The second replica joins the group: some partitions move to it. */
    corr_test_extra_pid = a; /* e.pid becomes the second replica's */
    pid_t b = corr_start(&e, args);
    assert_true(b > 0);
    uint16_t port_b = corr_http_port(&e, 10000);
    assert_true(port_b > 0);
    deadline = ktu_now_ms() + 40000;
    double moved = 0;
    while (ktu_now_ms() < deadline) {
        moved = corr_metric(port_a, "ndd_correlation_transactions_handed_over_total");
        if (moved > 0 && corr_metric(port_b, "ndd_correlation_partitions_assigned") > 0 &&
            corr_metric(port_a, "ndd_correlation_partitions_assigned") +
                    corr_metric(port_b, "ndd_correlation_partitions_assigned") ==
                NPARTS &&
            corr_metric(port_a, "ndd_correlation_transactions_open") +
                    corr_metric(port_b, "ndd_correlation_transactions_open") ==
                N)
            break;
        ktu_sleep_ms(100);
    }
    print_message("%g open transactions handed over to the new replica\n", moved);
    assert_true(moved > 0 && moved < N);
    assert_true(corr_metric(port_a, "ndd_correlation_transactions_open") +
                    corr_metric(port_b, "ndd_correlation_transactions_open") ==
                N);
    assert_int_equal(ktu_topic_record_count(e.xdr, 5000), 0);

    /* The responses arrive: each replica completes the transactions of its partitions. */
    for (long i = 0; i < N; i++) {
        snprintf(id, sizeof(id), "rebal-%ld", i);
        assert_int_equal(corr_produce_txn(p, e.main, id, "SCP", TS0 + i * 10000, ORDER + 2, 2, 200),
                         0);
    }
    assert_int_equal(ktu_flush(p, 30000), 0);
    rd_kafka_destroy(p);
    assert_true(agg_wait_count(e.xdr, N, 30000) >= N);
    ktu_sleep_ms(500); /* a duplicate would follow within this */
    corr_xdrs_t xs = {0};
    size_t n = corr_read_xdrs(e.xdr, (size_t)ktu_topic_record_count(e.xdr, 5000), 10000, &xs);
    assert_int_equal(n, N);
    static unsigned seen[N];
    memset(seen, 0, sizeof(seen));
    for (size_t k = 0; k < xs.n; k++) {
        const corr_xdr_t *x = &xs.v[k];
        long i = corr_txn_number(x->id);
        assert_true(i >= 0 && i < N);
        seen[i]++;
        if (strcmp(x->completion, "complete") != 0 || x->lat_rx != CTU_LAT_RX ||
            x->lat_tx != CTU_LAT_TX)
            fail_msg("transaction %ld: %s xDR, latency rx %lld tx %lld", i, x->completion,
                     (long long)x->lat_rx, (long long)x->lat_tx);
    }
    for (long i = 0; i < N; i++)
        if (seen[i] != 1)
            fail_msg("transaction %ld has %u xDRs", i, seen[i]);
    corr_xdrs_free(&xs);
    int st = ktu_stop(b, SIGTERM, 20000);
    e.pid = 0;
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    st = ktu_stop(a, SIGTERM, 20000);
    corr_test_extra_pid = 0;
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    corr_env_cleanup(&e);
    corr_test_env = NULL;
}

int main(void)
{
    ktu_brokers(); /* fails with a clear message when NDD_TEST_KAFKA is unset */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_kill_9_mid_stream_and_restart_loses_no_xdr,
                                  corr_test_teardown),
        cmocka_unit_test_teardown(test_rebalance_hands_open_transactions_over_to_the_new_owner,
                                  corr_test_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
