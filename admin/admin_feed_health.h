/* A feed's live health from its adapters' heartbeats: the trend of its consumer lag over a
 * window and the "falling behind" verdict with hysteresis (docs/api.md, "Health and alarms").
 * Pure logic on bounded state: the admin's events consumer feeds it samples and raises or
 * clears the feed-falling-behind alarm on the verdict's changes. */
#ifndef NDD_ADMIN_FEED_HEALTH_H
#define NDD_ADMIN_FEED_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "admin.h"

/* Samples kept per feed: a window holds at most 32 (one per window/32, later ones in that
 * time replace the newest), the rest is margin for samples older than the window. */
#define ADMIN_LAG_SAMPLES 64
/* Feeds tracked; a feed beyond that shows no trend and health from endpoints alone (logged). */
#define ADMIN_MAX_FEEDS 4096
#define ADMIN_LAG_WINDOW_MS 30000
#define ADMIN_LAG_FLOOR 1000.0
/* The floor is also this many seconds of the feed's delivery rate (a fast feed holds more in
 * flight without falling behind). */
#define ADMIN_LAG_FLOOR_SECONDS 5.0
/* Slope (messages/s) the lag must grow at least by to be "growing" (below: noise). */
#define ADMIN_LAG_MIN_SLOPE 1.0

typedef struct admin_lag_policy {
    int64_t window_ms; /* the trend's window (ADMIN_LAG_WINDOW_MS) */
    double floor;      /* messages below which a lag is never "falling behind" */
} admin_lag_policy_t;

typedef struct admin_lag_trend {
    int64_t t_ms[ADMIN_LAG_SAMPLES];
    double lag[ADMIN_LAG_SAMPLES];
    size_t head; /* the next slot written */
    size_t n;    /* samples held (<= ADMIN_LAG_SAMPLES) */
    bool behind; /* the verdict: falling behind (the alarm is raised) */
} admin_lag_trend_t;

typedef enum admin_lag_change {
    ADMIN_LAG_SAME = 0,
    ADMIN_LAG_RAISE, /* became "falling behind" */
    ADMIN_LAG_CLEAR, /* no longer */
} admin_lag_change_t;

/* Adds the lag seen at now_ms (a sample closer than window/32 to the newest replaces it). */
void admin_lag_add(admin_lag_trend_t *t, const admin_lag_policy_t *p, int64_t now_ms, double lag);
/* Least-squares slope (messages/s) of the samples within the window ending at the newest
 * one; *span_ms the time they cover. Returns how many samples it used (< 2: slope 0). */
size_t admin_lag_slope(const admin_lag_trend_t *t, const admin_lag_policy_t *p, double *slope,
                       int64_t *span_ms);
/* The newest lag sample (0 when none). */
double admin_lag_last(const admin_lag_trend_t *t);
/* Updates t->behind and says whether it changed. Raise: at least 3 samples covering half the
 * window, slope >= ADMIN_LAG_MIN_SLOPE, the newest lag above the floor (policy floor or
 * ADMIN_LAG_FLOOR_SECONDS of rate_per_s, whichever is larger) and above the window's oldest.
 * Clear: slope <= 0 (the lag stopped growing or falls) or the lag under half the floor. The
 * gap between the two is the hysteresis. */
admin_lag_change_t admin_lag_judge(admin_lag_trend_t *t, const admin_lag_policy_t *p,
                                   double rate_per_s);

/* ---- the feeds' table (admin_events.c) ---- */
typedef struct admin_feed_health admin_feed_health_t;
admin_feed_health_t *admin_feed_health_new(void);
void admin_feed_health_free(admin_feed_health_t *fh);
/* The trend of feed name, created when absent (NULL when ADMIN_MAX_FEEDS are tracked);
 * *created says it is new. Marks it seen at now_ms with the heartbeat interval. */
admin_lag_trend_t *admin_feed_health_get(admin_feed_health_t *fh, const char *name, int64_t now_ms,
                                         int64_t interval_ms, bool *created);
/* The trend of feed name or NULL (for /status). */
const admin_lag_trend_t *admin_feed_health_find(const admin_feed_health_t *fh, const char *name);
/* Forgets the feeds no heartbeat reported for three of their intervals (deleted, or every
 * adapter gone: service-down says so): appends to cleared the names of those that were
 * falling behind, whose alarm the caller clears. */
void admin_feed_health_expire(admin_feed_health_t *fh, int64_t now_ms, json_t *cleared);

/* The admin's settings --feed-lag-window and --feed-lag-floor (0: the defaults above). */
void admin_events_set_lag_policy(admin_events_t *ev, int64_t window_ms, double floor);

#endif
