/* services/kafka/kafka against the real broker (NDD_TEST_KAFKA): idempotent producer with ordered
 * delivery reports, record headers, consumer groups sharing partitions, stored-offset commit
 * semantics, bounded producer queue, admin topic creation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "kafka.h"
#include "kafka_testutil.h"

/* ---- idempotent producer ---- */

#define N_ORDERED 2000

typedef struct dr_state {
    int acked, failed, out_of_order;
    int64_t last_offset;
    int next_expected; /* records are numbered by their opaque */
    char idemp_state[32];
    long long producer_id;
} dr_state_t;

static void on_delivery(void *owner, void *msg_opaque, const rd_kafka_message_t *rkm)
{
    dr_state_t *s = owner;
    int idx = (int)(intptr_t)msg_opaque;
    if (rkm->err) {
        s->failed++;
        return;
    }
    /* One partition: acknowledgements must come back in produce order with rising offsets. */
    if (idx != s->next_expected || rkm->offset <= s->last_offset)
        s->out_of_order++;
    s->next_expected = idx + 1;
    s->last_offset = rkm->offset;
    s->acked++;
}

static void on_stats(void *owner, const char *json, size_t len)
{
    dr_state_t *s = owner;
    json_t *root = json_loadb(json, len, 0, NULL);
    json_t *eos = root ? json_object_get(root, "eos") : NULL;
    if (eos) {
        const char *st = json_string_value(json_object_get(eos, "idemp_state"));
        if (st)
            snprintf(s->idemp_state, sizeof(s->idemp_state), "%s", st);
        s->producer_id = (long long)json_integer_value(json_object_get(eos, "producer_id"));
    }
    json_decref(root);
}

static void test_idempotent_producer_gets_producer_id_and_acks_in_order(void **state)
{
    char topic[96];
    ktu_unique_name("ndd-test-idem", topic, sizeof(topic));
    assert_int_equal(ktu_create_topic(topic, 1), 0);

    dr_state_t s = {.last_offset = -1, .producer_id = -1};
    kafka_prop_t props[] = {{"statistics.interval.ms", "100"}};
    kafka_producer_opts_t o = {.brokers = ktu_brokers(),
                               .props = props,
                               .n_props = 1,
                               .on_delivery = on_delivery,
                               .on_stats = on_stats,
                               .owner = &s};
    char err[512];
    kafka_producer_t *p = kafka_producer_new(&o, err, sizeof(err));
    assert_non_null(p);
    static char values[N_ORDERED][16];
    for (int i = 0; i < N_ORDERED; i++) {
        int n = snprintf(values[i], sizeof(values[i]), "v%d", i);
        /* Borrowed values: static storage outlives the delivery callbacks. */
        assert_int_equal(kafka_produce(p, topic, RD_KAFKA_PARTITION_UA, "k", 1, values[i],
                                       (size_t)n, NULL, KAFKA_VALUE_BORROW, (void *)(intptr_t)i,
                                       NULL),
                         KAFKA_PRODUCE_OK);
        kafka_producer_poll(p, 0);
    }
    assert_int_equal(kafka_producer_flush(p, 20000), 0);
    /* Wait for a statistics report showing the idempotence state after the acks. */
    int64_t deadline = ktu_now_ms() + 5000;
    s.idemp_state[0] = '\0';
    while (ktu_now_ms() < deadline && strcmp(s.idemp_state, "Assigned") != 0)
        kafka_producer_poll(p, 50);

    char why[256];
    assert_int_equal(kafka_producer_fatal_error(p, why, sizeof(why)), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_string_equal(s.idemp_state, "Assigned");
    assert_true(s.producer_id >= 0);
    assert_int_equal(s.acked, N_ORDERED);
    assert_int_equal(s.failed, 0);
    assert_int_equal(s.out_of_order, 0);
    assert_int_equal(kafka_producer_close(p, 5000), 0);

    /* What the broker holds is the same sequence, no duplicate from retries. */
    ktu_records_t r = {0};
    assert_int_equal(ktu_consume_records(topic, N_ORDERED, 10000, &r), N_ORDERED);
    for (int i = 0; i < N_ORDERED; i++) {
        char want[16];
        snprintf(want, sizeof(want), "v%d", i);
        assert_string_equal(r.v[i].value, want);
    }
    assert_int_equal(ktu_topic_record_count(topic, 5000), N_ORDERED);
    ktu_records_free(&r);
    ktu_delete_topic(topic);
}

/* ---- headers ---- */

static void test_record_headers_round_trip_in_order_with_binary_and_null_values(void **state)
{
    char topic[96];
    ktu_unique_name("ndd-test-hdr", topic, sizeof(topic));
    assert_int_equal(ktu_create_topic(topic, 1), 0);

    kafka_producer_opts_t o = {.brokers = ktu_brokers()};
    char err[512];
    kafka_producer_t *p = kafka_producer_new(&o, err, sizeof(err));
    assert_non_null(p);
    static const char bin[] = {'a', '\0', '\xff', 'b'};
    rd_kafka_headers_t *h = rd_kafka_headers_new(6);
    rd_kafka_header_add(h, ":path", -1, "/nudm-sdm/v2/imsi-1", -1);
    rd_kafka_header_add(h, "@correlation-id", -1, "c-1", -1);
    rd_kafka_header_add(h, "x-bin", -1, bin, sizeof(bin));
    rd_kafka_header_add(h, "x-null", -1, NULL, 0);
    rd_kafka_header_add(h, "x-dup", -1, "one", -1);
    rd_kafka_header_add(h, "x-dup", -1, "two", -1);
    assert_int_equal(kafka_produce(p, topic, 0, "c-1", 3, "{}", 2, h, KAFKA_VALUE_COPY, NULL, NULL),
                     KAFKA_PRODUCE_OK);
    assert_int_equal(kafka_producer_close(p, 10000), 0);

    ktu_records_t r = {0};
    assert_int_equal(ktu_consume_records(topic, 1, 10000, &r), 1);
    assert_int_equal(r.v[0].n_headers, 6);
    const char *names[] = {":path", "@correlation-id", "x-bin", "x-null", "x-dup", "x-dup"};
    for (int i = 0; i < 6; i++)
        assert_string_equal(r.v[0].headers[i].name, names[i]);
    assert_string_equal(r.v[0].headers[0].value, "/nudm-sdm/v2/imsi-1");
    assert_int_equal(r.v[0].headers[2].value_len, sizeof(bin));
    assert_memory_equal(r.v[0].headers[2].value, bin, sizeof(bin));
    assert_null(r.v[0].headers[3].value);
    assert_string_equal(r.v[0].headers[4].value, "one");
    assert_string_equal(r.v[0].headers[5].value, "two");
    assert_string_equal(r.v[0].key, "c-1");
    ktu_records_free(&r);
    ktu_delete_topic(topic);
}

/* ---- consumer groups ---- */

#define N_GROUP 3000

typedef struct member {
    kafka_consumer_t *c;
    const char *topic;
    int assigned; /* partitions currently assigned */
    int revokes;
    int got;
} member_t;

static unsigned char seen_values[N_GROUP];
static int duplicates;

static void on_rebalance(void *owner, kafka_rebalance_kind_t kind,
                         const rd_kafka_topic_partition_list_t *parts)
{
    member_t *m = owner;
    if (kind == KAFKA_REBALANCE_ASSIGNED)
        m->assigned += parts->cnt;
    else {
        m->assigned -= parts->cnt;
        m->revokes++;
    }
}

static void member_poll(member_t *m, int timeout_ms)
{
    rd_kafka_message_t *msgs[256];
    size_t n = kafka_consumer_poll_batch(m->c, msgs, 256, timeout_ms);
    for (size_t i = 0; i < n; i++) {
        int v = atoi((const char *)msgs[i]->payload + 1);
        if (v >= 0 && v < N_GROUP) {
            if (seen_values[v])
                duplicates++;
            seen_values[v] = 1;
        }
        m->got++;
        kafka_consumer_store(m->c, m->topic, msgs[i]->partition, msgs[i]->offset + 1);
        rd_kafka_message_destroy(msgs[i]);
    }
}

static kafka_consumer_t *group_member_new(const char *topic, const char *group, member_t *m)
{
    const char *topics[] = {topic};
    kafka_prop_t props[] = {{"session.timeout.ms", "6000"}, {"heartbeat.interval.ms", "500"}};
    kafka_consumer_opts_t o = {.brokers = ktu_brokers(),
                               .group_id = group,
                               .topics = topics,
                               .n_topics = 1,
                               .props = props,
                               .n_props = 2,
                               .on_rebalance = on_rebalance,
                               .owner = m};
    char err[512];
    kafka_consumer_t *c = kafka_consumer_new(&o, err, sizeof(err));
    if (!c)
        fprintf(stderr, "%s\n", err);
    return c;
}

static void test_two_group_members_share_partitions_and_get_every_record_once(void **state)
{
    char topic[96], group[96];
    ktu_unique_name("ndd-test-grp", topic, sizeof(topic));
    ktu_unique_name("ndd-test-grp", group, sizeof(group));
    assert_int_equal(ktu_create_topic(topic, 3), 0);

    member_t a = {.topic = topic}, b = {.topic = topic};
    a.c = group_member_new(topic, group, &a);
    b.c = group_member_new(topic, group, &b);
    assert_non_null(a.c);
    assert_non_null(b.c);
    /* Both members joined and the 3 partitions are split between them before any data. */
    int64_t deadline = ktu_now_ms() + 30000;
    while (ktu_now_ms() < deadline &&
           !(a.assigned > 0 && b.assigned > 0 && a.assigned + b.assigned == 3)) {
        member_poll(&a, 50);
        member_poll(&b, 50);
    }
    assert_true(a.assigned > 0);
    assert_true(b.assigned > 0);
    assert_int_equal(a.assigned + b.assigned, 3);

    memset(seen_values, 0, sizeof(seen_values));
    duplicates = 0;
    assert_int_equal(ktu_produce_n(topic, N_GROUP, "key-", 97, "v"), 0);
    deadline = ktu_now_ms() + 30000;
    while (ktu_now_ms() < deadline && a.got + b.got < N_GROUP) {
        member_poll(&a, 20);
        member_poll(&b, 20);
    }
    assert_int_equal(a.got + b.got, N_GROUP);
    assert_int_equal(duplicates, 0);
    for (int i = 0; i < N_GROUP; i++)
        assert_true(seen_values[i]);
    assert_true(a.got > 0);
    assert_true(b.got > 0);
    kafka_consumer_close(a.c);
    kafka_consumer_close(b.c);
    ktu_delete_topic(topic);
}

/* librdkafka keeps a partition's pause flag across a revoke and a new assignment. A consumer
 * paused (a feed whose endpoints are full), then resumed while it had no partitions (between
 * the revoke and the new assignment of a rebalance), must still get records once its
 * partition comes back. Seen as an adapter feed that consumed nothing more after its session
 * timed out under load. */
static void test_resumed_while_unassigned_consumer_gets_records_after_reassignment(void **state)
{
    char topic[96], other[96], group[96];
    ktu_unique_name("ndd-test-pause", topic, sizeof(topic));
    ktu_unique_name("ndd-test-pause-other", other, sizeof(other));
    ktu_unique_name("ndd-test-pause", group, sizeof(group));
    assert_int_equal(ktu_create_topic(topic, 1), 0);
    assert_int_equal(ktu_create_topic(other, 1), 0);
    memset(seen_values, 0, sizeof(seen_values));
    duplicates = 0;
    member_t a = {.topic = topic}, b = {.topic = other};
    a.c = group_member_new(topic, group, &a);
    assert_non_null(a.c);
    int64_t deadline = ktu_now_ms() + 30000;
    while (ktu_now_ms() < deadline && a.assigned < 1)
        member_poll(&a, 50);
    assert_int_equal(a.assigned, 1);
    assert_int_equal(ktu_produce_n(topic, 100, "key-", 7, "v"), 0);
    while (ktu_now_ms() < deadline && a.got < 100)
        member_poll(&a, 50);
    assert_int_equal(a.got, 100);

    /* Paused; a second member (of another topic) joining the group makes an eager rebalance:
     * everything is revoked, then assigned again. Resumed in between, with nothing assigned. */
    assert_int_equal(kafka_consumer_pause_all(a.c), 0);
    b.c = group_member_new(other, group, &b);
    assert_non_null(b.c);
    bool resumed_unassigned = false;
    deadline = ktu_now_ms() + 30000;
    while (ktu_now_ms() < deadline && !(resumed_unassigned && a.assigned == 1)) {
        /* no wait inside the poll: the new assignment (a round trip away) comes in a later one */
        member_poll(&a, 0);
        if (a.revokes > 0 && a.assigned == 0 && !resumed_unassigned) {
            assert_int_equal(kafka_consumer_resume_all(a.c), 0);
            resumed_unassigned = true;
        }
        member_poll(&b, 5);
    }
    if (!resumed_unassigned || a.assigned != 1)
        fail_msg("rebalance not staged: %d revoke(s), %d assigned, resumed %d", a.revokes,
                 a.assigned, resumed_unassigned);

    assert_int_equal(ktu_produce_n(topic, 100, "key-", 7, "w"), 0);
    deadline = ktu_now_ms() + 15000;
    while (ktu_now_ms() < deadline && a.got < 200) {
        member_poll(&a, 50);
        member_poll(&b, 0);
    }
    if (a.got < 200)
        fail_msg("after the reassignment the consumer got %d of 100 new records", a.got - 100);
    kafka_consumer_close(a.c);
    kafka_consumer_close(b.c);
    ktu_delete_topic(topic);
    ktu_delete_topic(other);
}

/* A record whose offset was never stored is delivered again to the next member. */
static void test_unstored_offsets_are_redelivered_to_a_new_member_after_close(void **state)
{
    char topic[96], group[96];
    ktu_unique_name("ndd-test-store", topic, sizeof(topic));
    ktu_unique_name("ndd-test-store", group, sizeof(group));
    assert_int_equal(ktu_create_topic(topic, 1), 0);
    assert_int_equal(ktu_produce_n(topic, 10, "k", 1, "v"), 0);

    member_t a = {.topic = topic};
    a.c = group_member_new(topic, group, &a);
    assert_non_null(a.c);
    int got = 0;
    int64_t deadline = ktu_now_ms() + 30000;
    while (got < 10 && ktu_now_ms() < deadline) {
        rd_kafka_message_t *msgs[16];
        size_t n = kafka_consumer_poll_batch(a.c, msgs, 16, 100);
        for (size_t i = 0; i < n; i++) {
            /* Only records 0..5 are "finished": store next offset 6 at most. */
            if (msgs[i]->offset <= 5)
                assert_int_equal(
                    kafka_consumer_store(a.c, topic, msgs[i]->partition, msgs[i]->offset + 1), 0);
            got++;
            rd_kafka_message_destroy(msgs[i]);
        }
    }
    assert_int_equal(got, 10);
    kafka_consumer_close(a.c); /* commits the stored offset: 6 */

    member_t b = {.topic = topic};
    b.c = group_member_new(topic, group, &b);
    assert_non_null(b.c);
    int64_t first = -1;
    got = 0;
    deadline = ktu_now_ms() + 30000;
    while (got < 4 && ktu_now_ms() < deadline) {
        rd_kafka_message_t *msgs[16];
        size_t n = kafka_consumer_poll_batch(b.c, msgs, 16, 100);
        for (size_t i = 0; i < n; i++) {
            if (first < 0)
                first = msgs[i]->offset;
            got++;
            rd_kafka_message_destroy(msgs[i]);
        }
    }
    assert_int_equal(first, 6);
    assert_int_equal(got, 4);
    kafka_consumer_close(b.c);
    ktu_delete_topic(topic);
}

/* ---- bounded queue and close ---- */

typedef struct count_state {
    int ok, purged, other;
} count_state_t;

static void count_delivery(void *owner, void *msg_opaque, const rd_kafka_message_t *rkm)
{
    count_state_t *s = owner;
    if (!rkm->err)
        s->ok++;
    else if (rkm->err == RD_KAFKA_RESP_ERR__PURGE_QUEUE ||
             rkm->err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT)
        s->purged++;
    else
        s->other++;
}

static void test_full_producer_queue_is_reported_and_close_flushes_the_rest(void **state)
{
    char topic[96];
    ktu_unique_name("ndd-test-full", topic, sizeof(topic));
    assert_int_equal(ktu_create_topic(topic, 1), 0);
    count_state_t s = {0};
    /* A long linger keeps records queued, so the 11th finds the 10-record queue full. */
    kafka_prop_t props[] = {{"queue.buffering.max.messages", "10"}, {"linger.ms", "2000"}};
    kafka_producer_opts_t o = {.brokers = ktu_brokers(),
                               .props = props,
                               .n_props = 2,
                               .on_delivery = count_delivery,
                               .owner = &s};
    char err[512];
    kafka_producer_t *p = kafka_producer_new(&o, err, sizeof(err));
    assert_non_null(p);
    for (int i = 0; i < 10; i++)
        assert_int_equal(
            kafka_produce(p, topic, 0, "k", 1, "v", 1, NULL, KAFKA_VALUE_COPY, NULL, NULL),
            KAFKA_PRODUCE_OK);
    rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
    assert_int_equal(kafka_produce(p, topic, 0, "k", 1, "v", 1, NULL, KAFKA_VALUE_COPY, NULL, &e),
                     KAFKA_PRODUCE_FULL);
    assert_int_equal(e, RD_KAFKA_RESP_ERR__QUEUE_FULL);
    assert_int_equal(kafka_producer_outq_len(p), 10);
    /* Close flushes (linger is cut short by the flush) and every callback has run. */
    assert_int_equal(kafka_producer_close(p, 10000), 0);
    assert_int_equal(s.ok, 10);
    assert_int_equal(s.purged + s.other, 0);
    assert_int_equal(ktu_topic_record_count(topic, 5000), 10);
    ktu_delete_topic(topic);
}

static void test_producer_refuses_unknown_property_naming_it(void **state)
{
    kafka_prop_t props[] = {{"linger.msx", "5"}};
    kafka_producer_opts_t o = {.brokers = ktu_brokers(), .props = props, .n_props = 1};
    char err[512] = "";
    assert_null(kafka_producer_new(&o, err, sizeof(err)));
    assert_non_null(strstr(err, "linger.msx"));
}

/* ---- admin ---- */

static void test_admin_creates_compacted_topic_idempotently(void **state)
{
    char topic[96];
    ktu_unique_name("ndd-test-admin", topic, sizeof(topic));
    kafka_prop_t cfg[] = {{"cleanup.policy", "compact"}};
    assert_int_equal(kafka_admin_create_topic(ktu_brokers(), topic, 4, 1, cfg, 1, 15000), 0);
    /* Creating an existing topic is success: daemons call this at every start. */
    assert_int_equal(kafka_admin_create_topic(ktu_brokers(), topic, 4, 1, cfg, 1, 15000), 0);
    kafka_producer_opts_t o = {.brokers = ktu_brokers()};
    char err[512];
    kafka_producer_t *p = kafka_producer_new(&o, err, sizeof(err));
    assert_non_null(p);
    assert_int_equal(kafka_admin_partition_count(kafka_producer_handle(p), topic, 5000), 4);
    /* A compacted topic refuses records without a key: proof the config was applied. */
    count_state_t s = {0};
    kafka_producer_close(p, 1000);
    kafka_producer_opts_t o2 = {
        .brokers = ktu_brokers(), .on_delivery = count_delivery, .owner = &s};
    p = kafka_producer_new(&o2, err, sizeof(err));
    assert_non_null(p);
    assert_int_equal(
        kafka_produce(p, topic, 0, NULL, 0, "v", 1, NULL, KAFKA_VALUE_COPY, NULL, NULL),
        KAFKA_PRODUCE_OK);
    kafka_producer_flush(p, 10000);
    assert_int_equal(s.ok, 0);
    assert_int_equal(s.other, 1);
    kafka_producer_close(p, 1000);
    assert_int_equal(kafka_admin_delete_topic(ktu_brokers(), topic, 10000), 0);
}

int main(void)
{
    ktu_brokers(); /* fail at once, with the reason, when no broker is configured */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idempotent_producer_gets_producer_id_and_acks_in_order),
        cmocka_unit_test(test_record_headers_round_trip_in_order_with_binary_and_null_values),
        cmocka_unit_test(test_two_group_members_share_partitions_and_get_every_record_once),
        cmocka_unit_test(test_resumed_while_unassigned_consumer_gets_records_after_reassignment),
        cmocka_unit_test(test_unstored_offsets_are_redelivered_to_a_new_member_after_close),
        cmocka_unit_test(test_full_producer_queue_is_reported_and_close_flushes_the_rest),
        cmocka_unit_test(test_producer_refuses_unknown_property_naming_it),
        cmocka_unit_test(test_admin_creates_compacted_topic_idempotently),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
