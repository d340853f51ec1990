/* ndd-adapter following its feeds on a compacted configuration topic (the admin's ndd.config,
 * docs/control-path.md) instead of a file: a "feed" record starts the feed, a changed record
 * restarts it, a tombstone stops it. Real broker (NDD_TEST_KAFKA), daemon as a child. */
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

static bool wait_has(atu_srv_t *s, uint64_t from, uint64_t to, int timeout_ms)
{
    uint64_t end = atu_now_ms() + (uint64_t)timeout_ms;
    while (!atu_srv_has_range(s, from, to)) {
        if (atu_now_ms() > end)
            return false;
        usleep(50000);
    }
    return true;
}

static void publish(rd_kafka_t *p, const char *ctopic, const char *id, const char *record)
{
    char key[128];
    snprintf(key, sizeof key, "feed/%s", id);
    assert_int_equal(
        ktu_produce(p, ctopic, 0, key, strlen(key), record, record ? strlen(record) : 0, NULL, 0),
        0);
    assert_int_equal(ktu_flush(p, 10000), 0);
}

static void test_feeds_follow_the_configuration_topic(void **state)
{
    log_setup("test_adapter_config_topic", LOG_LEVEL_WARN, 0);
    signal(SIGPIPE, SIG_IGN);
    char src[128], ctopic[128], feed[96], dir[] = "/tmp/ndd-adcfg-XXXXXX";
    assert_non_null(mkdtemp(dir));
    ktu_unique_name("adcfg-src", src, sizeof src);
    ktu_unique_name("adcfg-config", ctopic, sizeof ctopic);
    ktu_unique_name("feed-ct", feed, sizeof feed);
    assert_int_equal(ktu_create_topic(src, 3), 0);
    const char *compact[] = {"cleanup.policy=compact"};
    assert_int_equal(ktu_create_topic_cfg(ctopic, 1, compact, 1), 0);
    int pa = atu_free_port(27100, 27999), pb = atu_free_port(27100, 27999),
        mport = atu_free_port(27100, 27999);
    atu_srv_t *ra = atu_srv_start(ATU_SRV_H2, pa, NULL);
    atu_srv_t *rb = atu_srv_start(ATU_SRV_H2, pb, NULL);
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    char rec[1500];
    snprintf(rec, sizeof rec,
             "{\"kind\":\"feed\",\"id\":\"f1\",\"name\":\"%s\",\"version\":1,\"spec\":"
             "{\"name\":\"%s\",\"source_topic\":\"%s\",\"endpoints\":[{\"url\":"
             "\"http://127.0.0.1:%d/in\"}]}}",
             feed, feed, src, pa);
    publish(p, ctopic, "f1", rec);

    char log[600], ct_arg[200], dummy[600];
    snprintf(log, sizeof log, "%s/adapter.log", dir);
    snprintf(ct_arg, sizeof ct_arg, "--config-topic=%s", ctopic);
    snprintf(dummy, sizeof dummy, "%s/unused.json", dir);
    /* atu_start_adapter passes --feeds-file; this mode must refuse both at once... */
    const char *both[] = {ct_arg, NULL};
    pid_t bad = atu_start_adapter(dummy, mport, log, both);
    assert_true(bad <= 0);
    assert_true(atu_count_in_file(log, "exactly one of --feeds-file and --config-topic") > 0);
    /* ...so start it by hand with the topic only. */
    char bin[600], boot[300], ps[16];
    snprintf(bin, sizeof bin, "%s/adapter/ndd-adapter", NDD_BINARY_DIR);
    snprintf(boot, sizeof boot, "%s", ktu_brokers());
    snprintf(ps, sizeof ps, "%d", mport);
    char *argv[] = {bin,
                    "--bootstrap",
                    boot,
                    ct_arg,
                    "--http.port",
                    ps,
                    "--kafka.session.timeout.ms=6000",
                    "--drain-timeout",
                    "3s",
                    NULL};
    pid_t ad = atu_spawn(argv, log);
    assert_true(atu_wait_port(mport, 10000));

    assert_int_equal(atu_produce_copies(src, 0, 300, 1000), 0);
    if (!wait_has(ra, 0, 300, 30000))
        fail_msg("feed from the configuration topic did not deliver (log %s)", log);

    /* A new version moves the feed to endpoint B. */
    snprintf(rec, sizeof rec,
             "{\"kind\":\"feed\",\"id\":\"f1\",\"name\":\"%s\",\"version\":2,\"spec\":"
             "{\"name\":\"%s\",\"source_topic\":\"%s\",\"endpoints\":[{\"url\":"
             "\"http://127.0.0.1:%d/in\"}]}}",
             feed, feed, src, pb);
    publish(p, ctopic, "f1", rec);
    uint64_t t0 = atu_now_ms();
    while (atu_count_in_file(log, "configuration changed") == 0 && atu_now_ms() - t0 < 10000)
        usleep(50000);
    assert_int_equal(atu_produce_copies(src, 300, 300, 1000), 0);
    if (!wait_has(rb, 300, 600, 30000))
        fail_msg("changed feed did not move to endpoint B (log %s)", log);

    /* A tombstone stops it. */
    publish(p, ctopic, "f1", NULL);
    t0 = atu_now_ms();
    while (atu_count_in_file(log, "stopped") < 2 && atu_now_ms() - t0 < 10000)
        usleep(50000);
    size_t before = atu_srv_total(rb);
    assert_int_equal(atu_produce_copies(src, 600, 100, 500), 0);
    usleep(1500000);
    assert_int_equal(atu_srv_total(rb), before);

    rd_kafka_destroy(p);
    atu_stop(ad, SIGTERM);
    atu_srv_stop(ra);
    atu_srv_stop(rb);
    ktu_delete_topic(src);
    ktu_delete_topic(ctopic);
    atu_remove_tree(dir);
}

int main(void)
{
    (void)ktu_brokers();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_feeds_follow_the_configuration_topic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
