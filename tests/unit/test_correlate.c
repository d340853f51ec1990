/* Correlation engine (correlation/correlate.c): transactions, timeouts, limits, offsets. */
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

#define TS0 1764486000000000LL
#define SEC 1000000LL

/* What a test keeps of an emitted xDR (the xdr_t itself dies with the callback). */
typedef struct got {
    char s[XDR_S__COUNT][300];
    bool has[XDR_S__COUNT];
    xdr_t x;
} got_t;

static got_t g_got[64];
static size_t g_n;
static size_t g_total;

static void on_xdr(void *opaque, const xdr_t *x)
{
    (void)opaque;
    g_total++;
    if (g_n == sizeof g_got / sizeof g_got[0])
        return;
    got_t *g = &g_got[g_n++];
    g->x = *x;
    for (int i = 0; i < XDR_S__COUNT; i++) {
        g->has[i] = x->s[i].ptr != NULL;
        snprintf(g->s[i], sizeof g->s[i], "%.*s", (int)x->s[i].len, x->s[i].ptr ? x->s[i].ptr : "");
        g->x.s[i] = (codec_slice_t){0};
    }
}

static int reset(void **state)
{
    (void)state;
    g_n = g_total = 0;
    return 0;
}

static correlate_t *engine(uint32_t max_open, int64_t timeout_us)
{
    correlate_config_t cfg = {.max_open = max_open, .timeout_us = timeout_us, .emit = on_xdr};
    char err[128];
    correlate_t *c = correlate_new(&cfg, err, sizeof err);
    if (!c)
        fail_msg("%s", err);
    return c;
}

/* Builds a copy through the real decoder and adds it. */
static int add_copy(correlate_t *c, const char *cid, const char *nf, codec_trigger_t trig,
                    int64_t ts, const char *path, const char *status, const char *body,
                    int32_t partition, int64_t offset, int64_t now)
{
    static codec_msg_t m;
    bool req = trig == CODEC_TRIGGER_RX_REQUEST || trig == CODEC_TRIGGER_TX_REQUEST;
    char tsbuf[24];
    snprintf(tsbuf, sizeof tsbuf, "%lld", (long long)ts);
    rd_kafka_headers_t *h = rd_kafka_headers_new(12);
    rd_kafka_header_add(h, "@timestamp-us", -1, tsbuf, -1);
    rd_kafka_header_add(h, "@message-type", -1, req ? "request" : "response", -1);
    rd_kafka_header_add(h, "@trigger-point", -1, codec_trigger_name(trig), -1);
    rd_kafka_header_add(h, "@nf-type", -1, nf, -1);
    rd_kafka_header_add(h, "@nf-instance", -1, "scp01", -1);
    rd_kafka_header_add(h, "@consumer-fqdn", -1, "amf01.example.org", -1);
    if (!req)
        rd_kafka_header_add(h, "@producer-fqdn", -1, "udm01.example.org", -1);
    if (req) {
        rd_kafka_header_add(h, ":method", -1, "GET", -1);
        rd_kafka_header_add(h, ":path", -1, path, -1);
    } else {
        rd_kafka_header_add(h, ":status", -1, status, -1);
    }
    codec_error_t e;
    size_t blen = body ? strlen(body) : 0;
    if (codec_decode_parts(&m, cid, strlen(cid), body, blen, h, &e) != CODEC_OK)
        fail_msg("test copy refused: %s %s %s", codec_reason_name(e.reason), e.field, e.detail);
    int rc = correlate_add(c, &m, partition, offset, now);
    rd_kafka_headers_destroy(h);
    return rc;
}

static const char *PATH = "/nudm-sdm/v2/imsi-208930000000001/am-data";

static void scp_copy(correlate_t *c, const char *cid, codec_trigger_t t, int32_t part, int64_t off,
                     int64_t now)
{
    static const int64_t at[] = {0, 0, 180, 2310, 2420};
    assert_int_equal(
        add_copy(c, cid, "SCP", t, TS0 + at[t], PATH, "200",
                 t >= CODEC_TRIGGER_RX_RESPONSE ? "{\"gpsi\":\"msisdn-33612345678\"}" : "", part,
                 off, now),
        0);
}

static void test_scp_four_copies_give_one_complete_xdr_with_latencies(void **state)
{
    (void)state;
    correlate_t *c = engine(0, 0);
    scp_copy(c, "t1", CODEC_TRIGGER_RX_REQUEST, 0, 10, 0);
    scp_copy(c, "t1", CODEC_TRIGGER_TX_REQUEST, 0, 11, 1);
    scp_copy(c, "t1", CODEC_TRIGGER_RX_RESPONSE, 0, 12, 2);
    assert_int_equal(g_n, 0);
    scp_copy(c, "t1", CODEC_TRIGGER_TX_RESPONSE, 0, 13, 3);
    assert_int_equal(g_n, 1);
    const got_t *g = &g_got[0];
    assert_int_equal(g->x.completion, XDR_COMPLETE);
    assert_int_equal(g->x.missing, 0);
    assert_int_equal(g->x.latency_rx_us, 2420);
    assert_int_equal(g->x.latency_tx_us, 2130);
    assert_int_equal(g->x.ts_us[CODEC_TRIGGER_RX_RESPONSE], TS0 + 2310);
    assert_int_equal(g->x.status_code, 200);
    assert_int_equal(g->x.request_bytes, 0);
    assert_int_equal(g->x.response_bytes, strlen("{\"gpsi\":\"msisdn-33612345678\"}"));
    assert_int_equal(g->x.nf, CODEC_NF_SCP);
    assert_int_equal(g->x.partition, 0);
    assert_int_equal(g->x.first_offset, 10);
    assert_string_equal(g->s[XDR_S_CORRELATION_ID], "t1");
    assert_string_equal(g->s[XDR_S_METHOD], "GET");
    assert_string_equal(g->s[XDR_S_PATH], PATH);
    assert_string_equal(g->s[XDR_S_SERVICE], "nudm-sdm");
    assert_string_equal(g->s[XDR_S_OPERATION], "am-data");
    assert_string_equal(g->s[XDR_S_SUPI], "imsi-208930000000001");
    assert_string_equal(g->s[XDR_S_GPSI], "msisdn-33612345678");
    assert_string_equal(g->s[XDR_S_NF_INSTANCE], "scp01");
    assert_string_equal(g->s[XDR_S_CONSUMER_FQDN], "amf01.example.org");
    assert_string_equal(g->s[XDR_S_PRODUCER_FQDN], "udm01.example.org");
    assert_false(g->has[XDR_S_PRODUCER_ID]);
    correlate_stats_t st = correlate_stats(c);
    assert_int_equal(st.open, 0);
    assert_int_equal(st.emitted[XDR_COMPLETE], 1);
    assert_int_equal(st.copies, 4);
    correlate_free(c);
}

static void test_endpoint_nf_completes_with_request_and_response(void **state)
{
    (void)state;
    correlate_t *c = engine(0, 0);
    assert_int_equal(add_copy(c, "p1", "PCF", CODEC_TRIGGER_RX_REQUEST, TS0,
                              "/npcf-smpolicycontrol/v1/sm-policies", NULL, "{}", 1, 5, 0),
                     0);
    assert_int_equal(
        add_copy(c, "p1", "PCF", CODEC_TRIGGER_TX_RESPONSE, TS0 + 900, NULL, "201", NULL, 1, 6, 0),
        0);
    assert_int_equal(g_n, 1);
    assert_int_equal(g_got[0].x.completion, XDR_COMPLETE);
    assert_int_equal(g_got[0].x.latency_rx_us, 900);
    assert_true(g_got[0].x.latency_tx_us == XDR_NONE);
    assert_int_equal(g_got[0].x.status_code, 201);
    assert_string_equal(g_got[0].s[XDR_S_OPERATION], "sm-policies");
    /* The consumer side of an endpoint: tx-request + rx-response. */
    add_copy(c, "p2", "NRF", CODEC_TRIGGER_TX_REQUEST, TS0, "/nnrf-disc/v1/nf-instances", NULL,
             NULL, 1, 7, 0);
    add_copy(c, "p2", "NRF", CODEC_TRIGGER_RX_RESPONSE, TS0 + 50, NULL, "200", NULL, 1, 8, 0);
    assert_int_equal(g_n, 2);
    assert_int_equal(g_got[1].x.latency_tx_us, 50);
    correlate_free(c);
}

static void test_response_before_request_still_correlates(void **state)
{
    (void)state;
    correlate_t *c = engine(0, 0);
    scp_copy(c, "late", CODEC_TRIGGER_TX_RESPONSE, 2, 100, 0);
    scp_copy(c, "late", CODEC_TRIGGER_RX_RESPONSE, 2, 101, 0);
    scp_copy(c, "late", CODEC_TRIGGER_TX_REQUEST, 2, 102, 0);
    assert_int_equal(g_n, 0);
    scp_copy(c, "late", CODEC_TRIGGER_RX_REQUEST, 2, 103, 0);
    assert_int_equal(g_n, 1);
    assert_int_equal(g_got[0].x.completion, XDR_COMPLETE);
    assert_int_equal(g_got[0].x.latency_rx_us, 2420);
    assert_int_equal(g_got[0].x.latency_tx_us, 2130);
    assert_string_equal(g_got[0].s[XDR_S_SERVICE], "nudm-sdm");
    assert_int_equal(g_got[0].x.first_offset, 100);
    correlate_free(c);
}

static void test_timeout_emits_incomplete_listing_missing_copies(void **state)
{
    (void)state;
    correlate_t *c = engine(0, 5 * SEC);
    scp_copy(c, "t", CODEC_TRIGGER_RX_REQUEST, 0, 1, 1000);
    scp_copy(c, "t", CODEC_TRIGGER_TX_REQUEST, 0, 2, 2000);
    assert_int_equal(correlate_expire(c, 1000 + 5 * SEC - 1), 0);
    assert_int_equal(g_n, 0);
    assert_int_equal(correlate_expire(c, 1000 + 5 * SEC), 1);
    assert_int_equal(g_n, 1);
    const xdr_t *x = &g_got[0].x;
    assert_int_equal(x->completion, XDR_TIMEOUT);
    assert_int_equal(x->missing,
                     (1u << CODEC_TRIGGER_RX_RESPONSE) | (1u << CODEC_TRIGGER_TX_RESPONSE));
    assert_true(x->latency_rx_us == XDR_NONE);
    assert_true(x->ts_us[CODEC_TRIGGER_TX_RESPONSE] == XDR_NONE);
    assert_true(x->response_bytes == XDR_NONE);
    assert_int_equal(x->status_code, 0);
    assert_int_equal(correlate_stats(c).emitted[XDR_TIMEOUT], 1);
    /* An endpoint with only its response: the request of that side is missing. */
    add_copy(c, "r", "BSF", CODEC_TRIGGER_TX_RESPONSE, TS0, NULL, "204", NULL, 0, 3, 0);
    correlate_expire(c, 10 * SEC);
    assert_int_equal(g_got[1].x.missing, 1u << CODEC_TRIGGER_RX_REQUEST);
    correlate_free(c);
}

static void test_open_limit_emits_oldest_as_evicted(void **state)
{
    (void)state;
    correlate_t *c = engine(3, 0);
    scp_copy(c, "a", CODEC_TRIGGER_RX_REQUEST, 0, 1, 0);
    scp_copy(c, "b", CODEC_TRIGGER_RX_REQUEST, 0, 2, 0);
    scp_copy(c, "c", CODEC_TRIGGER_RX_REQUEST, 0, 3, 0);
    assert_int_equal(g_n, 0);
    scp_copy(c, "d", CODEC_TRIGGER_RX_REQUEST, 0, 4, 0);
    assert_int_equal(g_n, 1);
    assert_int_equal(g_got[0].x.completion, XDR_EVICTED);
    assert_string_equal(g_got[0].s[XDR_S_CORRELATION_ID], "a");
    assert_int_equal(correlate_stats(c).open, 3);
    assert_int_equal(correlate_low_water(c, 0), 2);
    /* Another partition has its own limit. */
    scp_copy(c, "a", CODEC_TRIGGER_RX_REQUEST, 1, 1, 0);
    assert_int_equal(g_n, 1);
    assert_int_equal(correlate_stats(c).emitted[XDR_EVICTED], 1);
    assert_int_equal(correlate_stats(c).open, 4);
    correlate_free(c);
}

static void test_duplicate_copy_is_counted_once(void **state)
{
    (void)state;
    correlate_t *c = engine(0, 0);
    scp_copy(c, "d", CODEC_TRIGGER_RX_REQUEST, 0, 1, 0);
    assert_int_equal(
        add_copy(c, "d", "SCP", CODEC_TRIGGER_RX_REQUEST, TS0 + 999, PATH, NULL, NULL, 0, 2, 0), 0);
    scp_copy(c, "d", CODEC_TRIGGER_TX_REQUEST, 0, 3, 0);
    scp_copy(c, "d", CODEC_TRIGGER_RX_RESPONSE, 0, 4, 0);
    scp_copy(c, "d", CODEC_TRIGGER_TX_RESPONSE, 0, 5, 0);
    assert_int_equal(g_n, 1);
    assert_int_equal(g_got[0].x.duplicates, 1);
    assert_int_equal(g_got[0].x.ts_us[CODEC_TRIGGER_RX_REQUEST], TS0); /* first one kept */
    assert_int_equal(correlate_stats(c).duplicates, 1);
    correlate_free(c);
}

static void test_low_water_is_first_offset_of_oldest_open(void **state)
{
    (void)state;
    correlate_t *c = engine(0, 0);
    assert_int_equal(correlate_low_water(c, 0), -1);
    assert_int_equal(correlate_committable(c, 0, 50), 50);
    add_copy(c, "A", "PCF", CODEC_TRIGGER_RX_REQUEST, TS0, "/x", NULL, NULL, 0, 10, 0);
    add_copy(c, "B", "PCF", CODEC_TRIGGER_RX_REQUEST, TS0, "/x", NULL, NULL, 0, 11, 0);
    add_copy(c, "C", "PCF", CODEC_TRIGGER_RX_REQUEST, TS0, "/x", NULL, NULL, 0, 12, 0);
    assert_int_equal(correlate_low_water(c, 0), 10);
    add_copy(c, "B", "PCF", CODEC_TRIGGER_TX_RESPONSE, TS0, NULL, "200", NULL, 0, 13, 0);
    assert_int_equal(correlate_low_water(c, 0), 10);
    assert_int_equal(correlate_committable(c, 0, 14), 10);
    add_copy(c, "A", "PCF", CODEC_TRIGGER_TX_RESPONSE, TS0, NULL, "200", NULL, 0, 14, 0);
    assert_int_equal(correlate_low_water(c, 0), 12);
    add_copy(c, "C", "PCF", CODEC_TRIGGER_TX_RESPONSE, TS0, NULL, "200", NULL, 0, 15, 0);
    assert_int_equal(correlate_low_water(c, 0), -1);
    assert_int_equal(correlate_committable(c, 0, 16), 16);
    assert_int_equal(g_n, 3);
    correlate_free(c);
}

static void test_drain_emit_revokes_and_handover_counts(void **state)
{
    (void)state;
    correlate_t *c = engine(0, 0);
    scp_copy(c, "x", CODEC_TRIGGER_RX_REQUEST, 3, 1, 0);
    scp_copy(c, "y", CODEC_TRIGGER_RX_REQUEST, 3, 2, 0);
    scp_copy(c, "z", CODEC_TRIGGER_RX_REQUEST, 4, 1, 0);
    assert_int_equal(correlate_drain_partition(c, 3, CORRELATE_DRAIN_EMIT), 2);
    assert_int_equal(g_n, 2);
    assert_int_equal(g_got[0].x.completion, XDR_REVOKED);
    assert_string_equal(g_got[0].s[XDR_S_CORRELATION_ID], "x");
    assert_int_equal(correlate_stats(c).open, 1); /* z, on partition 4 */
    assert_int_equal(correlate_stats(c).partitions, 1);
    assert_int_equal(correlate_low_water(c, 3), -1);
    assert_int_equal(correlate_drain_partition(c, 4, CORRELATE_DRAIN_HANDOVER), 1);
    assert_int_equal(g_n, 2);
    correlate_stats_t st = correlate_stats(c);
    assert_int_equal(st.handed_over, 1);
    assert_int_equal(st.open, 0);
    assert_int_equal(st.partitions, 0);
    /* A drained partition can come back (re-assigned). */
    scp_copy(c, "x", CODEC_TRIGGER_RX_REQUEST, 3, 7, 0);
    assert_int_equal(correlate_low_water(c, 3), 7);
    assert_int_equal(correlate_drain_all(c, CORRELATE_DRAIN_EMIT), 1);
    correlate_free(c);
}

static void test_refuses_partition_out_of_range(void **state)
{
    (void)state;
    correlate_t *c = engine(0, 0);
    assert_int_equal(
        add_copy(c, "q", "SCP", CODEC_TRIGGER_RX_REQUEST, TS0, PATH, NULL, NULL, -1, 0, 0), -1);
    assert_int_equal(add_copy(c, "q", "SCP", CODEC_TRIGGER_RX_REQUEST, TS0, PATH, NULL, NULL,
                              CORRELATE_DEFAULT_MAX_PARTITIONS, 0, 0),
                     -1);
    assert_int_equal(correlate_stats(c).rejected, 2);
    correlate_free(c);
}

static void test_config_is_validated(void **state)
{
    (void)state;
    char err[128];
    correlate_config_t cfg = {0};
    assert_null(correlate_new(&cfg, err, sizeof err));
    assert_non_null(strstr(err, "callback"));
    cfg.emit = on_xdr;
    cfg.str_area = 100;
    assert_null(correlate_new(&cfg, err, sizeof err));
    assert_non_null(strstr(err, "text area"));
}

static void test_long_path_is_cut_and_flagged_but_service_kept(void **state)
{
    (void)state;
    correlate_t *c = engine(0, 0);
    char path[1200];
    int n = snprintf(path, sizeof path, "/nudm-sdm/v2/imsi-208930000000001/");
    memset(path + n, 'z', sizeof path - (size_t)n - 20);
    snprintf(path + sizeof path - 20, 20, "/sdm-subscriptions");
    add_copy(c, "long", "PCF", CODEC_TRIGGER_RX_REQUEST, TS0, path, NULL, NULL, 0, 0, 0);
    add_copy(c, "long", "PCF", CODEC_TRIGGER_TX_RESPONSE, TS0 + 1, NULL, "201", NULL, 0, 1, 0);
    assert_int_equal(g_n, 1);
    assert_true(g_got[0].x.flags & XDR_FLAG_TRUNCATED);
    assert_true(strlen(g_got[0].s[XDR_S_PATH]) < strlen(path));
    assert_memory_equal(g_got[0].s[XDR_S_PATH], path, strlen(g_got[0].s[XDR_S_PATH]));
    assert_string_equal(g_got[0].s[XDR_S_SERVICE], "nudm-sdm");
    assert_string_equal(g_got[0].s[XDR_S_OPERATION], "sdm-subscriptions");
    assert_string_equal(g_got[0].s[XDR_S_SUPI], "imsi-208930000000001");
    assert_string_equal(g_got[0].s[XDR_S_PRODUCER_FQDN], "udm01.example.org");
    assert_int_equal(correlate_stats(c).truncated, 1);
    correlate_free(c);
}

static void test_subscriber_body_search_can_be_disabled(void **state)
{
    (void)state;
    correlate_config_t cfg = {.emit = on_xdr,
                              .subscriber_set = true,
                              .subscriber = {.from_path = true, .from_body = false}};
    char err[128];
    correlate_t *c = correlate_new(&cfg, err, sizeof err);
    assert_non_null(c);
    add_copy(c, "s", "PCF", CODEC_TRIGGER_RX_REQUEST, TS0, "/npcf-x/v1/y", NULL,
             "{\"supi\":\"imsi-208930000000001\"}", 0, 0, 0);
    add_copy(c, "s", "PCF", CODEC_TRIGGER_TX_RESPONSE, TS0, NULL, "200", NULL, 0, 1, 0);
    assert_int_equal(g_n, 1);
    assert_false(g_got[0].has[XDR_S_SUPI]);
    correlate_free(c);
    /* Default: found in the body. */
    c = engine(0, 0);
    add_copy(c, "s", "PCF", CODEC_TRIGGER_RX_REQUEST, TS0, "/npcf-x/v1/y", NULL,
             "{\"supi\":\"imsi-208930000000001\"}", 0, 0, 0);
    add_copy(c, "s", "PCF", CODEC_TRIGGER_TX_RESPONSE, TS0, NULL, "200", NULL, 0, 1, 0);
    assert_string_equal(g_got[1].s[XDR_S_SUPI], "imsi-208930000000001");
    correlate_free(c);
}

/* Many interleaved inserts and deletes: the hash index (backward-shift delete, growth) must
 * never lose or confuse a transaction. */
static void test_many_interleaved_transactions_all_complete(void **state)
{
    (void)state;
    enum { N = 60000 };
    static bool done[N];
    memset(done, 0, sizeof done);
    correlate_t *c = engine(N, 0);
    char cid[32];
    uint32_t seed = 12345;
    int64_t off = 0;
    size_t completed = 0;
    for (int i = 0; i < N; i++) {
        snprintf(cid, sizeof cid, "tx-%d", i);
        add_copy(c, cid, "PCF", CODEC_TRIGGER_RX_REQUEST, TS0 + i, "/npcf-x/v1/y", NULL, NULL, 0,
                 off++, 0);
        seed = seed * 1103515245u + 12345u;
        int j = (int)((seed >> 8) % (uint32_t)(i + 1)); /* complete a random open one */
        if (!done[j]) {
            done[j] = true;
            snprintf(cid, sizeof cid, "tx-%d", j);
            add_copy(c, cid, "PCF", CODEC_TRIGGER_TX_RESPONSE, TS0 + i, NULL, "200", NULL, 0, off++,
                     0);
            completed++;
            assert_int_equal(correlate_stats(c).emitted[XDR_COMPLETE], completed);
            assert_int_equal(correlate_stats(c).open, (size_t)(i + 1) - completed);
        }
    }
    assert_true(completed > N / 3);
    for (int i = 0; i < N; i++) {
        if (done[i])
            continue;
        snprintf(cid, sizeof cid, "tx-%d", i);
        add_copy(c, cid, "PCF", CODEC_TRIGGER_TX_RESPONSE, TS0 + N + i, NULL, "200", NULL, 0, off++,
                 0);
    }
    correlate_stats_t st = correlate_stats(c);
    assert_int_equal(st.emitted[XDR_COMPLETE], N);
    assert_int_equal(st.emitted[XDR_EVICTED], 0);
    assert_int_equal(st.duplicates, 0);
    assert_int_equal(st.copies, 2 * N);
    assert_int_equal(st.open, 0);
    assert_int_equal(correlate_low_water(c, 0), -1);
    correlate_free(c);
}

static void test_metrics_count_by_service_status_and_completion(void **state)
{
    (void)state;
    metrics_registry_t *r = metrics_registry_new();
    correlate_metrics_t *m = correlate_metrics_new(r, "SCP");
    assert_non_null(m);
    correlate_t *c = engine(0, 5 * SEC);
    for (int i = 0; i < 3; i++) {
        char cid[8];
        snprintf(cid, sizeof cid, "m%d", i);
        for (int t = CODEC_TRIGGER_RX_REQUEST; t < CODEC_TRIGGER__COUNT; t++)
            scp_copy(c, cid, (codec_trigger_t)t, 0, i * 4 + t, 0);
    }
    scp_copy(c, "lost", CODEC_TRIGGER_RX_REQUEST, 0, 99, 0);
    correlate_expire(c, 6 * SEC);
    for (size_t i = 0; i < g_n; i++) {
        got_t *g = &g_got[i];
        g->x.s[XDR_S_SERVICE] = (codec_slice_t){g->s[XDR_S_SERVICE], strlen(g->s[XDR_S_SERVICE])};
        correlate_metrics_observe(m, &g->x);
    }
    correlate_metrics_update(m, c);
    buf_t b;
    assert_int_equal(buf_init(&b, 0, 1 << 20), 0);
    assert_int_equal(metrics_render(r, &b), 0);
    assert_int_equal(buf_append_u8(&b, 0), 0);
    const char *txt = (const char *)b.data;
    if (!strstr(txt, "ndd_correlation_transactions_total{nf_type=\"SCP\",service=\"nudm-sdm\","
                     "status_code=\"200\",completion=\"complete\"} 3"))
        fail_msg("no complete count in:\n%s", txt);
    assert_non_null(strstr(txt, "status_code=\"none\",completion=\"timeout\"} 1"));
    assert_non_null(strstr(txt, "ndd_correlation_messages_missing_total{nf_type=\"SCP\","
                                "trigger_point=\"tx-response\"} 1"));
    assert_non_null(strstr(txt, "ndd_correlation_transaction_latency_seconds_count{nf_type=\"SCP\","
                                "service=\"nudm-sdm\",side=\"rx\"} 3"));
    assert_non_null(strstr(txt, "ndd_correlation_transactions_open{nf_type=\"SCP\"} 0"));
    buf_free(&b);
    correlate_free(c);
    correlate_metrics_free(m);
    metrics_registry_free(r);
}

static correlate_t *held_engine(uint32_t max_open, uint32_t max_held)
{
    correlate_config_t cfg = {
        .max_open = max_open, .hold_until_ack = true, .max_held = max_held, .emit = on_xdr};
    char err[128];
    correlate_t *c = correlate_new(&cfg, err, sizeof err);
    if (!c)
        fail_msg("%s", err);
    return c;
}

static void test_held_xdr_keeps_low_water_until_acknowledged(void **state)
{
    (void)state;
    correlate_t *c = held_engine(0, 0);
    add_copy(c, "A", "PCF", CODEC_TRIGGER_RX_REQUEST, TS0, "/x", NULL, NULL, 0, 10, 0);
    add_copy(c, "B", "PCF", CODEC_TRIGGER_RX_REQUEST, TS0, "/x", NULL, NULL, 0, 11, 0);
    add_copy(c, "B", "PCF", CODEC_TRIGGER_TX_RESPONSE, TS0, NULL, "200", NULL, 0, 12, 0);
    add_copy(c, "A", "PCF", CODEC_TRIGGER_TX_RESPONSE, TS0, NULL, "200", NULL, 0, 13, 0);
    assert_int_equal(g_n, 2);
    uint64_t tb = g_got[0].x.ticket, ta = g_got[1].x.ticket;
    assert_true(ta != 0 && tb != 0 && ta != tb);
    assert_int_equal(correlate_stats(c).open, 0);
    assert_int_equal(correlate_stats(c).held, 2);
    /* Both xDRs are in flight: nothing past offset 10 may be stored. */
    assert_int_equal(correlate_low_water(c, 0), 10);
    assert_int_equal(correlate_committable(c, 0, 14), 10);
    assert_int_equal(correlate_ack(c, 0, ta), 0);
    assert_int_equal(correlate_low_water(c, 0), 11);
    assert_int_equal(correlate_ack(c, 0, ta), -1); /* twice */
    assert_int_equal(correlate_ack(c, 1, tb), -1); /* wrong partition */
    assert_int_equal(correlate_ack(c, 0, tb), 0);
    assert_int_equal(correlate_low_water(c, 0), -1);
    assert_int_equal(correlate_committable(c, 0, 14), 14);
    correlate_stats_t st = correlate_stats(c);
    assert_int_equal(st.held, 0);
    assert_int_equal(st.stale_acks, 2);
    assert_int_equal(correlate_ack(c, 0, 0), 0); /* nothing to acknowledge */
    /* A copy with an id whose xDR is held opens a new transaction. */
    add_copy(c, "C", "PCF", CODEC_TRIGGER_RX_REQUEST, TS0, "/x", NULL, NULL, 0, 20, 0);
    add_copy(c, "C", "PCF", CODEC_TRIGGER_TX_RESPONSE, TS0, NULL, "200", NULL, 0, 21, 0);
    add_copy(c, "C", "PCF", CODEC_TRIGGER_TX_RESPONSE, TS0, NULL, "200", NULL, 0, 22, 0);
    assert_int_equal(correlate_stats(c).open, 1);
    assert_int_equal(correlate_low_water(c, 0), 20);
    assert_int_equal(correlate_ack(c, 0, g_got[2].x.ticket), 0);
    assert_int_equal(correlate_low_water(c, 0), 22);
    correlate_free(c);
}

static void test_expire_and_evict_skip_held_transactions(void **state)
{
    (void)state;
    correlate_t *c = held_engine(2, 0);
    scp_copy(c, "h", CODEC_TRIGGER_RX_REQUEST, 0, 1, 0);
    scp_copy(c, "o", CODEC_TRIGGER_RX_REQUEST, 0, 2, 0);
    scp_copy(c, "h", CODEC_TRIGGER_TX_REQUEST, 0, 3, 0);
    scp_copy(c, "h", CODEC_TRIGGER_RX_RESPONSE, 0, 4, 0);
    scp_copy(c, "h", CODEC_TRIGGER_TX_RESPONSE, 0, 5, 0); /* "h" complete, held at the head */
    assert_int_equal(g_n, 1);
    scp_copy(c, "p", CODEC_TRIGGER_RX_REQUEST, 0, 6, 0);
    scp_copy(c, "q", CODEC_TRIGGER_RX_REQUEST, 0, 7, 0); /* limit 2 open: evicts "o", not "h" */
    assert_int_equal(g_n, 2);
    assert_string_equal(g_got[1].s[XDR_S_CORRELATION_ID], "o");
    assert_int_equal(g_got[1].x.completion, XDR_EVICTED);
    assert_int_equal(correlate_expire(c, 5 * SEC), 2); /* "p" and "q", past the held "h" */
    assert_int_equal(correlate_low_water(c, 0), 1);
    for (size_t i = 0; i < g_n; i++)
        assert_int_equal(correlate_ack(c, 0, g_got[i].x.ticket), 0);
    assert_int_equal(correlate_low_water(c, 0), -1);
    correlate_free(c);
}

static void test_full_hold_emits_without_ticket_and_drain_makes_tickets_stale(void **state)
{
    (void)state;
    correlate_t *c = held_engine(0, 1);
    add_copy(c, "A", "PCF", CODEC_TRIGGER_RX_REQUEST, TS0, "/x", NULL, NULL, 0, 1, 0);
    add_copy(c, "A", "PCF", CODEC_TRIGGER_TX_RESPONSE, TS0, NULL, "200", NULL, 0, 2, 0);
    add_copy(c, "B", "PCF", CODEC_TRIGGER_RX_REQUEST, TS0, "/x", NULL, NULL, 0, 3, 0);
    add_copy(c, "B", "PCF", CODEC_TRIGGER_TX_RESPONSE, TS0, NULL, "200", NULL, 0, 4, 0);
    assert_int_equal(g_n, 2);
    assert_true(g_got[0].x.ticket != 0);
    assert_true(g_got[1].x.ticket == 0);
    assert_int_equal(correlate_stats(c).unheld, 1);
    add_copy(c, "C", "PCF", CODEC_TRIGGER_RX_REQUEST, TS0, "/x", NULL, NULL, 0, 5, 0);
    correlate_drain_partition(c, 0, CORRELATE_DRAIN_EMIT);
    assert_int_equal(g_n, 3);
    assert_int_equal(g_got[2].x.completion, XDR_REVOKED);
    assert_true(g_got[2].x.ticket == 0);
    assert_int_equal(correlate_stats(c).held, 0);
    /* The partition comes back: the old ticket must not release anything. */
    add_copy(c, "D", "PCF", CODEC_TRIGGER_RX_REQUEST, TS0, "/x", NULL, NULL, 0, 9, 0);
    add_copy(c, "D", "PCF", CODEC_TRIGGER_TX_RESPONSE, TS0, NULL, "200", NULL, 0, 10, 0);
    assert_int_equal(correlate_ack(c, 0, g_got[0].x.ticket), -1);
    assert_int_equal(correlate_low_water(c, 0), 9);
    assert_int_equal(correlate_ack(c, 0, g_got[3].x.ticket), 0);
    correlate_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_scp_four_copies_give_one_complete_xdr_with_latencies, reset),
        cmocka_unit_test_setup(test_endpoint_nf_completes_with_request_and_response, reset),
        cmocka_unit_test_setup(test_response_before_request_still_correlates, reset),
        cmocka_unit_test_setup(test_timeout_emits_incomplete_listing_missing_copies, reset),
        cmocka_unit_test_setup(test_open_limit_emits_oldest_as_evicted, reset),
        cmocka_unit_test_setup(test_duplicate_copy_is_counted_once, reset),
        cmocka_unit_test_setup(test_low_water_is_first_offset_of_oldest_open, reset),
        cmocka_unit_test_setup(test_drain_emit_revokes_and_handover_counts, reset),
        cmocka_unit_test_setup(test_refuses_partition_out_of_range, reset),
        cmocka_unit_test_setup(test_config_is_validated, reset),
        cmocka_unit_test_setup(test_long_path_is_cut_and_flagged_but_service_kept, reset),
        cmocka_unit_test_setup(test_subscriber_body_search_can_be_disabled, reset),
        cmocka_unit_test_setup(test_many_interleaved_transactions_all_complete, reset),
        cmocka_unit_test_setup(test_metrics_count_by_service_status_and_completion, reset),
        cmocka_unit_test_setup(test_held_xdr_keeps_low_water_until_acknowledged, reset),
        cmocka_unit_test_setup(test_expire_and_evict_skip_held_transactions, reset),
        cmocka_unit_test_setup(test_full_hold_emits_without_ticket_and_drain_makes_tickets_stale,
                               reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
