/* The ndd.config follower against the real broker (NDD_TEST_KAFKA): records already in a
 * compacted topic arrive as one initial load (last version per key, tombstoned keys absent,
 * other kinds skipped), then live upserts and deletes arrive in order; a topic that does not
 * exist yet gives an empty initial load and is followed once created; the eventfd drives a
 * libevent loop. Every topic has a unique name and is deleted afterwards. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/event.h>

#include "config_topic.h"
#include "config_topic_testutil.h"
#include "kafka_testutil.h"
#include "log.h"
#include "metrics.h"

#define WAIT_MS 30000

typedef struct seen {
    char lines[256][128];
    size_t n;
    size_t loaded_keys;
    bool loaded;
} seen_t;

static void seen_add(seen_t *s, const char *line)
{
    if (s->n < 256)
        snprintf(s->lines[s->n], sizeof(s->lines[0]), "%s", line);
    s->n++;
}

static void on_upsert(void *owner, const char *kind, const char *id, json_t *rec, json_t *prev)
{
    char line[128];
    snprintf(line, sizeof(line), "U %s/%s %s v%lld", kind, id,
             json_string_value(json_object_get(rec, "name")),
             (long long)json_integer_value(json_object_get(rec, "version")));
    seen_add(owner, line);
}

static void on_delete(void *owner, const char *kind, const char *id, json_t *prev)
{
    char line[128];
    snprintf(line, sizeof(line), "D %s/%s %s", kind, id,
             json_string_value(json_object_get(prev, "name")));
    seen_add(owner, line);
}

static void on_loaded(void *owner, size_t keys)
{
    seen_t *s = owner;
    s->loaded = true;
    s->loaded_keys = keys;
    seen_add(owner, "L");
}

static void produce_record(rd_kafka_t *p, const char *topic, const char *kind, const char *id,
                           const char *name, int version)
{
    char key[128], value[512];
    snprintf(key, sizeof(key), "%s/%s", kind, id);
    snprintf(value, sizeof(value),
             "{\"id\":\"%s\",\"kind\":\"%s\",\"name\":\"%s\",\"spec\":{\"name\":\"%s\"},"
             "\"updated_at\":\"2026-11-30T07:00:00.000000Z\",\"version\":%d}",
             id, kind, name, name, version);
    assert_int_equal(ktu_produce(p, topic, -1, key, strlen(key), value, strlen(value), NULL, 0), 0);
}

static void produce_tombstone(rd_kafka_t *p, const char *topic, const char *kind, const char *id)
{
    char key[128];
    snprintf(key, sizeof(key), "%s/%s", kind, id);
    assert_int_equal(ktu_produce(p, topic, -1, key, strlen(key), NULL, 0, NULL, 0), 0);
}

static config_topic_t *follower_new(const char *topic, seen_t *seen, metrics_registry_t *reg)
{
    static const char *const kinds[] = {"feed", "filter"};
    config_topic_opts_t o = {.brokers = ktu_brokers(),
                             .topic = topic,
                             .kinds = kinds,
                             .n_kinds = 2,
                             .on_upsert = on_upsert,
                             .on_delete = on_delete,
                             .on_loaded = on_loaded,
                             .owner = seen,
                             .metrics = reg};
    char err[256];
    config_topic_t *ft = config_topic_new(&o, err, sizeof(err));
    if (!ft)
        fail_msg("config_topic_new: %s", err);
    return ft;
}

/* Polls until `n` callback lines were seen or WAIT_MS passed. */
static void poll_until(config_topic_t *ft, seen_t *seen, size_t n)
{
    int64_t deadline = ktu_now_ms() + WAIT_MS;
    while (seen->n < n && ktu_now_ms() < deadline)
        config_topic_poll(ft, 100);
    if (seen->n < n)
        fail_msg("saw %zu callbacks within %d ms, expected %zu", seen->n, WAIT_MS, n);
}

static bool seen_has(const seen_t *s, const char *line)
{
    for (size_t i = 0; i < s->n && i < 256; i++)
        if (strcmp(s->lines[i], line) == 0)
            return true;
    return false;
}

static void test_follower_loads_existing_state_then_follows_live_changes_in_order(void **state)
{
    char topic[96];
    ktu_unique_name("ndd-config-test", topic, sizeof(topic));
    const char *cfg[] = {"cleanup.policy=compact"};
    /* Three partitions: some stay empty, and the load must still see each one's end. */
    assert_int_equal(ktu_create_topic_cfg(topic, 3, cfg, 1), 0);
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    /* Existing state: 50 versions of feed/a, a filter, a feed deleted again, a source
     * (not a kind of interest) and a record of feed/c that is not valid. */
    for (int v = 1; v <= 50; v++)
        produce_record(p, topic, "feed", "a", v < 50 ? "probe-old" : "probe-1", v);
    produce_record(p, topic, "filter", "f", "scp-only", 2);
    produce_record(p, topic, "feed", "b", "gone", 1);
    produce_tombstone(p, topic, "feed", "b");
    produce_record(p, topic, "source", "s", "SCP", 1);
    assert_int_equal(ktu_produce(p, topic, -1, "feed/c", 6, "{oops", 5, NULL, 0), 0);
    assert_int_equal(ktu_flush(p, 10000), 0);

    metrics_registry_t *reg = metrics_registry_new();
    seen_t seen = {0};
    config_topic_t *ft = follower_new(topic, &seen, reg);
    int64_t t0 = ktu_now_ms();
    assert_int_equal(cttu_wait_loaded(ft, WAIT_MS), 0);
    int64_t load_ms = ktu_now_ms() - t0;
    assert_true(seen.loaded);
    assert_int_equal(seen.loaded_keys, 2);
    assert_int_equal(seen.n, 3);
    assert_true(seen_has(&seen, "U feed/a probe-1 v50"));
    assert_true(seen_has(&seen, "U filter/f scp-only v2"));
    assert_string_equal(seen.lines[2], "L");
    config_topic_stats_t st = config_topic_stats(ft);
    assert_int_equal(st.partitions, 3);
    assert_int_equal(st.results[CONFIG_TOPIC_IGNORED], 1);
    assert_int_equal(st.results[CONFIG_TOPIC_INVALID], 1);
    assert_int_equal(st.results[CONFIG_TOPIC_DELETE], 1);
    print_message("initial load of 55 records in 3 partitions: %lld ms\n", (long long)load_ms);

    /* Live: an update, a new feed, a rename, a delete, an unchanged republish. All to one key
     * or another, in this order per key. */
    produce_record(p, topic, "feed", "a", "probe-1", 51);
    produce_record(p, topic, "feed", "d", "probe-2", 1);
    produce_record(p, topic, "feed", "d", "probe-2-renamed", 2);
    produce_record(p, topic, "feed", "d", "probe-2-renamed", 2); /* unchanged */
    produce_tombstone(p, topic, "feed", "a");
    produce_record(p, topic, "source", "s", "SCP", 2); /* ignored */
    assert_int_equal(ktu_flush(p, 10000), 0);
    int64_t t1 = ktu_now_ms();
    poll_until(ft, &seen, 7);
    print_message("live changes seen %lld ms after the flush\n", (long long)(ktu_now_ms() - t1));
    /* Per key, the order of the topic. */
    size_t ia = 0, ia_del = 0, id1 = 0, id2 = 0;
    for (size_t i = 3; i < seen.n; i++) {
        if (strcmp(seen.lines[i], "U feed/a probe-1 v51") == 0)
            ia = i;
        else if (strcmp(seen.lines[i], "D feed/a probe-1") == 0)
            ia_del = i;
        else if (strcmp(seen.lines[i], "U feed/d probe-2 v1") == 0)
            id1 = i;
        else if (strcmp(seen.lines[i], "U feed/d probe-2-renamed v2") == 0)
            id2 = i;
        else
            fail_msg("unexpected callback \"%s\"", seen.lines[i]);
    }
    assert_true(ia && ia_del && ia < ia_del);
    assert_true(id1 && id2 && id1 < id2);
    /* Nothing more arrives (the unchanged republish and the source called nothing). */
    config_topic_poll(ft, 500);
    assert_int_equal(seen.n, 7);
    assert_null(cttu_held(ft, "feed", "a"));
    assert_non_null(cttu_held(ft, "feed", "d"));

    config_topic_free(ft);
    metrics_registry_free(reg);
    rd_kafka_destroy(p);
    ktu_delete_topic(topic);
}

static void test_follower_of_missing_topic_loads_empty_and_follows_it_once_created(void **state)
{
    char topic[96];
    ktu_unique_name("ndd-config-test-late", topic, sizeof(topic));
    metrics_registry_t *reg = metrics_registry_new();
    seen_t seen = {0};
    config_topic_t *ft = follower_new(topic, &seen, reg);
    assert_int_equal(cttu_wait_loaded(ft, WAIT_MS), 0);
    assert_int_equal(seen.n, 1);
    assert_int_equal(seen.loaded_keys, 0);

    const char *cfg[] = {"cleanup.policy=compact"};
    assert_int_equal(ktu_create_topic_cfg(topic, 1, cfg, 1), 0);
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    produce_record(p, topic, "filter", "x", "late-filter", 1);
    assert_int_equal(ktu_flush(p, 10000), 0);
    poll_until(ft, &seen, 2);
    assert_string_equal(seen.lines[1], "U filter/x late-filter v1");

    config_topic_free(ft);
    metrics_registry_free(reg);
    rd_kafka_destroy(p);
    ktu_delete_topic(topic);
}

typedef struct loop_ctx {
    config_topic_t *ft;
    seen_t *seen;
    struct event_base *base;
    size_t want;
    int wakeups;
} loop_ctx_t;

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
    loop_ctx_t *c = arg;
    c->wakeups++;
    config_topic_poll(c->ft, 0);
    if (c->seen->n >= c->want)
        event_base_loopbreak(c->base);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
    event_base_loopbreak(arg);
}

static void run_loop(loop_ctx_t *c, size_t want)
{
    c->want = want;
    struct event *t = evtimer_new(c->base, on_timeout, c->base);
    struct timeval tv = {WAIT_MS / 1000, 0};
    evtimer_add(t, &tv);
    event_base_dispatch(c->base);
    event_free(t);
    if (c->seen->n < want)
        fail_msg("libevent loop saw %zu callbacks, expected %zu", c->seen->n, want);
}

static void test_eventfd_drives_a_libevent_loop_through_load_and_live_records(void **state)
{
    char topic[96];
    ktu_unique_name("ndd-config-test-ev", topic, sizeof(topic));
    const char *cfg[] = {"cleanup.policy=compact"};
    assert_int_equal(ktu_create_topic_cfg(topic, 1, cfg, 1), 0);
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    /* More records than one poll takes: the fd must stay readable until all are read. */
    for (int i = 0; i < CONFIG_TOPIC_POLL_MAX + 500; i++) {
        char id[32];
        snprintf(id, sizeof(id), "k%d", i % 40);
        produce_record(p, topic, "feed", id, "n", i);
    }
    assert_int_equal(ktu_flush(p, 20000), 0);

    metrics_registry_t *reg = metrics_registry_new();
    seen_t seen = {0};
    config_topic_t *ft = follower_new(topic, &seen, reg);
    assert_true(config_topic_fd(ft) >= 0);
    loop_ctx_t c = {.ft = ft, .seen = &seen, .base = event_base_new()};
    struct event *ev =
        event_new(c.base, config_topic_fd(ft), EV_READ | EV_PERSIST, on_readable, &c);
    event_add(ev, NULL);
    run_loop(&c, 41); /* 40 keys and "L" */
    assert_true(seen.loaded);
    assert_int_equal(seen.loaded_keys, 40);
    /* Last versions: i = 1499 is key k19, and k39's last is 1479. */
    assert_true(seen_has(&seen, "U feed/k19 n v1499"));
    assert_true(seen_has(&seen, "U feed/k39 n v1479"));

    produce_record(p, topic, "filter", "live", "via-fd", 1);
    assert_int_equal(ktu_flush(p, 10000), 0);
    run_loop(&c, 42);
    assert_string_equal(seen.lines[41], "U filter/live via-fd v1");
    print_message("libevent wakeups: %d\n", c.wakeups);

    event_free(ev);
    event_base_free(c.base);
    config_topic_free(ft);
    metrics_registry_free(reg);
    rd_kafka_destroy(p);
    ktu_delete_topic(topic);
}

int main(void)
{
    ktu_brokers(); /* fails (not skips) without NDD_TEST_KAFKA */
    log_setup("test_config_topic_kafka", LOG_LEVEL_WARN, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_follower_loads_existing_state_then_follows_live_changes_in_order),
        cmocka_unit_test(test_follower_of_missing_topic_loads_empty_and_follows_it_once_created),
        cmocka_unit_test(test_eventfd_drives_a_libevent_loop_through_load_and_live_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
