/* The helpers the daemons share: pass-through property routing, consumer lag from the
 * statistics JSON, the produce-stall watch of the control path, and the static group member id. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "kafka.h"
#include "worker_control.h"

static const kafka_prop_t props[] = {
    {"security.protocol", "ssl"},
    {"consumer.fetch.max.bytes", "1048576"},
    {"producer.linger.ms", "20"},
    {"statistics.interval.ms", "1000"},
};
#define N_PROPS (sizeof(props) / sizeof(props[0]))

static void test_props_split_routes_prefixed_keys_to_their_client_only(void **state)
{
    (void)state;
    kafka_prop_t out[N_PROPS];
    size_t n = kafka_props_split(props, N_PROPS, KAFKA_CLIENT_PRODUCER, out);
    assert_int_equal(n, 3);
    assert_string_equal(out[0].key, "security.protocol");
    assert_string_equal(out[1].key, "linger.ms");
    assert_string_equal(out[1].value, "20");
    assert_string_equal(out[2].key, "statistics.interval.ms");

    n = kafka_props_split(props, N_PROPS, KAFKA_CLIENT_CONSUMER, out);
    assert_int_equal(n, 3);
    assert_string_equal(out[0].key, "security.protocol");
    assert_string_equal(out[1].key, "fetch.max.bytes");
    assert_string_equal(out[1].value, "1048576");
    assert_string_equal(out[2].key, "statistics.interval.ms");
}

static void test_props_split_routes_unprefixed_client_specific_keys_by_name(void **state)
{
    (void)state;
    const kafka_prop_t in[] = {
        {"fetch.wait.max.ms", "10"},
        {"linger.ms", "20"},
        {"max.in.flight", "1"},
        {"socket.timeout.ms", "5000"},
        {"queued.max.messages.kbytes", "2048"},
        {"producer.fetch.wait.max.ms", "7"},
    };
    kafka_prop_t out[6];
    size_t n = kafka_props_split(in, 6, KAFKA_CLIENT_CONSUMER, out);
    assert_int_equal(n, 4); /* max.in.flight is a generic ("*") property: both */
    assert_string_equal(out[0].key, "fetch.wait.max.ms");
    assert_string_equal(out[1].key, "max.in.flight");
    assert_string_equal(out[2].key, "socket.timeout.ms");
    assert_string_equal(out[3].key, "queued.max.messages.kbytes");
    n = kafka_props_split(in, 6, KAFKA_CLIENT_PRODUCER, out);
    assert_int_equal(n, 4);
    assert_string_equal(out[0].key, "linger.ms");
    assert_string_equal(out[1].key, "max.in.flight");
    assert_string_equal(out[2].key, "socket.timeout.ms");
    /* An explicit prefix is trusted even for a name of the other kind. */
    assert_string_equal(out[3].key, "fetch.wait.max.ms");
    assert_string_equal(out[3].value, "7");
}

static void test_stats_consumer_lag_sums_topic_partitions_without_the_unassigned_one(void **state)
{
    (void)state;
    const char *json = "{\"topics\":{\"SCP\":{\"partitions\":{"
                       "\"0\":{\"consumer_lag\":5},\"1\":{\"consumer_lag\":7},"
                       "\"2\":{\"consumer_lag\":-1},\"-1\":{\"consumer_lag\":1000}}},"
                       "\"MAIN\":{\"partitions\":{\"0\":{\"consumer_lag\":99}}}}}";
    assert_int_equal(kafka_stats_consumer_lag(json, strlen(json), "SCP"), 12);
    assert_int_equal(kafka_stats_consumer_lag(json, strlen(json), "MAIN"), 99);
    assert_int_equal(kafka_stats_consumer_lag(json, strlen(json), "NRF"), 0);
    assert_int_equal(kafka_stats_consumer_lag("{not json", 9, "SCP"), -1);
}

static void test_stall_counts_from_the_last_acknowledgement_while_records_wait(void **state)
{
    (void)state;
    worker_control_stall_t s = {0};
    assert_true(worker_control_stall_due(&s, 1000));
    assert_false(worker_control_stall_due(&s, 1500)); /* once a second */
    assert_true(worker_control_stall_due(&s, 2000));
    /* Records in flight from t=1000; no acknowledgement after that. */
    assert_int_equal(worker_control_stall_ms(&s, 1000, 0, 3), 0);
    assert_int_equal(worker_control_stall_ms(&s, 2000, 0, 3), 1000);
    assert_int_equal(worker_control_stall_ms(&s, 5000, 0, 3), 4000);
    /* An acknowledgement is progress. */
    assert_int_equal(worker_control_stall_ms(&s, 6000, 2, 1), 0);
    assert_int_equal(worker_control_stall_ms(&s, 7000, 2, 1), 1000);
    /* Nothing in flight: no stall, whatever the time since the last acknowledgement. */
    assert_int_equal(worker_control_stall_ms(&s, 9000, 2, 0), 0);
}

static void test_group_instance_id_is_the_named_instance_with_its_qualifier(void **state)
{
    (void)state;
    char id[128];
    assert_string_equal(
        kafka_group_instance_id(id, sizeof id, "agg-1", "ndd-aggregation", "SCP", NULL, 9100),
        "agg-1-SCP");
    assert_string_equal(
        kafka_group_instance_id(id, sizeof id, "ada-0", "ndd-adapter", NULL, NULL, 0), "ada-0");
}

static void test_group_instance_id_without_instance_names_host_service_and_fixed_port(void **state)
{
    (void)state;
    char id[512], want[512], host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    snprintf(want, sizeof want, "%s-ndd-adapter-feed-a-9102", host);
    assert_string_equal(
        kafka_group_instance_id(id, sizeof id, NULL, "ndd-adapter", "feed-a", NULL, 9102), want);
    /* Another replica on the same host has another port: another id. */
    snprintf(want, sizeof want, "%s-ndd-adapter-feed-a-9103", host);
    assert_string_equal(
        kafka_group_instance_id(id, sizeof id, "", "ndd-adapter", "feed-a", NULL, 9103), want);
}

/* The topic read is part of the id: a member rejoining a stable group under the same id gets
 * its old assignment back, so a consumer moved to another topic must come back as another
 * member. The hash is FNV-1a of the topic name, so the id is the same in every release. */
static void test_group_instance_id_names_a_hash_of_the_topic_read(void **state)
{
    (void)state;
    char id[512], id2[512], want[512], host[256] = "localhost";
    assert_string_equal(
        kafka_group_instance_id(id, sizeof id, "agg-1", "ndd-aggregation", "SCP", "SCP", 9100),
        "agg-1-SCP-t48f27859");
    assert_string_equal(
        kafka_group_instance_id(id, sizeof id, "corr-0", "ndd-correlation", NULL, "MAIN", 0),
        "corr-0-t96272888");
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    snprintf(want, sizeof want, "%s-ndd-adapter-feed-a-t48f27859-9102", host);
    assert_string_equal(
        kafka_group_instance_id(id, sizeof id, NULL, "ndd-adapter", "feed-a", "SCP", 9102), want);
    kafka_group_instance_id(id, sizeof id, "a", "ndd-adapter", "feed-a", "SCP", 0);
    kafka_group_instance_id(id2, sizeof id2, "a", "ndd-adapter", "feed-a", "SCP2", 0);
    assert_string_not_equal(id, id2);
    /* No topic: no part for it (a transactional id must not change with the topic). */
    assert_string_equal(kafka_group_instance_id(id, sizeof id, "a", "ndd-adapter", "f", "", 0),
                        "a-f");
}

static void test_group_instance_id_is_none_without_instance_or_fixed_port(void **state)
{
    (void)state;
    char id[128];
    /* Ephemeral or no HTTP port: nothing stable and unique per replica, dynamic membership. */
    assert_null(kafka_group_instance_id(id, sizeof id, NULL, "ndd-aggregation", "SCP", NULL, 0));
    assert_null(kafka_group_instance_id(id, sizeof id, NULL, "ndd-aggregation", "SCP", NULL, -1));
    /* Truncated, two replicas' ids could collide: none rather than a shared one. */
    assert_null(
        kafka_group_instance_id(id, 8, "a-long-instance-name", "ndd-adapter", "f", NULL, 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_props_split_routes_prefixed_keys_to_their_client_only),
        cmocka_unit_test(test_props_split_routes_unprefixed_client_specific_keys_by_name),
        cmocka_unit_test(test_stats_consumer_lag_sums_topic_partitions_without_the_unassigned_one),
        cmocka_unit_test(test_stall_counts_from_the_last_acknowledgement_while_records_wait),
        cmocka_unit_test(test_group_instance_id_is_the_named_instance_with_its_qualifier),
        cmocka_unit_test(test_group_instance_id_without_instance_names_host_service_and_fixed_port),
        cmocka_unit_test(test_group_instance_id_names_a_hash_of_the_topic_read),
        cmocka_unit_test(test_group_instance_id_is_none_without_instance_or_fixed_port),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
