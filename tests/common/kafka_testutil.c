/* Integration-test helpers for the real broker: see kafka_testutil.h. */
#include "kafka_testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "codec.h"
#include "daemon_testutil.h"
#include "frame.h"
#include "kafka.h"

int64_t ktu_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void ktu_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

const char *ktu_brokers(void)
{
    const char *b = getenv("NDD_TEST_KAFKA");
    if (!b || !*b) {
        fprintf(stderr, "FAIL: NDD_TEST_KAFKA is not set. This integration test needs a real "
                        "Kafka broker: run deploy/local/stack.sh start and export "
                        "NDD_TEST_KAFKA=127.0.0.1:<port> (tests/run.sh does both).\n");
        exit(1);
    }
    return b;
}

char *ktu_unique_name(const char *prefix, char *out, size_t out_size)
{
    static unsigned seeded;
    if (!seeded) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seeded = (unsigned)(ts.tv_nsec ^ (getpid() << 16));
        srandom(seeded);
    }
    snprintf(out, out_size, "%s-%d-%08lx", prefix, (int)getpid(),
             (unsigned long)random() & 0xffffffffUL);
    return out;
}

int ktu_create_topic_cfg(const char *topic, int partitions, const char *const *configs, size_t n)
{
    kafka_prop_t props[32];
    char keys[32][128];
    if (n > 32)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(configs[i], '=');
        if (!eq || (size_t)(eq - configs[i]) >= sizeof(keys[i]))
            return -1;
        memcpy(keys[i], configs[i], (size_t)(eq - configs[i]));
        keys[i][eq - configs[i]] = '\0';
        props[i].key = keys[i];
        props[i].value = eq + 1;
    }
    return kafka_admin_create_topic(ktu_brokers(), topic, partitions, 1, props, n, 15000);
}

int ktu_create_topic(const char *topic, int partitions)
{
    return ktu_create_topic_cfg(topic, partitions, NULL, 0);
}

void ktu_delete_topic(const char *topic)
{
    kafka_admin_delete_topic(ktu_brokers(), topic, 10000);
}

static int ktu_conf_kv(rd_kafka_conf_t *conf, const char *kv)
{
    char key[128], err[256];
    const char *eq = strchr(kv, '=');
    if (!eq || (size_t)(eq - kv) >= sizeof(key)) {
        fprintf(stderr, "ktu: bad property \"%s\" (want key=value)\n", kv);
        return -1;
    }
    memcpy(key, kv, (size_t)(eq - kv));
    key[eq - kv] = '\0';
    if (rd_kafka_conf_set(conf, key, eq + 1, err, sizeof(err)) != RD_KAFKA_CONF_OK) {
        fprintf(stderr, "ktu: property %s: %s\n", key, err);
        return -1;
    }
    return 0;
}

rd_kafka_t *ktu_producer_new(const char *const *props, size_t n_props)
{
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *base[] = {"enable.idempotence=true", "linger.ms=5", "partitioner=murmur2_random"};
    if (rd_kafka_conf_set(conf, "bootstrap.servers", ktu_brokers(), err, sizeof(err)))
        goto fail;
    for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
        if (ktu_conf_kv(conf, base[i]))
            goto fail;
    for (size_t i = 0; i < n_props; i++)
        if (ktu_conf_kv(conf, props[i]))
            goto fail;
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    if (!rk) {
        fprintf(stderr, "ktu: producer: %s\n", err);
        goto fail;
    }
    return rk;
fail:
    rd_kafka_conf_destroy(conf);
    return NULL;
}

int ktu_produce(rd_kafka_t *p, const char *topic, int32_t partition, const void *key,
                size_t key_len, const void *value, size_t value_len, const char *const *headers,
                size_t n_headers)
{
    rd_kafka_headers_t *hdrs = NULL;
    if (n_headers) {
        hdrs = rd_kafka_headers_new(n_headers);
        for (size_t i = 0; i < n_headers; i++)
            rd_kafka_header_add(hdrs, headers[2 * i], -1, headers[2 * i + 1],
                                headers[2 * i + 1] ? (ssize_t)strlen(headers[2 * i + 1]) : 0);
    }
    for (int attempt = 0; attempt < 1000; attempt++) {
        rd_kafka_resp_err_t e = rd_kafka_producev(
            p, RD_KAFKA_V_TOPIC(topic),
            RD_KAFKA_V_PARTITION(partition < 0 ? RD_KAFKA_PARTITION_UA : partition),
            RD_KAFKA_V_KEY(key, key_len), RD_KAFKA_V_VALUE((void *)value, value_len),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_END);
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
            return 0;
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            fprintf(stderr, "ktu: produce to %s: %s\n", topic, rd_kafka_err2str(e));
            break;
        }
        rd_kafka_poll(p, 10);
    }
    if (hdrs)
        rd_kafka_headers_destroy(hdrs);
    return -1;
}

int ktu_produce_copy(rd_kafka_t *p, const char *topic, const char *key, const char *body,
                     const char *const *headers, size_t n_headers)
{
    const char *fmt = getenv("NDD_TEST_MAIN_FORMAT");
    if (!fmt || strcmp(fmt, "frame") != 0)
        return ktu_produce(p, topic, -1, key, strlen(key), body, strlen(body), headers, n_headers);
    buf_t out;
    frame_builder_t b;
    int rc = -1;
    if (buf_init(&out, 0, 1u << 24) || frame_data_begin(&b, &out, 0, 0, 0) ||
        frame_data_record_begin(&b))
        goto done;
    for (size_t i = 0; i < n_headers; i++)
        if (frame_data_record_header(&b, headers[2 * i], strlen(headers[2 * i]), headers[2 * i + 1],
                                     strlen(headers[2 * i + 1])))
            goto done;
    if (frame_data_record_end(&b, key, strlen(key), body, strlen(body)) || frame_data_end(&b))
        goto done;
    rc = ktu_produce(p, topic, -1, key, strlen(key), out.data, out.len, NULL, 0);
done:
    buf_free(&out);
    return rc;
}

int ktu_flush(rd_kafka_t *p, int timeout_ms)
{
    rd_kafka_flush(p, timeout_ms);
    int left = rd_kafka_outq_len(p);
    if (left)
        fprintf(stderr, "ktu: %d records not acknowledged after %d ms\n", left, timeout_ms);
    return left ? -1 : 0;
}

static int ktu_dr_failures;
static void ktu_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    if (m->err) {
        ktu_dr_failures++;
        fprintf(stderr, "ktu: delivery to %s failed: %s\n", rd_kafka_topic_name(m->rkt),
                rd_kafka_err2str(m->err));
    }
}

int ktu_produce_n(const char *topic, size_t n, const char *key_prefix, size_t n_keys,
                  const char *value_prefix)
{
    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", ktu_brokers(), err, sizeof(err));
    rd_kafka_conf_set(conf, "enable.idempotence", "true", err, sizeof(err));
    rd_kafka_conf_set(conf, "linger.ms", "5", err, sizeof(err));
    rd_kafka_conf_set(conf, "partitioner", "murmur2_random", err, sizeof(err));
    rd_kafka_conf_set_dr_msg_cb(conf, ktu_dr_cb);
    rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    if (!p) {
        fprintf(stderr, "ktu: producer: %s\n", err);
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    ktu_dr_failures = 0;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char key[128], val[256];
        int kl = snprintf(key, sizeof(key), "%s%zu", key_prefix, n_keys ? i % n_keys : i);
        int vl = snprintf(val, sizeof(val), "%s%zu", value_prefix, i);
        rc = ktu_produce(p, topic, -1, key, (size_t)kl, val, (size_t)vl, NULL, 0);
        rd_kafka_poll(p, 0);
    }
    if (ktu_flush(p, 30000))
        rc = -1;
    if (ktu_dr_failures)
        rc = -1;
    rd_kafka_destroy(p);
    return rc;
}

static rd_kafka_t *ktu_reader_new(const char *topic, int *n_parts)
{
    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", ktu_brokers(), err, sizeof(err));
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof(err));
    rd_kafka_conf_set(conf, "enable.partition.eof", "false", err, sizeof(err));
    /* librdkafka 2.0.2 wants a group.id even for assign(); with no subscribe and no commit the
     * group never exists on the broker. */
    char group[96];
    rd_kafka_conf_set(conf, "group.id", ktu_unique_name("ndd-ktu-reader", group, sizeof(group)),
                      err, sizeof(err));
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
    if (!rk) {
        fprintf(stderr, "ktu: consumer: %s\n", err);
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_poll_set_consumer(rk);
    int n = -1;
    int64_t deadline = ktu_now_ms() + 10000;
    while ((n = kafka_admin_partition_count(rk, topic, 2000)) < 1 && ktu_now_ms() < deadline)
        ktu_sleep_ms(50);
    if (n < 1) {
        fprintf(stderr, "ktu: topic %s has no partitions (does it exist?)\n", topic);
        rd_kafka_destroy(rk);
        return NULL;
    }
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(n);
    for (int i = 0; i < n; i++)
        rd_kafka_topic_partition_list_add(l, topic, i)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_resp_err_t e = rd_kafka_assign(rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    if (e) {
        fprintf(stderr, "ktu: assign %s: %s\n", topic, rd_kafka_err2str(e));
        rd_kafka_destroy(rk);
        return NULL;
    }
    *n_parts = n;
    return rk;
}

size_t ktu_consume(const char *topic, size_t want, int timeout_ms, ktu_consume_cb_t cb, void *owner)
{
    int n_parts;
    rd_kafka_t *rk = ktu_reader_new(topic, &n_parts);
    if (!rk)
        return 0;
    size_t seen = 0;
    int64_t last_progress = ktu_now_ms();
    while (seen < want && ktu_now_ms() - last_progress < timeout_ms) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (!m)
            continue;
        if (m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                fprintf(stderr, "ktu: consume %s [%d]: %s\n", topic, (int)m->partition,
                        rd_kafka_message_errstr(m));
            rd_kafka_message_destroy(m);
            continue;
        }
        seen++;
        last_progress = ktu_now_ms();
        bool more = cb ? cb(owner, m) : true;
        rd_kafka_message_destroy(m);
        if (!more)
            break;
    }
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return seen;
}

static char *ktu_dup(const void *p, size_t n)
{
    char *s = malloc(n + 1);
    if (!s)
        abort();
    if (n)
        memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

/* A copy of MAIN in the frame form (ndd-aggregation's main-format frame) is collected as the
 * header form would be: the key, fields and body of its one record, so that a test's
 * assertions hold for either form. False when m is not such a record. */
static bool ktu_unfold_frame(const rd_kafka_message_t *m, ktu_record_t *r)
{
    frame_parser_t p;
    frame_t f;
    frame_record_iter_t it;
    frame_record_t rec;
    size_t used = 0;
    if (!codec_record_is_frame(m))
        return false;
    frame_parser_init(&p, (uint32_t)m->len, false);
    if (frame_parse(&p, m->payload, m->len, &f, &used) != FRAME_OK || used != m->len)
        return false;
    frame_records(&f, &it);
    if (!frame_record_next(&it, &rec))
        return false;
    if (rec.key.len) {
        r->key = ktu_dup(rec.key.ptr, rec.key.len);
        r->key_len = rec.key.len;
    }
    r->value = ktu_dup(rec.body.ptr, rec.body.len);
    r->value_len = rec.body.len;
    r->framed = true;
    r->headers = calloc(rec.header_count ? rec.header_count : 1, sizeof(*r->headers));
    frame_header_iter_t hi;
    codec_slice_t n, v;
    frame_headers(&rec, &hi);
    while (frame_header_next(&hi, &n, &v)) {
        r->headers[r->n_headers].name = ktu_dup(n.ptr, n.len);
        r->headers[r->n_headers].value = ktu_dup(v.ptr, v.len);
        r->headers[r->n_headers].value_len = v.len;
        r->n_headers++;
    }
    return true;
}

static bool ktu_collect_cb(void *owner, const rd_kafka_message_t *m)
{
    ktu_records_t *out = owner;
    if (out->n == out->cap) {
        out->cap = out->cap ? out->cap * 2 : 256;
        out->v = realloc(out->v, out->cap * sizeof(*out->v));
        if (!out->v)
            abort();
    }
    ktu_record_t *r = &out->v[out->n++];
    memset(r, 0, sizeof(*r));
    r->topic = ktu_dup(rd_kafka_topic_name(m->rkt), strlen(rd_kafka_topic_name(m->rkt)));
    r->partition = m->partition;
    r->offset = m->offset;
    if (ktu_unfold_frame(m, r))
        return true;
    if (m->key) {
        r->key = ktu_dup(m->key, m->key_len);
        r->key_len = m->key_len;
    }
    if (m->payload) {
        r->value = ktu_dup(m->payload, m->len);
        r->value_len = m->len;
    }
    rd_kafka_headers_t *h = NULL;
    if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR && h) {
        size_t cnt = rd_kafka_header_cnt(h);
        r->headers = calloc(cnt ? cnt : 1, sizeof(*r->headers));
        for (size_t i = 0; i < cnt; i++) {
            const char *name;
            const void *val;
            size_t len;
            if (rd_kafka_header_get_all(h, i, &name, &val, &len))
                break;
            r->headers[i].name = ktu_dup(name, strlen(name));
            r->headers[i].value = val ? ktu_dup(val, len) : NULL;
            r->headers[i].value_len = len;
            r->n_headers++;
        }
    }
    return true;
}

size_t ktu_consume_records(const char *topic, size_t want, int timeout_ms, ktu_records_t *out)
{
    return ktu_consume(topic, want, timeout_ms, ktu_collect_cb, out);
}

void ktu_records_free(ktu_records_t *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->v[i].topic);
        free(r->v[i].key);
        free(r->v[i].value);
        for (size_t j = 0; j < r->v[i].n_headers; j++) {
            free(r->v[i].headers[j].name);
            free(r->v[i].headers[j].value);
        }
        free(r->v[i].headers);
    }
    free(r->v);
    memset(r, 0, sizeof(*r));
}

const char *ktu_record_header(const ktu_record_t *r, const char *name, size_t *len)
{
    for (size_t i = 0; i < r->n_headers; i++)
        if (strcmp(r->headers[i].name, name) == 0) {
            if (len)
                *len = r->headers[i].value_len;
            return r->headers[i].value;
        }
    return NULL;
}

bool ktu_msg_header(const rd_kafka_message_t *m, const char *name, char *buf, size_t buf_size)
{
    rd_kafka_headers_t *h = NULL;
    const void *val = NULL;
    size_t len = 0;
    static codec_msg_t cm; /* large; tests read records on one thread */
    codec_slice_t fv;
    if (codec_record_is_frame(m)) {
        if (codec_decode_frame_limited(&cm, m->payload, m->len, NULL, NULL) != CODEC_OK ||
            !codec_msg_field(&cm, name, strlen(name), &fv))
            return false;
        val = fv.ptr;
        len = fv.len;
    } else if (rd_kafka_message_headers(m, &h) || !h ||
               rd_kafka_header_get_last(h, name, &val, &len))
        return false;
    if (buf_size) {
        size_t n = len < buf_size - 1 ? len : buf_size - 1;
        if (val && n)
            memcpy(buf, val, n);
        buf[n] = '\0';
    }
    return true;
}

int64_t ktu_topic_record_count(const char *topic, int timeout_ms)
{
    int n_parts;
    rd_kafka_t *rk = ktu_reader_new(topic, &n_parts);
    if (!rk)
        return -1;
    int64_t total = 0;
    for (int i = 0; i < n_parts; i++) {
        int64_t lo, hi;
        rd_kafka_resp_err_t e =
            rd_kafka_query_watermark_offsets(rk, topic, i, &lo, &hi, timeout_ms);
        if (e) {
            fprintf(stderr, "ktu: watermarks %s [%d]: %s\n", topic, i, rd_kafka_err2str(e));
            total = -1;
            break;
        }
        total += hi - lo;
    }
    rd_kafka_destroy(rk);
    return total;
}

pid_t ktu_spawn(char *const argv[], char *const env[], const char *log_path)
{
    fflush(stdout);
    fflush(stderr);
    /* NDD_TEST_MAIN_FORMAT: the same test with ndd-aggregation writing MAIN in that form
     * (tests/CMakeLists.txt, <test>_frame). */
    const char *fmt = getenv("NDD_TEST_MAIN_FORMAT");
    const char *base = argv[0] ? strrchr(argv[0], '/') : NULL;
    char fmt_arg[64], *fmt_argv[128];
    if (fmt && *fmt && base && strcmp(base + 1, "ndd-aggregation") == 0) {
        size_t n = 0;
        while (argv[n] && n < 126) {
            fmt_argv[n] = argv[n];
            n++;
        }
        snprintf(fmt_arg, sizeof fmt_arg, "--main-format=%s", fmt);
        fmt_argv[n++] = fmt_arg;
        fmt_argv[n] = NULL;
        argv = fmt_argv;
    }
    char file[512], *ndd_argv[4];
    int t = dtu_allinone_argv(argv, env, log_path, file, sizeof file, ndd_argv);
    if (t < 0)
        return -1;
    if (t > 0)
        argv = ndd_argv;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        /* A test that fails an assertion never reaches its cleanup: the daemon must not
         * outlive it. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1)
            _exit(127);
        if (log_path) {
            int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (fd >= 0) {
                dup2(fd, 1);
                dup2(fd, 2);
                close(fd);
            }
        }
        /* The test's own sockets (recording endpoints, clients) must not leak into the child:
         * a listener held by a child keeps its port busy after the test closed it. */
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
        for (size_t i = 0; env && env[i]; i++)
            putenv(env[i]);
        execvp(argv[0], argv); /* a peer (nghttpd, openssl) by name, a daemon by its path */
        fprintf(stderr, "ktu: exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    return pid;
}

bool ktu_alive(pid_t pid, int *status)
{
    int st;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) {
        if (status)
            *status = st;
        return false;
    }
    return r == 0;
}

int ktu_stop(pid_t pid, int sig, int timeout_ms)
{
    if (pid <= 0)
        return -1;
    kill(pid, sig);
    int64_t deadline = ktu_now_ms() + timeout_ms;
    int st;
    while (ktu_now_ms() < deadline) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return st;
        if (r < 0)
            return -1;
        ktu_sleep_ms(10);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}
