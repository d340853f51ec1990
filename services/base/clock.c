/* NDD's clocks: see clock.h. */
#include "clock.h"

#include <stdio.h>
#include <time.h>

static int64_t clock_ms(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t mono_now_ms(void)
{
    return clock_ms(CLOCK_MONOTONIC);
}

int64_t wall_now_ms(void)
{
    return clock_ms(CLOCK_REALTIME);
}

void wall_iso_utc(int64_t wall_ms, char *out, size_t size)
{
    time_t s = (time_t)(wall_ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    size_t n = strftime(out, size, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, size - n, ".%03dZ", (int)(wall_ms % 1000));
}
