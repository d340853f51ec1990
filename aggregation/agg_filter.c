/* ndd-aggregation's filter file: see agg_filter.h. The file is read whole (bounded by the
 * filter text limit) and compiled before the swap, so a record is always judged by a complete
 * filter, the old one or the new one. */
#include "agg_filter.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"

static int agg_filter_read(agg_filter_file_t *ff, char *err, size_t errlen)
{
    const char *path = ff->path;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "filter file %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0)
        ff->mtime = sb.st_mtim;
    char *text = malloc(FILTER_MAX_TEXT + 1);
    if (!text) {
        fclose(f);
        snprintf(err, errlen, "filter file %s: out of memory", path);
        return -1;
    }
    size_t n = fread(text, 1, FILTER_MAX_TEXT + 1, f);
    bool too_big = n > FILTER_MAX_TEXT;
    bool rerr = ferror(f);
    fclose(f);
    if (rerr || too_big) {
        free(text);
        snprintf(err, errlen, "filter file %s: %s", path,
                 too_big ? "larger than the filter text limit" : "read error");
        return -1;
    }
    char why[512];
    filter_t *nf = filter_compile_text(text, n, why, sizeof(why));
    free(text);
    if (!nf) {
        snprintf(err, errlen, "filter file %s: %s", path, why);
        return -1;
    }
    uint64_t gen = filter_slot_swap(ff->slot, nf);
    log_info("aggregation %s: filter \"%s\" loaded from %s (%zu rules, generation %" PRIu64 ")",
             ff->nf_type, filter_name(nf), path, filter_rule_count(nf), gen);
    return 0;
}

int agg_filter_file_load(agg_filter_file_t *ff, int64_t now_ms, char *err, size_t errlen)
{
    if (ff->path && agg_filter_read(ff, err, errlen))
        return -1;
    ff->next_check_ms = now_ms + ff->check_ms;
    return 0;
}

void agg_filter_file_poll(agg_filter_file_t *ff, int64_t now_ms, volatile sig_atomic_t *reload)
{
    if (!ff->path)
        return;
    bool asked = reload && *reload;
    if (!asked) {
        if (now_ms < ff->next_check_ms)
            return;
        ff->next_check_ms = now_ms + ff->check_ms;
        struct stat sb;
        if (stat(ff->path, &sb) != 0 ||
            (sb.st_mtim.tv_sec == ff->mtime.tv_sec && sb.st_mtim.tv_nsec == ff->mtime.tv_nsec))
            return;
    }
    if (reload)
        *reload = 0;
    char err[768];
    if (agg_filter_read(ff, err, sizeof(err)) == 0) {
        metrics_counter_inc(ff->reload_ok);
    } else {
        /* Keep the filter in force; remember the mtime so a broken file is reported once. */
        struct stat sb;
        if (stat(ff->path, &sb) == 0)
            ff->mtime = sb.st_mtim;
        metrics_counter_inc(ff->reload_err);
        log_error("aggregation %s: filter reload refused, previous filter stays: %s", ff->nf_type,
                  err);
    }
}
