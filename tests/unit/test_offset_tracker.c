/* offset_tracker: the low-water mark for at-least-once offset storing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "offset_tracker.h"

static void test_low_water_is_unset_until_first_done(void **state)
{
    offset_tracker_t t;
    assert_int_equal(offset_tracker_init(&t, 8), 0);
    uint64_t tk;
    assert_int_equal(offset_tracker_take(&t, 10, &tk), OFFSET_TRACKER_OK);
    assert_int_equal(offset_tracker_low_water(&t), -1);
    assert_int_equal(offset_tracker_done(&t, tk), OFFSET_TRACKER_OK);
    assert_int_equal(offset_tracker_low_water(&t), 11);
    offset_tracker_free(&t);
}

static void test_out_of_order_acks_hold_low_water_at_first_pending(void **state)
{
    offset_tracker_t t;
    assert_int_equal(offset_tracker_init(&t, 16), 0);
    uint64_t tk[5];
    for (int i = 0; i < 5; i++)
        assert_int_equal(offset_tracker_take(&t, 100 + i, &tk[i]), OFFSET_TRACKER_OK);
    /* 102, 104, 101 finish first: 100 is still pending, nothing may be stored. */
    assert_int_equal(offset_tracker_done(&t, tk[2]), OFFSET_TRACKER_OK);
    assert_int_equal(offset_tracker_done(&t, tk[4]), OFFSET_TRACKER_OK);
    assert_int_equal(offset_tracker_done(&t, tk[1]), OFFSET_TRACKER_OK);
    assert_int_equal(offset_tracker_low_water(&t), -1);
    assert_int_equal(offset_tracker_pending(&t), 5);
    /* 100 finishes: 100..102 are done, 103 pending -> store 103. */
    assert_int_equal(offset_tracker_done(&t, tk[0]), OFFSET_TRACKER_OK);
    assert_int_equal(offset_tracker_low_water(&t), 103);
    assert_int_equal(offset_tracker_pending(&t), 2);
    assert_int_equal(offset_tracker_done(&t, tk[3]), OFFSET_TRACKER_OK);
    assert_int_equal(offset_tracker_low_water(&t), 105);
    assert_int_equal(offset_tracker_pending(&t), 0);
    offset_tracker_free(&t);
}

static void test_gaps_between_offsets_do_not_block_low_water(void **state)
{
    offset_tracker_t t;
    assert_int_equal(offset_tracker_init(&t, 4), 0);
    uint64_t a, b;
    assert_int_equal(offset_tracker_take(&t, 5, &a), OFFSET_TRACKER_OK);
    assert_int_equal(offset_tracker_take(&t, 9, &b), OFFSET_TRACKER_OK); /* 6..8 compacted */
    assert_int_equal(offset_tracker_done(&t, b), OFFSET_TRACKER_OK);
    assert_int_equal(offset_tracker_low_water(&t), -1);
    assert_int_equal(offset_tracker_done(&t, a), OFFSET_TRACKER_OK);
    assert_int_equal(offset_tracker_low_water(&t), 10);
    offset_tracker_free(&t);
}

static void test_take_beyond_max_inflight_reports_full_until_a_done(void **state)
{
    offset_tracker_t t;
    assert_int_equal(offset_tracker_init(&t, 3), 0);
    uint64_t tk[3], extra;
    for (int i = 0; i < 3; i++)
        assert_int_equal(offset_tracker_take(&t, i, &tk[i]), OFFSET_TRACKER_OK);
    assert_true(offset_tracker_full(&t));
    assert_int_equal(offset_tracker_take(&t, 3, &extra), OFFSET_TRACKER_FULL);
    /* A done behind a pending head frees no place: the window from the oldest pending record
     * to the newest is what is bounded (it is what the tracker must remember). */
    assert_int_equal(offset_tracker_done(&t, tk[1]), OFFSET_TRACKER_OK);
    assert_int_equal(offset_tracker_take(&t, 3, &extra), OFFSET_TRACKER_FULL);
    assert_int_equal(offset_tracker_done(&t, tk[0]), OFFSET_TRACKER_OK);
    assert_false(offset_tracker_full(&t));
    assert_int_equal(offset_tracker_take(&t, 3, &extra), OFFSET_TRACKER_OK);
    assert_int_equal(offset_tracker_low_water(&t), 2);
    offset_tracker_free(&t);
}

static void test_take_refuses_offsets_not_increasing(void **state)
{
    offset_tracker_t t;
    assert_int_equal(offset_tracker_init(&t, 4), 0);
    uint64_t tk;
    assert_int_equal(offset_tracker_take(&t, 7, &tk), OFFSET_TRACKER_OK);
    assert_int_equal(offset_tracker_take(&t, 7, &tk), OFFSET_TRACKER_ORDER);
    assert_int_equal(offset_tracker_take(&t, 3, &tk), OFFSET_TRACKER_ORDER);
    assert_int_equal(offset_tracker_take(&t, -1, &tk), OFFSET_TRACKER_ORDER);
    offset_tracker_free(&t);
}

static void test_reset_makes_old_tickets_stale_and_forgets_pending(void **state)
{
    offset_tracker_t t;
    assert_int_equal(offset_tracker_init(&t, 4), 0);
    uint64_t a, b, c;
    assert_int_equal(offset_tracker_take(&t, 50, &a), OFFSET_TRACKER_OK);
    assert_int_equal(offset_tracker_take(&t, 51, &b), OFFSET_TRACKER_OK);
    offset_tracker_reset(&t);
    assert_int_equal(offset_tracker_pending(&t), 0);
    assert_int_equal(offset_tracker_low_water(&t), -1);
    /* Acks of the revoked generation arrive late: they must not move anything. */
    assert_int_equal(offset_tracker_done(&t, a), OFFSET_TRACKER_STALE);
    assert_int_equal(offset_tracker_done(&t, b), OFFSET_TRACKER_STALE);
    assert_int_equal(offset_tracker_low_water(&t), -1);
    /* After a reset a lower offset is fine (re-assigned from the committed offset). */
    assert_int_equal(offset_tracker_take(&t, 40, &c), OFFSET_TRACKER_OK);
    assert_int_equal(offset_tracker_done(&t, c), OFFSET_TRACKER_OK);
    assert_int_equal(offset_tracker_low_water(&t), 41);
    offset_tracker_free(&t);
}

static void test_done_twice_is_stale(void **state)
{
    offset_tracker_t t;
    assert_int_equal(offset_tracker_init(&t, 4), 0);
    uint64_t a, b;
    assert_int_equal(offset_tracker_take(&t, 1, &a), OFFSET_TRACKER_OK);
    assert_int_equal(offset_tracker_take(&t, 2, &b), OFFSET_TRACKER_OK);
    assert_int_equal(offset_tracker_done(&t, b), OFFSET_TRACKER_OK);
    assert_int_equal(offset_tracker_done(&t, b), OFFSET_TRACKER_STALE);
    assert_int_equal(offset_tracker_done(&t, a), OFFSET_TRACKER_OK);
    assert_int_equal(offset_tracker_done(&t, a), OFFSET_TRACKER_STALE);
    assert_int_equal(offset_tracker_done(&t, 99), OFFSET_TRACKER_STALE);
    offset_tracker_free(&t);
}

static void test_skip_advances_when_idle_and_waits_behind_pending(void **state)
{
    offset_tracker_t t;
    assert_int_equal(offset_tracker_init(&t, 4), 0);
    assert_int_equal(offset_tracker_skip(&t, 0), OFFSET_TRACKER_OK);
    assert_int_equal(offset_tracker_low_water(&t), 1);
    uint64_t a;
    assert_int_equal(offset_tracker_take(&t, 1, &a), OFFSET_TRACKER_OK);
    assert_int_equal(offset_tracker_skip(&t, 2), OFFSET_TRACKER_OK);
    assert_int_equal(offset_tracker_low_water(&t), 1); /* 1 still pending */
    assert_int_equal(offset_tracker_done(&t, a), OFFSET_TRACKER_OK);
    assert_int_equal(offset_tracker_low_water(&t), 3);
    offset_tracker_free(&t);
}

/* Random completion order over many wraps of a growing ring, checked against a naive model:
 * the low-water mark is always the first not-done offset. */
static void test_random_ack_order_matches_naive_model_across_ring_growth(void **state)
{
    enum { N = 20000, MAX = 1000 };
    offset_tracker_t t;
    assert_int_equal(offset_tracker_init(&t, MAX), 0);
    static uint64_t tickets[N];
    static int64_t offs[N];
    static unsigned char done[N];
    uint64_t pending_idx[MAX];
    size_t n_pending = 0;
    int next_take = 0;
    int64_t off = 0;
    int first_not_done = 0;
    srand(12345);
    while (first_not_done < N) {
        bool can_take = next_take < N && next_take - first_not_done < MAX;
        if (can_take && (n_pending == 0 || rand() % 2)) {
            off += 1 + rand() % 3;
            offs[next_take] = off;
            assert_int_equal(offset_tracker_take(&t, off, &tickets[next_take]), OFFSET_TRACKER_OK);
            pending_idx[n_pending++] = (uint64_t)next_take;
            next_take++;
        } else {
            size_t k = (size_t)rand() % n_pending;
            int idx = (int)pending_idx[k];
            pending_idx[k] = pending_idx[--n_pending];
            assert_int_equal(offset_tracker_done(&t, tickets[idx]), OFFSET_TRACKER_OK);
            done[idx] = 1;
            while (first_not_done < next_take && done[first_not_done])
                first_not_done++;
            int64_t expect = first_not_done == 0 ? -1 : offs[first_not_done - 1] + 1;
            assert_int_equal(offset_tracker_low_water(&t), expect);
        }
        assert_int_equal(offset_tracker_pending(&t), (size_t)(next_take - first_not_done));
        assert_int_equal(offset_tracker_full(&t), next_take - first_not_done >= MAX);
    }
    assert_true(t.cap <= 1024);
    offset_tracker_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_low_water_is_unset_until_first_done),
        cmocka_unit_test(test_out_of_order_acks_hold_low_water_at_first_pending),
        cmocka_unit_test(test_gaps_between_offsets_do_not_block_low_water),
        cmocka_unit_test(test_take_beyond_max_inflight_reports_full_until_a_done),
        cmocka_unit_test(test_take_refuses_offsets_not_increasing),
        cmocka_unit_test(test_reset_makes_old_tickets_stale_and_forgets_pending),
        cmocka_unit_test(test_done_twice_is_stale),
        cmocka_unit_test(test_skip_advances_when_idle_and_waits_behind_pending),
        cmocka_unit_test(test_random_ack_order_matches_naive_model_across_ring_growth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
