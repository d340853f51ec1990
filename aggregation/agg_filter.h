/* ndd-aggregation's filter file: loads the ingress filter from the file the settings name into
 * the worker's filter slot, and reloads it at run time when the file's mtime changes or a
 * reload is asked (SIGHUP). A refused reload keeps the filter in force. See
 * docs/aggregation.md. */
#ifndef NDD_AGG_FILTER_H
#define NDD_AGG_FILTER_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "filter.h"
#include "metrics.h"

typedef struct agg_filter_file {
    const char *path;    /* NULL: no filter file, the slot is fed by someone else */
    const char *nf_type; /* for the log lines */
    int64_t check_ms;    /* how often the mtime is looked at */
    filter_slot_t *slot; /* where a loaded filter goes (not owned) */
    metrics_counter_t *reload_ok, *reload_err;
    struct timespec mtime; /* of the file as last read */
    int64_t next_check_ms;
} agg_filter_file_t;

/* Loads the file into the slot and schedules the first mtime check. A failure is returned
 * with the file named in err (at start it is fatal). */
int agg_filter_file_load(agg_filter_file_t *ff, int64_t now_ms, char *err, size_t errlen);

/* Reloads when *reload is set (and clears it) or when a check finds the mtime changed; counts
 * the result, and on a refusal logs it and keeps the previous filter. */
void agg_filter_file_poll(agg_filter_file_t *ff, int64_t now_ms, volatile sig_atomic_t *reload);

#endif
