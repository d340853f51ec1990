/* ndd-kafka-baseline: what librdkafka alone does on this machine, so every NDD figure has its
 * local limit beside it (docs/benchmarks.md).
 *
 *   ndd-kafka-baseline --mode produce --bootstrap B --topic T --count N [--size 3400]
 *                      [--headers 16] [--partitions P]
 *   ndd-kafka-baseline --mode consume --bootstrap B --topic T --count N [--timeout S]
 *
 * produce: the producer settings NDD's daemons use (idempotent, acks=all, linger.ms=5), N
 *   records of --size bytes (value + --headers small headers), flat out; done when all are
 *   acknowledged.
 * consume: a fresh consumer group reads N records from the earliest offset and discards them
 *   (touching every header, as a decoder would).
 * Prints one JSON line: {"mode","records","seconds","mps","cpu_s","msgs_per_cpu_s","rss_mb",
 * "mb_per_s"}. CPU is this process's user+system time (librdkafka's threads included).
 * Exit 0; 1 when fewer than N records were acknowledged/read in time; 2 on bad options. */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "proc_usage.h"

static volatile sig_atomic_t kb_stop;
static uint64_t kb_acked, kb_failed;

static void kb_on_signal(int sig)
{
    (void)sig;
    kb_stop = 1;
}

static double kb_mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void kb_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    (void)opaque;
    if (m->err) {
        if (kb_failed++ < 5)
            fprintf(stderr, "ndd-kafka-baseline: delivery to %s [%d] failed: %s\n",
                    rd_kafka_topic_name(m->rkt), (int)m->partition, rd_kafka_err2str(m->err));
    } else {
        kb_acked++;
    }
}

static int kb_set(rd_kafka_conf_t *conf, const char *k, const char *v)
{
    char err[512];
    if (rd_kafka_conf_set(conf, k, v, err, sizeof err) != RD_KAFKA_CONF_OK) {
        fprintf(stderr, "ndd-kafka-baseline: %s=%s: %s\n", k, v, err);
        return -1;
    }
    return 0;
}

static void kb_print(const char *mode, uint64_t n, double secs, double cpu, uint64_t bytes)
{
    printf("{\"mode\":\"%s\",\"records\":%" PRIu64 ",\"seconds\":%.3f,\"mps\":%.1f,"
           "\"cpu_s\":%.3f,\"msgs_per_cpu_s\":%.1f,\"rss_mb\":%.1f,\"mb_per_s\":%.1f}\n",
           mode, n, secs, secs > 0 ? (double)n / secs : 0, cpu, cpu > 0 ? (double)n / cpu : 0,
           proc_usage_peak_rss_mb(), secs > 0 ? (double)bytes / secs / 1e6 : 0);
}

static int kb_produce(const char *bootstrap, const char *topic, uint64_t count, size_t size,
                      int nheaders, double timeout)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (kb_set(conf, "bootstrap.servers", bootstrap) ||
        kb_set(conf, "enable.idempotence", "true") || kb_set(conf, "acks", "all") ||
        kb_set(conf, "max.in.flight", "1") || /* as NDD's producers (services/kafka/kafka.c) */
        kb_set(conf, "linger.ms", "5") || kb_set(conf, "queue.buffering.max.messages", "100000") ||
        kb_set(conf, "queue.buffering.max.kbytes", "65536") || kb_set(conf, "log_level", "3"))
        return 2;
    rd_kafka_conf_set_dr_msg_cb(conf, kb_dr);
    char err[512];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!rk) {
        fprintf(stderr, "ndd-kafka-baseline: producer for %s: %s\n", bootstrap, err);
        return 1;
    }
    /* Headers like an NF copy's (~24 bytes each); the value fills the rest of --size. */
    size_t hbytes = (size_t)nheaders * 24, vlen = size > hbytes + 32 ? size - hbytes - 32 : 1;
    char *value = malloc(vlen);
    if (!value) {
        fprintf(stderr, "ndd-kafka-baseline: out of memory\n");
        return 1;
    }
    memset(value, 'x', vlen);
    double t0 = kb_mono_s(), c0 = proc_usage_cpu_s();
    uint64_t sent = 0;
    char key[32];
    while (sent < count && !kb_stop && kb_mono_s() - t0 < timeout) {
        rd_kafka_headers_t *h = rd_kafka_headers_new((size_t)nheaders);
        for (int i = 0; i < nheaders; i++) {
            char hn[16];
            snprintf(hn, sizeof hn, "@hdr-%02d", i);
            rd_kafka_header_add(h, hn, -1, "0123456789abcdef", 16);
        }
        int klen = snprintf(key, sizeof key, "kb-%" PRIu64, sent / 2);
        rd_kafka_resp_err_t e =
            rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(key, (size_t)klen),
                              RD_KAFKA_V_VALUE(value, vlen), RD_KAFKA_V_HEADERS(h),
                              RD_KAFKA_V_MSGFLAGS(0), RD_KAFKA_V_END);
        if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            rd_kafka_headers_destroy(h);
            rd_kafka_poll(rk, 10); /* bounded queue: wait for acknowledgements */
            continue;
        }
        if (e) {
            rd_kafka_headers_destroy(h);
            fprintf(stderr, "ndd-kafka-baseline: produce to %s: %s\n", topic, rd_kafka_err2str(e));
            break;
        }
        sent++;
        rd_kafka_poll(rk, 0);
    }
    while (rd_kafka_outq_len(rk) > 0 && kb_mono_s() - t0 < timeout + 30)
        rd_kafka_poll(rk, 50);
    double secs = kb_mono_s() - t0, cpu = proc_usage_cpu_s() - c0;
    kb_print("produce", kb_acked, secs, cpu, kb_acked * size);
    rd_kafka_destroy(rk);
    free(value);
    if (kb_acked < count) {
        fprintf(stderr,
                "ndd-kafka-baseline: %" PRIu64 " of %" PRIu64 " acknowledged (%" PRIu64
                " failed)\n",
                kb_acked, count, kb_failed);
        return 1;
    }
    return 0;
}

static int kb_consume(const char *bootstrap, const char *topic, uint64_t count, double timeout)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char group[64];
    snprintf(group, sizeof group, "ndd-kafka-baseline-%d-%ld", (int)getpid(), (long)time(NULL));
    if (kb_set(conf, "bootstrap.servers", bootstrap) || kb_set(conf, "group.id", group) ||
        kb_set(conf, "auto.offset.reset", "earliest") ||
        kb_set(conf, "enable.auto.commit", "true") || kb_set(conf, "log_level", "3"))
        return 2;
    char err[512];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk) {
        fprintf(stderr, "ndd-kafka-baseline: consumer for %s: %s\n", bootstrap, err);
        return 1;
    }
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t e = rd_kafka_subscribe(rk, sub);
    rd_kafka_topic_partition_list_destroy(sub);
    if (e) {
        fprintf(stderr, "ndd-kafka-baseline: subscribe %s: %s\n", topic, rd_kafka_err2str(e));
        rd_kafka_destroy(rk);
        return 1;
    }
    double t0 = 0, start = kb_mono_s(), c0 = proc_usage_cpu_s();
    uint64_t n = 0, bytes = 0, hsum = 0;
    while (n < count && !kb_stop && kb_mono_s() - start < timeout) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (!m)
            continue;
        if (m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                fprintf(stderr, "ndd-kafka-baseline: consume %s [%d]: %s\n", topic,
                        (int)m->partition, rd_kafka_message_errstr(m));
            rd_kafka_message_destroy(m);
            continue;
        }
        if (n == 0) {
            /* Measure from the first record: group join time is not throughput. */
            t0 = kb_mono_s();
            c0 = proc_usage_cpu_s();
        }
        rd_kafka_headers_t *h = NULL;
        if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            const char *name;
            const void *v;
            size_t vl;
            for (size_t i = 0; rd_kafka_header_get_all(h, i, &name, &v, &vl) == 0; i++)
                hsum += vl;
        }
        bytes += m->len + m->key_len;
        n++;
        rd_kafka_message_destroy(m);
    }
    double secs = n ? kb_mono_s() - t0 : 0, cpu = proc_usage_cpu_s() - c0;
    kb_print("consume", n, secs, cpu, bytes + hsum);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    if (n < count) {
        fprintf(stderr, "ndd-kafka-baseline: read %" PRIu64 " of %" PRIu64 " from %s\n", n, count,
                topic);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = NULL, *bootstrap = getenv("NDD_KAFKA"), *topic = NULL;
    uint64_t count = 100000;
    long size = 3400, nheaders = 16;
    double timeout = 120;
    static const struct option lo[] = {{"mode", required_argument, 0, 'm'},
                                       {"bootstrap", required_argument, 0, 'b'},
                                       {"topic", required_argument, 0, 't'},
                                       {"count", required_argument, 0, 'n'},
                                       {"size", required_argument, 0, 's'},
                                       {"headers", required_argument, 0, 'H'},
                                       {"timeout", required_argument, 0, 'T'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'm':
            mode = optarg;
            break;
        case 'b':
            bootstrap = optarg;
            break;
        case 't':
            topic = optarg;
            break;
        case 'n':
            count = strtoull(optarg, NULL, 10);
            break;
        case 's':
            size = atol(optarg);
            break;
        case 'H':
            nheaders = atol(optarg);
            break;
        case 'T':
            timeout = atof(optarg);
            break;
        case 'h':
            printf("usage: ndd-kafka-baseline --mode produce|consume --bootstrap B --topic T\n"
                   "       [--count N (100000)] [--size BYTES (3400)] [--headers N (16)]\n"
                   "       [--timeout S (120)]\n");
            return 0;
        default:
            return 2;
        }
    }
    if (!mode || !bootstrap || !topic || count == 0 || size < 1 || size > (1 << 20) ||
        nheaders < 0 || nheaders > 64 || timeout <= 0 || optind != argc) {
        fprintf(stderr, "ndd-kafka-baseline: --mode, --bootstrap and --topic are required "
                        "(--help)\n");
        return 2;
    }
    signal(SIGINT, kb_on_signal);
    signal(SIGTERM, kb_on_signal);
    if (!strcmp(mode, "produce"))
        return kb_produce(bootstrap, topic, count, (size_t)size, (int)nheaders, timeout);
    if (!strcmp(mode, "consume"))
        return kb_consume(bootstrap, topic, count, timeout);
    fprintf(stderr, "ndd-kafka-baseline: --mode must be produce or consume\n");
    return 2;
}
