/* Helpers for tests of daemons run as child processes: see daemon_testutil.h. */
#include "daemon_testutil.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kafka_testutil.h"

int dtu_tmpdir_make(char *dir, size_t dir_size, const char *name)
{
    /* mkdtemp's template: it replaces the six X with random characters. */
    snprintf(dir, dir_size, "/tmp/%s.XXXXXX", name);
    return mkdtemp(dir) ? 0 : -1;
}

void dtu_tmpdir_remove(const char *dir)
{
    if (getenv("NDD_TEST_KEEP_LOGS")) {
        fprintf(stderr, "daemon_testutil: logs kept in %s\n", dir);
        return;
    }
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char p[600];
        snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

int dtu_log_count(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof(line), f))
        if (strstr(line, needle))
            n++;
    fclose(f);
    return n;
}

bool dtu_log_wait(const char *path, const char *needle, int timeout_ms)
{
    int64_t deadline = ktu_now_ms() + timeout_ms;
    do {
        if (dtu_log_count(path, needle) > 0)
            return true;
        ktu_sleep_ms(20);
    } while (ktu_now_ms() < deadline);
    fprintf(stderr, "daemon_testutil: \"%s\" not in %s after %d ms\n", needle, path, timeout_ms);
    return false;
}

bool dtu_stop_clean(pid_t *pid, int timeout_ms)
{
    pid_t was = *pid;
    int st = ktu_stop(was, SIGTERM, timeout_ms);
    *pid = 0;
    if (st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return true;
    fprintf(stderr, "daemon_testutil: pid %d did not stop cleanly on SIGTERM (wait status %d)\n",
            (int)was, st);
    return false;
}

uint16_t dtu_port_file_wait(const char *path, int timeout_ms)
{
    int64_t deadline = ktu_now_ms() + timeout_ms;
    do {
        FILE *f = fopen(path, "r");
        unsigned port = 0;
        if (f) {
            int ok = fscanf(f, "%u", &port);
            fclose(f);
            if (ok == 1 && port > 0 && port < 65536)
                return (uint16_t)port;
        }
        ktu_sleep_ms(20);
    } while (ktu_now_ms() < deadline);
    return 0;
}
