/* The set of feeds of one ndd-adapter process, changed at run time without restart and
 * without losing messages: a feed is added by starting it, changed by stopping the old one
 * (drain, commit what was acknowledged) and starting the new one on the same consumer group,
 * removed by stopping it. Unchanged feeds are not touched.
 *
 * feed_manager_apply() is THE "apply feed config JSON" function: the feeds file (reloaded on
 * SIGHUP or when it changes) goes through it, and so will records of the admin service's
 * ndd.config topic. Thread-safe (one mutex; applies are rare). */
#ifndef NDD_ADAPTER_FEEDS_H
#define NDD_ADAPTER_FEEDS_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include <jansson.h>

#include "feed.h"

typedef struct feed_manager feed_manager_t;

feed_manager_t *feed_manager_new(const feed_runtime_t *rt, uint32_t drain_ms);
/* Stops every feed (each drains for up to drain_ms) and frees the manager. */
void feed_manager_free(feed_manager_t *m);

/* Applies one feed: feed_json an object (add, or change when it differs from the running
 * one) or NULL (remove the feed called `name`). With feed_json, name may be NULL (taken from
 * the JSON). Returns 0, or -1 with err (the running feed, if any, is left as it was). */
int feed_manager_apply(feed_manager_t *m, const char *name, const json_t *feed_json, char *err,
                       size_t errlen);
/* Reads and applies a feeds file, {"feeds":[…]} or […]: every feed is validated first
 * (nothing changes on an error), then each is applied and running feeds absent from it are
 * removed. */
int feed_manager_apply_file(feed_manager_t *m, const char *path, char *err, size_t errlen);

/* Validates a feeds file as feed_manager_apply_file would (every feed through
 * feed_config_parse) without starting anything; with out, one summary line per feed. 0, or
 * -1 with err naming the file, feed and field. */
int feed_manager_check_file(const char *path, FILE *out, char *err, size_t errlen);
size_t feed_manager_count(feed_manager_t *m);
/* For the readiness rule (a feed_manager_t *): 1 when no feed runs or one of them has been
 * given partitions by its consumer group, else 0. */
int feed_manager_assigned(void *m);
/* Calls fn for every running feed (under the manager's lock: fn must not apply). */
void feed_manager_foreach(feed_manager_t *m, void (*fn)(const feed_t *f, void *arg), void *arg);

#endif
