/* ndd-correlation test helpers: see corr_testutil.h. */
#include "corr_testutil.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "codec.h"
#include "daemon_testutil.h"
#include "http_testutil.h"
#include "kafka_testutil.h"

const int64_t ctu_ts_offset[CODEC_TRIGGER__COUNT] = {0, 0, 180, 2310, 2420};

int corr_env_init(corr_env_t *e, const char *tag, int parts)
{
    memset(e, 0, sizeof(*e));
    char base[64];
    snprintf(base, sizeof(base), "ndd-test-%s", tag);
    ktu_unique_name(base, e->main, sizeof(e->main));
    snprintf(e->xdr, sizeof(e->xdr), "%.80s.xdr", e->main);
    snprintf(e->dlq, sizeof(e->dlq), "%.80s.dlq", e->main);
    snprintf(e->group, sizeof(e->group), "%.80s.group", e->main);
    if (dtu_tmpdir_make(e->dir, sizeof(e->dir), e->main))
        return -1;
    snprintf(e->log_path, sizeof(e->log_path), "%s/corr.log", e->dir);
    snprintf(e->port_file, sizeof(e->port_file), "%s/http.port", e->dir);
    if (ktu_create_topic(e->main, parts) || ktu_create_topic(e->xdr, parts) ||
        ktu_create_topic(e->dlq, 1))
        return -1;
    return 0;
}

int corr_env_control(corr_env_t *e)
{
    snprintf(e->config, sizeof(e->config), "%.80s.config", e->main);
    snprintf(e->events, sizeof(e->events), "%.80s.events", e->main);
    static const char *const compacted[] = {"cleanup.policy=compact"};
    if (ktu_create_topic_cfg(e->config, 1, compacted, 1) || ktu_create_topic(e->events, 1))
        return -1;
    return 0;
}

void corr_env_cleanup(corr_env_t *e)
{
    if (e->pid > 0) {
        ktu_stop(e->pid, SIGKILL, 5000);
        e->pid = 0;
    }
    ktu_delete_topic(e->main);
    ktu_delete_topic(e->xdr);
    ktu_delete_topic(e->dlq);
    if (e->config[0])
        ktu_delete_topic(e->config);
    if (e->events[0])
        ktu_delete_topic(e->events);
    dtu_tmpdir_remove(e->dir);
}

corr_env_t *corr_test_env;
pid_t corr_test_extra_pid;

int corr_test_teardown(void **state)
{
    (void)state;
    if (corr_test_extra_pid > 0)
        ktu_stop(corr_test_extra_pid, SIGKILL, 5000);
    corr_test_extra_pid = 0;
    if (corr_test_env)
        corr_env_cleanup(corr_test_env);
    corr_test_env = NULL;
    return 0;
}

pid_t corr_start(corr_env_t *e, const char *const *extra)
{
    static char bin[512], brokers[256], mainf[160], xdr[160], dlq[160], group[160], pf[400],
        cfgt[160], evt[160];
    static char *argv[64];
    snprintf(bin, sizeof(bin), "%s/correlation/ndd-correlation", NDD_BINARY_DIR);
    snprintf(brokers, sizeof(brokers), "--bootstrap=%s", ktu_brokers());
    snprintf(mainf, sizeof(mainf), "--main-topic=%s", e->main);
    snprintf(xdr, sizeof(xdr), "--xdr-topic=%s", e->xdr);
    snprintf(dlq, sizeof(dlq), "--dlq-topic=%s", e->dlq);
    snprintf(group, sizeof(group), "--group=%s", e->group);
    snprintf(pf, sizeof(pf), "--http.port-file=%s", e->port_file);
    unlink(e->port_file);
    size_t n = 0;
    argv[n++] = bin;
    argv[n++] = brokers;
    argv[n++] = mainf;
    argv[n++] = xdr;
    argv[n++] = dlq;
    argv[n++] = group;
    argv[n++] = "--create-topics=false";
    argv[n++] = "--http.port=0";
    argv[n++] = pf;
    snprintf(cfgt, sizeof(cfgt), "--config-topic=%s", e->config);
    snprintf(evt, sizeof(evt), "--events-topic=%s", e->events);
    argv[n++] = cfgt;
    argv[n++] = evt;
    /* A daemon killed with -9 leaves the group after the session timeout: keep it short. */
    argv[n++] = "--kafka.consumer.session.timeout.ms=6000";
    argv[n++] = "--kafka.consumer.heartbeat.interval.ms=500";
    for (size_t i = 0; extra && extra[i] && n < 63; i++)
        argv[n++] = (char *)extra[i];
    argv[n] = NULL;
    e->pid = ktu_spawn(argv, NULL, e->log_path);
    return e->pid;
}

bool corr_stop_clean(corr_env_t *e)
{
    return dtu_stop_clean(&e->pid, 20000);
}

uint16_t corr_http_port(const corr_env_t *e, int timeout_ms)
{
    return dtu_port_file_wait(e->port_file, timeout_ms);
}

double corr_metric(uint16_t port, const char *series)
{
    htu_resp_t r;
    if (htu_request(port, "GET", "/metrics", NULL, NULL, 0, 5000, &r) != 0 || r.status != 200) {
        htu_resp_free(&r);
        return -1;
    }
    double sum = 0;
    size_t sl = strlen(series);
    bool label_prefix = strchr(series, '{') != NULL;
    for (char *line = r.body; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (strncmp(line, series, sl) == 0 &&
            (label_prefix || line[sl] == ' ' || line[sl] == '{')) {
            char *sp = strrchr(line, ' ');
            if (sp)
                sum += strtod(sp + 1, NULL);
        }
        line = nl ? nl + 1 : NULL;
    }
    htu_resp_free(&r);
    return sum;
}

bool corr_log_wait(const corr_env_t *e, const char *needle, int timeout_ms)
{
    return dtu_log_wait(e->log_path, needle, timeout_ms);
}

int corr_produce_txn(rd_kafka_t *p, const char *topic, const char *id, const char *nf, int64_t ts0,
                     const codec_trigger_t *order, size_t n, int status)
{
    for (size_t k = 0; k < n; k++) {
        codec_trigger_t t = order[k];
        bool req = t == CODEC_TRIGGER_RX_REQUEST || t == CODEC_TRIGGER_TX_REQUEST;
        char ts[24], st[8];
        snprintf(ts, sizeof(ts), "%" PRId64, ts0 + ctu_ts_offset[t]);
        snprintf(st, sizeof(st), "%d", status);
        const char *hreq[] = {"@correlation-id", id,
                              "@timestamp-us",   ts,
                              "@message-type",   "request",
                              "@trigger-point",  codec_trigger_name(t),
                              "@nf-type",        nf,
                              "@consumer-fqdn",  "amf01.5gc.mnc093.mcc208.3gppnetwork.org",
                              ":method",         "GET",
                              ":path",           "/nudm-sdm/v2/imsi-208930000000001/am-data"};
        const char *hresp[] = {"@correlation-id", id,
                               "@timestamp-us",   ts,
                               "@message-type",   "response",
                               "@trigger-point",  codec_trigger_name(t),
                               "@nf-type",        nf,
                               "@producer-fqdn",  "udm01.5gc.mnc093.mcc208.3gppnetwork.org",
                               ":status",         st,
                               "content-type",    "application/json"};
        const char *body = req ? "" : "{\"gpsi\":\"msisdn-33612345678\",\"x\":1}";
        if (ktu_produce_copy(p, topic, id, body, req ? hreq : hresp, 8))
            return -1;
    }
    return 0;
}

static int64_t ctu_int(json_t *o, const char *name)
{
    json_t *v = json_object_get(o, name);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : CTU_NONE;
}

static void ctu_str(json_t *o, const char *name, char *dst, size_t dstlen)
{
    const char *s = json_string_value(json_object_get(o, name));
    snprintf(dst, dstlen, "%s", s ? s : "");
}

static bool ctu_xdr_cb(void *owner, const rd_kafka_message_t *m)
{
    corr_xdrs_t *out = owner;
    if (out->n == out->cap) {
        out->cap = out->cap ? out->cap * 2 : 256;
        out->v = realloc(out->v, out->cap * sizeof(*out->v));
        if (!out->v)
            abort();
    }
    corr_xdr_t *x = &out->v[out->n++];
    memset(x, 0, sizeof(*x));
    snprintf(x->key, sizeof(x->key), "%.*s", (int)m->key_len, m->key ? (const char *)m->key : "");
    x->create_ms = rd_kafka_message_timestamp(m, NULL);
    json_t *o = json_loadb(m->payload, m->len, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return true;
    }
    x->parsed = true;
    ctu_str(o, "correlation_id", x->id, sizeof(x->id));
    ctu_str(o, "nf_type", x->nf, sizeof(x->nf));
    ctu_str(o, "completion", x->completion, sizeof(x->completion));
    ctu_str(o, "service", x->service, sizeof(x->service));
    ctu_str(o, "operation", x->operation, sizeof(x->operation));
    ctu_str(o, "supi", x->supi, sizeof(x->supi));
    int64_t st = ctu_int(o, "status_code");
    x->status = st == CTU_NONE ? 0 : (int)st;
    json_t *ts = json_object_get(o, "timestamps_us");
    for (int t = 0; t < CODEC_TRIGGER__COUNT; t++)
        x->ts[t] = t == 0 ? CTU_NONE : ctu_int(ts, codec_trigger_name((codec_trigger_t)t));
    json_t *lat = json_object_get(o, "latency_us");
    x->lat_rx = ctu_int(lat, "rx");
    x->lat_tx = ctu_int(lat, "tx");
    x->partition = ctu_int(o, "partition");
    x->first_offset = ctu_int(o, "first_offset");
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(o, "missing"), i, v)
    {
        const char *name = json_string_value(v);
        for (int t = 1; name && t < CODEC_TRIGGER__COUNT; t++)
            if (strcmp(name, codec_trigger_name((codec_trigger_t)t)) == 0)
                x->missing |= (uint8_t)(1u << t);
    }
    json_decref(o);
    return true;
}

size_t corr_read_xdrs(const char *topic, size_t want, int timeout_ms, corr_xdrs_t *out)
{
    return ktu_consume(topic, want, timeout_ms, ctu_xdr_cb, out);
}

void corr_xdrs_free(corr_xdrs_t *x)
{
    free(x->v);
    memset(x, 0, sizeof(*x));
}

long corr_txn_number(const char *id)
{
    const char *d = strrchr(id, '-');
    if (!d || !d[1])
        return -1;
    char *end;
    long n = strtol(d + 1, &end, 10);
    return *end ? -1 : n;
}
