/* ndd-offsets: end offsets of topics and the lag of consumer groups, per partition, as one JSON
 * line (or one per --interval), in the manner of the ONAP HV-VES performance rig's offset
 * reader. It never joins a group: committed offsets are read with OffsetFetch.
 *
 *   ndd-offsets --bootstrap B --topic MAIN [--topic T]... [--group G]... [--interval S --count N]
 *
 * Each --group is reported for every --topic it has committed offsets on (lag = end offset −
 * committed offset, per partition; a partition without a commit counts from its low watermark).
 * Exit 0; 1 when a topic or group query failed
 * (the JSON still says which, under "errors"); 2 on bad options. */
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#define OFF_MAX_TOPICS 32
#define OFF_MAX_GROUPS 32
#define OFF_MAX_PARTS 1024

typedef struct off_topic {
    const char *name;
    int nparts;
    int64_t low[OFF_MAX_PARTS], high[OFF_MAX_PARTS];
    char err[256];
} off_topic_t;

typedef struct off_opts {
    const char *bootstrap;
    const char *topics[OFF_MAX_TOPICS];
    int ntopics;
    const char *groups[OFF_MAX_GROUPS];
    int ngroups;
    int timeout_ms;
    double interval_s;
    long count;
} off_opts_t;

static void off_usage(FILE *f)
{
    fprintf(
        f,
        "usage: ndd-offsets --bootstrap HOST:PORT --topic T [--topic T]... [--group G]...\n"
        "                   [--timeout-ms N (5000)] [--interval S --count N]\n"
        "prints {\"ts_us\":…,\"topics\":{T:{\"begin\",\"end\",\"partitions\":[…]}},\n"
        "        \"groups\":{G:{T:{\"committed\",\"lag\",\"partitions\":[…]}}},\"errors\":[…]}\n");
}

static int64_t off_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static rd_kafka_t *off_client(const char *bootstrap, const char *group, char *err, size_t errlen)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, err, errlen) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(conf, "group.id", group, err, errlen) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, errlen) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(conf, "log_level", "3", err, errlen) != RD_KAFKA_CONF_OK) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, errlen);
    if (!rk)
        rd_kafka_conf_destroy(conf);
    return rk;
}

/* Partition count and watermarks of one topic; t->err set on failure. */
static void off_read_topic(rd_kafka_t *rk, off_topic_t *t, int timeout_ms)
{
    t->nparts = 0;
    t->err[0] = 0;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, t->name, NULL);
    const rd_kafka_metadata_t *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms);
    rd_kafka_topic_destroy(rkt);
    if (e) {
        snprintf(t->err, sizeof t->err, "topic %s: metadata: %s", t->name, rd_kafka_err2str(e));
        return;
    }
    if (md->topic_cnt != 1 || md->topics[0].err) {
        snprintf(t->err, sizeof t->err, "topic %s: %s", t->name,
                 md->topic_cnt ? rd_kafka_err2str(md->topics[0].err) : "not in metadata");
        rd_kafka_metadata_destroy(md);
        return;
    }
    int n = md->topics[0].partition_cnt;
    rd_kafka_metadata_destroy(md);
    if (n > OFF_MAX_PARTS) {
        snprintf(t->err, sizeof t->err, "topic %s: %d partitions (max %d)", t->name, n,
                 OFF_MAX_PARTS);
        return;
    }
    for (int p = 0; p < n; p++) {
        e = rd_kafka_query_watermark_offsets(rk, t->name, p, &t->low[p], &t->high[p], timeout_ms);
        if (e) {
            snprintf(t->err, sizeof t->err, "topic %s partition %d: watermarks: %s", t->name, p,
                     rd_kafka_err2str(e));
            return;
        }
    }
    t->nparts = n;
}

static void off_json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            printf("\\u%04x", *s);
        else
            putchar(*s);
    }
    putchar('"');
}

/* One report line; returns the number of errors. */
static int off_report(const off_opts_t *o, rd_kafka_t *meta, rd_kafka_t **group_rk,
                      off_topic_t *topics)
{
    char errs[OFF_MAX_TOPICS * (OFF_MAX_GROUPS + 1)][300];
    int nerr = 0;
    for (int i = 0; i < o->ntopics; i++) {
        off_read_topic(meta, &topics[i], o->timeout_ms);
        if (topics[i].err[0])
            snprintf(errs[nerr++], sizeof errs[0], "%s", topics[i].err);
    }
    printf("{\"ts_us\":%" PRId64 ",\"topics\":{", off_now_us());
    for (int i = 0; i < o->ntopics; i++) {
        const off_topic_t *t = &topics[i];
        int64_t b = 0, e = 0;
        for (int p = 0; p < t->nparts; p++)
            b += t->low[p], e += t->high[p];
        printf("%s", i ? "," : "");
        off_json_str(t->name);
        printf(":{\"begin\":%" PRId64 ",\"end\":%" PRId64 ",\"records\":%" PRId64
               ",\"partitions\":[",
               b, e, e - b);
        for (int p = 0; p < t->nparts; p++)
            printf("%s{\"partition\":%d,\"low\":%" PRId64 ",\"high\":%" PRId64 "}", p ? "," : "", p,
                   t->low[p], t->high[p]);
        printf("]}");
    }
    printf("},\"groups\":{");
    for (int g = 0; g < o->ngroups; g++) {
        printf("%s", g ? "," : "");
        off_json_str(o->groups[g]);
        printf(":{");
        int shown = 0;
        for (int i = 0; i < o->ntopics; i++) {
            const off_topic_t *t = &topics[i];
            if (t->err[0])
                continue;
            rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(t->nparts);
            for (int p = 0; p < t->nparts; p++)
                rd_kafka_topic_partition_list_add(l, t->name, p);
            rd_kafka_resp_err_t e = rd_kafka_committed(group_rk[g], l, o->timeout_ms);
            if (e) {
                snprintf(errs[nerr++], sizeof errs[0], "group %s topic %s: committed: %s",
                         o->groups[g], t->name, rd_kafka_err2str(e));
                rd_kafka_topic_partition_list_destroy(l);
                continue;
            }
            /* A group is shown for the topics it has committed offsets on; -1 everywhere means
             * it does not consume this topic (or has not committed yet). */
            bool any = false;
            for (int p = 0; p < l->cnt; p++)
                any |= l->elems[p].offset >= 0;
            if (!any) {
                rd_kafka_topic_partition_list_destroy(l);
                continue;
            }
            int64_t lag_total = 0, committed_total = 0;
            printf("%s", shown++ ? "," : "");
            off_json_str(t->name);
            printf(":{\"partitions\":[");
            for (int p = 0; p < l->cnt; p++) {
                int64_t c = l->elems[p].offset;
                /* Nothing committed yet: everything retained is still to be read. */
                int64_t from = c >= 0 ? c : t->low[p];
                /* The watermarks were read a moment before the commit: never below 0. */
                int64_t lag = t->high[p] > from ? t->high[p] - from : 0;
                lag_total += lag;
                committed_total += c >= 0 ? c : 0;
                printf("%s{\"partition\":%d,\"committed\":%" PRId64 ",\"lag\":%" PRId64 "}",
                       p ? "," : "", p, c >= 0 ? c : -1, lag);
            }
            printf("],\"committed\":%" PRId64 ",\"lag\":%" PRId64 "}", committed_total, lag_total);
            rd_kafka_topic_partition_list_destroy(l);
        }
        printf("}");
    }
    printf("},\"errors\":[");
    for (int i = 0; i < nerr; i++) {
        printf("%s", i ? "," : "");
        off_json_str(errs[i]);
    }
    printf("]}\n");
    fflush(stdout);
    for (int i = 0; i < nerr; i++)
        fprintf(stderr, "ndd-offsets: %s\n", errs[i]);
    return nerr;
}

int main(int argc, char **argv)
{
    off_opts_t o = {.bootstrap = getenv("NDD_KAFKA"), .timeout_ms = 5000, .count = 1};
    static const struct option lo[] = {{"bootstrap", required_argument, 0, 'b'},
                                       {"topic", required_argument, 0, 't'},
                                       {"group", required_argument, 0, 'g'},
                                       {"timeout-ms", required_argument, 0, 'T'},
                                       {"interval", required_argument, 0, 'i'},
                                       {"count", required_argument, 0, 'c'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'b':
            o.bootstrap = optarg;
            break;
        case 't':
            if (o.ntopics == OFF_MAX_TOPICS) {
                fprintf(stderr, "ndd-offsets: at most %d topics\n", OFF_MAX_TOPICS);
                return 2;
            }
            o.topics[o.ntopics++] = optarg;
            break;
        case 'g':
            if (o.ngroups == OFF_MAX_GROUPS) {
                fprintf(stderr, "ndd-offsets: at most %d groups\n", OFF_MAX_GROUPS);
                return 2;
            }
            o.groups[o.ngroups++] = optarg;
            break;
        case 'T':
            o.timeout_ms = atoi(optarg);
            break;
        case 'i':
            o.interval_s = atof(optarg);
            break;
        case 'c':
            o.count = atol(optarg);
            break;
        case 'h':
            off_usage(stdout);
            return 0;
        default:
            off_usage(stderr);
            return 2;
        }
    }
    if (!o.bootstrap || !o.ntopics || o.timeout_ms <= 0 || o.count < 1 || o.interval_s < 0 ||
        optind != argc) {
        off_usage(stderr);
        return 2;
    }
    char err[512];
    rd_kafka_t *meta = off_client(o.bootstrap, "ndd-offsets-meta", err, sizeof err);
    if (!meta) {
        fprintf(stderr, "ndd-offsets: client for %s: %s\n", o.bootstrap, err);
        return 1;
    }
    rd_kafka_t *group_rk[OFF_MAX_GROUPS];
    for (int g = 0; g < o.ngroups; g++) {
        group_rk[g] = off_client(o.bootstrap, o.groups[g], err, sizeof err);
        if (!group_rk[g]) {
            fprintf(stderr, "ndd-offsets: client for group %s: %s\n", o.groups[g], err);
            return 1;
        }
    }
    off_topic_t *topics = calloc((size_t)o.ntopics, sizeof *topics);
    if (!topics) {
        fprintf(stderr, "ndd-offsets: out of memory\n");
        return 1;
    }
    for (int i = 0; i < o.ntopics; i++)
        topics[i].name = o.topics[i];
    int errors = 0;
    for (long n = 0; n < o.count; n++) {
        if (n)
            usleep((useconds_t)(o.interval_s * 1e6));
        errors += off_report(&o, meta, group_rk, topics);
    }
    for (int g = 0; g < o.ngroups; g++)
        rd_kafka_destroy(group_rk[g]);
    rd_kafka_destroy(meta);
    free(topics);
    return errors ? 1 : 0;
}
