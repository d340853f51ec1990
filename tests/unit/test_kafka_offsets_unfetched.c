/* A consumer whose committed offsets could not be fetched for its whole assignment (the
 * coordinator answered OffsetFetch with a request-level NOT_COORDINATOR, as after a broker
 * freeze moved it) would never fetch those partitions in librdkafka 2.0.2 (upstream issue
 * #5586): the wrapper (kafka.c) rebuilds it, and the new member reads every record. The broker
 * is librdkafka's mock cluster, told to refuse the first OffsetFetch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "kafka.h"
#include "kafka_mock_testutil.h"

#define TOPIC "unfetched.t"
#define N 30
#define API_OFFSET_FETCH 9 /* Kafka protocol ApiKey */

typedef struct seen {
    int reads[N];
    int lost;
    int rebuilt; /* on_rebuild AFTER calls: how the owner learns of a new handle */
} seen_t;

static void on_rebalance(void *owner, kafka_rebalance_kind_t kind,
                         const rd_kafka_topic_partition_list_t *parts)
{
    (void)parts;
    if (kind == KAFKA_REBALANCE_LOST)
        ((seen_t *)owner)->lost++;
}

static void on_rebuild(void *owner, kafka_consumer_t *c, kafka_rebuild_phase_t phase)
{
    (void)c;
    if (phase == KAFKA_REBUILD_AFTER)
        ((seen_t *)owner)->rebuilt++;
}

static void on_message(void *owner, rd_kafka_message_t *m)
{
    seen_t *s = owner;
    if (m->offset >= 0 && m->offset < N)
        s->reads[m->offset]++;
    rd_kafka_message_destroy(m);
}

static int count_read(const seen_t *s)
{
    int n = 0;
    for (int i = 0; i < N; i++)
        n += s->reads[i] > 0;
    return n;
}

static void test_unfetched_offsets_rebuild_the_consumer_which_reads_on(void **state)
{
    (void)state;
    char err[512];
    rd_kafka_t *holder;
    rd_kafka_mock_cluster_t *mc = kmu_mock_new(&holder, 1, TOPIC, 1, N);
    const char *brokers = rd_kafka_mock_cluster_bootstraps(mc);

    /* the first OffsetFetch fails as a whole */
    rd_kafka_mock_push_request_errors(mc, API_OFFSET_FETCH, 1, RD_KAFKA_RESP_ERR_NOT_COORDINATOR);
    seen_t s = {0};
    const char *topics[] = {TOPIC};
    /* a short session: the rebuilt member waits for the old one's to end before it is given
     * the partition (the old handle leaves no LeaveGroup) */
    const kafka_prop_t props[] = {
        {"log_level", "0"}, {"session.timeout.ms", "6000"}, {"heartbeat.interval.ms", "500"}};
    kafka_consumer_opts_t co = {.brokers = brokers,
                                .group_id = "unfetched-g",
                                .topics = topics,
                                .n_topics = 1,
                                .props = props,
                                .n_props = 3,
                                .on_rebalance = on_rebalance,
                                .on_rebuild = on_rebuild,
                                .owner = &s};
    kafka_consumer_t *c = kafka_consumer_new(&co, err, sizeof err);
    assert_non_null(c);
    double t0 = kmu_now_ms(), end = t0 + 30000;
    while (count_read(&s) < N && kmu_now_ms() < end)
        kafka_consumer_poll_each(c, 100, 100, on_message, &s);
    print_message("all %d records read in %.0f ms, %d rebuild(s)\n", count_read(&s),
                  kmu_now_ms() - t0, s.rebuilt);
    assert_int_equal(count_read(&s), N);
    assert_int_equal(s.rebuilt, 1);
    kafka_consumer_close(c);
    kmu_mock_free(mc, holder);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unfetched_offsets_rebuild_the_consumer_which_reads_on),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
