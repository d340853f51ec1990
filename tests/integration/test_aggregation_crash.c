/* ndd-aggregation at-least-once across a crash: kill -9 in the middle of 100,000 copies and a
 * restart leave MAIN holding every one of them; duplicates are counted (and bounded). */
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

#define N_TOTAL 100000
#define N_FIRST 40000

static void test_kill_9_mid_stream_and_restart_loses_no_copy(void **state)
{
    agg_env_t e;
    assert_int_equal(agg_env_init(&e, "aggcrash", 3, 3), 0);
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    assert_int_equal(agg_produce_copies(p, e.in, 0, N_FIRST, 1000, 100), 0);

    /* The first run is slowed down (few in flight, long linger: about 10,000 copies/s) so
     * that it is killed after some offset commits and well before the end of its input. */
    const char *slow[] = {"--max-inflight=500", "--batch=100", "--kafka.producer.linger.ms=50",
                          NULL};
    pid_t pid = agg_start(&e, 0, slow);
    assert_true(pid > 0);
    /* Kill it while it works: after a commit, and while MAIN holds more than was committed
     * (acknowledged copies whose offsets are not committed yet: the duplicates to come). */
    int64_t deadline = ktu_now_ms() + 30000;
    for (;;) {
        int64_t c = agg_committed_sum(e.group, e.in, 3);
        if (c > 0 && ktu_topic_record_count(e.main, 5000) > c + 100)
            break;
        assert_true(ktu_now_ms() < deadline);
        ktu_sleep_ms(10);
    }
    int st = ktu_stop(pid, SIGKILL, 5000);
    e.pid[0] = 0;
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    int64_t after_kill = ktu_topic_record_count(e.main, 5000);
    int64_t committed = agg_committed_sum(e.group, e.in, 3);
    print_message("killed with %lld copies on MAIN, %lld input offsets committed\n",
                  (long long)after_kill, (long long)committed);
    /* The crash came before the end: what the group committed never passes what MAIN holds
     * (offsets are stored only after MAIN acknowledged). */
    assert_true(committed <= after_kill);
    assert_true(after_kill < N_FIRST);

    /* The rest of the stream arrives while the worker is down, then it restarts. */
    assert_int_equal(agg_produce_copies(p, e.in, N_FIRST, N_TOTAL - N_FIRST, 1000, 100), 0);
    pid = agg_start(&e, 0, NULL);
    assert_true(pid > 0);
    /* Done when the group has committed the whole input: every copy was acknowledged by
     * MAIN before its offset was stored. */
    deadline = ktu_now_ms() + 45000;
    while (agg_committed_sum(e.group, e.in, 3) < N_TOTAL && ktu_now_ms() < deadline)
        ktu_sleep_ms(100);
    assert_int_equal(agg_committed_sum(e.group, e.in, 3), N_TOTAL);

    agg_tally_t t;
    assert_int_equal(agg_tally_init(&t, N_TOTAL), 0);
    int64_t on_main = ktu_topic_record_count(e.main, 5000);
    agg_tally_read(&t, e.main, (size_t)on_main, 20000);
    print_message("MAIN holds %lld records: %zu distinct copies, %zu duplicates\n",
                  (long long)on_main, t.distinct, t.duplicates);
    assert_int_equal(t.foreign, 0);
    assert_int_equal(t.distinct, N_TOTAL); /* none missing */
    /* Duplicates come only from the uncommitted window at the crash: at most what was on
     * MAIN beyond the committed offsets. */
    assert_true((int64_t)t.duplicates <= after_kill - committed);
    assert_int_equal((int64_t)(t.distinct + t.duplicates), on_main);
    agg_tally_free(&t);

    assert_true(agg_stop_clean(&e, 0));
    assert_int_equal(agg_committed_sum(e.group, e.in, 3), N_TOTAL);
    rd_kafka_destroy(p);
    agg_env_cleanup(&e);
}

int main(void)
{
    ktu_brokers();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill_9_mid_stream_and_restart_loses_no_copy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
