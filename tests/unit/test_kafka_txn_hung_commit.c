/* A transaction commit whose coordinator does not answer (librdkafka 2.0.2's
 * send_offsets_to_transaction then ignores its timeout: upstream issues #5456, #5511) costs the
 * worker at most the pair's bound: kafka_txn_pair_commit returns "rebuild" in time, the pair is
 * rebuilt with the stuck producer handle set aside (destroyed once its call returns, off the
 * worker's thread), the owner is told its partitions are lost, and the records of the
 * unfinished transaction are read again from the committed offsets and committed once.
 *
 * The cluster is librdkafka's mock, whose coordinator is told to answer TxnOffsetCommit 8 s
 * late (a real broker cannot hang on demand). The mock stores no offsets for a transaction
 * (its TxnOffsetCommit and EndTxn only answer): the test commits each committed transaction's
 * offsets to the group itself, as a broker does when the transaction commits. */
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
#include "kafka_txn.h"
#include "metrics.h"

#define IN "txnhang.in"
#define OUT "txnhang.out"
#define N 20
#define API_TXN_OFFSET_COMMIT 28 /* Kafka protocol ApiKey */
#define BOUND_MS 1500
#define HANG_MS 8000

typedef struct owner {
    kafka_consumer_t *c;
    kafka_producer_t *p;
    int lost;
    int64_t last;       /* offset of the last record taken */
    int64_t first_read; /* first offset taken since reset (-1: none) */
    int in_txn[N];      /* records produced in the open transaction */
    int committed[N];   /* times each record was in a committed transaction */
} owner_t;

static void on_rebalance(void *arg, kafka_rebalance_kind_t kind,
                         const rd_kafka_topic_partition_list_t *parts)
{
    owner_t *o = arg;
    (void)parts;
    if (kind == KAFKA_REBALANCE_LOST) {
        o->lost++;
        memset(o->in_txn, 0, sizeof o->in_txn); /* pending work dropped */
    }
}

/* One record: its copy goes into the open transaction. */
static void on_message(void *arg, rd_kafka_message_t *m)
{
    owner_t *o = arg;
    assert_true(m->offset >= 0 && m->offset < N);
    if (o->first_read < 0)
        o->first_read = m->offset;
    o->last = m->offset;
    o->in_txn[m->offset]++;
    char v[24];
    int n = snprintf(v, sizeof v, "%lld", (long long)m->offset);
    assert_int_equal(
        kafka_produce(o->p, OUT, 0, NULL, 0, v, (size_t)n, NULL, KAFKA_VALUE_COPY, NULL, NULL),
        KAFKA_PRODUCE_OK);
    rd_kafka_message_destroy(m);
}

/* Takes records until offset `upto` (inclusive) was read; true in time. */
static bool take_until(owner_t *o, int64_t upto, double limit_ms)
{
    double end = kmu_now_ms() + limit_ms;
    while (o->last < upto && kmu_now_ms() < end)
        kafka_consumer_poll_each(o->c, 1, 100, on_message, o);
    return o->last >= upto;
}

/* Begins a transaction, retrying init_transactions first when asked (after a rebuild). */
static void begin(owner_t *o, bool init)
{
    char err[512];
    double end = kmu_now_ms() + 20000;
    while (init && kafka_txn_init(kafka_producer_handle(o->p), 5000, NULL, err, sizeof err) !=
                       KAFKA_TXN_OK) {
        assert_true(kmu_now_ms() < end);
        print_message("init_transactions retried: %s\n", err);
    }
    assert_int_equal(kafka_txn_begin(kafka_producer_handle(o->p), err, sizeof err), KAFKA_TXN_OK);
}

/* Commits the open transaction with the offset after `last`; on success the group gets the
 * offsets (the broker's part, which the mock leaves out) and its records count as committed. */
static kafka_txn_rc_t commit(owner_t *o, kafka_txn_pair_t *tp, double *ms)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, IN, 0)->offset = o->last + 1;
    char err[512] = "";
    double t0 = kmu_now_ms();
    kafka_txn_rc_t rc = kafka_txn_pair_commit(tp, kafka_producer_handle(o->p),
                                              kafka_consumer_handle(o->c), l, err, sizeof err);
    *ms = kmu_now_ms() - t0;
    print_message("commit up to %lld: rc %d in %.0f ms %s\n", (long long)o->last, (int)rc, *ms,
                  err);
    if (rc == KAFKA_TXN_OK) {
        assert_int_equal(rd_kafka_commit(kafka_consumer_handle(o->c), l, 0), 0);
        for (int i = 0; i < N; i++)
            o->committed[i] += o->in_txn[i];
    }
    memset(o->in_txn, 0, sizeof o->in_txn);
    rd_kafka_topic_partition_list_destroy(l);
    return rc;
}

static rd_kafka_mock_cluster_t *mock_cluster(rd_kafka_t **holder)
{
    rd_kafka_mock_cluster_t *mc = kmu_mock_new(holder, 1, IN, 1, N); /* the input */
    assert_int_equal(rd_kafka_mock_topic_create(mc, OUT, 1, 1), RD_KAFKA_RESP_ERR_NO_ERROR);
    return mc;
}

static void test_hung_commit_returns_in_bound_and_its_records_are_read_again(void **state)
{
    (void)state;
    rd_kafka_t *holder;
    rd_kafka_mock_cluster_t *mc = mock_cluster(&holder);
    owner_t *o = calloc(1, sizeof *o);
    assert_non_null(o);
    o->last = o->first_read = -1;
    kafka_prop_t pdefs[KAFKA_TXN_N_PROPS + 1] = {{"log_level", "0"}};
    size_t np = 1 + kafka_txn_props(pdefs + 1, "txnhang-g/" IN "/test");
    const kafka_prop_t cdefs[] = {
        {"enable.auto.commit", "false"}, {"isolation.level", "read_committed"}, {"log_level", "0"}};
    kafka_pair_opts_t ko = {.brokers = rd_kafka_mock_cluster_bootstraps(mc),
                            .client_id = "txnhang",
                            .group_id = "txnhang-g",
                            .topic = IN,
                            .producer_defaults = pdefs,
                            .n_producer_defaults = np,
                            .consumer_defaults = cdefs,
                            .n_consumer_defaults = 3,
                            .on_rebalance = on_rebalance,
                            .owner = o};
    char err[512];
    assert_int_equal(kafka_pair_new(&ko, &o->p, &o->c, err, sizeof err), 0);
    metrics_registry_t *reg = metrics_registry_new();
    assert_non_null(reg);
    kafka_txn_pair_opts_t to = {.txn_id = "txnhang-g/" IN "/test",
                                .group = "txnhang-g",
                                .topic = IN,
                                .who = "test",
                                .call_ms = BOUND_MS,
                                .metrics = reg,
                                .metric_prefix = "ndd_test",
                                .label = "nf_type",
                                .label_value = "T"};
    kafka_txn_pair_t *tp = kafka_txn_pair_new(&to);
    assert_non_null(tp);
    double ms;

    /* 0..9 committed normally */
    begin(o, true);
    assert_true(take_until(o, 9, 20000));
    assert_int_equal(commit(o, tp, &ms), KAFKA_TXN_OK);

    /* 10..19: the coordinator sits on the offsets; the worker gets its answer in the bound */
    begin(o, false);
    assert_true(take_until(o, N - 1, 20000));
    assert_int_equal(rd_kafka_mock_broker_push_request_error_rtts(
                         mc, 1, API_TXN_OFFSET_COMMIT, 1, RD_KAFKA_RESP_ERR_NO_ERROR, HANG_MS),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(commit(o, tp, &ms), KAFKA_TXN_REBUILD);
    assert_true(ms < BOUND_MS + 1000 + 1000);
    kafka_txn_pair_stats_t st = kafka_txn_pair_stats(tp);
    assert_int_equal(st.committed, 1);
    assert_int_equal(st.timed_out, 1);
    assert_int_equal(st.set_aside, 0);

    /* rebuilt: the stuck handle set aside, the partitions lost, read again from offset 10 */
    rd_kafka_t *stuck = kafka_producer_handle(o->p);
    assert_int_equal(kafka_txn_pair_rebuild(tp, o->p, o->c), 0);
    assert_ptr_not_equal(kafka_producer_handle(o->p), stuck);
    st = kafka_txn_pair_stats(tp);
    assert_int_equal(st.rebuilds, 1);
    assert_int_equal(st.set_aside, 1);
    assert_true(o->lost >= 1);
    o->last = o->first_read = -1;
    begin(o, true);
    assert_true(take_until(o, N - 1, 20000));
    assert_int_equal(o->first_read, 10);
    assert_int_equal(commit(o, tp, &ms), KAFKA_TXN_OK);
    for (int i = 0; i < N; i++)
        assert_int_equal(o->committed[i], 1); /* none lost, none committed twice */

    /* the set-aside call returns once the coordinator answers; its handle goes then */
    double end = kmu_now_ms() + HANG_MS + 15000;
    while (kafka_txn_pair_stats(tp).set_aside && kmu_now_ms() < end)
        kafka_consumer_poll_each(o->c, 1, 100, on_message, o);
    assert_int_equal(kafka_txn_pair_stats(tp).set_aside, 0);

    kafka_txn_pair_free(tp, o->p);
    kafka_pair_close(&o->p, &o->c, 1000);
    metrics_registry_free(reg);
    free(o);
    kmu_mock_free(mc, holder);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hung_commit_returns_in_bound_and_its_records_are_read_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
