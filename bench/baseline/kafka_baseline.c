/* ndd-kafka-baseline: what librdkafka alone does on this machine, so every NDD figure has its
 * local limit beside it (docs/benchmarks.md).
 *
 *   ndd-kafka-baseline --mode produce --bootstrap B --topic T --count N [--size 3400]
 *                      [--headers 16] [--partitions P]
 *   ndd-kafka-baseline --mode consume|forward --bootstrap B --topic T --count N [--timeout S]
 *   ndd-kafka-baseline --mode relay --bootstrap B --topic T --to T2 --count N [--keep-headers]
 *                      [--prop [consumer.|producer.]NAME=VALUE]...
 *
 * produce: the producer settings NDD's daemons use (idempotent, acks=all, one request in
 *   flight, linger.ms=5), N records of --size bytes (value + --headers small headers), flat
 *   out; done when all are acknowledged.
 * consume: a fresh consumer group reads N records from the earliest offset and discards them
 *   (touching every header, as a decoder would).
 * forward: the same, and every record's value is written to a TCP connection on loopback (64
 *   values per writev(), straight from the consumed records) to a child process that discards
 *   them: what any forwarder to a socket pays at least, beside the adapter's TCP mode. Its
 *   line adds "written_bytes" and "received_bytes" (what the reader counted; a run where they
 *   differ fails).
 * relay: what ndd-aggregation's Kafka work costs librdkafka alone: a fresh consumer group reads
 *   T from the earliest offset with the aggregation's consumer settings (fetches of 64 KiB or
 *   10 ms, offsets stored by hand), parses every record's headers, and produces the record's
 *   key and value (copied by librdkafka, the record released at once) to T2 (made first with
 *   T's partition count, when missing) with NDD's producer settings; a record's offset is
 *   stored once its copy is acknowledged.
 *   Without --keep-headers the copy has no headers (as MAIN in the frame form); with it the
 *   parsed headers move to the copy (the header form). Done when N copies are acknowledged, or
 *   on SIGTERM (a steady-rate run).
 * --prop sets a librdkafka property on the consumer, the producer, or (unprefixed) both.
 * Prints one JSON line: {"mode","records","seconds","mps","cpu_s","msgs_per_cpu_s","rss_mb",
 * "mb_per_s"}. CPU is this process's user+system time (librdkafka's threads included).
 * Exit 0; 1 when fewer than N records were acknowledged/read in time; 2 on bad options. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "kafka.h"
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

/* extra: more JSON members (",\"k\":v..."), or "". */
static void kb_print(const char *mode, uint64_t n, double secs, double cpu, uint64_t bytes,
                     const char *extra)
{
    printf("{\"mode\":\"%s\",\"records\":%" PRIu64 ",\"seconds\":%.3f,\"mps\":%.1f,"
           "\"cpu_s\":%.3f,\"msgs_per_cpu_s\":%.1f,\"rss_mb\":%.1f,\"mb_per_s\":%.1f%s}\n",
           mode, n, secs, secs > 0 ? (double)n / secs : 0, cpu, cpu > 0 ? (double)n / cpu : 0,
           proc_usage_peak_rss_mb(), secs > 0 ? (double)bytes / secs / 1e6 : 0, extra);
}

#define KB_MAX_PROPS 16
static const char *kb_prop_key[KB_MAX_PROPS], *kb_prop_val[KB_MAX_PROPS];
static int kb_nprops;

/* Applies the --prop settings meant for this client ("consumer." or "producer." prefix, or
 * none for both) after its defaults, so that a setting overrides them. */
static int kb_set_props(rd_kafka_conf_t *conf, const char *mine)
{
    for (int i = 0; i < kb_nprops; i++) {
        const char *k = kb_prop_key[i];
        if (!strncmp(k, "consumer.", 9) || !strncmp(k, "producer.", 9)) {
            if (strncmp(k, mine, 9))
                continue;
            k += 9;
        }
        if (kb_set(conf, k, kb_prop_val[i]))
            return -1;
    }
    return 0;
}

/* NDD's producer settings (services/kafka/kafka.c: idempotent, one request in flight, 5 ms
 * batches, bounded queue), then the --prop settings for producers; NULL on a bad setting
 * (reported). */
static rd_kafka_conf_t *kb_producer_conf(const char *bootstrap)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (kb_set(conf, "bootstrap.servers", bootstrap) ||
        kb_set(conf, "enable.idempotence", "true") || kb_set(conf, "acks", "all") ||
        kb_set(conf, "max.in.flight", "1") || kb_set(conf, "linger.ms", "5") ||
        kb_set(conf, "batch.num.messages", "10000") ||
        kb_set(conf, "queue.buffering.max.messages", "100000") ||
        kb_set(conf, "queue.buffering.max.kbytes", "65536") ||
        kb_set(conf, "partitioner", "murmur2_random") || kb_set(conf, "log_level", "3") ||
        kb_set_props(conf, "producer.")) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    return conf;
}

/* A fresh group (NAME-pid-time) reading from the earliest offset and committing what is
 * stored, with the n_more settings of more and then the --prop settings for consumers; NULL
 * on a bad setting (reported). */
static rd_kafka_conf_t *kb_consumer_conf(const char *bootstrap, const char *name,
                                         const char *const (*more)[2], size_t n_more)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char group[64];
    snprintf(group, sizeof group, "%s-%d-%ld", name, (int)getpid(), (long)time(NULL));
    int bad = kb_set(conf, "bootstrap.servers", bootstrap) || kb_set(conf, "group.id", group) ||
              kb_set(conf, "auto.offset.reset", "earliest") ||
              kb_set(conf, "enable.auto.commit", "true") || kb_set(conf, "log_level", "3");
    for (size_t i = 0; !bad && i < n_more; i++)
        bad = kb_set(conf, more[i][0], more[i][1]);
    if (bad || kb_set_props(conf, "consumer.")) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    return conf;
}

static int kb_produce(const char *bootstrap, const char *topic, uint64_t count, size_t size,
                      int nheaders, double timeout)
{
    rd_kafka_conf_t *conf = kb_producer_conf(bootstrap);
    if (!conf)
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
    kb_print("produce", kb_acked, secs, cpu, kb_acked * size, "");
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

/* What every consuming mode counts, from its first record (group join time is not
 * throughput). */
typedef struct kb_meter {
    uint64_t n, bytes, hsum;
    double t0, c0;
} kb_meter_t;

/* The work every consuming mode does on a record: an error is reported (a partition end
 * silently) and the record destroyed (returns false); otherwise the first record starts the
 * clocks, the record is counted and every header touched, as a decoder would, and *hp gets
 * its headers (NULL when it has none). */
static bool kb_take(kb_meter_t *mt, rd_kafka_message_t *m, const char *topic,
                    rd_kafka_headers_t **hp)
{
    *hp = NULL;
    if (m->err) {
        if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
            fprintf(stderr, "ndd-kafka-baseline: consume %s [%d]: %s\n", topic, (int)m->partition,
                    rd_kafka_message_errstr(m));
        rd_kafka_message_destroy(m);
        return false;
    }
    if (mt->n++ == 0) {
        mt->t0 = kb_mono_s();
        mt->c0 = proc_usage_cpu_s();
    }
    mt->bytes += m->len + m->key_len;
    if (rd_kafka_message_headers(m, hp) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        *hp = NULL;
        return true;
    }
    const char *name;
    const void *v;
    size_t vl;
    for (size_t i = 0; rd_kafka_header_get_all(*hp, i, &name, &v, &vl) == 0; i++)
        mt->hsum += vl;
    return true;
}

/* A group consumer from conf (taken, even on failure), subscribed to topic; NULL when it
 * cannot be made or subscribed (reported). */
static rd_kafka_t *kb_consumer_start(rd_kafka_conf_t *conf, const char *bootstrap,
                                     const char *topic)
{
    char err[512];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk) {
        fprintf(stderr, "ndd-kafka-baseline: consumer for %s: %s\n", bootstrap, err);
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t e = rd_kafka_subscribe(rk, sub);
    rd_kafka_topic_partition_list_destroy(sub);
    if (e) {
        fprintf(stderr, "ndd-kafka-baseline: subscribe %s: %s\n", topic, rd_kafka_err2str(e));
        rd_kafka_destroy(rk);
        return NULL;
    }
    return rk;
}

/* forward: the records' values leave through a TCP connection on loopback to a child process
 * that reads and discards them (its CPU is not this process's), KB_FWD_BATCH values per
 * writev() straight from the consumed records: the least a forwarder to a socket does. At
 * the end the child reports the bytes it read through a pipe, so a run proves its bytes
 * arrived. */
#define KB_FWD_BATCH 64

typedef struct kb_fwd {
    int fd;      /* the connection to the reader */
    int back;    /* the pipe the reader reports its byte count on */
    pid_t child; /* the reader */
    uint64_t written, received;
} kb_fwd_t;

static int kb_fwd_flush(kb_fwd_t *f, struct iovec *iov, rd_kafka_message_t **held, int *n)
{
    struct iovec *v = iov;
    int left = *n, rc = 0;
    while (left > 0) {
        ssize_t w = writev(f->fd, v, left);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "ndd-kafka-baseline: forward write: %s\n", strerror(errno));
            rc = -1;
            break;
        }
        f->written += (uint64_t)w;
        while (left > 0 && (size_t)w >= v->iov_len) {
            w -= (ssize_t)v->iov_len;
            v++;
            left--;
        }
        if (left > 0) {
            v->iov_base = (char *)v->iov_base + w;
            v->iov_len -= (size_t)w;
        }
    }
    for (int i = 0; i < *n; i++)
        rd_kafka_message_destroy(held[i]);
    *n = 0;
    return rc;
}

/* A listening socket on 127.0.0.1 and a child that accepts one connection, discards what
 * comes until EOF and writes how many bytes that was to a pipe. Called before librdkafka
 * starts threads, so the fork copies none. 0, or -1 when any step failed (reported). */
static int kb_fwd_open(kb_fwd_t *f)
{
    int ls = socket(AF_INET, SOCK_STREAM, 0), pfd[2];
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 1) ||
        getsockname(ls, (struct sockaddr *)&a, &al) || pipe(pfd)) {
        fprintf(stderr, "ndd-kafka-baseline: forward listener: %s\n", strerror(errno));
        return -1;
    }
    f->child = fork();
    if (f->child == 0) {
        close(pfd[0]);
        int c = accept(ls, NULL, NULL);
        static char buf[1 << 18];
        uint64_t total = 0;
        ssize_t r;
        while (c >= 0 && (r = read(c, buf, sizeof buf)) > 0)
            total += (uint64_t)r;
        _exit(write(pfd[1], &total, sizeof total) == (ssize_t)sizeof total ? 0 : 1);
    }
    close(ls);
    close(pfd[1]);
    f->back = pfd[0];
    f->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (f->child < 0 || f->fd < 0 || connect(f->fd, (struct sockaddr *)&a, sizeof a)) {
        fprintf(stderr, "ndd-kafka-baseline: forward connect: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}

/* Ends the connection and waits for the reader's count (f->received). */
static void kb_fwd_close(kb_fwd_t *f)
{
    shutdown(f->fd, SHUT_WR);
    if (read(f->back, &f->received, sizeof f->received) != (ssize_t)sizeof f->received)
        f->received = 0;
    close(f->fd);
    close(f->back);
    waitpid(f->child, NULL, 0);
}

/* consume (fwd NULL) or forward (the values written to fwd's reader). */
static int kb_consume(const char *bootstrap, const char *topic, uint64_t count, double timeout,
                      kb_fwd_t *fwd)
{
    const char *mode = fwd ? "forward" : "consume";
    rd_kafka_conf_t *conf = kb_consumer_conf(bootstrap, "ndd-kafka-baseline", NULL, 0);
    if (!conf)
        return 2;
    rd_kafka_t *rk = kb_consumer_start(conf, bootstrap, topic);
    if (!rk)
        return 1;
    double start = kb_mono_s();
    kb_meter_t mt = {.c0 = proc_usage_cpu_s()};
    struct iovec iov[KB_FWD_BATCH];
    rd_kafka_message_t *held[KB_FWD_BATCH];
    int nheld = 0;
    while (mt.n < count && !kb_stop && kb_mono_s() - start < timeout) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, nheld ? 0 : 100);
        if (!m) {
            if (nheld && kb_fwd_flush(fwd, iov, held, &nheld))
                break;
            continue;
        }
        rd_kafka_headers_t *h;
        if (!kb_take(&mt, m, topic, &h))
            continue;
        if (!fwd) {
            rd_kafka_message_destroy(m);
            continue;
        }
        iov[nheld] = (struct iovec){m->payload, m->len};
        held[nheld++] = m;
        if ((nheld == KB_FWD_BATCH || mt.n == count) && kb_fwd_flush(fwd, iov, held, &nheld))
            break;
    }
    for (int i = 0; i < nheld; i++)
        rd_kafka_message_destroy(held[i]);
    uint64_t n = mt.n;
    double secs = n ? kb_mono_s() - mt.t0 : 0, cpu = proc_usage_cpu_s() - mt.c0;
    char extra[96] = "";
    if (fwd) {
        kb_fwd_close(fwd);
        snprintf(extra, sizeof extra, ",\"written_bytes\":%" PRIu64 ",\"received_bytes\":%" PRIu64,
                 fwd->written, fwd->received);
    }
    kb_print(mode, n, secs, cpu, mt.bytes + mt.hsum, extra);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    if (fwd && fwd->received != fwd->written) {
        fprintf(stderr, "ndd-kafka-baseline: the reader got %" PRIu64 " of %" PRIu64 " bytes\n",
                fwd->received, fwd->written);
        return 1;
    }
    if (n < count) {
        fprintf(stderr, "ndd-kafka-baseline: read %" PRIu64 " of %" PRIu64 " from %s\n", n, count,
                topic);
        return 1;
    }
    return 0;
}

/* librdkafka copies each value (RD_KAFKA_MSG_F_COPY) and the consumed record is released at
 * once: holding the records until their reports instead pinned their fetch buffers (up to
 * 290 MiB) and cost more CPU (81,000-112,000 against 124,000-144,000 copies per CPU-second
 * on one backlog). The copy's opaque carries the record's partition and offset, which is stored
 * once the copy is acknowledged (at-least-once, as the aggregation). */
static rd_kafka_topic_t *kb_relay_from; /* the consumer's handle of the input topic */
#define KB_PART_BITS 12                 /* partitions per input topic: at most 4,096 */

static void kb_relay_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    (void)opaque;
    uintptr_t po = (uintptr_t)m->_private;
    int32_t part = (int32_t)(po & ((1u << KB_PART_BITS) - 1));
    int64_t off = (int64_t)(po >> KB_PART_BITS);
    if (m->err) {
        if (kb_failed++ < 5)
            fprintf(stderr, "ndd-kafka-baseline: relay of %s [%d] @%" PRId64 " failed: %s\n",
                    rd_kafka_topic_name(kb_relay_from), (int)part, off, rd_kafka_err2str(m->err));
    } else {
        kb_acked++;
        rd_kafka_offset_store(kb_relay_from, part, off);
    }
}

static int kb_relay(const char *bootstrap, const char *from, const char *to, uint64_t count,
                    bool keep_headers, double timeout)
{
    char err[512];
    /* The aggregation's consumer (services/kafka/kafka.c, aggregation/agg_worker.c) and NDD's
     * producer: the same client work, none of NDD's own. */
    static const char *const agg_consumer[][2] = {{"enable.auto.offset.store", "false"},
                                                  {"auto.commit.interval.ms", "1000"},
                                                  {"queued.max.messages.kbytes", "16384"},
                                                  {"fetch.min.bytes", "65536"},
                                                  {"fetch.wait.max.ms", "10"}};
    rd_kafka_conf_t *cc = kb_consumer_conf(bootstrap, "ndd-kafka-relay", agg_consumer,
                                           sizeof agg_consumer / sizeof agg_consumer[0]);
    rd_kafka_conf_t *pc = cc ? kb_producer_conf(bootstrap) : NULL;
    if (!pc) {
        if (cc)
            rd_kafka_conf_destroy(cc);
        return 2;
    }
    /* T2 as the aggregation makes MAIN: as many partitions as the input (a broker's
     * auto-created topic would have its own default, and the partition count weighs on what
     * the producer and the broker pay). */
    int parts = kafka_admin_topic_partitions(bootstrap, from, 15000);
    if (parts < 1 || kafka_admin_create_topic(bootstrap, to, parts, 1, NULL, 0, 15000)) {
        fprintf(stderr, "ndd-kafka-baseline: cannot make %s like %s on %s\n", to, from, bootstrap);
        rd_kafka_conf_destroy(cc);
        rd_kafka_conf_destroy(pc);
        return 1;
    }
    rd_kafka_conf_set_dr_msg_cb(pc, kb_relay_dr);
    rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, pc, err, sizeof err);
    if (!p) {
        fprintf(stderr, "ndd-kafka-baseline: producer for %s: %s\n", bootstrap, err);
        rd_kafka_conf_destroy(cc);
        return 1;
    }
    rd_kafka_t *c = kb_consumer_start(cc, bootstrap, from);
    if (!c) {
        rd_kafka_destroy(p);
        return 1;
    }
    rd_kafka_resp_err_t e;
    kb_relay_from = rd_kafka_topic_new(c, from, NULL);
    rd_kafka_queue_t *q = rd_kafka_queue_get_consumer(c);
    rd_kafka_message_t *batch[1000];
    double start = kb_mono_s();
    kb_meter_t mt = {.c0 = proc_usage_cpu_s()};
    while (kb_acked + kb_failed < count && !kb_stop && kb_mono_s() - start < timeout) {
        /* Wait for one record, then take what else is there: consume_batch_queue() with a
         * timeout would hold the first record until 1,000 came, which no forwarder does. */
        rd_kafka_message_t *first = rd_kafka_consumer_poll(c, 100);
        ssize_t got = 0;
        if (first) {
            batch[0] = first;
            got = rd_kafka_consume_batch_queue(q, 0, batch + 1, 999);
            got = got < 0 ? 1 : got + 1;
        }
        for (ssize_t i = 0; i < got; i++) {
            rd_kafka_message_t *m = batch[i];
            rd_kafka_headers_t *h;
            if (mt.n == count) { /* past N: left for the next group member */
                rd_kafka_message_destroy(m);
                continue;
            }
            if (!kb_take(&mt, m, from, &h))
                continue;
            if (h && keep_headers)
                rd_kafka_message_detach_headers(m, &h);
            else
                h = NULL;
            void *op = (void *)(((uintptr_t)m->offset << KB_PART_BITS) | (uintptr_t)m->partition);
            for (;;) {
                e = rd_kafka_producev(p, RD_KAFKA_V_TOPIC(to), RD_KAFKA_V_KEY(m->key, m->key_len),
                                      RD_KAFKA_V_VALUE(m->payload, m->len), RD_KAFKA_V_HEADERS(h),
                                      RD_KAFKA_V_OPAQUE(op),
                                      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
                if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL || kb_stop)
                    break;
                rd_kafka_poll(p, 10); /* bounded queue: wait for acknowledgements */
            }
            if (e) {
                fprintf(stderr, "ndd-kafka-baseline: relay of %s [%d] @%" PRId64 " to %s: %s\n",
                        from, (int)m->partition, m->offset, to, rd_kafka_err2str(e));
                if (h)
                    rd_kafka_headers_destroy(h);
                kb_failed++;
            }
            rd_kafka_message_destroy(m);
        }
        rd_kafka_poll(p, 0);
    }
    while (rd_kafka_outq_len(p) > 0 && kb_mono_s() - start < timeout + 30)
        rd_kafka_poll(p, 50);
    double secs = mt.n ? kb_mono_s() - mt.t0 : 0, cpu = proc_usage_cpu_s() - mt.c0;
    kb_print("relay", kb_acked, secs, cpu, mt.bytes + mt.hsum, "");
    rd_kafka_queue_destroy(q);
    rd_kafka_topic_destroy(kb_relay_from);
    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);
    rd_kafka_destroy(p);
    if (kb_acked < count && !kb_stop) {
        fprintf(stderr,
                "ndd-kafka-baseline: relayed %" PRIu64 " of %" PRIu64 " from %s to %s (%" PRIu64
                " failed)\n",
                kb_acked, count, from, to, kb_failed);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = NULL, *bootstrap = getenv("NDD_KAFKA"), *topic = NULL, *to = NULL;
    bool keep_headers = false;
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
                                       {"to", required_argument, 0, 'o'},
                                       {"keep-headers", no_argument, 0, 'k'},

                                       {"prop", required_argument, 0, 'p'},
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
        case 'o':
            to = optarg;
            break;
        case 'k':
            keep_headers = true;
            break;
        case 'p': {
            char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg || kb_nprops == KB_MAX_PROPS) {
                fprintf(stderr, "ndd-kafka-baseline: --prop wants NAME=VALUE (at most %d)\n",
                        KB_MAX_PROPS);
                return 2;
            }
            *eq = '\0';
            kb_prop_key[kb_nprops] = optarg;
            kb_prop_val[kb_nprops++] = eq + 1;
            break;
        }
        case 'h':
            printf("usage: ndd-kafka-baseline --mode produce|consume|forward|relay --bootstrap B "
                   "--topic T\n"
                   "       [--count N (100000)] [--size BYTES (3400)] [--headers N (16)]\n"
                   "       [--timeout S (120)] [--to T2 (relay)] [--keep-headers] (relay)\n"
                   "       [--prop [consumer.|producer.]NAME=VALUE]...\n");
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
        return kb_consume(bootstrap, topic, count, timeout, NULL);
    if (!strcmp(mode, "forward")) {
        kb_fwd_t fwd = {.fd = -1, .back = -1, .child = -1};
        signal(SIGPIPE, SIG_IGN); /* a dead reader is a write error, reported */
        if (kb_fwd_open(&fwd))
            return 1;
        return kb_consume(bootstrap, topic, count, timeout, &fwd);
    }
    if (!strcmp(mode, "relay")) {
        if (!to) {
            fprintf(stderr, "ndd-kafka-baseline: --mode relay needs --to\n");
            return 2;
        }
        return kb_relay(bootstrap, topic, to, count, keep_headers, timeout);
    }
    fprintf(stderr, "ndd-kafka-baseline: --mode must be produce, consume, forward or relay\n");
    return 2;
}
