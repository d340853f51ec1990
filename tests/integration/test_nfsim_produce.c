/* ndd-nf-sim against the real broker (NDD_TEST_KAFKA): every copy it produces decodes with
 * the codec, @seq covers the requested range exactly once, transactions keep their copies
 * together and in order, sizes are as asked, and the rate summary is honest. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "codec.h"
#include "kafka_testutil.h"

#define NFSIM_BIN NDD_BINARY_DIR "/bench/nfsim/ndd-nf-sim"
#define MAX_KEYS 4096

static const char *const nf_names[] = {"SCP", "NRF", "SEPP", "BSF", "PCF"};

/* Runs the simulator with args (NULL-terminated) and returns its JSON summary. */
static json_t *run_nfsim(const char *const *args, int *exit_status)
{
    char log_path[256];
    snprintf(log_path, sizeof log_path, "%s/nfsim-test-%d.log", NDD_BINARY_DIR, (int)getpid());
    unlink(log_path);
    char *argv[40];
    size_t n = 0;
    argv[n++] = (char *)NFSIM_BIN;
    argv[n++] = (char *)"--bootstrap";
    argv[n++] = (char *)ktu_brokers();
    argv[n++] = (char *)"--quiet";
    for (size_t i = 0; args[i] && n < 38; i++)
        argv[n++] = (char *)args[i];
    argv[n] = NULL;
    if (access(NFSIM_BIN, X_OK) != 0)
        fail_msg("%s is not built (build target ndd-nf-sim)", NFSIM_BIN);
    pid_t pid = ktu_spawn(argv, NULL, log_path);
    assert_true(pid > 0);
    int st = ktu_stop(pid, 0, 120000); /* signal 0: just wait for it to finish */
    assert_true(st != -1);
    *exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;

    FILE *f = fopen(log_path, "r");
    assert_non_null(f);
    char line[4096], last_json[4096] = "";
    while (fgets(line, sizeof line, f))
        if (line[0] == '{')
            snprintf(last_json, sizeof last_json, "%s", line);
        else
            fprintf(stderr, "nfsim: %s", line);
    fclose(f);
    unlink(log_path);
    json_error_t je;
    json_t *j = json_loads(last_json, 0, &je);
    if (!j)
        fail_msg("no JSON summary from ndd-nf-sim (%s)", je.text);
    return j;
}

static long long jint(const json_t *j, const char *k)
{
    const json_t *v = json_object_get(j, k);
    if (!json_is_integer(v))
        fail_msg("summary has no integer \"%s\"", k);
    return json_integer_value(v);
}

typedef struct key_state {
    char key[96];
    int copies;
    int32_t partition;
    char topic[128];
    int64_t last_ts;
    uint64_t first_seq;
    char triggers[4][16];
} key_state_t;

typedef struct check_ctx {
    const char *topic;
    const char *nf;
    uint64_t seq_lo, seq_hi;
    unsigned char *seen;
    size_t decoded, bad, dup_seq, out_of_range;
    size_t size_fixed; /* 0: do not check */
    size_t size_wrong;
    key_state_t *keys;
    size_t n_keys;
    size_t order_errors;
} check_ctx_t;

static key_state_t *key_find(check_ctx_t *c, const codec_slice_t *k)
{
    for (size_t i = 0; i < c->n_keys; i++)
        if (strlen(c->keys[i].key) == k->len && memcmp(c->keys[i].key, k->ptr, k->len) == 0)
            return &c->keys[i];
    if (c->n_keys == MAX_KEYS || k->len >= sizeof c->keys[0].key)
        return NULL;
    key_state_t *s = &c->keys[c->n_keys++];
    memset(s, 0, sizeof *s);
    memcpy(s->key, k->ptr, k->len);
    return s;
}

static bool check_cb(void *owner, const rd_kafka_message_t *m)
{
    check_ctx_t *c = owner;
    codec_msg_t msg;
    codec_error_t err;
    codec_reason_t r = codec_decode(&msg, m, &err);
    if (r != CODEC_OK) {
        if (c->bad++ < 5)
            fprintf(stderr, "decode failed %s [%d] @%lld: %s %s %s\n", c->topic, (int)m->partition,
                    (long long)m->offset, codec_reason_name(r), err.field, err.detail);
        return true;
    }
    c->decoded++;
    const codec_slice_t *nf = &msg.meta[CODEC_META_NF_TYPE];
    if (nf->len != strlen(c->nf) || memcmp(nf->ptr, c->nf, nf->len) != 0)
        c->bad++;
    if (msg.meta[CODEC_META_SEQ].ptr == NULL || msg.seq < c->seq_lo || msg.seq > c->seq_hi) {
        c->out_of_range++;
    } else {
        uint64_t i = msg.seq - c->seq_lo;
        if (c->seen[i])
            c->dup_seq++;
        c->seen[i] = 1;
    }
    if (c->size_fixed) {
        size_t size = m->key_len + m->len;
        rd_kafka_headers_t *h = NULL;
        if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            const char *name;
            const void *val;
            size_t vlen;
            for (size_t i = 0; rd_kafka_header_get_all(h, i, &name, &val, &vlen) == 0; i++)
                size += strlen(name) + vlen;
        }
        if (size != c->size_fixed && c->size_wrong++ < 3)
            fprintf(stderr, "copy @seq %llu is %zu bytes, not %zu\n", (unsigned long long)msg.seq,
                    size, c->size_fixed);
    }
    key_state_t *k = key_find(c, &msg.key);
    if (!k) {
        c->order_errors++;
        return true;
    }
    if (k->copies == 0) {
        k->partition = m->partition;
        snprintf(k->topic, sizeof k->topic, "%s", c->topic);
        k->first_seq = msg.seq;
    } else if (k->partition != m->partition || strcmp(k->topic, c->topic) != 0 ||
               msg.timestamp_us <= k->last_ts || msg.seq != k->first_seq + (uint64_t)k->copies) {
        /* copies of one transaction: same partition, in order, consecutive @seq */
        c->order_errors++;
    }
    if (k->copies < 4)
        snprintf(k->triggers[k->copies], sizeof k->triggers[0], "%.*s",
                 (int)msg.meta[CODEC_META_TRIGGER_POINT].len,
                 msg.meta[CODEC_META_TRIGGER_POINT].ptr);
    k->copies++;
    k->last_ts = msg.timestamp_us;
    return true;
}

/* Consumes the first n_nf NF topics of prefix and checks the copies; returns the number
 * consumed. */
static size_t consume_and_check(const char *prefix, size_t n_nf, check_ctx_t *c)
{
    size_t total = 0;
    for (size_t i = 0; i < n_nf; i++) {
        char topic[160];
        snprintf(topic, sizeof topic, "%s%s", prefix, nf_names[i]);
        int64_t n = ktu_topic_record_count(topic, 10000);
        if (n <= 0)
            continue;
        c->topic = topic;
        c->nf = nf_names[i];
        size_t got = ktu_consume(topic, (size_t)n, 20000, check_cb, c);
        assert_int_equal(got, (size_t)n);
        total += got;
    }
    return total;
}

static void delete_topics(const char *prefix, size_t n_nf)
{
    for (size_t i = 0; i < n_nf; i++) {
        char topic[160];
        snprintf(topic, sizeof topic, "%s%s", prefix, nf_names[i]);
        ktu_delete_topic(topic);
    }
}

static void test_nfsim_1000_copies_decode_and_seq_covers_0_to_999(void **state)
{
    char prefix[96];
    ktu_unique_name("nfsim-a", prefix, sizeof prefix);
    strcat(prefix, "-");
    const char *args[] = {"--count",
                          "1000",
                          "--copies",
                          "2",
                          "--size",
                          "mix",
                          "--nf-mix",
                          "SCP=2,NRF=1,SEPP=1,BSF=1,PCF=1",
                          "--partitions",
                          "3",
                          "--topic-prefix",
                          prefix,
                          "--error-rate",
                          "0.1",
                          NULL};
    int rc;
    json_t *sum = run_nfsim(args, &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(jint(sum, "produced"), 1000);
    assert_int_equal(jint(sum, "acked"), 1000);
    assert_int_equal(jint(sum, "failed"), 0);
    assert_int_equal(jint(sum, "transactions"), 500);
    assert_int_equal(jint(sum, "seq_first"), 0);
    assert_int_equal(jint(sum, "seq_last"), 999);
    assert_true(json_is_false(json_object_get(sum, "target_missed")));
    /* The mix of 1,941 / 3,400 / 3,769 ±5 % averages near 3,037. */
    double avg = json_real_value(json_object_get(sum, "avg_size"));
    assert_true(avg > 2700 && avg < 3400);
    json_decref(sum);

    static check_ctx_t c;
    static unsigned char seen[1000];
    static key_state_t keys[MAX_KEYS];
    memset(&c, 0, sizeof c);
    memset(seen, 0, sizeof seen);
    c.seq_lo = 0;
    c.seq_hi = 999;
    c.seen = seen;
    c.keys = keys;
    assert_int_equal(consume_and_check(prefix, 5, &c), 1000);
    assert_int_equal(c.decoded, 1000);
    assert_int_equal(c.bad, 0);
    assert_int_equal(c.dup_seq, 0);
    assert_int_equal(c.out_of_range, 0);
    for (size_t i = 0; i < 1000; i++)
        if (!seen[i])
            fail_msg("@seq %zu missing", i);
    assert_int_equal(c.order_errors, 0);
    assert_int_equal(c.n_keys, 500);
    for (size_t i = 0; i < c.n_keys; i++) {
        assert_int_equal(keys[i].copies, 2);
        assert_string_equal(keys[i].triggers[0], "rx-request");
        assert_string_equal(keys[i].triggers[1], "tx-response");
    }
    delete_topics(prefix, 5);
}

static void test_nfsim_fixed_size_four_copy_transactions(void **state)
{
    char prefix[96];
    ktu_unique_name("nfsim-b", prefix, sizeof prefix);
    strcat(prefix, "-");
    const char *args[] = {
        "--count",      "400", "--copies",       "4",    "--size",      "3400", "--nf-mix", "SCP=1",
        "--partitions", "2",   "--topic-prefix", prefix, "--seq-start", "5000", NULL};
    int rc;
    json_t *sum = run_nfsim(args, &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(jint(sum, "acked"), 400);
    assert_int_equal(jint(sum, "transactions"), 100);
    assert_int_equal(jint(sum, "seq_first"), 5000);
    assert_int_equal(jint(sum, "seq_last"), 5399);
    assert_int_equal(jint(sum, "bytes"), 400 * 3400);
    json_decref(sum);

    static check_ctx_t c;
    static unsigned char seen[400];
    static key_state_t keys[MAX_KEYS];
    memset(&c, 0, sizeof c);
    memset(seen, 0, sizeof seen);
    c.seq_lo = 5000;
    c.seq_hi = 5399;
    c.seen = seen;
    c.keys = keys;
    c.size_fixed = 3400;
    assert_int_equal(consume_and_check(prefix, 1, &c), 400);
    assert_int_equal(c.decoded, 400);
    assert_int_equal(c.bad + c.dup_seq + c.out_of_range + c.order_errors, 0);
    assert_int_equal(c.size_wrong, 0);
    assert_int_equal(c.n_keys, 100);
    static const char *const order[4] = {"rx-request", "tx-request", "rx-response", "tx-response"};
    for (size_t i = 0; i < c.n_keys; i++) {
        assert_int_equal(keys[i].copies, 4);
        for (int k = 0; k < 4; k++)
            assert_string_equal(keys[i].triggers[k], order[k]);
    }
    delete_topics(prefix, 1);
}

static void test_nfsim_rate_is_held_and_a_missed_target_is_reported(void **state)
{
    char prefix[96];
    ktu_unique_name("nfsim-c", prefix, sizeof prefix);
    strcat(prefix, "-");
    const char *held[] = {"--rate",         "400",  "--duration", "2", "--partitions", "1",
                          "--topic-prefix", prefix, NULL};
    int rc;
    json_t *sum = run_nfsim(held, &rc);
    assert_int_equal(rc, 0);
    long long produced = jint(sum, "produced");
    assert_true(produced >= 760 && produced <= 820); /* 400/s for 2 s, + 5 ms burst */
    assert_true(json_is_false(json_object_get(sum, "target_missed")));
    double mps = json_real_value(json_object_get(sum, "achieved_mps"));
    assert_true(mps > 380 && mps < 420);
    json_decref(sum);

    /* 100 million per second is out of reach: the summary must say so. */
    const char *missed[] = {"--rate",         "100000000", "--count", "2000",
                            "--topic-prefix", prefix,      NULL};
    sum = run_nfsim(missed, &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(jint(sum, "acked"), 2000);
    assert_true(json_is_true(json_object_get(sum, "target_missed")));
    json_decref(sum);
    delete_topics(prefix, 1);
}

int main(void)
{
    ktu_brokers(); /* fails, with a message, when NDD_TEST_KAFKA is unset */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nfsim_1000_copies_decode_and_seq_covers_0_to_999),
        cmocka_unit_test(test_nfsim_fixed_size_four_copy_transactions),
        cmocka_unit_test(test_nfsim_rate_is_held_and_a_missed_target_is_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
