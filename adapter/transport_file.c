/* The file transport (file:///dir, docs/adapter.md "File export"): the feed's batches go into
 * rotated files in a local directory, pcapng for the synthetic encoding, JSON lines for the
 * JSON envelope (one copy per line) and for xdr-jsonl (one xDR per line, written as the
 * encoding made them). A file is written as <name>.part, rotated by
 * size, age or record count, then fsynced, renamed to <name> and its directory fsynced; only
 * then are the sends it holds acknowledged, so the feed stores their offsets only once the
 * file is durable. A manifest line (manifest.jsonl: name, records, bytes, first and last
 * source offsets per partition, SHA-256) is appended and fsynced for every closed file.
 *
 * Crash safety: a .part found when the transport connects is what a crash left: it is
 * deleted, and its records, never acknowledged, are consumed and written again. A full disk
 * (a failed write, fsync or rename, or free space below min_free_bytes) discards the open
 * .part, fails its sends (retryable) and takes the transport down: the feed raises its
 * endpoint-down alarm and holds the records; every reconnect attempt checks the free space
 * again and the transport comes back up when there is room. Retention deletes the oldest
 * closed files beyond retention_bytes in all or older than retention_seconds.
 *
 * Metrics (label feed, docs/observability.md): files closed and their bytes, files removed
 * by retention, .part files discarded (a crash's leftovers or a failed write); resolved once
 * when the transport is created.
 *
 * Every callback runs from the transport's own event (never inside send). */
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
#include "encoding.h"
#include "frame.h"
#include "log.h"
#include "pcap.h"
#include "transport.h"
#include "transport_desc.h"

#define FTF_MAX_PARTS 256
#define FTF_POS_MAX 10000

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
    bool pcapng, ndjson; /* synthetic; xdr-jsonl (batches already JSON lines); else json */
    uint64_t max_bytes, max_records, retention_bytes, min_free;
    uint32_t max_seconds, retention_seconds;
    bool up, connecting;
    /* the open file */
    int fd;
    char part[480], name[200];
    uint64_t bytes, records, seq, opened_ms;
    EVP_MD_CTX *sha;
    void **cookies, **reporting; /* the open file's sends; the ones being acked or failed */
    unsigned n_cookies, cap;
    ftf_part_t parts[FTF_MAX_PARTS];
    unsigned n_parts;
    transport_pos_t *pos;
    bool rotate_due;
    char broken[1100]; /* a write failed: tear down with this reason */
    buf_t scratch;
    struct event *defer, *tick;
    metrics_counter_t *m_closed, *m_bytes, *m_removed, *m_discarded;
} ftf_t;

static const struct {
    const char *name, *help;
} ftf_families[] = {
    {"ndd_adapter_files_closed_total", "Files of the file transport fsynced, renamed and listed "
                                       "in the manifest (their records acknowledged)"},
    {"ndd_adapter_files_closed_bytes_total", "Bytes of the closed files"},
    {"ndd_adapter_files_removed_total", "Closed files deleted by retention (bytes or age)"},
    {"ndd_adapter_files_discarded_total", "Incomplete .part files deleted (left by a crash or a "
                                          "stop, or a failed write; records written again)"},
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

void transport_file_metrics_remove(metrics_registry_t *r, const char *feed)
{
    for (size_t i = 0; i < FTF_FAMILIES; i++) {
        metrics_family_t *f = ftf_family(r, i);
        if (f)
            metrics_family_remove_matching(f, "feed", feed);
    }
}

static uint64_t ftf_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void ftf_kick(ftf_t *t)
{
    event_active(t->defer, EV_TIMEOUT, 0);
}

static bool ftf_space_ok(ftf_t *t, char *why, size_t n)
{
    struct statvfs s;
    if (statvfs(t->dir, &s) != 0) {
        snprintf(why, n, "directory %s: %s", t->dir, strerror(errno));
        return false;
    }
    uint64_t avail = (uint64_t)s.f_bavail * s.f_frsize;
    if (avail < t->min_free) {
        snprintf(why, n, "disk full: %" PRIu64 " bytes free in %s (min_free_bytes %" PRIu64 ")",
                 avail, t->dir, t->min_free);
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

static void ftf_fail_all(ftf_t *t, const char *reason)
{
    transport_failure_t f = {.retryable = true, .reason = reason};
    unsigned n = ftf_take_cookies(t);
    for (unsigned i = 0; i < n; i++)
        t->ev.on_fail(t->owner, t->reporting[i], &f);
}

/* The open .part is dropped (a crash would have left the same). */
static void ftf_discard(ftf_t *t)
{
    if (t->fd >= 0) {
        close(t->fd);
        if (unlink(t->part) == 0 && t->m_discarded)
            metrics_counter_inc(t->m_discarded);
    }
    t->fd = -1;
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
    t->fd = open(t->part, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (t->fd < 0) {
        snprintf(t->broken, sizeof t->broken, "cannot create %s: %s", t->part, strerror(errno));
        return -1;
    }
    t->bytes = t->records = 0;
    t->n_parts = 0;
    t->opened_ms = ftf_now_ms();
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

static int fsync_dir(const char *dir)
{
    int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d < 0)
        return -1;
    int r = fsync(d);
    close(d);
    return r;
}

static void ftf_retention(ftf_t *t);

/* fsync, rename, manifest: then the file's sends are acknowledged. */
static int ftf_close_file(ftf_t *t)
{
    char final[480];
    snprintf(final, sizeof final, "%s/%s", t->dir, t->name);
    if (fsync(t->fd) != 0 || close(t->fd) != 0) {
        snprintf(t->broken, sizeof t->broken, "fsync %s: %s", t->part, strerror(errno));
        unlink(t->part);
        t->fd = -1;
        return -1;
    }
    t->fd = -1;
    if (rename(t->part, final) != 0 || fsync_dir(t->dir) != 0) {
        snprintf(t->broken, sizeof t->broken, "rename %s: %s", t->part, strerror(errno));
        unlink(t->part);
        unlink(final);
        return -1;
    }
    uint8_t md[32];
    unsigned mdlen = 0;
    EVP_DigestFinal_ex(t->sha, md, &mdlen);
    char hex[65];
    for (unsigned i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    buf_t *b = &t->scratch;
    buf_reset(b);
    buf_printf(b,
               "{\"name\":\"%s\",\"records\":%" PRIu64 ",\"bytes\":%" PRIu64
               ",\"sha256\":\"%s\",\"format\":\"%s\",\"partitions\":[",
               t->name, t->records, t->bytes, hex, t->pcapng ? "pcapng" : "jsonl");
    for (unsigned i = 0; i < t->n_parts; i++)
        buf_printf(b, "%s{\"partition\":%" PRId32 ",\"first\":%" PRId64 ",\"last\":%" PRId64 "}",
                   i ? "," : "", t->parts[i].partition, t->parts[i].first, t->parts[i].last);
    buf_printf(b, "]}\n");
    char mpath[600];
    snprintf(mpath, sizeof mpath, "%s/manifest.jsonl", t->dir);
    int m = open(mpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (m < 0 || ftf_write_all(m, b->data, b->len) != 0 || fsync(m) != 0) {
        /* the file is durable and complete; only its manifest line is missing */
        log_error("feed %s: %s: manifest line for %s not written: %s", t->cfg.feed, t->cfg.endpoint,
                  t->name, strerror(errno));
    }
    if (m >= 0)
        close(m);
    if (t->m_closed) {
        metrics_counter_inc(t->m_closed);
        metrics_counter_add(t->m_bytes, t->bytes);
    }
    ftf_retention(t);
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool ours(const ftf_t *t, const char *n, bool part)
{
    size_t pl = strlen(t->prefix), nl = strlen(n);
    if (strncmp(n, t->prefix, pl) || n[pl] != '-')
        return false;
    bool is_part = nl > 5 && !strcmp(n + nl - 5, ".part");
    return part == is_part;
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
        if (!ours(t, e->d_name, false))
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

static void ftf_down(ftf_t *t, const char *reason)
{
    ftf_discard(t);
    t->up = false;
    ftf_fail_all(t, reason);
    log_warn("feed %s: %s: %s", t->cfg.feed, t->cfg.endpoint, reason);
    t->ev.on_down(t->owner, reason);
}

static void ftf_rotate(ftf_t *t)
{
    t->rotate_due = false;
    if (t->fd < 0 || t->n_cookies == 0)
        return;
    if (ftf_close_file(t) != 0)
        return;
    unsigned n = ftf_take_cookies(t);
    for (unsigned i = 0; i < n; i++)
        t->ev.on_ack(t->owner, t->reporting[i], 0);
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
        log_info("feed %s: writing files to %s (%s)", t->cfg.feed, t->dir,
                 t->pcapng ? "pcapng" : "JSON lines");
        t->ev.on_up(t->owner);
        return;
    }
    if (!t->up)
        return;
    if (!t->broken[0] && t->rotate_due)
        ftf_rotate(t);
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

static void ftf_tick_cb(evutil_socket_t fd, short what, void *arg)
{
    ftf_t *t = arg;
    (void)fd, (void)what;
    if (!t->up || t->fd < 0)
        return;
    if (t->max_seconds && ftf_now_ms() - t->opened_ms >= (uint64_t)t->max_seconds * 1000) {
        t->rotate_due = true;
        ftf_kick(t);
    }
}

/* Deletes what a crash left (.part files) and finds the next file number. */
static void ftf_recover(ftf_t *t)
{
    DIR *d = opendir(t->dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (ours(t, e->d_name, true)) {
            char p[800];
            snprintf(p, sizeof p, "%s/%s", t->dir, e->d_name);
            if (unlink(p) == 0) {
                if (t->m_discarded)
                    metrics_counter_inc(t->m_discarded);
                log_warn("feed %s: %s: removed %s left by a crash (its records are written "
                         "again)",
                         t->cfg.feed, t->cfg.endpoint, e->d_name);
            }
        }
        const char *dash = strrchr(e->d_name, '-');
        if (ours(t, e->d_name, false) && dash) {
            uint64_t s = strtoull(dash + 1, NULL, 10);
            if (s > t->seq)
                t->seq = s;
        }
    }
    closedir(d);
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
    t->fd = -1;
    snprintf(t->dir, sizeof t->dir, "%s", cfg->path ? cfg->path : "");
    size_t dl = strlen(t->dir);
    while (dl > 1 && t->dir[dl - 1] == '/')
        t->dir[--dl] = 0;
    const json_t *o = cfg->options;
    const char *pre = o ? json_string_value(json_object_get(o, "prefix")) : NULL;
    snprintf(t->prefix, sizeof t->prefix, "%s", pre && *pre ? pre : cfg->feed);
    t->pcapng = cfg->content_type && !strcmp(cfg->content_type, ENCODING_SYNTHETIC_CONTENT_TYPE);
    t->ndjson = cfg->content_type && !strcmp(cfg->content_type, ENCODING_NDJSON_CONTENT_TYPE);
    /* the file member's values, or the defaults its description states (transport_desc.c) */
    const optdesc_t *d = transport_desc_file.option_desc;
    t->max_bytes = (uint64_t)optdesc_int(d, o, "max_bytes");
    t->max_seconds = (uint32_t)optdesc_int(d, o, "max_seconds");
    t->max_records = (uint64_t)optdesc_int(d, o, "max_records");
    t->retention_bytes = (uint64_t)optdesc_int(d, o, "retention_bytes");
    t->retention_seconds = (uint32_t)optdesc_int(d, o, "retention_seconds");
    t->min_free = (uint64_t)optdesc_int(d, o, "min_free_bytes");
    t->cap = cfg->max_in_flight ? cfg->max_in_flight : 64;
    t->cookies = calloc(t->cap, sizeof *t->cookies);
    t->reporting = calloc(t->cap, sizeof *t->reporting);
    t->pos = calloc(FTF_POS_MAX, sizeof *t->pos);
    t->sha = EVP_MD_CTX_new();
    t->defer = event_new(base, -1, 0, ftf_defer_cb, t);
    t->tick = event_new(base, -1, EV_PERSIST, ftf_tick_cb, t);
    if (!t->cookies || !t->reporting || !t->pos || !t->sha || !t->defer || !t->tick ||
        buf_init(&t->scratch, 0, (size_t)64 << 20) != 0) {
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
    if (!t->up || t->rotate_due || t->broken[0])
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
                  t->cfg.endpoint, len,
                  t->pcapng   ? "synthetic"
                  : t->ndjson ? "JSON lines"
                              : "JSON");
        return -1;
    }
    const uint8_t *w = t->ndjson ? payload : b->data;
    size_t wlen = t->ndjson ? len : b->len;
    t->cookies[t->n_cookies++] = cookie; /* accepted: acked with its file, or failed */
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
    if (t->bytes >= t->max_bytes || (t->max_records && t->records >= t->max_records) ||
        t->n_cookies == t->cap) {
        t->rotate_due = true;
        ftf_kick(t);
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
    if (t->fd >= 0) /* never acknowledged: their records come again after a restart */
        ftf_discard(t);
    if (t->defer)
        event_free(t->defer);
    if (t->tick)
        event_free(t->tick);
    EVP_MD_CTX_free(t->sha);
    buf_free(&t->scratch);
    free(t->cookies);
    free(t->reporting);
    free(t->pos);
    free(t);
}

const transport_ops_t transport_file_ops = {
    .name = "file",
    .create = ftf_create,
    .connect = ftf_connect,
    .send = ftf_send,
    .capacity = ftf_capacity,
    .in_flight = ftf_in_flight,
    .is_up = ftf_is_up,
    .disconnect = ftf_disconnect,
    .destroy = ftf_destroy,
};
