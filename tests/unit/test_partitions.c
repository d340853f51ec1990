/* partitions: the partition ledger behind at-least-once offset storing, through every
 * rebalance interleaving the consumers meet (assign, revoke, re-assign with acks in flight). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "partitions.h"

#define STORED_MAX 64

/* What partitions_store_each handed out, in order. */
typedef struct stored {
    int32_t partition[STORED_MAX];
    int64_t offset[STORED_MAX];
    size_t n;
    int refuse; /* the store callback fails while non-zero */
} stored_t;

static int record_store(void *arg, int32_t partition, int64_t next_offset)
{
    stored_t *s = arg;
    if (s->refuse)
        return -1;
    assert_true(s->n < STORED_MAX);
    s->partition[s->n] = partition;
    s->offset[s->n] = next_offset;
    s->n++;
    return 0;
}

static size_t store(partitions_t *l, stored_t *s)
{
    s->n = 0;
    return partitions_store_each(l, record_store, s);
}

static void test_assign_track_ack_store_yields_next_offset_once(void **state)
{
    (void)state;
    partitions_t *l = partitions_new(8, 16, 0);
    assert_non_null(l);
    assert_false(partitions_assigned(l, 3));
    assert_int_equal(partitions_assign(l, 3), PARTITIONS_OK);
    assert_true(partitions_assigned(l, 3));
    assert_int_equal(partitions_n_assigned(l), 1);
    uint32_t ep = partitions_epoch(l, 3);
    uint64_t tk;
    assert_int_equal(partitions_track(l, 3, 100, &tk), PARTITIONS_OK);
    assert_int_equal(partitions_pending(l, 3), 1);
    stored_t s = {0};
    assert_int_equal(store(l, &s), 0); /* nothing done yet */
    assert_int_equal(partitions_ack(l, 3, ep, tk), PARTITIONS_OK);
    assert_int_equal(partitions_low_water(l, 3), 101);
    assert_int_equal(store(l, &s), 1);
    assert_int_equal(s.partition[0], 3);
    assert_int_equal(s.offset[0], 101);
    assert_int_equal(partitions_stored(l, 3), 101);
    assert_int_equal(store(l, &s), 0); /* stored once */
    partitions_free(l);
}

static void test_revoke_with_acks_in_flight_drops_late_acks_and_stores_nothing(void **state)
{
    (void)state;
    partitions_t *l = partitions_new(8, 16, 0);
    assert_int_equal(partitions_assign(l, 0), PARTITIONS_OK);
    uint32_t ep = partitions_epoch(l, 0);
    uint64_t tk[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(partitions_track(l, 0, 10 + i, &tk[i]), PARTITIONS_OK);
    assert_int_equal(partitions_revoke(l, 0), PARTITIONS_OK);
    assert_false(partitions_assigned(l, 0));
    assert_int_equal(partitions_n_assigned(l), 0);
    assert_int_equal(partitions_pending(l, 0), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(partitions_ack(l, 0, ep, tk[i]), PARTITIONS_STALE);
    assert_int_equal(partitions_stale_acks(l), 3);
    stored_t s = {0};
    assert_int_equal(store(l, &s), 0);
    /* And nothing can be taken for it any more. */
    uint64_t t;
    assert_int_equal(partitions_track(l, 0, 20, &t), PARTITIONS_STALE);
    assert_int_equal(partitions_skip(l, 0, 21), PARTITIONS_STALE);
    assert_int_equal(partitions_revoke(l, 0), PARTITIONS_STALE); /* not ours */
    partitions_free(l);
}

static void test_ack_done_before_revoke_but_not_stored_is_not_stored_after_it(void **state)
{
    (void)state;
    partitions_t *l = partitions_new(8, 16, 0);
    assert_int_equal(partitions_assign(l, 1), PARTITIONS_OK);
    uint64_t tk;
    assert_int_equal(partitions_track(l, 1, 5, &tk), PARTITIONS_OK);
    assert_int_equal(partitions_ack(l, 1, partitions_epoch(l, 1), tk), PARTITIONS_OK);
    assert_int_equal(partitions_revoke(l, 1), PARTITIONS_OK);
    stored_t s = {0};
    assert_int_equal(store(l, &s), 0);
    partitions_free(l);
}

static void test_old_epoch_acks_after_revoke_and_reassign_are_stale_new_acks_count(void **state)
{
    (void)state;
    partitions_t *l = partitions_new(8, 16, 0);
    assert_int_equal(partitions_assign(l, 2), PARTITIONS_OK);
    uint32_t old = partitions_epoch(l, 2);
    uint64_t old_tk[2];
    assert_int_equal(partitions_track(l, 2, 50, &old_tk[0]), PARTITIONS_OK);
    assert_int_equal(partitions_track(l, 2, 51, &old_tk[1]), PARTITIONS_OK);
    assert_int_equal(partitions_revoke(l, 2), PARTITIONS_OK);
    assert_int_equal(partitions_assign(l, 2), PARTITIONS_OK);
    uint32_t now = partitions_epoch(l, 2);
    assert_int_not_equal(now, old);
    /* The new owner epoch re-reads from the committed offset: 50 again. */
    uint64_t tk[2];
    assert_int_equal(partitions_track(l, 2, 50, &tk[0]), PARTITIONS_OK);
    assert_int_equal(partitions_track(l, 2, 51, &tk[1]), PARTITIONS_OK);
    assert_int_equal(partitions_ack(l, 2, old, old_tk[0]), PARTITIONS_STALE);
    assert_int_equal(partitions_ack(l, 2, old, old_tk[1]), PARTITIONS_STALE);
    /* The old acks changed nothing: the new records are still pending. */
    assert_int_equal(partitions_low_water(l, 2), -1);
    assert_int_equal(partitions_pending(l, 2), 2);
    stored_t s = {0};
    assert_int_equal(store(l, &s), 0);
    assert_int_equal(partitions_ack(l, 2, now, tk[0]), PARTITIONS_OK);
    assert_int_equal(store(l, &s), 1);
    assert_int_equal(s.offset[0], 51);
    assert_int_equal(partitions_ack(l, 2, now, tk[1]), PARTITIONS_OK);
    assert_int_equal(store(l, &s), 1);
    assert_int_equal(s.offset[0], 52);
    assert_int_equal(partitions_stale_acks(l), 2);
    partitions_free(l);
}

static void test_ticket_of_old_epoch_with_new_epoch_number_is_stale(void **state)
{
    (void)state;
    /* The ack carries the right epoch but a ticket handed out before the reset. */
    partitions_t *l = partitions_new(8, 16, 0);
    assert_int_equal(partitions_assign(l, 0), PARTITIONS_OK);
    uint64_t old_tk;
    assert_int_equal(partitions_track(l, 0, 7, &old_tk), PARTITIONS_OK);
    assert_int_equal(partitions_revoke(l, 0), PARTITIONS_OK);
    assert_int_equal(partitions_assign(l, 0), PARTITIONS_OK);
    assert_int_equal(partitions_ack(l, 0, partitions_epoch(l, 0), old_tk), PARTITIONS_STALE);
    partitions_free(l);
}

static void test_reassign_of_owned_partition_keeps_pending_work_and_epoch(void **state)
{
    (void)state;
    typedef struct user {
        uint64_t seq;
    } user_t;
    partitions_t *l = partitions_new(8, 16, sizeof(user_t));
    assert_int_equal(partitions_assign(l, 4), PARTITIONS_OK);
    user_t *u = partitions_user(l, 4);
    assert_non_null(u);
    assert_int_equal(u->seq, 0);
    u->seq = 42;
    uint32_t ep = partitions_epoch(l, 4);
    uint64_t tk;
    assert_int_equal(partitions_track(l, 4, 30, &tk), PARTITIONS_OK);
    assert_int_equal(partitions_assign(l, 4), PARTITIONS_KEPT);
    assert_int_equal(partitions_epoch(l, 4), ep);
    assert_int_equal(partitions_pending(l, 4), 1);
    assert_int_equal(partitions_n_assigned(l), 1);
    assert_int_equal(((user_t *)partitions_user(l, 4))->seq, 42);
    assert_int_equal(partitions_ack(l, 4, ep, tk), PARTITIONS_OK);
    stored_t s = {0};
    assert_int_equal(store(l, &s), 1);
    assert_int_equal(s.offset[0], 31);
    partitions_free(l);
}

static void test_new_epoch_zeroes_user_state(void **state)
{
    (void)state;
    partitions_t *l = partitions_new(8, 16, sizeof(int64_t));
    assert_null(partitions_user(l, 5)); /* never assigned */
    assert_int_equal(partitions_assign(l, 5), PARTITIONS_OK);
    *(int64_t *)partitions_user(l, 5) = 99;
    assert_int_equal(partitions_revoke(l, 5), PARTITIONS_OK);
    assert_int_equal(partitions_assign(l, 5), PARTITIONS_OK);
    assert_int_equal(*(int64_t *)partitions_user(l, 5), 0);
    partitions_free(l);
}

static void test_full_window_refuses_and_pauses_until_an_ack_resumes(void **state)
{
    (void)state;
    partitions_t *l = partitions_new(3, 16, 0);
    assert_int_equal(partitions_assign(l, 0), PARTITIONS_OK);
    uint32_t ep = partitions_epoch(l, 0);
    uint64_t tk[3], t;
    for (int i = 0; i < 3; i++)
        assert_int_equal(partitions_track(l, 0, i, &tk[i]), PARTITIONS_OK);
    assert_false(partitions_paused(l, 0));
    assert_int_equal(partitions_track(l, 0, 3, &t), PARTITIONS_FULL);
    assert_true(partitions_paused(l, 0));
    assert_int_equal(partitions_skip(l, 0, 3), PARTITIONS_FULL);
    /* Acks of later records do not make room: the window counts from the oldest pending. */
    assert_int_equal(partitions_ack(l, 0, ep, tk[2]), PARTITIONS_OK);
    assert_true(partitions_paused(l, 0));
    assert_int_equal(partitions_ack(l, 0, ep, tk[0]), PARTITIONS_OK);
    assert_false(partitions_paused(l, 0));
    assert_int_equal(partitions_track(l, 0, 3, &t), PARTITIONS_OK);
    partitions_free(l);
}

static void test_revoke_clears_paused(void **state)
{
    (void)state;
    partitions_t *l = partitions_new(1, 16, 0);
    assert_int_equal(partitions_assign(l, 0), PARTITIONS_OK);
    uint64_t t;
    assert_int_equal(partitions_track(l, 0, 0, &t), PARTITIONS_OK);
    assert_int_equal(partitions_track(l, 0, 1, &t), PARTITIONS_FULL);
    assert_true(partitions_paused(l, 0));
    assert_int_equal(partitions_revoke(l, 0), PARTITIONS_OK);
    assert_int_equal(partitions_assign(l, 0), PARTITIONS_OK);
    assert_false(partitions_paused(l, 0));
    assert_int_equal(partitions_track(l, 0, 0, &t), PARTITIONS_OK);
    partitions_free(l);
}

static void test_skip_with_nothing_pending_moves_low_water(void **state)
{
    (void)state;
    partitions_t *l = partitions_new(8, 16, 0);
    assert_int_equal(partitions_assign(l, 0), PARTITIONS_OK);
    assert_int_equal(partitions_skip(l, 0, 70), PARTITIONS_OK);
    assert_int_equal(partitions_low_water(l, 0), 71);
    assert_int_equal(partitions_pending(l, 0), 0);
    stored_t s = {0};
    assert_int_equal(store(l, &s), 1);
    assert_int_equal(s.offset[0], 71);
    assert_int_equal(partitions_skip(l, 0, 70), PARTITIONS_ORDER);
    partitions_free(l);
}

static void test_skip_behind_pending_record_waits_for_it(void **state)
{
    (void)state;
    partitions_t *l = partitions_new(8, 16, 0);
    assert_int_equal(partitions_assign(l, 0), PARTITIONS_OK);
    uint64_t tk;
    assert_int_equal(partitions_track(l, 0, 10, &tk), PARTITIONS_OK);
    assert_int_equal(partitions_skip(l, 0, 11), PARTITIONS_OK);
    stored_t s = {0};
    assert_int_equal(store(l, &s), 0);
    assert_int_equal(partitions_ack(l, 0, partitions_epoch(l, 0), tk), PARTITIONS_OK);
    assert_int_equal(store(l, &s), 1);
    assert_int_equal(s.offset[0], 12);
    partitions_free(l);
}

static void test_out_of_order_acks_store_only_contiguous_low_water(void **state)
{
    (void)state;
    partitions_t *l = partitions_new(16, 16, 0);
    assert_int_equal(partitions_assign(l, 0), PARTITIONS_OK);
    uint32_t ep = partitions_epoch(l, 0);
    uint64_t tk[5];
    for (int i = 0; i < 5; i++)
        assert_int_equal(partitions_track(l, 0, 100 + i, &tk[i]), PARTITIONS_OK);
    stored_t s = {0};
    assert_int_equal(partitions_ack(l, 0, ep, tk[3]), PARTITIONS_OK);
    assert_int_equal(partitions_ack(l, 0, ep, tk[1]), PARTITIONS_OK);
    assert_int_equal(store(l, &s), 0); /* 100 still pending */
    assert_int_equal(partitions_ack(l, 0, ep, tk[0]), PARTITIONS_OK);
    assert_int_equal(store(l, &s), 1);
    assert_int_equal(s.offset[0], 102); /* 100, 101 done; 102 pending */
    assert_int_equal(partitions_ack(l, 0, ep, tk[2]), PARTITIONS_OK);
    assert_int_equal(store(l, &s), 1);
    assert_int_equal(s.offset[0], 104);
    assert_int_equal(partitions_ack(l, 0, ep, tk[2]), PARTITIONS_STALE); /* done twice */
    assert_int_equal(partitions_ack(l, 0, ep, tk[4]), PARTITIONS_OK);
    assert_int_equal(store(l, &s), 1);
    assert_int_equal(s.offset[0], 105);
    partitions_free(l);
}

static void test_track_refuses_offset_not_above_last_taken(void **state)
{
    (void)state;
    partitions_t *l = partitions_new(8, 16, 0);
    assert_int_equal(partitions_assign(l, 0), PARTITIONS_OK);
    uint64_t t;
    assert_int_equal(partitions_last_taken(l, 0), -1);
    assert_int_equal(partitions_track(l, 0, 9, &t), PARTITIONS_OK);
    assert_int_equal(partitions_last_taken(l, 0), 9);
    assert_int_equal(partitions_track(l, 0, 9, &t), PARTITIONS_ORDER);
    assert_int_equal(partitions_track(l, 0, 3, &t), PARTITIONS_ORDER);
    partitions_free(l);
}

static void test_many_sparse_partitions_grow_and_store_independently(void **state)
{
    (void)state;
    partitions_t *l = partitions_new(4, 70000, 16);
    const int32_t ids[] = {0, 7, 1000, 65535, 69999, 31};
    const size_t n = sizeof(ids) / sizeof(ids[0]);
    uint64_t tk[6];
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(partitions_assign(l, ids[i]), PARTITIONS_OK);
        assert_int_equal(partitions_track(l, ids[i], (int64_t)i * 10, &tk[i]), PARTITIONS_OK);
    }
    assert_int_equal(partitions_n_assigned(l), n);
    assert_false(partitions_assigned(l, 8));
    assert_int_equal(partitions_epoch(l, 8), 0);
    assert_int_equal(partitions_assign(l, 70000), PARTITIONS_RANGE);
    assert_int_equal(partitions_assign(l, -1), PARTITIONS_RANGE);
    /* Iteration visits the assigned ones in increasing id. */
    int32_t seen[6], k = 0;
    for (int32_t p = partitions_next_assigned(l, -1); p >= 0; p = partitions_next_assigned(l, p))
        seen[k++] = p;
    assert_int_equal(k, n);
    const int32_t sorted[] = {0, 7, 31, 1000, 65535, 69999};
    for (int i = 0; i < k; i++)
        assert_int_equal(seen[i], sorted[i]);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(partitions_ack(l, ids[i], partitions_epoch(l, ids[i]), tk[i]),
                         PARTITIONS_OK);
    stored_t s = {0};
    assert_int_equal(store(l, &s), n);
    for (size_t i = 0; i < s.n; i++)
        for (size_t j = 0; j < n; j++)
            if (s.partition[i] == ids[j])
                assert_int_equal(s.offset[i], (int64_t)j * 10 + 1);
    assert_int_equal(partitions_revoke(l, 65535), PARTITIONS_OK);
    assert_int_equal(partitions_n_assigned(l), n - 1);
    partitions_free(l);
}

static void test_failed_store_is_offered_again(void **state)
{
    (void)state;
    partitions_t *l = partitions_new(8, 16, 0);
    assert_int_equal(partitions_assign(l, 0), PARTITIONS_OK);
    assert_int_equal(partitions_skip(l, 0, 0), PARTITIONS_OK);
    stored_t s = {.refuse = 1};
    assert_int_equal(store(l, &s), 0);
    assert_int_equal(partitions_stored(l, 0), -1);
    s.refuse = 0;
    assert_int_equal(store(l, &s), 1);
    assert_int_equal(s.offset[0], 1);
    partitions_free(l);
}

static void test_mark_stores_caller_offset_of_current_epoch_only(void **state)
{
    (void)state;
    partitions_t *l = partitions_new(8, 16, 0);
    assert_int_equal(partitions_assign(l, 6), PARTITIONS_OK);
    uint32_t ep = partitions_epoch(l, 6);
    stored_t s = {0};
    assert_int_equal(partitions_mark(l, 6, ep, 40), PARTITIONS_OK);
    assert_int_equal(store(l, &s), 1);
    assert_int_equal(s.offset[0], 40);
    assert_int_equal(partitions_mark(l, 6, ep, 40), PARTITIONS_OK);
    assert_int_equal(partitions_mark(l, 6, ep, 35), PARTITIONS_OK); /* never backwards */
    assert_int_equal(store(l, &s), 0);
    assert_int_equal(partitions_revoke(l, 6), PARTITIONS_OK);
    assert_int_equal(partitions_mark(l, 6, ep, 50), PARTITIONS_STALE);
    assert_int_equal(partitions_assign(l, 6), PARTITIONS_OK);
    assert_int_equal(partitions_mark(l, 6, ep, 50), PARTITIONS_STALE); /* old epoch's mark */
    assert_int_equal(store(l, &s), 0);
    assert_int_equal(partitions_mark(l, 6, partitions_epoch(l, 6), 45), PARTITIONS_OK);
    assert_int_equal(store(l, &s), 1);
    assert_int_equal(s.offset[0], 45); /* a new epoch may store below the old one's */
    partitions_free(l);
}

static void test_revoke_between_dirty_and_store_then_reassign_stores_new_epoch_only(void **state)
{
    (void)state;
    partitions_t *l = partitions_new(8, 16, 0);
    assert_int_equal(partitions_assign(l, 0), PARTITIONS_OK);
    assert_int_equal(partitions_skip(l, 0, 90), PARTITIONS_OK); /* dirty, not stored */
    assert_int_equal(partitions_revoke(l, 0), PARTITIONS_OK);
    assert_int_equal(partitions_assign(l, 0), PARTITIONS_OK);
    stored_t s = {0};
    assert_int_equal(store(l, &s), 0);
    assert_int_equal(partitions_skip(l, 0, 80), PARTITIONS_OK);
    assert_int_equal(store(l, &s), 1);
    assert_int_equal(s.offset[0], 81);
    partitions_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_assign_track_ack_store_yields_next_offset_once),
        cmocka_unit_test(test_revoke_with_acks_in_flight_drops_late_acks_and_stores_nothing),
        cmocka_unit_test(test_ack_done_before_revoke_but_not_stored_is_not_stored_after_it),
        cmocka_unit_test(test_old_epoch_acks_after_revoke_and_reassign_are_stale_new_acks_count),
        cmocka_unit_test(test_ticket_of_old_epoch_with_new_epoch_number_is_stale),
        cmocka_unit_test(test_reassign_of_owned_partition_keeps_pending_work_and_epoch),
        cmocka_unit_test(test_new_epoch_zeroes_user_state),
        cmocka_unit_test(test_full_window_refuses_and_pauses_until_an_ack_resumes),
        cmocka_unit_test(test_revoke_clears_paused),
        cmocka_unit_test(test_skip_with_nothing_pending_moves_low_water),
        cmocka_unit_test(test_skip_behind_pending_record_waits_for_it),
        cmocka_unit_test(test_out_of_order_acks_store_only_contiguous_low_water),
        cmocka_unit_test(test_track_refuses_offset_not_above_last_taken),
        cmocka_unit_test(test_many_sparse_partitions_grow_and_store_independently),
        cmocka_unit_test(test_failed_store_is_offered_again),
        cmocka_unit_test(test_mark_stores_caller_offset_of_current_epoch_only),
        cmocka_unit_test(test_revoke_between_dirty_and_store_then_reassign_stores_new_epoch_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
