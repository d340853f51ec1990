/* The dead-letter view (docs/api.md, "Dead letters"): the last records of a DLQ topic on the
 * admin's own cluster, with the reason and field their @dlq-* headers carry
 * (docs/message-format.md, docs/adapter.md), so that "why does my vendor get nothing?" is
 * answered from the API and the console.
 *
 * One long-lived client (the legacy per-partition consumer: no group.id, no group, no commit,
 * nothing stored): a read starts each partition at max(begin, end - limit) as the watermarks
 * say, reads up to the end it measured, and stops them again. Bounded: at most
 * ADMIN_DLQ_MAX_PARTITIONS partitions of a topic (the rest are left out and said so), each
 * read within ADMIN_DLQ_TIMEOUT_MS on the admin's thread (a slower broker gives what arrived
 * with "partial": true), at most limit records per partition held, each value cut to
 * ADMIN_DLQ_BODY_MAX bytes as it is read, and librdkafka's prefetch queue capped at 4 MiB. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <librdkafka/rdkafka.h>

#include "admin.h"
#include "log.h"

#define ADMIN_DLQ_PREFIX "ndd.dlq."
#define ADMIN_DLQ_MAX_PARTITIONS 64
#define ADMIN_DLQ_MAX_TOPICS 256

struct admin_dlq {
    rd_kafka_t *rk;
};

admin_dlq_t *admin_dlq_new(const char *bootstrap, char *err, size_t errlen)
{
    static const char *const props[][2] = {{"client.id", "ndd-admin-dlq"},
                                           {"enable.partition.eof", "true"},
                                           {"enable.auto.commit", "false"},
                                           {"enable.auto.offset.store", "false"},
                                           {"queued.max.messages.kbytes", "4096"},
                                           {"fetch.wait.max.ms", "100"},
                                           {"topic.metadata.refresh.interval.ms", "60000"}};
    char errstr[512];
    admin_dlq_t *d = calloc(1, sizeof(*d));
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (!d || !conf) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, errstr, sizeof(errstr))) {
        snprintf(err, errlen, "%s", errstr);
        goto fail;
    }
    for (size_t i = 0; i < sizeof(props) / sizeof(*props); i++)
        if (rd_kafka_conf_set(conf, props[i][0], props[i][1], errstr, sizeof(errstr))) {
            snprintf(err, errlen, "%s: %s", props[i][0], errstr);
            goto fail;
        }
    d->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    if (!d->rk) {
        snprintf(err, errlen, "%s", errstr);
        conf = NULL; /* rd_kafka_new destroyed it */
        goto fail;
    }
    return d;
fail:
    if (conf && !(d && d->rk))
        rd_kafka_conf_destroy(conf);
    free(d);
    return NULL;
}

void admin_dlq_free(admin_dlq_t *d)
{
    if (!d)
        return;
    rd_kafka_destroy(d->rk);
    free(d);
}

bool admin_dlq_topic_ok(admin_ctx_t *ctx, const char *topic)
{
    if (strncmp(topic, ADMIN_DLQ_PREFIX, strlen(ADMIN_DLQ_PREFIX)) == 0 &&
        topic[strlen(ADMIN_DLQ_PREFIX)])
        return true;
    const admin_cache_t *c = &ctx->cache[ADMIN_KIND_FEED];
    for (size_t i = 0; i < c->count; i++) {
        const char *t = json_string_value(json_object_get(c->sorted[i]->json, "dlq_topic"));
        if (t && strcmp(t, topic) == 0)
            return true;
    }
    return false;
}

static int admin_dlq_left_ms(int64_t deadline)
{
    int64_t left = deadline - mono_now_ms();
    return left > 0 ? (int)left : 0;
}

static int admin_dlq_topic_cmp(const void *a, const void *b)
{
    return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "topic")),
                  json_string_value(json_object_get(*(json_t *const *)b, "topic")));
}

/* The listing in name order (the cluster's metadata has none). */
static void admin_dlq_sort_by_topic(json_t *topics)
{
    size_t n = json_array_size(topics);
    json_t **v = calloc(n ? n : 1, sizeof(*v));
    if (!v)
        return; /* unsorted then, still complete */
    for (size_t i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(topics, i));
    qsort(v, n, sizeof(*v), admin_dlq_topic_cmp);
    json_array_clear(topics);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(topics, v[i]);
    free(v);
}

/* True when TOPIC no longer exists: the cluster is shared, so a topic listed a moment ago
 * can be deleted before its offsets are asked for; that is not an outage. */
static bool admin_dlq_topic_gone(admin_dlq_t *d, const char *topic, int64_t deadline)
{
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(d->rk, topic, NULL);
    const rd_kafka_metadata_t *md = NULL;
    bool gone = rkt && rd_kafka_metadata(d->rk, 0, rkt, &md, admin_dlq_left_ms(deadline)) == 0 &&
                md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
    if (md)
        rd_kafka_metadata_destroy(md);
    if (rkt)
        rd_kafka_topic_destroy(rkt);
    return gone;
}

/* The list entry of one topic: its record count (sum over partitions), or, when a partition
 * cannot be read (no leader while the topic is created, deleted or its broker is down), the
 * topic with "records": null and the broker's reason. NULL with err set when the cluster does
 * not answer at all (503), NULL without when the topic went away meanwhile (left out). */
static json_t *admin_dlq_topic_entry(admin_dlq_t *d, const rd_kafka_metadata_topic_t *mt,
                                     int64_t deadline, admin_err_t *err)
{
    int64_t records = 0;
    for (int p = 0; p < mt->partition_cnt; p++) {
        int64_t lo, hi;
        rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(
            d->rk, mt->topic, mt->partitions[p].id, &lo, &hi, admin_dlq_left_ms(deadline));
        if (!e) {
            records += hi > lo ? hi - lo : 0;
            continue;
        }
        bool about_topic = e > 0 || e == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION ||
                           e == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
        if (about_topic && admin_dlq_topic_gone(d, mt->topic, deadline))
            return NULL;
        if (!about_topic) {
            admin_err_set(err, 503, "kafka unavailable", "", "offsets of %s [%d]: %s", mt->topic,
                          mt->partitions[p].id, rd_kafka_err2str(e));
            return NULL;
        }
        char why[256];
        snprintf(why, sizeof(why), "partition %d: %s", mt->partitions[p].id, rd_kafka_err2str(e));
        return json_pack("{s:s,s:n,s:s}", "topic", mt->topic, "records", "error", why);
    }
    return json_pack("{s:s,s:I}", "topic", mt->topic, "records", records);
}

json_t *admin_dlq_topics(admin_dlq_t *d, admin_ctx_t *ctx, admin_err_t *err)
{
    int64_t deadline = mono_now_ms() + ADMIN_DLQ_TIMEOUT_MS;
    const rd_kafka_metadata_t *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(d->rk, 1, NULL, &md, ADMIN_DLQ_TIMEOUT_MS);
    if (e) {
        admin_err_set(err, 503, "kafka unavailable", "", "Kafka metadata: %s", rd_kafka_err2str(e));
        return NULL;
    }
    json_t *topics = json_array();
    for (int t = 0; t < md->topic_cnt && json_array_size(topics) < ADMIN_DLQ_MAX_TOPICS; t++) {
        const rd_kafka_metadata_topic_t *mt = &md->topics[t];
        if (mt->err || !admin_dlq_topic_ok(ctx, mt->topic))
            continue;
        err->status = 0;
        json_t *entry = admin_dlq_topic_entry(d, mt, deadline, err);
        if (!entry && err->status) {
            json_decref(topics);
            rd_kafka_metadata_destroy(md);
            return NULL;
        }
        if (entry)
            json_array_append_new(topics, entry);
    }
    rd_kafka_metadata_destroy(md);
    admin_dlq_sort_by_topic(topics);
    return json_pack("{s:o}", "topics", topics);
}

/* Bytes as a JSON string: a valid UTF-8 prefix of up to n bytes as it is (a cut sequence at
 * the end dropped), otherwise every byte outside printable ASCII as '?'. */
static json_t *admin_dlq_text(const void *b, size_t n)
{
    for (size_t cut = 0; cut < 4 && cut <= n; cut++) {
        json_t *s = json_stringn(b ? (const char *)b : "", n - cut);
        if (s)
            return s;
    }
    char *c = malloc(n + 1);
    if (!c)
        return json_string("");
    for (size_t i = 0; i < n; i++) {
        unsigned char x = ((const unsigned char *)b)[i];
        c[i] = (x >= 0x20 && x < 0x7f) || x == '\n' || x == '\t' ? (char)x : '?';
    }
    json_t *s = json_stringn(c, n);
    free(c);
    return s;
}

/* The value of the last header `name`, as a string; NULL when absent. */
static json_t *admin_dlq_header(rd_kafka_headers_t *h, const char *name)
{
    const void *v;
    size_t n;
    if (!h || rd_kafka_header_get_last(h, name, &v, &n) != RD_KAFKA_RESP_ERR_NO_ERROR)
        return NULL;
    return admin_dlq_text(v, n);
}

/* "@dlq-origin: <topic>/<partition>/<offset>" -> {"topic","partition","offset"}; NULL when
 * absent or not of that shape. */
static json_t *admin_dlq_origin(rd_kafka_headers_t *h)
{
    json_t *o = admin_dlq_header(h, "@dlq-origin");
    const char *s = json_string_value(o);
    const char *s2 = s ? strrchr(s, '/') : NULL;
    const char *s1 = s2;
    while (s1 && s1 > s && *--s1 != '/')
        ;
    json_t *r = NULL;
    if (s1 && s1 > s) {
        char *end1, *end2;
        long long part = strtoll(s1 + 1, &end1, 10), off = strtoll(s2 + 1, &end2, 10);
        if (end1 == s2 && end1 > s1 + 1 && *end2 == '\0' && end2 > s2 + 1)
            r = json_pack("{s:s%,s:I,s:I}", "topic", s, (size_t)(s1 - s), "partition",
                          (json_int_t)part, "offset", (json_int_t)off);
    }
    json_decref(o);
    return r;
}

static void admin_dlq_set(json_t *item, const char *key, json_t *v)
{
    if (v)
        json_object_set_new(item, key, v);
}

/* One record as an item of the view. */
static json_t *admin_dlq_item(const char *topic, rd_kafka_message_t *m, bool with_body)
{
    rd_kafka_headers_t *h = NULL;
    if (rd_kafka_message_headers(m, &h) != RD_KAFKA_RESP_ERR_NO_ERROR)
        h = NULL;
    int64_t ts = rd_kafka_message_timestamp(m, NULL);
    char when[40] = "";
    if (ts >= 0)
        wall_iso_utc(ts, when, sizeof(when));
    json_t *it = json_pack("{s:i,s:I,s:s,s:o}", "partition", (int)m->partition, "offset",
                           (json_int_t)m->offset, "timestamp", when, "key",
                           m->key ? admin_dlq_text(m->key, m->key_len) : json_null());
    json_t *reason = admin_dlq_header(h, "@dlq-reason");
    json_t *field = admin_dlq_header(h, "@dlq-field");
    json_object_set_new(it, "reason", reason ? reason : json_string(""));
    json_object_set_new(it, "field", field ? field : json_string(""));
    json_t *source = admin_dlq_header(h, "@dlq-feed");
    if (!source && strncmp(topic, ADMIN_DLQ_PREFIX, strlen(ADMIN_DLQ_PREFIX)) == 0)
        source = json_string(topic + strlen(ADMIN_DLQ_PREFIX));
    json_object_set_new(it, "source", source ? source : json_string(topic));
    admin_dlq_set(it, "detail", admin_dlq_header(h, "@dlq-detail"));
    admin_dlq_set(it, "endpoint", admin_dlq_header(h, "@dlq-endpoint"));
    json_t *status = admin_dlq_header(h, "@dlq-status");
    if (status)
        json_object_set_new(it, "status", json_integer(atoi(json_string_value(status))));
    json_decref(status);
    admin_dlq_set(it, "original", admin_dlq_origin(h));
    json_object_set_new(it, "body_bytes", json_integer((json_int_t)m->len));
    /* The body is a copy of the traffic, and the endpoint's answer may echo it: both for the
     * admin role only. */
    if (with_body) {
        json_object_set_new(
            it, "body",
            admin_dlq_text(m->payload, m->len < ADMIN_DLQ_BODY_MAX ? m->len : ADMIN_DLQ_BODY_MAX));
        admin_dlq_set(it, "response", admin_dlq_header(h, "@dlq-body-excerpt"));
    }
    return it;
}

/* One record held for the view, with what it is sorted by. */
typedef struct dlq_rec {
    int64_t ts, offset;
    int32_t partition;
    json_t *item;
} dlq_rec_t;

/* Newest first: timestamp, then partition and offset, descending. */
static int admin_dlq_rec_cmp(const void *a, const void *b)
{
    const dlq_rec_t *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? 1 : -1;
    if (x->partition != y->partition)
        return x->partition < y->partition ? 1 : -1;
    return x->offset < y->offset ? 1 : x->offset > y->offset ? -1 : 0;
}

/* A read in progress: the partitions started and the records gathered. */
typedef struct dlq_read {
    rd_kafka_topic_t *rkt;
    rd_kafka_queue_t *q;
    int32_t ids[ADMIN_DLQ_MAX_PARTITIONS];
    int64_t end[ADMIN_DLQ_MAX_PARTITIONS]; /* high watermark when started; -1: not started */
    int np, running;
    dlq_rec_t *recs;
    size_t n, cap;
} dlq_read_t;

/* Starts every partition that holds records at max(begin, end - limit). */
static int admin_dlq_start(admin_dlq_t *d, dlq_read_t *r, const rd_kafka_metadata_topic_t *mt,
                           int limit, int64_t deadline, admin_err_t *err)
{
    r->np =
        mt->partition_cnt < ADMIN_DLQ_MAX_PARTITIONS ? mt->partition_cnt : ADMIN_DLQ_MAX_PARTITIONS;
    for (int p = 0; p < r->np; p++) {
        int64_t lo, hi;
        r->ids[p] = mt->partitions[p].id;
        r->end[p] = -1;
        rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(d->rk, mt->topic, r->ids[p], &lo,
                                                                 &hi, admin_dlq_left_ms(deadline));
        if (e) {
            admin_err_set(err, 503, "kafka unavailable", "", "offsets of %s [%d]: %s", mt->topic,
                          r->ids[p], rd_kafka_err2str(e));
            return -1;
        }
        if (hi <= lo)
            continue;
        int64_t start = hi - limit > lo ? hi - limit : lo;
        if (rd_kafka_consume_start_queue(r->rkt, r->ids[p], start, r->q) != 0) {
            admin_err_set(err, 503, "kafka unavailable", "", "reading %s [%d]: %s", mt->topic,
                          r->ids[p], rd_kafka_err2str(rd_kafka_last_error()));
            return -1;
        }
        r->end[p] = hi;
        r->running++;
    }
    r->cap = (size_t)r->running * (size_t)limit;
    r->recs = calloc(r->cap ? r->cap : 1, sizeof(*r->recs));
    if (!r->recs) {
        admin_err_set(err, 500, "internal", "", "out of memory");
        return -1;
    }
    return 0;
}

static int admin_dlq_slot(const dlq_read_t *r, int32_t partition)
{
    for (int p = 0; p < r->np; p++)
        if (r->ids[p] == partition)
            return p;
    return -1;
}

/* Consumes until every started partition reached the end it measured, or the deadline. */
static bool admin_dlq_consume(dlq_read_t *r, const char *topic, bool with_body, int64_t deadline)
{
    while (r->running > 0) {
        int left = admin_dlq_left_ms(deadline);
        if (left == 0)
            return false;
        rd_kafka_message_t *m = rd_kafka_consume_queue(r->q, left < 100 ? left : 100);
        if (!m)
            continue;
        int p = admin_dlq_slot(r, m->partition);
        bool at_end = m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF;
        if (m->err && !at_end)
            log_warn("admin dlq: reading %s [%d]: %s", topic, (int)m->partition,
                     rd_kafka_message_errstr(m));
        else if (!m->err && p >= 0 && m->offset < r->end[p] && r->n < r->cap)
            r->recs[r->n++] = (dlq_rec_t){rd_kafka_message_timestamp(m, NULL), m->offset,
                                          m->partition, admin_dlq_item(topic, m, with_body)};
        if (p >= 0 && r->end[p] >= 0 && (m->err || m->offset + 1 >= r->end[p])) {
            /* Reached what was measured (or the partition failed): done with it. */
            r->end[p] = -2 - r->end[p];
            r->running--;
        }
        rd_kafka_message_destroy(m);
    }
    return true;
}

json_t *admin_dlq_read(admin_dlq_t *d, const char *topic, int limit, bool with_body,
                       admin_err_t *err)
{
    int64_t deadline = mono_now_ms() + ADMIN_DLQ_TIMEOUT_MS;
    dlq_read_t r = {0};
    json_t *res = NULL;
    const rd_kafka_metadata_t *md = NULL;
    r.rkt = rd_kafka_topic_new(d->rk, topic, NULL);
    r.q = rd_kafka_queue_new(d->rk);
    rd_kafka_resp_err_t e = r.rkt && r.q
                                ? rd_kafka_metadata(d->rk, 0, r.rkt, &md, ADMIN_DLQ_TIMEOUT_MS)
                                : RD_KAFKA_RESP_ERR__CRIT_SYS_RESOURCE;
    if (e || md->topic_cnt != 1) {
        admin_err_set(err, 503, "kafka unavailable", "", "Kafka metadata of %s: %s", topic,
                      rd_kafka_err2str(e ? e : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC));
    } else if (md->topics[0].err) {
        bool gone = md->topics[0].err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
        admin_err_set(err, gone ? 404 : 503, gone ? "not found" : "kafka unavailable", "topic",
                      "%s: %s", topic, rd_kafka_err2str(md->topics[0].err));
    } else if (admin_dlq_start(d, &r, &md->topics[0], limit, deadline, err) == 0) {
        bool whole = admin_dlq_consume(&r, topic, with_body, deadline);
        qsort(r.recs, r.n, sizeof(*r.recs), admin_dlq_rec_cmp);
        json_t *items = json_array();
        for (size_t i = 0; i < r.n; i++)
            if (i < (size_t)limit)
                json_array_append(items, r.recs[i].item);
        res = json_pack("{s:s,s:o}", "topic", topic, "items", items);
        if (!whole || md->topics[0].partition_cnt > r.np)
            json_object_set_new(res, "partial", json_true());
    }
    for (int p = 0; p < r.np; p++)
        if (r.end[p] != -1)
            rd_kafka_consume_stop(r.rkt, r.ids[p]);
    for (size_t i = 0; i < r.n; i++)
        json_decref(r.recs[i].item);
    free(r.recs);
    if (md)
        rd_kafka_metadata_destroy(md);
    if (r.q)
        rd_kafka_queue_destroy(r.q);
    if (r.rkt)
        rd_kafka_topic_destroy(r.rkt);
    return res;
}
