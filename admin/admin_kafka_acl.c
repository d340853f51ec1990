/* Topics and ACLs of Kafka feeds (docs/kafka-feed.md, "Credentials and ACLs"): every Kafka
 * admin call of ndd-admin is here. A feed with transport kafka whose endpoint is on the admin's
 * own cluster (its --bootstrap) gets its topic (kafka.topic) and, when it names a consumer
 * (kafka.consumer), exactly three kinds of ACL for that principal: READ and DESCRIBE on the
 * topic (literal) and READ on the consumer-group prefix (prefixed). Nothing else.
 *
 * PostgreSQL is the truth and Kafka follows it: a create is committed, then granted (a failed
 * grant deletes the row again); a delete is revoked, then committed (a failed commit grants
 * again); a crash between the two steps is repaired by the reconcile at start, which grants
 * every feed of the database. So access is never wider than the database says for longer than
 * a failed request, and a feed of the database always ends up with its topic and ACLs.
 *
 * The calls are synchronous on the admin's one thread, each bounded by ADMIN_KACL_TIMEOUT_MS:
 * a write of a Kafka feed waits for the cluster (writes are rare; reads never call Kafka). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "admin.h"
#include "feed_kafka_acl.h"
#include "kafka.h"
#include "log.h"
#include "metrics.h"
#include "transport_desc.h"

#define ADMIN_KACL_TIMEOUT_MS 5000 /* default of admin_kacl_new's timeout */
/* Status samples: how often, the bound on each call, and on the feeds sampled (the memory of
 * the status table is fixed; feeds beyond it are left out of /status, logged once a sample). */
#define ADMIN_KACL_SAMPLE_MS 10000
#define ADMIN_KACL_SAMPLE_TIMEOUT_MS 2000 /* or the client's call timeout when shorter */
#define ADMIN_KACL_MAX_STATS 1024
/* Topics (endpoints) per feed the admin manages; a feed has one in practice. */
#define ADMIN_KACL_MAX_TOPICS 8
/* Bindings of one feed: two per topic and one group prefix. */
#define ADMIN_KACL_MAX_BINDINGS (2 * ADMIN_KACL_MAX_TOPICS + 1)

/* The console status of one Kafka feed (admin_kacl_status), sampled every
 * ADMIN_KACL_SAMPLE_MS on the admin's timer, not per request. */
typedef struct kacl_stat {
    char id[64];
    char name[72];
    char topic[256];
    char principal[264];
    char group_prefix[256];
    bool ok;        /* the last sample reached the cluster */
    bool seen;      /* still a feed (mark and sweep per sample) */
    bool have_rate; /* two successive good samples */
    int64_t end_offset, lag, sampled_ms;
    int groups;
    double rate;
    char error[640];
    metrics_gauge_t *m_lag, *m_rate;
} kacl_stat_t;

struct admin_kacl {
    rd_kafka_t *rk;
    char *bootstrap;
    int timeout_ms; /* of each admin call */
    bool pending;   /* a start-up (or later) reconcile has not succeeded yet */
    int64_t next_try_ms;
    uint64_t errors; /* Kafka admin calls that failed (ndd_admin_kafka_acl_errors_total) */
    int64_t next_sample_ms;
    kacl_stat_t *stats; /* one per managed feed, at most ADMIN_KACL_MAX_STATS */
    size_t n_stats;
    metrics_family_t *f_lag, *f_rate;
};

/* One ACL binding, all ALLOW and host "*". */
typedef struct kacl_binding {
    rd_kafka_ResourceType_t type;
    rd_kafka_ResourcePatternType_t pattern;
    rd_kafka_AclOperation_t op;
    char name[256];
    char principal[264];
} kacl_binding_t;

/* What the admin manages for one feed. */
typedef struct kacl_feed {
    const char *name;
    feed_kafka_acl_t s;
    size_t n_topics;
    char topics[ADMIN_KACL_MAX_TOPICS][256];
    int topic_endpoint[ADMIN_KACL_MAX_TOPICS]; /* index in endpoints[], for error paths */
    size_t n_bindings;
    kacl_binding_t b[ADMIN_KACL_MAX_BINDINGS];
} kacl_feed_t;

static void kacl_stat_metrics_drop(admin_kacl_t *k, kacl_stat_t *st);

admin_kacl_t *admin_kacl_new(const char *bootstrap, int timeout_ms, char *err, size_t errlen)
{
    admin_kacl_t *k = calloc(1, sizeof(*k));
    if (k)
        k->timeout_ms = timeout_ms > 0 ? timeout_ms : ADMIN_KACL_TIMEOUT_MS;
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (!k || !conf || !(k->bootstrap = strdup(bootstrap))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, errstr, sizeof(errstr)) !=
            RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(conf, "client.id", "ndd-admin-acl", errstr, sizeof(errstr)) !=
            RD_KAFKA_CONF_OK) {
        snprintf(err, errlen, "%s", errstr);
        goto fail;
    }
    /* The status sampler asks for the metadata of feed topics: one the operator deleted must
     * not come back with the broker's defaults. (A producer property since librdkafka 1.6;
     * where it is not, the broker's own setting applies.) */
    rd_kafka_conf_set(conf, "allow.auto.create.topics", "false", errstr, sizeof(errstr));
    k->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (!k->rk) {
        snprintf(err, errlen, "%s", errstr);
        goto fail;
    }
    return k;
fail:
    if (conf)
        rd_kafka_conf_destroy(conf);
    if (k)
        free(k->bootstrap);
    free(k);
    return NULL;
}

void admin_kacl_free(admin_kacl_t *k)
{
    if (!k)
        return;
    if (k->rk)
        rd_kafka_destroy(k->rk);
    free(k->bootstrap);
    free(k->stats);
    free(k);
}

uint64_t admin_kacl_errors(const admin_kacl_t *k)
{
    return k ? k->errors : 0;
}

bool admin_kacl_pending(const admin_kacl_t *k)
{
    return k && k->pending;
}

/* host:port of a bootstrap entry or URL authority, with Kafka's default port. */
static void kacl_hostport(const char *s, size_t n, char *out, size_t outlen)
{
    bool has_port = memchr(s, ':', n) != NULL;
    snprintf(out, outlen, "%.*s%s", (int)n, s, has_port ? "" : ":9092");
}

/* true when host:port is one of the admin's bootstrap servers (as written there). */
static bool kacl_same_cluster(const admin_kacl_t *k, const char *hostport)
{
    const char *p = k->bootstrap;
    while (*p) {
        size_t n = strcspn(p, ", ");
        char hp[300];
        if (n) {
            kacl_hostport(p, n, hp, sizeof(hp));
            if (strcmp(hp, hostport) == 0)
                return true;
        }
        p += n;
        p += strspn(p, ", ");
    }
    return false;
}

static void kacl_add(kacl_feed_t *f, rd_kafka_ResourceType_t type,
                     rd_kafka_ResourcePatternType_t pattern, rd_kafka_AclOperation_t op,
                     const char *name)
{
    if (f->n_bindings >= ADMIN_KACL_MAX_BINDINGS)
        return;
    kacl_binding_t *b = &f->b[f->n_bindings++];
    b->type = type;
    b->pattern = pattern;
    b->op = op;
    snprintf(b->name, sizeof(b->name), "%s", name);
    snprintf(b->principal, sizeof(b->principal), "%s", f->s.principal);
}

/* The topics and bindings of a feed object (as stored); false when the admin manages nothing
 * for it (not a kafka feed, or no endpoint on the admin's cluster). */
static bool kacl_feed_of(const admin_kacl_t *k, json_t *feed, kacl_feed_t *f)
{
    memset(f, 0, sizeof(*f));
    const transport_desc_t *d =
        transport_find(json_string_value(json_object_get(feed, "transport")));
    if (!feed || !d || !d->provisions_topic)
        return false;
    f->name = json_string_value(json_object_get(feed, "name"));
    feed_kafka_acl_get(feed, &f->s);
    json_t *eps = json_object_get(feed, "endpoints");
    size_t i;
    json_t *ep;
    json_array_foreach(eps, i, ep)
    {
        const char *url = json_string_value(json_object_get(ep, "url"));
        const char *sep = url ? strstr(url, "://") : NULL;
        if (!sep || transport_find_scheme(url, (size_t)(sep - url), NULL) != d ||
            f->n_topics >= ADMIN_KACL_MAX_TOPICS)
            continue;
        const char *auth = sep + 3, *slash = strchr(auth, '/');
        if (!slash || !slash[1])
            continue;
        char hp[300];
        kacl_hostport(auth, (size_t)(slash - auth), hp, sizeof(hp));
        if (!kacl_same_cluster(k, hp))
            continue;
        f->topic_endpoint[f->n_topics] = (int)i;
        snprintf(f->topics[f->n_topics++], sizeof(f->topics[0]), "%s", slash + 1);
    }
    if (f->n_topics == 0)
        return false;
    if (f->s.principal) {
        for (size_t t = 0; t < f->n_topics; t++) {
            kacl_add(f, RD_KAFKA_RESOURCE_TOPIC, RD_KAFKA_RESOURCE_PATTERN_LITERAL,
                     RD_KAFKA_ACL_OPERATION_READ, f->topics[t]);
            kacl_add(f, RD_KAFKA_RESOURCE_TOPIC, RD_KAFKA_RESOURCE_PATTERN_LITERAL,
                     RD_KAFKA_ACL_OPERATION_DESCRIBE, f->topics[t]);
        }
        char group[256];
        if (f->s.group_prefix)
            snprintf(group, sizeof(group), "%s", f->s.group_prefix);
        else
            snprintf(group, sizeof(group), "%s-", f->name ? f->name : "");
        kacl_add(f, RD_KAFKA_RESOURCE_GROUP, RD_KAFKA_RESOURCE_PATTERN_PREFIXED,
                 RD_KAFKA_ACL_OPERATION_READ, group);
    }
    return true;
}

static bool kacl_binding_eq(const kacl_binding_t *a, const kacl_binding_t *b)
{
    return a->type == b->type && a->pattern == b->pattern && a->op == b->op &&
           strcmp(a->name, b->name) == 0 && strcmp(a->principal, b->principal) == 0;
}

static bool kacl_feed_has(const kacl_feed_t *f, const kacl_binding_t *b)
{
    for (size_t i = 0; i < f->n_bindings; i++)
        if (kacl_binding_eq(&f->b[i], b))
            return true;
    return false;
}

/* A Kafka error as an API error: the cluster not answering is 503; what the broker refuses
 * about the request names the field; the admin's own principal lacking rights is 503 too (the
 * request is fine, the deployment is not). */
static void kacl_err(admin_kacl_t *k, admin_err_t *err, rd_kafka_resp_err_t e, const char *what,
                     const char *detail, int endpoint)
{
    k->errors++;
    char url_field[64];
    snprintf(url_field, sizeof(url_field), "endpoints[%d].url", endpoint < 0 ? 0 : endpoint);
    const char *field = NULL;
    switch (e) {
    case RD_KAFKA_RESP_ERR_INVALID_REPLICATION_FACTOR:
        field = "kafka.topic.replication_factor";
        break;
    case RD_KAFKA_RESP_ERR_INVALID_PARTITIONS:
        field = "kafka.topic.partitions";
        break;
    case RD_KAFKA_RESP_ERR_INVALID_CONFIG:
        field = "kafka.topic.retention_ms";
        break;
    case RD_KAFKA_RESP_ERR_POLICY_VIOLATION:
        field = "kafka.topic";
        break;
    case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
        field = url_field;
        break;
    case RD_KAFKA_RESP_ERR_INVALID_REQUEST:
        field = "kafka.consumer.principal";
        break;
    default:
        break;
    }
    log_error("admin: Kafka at %s: %s: %s (%s)", k->bootstrap, what, detail, rd_kafka_err2name(e));
    if (field)
        admin_err_set(err, 422, "invalid value", field, "Kafka refused it: %s: %s", what, detail);
    else
        admin_err_set(err, 503, "kafka unavailable", "", "Kafka at %s: %s: %s (%s)", k->bootstrap,
                      what, detail, rd_kafka_err2name(e));
}

/* Waits for the one result event of an admin call. */
static rd_kafka_event_t *kacl_wait(const admin_kacl_t *k, rd_kafka_queue_t *q)
{
    return rd_kafka_queue_poll(q, k->timeout_ms + 2000);
}

static rd_kafka_AdminOptions_t *kacl_options(admin_kacl_t *k, rd_kafka_admin_op_t op)
{
    char errstr[256];
    rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(k->rk, op);
    if (o) {
        rd_kafka_AdminOptions_set_request_timeout(o, k->timeout_ms, errstr, sizeof(errstr));
        if (op == RD_KAFKA_ADMIN_OP_CREATETOPICS)
            rd_kafka_AdminOptions_set_operation_timeout(o, k->timeout_ms, errstr, sizeof(errstr));
    }
    return o;
}

/* An error event (the whole call failed): reported, -1. */
static int kacl_event_failed(admin_kacl_t *k, rd_kafka_event_t *ev, const char *what,
                             admin_err_t *err)
{
    if (!ev) {
        kacl_err(k, err, RD_KAFKA_RESP_ERR__TIMED_OUT, what, "no answer", -1);
        return -1;
    }
    rd_kafka_resp_err_t e = rd_kafka_event_error(ev);
    if (!e)
        return 0;
    kacl_err(k, err, e, what, rd_kafka_event_error_string(ev), -1);
    rd_kafka_event_destroy(ev);
    return -1;
}

static int kacl_create_topics(admin_kacl_t *k, const kacl_feed_t *f, admin_err_t *err)
{
    rd_kafka_NewTopic_t *nt[ADMIN_KACL_MAX_TOPICS] = {0};
    char errstr[512], retention[32];
    snprintf(retention, sizeof(retention), "%lld", (long long)f->s.retention_ms);
    int rc = -1;
    for (size_t i = 0; i < f->n_topics; i++) {
        nt[i] = rd_kafka_NewTopic_new(f->topics[i], f->s.partitions, f->s.replication, errstr,
                                      sizeof(errstr));
        if (!nt[i]) {
            admin_err_set(err, 422, "invalid value", "kafka.topic", "topic %s: %s", f->topics[i],
                          errstr);
            goto out;
        }
        /* A feed topic holds NDD's largest record, like every topic NDD makes (kafka.h). */
        if (rd_kafka_NewTopic_set_config(nt[i], "retention.ms", retention) ||
            rd_kafka_NewTopic_set_config(nt[i], "max.message.bytes", KAFKA_RECORD_MAX_BYTES_STR)) {
            admin_err_set(err, 500, "internal", "", "topic %s: config refused", f->topics[i]);
            goto out;
        }
    }
    rd_kafka_queue_t *q = rd_kafka_queue_new(k->rk);
    rd_kafka_AdminOptions_t *o = kacl_options(k, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_CreateTopics(k->rk, nt, f->n_topics, o, q);
    rd_kafka_event_t *ev = kacl_wait(k, q);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_queue_destroy(q);
    if (kacl_event_failed(k, ev, "creating the feed topic", err) != 0)
        goto out;
    size_t n = 0;
    const rd_kafka_topic_result_t **res =
        rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
    rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        rd_kafka_resp_err_t e = rd_kafka_topic_result_error(res[i]);
        /* An existing topic is kept as it is: made by the operator, by an earlier version of
         * the feed (deleting a feed keeps its topic) or by a reconcile. */
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR || e == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
            continue;
        const char *name = rd_kafka_topic_result_name(res[i]);
        int ep = -1;
        for (size_t t = 0; t < f->n_topics; t++)
            if (strcmp(f->topics[t], name) == 0)
                ep = f->topic_endpoint[t];
        char what[300];
        snprintf(what, sizeof(what), "creating topic %s", name);
        const char *s = rd_kafka_topic_result_error_string(res[i]);
        kacl_err(k, err, e, what, s ? s : rd_kafka_err2str(e), ep);
        rc = -1;
    }
    rd_kafka_event_destroy(ev);
out:
    for (size_t i = 0; i < f->n_topics; i++)
        if (nt[i])
            rd_kafka_NewTopic_destroy(nt[i]);
    return rc;
}

static int kacl_create_acls(admin_kacl_t *k, const kacl_feed_t *f, admin_err_t *err)
{
    if (f->n_bindings == 0)
        return 0;
    rd_kafka_AclBinding_t *acl[ADMIN_KACL_MAX_BINDINGS] = {0};
    char errstr[512];
    int rc = -1;
    for (size_t i = 0; i < f->n_bindings; i++) {
        const kacl_binding_t *b = &f->b[i];
        acl[i] =
            rd_kafka_AclBinding_new(b->type, b->name, b->pattern, b->principal, "*", b->op,
                                    RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW, errstr, sizeof(errstr));
        if (!acl[i]) {
            admin_err_set(err, 422, "invalid value", "kafka.consumer", "ACL for %s on %s: %s",
                          b->principal, b->name, errstr);
            goto out;
        }
    }
    rd_kafka_queue_t *q = rd_kafka_queue_new(k->rk);
    rd_kafka_AdminOptions_t *o = kacl_options(k, RD_KAFKA_ADMIN_OP_CREATEACLS);
    rd_kafka_CreateAcls(k->rk, acl, f->n_bindings, o, q);
    rd_kafka_event_t *ev = kacl_wait(k, q);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_queue_destroy(q);
    if (kacl_event_failed(k, ev, "creating the consumer's ACLs", err) != 0)
        goto out;
    size_t n = 0;
    const rd_kafka_acl_result_t **res =
        rd_kafka_CreateAcls_result_acls(rd_kafka_event_CreateAcls_result(ev), &n);
    rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const rd_kafka_error_t *e = rd_kafka_acl_result_error(res[i]);
        if (!e)
            continue;
        kacl_err(k, err, rd_kafka_error_code(e), "creating the consumer's ACLs",
                 rd_kafka_error_string(e), -1);
        rc = -1;
    }
    rd_kafka_event_destroy(ev);
out:
    for (size_t i = 0; i < f->n_bindings; i++)
        if (acl[i])
            rd_kafka_AclBinding_destroy(acl[i]);
    return rc;
}

/* Deletes exactly these bindings (a filter per binding: every field given). */
static int kacl_delete_acls(admin_kacl_t *k, const kacl_binding_t *b, size_t n_b, size_t *deleted,
                            admin_err_t *err)
{
    if (n_b == 0)
        return 0;
    rd_kafka_AclBindingFilter_t *flt[ADMIN_KACL_MAX_BINDINGS] = {0};
    char errstr[512];
    int rc = -1;
    for (size_t i = 0; i < n_b; i++) {
        flt[i] = rd_kafka_AclBindingFilter_new(b[i].type, b[i].name, b[i].pattern, b[i].principal,
                                               "*", b[i].op, RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW,
                                               errstr, sizeof(errstr));
        if (!flt[i]) {
            admin_err_set(err, 500, "internal", "", "ACL filter for %s on %s: %s", b[i].principal,
                          b[i].name, errstr);
            goto out;
        }
    }
    rd_kafka_queue_t *q = rd_kafka_queue_new(k->rk);
    rd_kafka_AdminOptions_t *o = kacl_options(k, RD_KAFKA_ADMIN_OP_DELETEACLS);
    rd_kafka_DeleteAcls(k->rk, flt, n_b, o, q);
    rd_kafka_event_t *ev = kacl_wait(k, q);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_queue_destroy(q);
    if (kacl_event_failed(k, ev, "deleting the consumer's ACLs", err) != 0)
        goto out;
    size_t n = 0;
    const rd_kafka_DeleteAcls_result_response_t **res =
        rd_kafka_DeleteAcls_result_responses(rd_kafka_event_DeleteAcls_result(ev), &n);
    rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const rd_kafka_error_t *e = rd_kafka_DeleteAcls_result_response_error(res[i]);
        if (!e) {
            size_t m = 0;
            rd_kafka_DeleteAcls_result_response_matching_acls(res[i], &m);
            *deleted += m;
            continue;
        }
        kacl_err(k, err, rd_kafka_error_code(e), "deleting the consumer's ACLs",
                 rd_kafka_error_string(e), -1);
        rc = -1;
    }
    rd_kafka_event_destroy(ev);
out:
    for (size_t i = 0; i < n_b; i++)
        if (flt[i])
            rd_kafka_AclBinding_destroy(flt[i]);
    return rc;
}

int admin_kacl_grant(admin_kacl_t *k, json_t *feed, admin_err_t *err)
{
    kacl_feed_t f;
    if (!k)
        return 0;
    if (!kacl_feed_of(k, feed, &f)) {
        if (f.name)
            log_info("admin: feed %s: no endpoint on the admin's cluster (%s); its topic and ACLs "
                     "are the operator's",
                     f.name, k->bootstrap);
        return 0;
    }
    if (kacl_create_topics(k, &f, err) != 0 || kacl_create_acls(k, &f, err) != 0)
        return -1;
    log_info("admin: feed %s: topic %s%s, %zu ACLs for %s", f.name, f.topics[0],
             f.n_topics > 1 ? " (and more)" : "", f.n_bindings,
             f.s.principal ? f.s.principal : "(no consumer)");
    return 0;
}

/* Another feed of the cache (not `skip_id`) that holds the binding. */
typedef struct kacl_scan {
    admin_kacl_t *k;
    const char *skip_id;
    const kacl_binding_t *b;
    bool found;
} kacl_scan_t;

static int kacl_scan_one(admin_obj_t *o, void *arg)
{
    kacl_scan_t *s = arg;
    if (s->skip_id && strcmp(o->id, s->skip_id) == 0)
        return 0;
    kacl_feed_t f;
    if (kacl_feed_of(s->k, o->json, &f) && kacl_feed_has(&f, s->b)) {
        s->found = true;
        return 1;
    }
    return 0;
}

int admin_kacl_revoke(admin_kacl_t *k, admin_ctx_t *ctx, json_t *feed, json_t *keep,
                      admin_err_t *err)
{
    kacl_feed_t f, kf;
    if (!k || !kacl_feed_of(k, feed, &f))
        return 0;
    bool have_keep = keep && kacl_feed_of(k, keep, &kf);
    const char *id = json_string_value(json_object_get(feed, "id"));
    kacl_binding_t gone[ADMIN_KACL_MAX_BINDINGS];
    size_t n = 0;
    for (size_t i = 0; i < f.n_bindings; i++) {
        if (have_keep && kacl_feed_has(&kf, &f.b[i]))
            continue;
        /* A binding another feed also needs (same principal, same group prefix) stays. */
        kacl_scan_t s = {.k = k, .skip_id = id, .b = &f.b[i]};
        admin_cache_foreach(&ctx->cache[ADMIN_KIND_FEED], kacl_scan_one, &s);
        if (!s.found)
            gone[n++] = f.b[i];
    }
    size_t deleted = 0;
    if (kacl_delete_acls(k, gone, n, &deleted, err) != 0)
        return -1;
    if (n)
        log_info("admin: feed %s: %zu ACLs of %s deleted", f.name, deleted, f.s.principal);
    return 0;
}

typedef struct kacl_rec {
    admin_kacl_t *k;
    int failed;
    admin_err_t err;
} kacl_rec_t;

static int kacl_reconcile_one(admin_obj_t *o, void *arg)
{
    kacl_rec_t *r = arg;
    if (admin_kacl_grant(r->k, o->json, &r->err) != 0) {
        r->failed++;
        log_error("admin: reconcile of feed %s's Kafka topic and ACLs: %s", o->name, r->err.reason);
        /* The cluster is not answering: every other feed would wait its timeout too. */
        return r->err.status == 503 ? 1 : 0;
    }
    return 0;
}

int admin_kacl_reconcile(admin_kacl_t *k, admin_ctx_t *ctx)
{
    if (!k)
        return 0;
    kacl_rec_t r = {.k = k};
    admin_cache_foreach(&ctx->cache[ADMIN_KIND_FEED], kacl_reconcile_one, &r);
    k->pending = r.failed > 0;
    /* Every try may wait for the cluster's timeout on the admin's one thread: not often. */
    k->next_try_ms = wall_now_ms() + 30000;
    return r.failed ? -1 : 0;
}

void admin_kacl_poll(admin_kacl_t *k, admin_ctx_t *ctx, int64_t sample_ms)
{
    if (!k)
        return;
    int64_t now = wall_now_ms();
    if (k->pending && now >= k->next_try_ms && admin_kacl_reconcile(k, ctx) == 0)
        log_info("admin: Kafka feed topics and ACLs reconciled with the database");
    if (sample_ms > 0 && now >= k->next_sample_ms) {
        admin_kacl_sample(k, ctx, now);
        k->next_sample_ms = wall_now_ms() + sample_ms;
    }
}

/* ---- console status: consumer lag, produce rate, principal ---- */

void admin_kacl_metrics(admin_kacl_t *k, metrics_registry_t *r)
{
    if (!k)
        return;
    k->f_lag = metrics_gauge_new(r, "ndd_admin_kafka_feed_consumer_lag",
                                 "Records of a Kafka feed's topic its consumer groups (under the "
                                 "feed's group prefix) have not committed",
                                 "feed");
    k->f_rate = metrics_gauge_new(r, "ndd_admin_kafka_feed_records_per_second",
                                  "Records produced to a Kafka feed's topic per second (end "
                                  "offsets over the last sample interval)",
                                  "feed");
}

static int kacl_sample_timeout(const admin_kacl_t *k)
{
    return k->timeout_ms < ADMIN_KACL_SAMPLE_TIMEOUT_MS ? k->timeout_ms
                                                        : ADMIN_KACL_SAMPLE_TIMEOUT_MS;
}

static kacl_stat_t *kacl_stat_find(admin_kacl_t *k, const char *id)
{
    for (size_t i = 0; i < k->n_stats; i++)
        if (strcmp(k->stats[i].id, id) == 0)
            return &k->stats[i];
    if (k->n_stats >= ADMIN_KACL_MAX_STATS)
        return NULL;
    kacl_stat_t *st = &k->stats[k->n_stats++];
    memset(st, 0, sizeof(*st));
    snprintf(st->id, sizeof(st->id), "%s", id);
    return st;
}

typedef struct kacl_groups {
    const char **ids;
    size_t n;
} kacl_groups_t;

/* Every consumer group of the cluster (one ListConsumerGroups call per sample); the event
 * owns the strings, so it is kept until the sample ends. */
static rd_kafka_event_t *kacl_list_groups(admin_kacl_t *k, kacl_groups_t *g, char *why,
                                          size_t whylen)
{
    rd_kafka_queue_t *q = rd_kafka_queue_new(k->rk);
    rd_kafka_AdminOptions_t *o =
        rd_kafka_AdminOptions_new(k->rk, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPS);
    char errstr[256];
    rd_kafka_AdminOptions_set_request_timeout(o, kacl_sample_timeout(k), errstr, sizeof(errstr));
    rd_kafka_ListConsumerGroups(k->rk, o, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, kacl_sample_timeout(k) + 1000);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_queue_destroy(q);
    if (!ev || rd_kafka_event_error(ev)) {
        snprintf(why, whylen, "listing consumer groups: %s",
                 ev ? rd_kafka_event_error_string(ev) : "no answer");
        if (ev)
            rd_kafka_event_destroy(ev);
        return NULL;
    }
    size_t n = 0;
    const rd_kafka_ConsumerGroupListing_t **l =
        rd_kafka_ListConsumerGroups_result_valid(rd_kafka_event_ListConsumerGroups_result(ev), &n);
    g->ids = calloc(n ? n : 1, sizeof(*g->ids));
    g->n = 0;
    for (size_t i = 0; g->ids && i < n; i++)
        g->ids[g->n++] = rd_kafka_ConsumerGroupListing_group_id(l[i]);
    return ev;
}

/* Committed offsets of `group` on the topic's partitions: adds hw - committed of each
 * partition with a commit to *lag; 1 when the group has committed on the topic, 0 when not,
 * -1 when the cluster did not answer. */
static int kacl_group_lag(admin_kacl_t *k, const char *group, const char *topic, int np,
                          const int64_t *hw, int64_t *lag)
{
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(np);
    for (int p = 0; p < np; p++)
        rd_kafka_topic_partition_list_add(parts, topic, p);
    rd_kafka_ListConsumerGroupOffsets_t *req = rd_kafka_ListConsumerGroupOffsets_new(group, parts);
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_queue_t *q = rd_kafka_queue_new(k->rk);
    rd_kafka_AdminOptions_t *o =
        rd_kafka_AdminOptions_new(k->rk, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS);
    char errstr[256];
    rd_kafka_AdminOptions_set_request_timeout(o, kacl_sample_timeout(k), errstr, sizeof(errstr));
    rd_kafka_ListConsumerGroupOffsets(k->rk, &req, 1, o, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, kacl_sample_timeout(k) + 1000);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_queue_destroy(q);
    rd_kafka_ListConsumerGroupOffsets_destroy(req);
    if (!ev || rd_kafka_event_error(ev)) {
        if (ev)
            rd_kafka_event_destroy(ev);
        return -1;
    }
    size_t n = 0;
    const rd_kafka_group_result_t **gr = rd_kafka_ListConsumerGroupOffsets_result_groups(
        rd_kafka_event_ListConsumerGroupOffsets_result(ev), &n);
    int committed = 0;
    for (size_t i = 0; i < n; i++) {
        const rd_kafka_topic_partition_list_t *pl = rd_kafka_group_result_partitions(gr[i]);
        for (int j = 0; pl && j < pl->cnt; j++) {
            const rd_kafka_topic_partition_t *tp = &pl->elems[j];
            if (tp->err || tp->offset < 0 || tp->partition < 0 || tp->partition >= np)
                continue;
            committed = 1;
            if (hw[tp->partition] > tp->offset)
                *lag += hw[tp->partition] - tp->offset;
        }
    }
    rd_kafka_event_destroy(ev);
    return committed;
}

/* One sample of one feed: end offsets (high watermarks), and the lag of its groups. */
static void kacl_sample_feed(admin_kacl_t *k, kacl_stat_t *st, const kacl_groups_t *g, int64_t now)
{
    int64_t prev_end = st->end_offset, prev_ms = st->sampled_ms;
    bool prev_ok = st->ok;
    st->ok = false;
    st->error[0] = '\0';
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(k->rk, st->topic, NULL);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e = rkt ? rd_kafka_metadata(k->rk, 0, rkt, &md, kacl_sample_timeout(k))
                                : RD_KAFKA_RESP_ERR__INVALID_ARG;
    if (rkt)
        rd_kafka_topic_destroy(rkt);
    if (!e && (md->topic_cnt != 1 || md->topics[0].err))
        e = md->topic_cnt == 1 ? md->topics[0].err : RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
    if (e) {
        snprintf(st->error, sizeof(st->error), "topic %s: %s", st->topic, rd_kafka_err2str(e));
        if (md)
            rd_kafka_metadata_destroy(md);
        return;
    }
    int np = md->topics[0].partition_cnt;
    rd_kafka_metadata_destroy(md);
    int64_t *hw = calloc(np > 0 ? (size_t)np : 1, sizeof(*hw));
    if (!hw) {
        snprintf(st->error, sizeof(st->error), "out of memory");
        return;
    }
    int64_t end = 0;
    for (int p = 0; p < np; p++) {
        int64_t lo = 0, hi = 0;
        e = rd_kafka_query_watermark_offsets(k->rk, st->topic, p, &lo, &hi, kacl_sample_timeout(k));
        if (e) {
            snprintf(st->error, sizeof(st->error), "end offset of %s [%d]: %s", st->topic, p,
                     rd_kafka_err2str(e));
            free(hw);
            return;
        }
        hw[p] = hi;
        end += hi;
    }
    int64_t lag = 0;
    int groups = 0;
    size_t plen = strlen(st->group_prefix);
    for (size_t i = 0; st->principal[0] && i < g->n; i++) {
        if (strncmp(g->ids[i], st->group_prefix, plen) != 0)
            continue;
        int r = kacl_group_lag(k, g->ids[i], st->topic, np, hw, &lag);
        if (r < 0) {
            snprintf(st->error, sizeof(st->error), "offsets of group %s: no answer", g->ids[i]);
            free(hw);
            return;
        }
        groups += r;
    }
    free(hw);
    st->have_rate = prev_ok && now > prev_ms;
    st->rate = st->have_rate ? (double)(end - prev_end) * 1000.0 / (double)(now - prev_ms) : 0.0;
    st->end_offset = end;
    st->lag = lag;
    st->groups = groups;
    st->sampled_ms = now;
    st->ok = true;
    if (st->m_lag)
        metrics_gauge_set(st->m_lag, (double)lag);
    if (st->m_rate && st->have_rate)
        metrics_gauge_set(st->m_rate, st->rate);
}

static void kacl_stat_metrics_drop(admin_kacl_t *k, kacl_stat_t *st)
{
    if (k->f_lag && st->m_lag)
        metrics_family_remove_matching(k->f_lag, "feed", st->name);
    if (k->f_rate && st->m_rate)
        metrics_family_remove_matching(k->f_rate, "feed", st->name);
    st->m_lag = st->m_rate = NULL;
}

typedef struct kacl_mark {
    admin_kacl_t *k;
    size_t dropped;
} kacl_mark_t;

static int kacl_mark_one(admin_obj_t *o, void *arg)
{
    kacl_mark_t *m = arg;
    kacl_feed_t f;
    if (!kacl_feed_of(m->k, o->json, &f))
        return 0;
    kacl_stat_t *st = kacl_stat_find(m->k, o->id);
    if (!st) {
        m->dropped++;
        return 0;
    }
    st->seen = true;
    if (strcmp(st->name, f.name ? f.name : "") != 0) {
        /* Renamed (or new): the metrics carry the name. */
        kacl_stat_metrics_drop(m->k, st);
        snprintf(st->name, sizeof(st->name), "%s", f.name ? f.name : "");
    }
    if (strcmp(st->topic, f.topics[0]) != 0) {
        st->ok = st->have_rate = false; /* another topic: its offsets are not comparable */
        snprintf(st->topic, sizeof(st->topic), "%s", f.topics[0]);
    }
    snprintf(st->principal, sizeof(st->principal), "%s", f.s.principal ? f.s.principal : "");
    if (f.n_bindings)
        snprintf(st->group_prefix, sizeof(st->group_prefix), "%s", f.b[f.n_bindings - 1].name);
    else
        st->group_prefix[0] = '\0';
    if (m->k->f_lag && !st->m_lag)
        st->m_lag = metrics_gauge_labels(m->k->f_lag, st->name);
    if (m->k->f_rate && !st->m_rate)
        st->m_rate = metrics_gauge_labels(m->k->f_rate, st->name);
    return 0;
}

void admin_kacl_sample(admin_kacl_t *k, admin_ctx_t *ctx, int64_t now)
{
    if (!k)
        return;
    if (!k->stats && !(k->stats = calloc(ADMIN_KACL_MAX_STATS, sizeof(*k->stats))))
        return;
    for (size_t i = 0; i < k->n_stats; i++)
        k->stats[i].seen = false;
    kacl_mark_t m = {.k = k};
    admin_cache_foreach(&ctx->cache[ADMIN_KIND_FEED], kacl_mark_one, &m);
    if (m.dropped)
        log_warn("admin: %zu Kafka feeds beyond %d are left out of the status", m.dropped,
                 ADMIN_KACL_MAX_STATS);
    /* Sweep the feeds that are gone (and their metrics). */
    for (size_t i = 0; i < k->n_stats;) {
        if (k->stats[i].seen) {
            i++;
            continue;
        }
        kacl_stat_metrics_drop(k, &k->stats[i]);
        k->stats[i] = k->stats[--k->n_stats];
    }
    if (k->n_stats == 0)
        return;
    char why[200] = "";
    kacl_groups_t g = {0};
    rd_kafka_event_t *gev = kacl_list_groups(k, &g, why, sizeof(why));
    for (size_t i = 0; i < k->n_stats; i++) {
        if (!gev) {
            k->stats[i].ok = false;
            snprintf(k->stats[i].error, sizeof(k->stats[i].error), "%s", why);
            continue;
        }
        kacl_sample_feed(k, &k->stats[i], &g, now);
        /* The cluster stopped answering: the other feeds would each wait the timeout. */
        if (!k->stats[i].ok && strstr(k->stats[i].error, "no answer")) {
            for (size_t j = i + 1; j < k->n_stats; j++) {
                k->stats[j].ok = false;
                snprintf(k->stats[j].error, sizeof(k->stats[j].error), "%s", k->stats[i].error);
            }
            break;
        }
    }
    free(g.ids);
    if (gev)
        rd_kafka_event_destroy(gev);
}

json_t *admin_kacl_status(const admin_kacl_t *k, int64_t now)
{
    json_t *a = json_array();
    for (size_t i = 0; k && a && i < k->n_stats; i++) {
        const kacl_stat_t *st = &k->stats[i];
        json_t *o =
            json_pack("{s:s,s:s,s:s,s:s?}", "name", st->name, "topic", st->topic, "principal",
                      st->principal, "group_prefix", st->group_prefix[0] ? st->group_prefix : NULL);
        if (!o)
            continue;
        if (st->sampled_ms) {
            json_object_set_new(o, "end_offset", json_integer(st->end_offset));
            json_object_set_new(o, "consumer_lag", json_integer(st->lag));
            json_object_set_new(o, "consumer_groups", json_integer(st->groups));
            json_object_set_new(o, "age_ms", json_integer(now - st->sampled_ms));
            if (st->have_rate)
                json_object_set_new(o, "produce_rate_per_s", json_real(st->rate));
        }
        json_object_set_new(o, "state", json_string(st->ok ? "ok" : "unknown"));
        if (st->error[0])
            json_object_set_new(o, "error", json_string(st->error));
        json_array_append_new(a, o);
    }
    return a;
}
