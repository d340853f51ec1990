/* The correlation engine on copies read from the real broker, with a crash in the middle:
 * complete transactions give complete xDRs with the right latencies, out-of-order copies
 * still correlate, transactions missing a copy give incomplete xDRs after the timeout, and
 * committing only up to the low-water mark — held down by open transactions and by xDRs whose
 * produce was not acknowledged yet (hold_until_ack) — means the "crash" (consumer, engine and
 * unacknowledged xDRs thrown away without a clean stop) loses no xDR. Needs NDD_TEST_KAFKA. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codec.h"
#include "correlate.h"
#include "kafka_testutil.h"

#define CK_TXNS 240
#define CK_PARTS 3
#define CK_TS0 1764486000000000LL

/* What the "XDR topic" received, per transaction. */
typedef struct ck_txn {
    unsigned complete, incomplete;
    uint8_t missing; /* of the last incomplete one */
    int64_t latency_rx, latency_tx;
    bool bad_latency;
} ck_txn_t;

static ck_txn_t ck_got[CK_TXNS];

static bool ck_full(int i)
{
    return i % 7 != 3; /* every 7th transaction never gets its tx-response */
}

static bool ck_reversed(int i)
{
    return i % 5 == 0; /* responses produced before requests */
}

/* An xDR "being produced": counted as received only once its delivery is acknowledged. */
typedef struct ck_flight {
    uint64_t ticket;
    int32_t partition;
    int txn;
    xdr_completion_t completion;
    uint8_t missing;
    int64_t latency_rx, latency_tx;
    int status;
} ck_flight_t;

static ck_flight_t ck_flights[CK_TXNS * 4];
static size_t ck_n_flights;

static void ck_emit(void *opaque, const xdr_t *x)
{
    (void)opaque;
    int i = atoi(x->s[XDR_S_CORRELATION_ID].ptr + 4); /* "txn-<i>" then non-digits */
    assert_true(i >= 0 && i < CK_TXNS);
    assert_true(x->ticket != 0);
    assert_true(ck_n_flights < sizeof ck_flights / sizeof ck_flights[0]);
    ck_flights[ck_n_flights++] = (ck_flight_t){x->ticket,        x->partition,  i,
                                               x->completion,    x->missing,    x->latency_rx_us,
                                               x->latency_tx_us, x->status_code};
}

/* Delivery reports arrive: the xDRs reach the XDR topic and release their hold. */
static void ck_deliver(correlate_t *c)
{
    for (size_t k = 0; k < ck_n_flights; k++) {
        const ck_flight_t *x = &ck_flights[k];
        assert_int_equal(correlate_ack(c, x->partition, x->ticket), 0);
        ck_txn_t *t = &ck_got[x->txn];
        if (x->completion == XDR_COMPLETE) {
            t->complete++;
            if (x->latency_rx != 2420 || x->latency_tx != 2130 || x->status != 200)
                t->bad_latency = true;
        } else {
            t->incomplete++;
            t->missing = x->missing;
        }
    }
    ck_n_flights = 0;
}

static void ck_produce_all(const char *topic)
{
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    static const int64_t at[] = {0, 0, 180, 2310, 2420};
    for (int i = 0; i < CK_TXNS; i++) {
        char cid[32], ts[4][24];
        snprintf(cid, sizeof cid, "txn-%d-%08x", i, (unsigned)(i * 2654435761u));
        codec_trigger_t order[4] = {CODEC_TRIGGER_RX_REQUEST, CODEC_TRIGGER_TX_REQUEST,
                                    CODEC_TRIGGER_RX_RESPONSE, CODEC_TRIGGER_TX_RESPONSE};
        if (ck_reversed(i)) {
            order[0] = CODEC_TRIGGER_TX_RESPONSE;
            order[1] = CODEC_TRIGGER_RX_RESPONSE;
            order[2] = CODEC_TRIGGER_TX_REQUEST;
            order[3] = CODEC_TRIGGER_RX_REQUEST;
        }
        for (int k = 0; k < 4; k++) {
            codec_trigger_t t = order[k];
            if (!ck_full(i) && t == CODEC_TRIGGER_TX_RESPONSE)
                continue;
            bool req = t <= CODEC_TRIGGER_TX_REQUEST;
            snprintf(ts[k], sizeof ts[k], "%lld", (long long)(CK_TS0 + i * 10000 + at[t]));
            const char *hreq[] = {"@timestamp-us",  ts[k],
                                  "@message-type",  "request",
                                  "@trigger-point", codec_trigger_name(t),
                                  "@nf-type",       "SCP",
                                  ":method",        "GET",
                                  ":path",          "/nudm-sdm/v2/imsi-208930000000001/am-data"};
            const char *hresp[] = {"@timestamp-us",  ts[k],
                                   "@message-type",  "response",
                                   "@trigger-point", codec_trigger_name(t),
                                   "@nf-type",       "SCP",
                                   ":status",        "200",
                                   "content-type",   "application/json"};
            const char *body = req ? "" : "{\"gpsi\":\"msisdn-33612345678\"}";
            assert_int_equal(ktu_produce(p, topic, -1, cid, strlen(cid), body, strlen(body),
                                         req ? hreq : hresp, 6),
                             0);
        }
    }
    assert_int_equal(ktu_flush(p, 30000), 0);
    rd_kafka_destroy(p);
}

static rd_kafka_t *ck_consumer(const char *topic, const char *group)
{
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", ktu_brokers(), err, sizeof err) ||
        rd_kafka_conf_set(conf, "group.id", group, err, sizeof err) ||
        rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof err) ||
        rd_kafka_conf_set(conf, "auto.offset.reset", "earliest", err, sizeof err))
        fail_msg("consumer config: %s", err);
    rd_kafka_t *c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!c)
        fail_msg("consumer: %s", err);
    rd_kafka_poll_set_consumer(c);
    /* assign (not subscribe): the committed offsets of the group are used without waiting
     * for a rebalance. */
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(CK_PARTS);
    for (int p = 0; p < CK_PARTS; p++)
        rd_kafka_topic_partition_list_add(l, topic, p)->offset = RD_KAFKA_OFFSET_STORED;
    assert_int_equal(rd_kafka_assign(c, l), 0);
    rd_kafka_topic_partition_list_destroy(l);
    return c;
}

/* Consumes up to `limit` records (or until the topic is drained), feeding the engine.
 * next[p] gets the next offset to read of each partition. Returns how many were read. */
static size_t ck_run(rd_kafka_t *k, correlate_t *c, size_t limit, int64_t next[CK_PARTS],
                     size_t total_left, int64_t *clock_us)
{
    static codec_msg_t m;
    size_t n = 0;
    int64_t idle_since = ktu_now_ms();
    while (n < limit && n < total_left && ktu_now_ms() - idle_since < 15000) {
        rd_kafka_message_t *msg = rd_kafka_consumer_poll(k, 200);
        if (!msg)
            continue;
        if (msg->err) {
            if (msg->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                fail_msg("consume: %s", rd_kafka_message_errstr(msg));
            rd_kafka_message_destroy(msg);
            continue;
        }
        idle_since = ktu_now_ms();
        codec_error_t e;
        if (codec_decode(&m, msg, &e) != CODEC_OK)
            fail_msg("decode at %d/%lld: %s %s", msg->partition, (long long)msg->offset,
                     codec_reason_name(e.reason), e.field);
        /* A synthetic clock, 10 ms per record: transactions that miss a copy time out while
         * the stream goes on, as they would in production. */
        *clock_us += 10000;
        assert_int_equal(correlate_add(c, &m, msg->partition, msg->offset, *clock_us), 0);
        correlate_expire(c, *clock_us);
        /* Acknowledgements come in batches; the xDRs of the last 60 records before the limit
         * (the crash point in the first life) are still in flight. */
        if (n % 25 == 24 && n + 60 < limit)
            ck_deliver(c);
        next[msg->partition] = msg->offset + 1;
        rd_kafka_message_destroy(msg);
        n++;
    }
    return n;
}

static void ck_commit(rd_kafka_t *k, const correlate_t *c, const char *topic,
                      const int64_t next[CK_PARTS])
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(CK_PARTS);
    for (int p = 0; p < CK_PARTS; p++)
        if (next[p] >= 0)
            rd_kafka_topic_partition_list_add(l, topic, p)->offset =
                correlate_committable(c, p, next[p]);
    if (l->cnt > 0)
        assert_int_equal(rd_kafka_commit(k, l, 0), 0);
    rd_kafka_topic_partition_list_destroy(l);
}

static void test_crash_mid_stream_loses_no_xdr_and_keeps_latencies(void **state)
{
    (void)state;
    char topic[96], group[96];
    ktu_unique_name("ndd-test-corr", topic, sizeof topic);
    ktu_unique_name("ndd-test-corr-g", group, sizeof group);
    assert_int_equal(ktu_create_topic(topic, CK_PARTS), 0);
    ck_produce_all(topic);
    size_t total = (size_t)ktu_topic_record_count(topic, 10000);
    assert_int_equal(total, CK_TXNS * 4 - (CK_TXNS + 3) / 7);

    memset(ck_got, 0, sizeof ck_got);
    ck_n_flights = 0;
    correlate_config_t cfg = {.timeout_us = 1000000, .hold_until_ack = true, .emit = ck_emit};
    int64_t clock_us = 0;
    char err[128];

    /* First life: read about half, commit the low-water marks, then die without a clean
     * stop (no close, no further commit, engine state gone). */
    correlate_t *c = correlate_new(&cfg, err, sizeof err);
    assert_non_null(c);
    rd_kafka_t *k = ck_consumer(topic, group);
    int64_t next[CK_PARTS] = {-1, -1, -1};
    size_t first = ck_run(k, c, total / 2, next, total, &clock_us);
    assert_int_equal(first, total / 2);
    ck_commit(k, c, topic, next);
    /* xDRs still in flight die with the process: they never reach the XDR topic. */
    size_t lost_in_flight = ck_n_flights;
    ck_n_flights = 0;
    correlate_free(c);
    rd_kafka_destroy_flags(k, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);

    /* Second life: resumes from the committed offsets, rebuilds the open transactions. */
    c = correlate_new(&cfg, err, sizeof err);
    assert_non_null(c);
    k = ck_consumer(topic, group);
    size_t left = 0;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(CK_PARTS);
    for (int p = 0; p < CK_PARTS; p++)
        rd_kafka_topic_partition_list_add(l, topic, p);
    assert_int_equal(rd_kafka_committed(k, l, 10000), 0);
    for (int p = 0; p < CK_PARTS; p++) {
        int64_t lo, hi;
        assert_int_equal(rd_kafka_query_watermark_offsets(k, topic, p, &lo, &hi, 10000), 0);
        int64_t from = l->elems[p].offset >= 0 ? l->elems[p].offset : lo;
        /* Never committed past a copy whose transaction was still open. */
        assert_true(next[p] < 0 || from <= next[p]);
        left += (size_t)(hi - from);
    }
    rd_kafka_topic_partition_list_destroy(l);
    int64_t next2[CK_PARTS] = {-1, -1, -1};
    size_t second = ck_run(k, c, left, next2, left, &clock_us);
    assert_int_equal(second, left);
    /* Resumed (not restarted from zero), and re-read at least what the first life had not. */
    assert_true(second < total);
    assert_true(first + second >= total);
    /* Nothing more arrives: the remaining open transactions time out. */
    correlate_expire(c, clock_us + cfg.timeout_us);
    ck_deliver(c);
    assert_int_equal(correlate_stats(c).open, 0);
    ck_commit(k, c, topic, next2);
    correlate_free(c);
    rd_kafka_consumer_close(k);
    rd_kafka_destroy(k);

    for (int i = 0; i < CK_TXNS; i++) {
        const ck_txn_t *t = &ck_got[i];
        if (ck_full(i)) {
            if (t->complete < 1)
                fail_msg("transaction %d (%s) has no complete xDR", i,
                         ck_reversed(i) ? "responses first" : "in order");
            if (t->bad_latency)
                fail_msg("transaction %d: wrong latency or status", i);
        } else {
            if (t->complete != 0 || t->incomplete < 1)
                fail_msg("transaction %d misses a copy: %u complete, %u incomplete", i, t->complete,
                         t->incomplete);
            assert_int_equal(t->missing, 1u << CODEC_TRIGGER_TX_RESPONSE);
        }
    }
    /* The crash really lost xDRs in flight, which the second life had to emit again. */
    assert_true(lost_in_flight > 0);
    ktu_delete_topic(topic);
}

int main(void)
{
    ktu_brokers(); /* fails with a clear message when NDD_TEST_KAFKA is unset */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crash_mid_stream_loses_no_xdr_and_keeps_latencies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
