/* A consumer that librdkafka fences for good (FENCED_INSTANCE_ID, a fatal error: what a static
 * member gets when its group's coordinator dies and its session expires meanwhile) is rebuilt
 * by the consumer wrapper (kafka.c) and reads on from the group's committed offsets: the records
 * it had finished (stored, committed) are not read again, those it had not are, none is
 * skipped. The broker is librdkafka's mock cluster, whose heartbeat answers are told to fence
 * the member (a real broker stages that only with a coordinator crash: tests/fault/
 * test_fault_cluster.sh). A fenced producer is rebuilt the same way (kafka_producer_rebuild). */
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

#define TOPIC "fence.t"
#define PARTS 2
#define PER_PART 50
#define HEARTBEAT_API 12 /* Kafka protocol ApiKey of Heartbeat */

typedef struct seen {
    int reads[PARTS][PER_PART]; /* times each record was handed to the owner */
    bool finish;                /* store every record read (else only the first half) */
    int lost, before, after;    /* callbacks */
    rd_kafka_message_t *held;   /* a pending record still held when the member is fenced */
    kafka_consumer_t *c;
} seen_t;

static void on_rebalance(void *owner, kafka_rebalance_kind_t kind,
                         const rd_kafka_topic_partition_list_t *parts)
{
    seen_t *s = owner;
    (void)parts;
    if (kind == KAFKA_REBALANCE_LOST)
        s->lost++;
}

static void on_rebuild(void *owner, kafka_consumer_t *c, kafka_rebuild_phase_t phase)
{
    seen_t *s = owner;
    assert_ptr_equal(c, s->c);
    /* BEFORE: the old handle is still there; AFTER: a new, usable one. */
    assert_non_null(kafka_consumer_handle(c));
    if (phase == KAFKA_REBUILD_BEFORE) {
        s->before++;
    } else {
        s->after++;
        assert_int_equal(kafka_consumer_fatal_error(c, NULL, 0), RD_KAFKA_RESP_ERR_NO_ERROR);
    }
}

static void on_message(void *owner, rd_kafka_message_t *m)
{
    seen_t *s = owner;
    assert_true(m->partition >= 0 && m->partition < PARTS);
    assert_true(m->offset >= 0 && m->offset < PER_PART);
    s->reads[m->partition][m->offset]++;
    /* The first half of each partition is "finished" work: stored, so the auto commit and
     * kafka_consumer_commit carry it. The rest is still pending when the member is fenced. */
    if (s->finish || m->offset < PER_PART / 2)
        kafka_consumer_store(s->c, TOPIC, m->partition, m->offset + 1);
    /* A worker holds a record until its copy is acknowledged: the rebuild must not wait for
     * it (the old handle is destroyed only once it is released). */
    if (!s->held && s->after == 0 && m->offset >= PER_PART / 2) {
        s->held = m;
        return;
    }
    rd_kafka_message_destroy(m);
}

static int count_reads(const seen_t *s, int min, bool first_half)
{
    int n = 0;
    for (int p = 0; p < PARTS; p++)
        for (int o = 0; o < PER_PART; o++)
            if ((o < PER_PART / 2) == first_half && s->reads[p][o] >= min)
                n++;
    return n;
}

/* Polls until cond(s) or the deadline; true when cond held. */
static bool poll_until(seen_t *s, bool (*cond)(const seen_t *), double limit_ms)
{
    double end = kmu_now_ms() + limit_ms;
    while (!cond(s) && kmu_now_ms() < end)
        kafka_consumer_poll_each(s->c, 100, 100, on_message, s);
    return cond(s);
}

static bool all_read_once(const seen_t *s)
{
    return count_reads(s, 1, true) + count_reads(s, 1, false) == PARTS * PER_PART;
}

static bool pending_read_again(const seen_t *s)
{
    return s->after >= 1 && count_reads(s, 2, false) == PARTS * PER_PART / 2;
}

static void test_fenced_static_member_is_rebuilt_and_reads_on(void **state)
{
    (void)state;
    rd_kafka_t *holder;
    rd_kafka_mock_cluster_t *mc = kmu_mock_new(&holder, 1, TOPIC, PARTS, PER_PART);
    const char *brokers = rd_kafka_mock_cluster_bootstraps(mc);

    seen_t *s = calloc(1, sizeof *s);
    assert_non_null(s);
    const char *topics[] = {TOPIC};
    const kafka_prop_t props[] = {
        {"heartbeat.interval.ms", "100"}, {"session.timeout.ms", "6000"}, {"log_level", "0"}};
    kafka_consumer_opts_t co = {.brokers = brokers,
                                .group_id = "fence-g",
                                .topics = topics,
                                .n_topics = 1,
                                .instance_id = "fence-member-1",
                                .props = props,
                                .n_props = 3,
                                .on_rebalance = on_rebalance,
                                .on_rebuild = on_rebuild,
                                .owner = s};
    char err[512];
    s->c = kafka_consumer_new(&co, err, sizeof err);
    assert_non_null(s->c);
    assert_true(poll_until(s, all_read_once, 20000));
    assert_int_equal(kafka_consumer_commit(s->c), 0);
    assert_int_equal(s->before + s->after, 0); /* no rebuild yet */

    /* The coordinator answers the next heartbeats with FENCED_INSTANCE_ID: librdkafka raises
     * a fatal error and would never fetch again. The wrapper rebuilds the member, which reads
     * the pending half again from the committed offsets, and only that half. */
    rd_kafka_mock_push_request_errors(mc, HEARTBEAT_API, 1, RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID);
    double t0 = kmu_now_ms();
    assert_true(poll_until(s, pending_read_again, 30000));
    print_message("fenced -> rebuilt and pending records read again in %.0f ms\n",
                  kmu_now_ms() - t0);
    assert_int_equal(s->before, 1);
    assert_int_equal(s->after, 1);
    assert_true(s->lost >= 1); /* the owner dropped its pending work */
    /* Finished work is never read again; nothing is skipped. */
    assert_int_equal(count_reads(s, 2, true), 0);
    assert_int_equal(count_reads(s, 1, true), PARTS * PER_PART / 2);

    /* The record held across the rebuild is released now, after it. */
    assert_non_null(s->held);
    rd_kafka_message_destroy(s->held);
    /* The rebuilt member commits and leaves like any other. */
    s->finish = true;
    kafka_consumer_close(s->c);
    free(s);
    kmu_mock_free(mc, holder);
}

static int purged;

static void on_delivery(void *owner, void *msg_opaque, const rd_kafka_message_t *rkm)
{
    (void)owner;
    (void)msg_opaque;
    if (rkm->err == RD_KAFKA_RESP_ERR__PURGE_QUEUE ||
        rkm->err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT || rkm->err == RD_KAFKA_RESP_ERR__FATAL)
        purged++;
}

static void test_fatal_producer_is_rebuilt_and_its_queue_accounted(void **state)
{
    (void)state;
    rd_kafka_t *holder;
    rd_kafka_mock_cluster_t *mc = kmu_mock_new(&holder, 1, TOPIC, PARTS, 0);
    char err[512];
    kafka_producer_opts_t po = {.brokers = rd_kafka_mock_cluster_bootstraps(mc),
                                .on_delivery = on_delivery};
    kafka_producer_t *p = kafka_producer_new(&po, err, sizeof err);
    assert_non_null(p);
    rd_kafka_t *old = kafka_producer_handle(p);
    /* Fenced before anything was sent: every queued record comes back to its owner. */
    rd_kafka_mock_broker_set_down(mc, 1);
    for (int i = 0; i < 10; i++)
        assert_int_equal(
            kafka_produce(p, TOPIC, 0, NULL, 0, "x", 1, NULL, KAFKA_VALUE_COPY, NULL, NULL),
            KAFKA_PRODUCE_OK);
    assert_int_equal(rd_kafka_test_fatal_error(old, RD_KAFKA_RESP_ERR_PRODUCER_FENCED, "fenced"),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_not_equal(kafka_producer_fatal_error(p, err, sizeof err), 0);
    assert_int_equal(kafka_producer_rebuild(p), 0);
    assert_int_equal(purged, 10);
    assert_int_equal(kafka_producer_fatal_error(p, err, sizeof err), 0);
    rd_kafka_mock_broker_set_up(mc, 1);
    assert_int_equal(
        kafka_produce(p, TOPIC, 0, NULL, 0, "y", 1, NULL, KAFKA_VALUE_COPY, NULL, NULL),
        KAFKA_PRODUCE_OK);
    assert_int_equal(kafka_producer_flush(p, 10000), 0);
    assert_int_equal(kafka_producer_close(p, 1000), 0);
    kmu_mock_free(mc, holder);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fenced_static_member_is_rebuilt_and_reads_on),
        cmocka_unit_test(test_fatal_producer_is_rebuilt_and_its_queue_accounted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
