/* Helpers for tests of daemons run as child processes: see daemon_testutil.h. */
#include "daemon_testutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

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

bool dtu_allinone(void)
{
    const char *v = getenv("NDD_TEST_ALLINONE");
    return v && *v && strcmp(v, "0") != 0;
}

/* The role a daemon binary is in ndd's file, and whether it answers on ndd's own server. */
static const char *allinone_role(const char *bin, bool *on_ndd_http)
{
    static const struct {
        const char *bin, *role;
        bool on_ndd_http;
    } map[] = {
        {"ndd-aggregation", "aggregation", true},
        {"ndd-correlation", "correlation", true},
        {"ndd-adapter", "adapter", true},
        {"ndd-ingress", "ingress", true},
        {"ndd-admin", "admin", false},
        {"ndd-gui-api", "gui-api", false},
    };
    const char *base = strrchr(bin, '/');
    base = base ? base + 1 : bin;
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (strcmp(base, map[i].bin) == 0) {
            *on_ndd_http = map[i].on_ndd_http;
            return map[i].role;
        }
    return NULL;
}

static bool allinone_shared(const char *key, bool on_ndd_http)
{
    return strcmp(key, "bootstrap") == 0 || strncmp(key, "log.", 4) == 0 ||
           strncmp(key, "kafka.", 6) == 0 || (on_ndd_http && strncmp(key, "http.", 5) == 0);
}

int dtu_allinone_argv(char *const argv[], char *const env_extra[], const char *log_path, char *file,
                      size_t file_size, char *out[4])
{
    bool on_ndd_http = false;
    const char *role = argv[0] ? allinone_role(argv[0], &on_ndd_http) : NULL;
    if (!role || !dtu_allinone() || (argv[1] && strncmp(argv[1], "--", 2) != 0))
        return 0;
    json_t *top = json_object(), *sec = json_object(), *roles = json_object();
    json_object_set_new(top, "roles", roles);
    json_object_set_new(roles, role, sec);
    for (size_t i = 1; argv[i]; i++) {
        if (strncmp(argv[i], "--", 2) != 0) {
            fprintf(stderr, "dtu_allinone_argv: %s: \"%s\" is no --option\n", argv[0], argv[i]);
            json_decref(top);
            return -1;
        }
        char key[256];
        const char *eq = strchr(argv[i], '='), *val;
        if (eq) {
            snprintf(key, sizeof key, "%.*s", (int)(eq - argv[i] - 2), argv[i] + 2);
            val = eq + 1;
        } else {
            snprintf(key, sizeof key, "%s", argv[i] + 2);
            /* a flag alone (--cooperative) is true */
            val = argv[i + 1] && strncmp(argv[i + 1], "--", 2) != 0 ? argv[++i] : "true";
        }
        if (strcmp(role, "aggregation") == 0 && strcmp(key, "nf-type") == 0) {
            json_t *nfs = json_array();
            json_array_append_new(nfs, json_string(val));
            json_object_set_new(sec, "nf-types", nfs);
            continue;
        }
        json_object_set_new(allinone_shared(key, on_ndd_http) ? top : sec, key, json_string(val));
    }
    if (!json_object_get(top, "http.port"))
        json_object_set_new(top, "http.port", json_string("0"));
    if (strcmp(role, "admin") == 0 && !json_object_get(sec, "pg")) {
        const char *pg = getenv("NDD_PG");
        for (size_t i = 0; env_extra && env_extra[i]; i++)
            if (strncmp(env_extra[i], "NDD_PG=", 7) == 0)
                pg = env_extra[i] + 7;
        if (pg)
            json_object_set_new(sec, "pg", json_string(pg));
    }
    static unsigned seq;
    if (log_path)
        snprintf(file, file_size, "%s.ndd-%u.json", log_path, seq++);
    else
        snprintf(file, file_size, "/tmp/ndd-allinone-%d-%u.json", (int)getpid(), seq++);
    /* 0600: a conninfo may be among the values */
    FILE *f = NULL;
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0)
        f = fdopen(fd, "w");
    int rc = f && json_dumpf(top, f, JSON_INDENT(2)) == 0 ? 1 : -1;
    if (f)
        fclose(f);
    else if (fd >= 0)
        close(fd);
    json_decref(top);
    if (rc < 0) {
        fprintf(stderr, "dtu_allinone_argv: cannot write %s\n", file);
        return -1;
    }
    out[0] = NDD_BINARY_DIR "/ndd/ndd";
    out[1] = "--config";
    out[2] = file;
    out[3] = NULL;
    return 1;
}
