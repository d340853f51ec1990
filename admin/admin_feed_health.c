/* The lag trend and "falling behind" verdict of a feed, and the bounded table of them: see
 * admin_feed_health.h. */
#include "admin_feed_health.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "log.h"

static int64_t admin_lag_window(const admin_lag_policy_t *p)
{
    return p && p->window_ms > 0 ? p->window_ms : ADMIN_LAG_WINDOW_MS;
}

static double admin_lag_floor(const admin_lag_policy_t *p)
{
    return p && p->floor > 0 ? p->floor : ADMIN_LAG_FLOOR;
}

/* Slot of the i-th newest sample (0: the newest). */
static size_t admin_lag_slot(const admin_lag_trend_t *t, size_t i)
{
    return (t->head + ADMIN_LAG_SAMPLES - 1 - i) % ADMIN_LAG_SAMPLES;
}

void admin_lag_add(admin_lag_trend_t *t, const admin_lag_policy_t *p, int64_t now_ms, double lag)
{
    /* Several adapters of one feed report within moments of each other: one sample per
     * window/32 keeps the window's samples evenly weighted and within the ring. */
    if (t->n > 0) {
        size_t last = admin_lag_slot(t, 0);
        if (now_ms - t->t_ms[last] < admin_lag_window(p) / 32) {
            t->lag[last] = lag;
            return;
        }
    }
    t->t_ms[t->head] = now_ms;
    t->lag[t->head] = lag;
    t->head = (t->head + 1) % ADMIN_LAG_SAMPLES;
    if (t->n < ADMIN_LAG_SAMPLES)
        t->n++;
}

double admin_lag_last(const admin_lag_trend_t *t)
{
    return t && t->n ? t->lag[admin_lag_slot(t, 0)] : 0;
}

/* How many of the newest samples lie within the window ending at the newest. */
static size_t admin_lag_in_window(const admin_lag_trend_t *t, const admin_lag_policy_t *p)
{
    if (t->n == 0)
        return 0;
    int64_t newest = t->t_ms[admin_lag_slot(t, 0)];
    size_t k = 1;
    while (k < t->n && newest - t->t_ms[admin_lag_slot(t, k)] <= admin_lag_window(p))
        k++;
    return k;
}

size_t admin_lag_slope(const admin_lag_trend_t *t, const admin_lag_policy_t *p, double *slope,
                       int64_t *span_ms)
{
    size_t k = admin_lag_in_window(t, p);
    *slope = 0;
    *span_ms = 0;
    if (k < 2)
        return k;
    /* Times relative to the newest sample, in seconds: small numbers, no cancellation. */
    int64_t t0 = t->t_ms[admin_lag_slot(t, 0)];
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (size_t i = 0; i < k; i++) {
        size_t s = admin_lag_slot(t, i);
        double x = (double)(t->t_ms[s] - t0) / 1000.0, y = t->lag[s];
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
    }
    double n = (double)k, den = n * sxx - sx * sx;
    *span_ms = t0 - t->t_ms[admin_lag_slot(t, k - 1)];
    if (den > 0)
        *slope = (n * sxy - sx * sy) / den;
    return k;
}

admin_lag_change_t admin_lag_judge(admin_lag_trend_t *t, const admin_lag_policy_t *p,
                                   double rate_per_s)
{
    double slope;
    int64_t span;
    size_t k = admin_lag_slope(t, p, &slope, &span);
    double lag = admin_lag_last(t);
    double floor = admin_lag_floor(p);
    if (rate_per_s * ADMIN_LAG_FLOOR_SECONDS > floor)
        floor = rate_per_s * ADMIN_LAG_FLOOR_SECONDS;
    if (!t->behind) {
        double oldest = k ? t->lag[admin_lag_slot(t, k - 1)] : lag;
        if (k >= 3 && span >= admin_lag_window(p) / 2 && slope >= ADMIN_LAG_MIN_SLOPE &&
            lag > floor && lag > oldest) {
            t->behind = true;
            return ADMIN_LAG_RAISE;
        }
    } else if (k >= 2 && (slope <= 0 || lag < floor / 2)) {
        t->behind = false;
        return ADMIN_LAG_CLEAR;
    }
    return ADMIN_LAG_SAME;
}

/* ---- the table ---- */

typedef struct admin_feed_state {
    char *name;
    int64_t seen_ms, interval_ms;
    admin_lag_trend_t trend;
} admin_feed_state_t;

struct admin_feed_health {
    json_t *index; /* name -> slot in v */
    admin_feed_state_t **v;
    size_t n, cap;
    bool full_logged;
};

admin_feed_health_t *admin_feed_health_new(void)
{
    admin_feed_health_t *fh = calloc(1, sizeof(*fh));
    if (fh && !(fh->index = json_object())) {
        free(fh);
        return NULL;
    }
    return fh;
}

void admin_feed_health_free(admin_feed_health_t *fh)
{
    if (!fh)
        return;
    for (size_t i = 0; i < fh->n; i++) {
        free(fh->v[i]->name);
        free(fh->v[i]);
    }
    free(fh->v);
    json_decref(fh->index);
    free(fh);
}

static admin_feed_state_t *admin_feed_state_add(admin_feed_health_t *fh, const char *name)
{
    if (fh->n >= ADMIN_MAX_FEEDS) {
        if (!fh->full_logged)
            log_warn("admin status: %d feeds tracked: feed %s (and any further) shows no lag "
                     "trend",
                     ADMIN_MAX_FEEDS, name);
        fh->full_logged = true;
        return NULL;
    }
    admin_feed_state_t **v = buf_array_room(fh->v, fh->n, &fh->cap, sizeof(*v), 16, 0);
    if (!v)
        return NULL;
    fh->v = v;
    admin_feed_state_t *s = calloc(1, sizeof(*s));
    if (!s || !(s->name = strdup(name))) {
        free(s);
        return NULL;
    }
    json_object_set_new(fh->index, name, json_integer((json_int_t)fh->n));
    fh->v[fh->n++] = s;
    return s;
}

admin_lag_trend_t *admin_feed_health_get(admin_feed_health_t *fh, const char *name, int64_t now_ms,
                                         int64_t interval_ms, bool *created)
{
    json_t *i = json_object_get(fh->index, name);
    admin_feed_state_t *s = i ? fh->v[json_integer_value(i)] : admin_feed_state_add(fh, name);
    *created = !i && s;
    if (!s)
        return NULL;
    s->seen_ms = now_ms;
    s->interval_ms = interval_ms > 0 ? interval_ms : 10000;
    return &s->trend;
}

const admin_lag_trend_t *admin_feed_health_find(const admin_feed_health_t *fh, const char *name)
{
    json_t *i = json_object_get(fh->index, name);
    return i ? &fh->v[json_integer_value(i)]->trend : NULL;
}

void admin_feed_health_expire(admin_feed_health_t *fh, int64_t now_ms, json_t *cleared)
{
    for (size_t i = 0; i < fh->n;) {
        admin_feed_state_t *s = fh->v[i];
        if (now_ms - s->seen_ms <= 3 * s->interval_ms) {
            i++;
            continue;
        }
        if (s->trend.behind)
            json_array_append_new(cleared, json_string(s->name));
        json_object_del(fh->index, s->name);
        free(s->name);
        free(s);
        fh->v[i] = fh->v[--fh->n]; /* the last one moves here */
        if (i < fh->n)
            json_object_set_new(fh->index, fh->v[i]->name, json_integer((json_int_t)i));
    }
}
