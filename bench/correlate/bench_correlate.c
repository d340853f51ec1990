/* bench-correlate: throughput and memory of the correlation engine (correlation/correlate.c).
 *
 *   bench-correlate [--transactions N] [--window W] [--open N] [--partitions P]
 *                   [--encode none|json|binary] [--hold] [--json]
 *
 * Phase 1 (throughput): N SCP transactions of four copies each (realistic metadata: ids,
 * FQDNs, addresses, a SUPI path, a JSON response body), W transactions open at any time.
 * Each copy is decoded from Kafka headers (codec_decode_parts) and added; the run reports
 * copies per CPU-second for decode + correlate and for correlate alone. --hold runs with
 * hold_until_ack and acknowledges each xDR right after the copy that emitted it.
 * Phase 2 (memory): --open request copies of distinct transactions spread over P partitions,
 * none completed; reports the RSS growth and bytes per open transaction, then the time to
 * expire them all. Every loop is bounded by its count. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codec.h"
#include "correlate.h"

typedef struct bench_sink {
    uint64_t xdrs, complete, bytes;
    /* --hold: tickets to acknowledge after each add (as delivery reports would). */
    uint64_t tickets[64];
    int32_t parts[64];
    size_t n_tickets;
    int encode; /* 0 none, 1 json, 2 binary */
    buf_t out;
} bench_sink_t;

static void bench_emit(void *opaque, const xdr_t *x)
{
    bench_sink_t *s = opaque;
    s->xdrs++;
    s->complete += x->completion == XDR_COMPLETE;
    if (x->ticket && s->n_tickets < 64) {
        s->tickets[s->n_tickets] = x->ticket;
        s->parts[s->n_tickets++] = x->partition;
    }
    if (s->encode) {
        buf_reset(&s->out);
        int rc = s->encode == 1 ? xdr_encode_json(x, &s->out) : xdr_encode_binary(x, &s->out);
        if (rc == 0)
            s->bytes += s->out.len;
    }
}

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, rss = 0;
    if (!f)
        return -1;
    if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
        rss = -1;
    fclose(f);
    return rss < 0 ? -1 : rss * sysconf(_SC_PAGESIZE);
}

/* Headers of the four copies of one SCP transaction, without the key (it varies). */
static rd_kafka_headers_t *bench_template(codec_trigger_t t)
{
    static const char *addr[][2] = {{"", ""},
                                    {"10.0.1.15:41000", "10.0.2.20:8443"},
                                    {"10.0.2.20:8443", "10.0.3.30:8443"},
                                    {"10.0.3.30:8443", "10.0.2.20:8443"},
                                    {"10.0.2.20:8443", "10.0.1.15:41000"}};
    static const int64_t at[] = {0, 0, 180, 2310, 2420};
    bool req = t == CODEC_TRIGGER_RX_REQUEST || t == CODEC_TRIGGER_TX_REQUEST;
    char ts[24];
    snprintf(ts, sizeof ts, "%" PRId64, (int64_t)1764486000000000 + at[t]);
    rd_kafka_headers_t *h = rd_kafka_headers_new(24);
    rd_kafka_header_add(h, "@timestamp-us", -1, ts, -1);
    rd_kafka_header_add(h, "@message-type", -1, req ? "request" : "response", -1);
    rd_kafka_header_add(h, "@trigger-point", -1, codec_trigger_name(t), -1);
    rd_kafka_header_add(h, "@nf-type", -1, "SCP", -1);
    rd_kafka_header_add(h, "@nf-instance", -1, "5b1d3c52-9d0a-4b5e-8f3e-1a2b3c4d5e6f", -1);
    rd_kafka_header_add(h, "@src-addr", -1, addr[t][0], -1);
    rd_kafka_header_add(h, "@dst-addr", -1, addr[t][1], -1);
    rd_kafka_header_add(h, "@consumer-id", -1, "1c8a7f44-a0f0-4e1b-9f00-000000000001", -1);
    rd_kafka_header_add(h, "@consumer-fqdn", -1, "amf01.5gc.mnc093.mcc208.3gppnetwork.org", -1);
    rd_kafka_header_add(h, "@producer-id", -1, "8e2f1d66-d0d0-4c2a-8b00-000000000002", -1);
    rd_kafka_header_add(h, "@producer-fqdn", -1, "udm01.5gc.mnc093.mcc208.3gppnetwork.org", -1);
    if (req) {
        rd_kafka_header_add(h, ":method", -1, "GET", -1);
        rd_kafka_header_add(h, ":scheme", -1, "https", -1);
        rd_kafka_header_add(h, ":authority", -1, "udm.5gc.mnc093.mcc208.3gppnetwork.org", -1);
        rd_kafka_header_add(h, ":path", -1, "/nudm-sdm/v2/imsi-208930000000001/am-data", -1);
        rd_kafka_header_add(h, "accept", -1, "application/json", -1);
        rd_kafka_header_add(h, "user-agent", -1, "AMF-amf01", -1);
    } else {
        rd_kafka_header_add(h, ":status", -1, "200", -1);
        rd_kafka_header_add(h, "content-type", -1, "application/json", -1);
    }
    return h;
}

static const char bench_body[] =
    "{\"gpsis\":[\"msisdn-33612345678\"],\"subscribedUeAmbr\":{\"uplink\":\"1 Gbps\","
    "\"downlink\":\"2 Gbps\"},\"nssai\":{\"defaultSingleNssais\":[{\"sst\":1}]}}";

static bench_sink_t *bench_sink_of;

static int bench_copy(correlate_t *c, codec_msg_t *m, rd_kafka_headers_t *const *tpl,
                      codec_trigger_t t, uint64_t txn, int32_t part, int64_t off, bool decode)
{
    char key[40];
    int klen = snprintf(key, sizeof key, "c0a80101-%016" PRIx64 "-scp", txn);
    if (decode) {
        bool resp = t >= CODEC_TRIGGER_RX_RESPONSE;
        codec_error_t e;
        if (codec_decode_parts(m, key, (size_t)klen, resp ? bench_body : "",
                               resp ? sizeof bench_body - 1 : 0, tpl[t], &e) != CODEC_OK) {
            fprintf(stderr, "bench: decode failed: %s %s\n", codec_reason_name(e.reason), e.field);
            return -1;
        }
    } else {
        /* Correlation alone: reuse the decoded copy of this trigger point, new key only. */
        m->key = (codec_slice_t){key, (size_t)klen};
        m->meta[CODEC_META_CORRELATION_ID] = m->key;
    }
    int rc = correlate_add(c, m, part, off, 0);
    bench_sink_t *s = bench_sink_of;
    for (size_t i = 0; i < s->n_tickets; i++)
        correlate_ack(c, s->parts[i], s->tickets[i]);
    s->n_tickets = 0;
    return rc;
}

int main(int argc, char **argv)
{
    uint64_t txns = 2000000, window = 10000, open_n = 1000000;
    uint32_t parts = 1;
    bool json = false, hold = false;
    static bench_sink_t sink;
    bench_sink_of = &sink;
    static const struct option opts[] = {{"transactions", required_argument, 0, 't'},
                                         {"window", required_argument, 0, 'w'},
                                         {"open", required_argument, 0, 'o'},
                                         {"partitions", required_argument, 0, 'p'},
                                         {"encode", required_argument, 0, 'e'},
                                         {"json", no_argument, 0, 'j'},
                                         {"hold", no_argument, 0, 'H'},
                                         {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 't':
            txns = strtoull(optarg, NULL, 10);
            break;
        case 'w':
            window = strtoull(optarg, NULL, 10);
            break;
        case 'o':
            open_n = strtoull(optarg, NULL, 10);
            break;
        case 'p':
            parts = (uint32_t)strtoul(optarg, NULL, 10);
            break;
        case 'e':
            sink.encode = strcmp(optarg, "json") == 0 ? 1 : strcmp(optarg, "binary") == 0 ? 2 : 0;
            break;
        case 'j':
            json = true;
            break;
        case 'H':
            hold = true;
            break;
        default:
            fprintf(stderr,
                    "usage: %s [--transactions N] [--window W] [--open N] "
                    "[--partitions P] [--encode none|json|binary] [--hold] [--json]\n",
                    argv[0]);
            return 2;
        }
    }
    if (window == 0 || window > txns || parts == 0 || parts > 1024) {
        fprintf(stderr, "bench: need 0 < window <= transactions and 1..1024 partitions\n");
        return 2;
    }
    if (buf_init(&sink.out, 4096, 1 << 20) != 0)
        return 1;

    rd_kafka_headers_t *tpl[CODEC_TRIGGER__COUNT] = {0};
    for (int t = CODEC_TRIGGER_RX_REQUEST; t < CODEC_TRIGGER__COUNT; t++)
        tpl[t] = bench_template((codec_trigger_t)t);
    static codec_msg_t m[CODEC_TRIGGER__COUNT];
    char err[256];
    double rate[2] = {0, 0};

    /* Phase 1: throughput, with and without decoding. */
    for (int pass = 0; pass < 2; pass++) {
        bool decode = pass == 0;
        correlate_config_t cfg = {.max_open = (uint32_t)(window * 2),
                                  .hold_until_ack = hold,
                                  .emit = bench_emit,
                                  .opaque = &sink};
        correlate_t *c = correlate_new(&cfg, err, sizeof err);
        if (!c) {
            fprintf(stderr, "bench: %s\n", err);
            return 1;
        }
        /* Decode each template once so the correlate-only pass has copies to re-key. */
        for (int t = CODEC_TRIGGER_RX_REQUEST; t < CODEC_TRIGGER__COUNT; t++)
            bench_copy(c, &m[t], tpl, (codec_trigger_t)t, UINT64_MAX - (uint64_t)t, 0, 0, true);
        correlate_drain_all(c, CORRELATE_DRAIN_HANDOVER);
        sink.xdrs = sink.complete = 0;
        int64_t off = 0;
        double t0 = cpu_seconds();
        for (uint64_t i = 0; i < txns + window; i++) {
            if (i < txns) {
                int32_t p = (int32_t)(i % parts);
                if (bench_copy(c, &m[CODEC_TRIGGER_RX_REQUEST], tpl, CODEC_TRIGGER_RX_REQUEST, i, p,
                               off++, decode) ||
                    bench_copy(c, &m[CODEC_TRIGGER_TX_REQUEST], tpl, CODEC_TRIGGER_TX_REQUEST, i, p,
                               off++, decode))
                    return 1;
            }
            if (i >= window) {
                uint64_t j = i - window;
                int32_t p = (int32_t)(j % parts);
                if (bench_copy(c, &m[CODEC_TRIGGER_RX_RESPONSE], tpl, CODEC_TRIGGER_RX_RESPONSE, j,
                               p, off++, decode) ||
                    bench_copy(c, &m[CODEC_TRIGGER_TX_RESPONSE], tpl, CODEC_TRIGGER_TX_RESPONSE, j,
                               p, off++, decode))
                    return 1;
            }
        }
        double cpu = cpu_seconds() - t0;
        if (sink.complete != txns) {
            fprintf(stderr, "bench: %" PRIu64 " complete xDRs for %" PRIu64 " transactions\n",
                    sink.complete, txns);
            return 1;
        }
        rate[pass] = (double)(txns * 4) / cpu;
        correlate_free(c);
    }

    /* Phase 2: memory of open transactions. */
    long rss0 = rss_bytes();
    correlate_config_t cfg = {
        .max_open = (uint32_t)((open_n + parts - 1) / parts), .emit = bench_emit, .opaque = &sink};
    correlate_t *c = correlate_new(&cfg, err, sizeof err);
    if (!c) {
        fprintf(stderr, "bench: %s\n", err);
        return 1;
    }
    sink.xdrs = 0;
    double t0 = cpu_seconds();
    for (uint64_t i = 0; i < open_n; i++)
        if (bench_copy(c, &m[CODEC_TRIGGER_RX_REQUEST], tpl, CODEC_TRIGGER_RX_REQUEST, i,
                       (int32_t)(i % parts), (int64_t)i, false))
            return 1;
    double fill_cpu = cpu_seconds() - t0;
    long rss1 = rss_bytes();
    correlate_stats_t st = correlate_stats(c);
    t0 = cpu_seconds();
    size_t expired = correlate_expire(c, INT64_MAX / 2);
    double expire_cpu = cpu_seconds() - t0;
    if (st.open != open_n || expired != open_n || sink.xdrs != open_n) {
        fprintf(stderr, "bench: open %" PRIu64 ", expired %zu, xDRs %" PRIu64 " for %" PRIu64 "\n",
                st.open, expired, sink.xdrs, open_n);
        return 1;
    }
    correlate_free(c);

    double mib = (double)(rss1 - rss0) / (1024.0 * 1024.0);
    if (json) {
        printf("{\"copies_per_cpu_second_decode_correlate\":%.0f,"
               "\"copies_per_cpu_second_correlate\":%.0f,\"transactions\":%" PRIu64
               ",\"window\":%" PRIu64 ",\"open_transactions\":%" PRIu64 ",\"partitions\":%u,"
               "\"rss_growth_mib\":%.1f,\"bytes_per_open_transaction\":%.0f,"
               "\"engine_memory_bytes\":%" PRIu64 ",\"fill_seconds\":%.3f,"
               "\"expire_seconds\":%.3f}\n",
               rate[0], rate[1], txns, window, open_n, parts, mib,
               (double)(rss1 - rss0) / (double)open_n, st.memory_bytes, fill_cpu, expire_cpu);
    } else {
        printf("throughput: %" PRIu64 " transactions x 4 copies, %" PRIu64 " open, %u partition(s)"
               "%s\n",
               txns, window, parts,
               sink.encode == 1   ? ", xDRs encoded as JSON"
               : sink.encode == 2 ? ", xDRs encoded binary"
                                  : "");
        printf("  decode + correlate: %12.0f copies per CPU-second\n", rate[0]);
        printf("  correlate only:     %12.0f copies per CPU-second\n", rate[1]);
        printf("memory: %" PRIu64 " open transactions over %u partition(s)\n", open_n, parts);
        printf("  RSS growth %.1f MiB (%.0f bytes per transaction; engine accounts %.1f MiB)\n",
               mib, (double)(rss1 - rss0) / (double)open_n,
               (double)st.memory_bytes / (1024.0 * 1024.0));
        printf("  fill %.3f CPU-s, expire all %.3f CPU-s\n", fill_cpu, expire_cpu);
        printf("  process RSS at peak %.1f MiB\n", (double)rss1 / (1024.0 * 1024.0));
    }
    for (int t = CODEC_TRIGGER_RX_REQUEST; t < CODEC_TRIGGER__COUNT; t++)
        rd_kafka_headers_destroy(tpl[t]);
    buf_free(&sink.out);
    return 0;
}
