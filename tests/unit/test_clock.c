/* NDD's clocks (services/base/clock.h): the ISO form the API and events carry, and the two
 * clocks against the kernel's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "clock.h"

static void test_iso_utc_has_milliseconds_and_zulu(void **state)
{
    (void)state;
    char out[32];
    wall_iso_utc(1796430274123LL, out, sizeof(out)); /* 2026-12-05T00:24:34.123Z */
    assert_string_equal(out, "2026-12-05T00:24:34.123Z");
    wall_iso_utc(0, out, sizeof(out));
    assert_string_equal(out, "1970-01-01T00:00:00.000Z");
    wall_iso_utc(7, out, 25); /* exactly the size it needs */
    assert_string_equal(out, "1970-01-01T00:00:00.007Z");
}

static void test_clocks_read_the_kernels_monotonic_and_real_time(void **state)
{
    (void)state;
    struct timespec m, w;
    clock_gettime(CLOCK_MONOTONIC, &m);
    clock_gettime(CLOCK_REALTIME, &w);
    int64_t mono = mono_now_ms(), wall = wall_now_ms();
    int64_t km = (int64_t)m.tv_sec * 1000 + m.tv_nsec / 1000000;
    int64_t kw = (int64_t)w.tv_sec * 1000 + w.tv_nsec / 1000000;
    /* read after the kernel's, within a second on a loaded machine */
    assert_true(mono >= km && mono - km < 1000);
    assert_true(wall >= kw && wall - kw < 1000);
    assert_true(mono_now_ms() >= mono);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_iso_utc_has_milliseconds_and_zulu),
        cmocka_unit_test(test_clocks_read_the_kernels_monotonic_and_real_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
