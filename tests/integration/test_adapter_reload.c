/* Feeds changed at run time without restart and without loss (real broker, ndd-adapter as a
 * child process): a feed's endpoint changed by editing the feeds file while messages are in
 * flight, a feed added, a feed removed by SIGHUP (it commits what was acknowledged and
 * stops), and an invalid file leaves the running feeds alone. */
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

static bool union_has(atu_srv_t *a, atu_srv_t *b, uint64_t from, uint64_t to, int timeout_ms)
{
    uint64_t end = atu_now_ms() + (uint64_t)timeout_ms;
    for (;;) {
        bool ok = true;
        for (uint64_t i = from; i < to && ok; i++)
            ok = (a && atu_srv_has(a, i)) || (b && atu_srv_has(b, i));
        if (ok)
            return true;
        if (atu_now_ms() > end)
            return false;
        usleep(50000);
    }
}

/* Waits until the adapter's log holds `n` lines containing `what` (a reload applied). */
static void wait_log(const char *log, const char *what, size_t n)
{
    uint64_t t0 = atu_now_ms();
    while (atu_count_in_file(log, what) < n && atu_now_ms() - t0 < 10000)
        usleep(20000);
    if (atu_count_in_file(log, what) < n)
        fail_msg("adapter log %s: \"%s\" seen %zu times, want %zu", log, what,
                 atu_count_in_file(log, what), n);
}

static void feed_obj(char *out, size_t n, const char *name, const char *topic, int port)
{
    snprintf(out, n,
             "{\"name\":\"%s\",\"source_topic\":\"%s\",\"endpoints\":[{\"url\":"
             "\"http://127.0.0.1:%d/in\"}],\"delivery\":{\"timeout_ms\":2000,"
             "\"backoff_max_ms\":1000}}",
             name, topic, port);
}

static void test_feeds_change_add_remove_at_run_time_without_loss(void **state)
{
    log_setup("test_adapter_reload", LOG_LEVEL_WARN, 0);
    signal(SIGPIPE, SIG_IGN);
    char topic[128], fa[96], fb[96], dir[] = "/tmp/ndd-reload-XXXXXX";
    assert_non_null(mkdtemp(dir));
    ktu_unique_name("reload-src", topic, sizeof topic);
    ktu_unique_name("feed-a", fa, sizeof fa);
    ktu_unique_name("feed-b", fb, sizeof fb);
    assert_int_equal(ktu_create_topic(topic, 3), 0);
    int pa = atu_free_port(27100, 27999), pb = atu_free_port(27100, 27999),
        pc = atu_free_port(27100, 27999), mport = atu_free_port(27100, 27999);
    atu_srv_t *ra = atu_srv_start(ATU_SRV_H2, pa, NULL);
    atu_srv_t *rb = atu_srv_start(ATU_SRV_H2, pb, NULL);
    atu_srv_t *rc = atu_srv_start(ATU_SRV_H2, pc, NULL);
    char file[600], log[600], f1[1000], doc[2200];
    snprintf(file, sizeof file, "%s/feeds.json", dir);
    snprintf(log, sizeof log, "%s/adapter.log", dir);
    feed_obj(f1, sizeof f1, fa, topic, pa);
    snprintf(doc, sizeof doc, "{\"feeds\":[%s]}", f1);
    assert_int_equal(atu_write_file(file, doc), 0);
    pid_t ad = atu_start_adapter(file, mport, log, NULL);
    assert_true(ad > 0);

    assert_int_equal(atu_produce_copies(topic, 0, 500, 2000), 0);
    assert_true(union_has(ra, NULL, 0, 500, 30000));

    /* Change feed A's endpoint while a second batch is being delivered. */
    assert_int_equal(atu_produce_copies(topic, 500, 1000, 2000), 0);
    feed_obj(f1, sizeof f1, fa, topic, pb);
    snprintf(doc, sizeof doc, "{\"feeds\":[%s]}", f1);
    assert_int_equal(atu_write_file(file, doc), 0);
    if (!union_has(ra, rb, 0, 1500, 30000))
        fail_msg("messages lost across the change (log %s)", log);
    wait_log(log, "feeds reloaded: 1 running", 1);
    assert_int_equal(atu_produce_copies(topic, 1500, 300, 2000), 0);
    if (!union_has(rb, NULL, 1500, 1800, 30000)) {
        char cmd[200];
        snprintf(cmd, sizeof cmd, "curl -s 127.0.0.1:%d/metrics | grep '^ndd_adapter' >&2", mport);
        if (system(cmd) != 0)
            fprintf(stderr, "(no metrics)\n");
        fail_msg("changed feed stopped delivering (log %s)", log);
    }

    /* Add feed B: a new group reads the topic from the start. */
    char f3[1000];
    feed_obj(f3, sizeof f3, fb, topic, pc);
    snprintf(doc, sizeof doc, "{\"feeds\":[%s,%s]}", f1, f3);
    assert_int_equal(atu_write_file(file, doc), 0);
    wait_log(log, "feeds reloaded: 2 running", 1);
    if (!union_has(rc, NULL, 0, 1800, 30000))
        fail_msg("added feed did not deliver everything (log %s)", log);

    /* An invalid file changes nothing. */
    assert_int_equal(atu_write_file(file, "{\"feeds\":[{\"name\":\"x\"}]}"), 0);
    uint64_t t0 = atu_now_ms();
    while (atu_count_in_file(log, "feeds reload:") == 0 && atu_now_ms() - t0 < 5000)
        usleep(50000);
    assert_true(atu_count_in_file(log, "feeds reload:") > 0);
    assert_int_equal(atu_produce_copies(topic, 1800, 100, 500), 0);
    assert_true(union_has(rb, NULL, 1800, 1900, 30000));
    assert_true(union_has(rc, NULL, 1800, 1900, 30000));

    /* Remove feed A; the file watch would notice too, SIGHUP makes it immediate. */
    snprintf(doc, sizeof doc, "{\"feeds\":[%s]}", f3);
    assert_int_equal(atu_write_file(file, doc), 0);
    kill(ad, SIGHUP);
    wait_log(log, "feeds reloaded: 1 running", 2);
    char group_a[200];
    snprintf(group_a, sizeof group_a, "ndd-feed-%s", fa);
    t0 = atu_now_ms();
    while (atu_count_in_file(log, "stopped") == 0 && atu_now_ms() - t0 < 10000)
        usleep(50000);
    /* What A acknowledged was committed when it stopped: its group is caught up. */
    assert_true(atu_group_caught_up(topic, group_a, 20000));
    size_t rb_before = atu_srv_total(rb);
    assert_int_equal(atu_produce_copies(topic, 1900, 100, 500), 0);
    assert_true(union_has(rc, NULL, 1900, 2000, 30000));
    assert_int_equal(atu_srv_total(rb), rb_before);

    atu_stop(ad, SIGTERM);
    atu_srv_stop(ra);
    atu_srv_stop(rb);
    atu_srv_stop(rc);
    ktu_delete_topic(topic);
    atu_remove_tree(dir);
}

int main(void)
{
    (void)ktu_brokers();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_feeds_change_add_remove_at_run_time_without_loss),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
