/* The wake-up descriptor of a blocking Kafka loop (kafka_wake.h): it stays quiet while the
 * watched queues are empty, becomes readable when a delivery report is queued (a producer with
 * no broker and a short message timeout makes one without a broker), and is armed
 * again once the queue was served. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "kafka_wake.h"

static int dr_count;

static void on_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    (void)m;
    (void)opaque;
    dr_count++;
}

static rd_kafka_t *brokerless_producer(void)
{
    char err[256];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    /* No broker at all: an unreachable one would queue connection errors on the main queue
     * (which wake the descriptor too, rightly). The record times out waiting for metadata. */
    assert_int_equal(rd_kafka_conf_set(c, "message.timeout.ms", "30", err, sizeof err),
                     RD_KAFKA_CONF_OK);
    assert_int_equal(rd_kafka_conf_set(c, "log_level", "0", err, sizeof err), RD_KAFKA_CONF_OK);
    rd_kafka_conf_set_dr_msg_cb(c, on_dr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof err);
    assert_non_null(rk);
    return rk;
}

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void produce_one(rd_kafka_t *rk)
{
    assert_int_equal(rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("wake-test"),
                                       RD_KAFKA_V_VALUE((void *)"x", 1), RD_KAFKA_V_END),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
}

static void test_wait_times_out_while_the_queues_are_empty(void **state)
{
    (void)state;
    rd_kafka_t *rk = brokerless_producer();
    kafka_wake_t w;
    assert_int_equal(kafka_wake_init(&w), 0);
    assert_int_equal(kafka_wake_watch(&w, rk, false), 0);
    double t0 = mono_ms();
    assert_int_equal(kafka_wake_wait(&w, 50), 0);
    assert_true(mono_ms() - t0 >= 45);
    kafka_wake_close(&w);
    kafka_wake_close(&w); /* idempotent */
    rd_kafka_destroy(rk);
}

static void test_a_delivery_report_wakes_the_wait_and_serving_rearms_it(void **state)
{
    (void)state;
    rd_kafka_t *rk = brokerless_producer();
    kafka_wake_t w;
    assert_int_equal(kafka_wake_init(&w), 0);
    assert_int_equal(kafka_wake_watch(&w, rk, false), 0);
    dr_count = 0;
    for (int round = 1; round <= 2; round++) {
        kafka_wake_drain(&w);
        produce_one(rk);
        /* The report comes after the 30 ms message timeout (librdkafka scans about once a
         * second); the wait must end when it is queued, not at its own timeout. */
        double t0 = mono_ms();
        assert_int_equal(kafka_wake_wait(&w, 5000), 1);
        assert_true(mono_ms() - t0 < 4000);
        kafka_wake_drain(&w);
        assert_int_equal(rd_kafka_poll(rk, 0), 1);
        assert_int_equal(dr_count, round);
        assert_int_equal(kafka_wake_wait(&w, 20), 0); /* served: quiet again */
    }
    kafka_wake_close(&w);
    rd_kafka_destroy(rk);
}

static void test_watch_refuses_beyond_its_queue_limit_and_without_a_pipe(void **state)
{
    (void)state;
    rd_kafka_t *rk = brokerless_producer();
    kafka_wake_t w;
    assert_int_equal(kafka_wake_init(&w), 0);
    for (int i = 0; i < KAFKA_WAKE_MAX_QUEUES; i++)
        assert_int_equal(kafka_wake_watch(&w, rk, false), 0);
    assert_int_equal(kafka_wake_watch(&w, rk, false), -1);
    assert_int_equal(kafka_wake_watch(&w, NULL, false), -1);
    kafka_wake_close(&w);
    assert_int_equal(kafka_wake_watch(&w, rk, false), -1); /* closed: no pipe */
    rd_kafka_destroy(rk);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wait_times_out_while_the_queues_are_empty),
        cmocka_unit_test(test_a_delivery_report_wakes_the_wait_and_serving_rearms_it),
        cmocka_unit_test(test_watch_refuses_beyond_its_queue_limit_and_without_a_pipe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
