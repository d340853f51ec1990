/* The file transport (file:///dir, docs/adapter.md "File export"): the feed's batches go into
 * rotated files in a local directory, pcapng for the synthetic encoding, JSON lines for the
 * JSON envelope (one copy per line) and for xdr-jsonl (one xDR per line, written as the
 * encoding made them). A file is written as <name>.part and rotated by size, age or record
 * count: then fsynced, renamed to <name> and its directory fsynced, and a manifest line
 * (manifest.jsonl: name, records, bytes, first and last source offsets per partition,
 * SHA-256) is appended and fsynced.
 *
 * Acknowledgement (group commit): the batches written since the last commit are made durable
 * together, at most sync_ms after the first of them (at once when max_in_flight batches
 * wait): fdatasync of the .part, then a commit record (the file's durable length, records
 * and source offsets so far) written into <name>.part.sync, in one of two fixed slots taken
 * in turn, and fdatasync'ed; only then are they acknowledged. So a file's size does not depend
 * on what the feed may hold in memory: a feed keeps up however long its files stay open.
 *
 * Crash safety: a .part found when the transport connects (a crash, or a stop) is sealed: cut
 * to the length its newest complete commit record names (what was acknowledged; the rest was
 * not, and is consumed and written again), renamed and listed in the manifest with that
 * record's counts and offsets; a .part without a commit is deleted.
 *
 * Free space: before each batch is written, statvfs of the directory must show the batch plus
 * FTF_RESERVE plus min_free_bytes. When it does not, nothing is written: the open file is
 * committed and closed and the transport goes down with a reason that names the directory and
 * its free space (the feed's endpoint-down alarm; the records stay held). It comes up again
 * only when min_free_bytes plus a margin (FTF_RESUME_MARGIN) is free, so a disk hovering at
 * the limit does not raise and clear the alarm in turn. A write, fsync or rename that fails
 * anyway (another writer filled the disk, EIO) takes the transport down the same way; what
 * was committed is sealed, the rest failed (retryable).
 *
 * Retention deletes the oldest closed files beyond retention_bytes in all or older than
 * retention_seconds.
 *
 * Metrics (label feed, docs/observability.md): files closed and their bytes, files removed
 * by retention, .part files discarded (nothing committed in them); resolved once when the
 * transport is created.
 *
 * Every callback runs from the transport's own events (never inside send). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "buf.h"
#include "clock.h"
#include "encoding.h"
#include "frame.h"
#include "log.h"
#include "pcap.h"
#include "transport.h"
#include "transport_desc.h"

/* The operations, defined with the descriptor at the end of this file. */
static const transport_ops_t transport_file_ops;

#define FTF_MAX_PARTS 256
#define FTF_POS_MAX 10000
/* A commit record slot in <name>.part.sync: two, written in turn, so a torn write leaves the
 * previous one whole. 256 partitions of ~60 bytes fit. */
#define FTF_SLOT 32768
/* Room kept beyond a batch and min_free_bytes: the commit record, the manifest line and the
 * file system's own blocks. */
#define FTF_RESERVE ((uint64_t)64 << 10)
/* Writing resumes once min_free_bytes plus this much is free (a quarter of min_free_bytes, at
 * least 256 KiB): the hysteresis that keeps the alarm from flapping at the limit. */
#define FTF_RESUME_MARGIN(min) ((min) / 4 > ((uint64_t)256 << 10) ? (min) / 4 : (uint64_t)256 << 10)

typedef struct ftf_part {
    int32_t partition;
    int64_t first, last;
} ftf_part_t;

typedef struct ftf {
    transport_t base;
    struct event_base *evb;
    transport_config_t cfg;
    transport_events_t ev;
    void *owner;
    char dir[256], prefix[64];
    bool pcapng, ndjson; /* pcap records (synthetic); JSON lines (xdr-jsonl); else JSON */
    uint64_t max_bytes, max_records, retention_bytes, min_free;
    uint32_t max_seconds, retention_seconds, sync_ms;
    bool up, connecting;
    /* the open file and its commit records */
    int fd, sfd;
    char part[480], sync[490], name[200];
    uint64_t bytes, records, seq, commits;
    int64_t opened_ms;
    EVP_MD_CTX *sha;
    void **cookies, **reporting; /* sends written, not yet committed; the ones being reported */
    unsigned n_cookies, cap;
    ftf_part_t parts[FTF_MAX_PARTS];
    unsigned n_parts;
    transport_pos_t *pos;
    bool rotate_due, sync_due, full;
    char broken[1100];  /* a write failed: tear down with this reason */
    char full_why[700]; /* not enough free space for the next batch: pause with this reason */
    buf_t scratch, line;
    struct event *defer, *tick, *sync_ev;
    metrics_counter_t *m_closed, *m_bytes, *m_removed, *m_discarded;
} ftf_t;

static const struct {
    const char *name, *help;
} ftf_families[] = {
    {"ndd_adapter_files_closed_total", "Files of the file transport fsynced, renamed and listed "
                                       "in the manifest"},
    {"ndd_adapter_files_closed_bytes_total", "Bytes of the closed files"},
    {"ndd_adapter_files_removed_total", "Closed files deleted by retention (bytes or age)"},
    {"ndd_adapter_files_discarded_total", "Incomplete .part files deleted (nothing in them was "
                                          "committed; their records are written again)"},
};
#define FTF_FAMILIES (sizeof ftf_families / sizeof *ftf_families)

static metrics_family_t *ftf_family(metrics_registry_t *r, size_t i)
{
    return metrics_counter_new(r, ftf_families[i].name, ftf_families[i].help, "feed");
}

static void ftf_metrics_bind(ftf_t *t)
{
    metrics_registry_t *r = t->cfg.metrics ? t->cfg.metrics : metrics_default_registry();
    metrics_counter_t **h[FTF_FAMILIES] = {&t->m_closed, &t->m_bytes, &t->m_removed,
                                           &t->m_discarded};
    for (size_t i = 0; i < FTF_FAMILIES; i++) {
        metrics_family_t *f = ftf_family(r, i);
        *h[i] = f ? metrics_counter_labels(f, t->cfg.feed ? t->cfg.feed : "") : NULL;
    }
}

static void transport_file_metrics_remove(metrics_registry_t *r, const char *feed)
{
    for (size_t i = 0; i < FTF_FAMILIES; i++) {
        metrics_family_t *f = ftf_family(r, i);
        if (f)
            metrics_family_remove_matching(f, "feed", feed);
    }
}

static void ftf_kick(ftf_t *t)
{
    event_active(t->defer, EV_TIMEOUT, 0);
}

/* Free bytes of the directory's file system (UINT64_MAX when statvfs fails: the write itself
 * then tells). */
static uint64_t ftf_avail(const ftf_t *t)
{
    struct statvfs s;
    if (statvfs(t->dir, &s) != 0)
        return UINT64_MAX;
    return (uint64_t)s.f_bavail * s.f_frsize;
}

/* Whether writing may (re)start: the directory exists and min_free_bytes plus the resume
 * margin is free. */
static bool ftf_space_ok(ftf_t *t, char *why, size_t n)
{
    struct stat st;
    if (stat(t->dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(why, n, "directory %s: %s", t->dir, errno ? strerror(errno) : "not a directory");
        return false;
    }
    uint64_t avail = ftf_avail(t), want = t->min_free + FTF_RESUME_MARGIN(t->min_free);
    if (avail < want) {
        snprintf(why, n,
                 "disk full: %" PRIu64 " bytes free in %s (min_free_bytes %" PRIu64
                 "); writing resumes at %" PRIu64 " bytes free",
                 avail, t->dir, t->min_free, want);
        return false;
    }
    return true;
}

static int ftf_write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = ENOSPC;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The cookies to report, moved aside: a callback may send again (into t->cookies). */
static unsigned ftf_take_cookies(ftf_t *t)
{
    void **r = t->reporting;
    t->reporting = t->cookies;
    t->cookies = r;
    unsigned n = t->n_cookies;
    t->n_cookies = 0;
    return n;
}

static void ftf_ack_taken(ftf_t *t, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        t->ev.on_ack(t->owner, t->reporting[i], 0);
}

static void ftf_fail_all(ftf_t *t, const char *reason)
{
    transport_failure_t f = {.retryable = true, .reason = reason};
    unsigned n = ftf_take_cookies(t);
    for (unsigned i = 0; i < n; i++)
        t->ev.on_fail(t->owner, t->reporting[i], &f);
}

static int fsync_dir(const char *dir)
{
    int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d < 0)
        return -1;
    int r = fsync(d);
    close(d);
    return r;
}

static int ftf_open(ftf_t *t)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char ts[32];
    strftime(ts, sizeof ts, "%Y%m%dT%H%M%SZ", &tm);
    snprintf(t->name, sizeof t->name, "%s-%s-%08" PRIu64 ".%s", t->prefix, ts, ++t->seq,
             t->pcapng ? "pcapng" : "jsonl");
    snprintf(t->part, sizeof t->part, "%s/%s.part", t->dir, t->name);
    snprintf(t->sync, sizeof t->sync, "%s.sync", t->part);
    t->fd = open(t->part, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (t->fd < 0) {
        snprintf(t->broken, sizeof t->broken, "cannot create %s: %s", t->part, strerror(errno));
        return -1;
    }
    t->bytes = t->records = t->commits = 0;
    t->n_parts = 0;
    t->opened_ms = mono_now_ms();
    EVP_DigestInit_ex(t->sha, EVP_sha256(), NULL);
    if (t->pcapng) {
        uint8_t h[PCAPNG_HEADER_LEN];
        pcapng_file_header(h);
        if (ftf_write_all(t->fd, h, sizeof h) != 0) {
            snprintf(t->broken, sizeof t->broken, "writing %s: %s", t->part, strerror(errno));
            return -1;
        }
        EVP_DigestUpdate(t->sha, h, sizeof h);
        t->bytes = sizeof h;
    }
    return 0;
}

static void ftf_parts_json(buf_t *b, const ftf_part_t *parts, unsigned n)
{
    buf_printf(b, "[");
    for (unsigned i = 0; i < n; i++)
        buf_printf(b, "%s{\"partition\":%" PRId32 ",\"first\":%" PRId64 ",\"last\":%" PRId64 "}",
                   i ? "," : "", parts[i].partition, parts[i].first, parts[i].last);
    buf_printf(b, "]");
}

/* Group commit: the .part's data made durable, then a commit record naming it; the sends
 * written so far may then be acknowledged (the caller takes and acks them). */
static int ftf_sync(ftf_t *t)
{
    t->sync_due = false;
    if (t->sync_ev)
        evtimer_del(t->sync_ev);
    if (t->fd < 0 || t->n_cookies == 0)
        return 0;
    bool fresh = t->sfd < 0;
    if (fresh)
        t->sfd = open(t->sync, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (t->sfd < 0 || fdatasync(t->fd) != 0) {
        snprintf(t->broken, sizeof t->broken, "fsync %s: %s", t->part, strerror(errno));
        return -1;
    }
    buf_t *b = &t->line;
    buf_reset(b);
    buf_printf(
        b, "{\"commit\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"records\":%" PRIu64 ",\"partitions\":",
        t->commits + 1, t->bytes, t->records);
    ftf_parts_json(b, t->parts, t->n_parts);
    buf_printf(b, "}\n");
    off_t at = (off_t)(t->commits % 2) * FTF_SLOT;
    if (b->len > FTF_SLOT || pwrite(t->sfd, b->data, b->len, at) != (ssize_t)b->len ||
        fdatasync(t->sfd) != 0 || (fresh && fsync_dir(t->dir) != 0)) {
        snprintf(t->broken, sizeof t->broken, "writing %s: %s", t->sync,
                 b->len > FTF_SLOT ? "commit record too long" : strerror(errno));
        return -1;
    }
    t->commits++;
    return 0;
}

static void ftf_commit(ftf_t *t)
{
    if (ftf_sync(t) != 0)
        return;
    ftf_ack_taken(t, ftf_take_cookies(t));
}

static void ftf_retention(ftf_t *t);

/* Appends one line to manifest.jsonl and fsyncs it; a failure is logged (the file itself is
 * durable and complete). */
static void ftf_manifest(ftf_t *t, const char *name, uint64_t records, uint64_t bytes,
                         const char *hex, const char *parts_json)
{
    buf_t *b = &t->line;
    buf_reset(b);
    bool pcapng = strlen(name) > 7 && !strcmp(name + strlen(name) - 7, ".pcapng");
    buf_printf(b,
               "{\"name\":\"%s\",\"records\":%" PRIu64 ",\"bytes\":%" PRIu64
               ",\"sha256\":\"%s\",\"format\":\"%s\",\"partitions\":%s}\n",
               name, records, bytes, hex, pcapng ? "pcapng" : "jsonl", parts_json);
    char mpath[600];
    snprintf(mpath, sizeof mpath, "%s/manifest.jsonl", t->dir);
    int m = open(mpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (m < 0 || ftf_write_all(m, b->data, b->len) != 0 || fsync(m) != 0)
        log_error("feed %s: %s: manifest line for %s not written: %s", t->cfg.feed, t->cfg.endpoint,
                  name, strerror(errno));
    if (m >= 0)
        close(m);
    if (t->m_closed) {
        metrics_counter_inc(t->m_closed);
        metrics_counter_add(t->m_bytes, bytes);
    }
}

/* The open file, committed: fsync, rename, directory fsync, manifest line. */
static int ftf_close_file(ftf_t *t)
{
    char final[480];
    snprintf(final, sizeof final, "%s/%s", t->dir, t->name);
    int fd = t->fd;
    t->fd = -1;
    if (t->sfd >= 0)
        close(t->sfd);
    t->sfd = -1;
    if (fsync(fd) != 0 || close(fd) != 0) {
        snprintf(t->broken, sizeof t->broken, "fsync %s: %s", t->part, strerror(errno));
        return -1; /* the .part and its commit records stay: the next connect seals them */
    }
    if (rename(t->part, final) != 0 || fsync_dir(t->dir) != 0) {
        snprintf(t->broken, sizeof t->broken, "rename %s: %s", t->part, strerror(errno));
        return -1;
    }
    unlink(t->sync);
    uint8_t md[32];
    unsigned mdlen = 0;
    EVP_DigestFinal_ex(t->sha, md, &mdlen);
    char hex[65];
    for (unsigned i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    buf_t *pj = &t->scratch;
    buf_reset(pj);
    ftf_parts_json(pj, t->parts, t->n_parts);
    buf_append_u8(pj, 0);
    ftf_manifest(t, t->name, t->records, t->bytes, hex, (const char *)pj->data);
    ftf_retention(t);
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool ends_with(const char *n, const char *suffix)
{
    size_t nl = strlen(n), sl = strlen(suffix);
    return nl > sl && !strcmp(n + nl - sl, suffix);
}

typedef enum { FTF_CLOSED, FTF_PART, FTF_SYNC } ftf_kind_t;

/* Whether n is one of this feed's files of that kind. */
static bool ours(const ftf_t *t, const char *n, ftf_kind_t kind)
{
    size_t pl = strlen(t->prefix);
    if (strncmp(n, t->prefix, pl) || n[pl] != '-')
        return false;
    switch (kind) {
    case FTF_PART:
        return ends_with(n, ".part");
    case FTF_SYNC:
        return ends_with(n, ".part.sync");
    default:
        return ends_with(n, ".pcapng") || ends_with(n, ".jsonl");
    }
}

/* Deletes the oldest closed files beyond the byte and age limits (names sort by time). */
static void ftf_retention(ftf_t *t)
{
    if (!t->retention_bytes && !t->retention_seconds)
        return;
    DIR *d = opendir(t->dir);
    if (!d)
        return;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!ours(t, e->d_name, FTF_CLOSED))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn)
                break;
            names = nn;
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, name_cmp);
    uint64_t total = 0;
    off_t *sizes = calloc(n ? n : 1, sizeof *sizes);
    time_t *mt = calloc(n ? n : 1, sizeof *mt);
    for (size_t i = 0; sizes && mt && i < n; i++) {
        char p[800];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", t->dir, names[i]);
        if (names[i] && stat(p, &st) == 0) {
            sizes[i] = st.st_size;
            mt[i] = st.st_mtime;
            total += (uint64_t)st.st_size;
        }
    }
    time_t now = time(NULL);
    for (size_t i = 0; sizes && mt && i < n; i++) {
        bool old = t->retention_seconds && now - mt[i] > (time_t)t->retention_seconds;
        bool over = t->retention_bytes && total > t->retention_bytes;
        if (!old && !over)
            break;
        char p[800];
        snprintf(p, sizeof p, "%s/%s", t->dir, names[i]);
        if (unlink(p) == 0) {
            total -= (uint64_t)sizes[i];
            if (t->m_removed)
                metrics_counter_inc(t->m_removed);
            log_info("feed %s: %s: retention removed %s", t->cfg.feed, t->cfg.endpoint, names[i]);
        }
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    free(sizes);
    free(mt);
}

/* The newest whole commit record of a .part.sync file (NULL: none). */
static json_t *ftf_last_commit(const char *sync)
{
    int fd = open(sync, O_RDONLY | O_CLOEXEC);
    char *slot = fd >= 0 ? malloc(FTF_SLOT) : NULL; /* each feed's thread seals its own */
    if (!slot) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    json_t *best = NULL;
    for (int i = 0; i < 2; i++) {
        ssize_t n = pread(fd, slot, FTF_SLOT, (off_t)i * FTF_SLOT);
        char *nl = n > 0 ? memchr(slot, '\n', (size_t)n) : NULL;
        json_t *j = nl ? json_loadb(slot, (size_t)(nl - slot), 0, NULL) : NULL;
        if (j && json_integer_value(json_object_get(j, "commit")) >
                     (best ? json_integer_value(json_object_get(best, "commit")) : 0)) {
            json_decref(best);
            best = j;
        } else {
            json_decref(j);
        }
    }
    close(fd);
    free(slot);
    return best;
}

/* SHA-256 of a file, as hex; -1 when it cannot be read. */
static int ftf_sha_file(ftf_t *t, const char *path, char hex[65])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    uint8_t *b = fd >= 0 ? malloc(65536) : NULL; /* each feed's thread seals its own */
    if (!b) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    EVP_DigestInit_ex(t->sha, EVP_sha256(), NULL);
    ssize_t n;
    while ((n = read(fd, b, 65536)) > 0)
        EVP_DigestUpdate(t->sha, b, (size_t)n);
    close(fd);
    free(b);
    uint8_t md[32];
    unsigned mdlen = 0;
    EVP_DigestFinal_ex(t->sha, md, &mdlen);
    for (unsigned i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    return n < 0 ? -1 : 0;
}

/* A .part left open (a crash, a stop, a failed write): cut to its newest commit, renamed and
 * listed, or deleted when nothing in it was committed. part is the file's name in dir. */
static void ftf_seal(ftf_t *t, const char *part)
{
    char pp[800], sp[820], fp[800], final[480], hex[65];
    snprintf(pp, sizeof pp, "%s/%s", t->dir, part);
    snprintf(sp, sizeof sp, "%s.sync", pp);
    snprintf(final, sizeof final, "%.*s", (int)(strlen(part) - 5), part);
    snprintf(fp, sizeof fp, "%s/%s", t->dir, final);
    json_t *c = ftf_last_commit(sp);
    uint64_t bytes = c ? (uint64_t)json_integer_value(json_object_get(c, "bytes")) : 0;
    uint64_t recs = c ? (uint64_t)json_integer_value(json_object_get(c, "records")) : 0;
    char *parts = c ? json_dumps(json_object_get(c, "partitions"), JSON_COMPACT) : NULL;
    json_decref(c);
    int fd = recs ? open(pp, O_WRONLY | O_CLOEXEC) : -1;
    bool ok = fd >= 0 && ftruncate(fd, (off_t)bytes) == 0 && fsync(fd) == 0;
    if (fd >= 0)
        close(fd);
    if (!ok) { /* nothing committed: what it holds comes again from the stored offsets */
        if (unlink(pp) == 0 && t->m_discarded)
            metrics_counter_inc(t->m_discarded);
        unlink(sp);
        if (recs)
            log_error("feed %s: %s: cannot seal %s: %s", t->cfg.feed, t->cfg.endpoint, part,
                      strerror(errno));
        else
            log_warn("feed %s: %s: removed %s: nothing in it was committed (its records are "
                     "written again)",
                     t->cfg.feed, t->cfg.endpoint, part);
        free(parts);
        return;
    }
    if (rename(pp, fp) != 0 || fsync_dir(t->dir) != 0 || ftf_sha_file(t, fp, hex) != 0) {
        log_error("feed %s: %s: cannot seal %s: %s", t->cfg.feed, t->cfg.endpoint, part,
                  strerror(errno));
        free(parts);
        return; /* left as it is: the next connect tries again */
    }
    unlink(sp);
    ftf_manifest(t, final, recs, bytes, hex, parts ? parts : "[]");
    log_info("feed %s: %s: sealed %s left open: %" PRIu64 " committed records, %" PRIu64 " bytes",
             t->cfg.feed, t->cfg.endpoint, final, recs, bytes);
    free(parts);
}

/* The open file given up (a failed write, a stop): what was committed is sealed, the rest
 * cut off (its sends are failed by the caller, or forgotten at destroy). */
static void ftf_abandon(ftf_t *t)
{
    if (t->fd < 0)
        return;
    close(t->fd);
    t->fd = -1;
    if (t->sfd >= 0)
        close(t->sfd);
    t->sfd = -1;
    const char *slash = strrchr(t->part, '/');
    ftf_seal(t, slash ? slash + 1 : t->part);
    ftf_retention(t);
}

static void ftf_down(ftf_t *t, const char *reason)
{
    ftf_abandon(t);
    t->up = false;
    ftf_fail_all(t, reason);
    log_warn("feed %s: %s: %s", t->cfg.feed, t->cfg.endpoint, reason);
    t->ev.on_down(t->owner, reason);
}

/* Commit, close, then acknowledge: an ack's new send opens the next file. */
static void ftf_rotate(ftf_t *t)
{
    t->rotate_due = false;
    if (t->fd < 0)
        return;
    if (t->n_cookies == 0 && t->bytes <= (t->pcapng ? PCAPNG_HEADER_LEN : 0))
        return;
    if (ftf_sync(t) != 0 || ftf_close_file(t) != 0)
        return;
    ftf_ack_taken(t, ftf_take_cookies(t));
}

/* Not enough room for the next batch: commit and close what is written, then down until the
 * free space is back above the resume mark (reconnects check it: ftf_space_ok). */
static void ftf_pause_full(ftf_t *t)
{
    t->full = false;
    t->up = false; /* the acks below must not bring new sends */
    t->rotate_due = true;
    ftf_rotate(t);
    if (t->broken[0])
        return; /* ftf_down, by the caller */
    t->ev.on_down(t->owner, t->full_why);
}

static void ftf_defer_cb(evutil_socket_t fd, short what, void *arg)
{
    ftf_t *t = arg;
    (void)fd, (void)what;
    if (t->connecting) {
        t->connecting = false;
        char why[1100];
        if (!ftf_space_ok(t, why, sizeof why)) {
            t->ev.on_down(t->owner, why);
            return;
        }
        t->up = true;
        t->full = false;
        log_info("feed %s: writing files to %s (%s)", t->cfg.feed, t->dir,
                 t->pcapng ? "pcapng" : "JSON lines");
        t->ev.on_up(t->owner);
        return;
    }
    if (!t->up)
        return;
    if (!t->broken[0] && t->full) {
        ftf_pause_full(t);
        if (!t->broken[0])
            return;
        t->up = true; /* for ftf_down below */
    }
    if (!t->broken[0] && t->rotate_due)
        ftf_rotate(t);
    if (!t->broken[0] && t->sync_due)
        ftf_commit(t);
    if (t->broken[0]) {
        char why[1100];
        snprintf(why, sizeof why, "%s", t->broken);
        t->broken[0] = 0;
        ftf_down(t, why);
        return;
    }
    if (t->ev.on_writable)
        t->ev.on_writable(t->owner);
}

static void ftf_sync_cb(evutil_socket_t fd, short what, void *arg)
{
    ftf_t *t = arg;
    (void)fd, (void)what;
    if (!t->up)
        return;
    t->sync_due = true;
    ftf_defer_cb(-1, 0, t);
}

static void ftf_tick_cb(evutil_socket_t fd, short what, void *arg)
{
    ftf_t *t = arg;
    (void)fd, (void)what;
    if (!t->up || t->fd < 0)
        return;
    if (t->max_seconds && mono_now_ms() - t->opened_ms >= (int64_t)t->max_seconds * 1000) {
        t->rotate_due = true;
        ftf_kick(t);
    }
}

/* Seals what a crash or a stop left (.part files), removes stray commit records, finds the
 * next file number. */
static void ftf_recover(ftf_t *t)
{
    DIR *d = opendir(t->dir);
    if (!d)
        return;
    struct dirent *e;
    char **parts = NULL;
    size_t n = 0;
    while ((e = readdir(d))) {
        const char *dash = strrchr(e->d_name, '-');
        if (dash && (ours(t, e->d_name, FTF_CLOSED) || ours(t, e->d_name, FTF_PART))) {
            uint64_t s = strtoull(dash + 1, NULL, 10);
            if (s > t->seq)
                t->seq = s;
        }
        if (ours(t, e->d_name, FTF_PART) || ours(t, e->d_name, FTF_SYNC)) {
            char **np = realloc(parts, (n + 1) * sizeof *np);
            if (!np)
                break;
            parts = np;
            parts[n++] = strdup(e->d_name);
        }
    }
    closedir(d);
    for (size_t i = 0; i < n; i++) {
        if (parts[i] && ours(t, parts[i], FTF_PART)) {
            ftf_seal(t, parts[i]);
        } else if (parts[i]) { /* a commit record whose .part is gone */
            char p[800], q[800];
            snprintf(p, sizeof p, "%s/%s", t->dir, parts[i]);
            snprintf(q, sizeof q, "%.*s", (int)(strlen(p) - 5), p);
            if (access(q, F_OK) != 0)
                unlink(p);
        }
        free(parts[i]);
    }
    free(parts);
    if (n)
        ftf_retention(t);
}

static transport_t *ftf_create(struct event_base *base, const transport_config_t *cfg,
                               const transport_events_t *ev, void *owner, char *err, size_t errlen)
{
    ftf_t *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    t->base.ops = &transport_file_ops;
    t->evb = base;
    t->cfg = *cfg;
    t->ev = *ev;
    t->owner = owner;
    t->fd = t->sfd = -1;
    snprintf(t->dir, sizeof t->dir, "%s", cfg->path ? cfg->path : "");
    size_t dl = strlen(t->dir);
    while (dl > 1 && t->dir[dl - 1] == '/')
        t->dir[--dl] = 0;
    const json_t *o = cfg->options;
    const char *pre = o ? json_string_value(json_object_get(o, "prefix")) : NULL;
    snprintf(t->prefix, sizeof t->prefix, "%s", pre && *pre ? pre : cfg->feed);
    unsigned form = cfg->encoding ? cfg->encoding->form : 0;
    t->pcapng = (form & ENCODING_FORM_PCAP_RECORDS) != 0;
    t->ndjson = (form & ENCODING_FORM_JSON_LINES) != 0;
    /* the file member's values, or the defaults its description (below) states */
    const optdesc_t *d = transport_desc_file.option_desc;
    t->max_bytes = (uint64_t)optdesc_int(d, o, "max_bytes");
    t->max_seconds = (uint32_t)optdesc_int(d, o, "max_seconds");
    t->max_records = (uint64_t)optdesc_int(d, o, "max_records");
    t->retention_bytes = (uint64_t)optdesc_int(d, o, "retention_bytes");
    t->retention_seconds = (uint32_t)optdesc_int(d, o, "retention_seconds");
    t->min_free = (uint64_t)optdesc_int(d, o, "min_free_bytes");
    t->sync_ms = (uint32_t)optdesc_int(d, o, "sync_ms");
    t->cap = cfg->max_in_flight ? cfg->max_in_flight : 64;
    t->cookies = calloc(t->cap, sizeof *t->cookies);
    t->reporting = calloc(t->cap, sizeof *t->reporting);
    t->pos = calloc(FTF_POS_MAX, sizeof *t->pos);
    t->sha = EVP_MD_CTX_new();
    t->defer = event_new(base, -1, 0, ftf_defer_cb, t);
    t->tick = event_new(base, -1, EV_PERSIST, ftf_tick_cb, t);
    t->sync_ev = evtimer_new(base, ftf_sync_cb, t);
    if (!t->cookies || !t->reporting || !t->pos || !t->sha || !t->defer || !t->tick ||
        !t->sync_ev || buf_init(&t->scratch, 0, (size_t)64 << 20) != 0 ||
        buf_init(&t->line, 0, FTF_SLOT + 4096) != 0) {
        snprintf(err, errlen, "out of memory");
        transport_file_ops.destroy(&t->base);
        return NULL;
    }
    struct stat st;
    if (t->dir[0] != '/' || stat(t->dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: not a directory", t->dir);
        transport_file_ops.destroy(&t->base);
        return NULL;
    }
    ftf_metrics_bind(t);
    struct timeval one = {1, 0};
    evtimer_add(t->tick, &one);
    return &t->base;
}

static int ftf_connect(transport_t *base)
{
    ftf_t *t = (ftf_t *)base;
    if (t->up || t->connecting)
        return 0;
    ftf_recover(t);
    t->connecting = true;
    ftf_kick(t);
    return 0;
}

static unsigned ftf_capacity(const transport_t *base)
{
    const ftf_t *t = (const ftf_t *)base;
    if (!t->up || t->rotate_due || t->full || t->broken[0])
        return 0;
    return t->cap - t->n_cookies;
}

static void ftf_note_positions(ftf_t *t, void *cookie)
{
    if (!t->cfg.positions)
        return;
    size_t n = t->cfg.positions(cookie, t->pos, FTF_POS_MAX);
    for (size_t i = 0; i < n; i++) {
        unsigned k = 0;
        while (k < t->n_parts && t->parts[k].partition != t->pos[i].partition)
            k++;
        if (k == t->n_parts) {
            if (k == FTF_MAX_PARTS)
                continue;
            t->parts[t->n_parts++] =
                (ftf_part_t){t->pos[i].partition, t->pos[i].offset, t->pos[i].offset};
        }
        if (t->pos[i].offset < t->parts[k].first)
            t->parts[k].first = t->pos[i].offset;
        if (t->pos[i].offset > t->parts[k].last)
            t->parts[k].last = t->pos[i].offset;
    }
}

/* An xdr-jsonl batch: complete lines already, written as they are; counted. */
static long ftf_lines(const uint8_t *p, size_t len)
{
    if (len == 0 || p[len - 1] != '\n')
        return -1;
    long n = 0;
    for (const uint8_t *q = p; (q = memchr(q, '\n', (size_t)(p + len - q))); q++)
        n++;
    return n;
}

/* Room for wlen more bytes, min_free_bytes and the reserve; else the pause is set up. */
static bool ftf_room_for(ftf_t *t, size_t wlen)
{
    uint64_t avail = ftf_avail(t), need = (uint64_t)wlen + FTF_RESERVE + t->min_free;
    if (avail >= need)
        return true;
    snprintf(t->full_why, sizeof t->full_why,
             "disk full: %" PRIu64 " bytes free in %s, below min_free_bytes %" PRIu64
             " plus the next batch (%zu bytes); writing paused until %" PRIu64 " bytes are free",
             avail == UINT64_MAX ? 0 : avail, t->dir, t->min_free, wlen,
             t->min_free + FTF_RESUME_MARGIN(t->min_free));
    t->full = true;
    ftf_kick(t);
    return false;
}

static int ftf_send(transport_t *base, const uint8_t *payload, size_t len, void *cookie)
{
    ftf_t *t = (ftf_t *)base;
    if (ftf_capacity(base) == 0)
        return -1;
    buf_t *b = &t->scratch;
    buf_reset(b);
    long recs = t->pcapng   ? pcapng_from_frame(b, payload, len)
                : t->ndjson ? ftf_lines(payload, len)
                            : jsonl_from_json(b, payload, len);
    if (recs < 0) {
        log_error("feed %s: %s: a payload of %zu bytes is not a %s batch; refused", t->cfg.feed,
                  t->cfg.endpoint, len, t->cfg.encoding ? t->cfg.encoding->name : "JSON");
        return -1;
    }
    const uint8_t *w = t->ndjson ? payload : b->data;
    size_t wlen = t->ndjson ? len : b->len;
    if (!ftf_room_for(t, wlen + (t->fd < 0 && t->pcapng ? PCAPNG_HEADER_LEN : 0)))
        return -1; /* not accepted: the feed holds it until the transport is up again */
    t->cookies[t->n_cookies++] = cookie; /* accepted: acked once committed, or failed */
    if (t->fd < 0 && ftf_open(t) != 0) {
        ftf_kick(t);
        return 0;
    }
    if (ftf_write_all(t->fd, w, wlen) != 0) {
        snprintf(t->broken, sizeof t->broken, "writing %s: %s", t->part, strerror(errno));
        ftf_kick(t);
        return 0;
    }
    EVP_DigestUpdate(t->sha, w, wlen);
    t->bytes += wlen;
    t->records += (uint64_t)recs;
    ftf_note_positions(t, cookie);
    if (t->bytes >= t->max_bytes || (t->max_records && t->records >= t->max_records)) {
        t->rotate_due = true;
        ftf_kick(t);
    } else if (t->n_cookies == t->cap || t->sync_ms == 0) {
        t->sync_due = true;
        ftf_kick(t);
    } else if (!evtimer_pending(t->sync_ev, NULL)) {
        struct timeval tv = {t->sync_ms / 1000, (t->sync_ms % 1000) * 1000};
        evtimer_add(t->sync_ev, &tv);
    }
    return 0;
}

static unsigned ftf_in_flight(const transport_t *base)
{
    return ((const ftf_t *)base)->n_cookies;
}

static bool ftf_is_up(const transport_t *base)
{
    return ((const ftf_t *)base)->up;
}

static void ftf_disconnect(transport_t *base, const char *reason)
{
    ftf_t *t = (ftf_t *)base;
    if (!t->up && !t->connecting)
        return;
    t->connecting = false;
    if (t->up)
        ftf_down(t, reason);
}

static void ftf_destroy(transport_t *base)
{
    ftf_t *t = (ftf_t *)base;
    /* what was committed is sealed; the rest was never acknowledged: it comes again */
    if (t->fd >= 0 && t->sha)
        ftf_abandon(t);
    if (t->defer)
        event_free(t->defer);
    if (t->tick)
        event_free(t->tick);
    if (t->sync_ev)
        event_free(t->sync_ev);
    EVP_MD_CTX_free(t->sha);
    buf_free(&t->scratch);
    buf_free(&t->line);
    free(t->cookies);
    free(t->reporting);
    free(t->pos);
    free(t);
}

static const transport_ops_t transport_file_ops = {
    .name = "file",
    .create = ftf_create,
    .connect = ftf_connect,
    .send = ftf_send,
    .capacity = ftf_capacity,
    .in_flight = ftf_in_flight,
    .is_up = ftf_is_up,
    .disconnect = ftf_disconnect,
    .destroy = ftf_destroy,
    .metrics_remove = transport_file_metrics_remove,
};

/* ---- the descriptor: this transport as feeds, the admin and the schema see it ---- */

static const optdesc_t transport_file_desc[] = {
    {.name = "prefix",
     .type = OPTDESC_STRING,
     .max = 63,
     .help =
         "the files' name prefix, [A-Za-z0-9._-] not starting with '.'; default: the feed's name"},
    {.name = "max_bytes",
     .type = OPTDESC_INT,
     .min = 1,
     .max = INT64_C(1) << 40,
     .def = "67108864",
     .unit = "bytes",
     .help = "a file is closed and a new one opened at this size"},
    {.name = "max_seconds",
     .type = OPTDESC_INT,
     .max = 7 * 86400,
     .def = "60",
     .unit = "s",
     .help = "a file open this long is closed (bounds how long its copies wait for their ack); 0: "
             "never"},
    {.name = "max_records",
     .type = OPTDESC_INT,
     .max = INT64_C(1) << 40,
     .def = "0",
     .unit = "records",
     .help = "a file is closed after this many copies; 0: no limit"},
    {.name = "sync_ms",
     .type = OPTDESC_INT,
     .max = 10000,
     .def = "20",
     .unit = "ms",
     .help = "the longest a written batch waits for the fsync that acknowledges it; the batches "
             "written meanwhile share that fsync (0: one fsync per event loop turn)"},
    {.name = "retention_bytes",
     .type = OPTDESC_INT,
     .max = INT64_MAX,
     .def = "0",
     .unit = "bytes",
     .help = "the oldest closed files are removed beyond this total; 0: no limit"},
    {.name = "retention_seconds",
     .type = OPTDESC_INT,
     .max = 10 * 366 * 86400,
     .def = "0",
     .unit = "s",
     .help = "closed files older than this are removed; 0: no limit"},
    {.name = "min_free_bytes",
     .type = OPTDESC_INT,
     .max = INT64_MAX,
     .def = "1048576",
     .unit = "bytes",
     .help = "a batch is written only if this much stays free after it; below, the feed pauses "
             "until a quarter more (at least 256 KiB) is free"},
    {0},
};

/* The file member's prefix (docs/adapter.md, "File export"): types and ranges are the
 * description's; the name rule is this. */
static int transport_file_check(const json_t *o, const char *prefix, jfield_err_t *err)
{
    const char *pre = json_string_value(json_object_get(o, "prefix"));
    if (pre) {
        /* a file name's first part: no directory, nothing the shell or a glob would read */
        bool ok = *pre && *pre != '.';
        for (const char *p = pre; ok && *p; p++)
            ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                 *p == '-' || *p == '_' || *p == '.';
        if (!ok) {
            char path[128];
            snprintf(path, sizeof path, "%s.prefix", prefix);
            return jfield_fail(err, JFIELD_INVALID, path,
                               "\"%s\": 1 to 63 of [A-Za-z0-9._-], not starting with '.'", pre);
        }
    }
    return 0;
}

/* Rotated files in a local directory (adapter/transport_file.c): written as .part, fsynced,
 * renamed; the ack is the fsync of the file that holds the records. */
const transport_desc_t transport_desc_file = {
    .name = "file",
    .url_example = "file:///var/lib/ndd/export",
    .schemes = {{"file", false, NULL}},
    .url_form = TRANSPORT_URL_LOCAL,
    .url_path = TRANSPORT_PATH_REQUIRED,
    .ack = TRANSPORT_ACK_DURABLE,
    .encodings = {"json", "synthetic", "xdr-jsonl"},
    .options = "file",
    .option_desc = transport_file_desc,
    .check_options = transport_file_check,
    .ops = &transport_file_ops,
};
