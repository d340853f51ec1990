/* Benchmark of ndd-aggregation against librdkafka's own limits, in one run on one broker:
 *
 *   1. ndd-aggregation is started on an empty NF topic and joins its group;
 *   2. produce-only baseline: a child process produces N copies (3,400-byte body, the SBI
 *      headers of a real copy) with the producer settings NDD uses, while the daemon consumes
 *      them live, decodes, filters (an allow-all rule set that is still evaluated), enriches
 *      and produces them to MAIN, storing offsets after acknowledgement;
 *   3. the daemon is stopped (SIGTERM) once its group committed all N;
 *   4. consume-only baseline: a child process consumes the same N copies in a fresh group and
 *      does nothing with them but store offsets;
 *   5. relay baseline: `ndd-kafka-baseline --mode relay` consumes the same N copies in a
 *      fresh group with the daemon's consumer settings, parses their headers and produces
 *      each value to a second MAIN topic with NDD's producer settings, storing offsets after
 *      acknowledgement: the Kafka work of the aggregation done by librdkafka alone, none of
 *      NDD's (with --main-format headers it moves the headers along, as the header form).
 *
 * For each: messages per CPU-second (user+sys of that process from wait4's rusage, over its
 * whole life), wall time and peak RSS. The broker runs on the same machine and its CPU is
 * not counted. Usage:
 *
 *   ndd-bench-aggregation --bootstrap 127.0.0.1:9092 [--count 200000] [--size 3400]
 *                         [--partitions 6] [--daemon PATH] [--keep-topics] [--backlog]
 *                         [--prop [producer.|consumer.]NAME=VALUE]...
 *
 * --backlog: the produce-only child writes all N copies first and the daemon is started on
 * that backlog afterwards (the figure docs/benchmarks.md reports); its CPU is then the
 * drain alone plus its start-up, and its fetches and produce batches are full. Without it the
 * daemon consumes live at the rate the produce-only child reaches.
 *
 * --prop sets a librdkafka property in the baselines AND in the daemon (as --kafka.X), so a
 * client setting is judged by its effect on both in the same run: "producer.X" goes to the
 * produce-only child and the daemon's producer, "consumer.X" to the consume-only child and
 * the daemon's consumer, an unprefixed one to all of them.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "kafka.h"

typedef struct bench_result {
    const char *name;
    uint64_t messages;
    double cpu_s, wall_s;
    long maxrss_kib;
    int status;
} bench_result_t;

static const char *b_brokers = "127.0.0.1:9092";
static size_t b_count = 200000, b_size = 3400;
static int b_parts = 6;
#define B_MAX_PROPS 32
static char *b_prop_key[B_MAX_PROPS], *b_prop_val[B_MAX_PROPS], *b_prop_arg[B_MAX_PROPS];
static int b_nprops;

/* The --prop properties for one client kind ("producer." or "consumer."), prefix removed;
 * NULL for one of the other kind. */
static const char *b_prop_for(int i, const char *mine, const char *other)
{
    const char *k = b_prop_key[i];
    if (!strncmp(k, other, strlen(other)))
        return NULL;
    return !strncmp(k, mine, strlen(mine)) ? k + strlen(mine) : k;
}

static double b_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void b_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- child bodies ---- */

static int b_delivered, b_failed;
static void b_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *o)
{
    if (m->err)
        b_failed++;
    else
        b_delivered++;
}

static int child_produce(const char *topic)
{
    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *kv[][2] = {{"bootstrap.servers", b_brokers},
                           {"enable.idempotence", "true"},
                           {"linger.ms", "5"},
                           {"batch.num.messages", "10000"},
                           {"queue.buffering.max.messages", "100000"},
                           {"queue.buffering.max.kbytes", "65536"},
                           {"partitioner", "murmur2_random"}};
    for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
        if (rd_kafka_conf_set(conf, kv[i][0], kv[i][1], err, sizeof(err))) {
            fprintf(stderr, "bench: %s\n", err);
            return 1;
        }
    for (int i = 0; i < b_nprops; i++) {
        const char *k = b_prop_for(i, "producer.", "consumer.");
        if (k && rd_kafka_conf_set(conf, k, b_prop_val[i], err, sizeof(err))) {
            fprintf(stderr, "bench: %s\n", err);
            return 1;
        }
    }
    rd_kafka_conf_set_dr_msg_cb(conf, b_dr);
    rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    if (!p) {
        fprintf(stderr, "bench: %s\n", err);
        return 1;
    }
    char *body = malloc(b_size);
    memset(body, 'x', b_size);
    memcpy(body, "{\"supi\":\"imsi-208930000000001\",", 32 < b_size ? 32 : b_size);
    for (size_t i = 0; i < b_count; i++) {
        char key[32], seq[24], ts[24], path[96];
        int kl = snprintf(key, sizeof(key), "scp-%08zx-%04zu", i / 2, i % 7);
        snprintf(seq, sizeof(seq), "%zu", i);
        snprintf(ts, sizeof(ts), "%" PRIu64, (uint64_t)1764486000000000ULL + i);
        snprintf(path, sizeof(path), "/nudm-sdm/v2/imsi-2089300%08zu/am-data", i % 100000);
        rd_kafka_headers_t *h = rd_kafka_headers_new(16);
        const char *hv[][2] = {{"@correlation-id", key},
                               {"@timestamp-us", ts},
                               {"@message-type", "request"},
                               {"@trigger-point", "rx-request"},
                               {"@nf-type", "SCP"},
                               {"@nf-instance", "scp-01"},
                               {"@src-addr", "10.0.0.1:31000"},
                               {"@dst-addr", "10.0.0.2:443"},
                               {"@seq", seq},
                               {":method", "GET"},
                               {":scheme", "https"},
                               {":authority", "udm.5gc.mnc093.mcc208.3gppnetwork.org"},
                               {":path", path},
                               {"accept", "application/json"},
                               {"user-agent", "AMF-amf01.5gc.mnc093.mcc208.3gppnetwork.org"}};
        for (size_t k = 0; k < sizeof(hv) / sizeof(hv[0]); k++)
            rd_kafka_header_add(h, hv[k][0], -1, hv[k][1], -1);
        for (;;) {
            rd_kafka_resp_err_t e = rd_kafka_producev(
                p, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(key, (size_t)kl),
                RD_KAFKA_V_VALUE(body, b_size), RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END);
            if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
                break;
            if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                fprintf(stderr, "bench: produce: %s\n", rd_kafka_err2str(e));
                return 1;
            }
            rd_kafka_poll(p, 5);
        }
        rd_kafka_poll(p, 0);
    }
    rd_kafka_flush(p, 120000);
    int left = rd_kafka_outq_len(p);
    rd_kafka_destroy(p);
    free(body);
    if (left || b_failed || (size_t)b_delivered != b_count) {
        fprintf(stderr, "bench: produce: %d delivered, %d failed, %d left\n", b_delivered, b_failed,
                left);
        return 1;
    }
    return 0;
}

static int child_consume(const char *topic, const char *group)
{
    const char *topics[] = {topic};
    kafka_prop_t props[B_MAX_PROPS];
    size_t np = 0;
    for (int i = 0; i < b_nprops; i++) {
        const char *k = b_prop_for(i, "consumer.", "producer.");
        if (k)
            props[np++] = (kafka_prop_t){k, b_prop_val[i]};
    }
    kafka_consumer_opts_t o = {.brokers = b_brokers,
                               .group_id = group,
                               .topics = topics,
                               .n_topics = 1,
                               .props = props,
                               .n_props = np};
    char err[256];
    kafka_consumer_t *c = kafka_consumer_new(&o, err, sizeof(err));
    if (!c) {
        fprintf(stderr, "bench: %s\n", err);
        return 1;
    }
    size_t got = 0;
    double deadline = b_now() + 300;
    rd_kafka_message_t *msgs[1000];
    while (got < b_count && b_now() < deadline) {
        size_t n = kafka_consumer_poll_batch(c, msgs, 1000, 100);
        for (size_t i = 0; i < n; i++) {
            /* What any consumer must do at least: mark it done. */
            if (i + 1 == n)
                kafka_consumer_store(c, topic, msgs[i]->partition, msgs[i]->offset + 1);
            rd_kafka_message_destroy(msgs[i]);
        }
        got += n;
    }
    kafka_consumer_close(c);
    return got == b_count ? 0 : 1;
}

/* ---- measuring ---- */

static void b_finish(bench_result_t *r, pid_t pid, double t0)
{
    struct rusage ru;
    int st;
    while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR)
        ;
    r->wall_s = b_now() - t0;
    r->cpu_s = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
               ru.ru_stime.tv_usec / 1e6;
    r->maxrss_kib = ru.ru_maxrss;
    r->status = st;
    r->messages = b_count;
}

static void b_run_child(bench_result_t *r, int (*fn)(const char *, const char *), const char *a,
                        const char *b)
{
    double t0 = b_now();
    pid_t pid = fork();
    if (pid == 0)
        _exit(fn(a, b));
    b_finish(r, pid, t0);
}

static int child_produce2(const char *topic, const char *unused)
{
    (void)unused;
    return child_produce(topic);
}

static int64_t b_committed(const char *group, const char *topic)
{
    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", b_brokers, err, sizeof(err));
    rd_kafka_conf_set(conf, "group.id", group, err, sizeof(err));
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
    if (!rk)
        return -1;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(b_parts);
    for (int i = 0; i < b_parts; i++)
        rd_kafka_topic_partition_list_add(l, topic, i);
    int64_t sum = -1;
    if (!rd_kafka_committed(rk, l, 10000)) {
        sum = 0;
        for (int i = 0; i < l->cnt; i++)
            if (l->elems[i].offset > 0)
                sum += l->elems[i].offset;
    }
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_destroy(rk);
    return sum;
}

static void b_print(const bench_result_t *r)
{
    printf("%-28s %9" PRIu64 " msgs  %7.2f s wall  %7.2f s CPU  %10.0f msgs/CPU-s  "
           "peak RSS %6.1f MiB%s\n",
           r->name, r->messages, r->wall_s, r->cpu_s, r->cpu_s > 0 ? r->messages / r->cpu_s : 0,
           r->maxrss_kib / 1024.0,
           WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0 ? "" : "  (FAILED)");
}

int main(int argc, char **argv)
{
    char daemon[600];
    snprintf(daemon, sizeof(daemon), "%s/aggregation/ndd-aggregation", NDD_BINARY_DIR);
    bool keep = false, backlog = false;
    char a_format[64] = "--main-format=headers";
    if (getenv("NDD_KAFKA"))
        b_brokers = getenv("NDD_KAFKA");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--bootstrap") && i + 1 < argc)
            b_brokers = argv[++i];
        else if (!strcmp(argv[i], "--count") && i + 1 < argc)
            b_count = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--size") && i + 1 < argc)
            b_size = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--partitions") && i + 1 < argc)
            b_parts = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--daemon") && i + 1 < argc)
            snprintf(daemon, sizeof(daemon), "%s", argv[++i]);
        else if (!strcmp(argv[i], "--keep-topics"))
            keep = true;
        else if (!strcmp(argv[i], "--backlog"))
            backlog = true;
        else if (!strcmp(argv[i], "--main-format") && i + 1 < argc)
            snprintf(a_format, sizeof(a_format), "--main-format=%s", argv[++i]);
        else if (!strcmp(argv[i], "--prop") && i + 1 < argc && b_nprops < B_MAX_PROPS &&
                 strchr(argv[i + 1], '=')) {
            char *kv = strdup(argv[++i]);
            char *eq = strchr(kv, '=');
            *eq = '\0';
            b_prop_key[b_nprops] = kv;
            b_prop_val[b_nprops] = eq + 1;
            b_prop_arg[b_nprops] = malloc(strlen(argv[i]) + 16);
            sprintf(b_prop_arg[b_nprops], "--kafka.%s", argv[i]);
            b_nprops++;
        } else {
            fprintf(stderr,
                    "usage: %s [--bootstrap H:P] [--count N] [--size BYTES] "
                    "[--partitions P] [--daemon PATH] [--keep-topics] [--backlog] "
                    "[--main-format headers|frame] [--prop K=V]...\n",
                    argv[0]);
            return 2;
        }
    }
    if (b_count == 0 || b_size < 40 || b_parts < 1)
        return 2;
    char in[96], mainf[96], dlq[96], g1[96], g2[96];
    unsigned tag = (unsigned)getpid() ^ (unsigned)time(NULL);
    snprintf(in, sizeof(in), "ndd-bench-in-%08x", tag);
    snprintf(mainf, sizeof(mainf), "ndd-bench-main-%08x", tag);
    snprintf(dlq, sizeof(dlq), "ndd-bench-dlq-%08x", tag);
    snprintf(g1, sizeof(g1), "ndd-bench-consume-%08x", tag);
    snprintf(g2, sizeof(g2), "ndd-bench-agg-%08x", tag);
    if (kafka_admin_create_topic(b_brokers, in, b_parts, 1, NULL, 0, 15000) ||
        kafka_admin_create_topic(b_brokers, mainf, b_parts, 1, NULL, 0, 15000) ||
        kafka_admin_create_topic(b_brokers, dlq, 1, 1, NULL, 0, 15000)) {
        fprintf(stderr, "bench: cannot create topics on %s\n", b_brokers);
        return 1;
    }
    printf("ndd-aggregation benchmark: %zu copies of %zu bytes, %d partitions, broker %s\n",
           b_count, b_size, b_parts, b_brokers);
    for (int i = 0; i < b_nprops; i++)
        printf("  property %s=%s\n", b_prop_key[i], b_prop_val[i]);

    /* The daemon: an allow-all filter that still has a rule to evaluate per copy. By default
     * it starts first and consumes live while the produce-only baseline writes the copies.
     * With --backlog it drains what is already there (its fetch back-off on a full prefetch
     * queue is kicked: docs/aggregation.md, "librdkafka 2.0.2 and a full prefetch queue"). */
    char filter_path[] = "/tmp/ndd-bench-filter-XXXXXX";
    char log_path[] = "/tmp/ndd-bench-agg-log-XXXXXX";
    int fd = mkstemp(filter_path);
    const char *ftext = "{\"name\":\"bench\",\"default\":\"allow\",\"rules\":[{\"name\":\"drop-"
                        "heartbeat\",\"action\":\"drop\",\"match\":{\"field\":\":path\",\"op\":"
                        "\"prefix\",\"value\":\"/heartbeat\"}}]}";
    if (fd < 0 || write(fd, ftext, strlen(ftext)) < 0 || close(fd))
        return 1;
    int lfd = mkstemp(log_path);
    if (lfd < 0)
        return 1;
    char a_in[128], a_main[128], a_dlq[128], a_grp[128], a_bs[300], a_filter[128];
    snprintf(a_in, sizeof(a_in), "--topic=%s", in);
    snprintf(a_main, sizeof(a_main), "--main-topic=%s", mainf);
    snprintf(a_dlq, sizeof(a_dlq), "--dlq-topic=%s", dlq);
    snprintf(a_grp, sizeof(a_grp), "--group=%s", g2);
    snprintf(a_bs, sizeof(a_bs), "--bootstrap=%s", b_brokers);
    snprintf(a_filter, sizeof(a_filter), "--filter-file=%s", filter_path);
    char *dargv[16 + B_MAX_PROPS] = {daemon,
                                     a_bs,
                                     a_in,
                                     a_main,
                                     a_dlq,
                                     a_grp,
                                     a_filter,
                                     "--nf-type=SCP",
                                     "--create-topics=false",
                                     "--http.port=-1",
                                     "--config-topic=",
                                     "--events-topic=",
                                     "--log.level=info",
                                     a_format,
                                     NULL};
    for (int i = 0, n = 0; i < b_nprops; i++) {
        while (dargv[n])
            n++;
        dargv[n] = b_prop_arg[i];
    }
    bench_result_t prod = {.name = "librdkafka produce-only"};
    if (backlog) {
        b_run_child(&prod, child_produce2, in, NULL);
        b_print(&prod);
    }
    bench_result_t agg = {.name = backlog ? "ndd-aggregation (backlog)" : "ndd-aggregation"};
    double t0 = b_now();
    pid_t pid = fork();
    if (pid == 0) {
        dup2(lfd, 2);
        execv(daemon, dargv);
        _exit(127);
    }
    close(lfd);
    /* Wait until it owns the partitions, so that it consumes while the copies are written. */
    double deadline = b_now() + 60;
    for (;;) {
        char cmd[200];
        snprintf(cmd, sizeof(cmd), "grep -q 'consumer assigned' %s", log_path);
        if (system(cmd) == 0)
            break;
        if (b_now() > deadline) {
            fprintf(stderr, "bench: ndd-aggregation did not join its group (log %s)\n", log_path);
            kill(pid, SIGKILL);
            return 1;
        }
        b_sleep_ms(50);
    }

    if (!backlog) {
        b_run_child(&prod, child_produce2, in, NULL);
        b_print(&prod);
    }

    deadline = b_now() + 600;
    int64_t done = 0;
    while ((done = b_committed(g2, in)) < (int64_t)b_count && b_now() < deadline) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            fprintf(stderr, "bench: ndd-aggregation exited early (log %s)\n", log_path);
            return 1;
        }
        b_sleep_ms(100);
    }
    kill(pid, SIGTERM);
    b_finish(&agg, pid, t0);
    b_print(&agg);

    bench_result_t cons = {.name = "librdkafka consume-only"};
    b_run_child(&cons, child_consume, in, g1);
    b_print(&cons);

    bench_result_t rel = {.name = "librdkafka relay"};
    char relay_bin[600], relay_to[96], relay_n[32];
    snprintf(relay_bin, sizeof(relay_bin), "%s/bench/baseline/ndd-kafka-baseline", NDD_BINARY_DIR);
    snprintf(relay_to, sizeof(relay_to), "ndd-bench-relay-%08x", tag);
    snprintf(relay_n, sizeof(relay_n), "%zu", b_count);
    char *rargv[16 + 2 * B_MAX_PROPS] = {relay_bin,         "--mode",  "relay", "--bootstrap",
                                         (char *)b_brokers, "--topic", in,      "--to",
                                         relay_to,          "--count", relay_n};
    int rn = 11;
    if (!strcmp(a_format, "--main-format=headers"))
        rargv[rn++] = "--keep-headers";
    for (int i = 0; i < b_nprops; i++) {
        rargv[rn++] = "--prop";
        rargv[rn++] = b_prop_arg[i] + 8; /* "--kafka.K=V" without "--kafka." */
    }
    double rt0 = b_now();
    pid_t rpid = fork();
    if (rpid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, 1); /* its own JSON line: the figure is taken from wait4 here */
        execv(relay_bin, rargv);
        _exit(127);
    }
    b_finish(&rel, rpid, rt0);
    b_print(&rel);
    unlink(filter_path);
    unlink(log_path);
    printf("ratio ndd-aggregation / consume-only CPU per message: %.2f\n",
           (agg.cpu_s / b_count) / (cons.cpu_s / b_count));
    printf("ratio ndd-aggregation / (consume-only + produce-only) CPU per message: %.2f\n",
           agg.cpu_s / (cons.cpu_s + prod.cpu_s));
    printf("ratio ndd-aggregation / librdkafka relay CPU per message: %.2f\n",
           rel.cpu_s > 0 ? agg.cpu_s / rel.cpu_s : 0);
    if (!keep) {
        kafka_admin_delete_topic(b_brokers, in, 10000);
        kafka_admin_delete_topic(b_brokers, mainf, 10000);
        kafka_admin_delete_topic(b_brokers, dlq, 10000);
        kafka_admin_delete_topic(b_brokers, relay_to, 10000);
    }
    bool rel_ok = WIFEXITED(rel.status) && WEXITSTATUS(rel.status) == 0;
    return done >= (int64_t)b_count && rel_ok ? 0 : 1;
}
