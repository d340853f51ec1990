/* mempool: size classes in front of malloc, reuse of freed blocks, the bound on what it
 * caches, and malloc/calloc/realloc semantics (contents kept across classes and into the
 * large blocks). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "mempool.h"

static void test_a_freed_block_is_reused_for_the_next_of_its_class(void **state)
{
    (void)state;
    mempool_t *p = mempool_new(1 << 16);
    void *a = mempool_alloc(p, 100);
    assert_non_null(a);
    assert_int_equal((uintptr_t)a % _Alignof(max_align_t), 0);
    mempool_free(p, a);
    assert_int_equal(mempool_cached(p), 128);
    assert_ptr_equal(mempool_alloc(p, 120), a); /* same class (65-128) */
    assert_int_equal(mempool_cached(p), 0);
    void *b = mempool_alloc(p, 129); /* the next class: not a */
    assert_ptr_not_equal(b, a);
    mempool_free(p, a);
    mempool_free(p, b);
    mempool_free(p, NULL);
    mempool_free_all(p);
}

static void test_the_pool_caches_no_more_than_its_bound_and_large_blocks_not_at_all(void **state)
{
    (void)state;
    mempool_t *p = mempool_new(4096);
    void *blocks[100];
    for (int i = 0; i < 100; i++)
        assert_non_null(blocks[i] = mempool_alloc(p, 200));
    for (int i = 0; i < 100; i++)
        mempool_free(p, blocks[i]);
    assert_true(mempool_cached(p) <= 4096);
    assert_int_equal(mempool_cached(p), 4096); /* 16 of 256 bytes kept, the rest freed */
    void *big = mempool_alloc(p, MEMPOOL_CLASS_MAX + 1);
    assert_non_null(big);
    mempool_free(p, big);
    assert_int_equal(mempool_cached(p), 4096);
    mempool_free_all(p);
}

static void test_calloc_zeroes_and_refuses_an_overflowing_size(void **state)
{
    (void)state;
    mempool_t *p = mempool_new(1 << 16);
    unsigned char *a = mempool_alloc(p, 64);
    memset(a, 0xab, 64);
    mempool_free(p, a);
    unsigned char *z = mempool_calloc(p, 8, 8); /* most likely a again */
    for (int i = 0; i < 64; i++)
        assert_int_equal(z[i], 0);
    assert_null(mempool_calloc(p, SIZE_MAX / 2, 3));
    assert_null(mempool_alloc(p, SIZE_MAX));
    mempool_free(p, z);
    mempool_free_all(p);
}

static void test_realloc_keeps_the_contents_up_through_the_classes_and_back_down(void **state)
{
    (void)state;
    mempool_t *p = mempool_new(1 << 16);
    size_t sizes[] = {10, 30, 33, 500, 4096, 5000, 100000, 3000, 20};
    unsigned char *b = mempool_realloc(p, NULL, sizes[0]);
    for (size_t i = 0; i < sizes[0]; i++)
        b[i] = (unsigned char)(i * 7);
    size_t have = sizes[0];
    for (size_t k = 1; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        b = mempool_realloc(p, b, n);
        assert_non_null(b);
        size_t keep = have < n ? have : n;
        for (size_t i = 0; i < keep; i++)
            if (b[i] != (unsigned char)(i * 7))
                fail_msg("byte %zu lost growing/shrinking %zu -> %zu", i, have, n);
        for (size_t i = keep; i < n; i++)
            b[i] = (unsigned char)(i * 7);
        have = n;
    }
    assert_null(mempool_realloc(p, b, 0)); /* frees */
    mempool_free_all(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_freed_block_is_reused_for_the_next_of_its_class),
        cmocka_unit_test(test_the_pool_caches_no_more_than_its_bound_and_large_blocks_not_at_all),
        cmocka_unit_test(test_calloc_zeroes_and_refuses_an_overflowing_size),
        cmocka_unit_test(test_realloc_keeps_the_contents_up_through_the_classes_and_back_down),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
