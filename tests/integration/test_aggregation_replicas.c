/* Two ndd-aggregation replicas in one consumer group share the NF topic's partitions; a
 * replica joining and another leaving in the middle of a stream (two rebalances) lose no
 * copy. */
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
#include "kafka_testutil.h"

#define N_TOTAL 30000
#define CHUNK 2000
/* The whole scenario must finish well inside ctest's 600 s: a hang fails with a message. */
#define SCENARIO_BUDGET_MS 240000
/* More than this on MAIN means records are produced again and again (a re-consume loop). */
#define MAIN_MAX (4 * N_TOTAL)

/* The scenario's environment lives here so the teardown can stop replicas a failed
 * assertion left running (otherwise they keep producing after the test is gone). */
static agg_env_t g_env;
static bool g_env_live;

static int scenario_teardown(void **state)
{
    (void)state;
    if (g_env_live) {
        agg_env_cleanup(&g_env);
        g_env_live = false;
    }
    return 0;
}

static int64_t g_deadline;

/* Fails the test with a clear message once the scenario's overall budget is spent. */
static void budget_check(const char *phase)
{
    if (ktu_now_ms() > g_deadline)
        fail_msg("aggregation replicas: overall deadline (%d s) passed while %s; replica logs "
                 "in %s (set NDD_TEST_KEEP_LOGS=1 to keep them)",
                 SCENARIO_BUDGET_MS / 1000, phase, g_env.dir);
}

/* Numbers after "stopped: consumed " in a replica's log (its last run), or -1. */
static long long consumed_by(const agg_env_t *e, int slot)
{
    FILE *f = fopen(e->log_path[slot], "r");
    if (!f)
        return -1;
    char line[4096];
    long long n = -1;
    while (fgets(line, sizeof(line), f)) {
        const char *p = strstr(line, "stopped: consumed ");
        if (p)
            n = strtoll(p + strlen("stopped: consumed "), NULL, 10);
    }
    fclose(f);
    return n;
}

static void replicas_scenario(const char *tag, const char *const *extra)
{
    g_deadline = ktu_now_ms() + SCENARIO_BUDGET_MS;
    assert_int_equal(agg_env_init(&g_env, tag, 4, 4), 0);
    g_env_live = true;
#define e g_env
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    uint64_t next = 0;

    /* Replica 0 alone gets all 4 partitions. */
    assert_true(agg_start(&e, 0, extra) > 0);
    assert_true(agg_log_wait(&e, 0, "assigned 4 partition(s)", 20000));
    for (int i = 0; i < 3; i++, next += CHUNK)
        assert_int_equal(agg_produce_copies(p, e.in, next, CHUNK, 500, 100), 0);

    /* Replica 1 joins mid-stream: the group rebalances and the partitions are shared. */
    assert_true(agg_start(&e, 1, extra) > 0);
    int64_t deadline = ktu_now_ms() + 30000;
    while (ktu_now_ms() < deadline) {
        /* Keep the stream going while it joins (a bounded amount of it). */
        if (next < 10 * CHUNK) {
            assert_int_equal(agg_produce_copies(p, e.in, next, CHUNK / 4, 500, 100), 0);
            next += CHUNK / 4;
        } else {
            ktu_sleep_ms(20);
        }
        if (agg_log_count(&e, 1, "assigned 2 partition(s)") > 0)
            break;
        budget_check("waiting for replica 1 to join");
    }
    assert_true(agg_log_count(&e, 1, "assigned 2 partition(s)") > 0);
    for (int i = 0; i < 3; i++, next += CHUNK)
        assert_int_equal(agg_produce_copies(p, e.in, next, CHUNK, 500, 100), 0);

    /* Replica 0 leaves mid-stream (SIGTERM): replica 1 takes all partitions over. */
    assert_true(agg_stop_clean(&e, 0));
    assert_true(next < N_TOTAL);
    assert_int_equal(agg_produce_copies(p, e.in, next, N_TOTAL - next, 500, 100), 0);
    next = N_TOTAL;

    deadline = ktu_now_ms() + 45000;
    while (agg_committed_sum(e.group, e.in, 4) < N_TOTAL && ktu_now_ms() < deadline) {
        budget_check("waiting for the group to commit every record");
        ktu_sleep_ms(100);
    }
    int64_t committed = agg_committed_sum(e.group, e.in, 4);
    if (committed != N_TOTAL)
        fail_msg("aggregation replicas: %lld of %d input records committed after 45 s (replica "
                 "1 log: %s)",
                 (long long)committed, N_TOTAL, e.log_path[1]);
    assert_true(agg_stop_clean(&e, 1));

    agg_tally_t t;
    assert_int_equal(agg_tally_init(&t, N_TOTAL), 0);
    int64_t on_main = ktu_topic_record_count(e.main, 5000);
    if (on_main < N_TOTAL || on_main > MAIN_MAX)
        fail_msg("aggregation replicas: MAIN holds %lld records for %d inputs (expected %d..%d)",
                 (long long)on_main, N_TOTAL, N_TOTAL, MAIN_MAX);
    budget_check("about to read MAIN");
    agg_tally_read(&t, e.main, (size_t)on_main, 20000);
    long long c0 = consumed_by(&e, 0), c1 = consumed_by(&e, 1);
    print_message("replica 0 consumed %lld, replica 1 consumed %lld; MAIN holds %lld: %zu "
                  "distinct, %zu duplicates\n",
                  c0, c1, (long long)on_main, t.distinct, t.duplicates);
    assert_int_equal(t.foreign, 0);
    assert_int_equal(t.distinct, N_TOTAL); /* nothing lost across two rebalances */
    /* Both did real work. Graceful hand-overs commit what was acknowledged, so duplicates
     * are at most the records in flight at a revoke. */
    assert_true(c0 > 0);
    assert_true(c1 > 0);
    assert_true(t.duplicates <= 2 * 5500);
    agg_tally_free(&t);
    rd_kafka_destroy(p);
#undef e
    scenario_teardown(NULL);
}

static void test_two_replicas_share_partitions_and_rebalances_lose_nothing(void **state)
{
    replicas_scenario("aggrep", NULL); /* eager rebalancing (the default) */
}

static void test_cooperative_rebalances_lose_nothing_either(void **state)
{
    const char *coop[] = {"--cooperative=true", NULL};
    replicas_scenario("aggcoop", coop);
}

int main(void)
{
    ktu_brokers();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_two_replicas_share_partitions_and_rebalances_lose_nothing,
                                  scenario_teardown),
        cmocka_unit_test_teardown(test_cooperative_rebalances_lose_nothing_either,
                                  scenario_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
