/* ndd-aggregation on the real broker, the daemon as a child process: valid copies reach MAIN
 * exactly once with key, order per key and enrichment; every invalid vector reaches the
 * dead-letter topic with its reason; an ingress filter change at run time takes effect
 * without restart and without loss; a stop commits exactly what was written. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "agg_testutil.h"
#include "kafka_testutil.h"
#include "vectors.h"

static uint64_t rec_seq(const ktu_record_t *r)
{
    const char *s = ktu_record_header(r, "@seq", NULL);
    return s ? strtoull(s, NULL, 10) : UINT64_MAX;
}

static int header_count(const ktu_record_t *r, const char *name)
{
    int n = 0;
    for (size_t i = 0; i < r->n_headers; i++)
        n += strcmp(r->headers[i].name, name) == 0;
    return n;
}

/* ---- valid copies: exactly once, key and order kept, enriched ---- */

#define N_VALID 3000
#define N_KEYS 50

static void test_valid_copies_reach_main_exactly_once_in_key_order_and_enriched(void **state)
{
    agg_env_t e;
    assert_int_equal(agg_env_init(&e, "aggflow", 3, 3), 0);
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    assert_int_equal(agg_produce_copies(p, e.in, 0, N_VALID, N_KEYS, 200), 0);
    assert_true(agg_start(&e, 0, NULL) > 0);

    ktu_records_t r = {0};
    assert_int_equal(ktu_consume_records(e.main, N_VALID, 30000, &r), N_VALID);
    static unsigned char seen[N_VALID];
    memset(seen, 0, sizeof(seen));
    uint64_t last_seq_of_key[N_KEYS];
    int32_t part_of_key[N_KEYS];
    for (int k = 0; k < N_KEYS; k++) {
        last_seq_of_key[k] = UINT64_MAX;
        part_of_key[k] = -1;
    }
    for (size_t i = 0; i < r.n; i++) {
        const ktu_record_t *m = &r.v[i];
        uint64_t seq = rec_seq(m);
        assert_true(seq < N_VALID);
        assert_false(seen[seq]); /* exactly once */
        seen[seq] = 1;
        /* Same key as produced, one MAIN partition per key, in produce order per key. */
        char key[32];
        snprintf(key, sizeof(key), "corr-%d", (int)(seq % N_KEYS));
        assert_string_equal(m->key, key);
        int k = (int)(seq % N_KEYS);
        if (part_of_key[k] < 0)
            part_of_key[k] = m->partition;
        assert_int_equal(m->partition, part_of_key[k]);
        if (last_seq_of_key[k] != UINT64_MAX)
            assert_true(seq > last_seq_of_key[k]);
        last_seq_of_key[k] = seq;
        /* Body untouched; original headers kept; enrichment added. */
        char prefix[32];
        int pl = snprintf(prefix, sizeof(prefix), "body-%llu;", (unsigned long long)seq);
        assert_int_equal(m->value_len, 200);
        assert_memory_equal(m->value, prefix, (size_t)pl);
        char path[64];
        snprintf(path, sizeof(path), "/nudm-sdm/v2/imsi-%llu/am-data", (unsigned long long)seq);
        assert_string_equal(ktu_record_header(m, ":path", NULL), path);
        assert_string_equal(ktu_record_header(m, "x-kind", NULL), seq % 2 ? "b" : "a");
        assert_non_null(ktu_record_header(m, "@agg-timestamp-us", NULL));
        assert_true(strtoull(ktu_record_header(m, "@agg-timestamp-us", NULL), NULL, 10) >
                    1700000000000000ULL);
        assert_non_null(ktu_record_header(m, "@agg-seq", NULL));
        const char *origin = ktu_record_header(m, "@origin", NULL);
        assert_non_null(origin);
        assert_memory_equal(origin, e.in, strlen(e.in));
        assert_int_equal(origin[strlen(e.in)], '/');
    }
    for (int i = 0; i < N_VALID; i++)
        assert_true(seen[i]);
    ktu_records_free(&r);

    assert_true(agg_stop_clean(&e, 0));
    /* Nothing extra on MAIN, nothing on the DLQ, and the stop committed every record. */
    assert_int_equal(ktu_topic_record_count(e.main, 5000), N_VALID);
    assert_int_equal(ktu_topic_record_count(e.dlq, 5000), 0);
    assert_int_equal(agg_committed_sum(e.group, e.in, 3), N_VALID);
    rd_kafka_destroy(p);
    agg_env_cleanup(&e);
}

/* ---- invalid vectors: dead-lettered with reason, origin and original bytes ---- */

static void test_every_invalid_vector_is_dead_lettered_with_its_reason(void **state)
{
    agg_env_t e;
    assert_int_equal(agg_env_init(&e, "aggdlq", 1, 1), 0);
    char dir[512];
    char **inv = NULL, **val = NULL;
    size_t n_inv = 0, n_val = 0;
    assert_int_equal(vectors_list(vectors_dir("invalid", dir, sizeof(dir)), &inv, &n_inv), 0);
    assert_int_equal(vectors_list(vectors_dir("valid", dir, sizeof(dir)), &val, &n_val), 0);
    assert_true(n_inv > 0);
    assert_true(n_val > 0);

    const char *props[] = {"message.max.bytes=4194304"};
    rd_kafka_t *p = ktu_producer_new(props, 1);
    assert_non_null(p);
    /* Interleave valid and invalid vectors on one partition; remember each one's offset. */
    size_t total = n_inv + n_val;
    vectors_record_t *vs = calloc(total, sizeof(*vs));
    assert_non_null(vs);
    for (size_t i = 0; i < total; i++) {
        const char *path = i % 2 == 0 && i / 2 < n_inv   ? inv[i / 2]
                           : i % 2 == 1 && i / 2 < n_val ? val[i / 2]
                                                         : NULL;
        if (!path) /* the longer list's tail */
            path = n_inv > n_val ? inv[i - n_val] : val[i - n_inv];
        char err[512];
        assert_int_equal(vectors_load(path, &vs[i], err, sizeof(err)), 0);
        rd_kafka_headers_t *h = rd_kafka_headers_copy(vs[i].headers);
        assert_int_equal(rd_kafka_producev(p, RD_KAFKA_V_TOPIC(e.in), RD_KAFKA_V_PARTITION(0),
                                           RD_KAFKA_V_KEY(vs[i].key, vs[i].key_len),
                                           RD_KAFKA_V_VALUE(vs[i].value, vs[i].value_len),
                                           RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                           RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        /* One at a time: the offset of vector i is i. */
        assert_int_equal(ktu_flush(p, 10000), 0);
    }
    assert_true(agg_start(&e, 0, NULL) > 0);

    ktu_records_t dlq = {0}, mainr = {0};
    assert_int_equal(ktu_consume_records(e.dlq, n_inv, 30000, &dlq), n_inv);
    assert_int_equal(ktu_consume_records(e.main, n_val, 30000, &mainr), n_val);
    size_t matched = 0;
    for (size_t d = 0; d < dlq.n; d++) {
        const ktu_record_t *m = &dlq.v[d];
        const char *origin = ktu_record_header(m, "@dlq-origin", NULL);
        assert_non_null(origin);
        const char *slash = strrchr(origin, '/');
        assert_non_null(slash);
        size_t off = (size_t)strtoull(slash + 1, NULL, 10);
        assert_true(off < total);
        vectors_record_t *v = &vs[off];
        if (v->expect_ok)
            fail_msg("valid vector %s was dead-lettered: %s", v->name,
                     ktu_record_header(m, "@dlq-detail", NULL));
        const char *reason = ktu_record_header(m, "@dlq-reason", NULL);
        assert_non_null(reason);
        if (strcmp(reason, v->expect_reason) != 0)
            fail_msg("%s: reason %s, expected %s", v->name, reason, v->expect_reason);
        const char *field = ktu_record_header(m, "@dlq-field", NULL);
        if (v->expect_field[0] && (!field || strcmp(field, v->expect_field) != 0))
            fail_msg("%s: field %s, expected %s", v->name, field ? field : "(none)",
                     v->expect_field);
        assert_non_null(ktu_record_header(m, "@dlq-detail", NULL));
        /* Original bytes: key and value as produced. */
        assert_int_equal(m->value_len, v->value_len);
        if (v->value_len)
            assert_memory_equal(m->value, v->value, v->value_len);
        assert_int_equal(m->key_len, v->key ? v->key_len : 0);
        if (v->key && v->key_len)
            assert_memory_equal(m->key, v->key, v->key_len);
        matched++;
    }
    assert_int_equal(matched, n_inv);
    for (size_t i = 0; i < mainr.n; i++) {
        const char *origin = ktu_record_header(&mainr.v[i], "@origin", NULL);
        assert_non_null(origin);
        size_t off = (size_t)strtoull(strrchr(origin, '/') + 1, NULL, 10);
        assert_true(off < total);
        assert_true(vs[off].expect_ok);
        /* A copy that already carried enrichment (aggregated_copy.json) gets it replaced. */
        char want[160];
        snprintf(want, sizeof(want), "%s/0/%zu", e.in, off);
        assert_string_equal(origin, want);
        assert_int_equal(header_count(&mainr.v[i], "@origin"), 1);
        assert_int_equal(header_count(&mainr.v[i], "@agg-seq"), 1);
        assert_int_equal(header_count(&mainr.v[i], "@agg-timestamp-us"), 1);
    }
    ktu_records_free(&dlq);
    ktu_records_free(&mainr);
    assert_true(agg_stop_clean(&e, 0));
    assert_int_equal(agg_committed_sum(e.group, e.in, 1), (int64_t)total);
    assert_int_equal(ktu_topic_record_count(e.dlq, 5000), (int64_t)n_inv);
    for (size_t i = 0; i < total; i++)
        vectors_free(&vs[i]);
    free(vs);
    vectors_list_free(inv, n_inv);
    vectors_list_free(val, n_val);
    rd_kafka_destroy(p);
    agg_env_cleanup(&e);
}

/* ---- filter change at run time ---- */

static void write_file_atomically(const char *dir, const char *name, const char *text)
{
    char tmp[600], path[600];
    snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(rename(tmp, path), 0);
}

static const char *filter_drop(const char *name, const char *kind, char *buf, size_t len)
{
    snprintf(buf, len,
             "{\"name\": \"%s\", \"default\": \"allow\", \"rules\": [{\"name\": \"drop-%s\", "
             "\"action\": \"drop\", \"match\": {\"field\": \"x-kind\", \"op\": \"equals\", "
             "\"value\": \"%s\"}}]}",
             name, kind, kind);
    return buf;
}

#define PHASE 1000

static void check_phase(const ktu_records_t *r, uint64_t first, const char *kept_kind,
                        unsigned char *seen)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++) {
        uint64_t seq = rec_seq(&r->v[i]);
        if (seq < first || seq >= first + PHASE)
            continue;
        const char *kind = ktu_record_header(&r->v[i], "x-kind", NULL);
        if (strcmp(kind, kept_kind) != 0)
            fail_msg("copy %llu of kind %s passed a filter that keeps only %s",
                     (unsigned long long)seq, kind, kept_kind);
        assert_false(seen[seq]);
        seen[seq] = 1;
        n++;
    }
    /* None lost: every copy of the kept kind is there. */
    assert_int_equal(n, PHASE / 2);
}

static void test_filter_change_at_run_time_applies_without_restart_or_loss(void **state)
{
    agg_env_t e;
    assert_int_equal(agg_env_init(&e, "aggfilt", 2, 2), 0);
    char ftext[512], farg[400];
    write_file_atomically(e.dir, "filter.json", filter_drop("f1", "a", ftext, sizeof(ftext)));
    snprintf(farg, sizeof(farg), "--filter-file=%s/filter.json", e.dir);
    /* mtime polling is slowed down so that the test proves SIGHUP works by itself. */
    const char *extra[] = {farg, "--filter-check-interval=1h", NULL};
    pid_t pid = agg_start(&e, 0, extra);
    assert_true(pid > 0);
    assert_true(agg_log_wait(&e, 0, "filter \"f1\" loaded", 10000));

    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    /* Phase 1 under f1 (drops kind a). */
    assert_int_equal(agg_produce_copies(p, e.in, 0, PHASE, 20, 100), 0);
    assert_int_equal(agg_wait_count(e.main, PHASE / 2, 30000), PHASE / 2);

    /* Phase 2 under f2 (drops kind b), installed by SIGHUP while running. */
    write_file_atomically(e.dir, "filter.json", filter_drop("f2", "b", ftext, sizeof(ftext)));
    kill(pid, SIGHUP);
    assert_true(agg_log_wait(&e, 0, "filter \"f2\" loaded", 10000));
    assert_int_equal(agg_produce_copies(p, e.in, PHASE, PHASE, 20, 100), 0);
    assert_int_equal(agg_wait_count(e.main, PHASE, 30000), PHASE);

    /* A broken filter is refused; f2 stays in force for phase 3. */
    write_file_atomically(e.dir, "filter.json", "{\"name\": \"f3\", \"rules\": [{]}");
    kill(pid, SIGHUP);
    assert_true(agg_log_wait(&e, 0, "filter reload refused", 10000));
    assert_int_equal(agg_produce_copies(p, e.in, 2 * PHASE, PHASE, 20, 100), 0);
    assert_int_equal(agg_wait_count(e.main, PHASE + PHASE / 2, 30000), PHASE + PHASE / 2);
    assert_true(ktu_alive(pid, NULL));

    ktu_records_t r = {0};
    assert_int_equal(ktu_consume_records(e.main, 3 * PHASE / 2, 20000, &r), 3 * PHASE / 2);
    static unsigned char seen[3 * PHASE];
    memset(seen, 0, sizeof(seen));
    check_phase(&r, 0, "b", seen);
    check_phase(&r, PHASE, "a", seen);
    check_phase(&r, 2 * PHASE, "a", seen);
    ktu_records_free(&r);

    assert_true(agg_stop_clean(&e, 0));
    /* Filtered copies count as done: every input offset is committed, nothing extra in MAIN. */
    assert_int_equal(agg_committed_sum(e.group, e.in, 2), 3 * PHASE);
    assert_int_equal(ktu_topic_record_count(e.main, 5000), 3 * PHASE / 2);
    rd_kafka_destroy(p);
    agg_env_cleanup(&e);
}

/* A slow MAIN (acknowledgements held back by a long linger) with a small in-flight bound: the
 * worker stops taking records, pauses its partitions, resumes, and loses or repeats nothing. */
static void test_slow_main_pauses_consumption_and_resumes_without_loss(void **state)
{
    agg_env_t e;
    assert_int_equal(agg_env_init(&e, "aggpause", 2, 2), 0);
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    assert_int_equal(agg_produce_copies(p, e.in, 0, 2000, 40, 100), 0);
    const char *extra[] = {"--max-inflight=100", "--batch=50", "--kafka.producer.linger.ms=400",
                           NULL};
    assert_true(agg_start(&e, 0, extra) > 0);
    assert_true(agg_log_wait(&e, 0, "paused (", 20000));
    int64_t deadline = ktu_now_ms() + 40000;
    while (agg_committed_sum(e.group, e.in, 2) < 2000 && ktu_now_ms() < deadline)
        ktu_sleep_ms(100);
    assert_int_equal(agg_committed_sum(e.group, e.in, 2), 2000);
    assert_true(agg_stop_clean(&e, 0));
    assert_int_equal(ktu_topic_record_count(e.main, 5000), 2000);
    assert_true(agg_log_count(&e, 0, "stopped: consumed 2000, produced 2000") == 1);
    rd_kafka_destroy(p);
    agg_env_cleanup(&e);
}

/* A refused copy whose body is too large for the producer (librdkafka's message.max.bytes,
 * 1,000,000 by default here) still reaches the DLQ: without its body, saying why. */
static void test_dead_letter_too_large_for_kafka_is_kept_without_its_body(void **state)
{
    agg_env_t e;
    assert_int_equal(agg_env_init(&e, "aggbig", 1, 1), 0);
    const char *props[] = {"message.max.bytes=4194304"};
    rd_kafka_t *p = ktu_producer_new(props, 1);
    assert_non_null(p);
    size_t big = 1100000; /* over the codec's 1 MiB default: oversized */
    char *body = malloc(big);
    assert_non_null(body);
    memset(body, 'a', big);
    const char *hdrs[] = {"@correlation-id", "big-1",
                          "@timestamp-us",   "1764486000000000",
                          "@message-type",   "request",
                          "@trigger-point",  "rx-request",
                          "@nf-type",        "SCP",
                          ":method",         "POST",
                          ":path",           "/nsmf-pdusession/v1/sm-contexts"};
    assert_int_equal(ktu_produce(p, e.in, 0, "big-1", 5, body, big, hdrs, 7), 0);
    assert_int_equal(ktu_flush(p, 20000), 0);
    free(body);
    /* The daemon's producer keeps librdkafka's default record limit. */
    const char *extra[] = {"--kafka.producer.message.max.bytes=1000000", NULL};
    assert_true(agg_start(&e, 0, extra) > 0);
    ktu_records_t r = {0};
    assert_int_equal(ktu_consume_records(e.dlq, 1, 30000, &r), 1);
    assert_string_equal(ktu_record_header(&r.v[0], "@dlq-reason", NULL), "oversized");
    assert_non_null(ktu_record_header(&r.v[0], "@dlq-body-dropped", NULL));
    assert_int_equal(r.v[0].value_len, 0);
    assert_string_equal(r.v[0].key, "big-1");
    ktu_records_free(&r);
    assert_true(agg_stop_clean(&e, 0));
    assert_int_equal(agg_committed_sum(e.group, e.in, 1), 1);
    rd_kafka_destroy(p);
    agg_env_cleanup(&e);
}

/* Replacing the filter file is enough: its modification is noticed without a signal. */
static void test_filter_file_change_is_picked_up_without_a_signal(void **state)
{
    agg_env_t e;
    assert_int_equal(agg_env_init(&e, "aggmtime", 1, 1), 0);
    char ftext[512], farg[400];
    write_file_atomically(e.dir, "filter.json", filter_drop("m1", "a", ftext, sizeof(ftext)));
    snprintf(farg, sizeof(farg), "--filter-file=%s/filter.json", e.dir);
    const char *extra[] = {farg, "--filter-check-interval=100ms", NULL};
    assert_true(agg_start(&e, 0, extra) > 0);
    assert_true(agg_log_wait(&e, 0, "filter \"m1\" loaded", 10000));
    write_file_atomically(e.dir, "filter.json", filter_drop("m2", "b", ftext, sizeof(ftext)));
    assert_true(agg_log_wait(&e, 0, "filter \"m2\" loaded", 10000));
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    assert_non_null(p);
    assert_int_equal(agg_produce_copies(p, e.in, 0, 100, 10, 50), 0);
    ktu_records_t r = {0};
    assert_int_equal(ktu_consume_records(e.main, 50, 20000, &r), 50);
    for (size_t i = 0; i < r.n; i++)
        assert_string_equal(ktu_record_header(&r.v[i], "x-kind", NULL), "a");
    ktu_records_free(&r);
    assert_true(agg_stop_clean(&e, 0));
    assert_int_equal(ktu_topic_record_count(e.main, 5000), 50);
    rd_kafka_destroy(p);
    agg_env_cleanup(&e);
}

static void test_unreadable_filter_file_fails_start_naming_the_file(void **state)
{
    agg_env_t e;
    assert_int_equal(agg_env_init(&e, "aggbadf", 1, 1), 0);
    char farg[400];
    snprintf(farg, sizeof(farg), "--filter-file=%s/missing.json", e.dir);
    const char *extra[] = {farg, NULL};
    pid_t pid = agg_start(&e, 0, extra);
    assert_true(pid > 0);
    int st = ktu_stop(pid, 0, 15000); /* signal 0: only wait */
    e.pid[0] = 0;
    assert_true(st >= 0 && WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 2);
    assert_true(agg_log_wait(&e, 0, "missing.json", 1000));
    agg_env_cleanup(&e);
}

int main(void)
{
    ktu_brokers();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_copies_reach_main_exactly_once_in_key_order_and_enriched),
        cmocka_unit_test(test_every_invalid_vector_is_dead_lettered_with_its_reason),
        cmocka_unit_test(test_filter_change_at_run_time_applies_without_restart_or_loss),
        cmocka_unit_test(test_slow_main_pauses_consumption_and_resumes_without_loss),
        cmocka_unit_test(test_dead_letter_too_large_for_kafka_is_kept_without_its_body),
        cmocka_unit_test(test_filter_file_change_is_picked_up_without_a_signal),
        cmocka_unit_test(test_unreadable_filter_file_fails_start_naming_the_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
