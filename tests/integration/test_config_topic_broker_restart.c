/* The control path across a broker restart, on a private broker of this test (started with
 * deploy/local/stack.sh on free ports, stopped and removed at the end; the shared broker is
 * never touched): while the broker is down the follower keeps its state and the publisher
 * never blocks; once it is back, both carry on without being recreated: the follower sees a
 * record produced after the restart, the publisher's heartbeats are acknowledged again and a
 * raise made during the outage is delivered. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config_topic.h"
#include "config_topic_testutil.h"
#include "events.h"
#include "kafka.h"
#include "kafka_testutil.h"
#include "log.h"
#include "metrics.h"

#define WAIT_MS 60000

static char stack_dir[128];
static char stack_args[256];
static char brokers[64];

static int stack(const char *cmd)
{
    char line[1024];
    snprintf(line, sizeof(line), "'%s/deploy/local/stack.sh' %s %s --no-pg >/dev/null 2>&1",
             NDD_SOURCE_DIR, cmd, stack_args);
    return system(line);
}

static int setup(void **state)
{
    char line[512];
    snprintf(line, sizeof(line), "'%s/deploy/local/stack.sh' free-ports 2", NDD_SOURCE_DIR);
    FILE *f = popen(line, "r");
    int kport = 0, cport = 0;
    if (!f || fscanf(f, "%d %d", &kport, &cport) != 2) {
        if (f)
            pclose(f);
        fprintf(stderr, "stack.sh free-ports gave no ports\n");
        return -1;
    }
    pclose(f);
    snprintf(stack_dir, sizeof(stack_dir), "/tmp/ndd-cfgrestart.XXXXXX");
    if (!mkdtemp(stack_dir))
        return -1;
    snprintf(stack_args, sizeof(stack_args), "--dir '%s' --kafka-port %d --controller-port %d",
             stack_dir, kport, cport);
    snprintf(brokers, sizeof(brokers), "127.0.0.1:%d", kport);
    if (stack("start") != 0) {
        fprintf(stderr, "could not start a private broker (deploy/local/stack.sh start %s)\n",
                stack_args);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    stack("stop");
    char line[256];
    snprintf(line, sizeof(line), "rm -rf '%s'", stack_dir);
    return system(line) == 0 ? 0 : -1;
}

typedef struct seen {
    int upserts, deletes;
    char last[128];
} seen_t;

static void on_upsert(void *owner, const char *kind, const char *id, json_t *rec, json_t *prev)
{
    seen_t *s = owner;
    s->upserts++;
    snprintf(s->last, sizeof(s->last), "U %s/%s", kind, id);
}

static void on_delete(void *owner, const char *kind, const char *id, json_t *prev)
{
    seen_t *s = owner;
    s->deletes++;
    snprintf(s->last, sizeof(s->last), "D %s/%s", kind, id);
}

static int produce(const char *topic, const char *key, const char *value)
{
    kafka_producer_opts_t po = {.brokers = brokers};
    char err[256];
    kafka_producer_t *p = kafka_producer_new(&po, err, sizeof(err));
    if (!p)
        return -1;
    kafka_produce_result_t r =
        kafka_produce(p, topic, RD_KAFKA_PARTITION_UA, key, strlen(key), value,
                      value ? strlen(value) : 0, NULL, KAFKA_VALUE_COPY, NULL, NULL);
    int left = kafka_producer_flush(p, 30000);
    kafka_producer_close(p, 0);
    return r == KAFKA_PRODUCE_OK && left == 0 ? 0 : -1;
}

static void test_follower_and_publisher_carry_on_after_the_broker_restarts(void **state)
{
    const char *topic = "ndd.config";
    const kafka_prop_t compact[] = {{"cleanup.policy", "compact"}};
    assert_int_equal(kafka_admin_create_topic(brokers, topic, 1, 1, compact, 1, 30000), 0);
    assert_int_equal(kafka_admin_create_topic(brokers, "ndd.events", 1, 1, NULL, 0, 30000), 0);
    assert_int_equal(produce(topic, "feed/a",
                             "{\"kind\":\"feed\",\"id\":\"a\",\"name\":\"probe-1\",\"version\":1,"
                             "\"spec\":{\"name\":\"probe-1\"}}"),
                     0);

    metrics_registry_t *reg = metrics_registry_new();
    seen_t seen = {0};
    config_topic_opts_t co = {.brokers = brokers,
                              .on_upsert = on_upsert,
                              .on_delete = on_delete,
                              .owner = &seen,
                              .metrics = reg};
    char err[256];
    config_topic_t *ft = config_topic_new(&co, err, sizeof(err));
    assert_non_null(ft);
    assert_int_equal(cttu_wait_loaded(ft, WAIT_MS), 0);
    assert_int_equal(seen.upserts, 1);

    events_opts_t eo = {.brokers = brokers,
                        .service = "ndd-test",
                        .instance = "restart",
                        .interval_ms = 200,
                        .metrics = reg};
    events_t *ev = events_new(&eo, err, sizeof(err));
    assert_non_null(ev);
    int64_t deadline = ktu_now_ms() + WAIT_MS;
    while (events_stats(ev).heartbeats_acked < 1 && ktu_now_ms() < deadline) {
        events_tick(ev);
        config_topic_poll(ft, 20);
    }
    assert_true(events_stats(ev).heartbeats_acked >= 1);

    /* Broker down: both keep going, the state stays. */
    assert_int_equal(stack("stop"), 0);
    int64_t outage_end = ktu_now_ms() + 3000;
    int64_t worst_us = 0;
    bool raised = false;
    while (ktu_now_ms() < outage_end) {
        int64_t t = ktu_now_ms() * 1000;
        events_tick(ev);
        if (!raised) {
            assert_int_equal(events_alarm_raise(ev, "during-outage", "r", EVENTS_MAJOR, "t"), 0);
            raised = true;
        }
        int64_t us = ktu_now_ms() * 1000 - t;
        if (us > worst_us)
            worst_us = us;
        config_topic_poll(ft, 20);
    }
    assert_non_null(cttu_held(ft, "feed", "a"));
    uint64_t acked_before = events_stats(ev).heartbeats_acked;
    print_message("outage: slowest events_tick ~%lld us, follower keeps %zu key(s)\n",
                  (long long)worst_us, config_topic_stats(ft).keys);
    assert_true(worst_us < 100000);

    /* Back: a change made after the restart reaches the same follower. */
    assert_int_equal(stack("start"), 0);
    int64_t back = ktu_now_ms();
    assert_int_equal(produce(topic, "feed/a", NULL), 0);
    deadline = ktu_now_ms() + WAIT_MS;
    while ((seen.deletes < 1 || events_stats(ev).heartbeats_acked <= acked_before ||
            events_stats(ev).alarms_acked < 1) &&
           ktu_now_ms() < deadline) {
        events_tick(ev);
        config_topic_poll(ft, 20);
    }
    print_message("after restart: delete seen, heartbeat and alarm acknowledged within %lld ms\n",
                  (long long)(ktu_now_ms() - back));
    assert_int_equal(seen.deletes, 1);
    assert_string_equal(seen.last, "D feed/a");
    assert_true(events_stats(ev).heartbeats_acked > acked_before);
    assert_true(events_stats(ev).alarms_acked >= 1);

    events_free(ev, 1000);
    config_topic_free(ft);
    metrics_registry_free(reg);
}

int main(void)
{
    log_setup("test_config_topic_broker_restart", LOG_LEVEL_ERROR, 0);
    log_set_stream(fopen("/dev/null", "w"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_follower_and_publisher_carry_on_after_the_broker_restarts),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
