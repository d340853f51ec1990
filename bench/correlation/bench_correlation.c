/* Benchmark of the ndd-correlation daemon on a real broker (docs/correlation.md,
 * "Benchmark"):
 *
 *   1. ndd-nf-sim writes N copies (transactions of --copies copies each, --nf traffic, natural
 *      SBI sizes) to a fresh topic that plays MAIN;
 *   2. ndd-correlation is started on it (fresh group, fresh XDR topic) and correlates the
 *      backlog: decode, correlate, encode every xDR as JSON, produce it (idempotent, acks=all)
 *      and store offsets once acknowledged;
 *   3. once the group committed all N offsets and the XDR topic holds N / copies xDRs, the
 *      daemon is stopped (SIGTERM).
 *
 * Result: copies per CPU-second of the daemon (user + sys from wait4's rusage, over its whole
 * life, startup and group join included), wall time of the backlog, peak RSS. The broker and
 * the simulator run on the same machine and their CPU is not counted. Usage:
 *
 *   ndd-bench-correlation --bootstrap 127.0.0.1:9092 [--count 1000000] [--copies 4]
 *                         [--nf SCP] [--partitions 6] [--keep-topics] [-- daemon flags...]
 */
#include <errno.h>
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

static double bc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void bc_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static pid_t bc_spawn(char *const argv[], const char *log_path)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    if (log_path && !freopen(log_path, "a", stderr))
        _exit(127);
    if (log_path && !freopen("/dev/null", "w", stdout))
        _exit(127);
    execv(argv[0], argv);
    fprintf(stderr, "bench: exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* Sum over partitions of (high watermark - low watermark), or of the group's committed
 * offsets when group is set; -1 on error. */
static int64_t bc_count(rd_kafka_t *rk, const char *topic, int parts, const char *group)
{
    int64_t sum = 0;
    if (!group) {
        for (int p = 0; p < parts; p++) {
            int64_t lo, hi;
            if (rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &hi, 5000))
                return -1;
            sum += hi - lo;
        }
        return sum;
    }
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(parts);
    for (int p = 0; p < parts; p++)
        rd_kafka_topic_partition_list_add(l, topic, p);
    rd_kafka_resp_err_t e = rd_kafka_committed(rk, l, 5000);
    for (int p = 0; !e && p < l->cnt; p++)
        if (l->elems[p].offset > 0)
            sum += l->elems[p].offset;
    rd_kafka_topic_partition_list_destroy(l);
    return e ? -1 : sum;
}

static rd_kafka_t *bc_group_client(const char *brokers, const char *group)
{
    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", brokers, err, sizeof(err)) ||
        rd_kafka_conf_set(conf, "group.id", group, err, sizeof(err)) ||
        rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof(err))) {
        fprintf(stderr, "bench: %s\n", err);
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
    if (!rk) {
        fprintf(stderr, "bench: %s\n", err);
        rd_kafka_conf_destroy(conf);
    }
    return rk;
}

int main(int argc, char **argv)
{
    const char *brokers = getenv("NDD_KAFKA");
    long long count = 1000000;
    int copies = 4, parts = 6;
    const char *nf = "SCP";
    bool keep = false;
    int daemon_args = argc;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            daemon_args = i + 1;
            break;
        } else if (strcmp(argv[i], "--bootstrap") == 0 && i + 1 < argc)
            brokers = argv[++i];
        else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc)
            count = atoll(argv[++i]);
        else if (strcmp(argv[i], "--copies") == 0 && i + 1 < argc)
            copies = atoi(argv[++i]);
        else if (strcmp(argv[i], "--nf") == 0 && i + 1 < argc)
            nf = argv[++i];
        else if (strcmp(argv[i], "--partitions") == 0 && i + 1 < argc)
            parts = atoi(argv[++i]);
        else if (strcmp(argv[i], "--keep-topics") == 0)
            keep = true;
        else {
            fprintf(stderr,
                    "usage: %s --bootstrap HOST:PORT [--count N] [--copies 2|4] [--nf "
                    "SCP] [--partitions P] [--keep-topics] [-- daemon flags...]\n",
                    argv[0]);
            return 2;
        }
    }
    if (!brokers || count < copies || (copies != 2 && copies != 4) || parts < 1 || count % copies) {
        fprintf(stderr, "bench: need --bootstrap (or NDD_KAFKA), --count a multiple of "
                        "--copies (2 or 4), --partitions >= 1\n");
        return 2;
    }

    char prefix[64], main_topic[96], xdr[96], dlq[96], group[96], logp[160];
    snprintf(prefix, sizeof(prefix), "bench-corr-%d-%lx-", (int)getpid(), (long)time(NULL));
    snprintf(main_topic, sizeof(main_topic), "%s%s", prefix, nf);
    snprintf(xdr, sizeof(xdr), "%sXDR", prefix);
    snprintf(dlq, sizeof(dlq), "%sDLQ", prefix);
    snprintf(group, sizeof(group), "%sgroup", prefix);
    snprintf(logp, sizeof(logp), "/tmp/%scorrelation.log", prefix);

    /* 1. The backlog. */
    char bin[512], cnt[32], cp[16], pt[16], mix[32];
    snprintf(bin, sizeof(bin), "%s/bench/nfsim/ndd-nf-sim", NDD_BINARY_DIR);
    snprintf(cnt, sizeof(cnt), "%lld", count);
    snprintf(cp, sizeof(cp), "%d", copies);
    snprintf(pt, sizeof(pt), "%d", parts);
    snprintf(mix, sizeof(mix), "%s=1", nf);
    char *sim[] = {bin,
                   "--bootstrap",
                   (char *)brokers,
                   "--count",
                   cnt,
                   "--copies",
                   cp,
                   "--partitions",
                   pt,
                   "--nf-mix",
                   mix,
                   "--topic-prefix",
                   prefix,
                   "--quiet",
                   NULL};
    fprintf(stderr, "bench: producing %lld copies of %s traffic (%d per transaction) to %s\n",
            count, nf, copies, main_topic);
    pid_t sp = bc_spawn(sim, NULL);
    int st = 0;
    while (waitpid(sp, &st, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "bench: ndd-nf-sim failed (status %d)\n", st);
        return 1;
    }

    /* 2. The daemon on the backlog. */
    char dbin[512], fb[160], fm[160], fx[160], fd[160], fg[160];
    snprintf(dbin, sizeof(dbin), "%s/correlation/ndd-correlation", NDD_BINARY_DIR);
    snprintf(fb, sizeof(fb), "--bootstrap=%s", brokers);
    snprintf(fm, sizeof(fm), "--main-topic=%s", main_topic);
    snprintf(fx, sizeof(fx), "--xdr-topic=%s", xdr);
    snprintf(fd, sizeof(fd), "--dlq-topic=%s", dlq);
    snprintf(fg, sizeof(fg), "--group=%s", group);
    char *dargv[64] = {dbin, fb, fm, fx, fd, fg, "--http.port=-1", NULL};
    int n = 7;
    for (int i = daemon_args; i < argc && n < 63; i++)
        dargv[n++] = argv[i];
    dargv[n] = NULL;
    rd_kafka_t *rk = bc_group_client(brokers, group);
    if (!rk)
        return 1;
    double t0 = bc_now();
    pid_t dp = bc_spawn(dargv, logp);
    int64_t want_xdr = count / copies, committed = 0, xdrs = 0;
    double t_done = 0;
    while (bc_now() - t0 < 600) {
        bc_sleep_ms(100);
        xdrs = bc_count(rk, xdr, parts, NULL);
        committed = bc_count(rk, main_topic, parts, group);
        if (xdrs >= want_xdr && committed >= count) {
            t_done = bc_now();
            break;
        }
        int ds;
        if (waitpid(dp, &ds, WNOHANG) == dp) {
            fprintf(stderr, "bench: ndd-correlation exited early (status %d), log %s\n", ds, logp);
            return 1;
        }
    }
    kill(dp, SIGTERM);
    struct rusage ru;
    while (wait4(dp, &st, 0, &ru) < 0 && errno == EINTR)
        ;
    rd_kafka_destroy(rk);
    double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    bool ok = t_done > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    double wall = t_done > 0 ? t_done - t0 : bc_now() - t0;
    printf("{\"ok\":%s,\"copies\":%lld,\"copies_per_transaction\":%d,\"nf\":\"%s\","
           "\"partitions\":%d,\"xdrs\":%" PRId64 ",\"committed\":%" PRId64 ",\"cpu_s\":%.3f,"
           "\"copies_per_cpu_s\":%.0f,\"wall_s\":%.3f,\"copies_per_s\":%.0f,"
           "\"maxrss_mib\":%.1f,\"log\":\"%s\"}\n",
           ok ? "true" : "false", count, copies, nf, parts, xdrs, committed, cpu,
           cpu > 0 ? (double)count / cpu : 0.0, wall, wall > 0 ? (double)count / wall : 0.0,
           (double)ru.ru_maxrss / 1024.0, logp);
    if (!keep) {
        kafka_admin_delete_topic(brokers, main_topic, 10000);
        kafka_admin_delete_topic(brokers, xdr, 10000);
        kafka_admin_delete_topic(brokers, dlq, 10000);
    }
    if (ok && !keep)
        unlink(logp);
    return ok ? 0 : 1;
}
