/* The filter slot: run-time swap while other threads evaluate, without loss or use of a
 * freed filter (run the sanitizer build to have use-after-free reported too). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "filter.h"

static filter_t *make_filter(const char *name, const char *default_action, const char *nf_drop)
{
    char json[512], err[256];
    snprintf(json, sizeof json,
             "{\"name\":\"%s\",\"default\":\"%s\",\"rules\":[{\"name\":\"by-nf\",\"action\":"
             "\"drop\",\"match\":{\"field\":\"@nf-type\",\"op\":\"equals\",\"value\":\"%s\"}}]}",
             name, default_action, nf_drop);
    filter_t *f = filter_compile_text(json, strlen(json), err, sizeof err);
    if (!f)
        fail_msg("compile: %s", err);
    return f;
}

static void msg_nf(codec_msg_t *m, const char *nf)
{
    memset(m, 0, sizeof *m);
    m->meta[CODEC_META_NF_TYPE] = (codec_slice_t){nf, strlen(nf)};
}

/* One message through the slot the way the aggregation's worker evaluates: acquire, evaluate,
 * release. */
static filter_action_t slot_eval(filter_slot_t *s, const codec_msg_t *m, int *rule)
{
    filter_t *f = filter_slot_acquire(s);
    filter_action_t a = filter_eval(f, m, rule);
    filter_release(f);
    return a;
}

static void test_slot_empty_allows_and_swap_installs(void **state)
{
    filter_slot_t *s = filter_slot_new(NULL);
    assert_non_null(s);
    codec_msg_t m;
    msg_nf(&m, "SCP");
    assert_null(filter_slot_acquire(s));
    assert_int_equal(slot_eval(s, &m, NULL), FILTER_ALLOW);
    assert_int_equal(filter_slot_generation(s), 0);

    assert_int_equal(filter_slot_swap(s, make_filter("a", "allow", "SCP")), 1);
    int rule = 7;
    assert_int_equal(slot_eval(s, &m, &rule), FILTER_DROP);
    assert_int_equal(rule, 0);
    assert_int_equal(filter_slot_swap(s, NULL), 2);
    assert_int_equal(slot_eval(s, &m, NULL), FILTER_ALLOW);
    filter_slot_free(s);
}

static void test_slot_reference_survives_swap_until_released(void **state)
{
    filter_slot_t *s = filter_slot_new(make_filter("old", "allow", "SCP"));
    filter_t *held = filter_slot_acquire(s);
    assert_string_equal(filter_name(held), "old");

    /* The swap returns at once although a reference to the old filter is still held. */
    filter_slot_swap(s, make_filter("new", "drop", "NRF"));
    codec_msg_t m;
    msg_nf(&m, "SCP");
    assert_int_equal(filter_eval(held, &m, NULL), FILTER_DROP); /* old rules still apply */
    assert_string_equal(filter_name(held), "old");

    filter_t *now = filter_slot_acquire(s);
    assert_string_equal(filter_name(now), "new");
    assert_int_equal(filter_eval(now, &m, NULL), FILTER_DROP); /* default drop */
    msg_nf(&m, "BSF");
    assert_int_equal(filter_eval(now, &m, NULL), FILTER_DROP);
    assert_int_equal(filter_eval(held, &m, NULL), FILTER_ALLOW);
    filter_release(held);
    filter_release(now);

    /* The slot may go away while a reference lives on. */
    filter_t *last = filter_slot_acquire(s);
    filter_slot_free(s);
    assert_string_equal(filter_name(last), "new");
    filter_release(last);
}

/* Two evaluators and one config thread. Filters alternate between "even" (drops SCP) and
 * "odd" (allows everything); every verdict must agree with the filter that was acquired,
 * and the hit counters of all filters together must equal the evaluations done. */
#define SWAPS 400
#define EVALUATORS 2

typedef struct swap_ctx {
    filter_slot_t *slot;
    atomic_bool stop;
    atomic_ulong evals[EVALUATORS];
    atomic_ulong wrong;
    atomic_ulong distinct_seen;
} swap_ctx_t;

typedef struct eval_arg {
    swap_ctx_t *ctx;
    int id;
} eval_arg_t;

static void *evaluator(void *p)
{
    eval_arg_t *a = p;
    codec_msg_t m;
    msg_nf(&m, "SCP");
    unsigned long n = 0, wrong = 0, seen = 0;
    const filter_t *last = NULL;
    while (!atomic_load(&a->ctx->stop)) {
        filter_t *f = filter_slot_acquire(a->ctx->slot);
        for (int k = 0; k < 8; k++) {
            filter_action_t v = filter_eval(f, &m, NULL);
            bool even = filter_name(f)[0] == 'e';
            if (v != (even ? FILTER_DROP : FILTER_ALLOW))
                wrong++;
            n++;
        }
        if (f != last)
            seen++;
        last = f;
        filter_release(f);
    }
    atomic_store(&a->ctx->evals[a->id], n);
    atomic_fetch_add(&a->ctx->wrong, wrong);
    atomic_fetch_add(&a->ctx->distinct_seen, seen);
    return NULL;
}

static void test_slot_swap_under_two_concurrent_evaluators(void **state)
{
    swap_ctx_t ctx;
    memset(&ctx, 0, sizeof ctx);
    filter_t *all[SWAPS + 1];
    all[0] = make_filter("even-0", "allow", "SCP");
    ctx.slot = filter_slot_new(filter_retain(all[0]));

    pthread_t th[EVALUATORS];
    eval_arg_t args[EVALUATORS];
    for (int i = 0; i < EVALUATORS; i++) {
        args[i] = (eval_arg_t){&ctx, i};
        assert_int_equal(pthread_create(&th[i], NULL, evaluator, &args[i]), 0);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 1; i <= SWAPS; i++) {
        char name[32];
        snprintf(name, sizeof name, "%s-%d", i % 2 ? "odd" : "even", i);
        all[i] = make_filter(name, "allow", i % 2 ? "none" : "SCP");
        /* We keep one reference of our own to read the counters at the end. */
        assert_int_equal(filter_slot_swap(ctx.slot, filter_retain(all[i])), (uint64_t)i);
        struct timespec pause = {0, 20000}; /* let evaluators see each filter */
        nanosleep(&pause, NULL);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    atomic_store(&ctx.stop, true);
    for (int i = 0; i < EVALUATORS; i++)
        pthread_join(th[i], NULL);

    uint64_t hits = 0;
    for (int i = 0; i <= SWAPS; i++) {
        hits += filter_rule_hits(all[i], 0) + filter_rule_hits(all[i], FILTER_RULE_DEFAULT);
        filter_release(all[i]);
    }
    unsigned long evals = atomic_load(&ctx.evals[0]) + atomic_load(&ctx.evals[1]);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    print_message("swaps %d in %.3f s, evaluations %lu, filters seen by evaluators %lu\n", SWAPS,
                  secs, evals, atomic_load(&ctx.distinct_seen));
    assert_int_equal(atomic_load(&ctx.wrong), 0);
    assert_true(evals > 0);
    assert_int_equal(hits, evals);
    /* Evaluators saw the swaps happen, not only the first or last filter. */
    assert_true(atomic_load(&ctx.distinct_seen) > 2);
    filter_slot_free(ctx.slot);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slot_empty_allows_and_swap_installs),
        cmocka_unit_test(test_slot_reference_survives_swap_until_released),
        cmocka_unit_test(test_slot_swap_under_two_concurrent_evaluators),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
