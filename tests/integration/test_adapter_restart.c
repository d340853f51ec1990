/* ndd-adapter killed with -9 and restarted delivers again within seconds, not after the dead
 * member's session timeout: its feed consumers are static group members (group.instance.id
 * from the host name, the feed and the fixed HTTP port), so the restarted process takes the
 * dead one's place at once. The session timeout is set to 45 s here (librdkafka's default;
 * the test helper's usual 6 s would hide the stall), so only static membership can pass.
 * Real broker (NDD_TEST_KAFKA), daemon as a child killed by PID. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "adapter_testutil.h"
#include "kafka_testutil.h"
#include "log.h"

#define RESTART_BUDGET_MS 10000

static char tmpdir[256];

static int setup_all(void **state)
{
    (void)state;
    log_setup("test_adapter_restart", LOG_LEVEL_WARN, 0);
    signal(SIGPIPE, SIG_IGN);
    (void)ktu_brokers(); /* fails the run clearly when NDD_TEST_KAFKA is unset */
    return atu_scratch_make(tmpdir, sizeof tmpdir, "adapter-restart");
}

static int teardown_all(void **state)
{
    (void)state;
    atu_scratch_remove(tmpdir);
    return 0;
}

static bool wait_range(atu_srv_t *s, uint64_t from, uint64_t to, int timeout_ms)
{
    uint64_t end = atu_now_ms() + (uint64_t)timeout_ms;
    while (!atu_srv_has_range(s, from, to)) {
        if (atu_now_ms() > end)
            return false;
        usleep(20000);
    }
    return true;
}

/* One feed to an h2c recorder: n copies on topic_before delivered, the adapter killed with
 * SIGKILL, the feed pointed at topic_after (the same topic or another), the adapter started
 * again and n new copies produced there: true when they were all delivered within budget_ms
 * of the restart. What it took is printed with `what`. */
static bool restart_delivers(const char *feed_prefix, const char *topic_before,
                             const char *topic_after, int n, const char *const *extra,
                             int budget_ms, const char *what)
{
    char feed[96], feeds_file[400], log[400], doc[1200];
    ktu_unique_name(feed_prefix, feed, sizeof feed);
    snprintf(feeds_file, sizeof feeds_file, "%s/%s.json", tmpdir, feed);
    snprintf(log, sizeof log, "%s/%s.log", tmpdir, feed);
    int mport = atu_free_port(27100, 27999);
    int pa = atu_free_port(27100, 27999);
    atu_srv_t *srv = atu_srv_start(ATU_SRV_H2, pa, NULL);
    assert_non_null(srv);
    const char *fmt = "{\"feeds\":[{\"name\":\"%s\",\"source_topic\":\"%s\",\"transport\":"
                      "\"http2\",\"encoding\":\"json\",\"endpoints\":[{\"url\":"
                      "\"http://127.0.0.1:%d/in\"}]}]}";
    snprintf(doc, sizeof doc, fmt, feed, topic_before, pa);
    assert_int_equal(atu_write_file(feeds_file, doc), 0);
    pid_t adapter = atu_start_adapter(feeds_file, mport, log, extra);
    if (adapter <= 0)
        fail_msg("ndd-adapter did not start (log %s)", log);
    assert_int_equal(atu_produce_copies(topic_before, 0, (size_t)n, 500), 0);
    if (!wait_range(srv, 0, (uint64_t)n, 60000))
        fail_msg("first run delivered %zu distinct of %d (log %s)", atu_srv_distinct(srv), n, log);
    assert_int_equal(atu_count_in_file(log, "static member"), 1);

    atu_stop(adapter, SIGKILL);
    snprintf(doc, sizeof doc, fmt, feed, topic_after, pa);
    assert_int_equal(atu_write_file(feeds_file, doc), 0);
    uint64_t t0 = atu_now_ms();
    adapter = atu_start_adapter(feeds_file, mport, log, extra);
    if (adapter <= 0)
        fail_msg("ndd-adapter did not restart (log %s)", log);
    assert_int_equal(atu_produce_copies(topic_after, (uint64_t)n, (size_t)n, 500), 0);
    bool back = wait_range(srv, (uint64_t)n, 2 * (uint64_t)n, budget_ms - (int)(atu_now_ms() - t0));
    uint64_t took = atu_now_ms() - t0;
    fprintf(stderr, "%s: the new copies delivered %s %llu ms\n", what, back ? "in" : "not within",
            (unsigned long long)took);
    if (!back)
        fprintf(stderr, "%s: only %zu distinct of %d within %d ms (log %s)\n", what,
                atu_srv_distinct(srv), 2 * n, budget_ms, log);
    atu_stop(adapter, SIGTERM);
    atu_srv_stop(srv);
    return back;
}

static void test_adapter_killed_and_restarted_delivers_again_within_10_s(void **state)
{
    (void)state;
    char topic[128];
    ktu_unique_name("adapter-restart-src", topic, sizeof topic);
    assert_int_equal(ktu_create_topic(topic, 3), 0);
    const char *extra[] = {"--kafka.session.timeout.ms=45000", NULL};
    bool back = restart_delivers("feed-restart9", topic, topic, 300, extra, RESTART_BUDGET_MS,
                                 "restart after kill -9");
    ktu_delete_topic(topic);
    assert_true(back);
}

/* A feed moved to another source topic and the adapter restarted at once (within the session
 * timeout of its static member): the feed consumes the new topic. With the old topic's
 * assignment handed back to the rejoining member (the same group.instance.id, a stable group,
 * no rebalance) it consumed nothing until a metadata refresh minutes later. */
static void test_adapter_restarted_on_another_topic_delivers_from_it(void **state)
{
    (void)state;
    char topic1[128], topic2[128];
    ktu_unique_name("adapter-move-a", topic1, sizeof topic1);
    ktu_unique_name("adapter-move-b", topic2, sizeof topic2);
    assert_int_equal(ktu_create_topic(topic1, 3), 0);
    assert_int_equal(ktu_create_topic(topic2, 3), 0);
    bool moved = restart_delivers("feed-moved", topic1, topic2, 200, NULL, 30000,
                                  "restart on another topic");
    ktu_delete_topic(topic1);
    ktu_delete_topic(topic2);
    assert_true(moved);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_adapter_killed_and_restarted_delivers_again_within_10_s),
        cmocka_unit_test(test_adapter_restarted_on_another_topic_delivers_from_it),
    };
    return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
