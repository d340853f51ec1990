/* The standard process_* families of every registry (CPU, memory, start time, file
 * descriptors), computed from /proc/self at scrape time, with the names and help texts of
 * the Prometheus client libraries so dashboards made for those work unchanged. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "metrics-int.h"

/* ---- process metrics (from /proc/self) ---- */

struct proc_stat {
    double utime_s, stime_s, start_ticks;
    double vsize, rss_pages;
};

static int read_proc_stat(struct proc_stat *ps)
{
    char buf[1024];
    FILE *fp = fopen("/proc/self/stat", "r");
    if (!fp)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    /* The command name (field 2) may hold spaces and parentheses: parse after the last ')'. */
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    p += 2;
    /* fields from 3 on: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
     * utime(14) stime(15) cutime cstime priority nice threads itreal starttime(22) vsize(23)
     * rss(24) */
    unsigned long long f[22] = {0};
    char state;
    int got =
        sscanf(p,
               "%c %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
               "%llu %llu %llu %llu %llu %llu %llu",
               &state, &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &f[8], &f[9], &f[10],
               &f[11], &f[12], &f[13], &f[14], &f[15], &f[16], &f[17], &f[18], &f[19], &f[20]);
    if (got < 22)
        return -1;
    double tck = (double)sysconf(_SC_CLK_TCK);
    /* f[k] is field k+4 */
    ps->utime_s = (double)f[10] / tck;
    ps->stime_s = (double)f[11] / tck;
    ps->start_ticks = (double)f[18];
    ps->vsize = (double)f[19];
    ps->rss_pages = (double)f[20];
    return 0;
}

static double proc_cpu_seconds(void *arg)
{
    struct proc_stat ps;
    return read_proc_stat(&ps) == 0 ? ps.utime_s + ps.stime_s : 0.0;
}

static double proc_rss_bytes(void *arg)
{
    struct proc_stat ps;
    return read_proc_stat(&ps) == 0 ? ps.rss_pages * (double)sysconf(_SC_PAGESIZE) : 0.0;
}

static double proc_vsize_bytes(void *arg)
{
    struct proc_stat ps;
    return read_proc_stat(&ps) == 0 ? ps.vsize : 0.0;
}

static double proc_start_time(void *arg)
{
    static _Atomic uint64_t cached; /* bits of the value, 0 = not computed */
    uint64_t b = atomic_load_explicit(&cached, memory_order_relaxed);
    if (b)
        return metrics_bits_dbl(b);
    struct proc_stat ps;
    if (read_proc_stat(&ps) != 0)
        return 0.0;
    double btime = 0;
    FILE *fp = fopen("/proc/stat", "r");
    if (fp) {
        char line[256];
        while (fgets(line, sizeof line, fp))
            if (strncmp(line, "btime ", 6) == 0) {
                btime = strtod(line + 6, NULL);
                break;
            }
        fclose(fp);
    }
    if (btime <= 0)
        return 0.0;
    double v = btime + ps.start_ticks / (double)sysconf(_SC_CLK_TCK);
    atomic_store_explicit(&cached, metrics_dbl_bits(v), memory_order_relaxed);
    return v;
}

static double proc_open_fds(void *arg)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return 0.0;
    double n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory stream's own descriptor */
}

static double proc_max_fds(void *arg)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return 0.0;
    return (double)rl.rlim_cur;
}

static int add_callback(metrics_registry_t *r, metrics_type_t type, const char *name,
                        const char *help, metrics_value_fn fn)
{
    metrics_family_t *f = type == METRICS_COUNTER ? metrics_counter_new(r, name, help, NULL)
                                                  : metrics_gauge_new(r, name, help, NULL);
    struct metrics_child *c = metrics_child_labelv(f, NULL);
    if (!c)
        return -1;
    metrics_child_set_callback(c, fn, NULL);
    return 0;
}

int metrics_process_register(metrics_registry_t *r)
{
    int rc =
        add_callback(r, METRICS_COUNTER, "process_cpu_seconds_total",
                     "Total user and system CPU time spent in seconds.", proc_cpu_seconds) ||
        add_callback(r, METRICS_GAUGE, "process_resident_memory_bytes",
                     "Resident memory size in bytes.", proc_rss_bytes) ||
        add_callback(r, METRICS_GAUGE, "process_virtual_memory_bytes",
                     "Virtual memory size in bytes.", proc_vsize_bytes) ||
        add_callback(r, METRICS_GAUGE, "process_start_time_seconds",
                     "Start time of the process since unix epoch in seconds.", proc_start_time) ||
        add_callback(r, METRICS_GAUGE, "process_open_fds", "Number of open file descriptors.",
                     proc_open_fds) ||
        add_callback(r, METRICS_GAUGE, "process_max_fds",
                     "Maximum number of open file descriptors.", proc_max_fds);
    return rc ? -1 : 0;
}
