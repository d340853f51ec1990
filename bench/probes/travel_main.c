/* ndd-travel: a processing consumer that measures travel time from the NF timestamp to arrival
 * on MAIN and XDR, in the manner of the ONAP HV-VES rig's processing consumer. The NF timestamp
 * of a copy is its @timestamp-us header; a record without it is read as an xDR (docs/xdr.md,
 * JSON or binary "XDR1"), whose timestamp is the latest of its trigger points (when the last
 * copy was taken, the earliest moment the xDR could exist). xDR figures are also broken down
 * by the xDR's completion, because a transaction closed by the timeout travels that timeout
 * (5 s by default) by design and must not be mixed with complete ones.
 *
 * It joins its own consumer group (so it reads like any NDD consumer), reads from the earliest
 * offset of what it is assigned, and stops after --duration, after --idle seconds without
 * records (once some arrived), after --expect records per topic, or on SIGINT/SIGTERM; then
 * prints one JSON line:
 *
 *   {"topics":{"MAIN":{"records":N,"no_timestamp":0,"clock_skew":0,"avg_ms":…,"p50_ms":…,
 *    "p99_ms":…,"max_ms":…}, "XDR":{…,"xdrs":N,"binary":0,"completion":{"complete":{"records":
 *    N,"no_timestamp":0,"avg_ms":…,…},"timeout":{…},"evicted":{…},"revoked":{…}}}},
 *    "group":…, "elapsed_s":…, "cpu_s":…, "rss_mb":…}
 *
 * "xdrs" and "completion" appear for a topic where xDRs were read ("unknown" when some xDR had
 * no known completion). Unless --quiet, a progress line per second on stderr gives the records
 * read per topic. Exit 0; 1 on a consumer error; 2 on bad options. */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "codec.h"
#include "probe_hist.h"
#include "proc_usage.h"
#include "travel_xdr.h"

#define TRAVEL_MAX_TOPICS 8

typedef struct travel_by {
    probe_hist_t hist;
    uint64_t no_ts;
} travel_by_t;

typedef struct travel_topic {
    const char *name;
    probe_hist_t hist;
    uint64_t no_ts;
    uint64_t xdrs;   /* records read as xDRs (no @timestamp-us header) */
    uint64_t binary; /* ... of them in the binary layout */
    travel_by_t by[TRAVEL_XDR_COMPLETIONS];
} travel_topic_t;

static volatile sig_atomic_t travel_stop;

static void travel_on_signal(int sig)
{
    (void)sig;
    travel_stop = 1;
}

static int64_t travel_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static double travel_mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool travel_parse_i64(const char *s, size_t n, int64_t *out)
{
    int64_t v = 0;
    if (n == 0 || n > 19)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

/* One record: a copy by its header; without the header, an xDR by its latest trigger-point
 * timestamp, counted in its completion too. The value is only read when the header is absent,
 * so copies on MAIN cost a header lookup and nothing more. */
static void travel_record(travel_topic_t *t, const rd_kafka_message_t *m, const char *hname,
                          int64_t arrival)
{
    rd_kafka_headers_t *hdrs = NULL;
    const void *v;
    size_t n;
    int64_t ts;
    if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR &&
        rd_kafka_header_get_last(hdrs, hname, &v, &n) == RD_KAFKA_RESP_ERR_NO_ERROR && v) {
        if (travel_parse_i64(v, n, &ts))
            probe_hist_add(&t->hist, arrival - ts);
        else
            t->no_ts++;
        return;
    }
    if (codec_record_is_frame(m)) { /* a copy of MAIN in the frame form */
        codec_msg_t cm;
        codec_slice_t f;
        if (codec_decode_frame_limited(&cm, m->payload, m->len, NULL, NULL) == CODEC_OK &&
            codec_msg_field(&cm, hname, strlen(hname), &f) && travel_parse_i64(f.ptr, f.len, &ts))
            probe_hist_add(&t->hist, arrival - ts);
        else
            t->no_ts++;
        return;
    }
    travel_xdr_t x;
    travel_xdr_form_t form = travel_xdr_read(m->payload, m->len, &x);
    travel_by_t *by = NULL;
    if (form != TRAVEL_XDR_NOT) {
        t->xdrs++;
        t->binary += form == TRAVEL_XDR_BINARY;
        by = &t->by[x.completion];
    }
    if (x.has_ts) {
        probe_hist_add(&t->hist, arrival - x.ts_us);
        if (by)
            probe_hist_add(&by->hist, arrival - x.ts_us);
    } else {
        t->no_ts++;
        if (by)
            by->no_ts++;
    }
}

static void travel_print_hist(const probe_hist_t *h, uint64_t no_ts)
{
    printf("\"records\":%" PRIu64 ",\"no_timestamp\":%" PRIu64 ",\"clock_skew\":%" PRIu64
           ",\"avg_ms\":%.3f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"max_ms\":%.3f",
           h->count + no_ts, no_ts, h->negative, probe_hist_avg_us(h) / 1000.0,
           probe_hist_quantile_us(h, 0.50) / 1000.0, probe_hist_quantile_us(h, 0.99) / 1000.0,
           (double)h->max_us / 1000.0);
}

static void travel_usage(FILE *f)
{
    fprintf(f, "usage: ndd-travel --bootstrap HOST:PORT [--topic MAIN] [--topic XDR]...\n"
               "                  [--group G (ndd-travel-<pid>)] [--duration S (60)]\n"
               "                  [--idle S (0: off)] [--expect N (per topic, 0: off)]\n"
               "                  [--ts-header NAME (@timestamp-us)] [--quiet]\n");
}

int main(int argc, char **argv)
{
    const char *bootstrap = getenv("NDD_KAFKA"), *group = NULL, *ts_header = "@timestamp-us";
    /* static: eight topics of six histograms are ~250 KiB, too much for the stack */
    static travel_topic_t topics[TRAVEL_MAX_TOPICS];
    int ntopics = 0;
    double duration = 60, idle = 0;
    uint64_t expect = 0;
    bool quiet = false;
    static const struct option lo[] = {{"bootstrap", required_argument, 0, 'b'},
                                       {"topic", required_argument, 0, 't'},
                                       {"group", required_argument, 0, 'g'},
                                       {"duration", required_argument, 0, 'd'},
                                       {"idle", required_argument, 0, 'i'},
                                       {"expect", required_argument, 0, 'e'},
                                       {"ts-header", required_argument, 0, 'H'},
                                       {"quiet", no_argument, 0, 'q'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'b':
            bootstrap = optarg;
            break;
        case 't':
            if (ntopics == TRAVEL_MAX_TOPICS) {
                fprintf(stderr, "ndd-travel: at most %d topics\n", TRAVEL_MAX_TOPICS);
                return 2;
            }
            topics[ntopics++].name = optarg;
            break;
        case 'g':
            group = optarg;
            break;
        case 'd':
            duration = atof(optarg);
            break;
        case 'i':
            idle = atof(optarg);
            break;
        case 'e':
            expect = strtoull(optarg, NULL, 10);
            break;
        case 'H':
            ts_header = optarg;
            break;
        case 'q':
            quiet = true;
            break;
        case 'h':
            travel_usage(stdout);
            return 0;
        default:
            travel_usage(stderr);
            return 2;
        }
    }
    if (!bootstrap || duration <= 0 || idle < 0 || optind != argc) {
        travel_usage(stderr);
        return 2;
    }
    if (!ntopics)
        topics[ntopics++].name = "MAIN";
    char gbuf[64], err[512];
    if (!group) {
        snprintf(gbuf, sizeof gbuf, "ndd-travel-%d", (int)getpid());
        group = gbuf;
    }
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *props[][2] = {
        {"bootstrap.servers", bootstrap},        {"group.id", group},
        {"auto.offset.reset", "earliest"},       {"enable.auto.commit", "true"},
        {"queued.max.messages.kbytes", "16384"}, {"log_level", "3"}};
    for (size_t i = 0; i < sizeof props / sizeof *props; i++) {
        if (rd_kafka_conf_set(conf, props[i][0], props[i][1], err, sizeof err) !=
            RD_KAFKA_CONF_OK) {
            fprintf(stderr, "ndd-travel: %s=%s: %s\n", props[i][0], props[i][1], err);
            return 2;
        }
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk) {
        fprintf(stderr, "ndd-travel: consumer for %s: %s\n", bootstrap, err);
        return 1;
    }
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(ntopics);
    for (int i = 0; i < ntopics; i++)
        rd_kafka_topic_partition_list_add(sub, topics[i].name, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t e = rd_kafka_subscribe(rk, sub);
    rd_kafka_topic_partition_list_destroy(sub);
    if (e) {
        fprintf(stderr, "ndd-travel: subscribe (group %s): %s\n", group, rd_kafka_err2str(e));
        rd_kafka_destroy(rk);
        return 1;
    }
    signal(SIGINT, travel_on_signal);
    signal(SIGTERM, travel_on_signal);

    int rc = 0;
    double t0 = travel_mono_s(), last_rx = 0, last_print = t0;
    uint64_t total = 0, last_total = 0;
    while (!travel_stop) {
        double now = travel_mono_s();
        if (now - t0 >= duration)
            break;
        if (idle > 0 && last_rx > 0 && now - last_rx >= idle)
            break;
        if (expect) {
            bool all = true;
            for (int i = 0; i < ntopics; i++)
                all &= topics[i].hist.count + topics[i].no_ts >= expect;
            if (all)
                break;
        }
        if (!quiet && now - last_print >= 1.0) {
            fprintf(stderr, "travel: %6.1fs records %" PRIu64 " (%.0f/s)", now - t0, total,
                    (double)(total - last_total) / (now - last_print));
            for (int i = 0; i < ntopics; i++)
                fprintf(stderr, " %s %" PRIu64 " p99 %.1f ms", topics[i].name,
                        topics[i].hist.count + topics[i].no_ts,
                        probe_hist_quantile_us(&topics[i].hist, 0.99) / 1000.0);
            fputc('\n', stderr);
            last_print = now;
            last_total = total;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (!m)
            continue;
        if (m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                fprintf(stderr, "ndd-travel: consume %s [%d]: %s\n",
                        m->rkt ? rd_kafka_topic_name(m->rkt) : "?", (int)m->partition,
                        rd_kafka_message_errstr(m));
                if (m->err == RD_KAFKA_RESP_ERR__FATAL ||
                    m->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
                    /* A missing XDR topic is normal until correlation runs: keep going. */
                    if (m->err == RD_KAFKA_RESP_ERR__FATAL)
                        rc = 1;
                }
            }
            rd_kafka_message_destroy(m);
            if (rc)
                break;
            continue;
        }
        int64_t arrival = travel_now_us();
        const char *tn = rd_kafka_topic_name(m->rkt);
        for (int i = 0; i < ntopics; i++) {
            if (strcmp(tn, topics[i].name))
                continue;
            travel_record(&topics[i], m, ts_header, arrival);
            break;
        }
        total++;
        last_rx = travel_mono_s();
        rd_kafka_message_destroy(m);
    }
    double elapsed = travel_mono_s() - t0;
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    double cpu = proc_usage_cpu_s();
    printf("{\"topics\":{");
    for (int i = 0; i < ntopics; i++) {
        const travel_topic_t *t = &topics[i];
        printf("%s\"%s\":{", i ? "," : "", t->name);
        travel_print_hist(&t->hist, t->no_ts);
        if (t->xdrs) {
            printf(",\"xdrs\":%" PRIu64 ",\"binary\":%" PRIu64 ",\"completion\":{", t->xdrs,
                   t->binary);
            for (int k = 0; k < TRAVEL_XDR_COMPLETIONS; k++) {
                if (k == TRAVEL_XDR_UNKNOWN && t->by[k].hist.count + t->by[k].no_ts == 0)
                    continue;
                printf("%s\"%s\":{", k ? "," : "", travel_xdr_completion_name(k));
                travel_print_hist(&t->by[k].hist, t->by[k].no_ts);
                putchar('}');
            }
            putchar('}');
        }
        putchar('}');
    }
    printf("},\"group\":\"%s\",\"elapsed_s\":%.3f,\"cpu_s\":%.3f,\"rss_mb\":%.1f}\n", group,
           elapsed, cpu, proc_usage_peak_rss_mb());
    return rc;
}
