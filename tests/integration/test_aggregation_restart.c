/* ndd-aggregation killed with -9 and restarted writes to MAIN again within seconds, not after
 * the dead member's session timeout: with a fixed HTTP port its consumer is a static group
 * member (group.instance.id <host>-ndd-aggregation-<nf>-<port>), so the restarted worker takes
 * the dead one's place at once. The session timeout is 45 s here (librdkafka's default; the
 * test helper's usual 6 s would hide the stall), so only static membership can pass. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "agg_testutil.h"
#include "kafka_testutil.h"

#define N 2000
#define RESTART_BUDGET_MS 10000

/* A port that was free a moment ago (the kernel's choice for port 0). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void test_aggregation_killed_and_restarted_writes_again_within_10_s(void **state)
{
    (void)state;
    agg_env_t e;
    assert_int_equal(agg_env_init(&e, "aggrestart", 3, 3), 0);
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    char port[32];
    snprintf(port, sizeof port, "--http.port=%d", free_port());
    const char *extra[] = {port, "--kafka.consumer.session.timeout.ms=45000", NULL};

    assert_true(agg_start(&e, 0, extra) > 0);
    assert_int_equal(agg_produce_copies(p, e.in, 0, N, 100, 100), 0);
    assert_true(agg_wait_count(e.main, N, 60000) >= N);
    assert_int_equal(agg_log_count(&e, 0, "static member"), 2); /* consumer and worker lines */
    /* Killed once the first N are committed: whatever MAIN gets after the restart is new. */
    int64_t deadline = ktu_now_ms() + 30000;
    while (agg_committed_sum(e.group, e.in, 3) < N) {
        assert_true(ktu_now_ms() < deadline);
        ktu_sleep_ms(20);
    }

    int st = ktu_stop(e.pid[0], SIGKILL, 5000);
    e.pid[0] = 0;
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    int64_t t0 = ktu_now_ms();
    assert_true(agg_start(&e, 0, extra) > 0);
    assert_int_equal(agg_produce_copies(p, e.in, N, N, 100, 100), 0);
    /* MAIN already holds the first N. */
    int64_t have = agg_wait_count(e.main, 2 * N, RESTART_BUDGET_MS - (int)(ktu_now_ms() - t0));
    int64_t took = ktu_now_ms() - t0;
    print_message("restart after kill -9: MAIN holds %lld of %d after %lld ms\n", (long long)have,
                  2 * N, (long long)took);
    if (have < 2 * N)
        fail_msg("after kill -9 and restart MAIN holds %lld of %d within %d ms (log %s)",
                 (long long)have, 2 * N, RESTART_BUDGET_MS, e.log_path[0]);
    assert_true(agg_stop_clean(&e, 0));
    rd_kafka_destroy(p);
    agg_env_cleanup(&e);
}

/* The worker pointed at another NF topic and restarted at once (within its static member's
 * session timeout) reads the new topic. Under the same group.instance.id a member rejoining
 * a stable group gets its old assignment back without a rebalance (KIP-814, which librdkafka
 * 2.0 does not do), so it held the old topic's partitions and wrote nothing (500 of 1,000
 * after 30 s); the member id carries a hash of the topic now. */
static void test_aggregation_restarted_on_another_topic_writes_from_it(void **state)
{
    (void)state;
    enum { M = 500, BUDGET_MS = 30000 };
    agg_env_t e;
    assert_int_equal(agg_env_init(&e, "aggmove", 3, 3), 0);
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    char port[32];
    snprintf(port, sizeof port, "--http.port=%d", free_port());
    /* The helper's session timeout (6 s): the moved worker joins as a new member, and the old
     * one's partitions are given up once its session has timed out. */
    const char *extra[] = {port, NULL};
    assert_true(agg_start(&e, 0, extra) > 0);
    assert_int_equal(agg_produce_copies(p, e.in, 0, M, 100, 100), 0);
    assert_true(agg_wait_count(e.main, M, 60000) >= M);

    int st = ktu_stop(e.pid[0], SIGKILL, 5000);
    e.pid[0] = 0;
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    char old_in[sizeof e.in];
    snprintf(old_in, sizeof old_in, "%s", e.in);
    ktu_unique_name("aggmove-b", e.in, sizeof e.in);
    assert_int_equal(ktu_create_topic(e.in, 3), 0);
    int64_t t0 = ktu_now_ms();
    assert_true(agg_start(&e, 0, extra) > 0);
    assert_int_equal(agg_produce_copies(p, e.in, M, M, 100, 100), 0);
    int64_t have = agg_wait_count(e.main, 2 * M, BUDGET_MS);
    int64_t took = ktu_now_ms() - t0;
    print_message("restart on another topic: MAIN holds %lld of %d after %lld ms\n",
                  (long long)have, 2 * M, (long long)took);
    if (have < 2 * M)
        fail_msg("after the move to %s MAIN holds %lld of %d within %d ms (log %s)", e.in,
                 (long long)have, 2 * M, BUDGET_MS, e.log_path[0]);
    assert_true(agg_stop_clean(&e, 0));
    rd_kafka_destroy(p);
    ktu_delete_topic(old_in);
    agg_env_cleanup(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aggregation_killed_and_restarted_writes_again_within_10_s),
        cmocka_unit_test(test_aggregation_restarted_on_another_topic_writes_from_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
