/* The readiness rule and the start-up checks of ndd-adapter (a child process): with Kafka
 * unreachable (bootstrap to a closed port) /readyz answers 503 with the reason, and keeps
 * doing so; with a missing or an invalid feeds file it refuses to start (exit 2, the setting
 * named in its log); on the real broker it becomes ready once its feed has partitions. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "adapter_testutil.h"
#include "http_testutil.h"
#include "kafka_testutil.h"

static char dir[] = "/tmp/ndd-test-adapter-readiness.XXXXXX";

static void write_feeds(const char *path, const char *topic)
{
    char doc[600];
    snprintf(doc, sizeof doc,
             "{\"feeds\":[{\"name\":\"r1\",\"source_topic\":\"%s\",\"endpoints\":"
             "[{\"url\":\"http://127.0.0.1:9/in\"}]}]}",
             topic);
    assert_int_equal(atu_write_file(path, doc), 0);
}

/* Starts the adapter with bootstrap and feeds file; the pid (not waited for). */
static pid_t spawn(const char *bootstrap, const char *feeds, int port, const char *log)
{
    char bin[600], ps[16], boot[300], ff[700];
    snprintf(bin, sizeof bin, "%s/adapter/ndd-adapter", NDD_BINARY_DIR);
    snprintf(ps, sizeof ps, "%d", port);
    snprintf(boot, sizeof boot, "%s", bootstrap);
    snprintf(ff, sizeof ff, "%s", feeds);
    char *argv[] = {bin,
                    "--bootstrap",
                    boot,
                    "--feeds-file",
                    ff,
                    "--http.port",
                    ps,
                    "--events-topic=",
                    "--drain-timeout",
                    "1s",
                    NULL};
    return atu_spawn(argv, log);
}

static int readyz(int port, char *body, size_t len)
{
    htu_resp_t r;
    if (htu_request((uint16_t)port, "GET", "/readyz", NULL, NULL, 0, 2000, &r) != 0)
        return 0;
    snprintf(body, len, "%s", r.body ? r.body : "");
    int st = r.status;
    htu_resp_free(&r);
    return st;
}

/* Exit status of pid within timeout_ms; -1 when it still runs (then it is killed). */
static int exit_code(pid_t pid, int timeout_ms)
{
    int64_t end = ktu_now_ms() + timeout_ms;
    int st;
    while (ktu_now_ms() < end) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        usleep(20000);
    }
    atu_stop(pid, SIGKILL);
    return -1;
}

static void test_kafka_unreachable_keeps_readyz_503_with_the_reason(void **state)
{
    char feeds[700], log[700], body[512];
    snprintf(feeds, sizeof feeds, "%s/feeds.json", dir);
    snprintf(log, sizeof log, "%s/unreachable.log", dir);
    write_feeds(feeds, "ndd-readiness-unreachable");
    int closed = atu_free_port(20000, 30000); /* free now: nothing listens there */
    int port = atu_free_port(30001, 40000);
    char boot[64];
    snprintf(boot, sizeof boot, "127.0.0.1:%d", closed);
    pid_t pid = spawn(boot, feeds, port, log);
    assert_true(pid > 0);
    assert_true(atu_wait_port(port, 10000));
    /* Several probes over 4 s: never ready, always saying why. */
    for (int i = 0; i < 4; i++) {
        assert_int_equal(readyz(port, body, sizeof body), 503);
        assert_non_null(strstr(body, "Kafka"));
        sleep(1);
    }
    atu_stop(pid, SIGTERM);
}

static void test_missing_or_invalid_feeds_file_refuses_to_start(void **state)
{
    char feeds[700], log[700];
    int port = atu_free_port(30001, 40000);
    snprintf(feeds, sizeof feeds, "%s/missing.json", dir);
    snprintf(log, sizeof log, "%s/missing.log", dir);
    assert_int_equal(exit_code(spawn(ktu_brokers(), feeds, port, log), 5000), 2);
    assert_true(atu_count_in_file(log, "feeds-file") > 0);

    snprintf(feeds, sizeof feeds, "%s/invalid.json", dir);
    snprintf(log, sizeof log, "%s/invalid.log", dir);
    assert_int_equal(atu_write_file(feeds, "{\"feeds\":[{\"name\":\"x\"}]}"), 0);
    assert_int_equal(exit_code(spawn(ktu_brokers(), feeds, port, log), 5000), 2);
    assert_true(atu_count_in_file(log, "feeds-file") > 0);
    assert_true(atu_count_in_file(log, "feeds[0]") > 0);
}

static void test_ready_once_kafka_answered_and_the_feed_has_partitions(void **state)
{
    char topic[128], feeds[700], log[700], body[512];
    ktu_unique_name("ndd-readiness", topic, sizeof topic);
    assert_int_equal(ktu_create_topic(topic, 2), 0);
    snprintf(feeds, sizeof feeds, "%s/ready.json", dir);
    snprintf(log, sizeof log, "%s/ready.log", dir);
    write_feeds(feeds, topic);
    int port = atu_free_port(30001, 40000);
    pid_t pid = spawn(ktu_brokers(), feeds, port, log);
    assert_true(pid > 0);
    assert_true(atu_wait_port(port, 10000));
    int st = 0;
    for (int64_t end = ktu_now_ms() + 30000; ktu_now_ms() < end && st != 200; usleep(200000))
        st = readyz(port, body, sizeof body);
    assert_int_equal(st, 200);
    atu_stop(pid, SIGTERM);
    ktu_delete_topic(topic);
}

int main(void)
{
    (void)ktu_brokers();
    if (!mkdtemp(dir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kafka_unreachable_keeps_readyz_503_with_the_reason),
        cmocka_unit_test(test_missing_or_invalid_feeds_file_refuses_to_start),
        cmocka_unit_test(test_ready_once_kafka_answered_and_the_feed_has_partitions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
