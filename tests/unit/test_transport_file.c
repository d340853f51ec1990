/* The file transport (adapter/transport_file.c) driven through its interface, as a feed drives
 * it: batches are acknowledged by group commit (fdatasync of the .part and a commit record)
 * while the file stays open, and a stop seals the open file; a .part left by a crash is cut to
 * its newest whole commit record (a torn second slot is ignored) and listed with that record's
 * counts and offsets, one without a commit is deleted, and the next file number follows the
 * leftovers'; too little free space keeps the transport down with a reason that names the
 * directory and its free space. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>
#include <jansson.h>

#include "pcap.h"
#include "transport.h"

typedef struct rec {
    unsigned acks, fails, ups, downs;
    char reason[1200];
} rec_t;

static void on_ack(void *o, void *cookie, int status)
{
    (void)cookie, (void)status;
    ((rec_t *)o)->acks++;
}
static void on_fail(void *o, void *cookie, const transport_failure_t *f)
{
    (void)cookie, (void)f;
    ((rec_t *)o)->fails++;
}
static void on_up(void *o)
{
    ((rec_t *)o)->ups++;
}
static void on_down(void *o, const char *reason)
{
    rec_t *r = o;
    r->downs++;
    snprintf(r->reason, sizeof r->reason, "%s", reason);
}
static const transport_events_t EV = {on_ack, on_fail, on_up, on_down, NULL};

static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/ndd-test-transport-file.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Runs the loop until *n reaches want or 3 s pass. */
static void run_until(struct event_base *b, const unsigned *n, unsigned want)
{
    uint64_t end = now_ms() + 3000;
    while (*n < want && now_ms() < end) {
        event_base_loop(b, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        usleep(1000);
    }
}

static transport_t *make(struct event_base *b, rec_t *r, json_t *opts)
{
    transport_config_t c = {.kind = &transport_desc_file,
                            .feed = "t",
                            .endpoint = "file://test",
                            .path = dir,
                            .content_type = "application/json",
                            .max_in_flight = 64,
                            .options = opts};
    char err[300];
    transport_t *t = transport_desc_file.ops->create(b, &c, &EV, r, err, sizeof err);
    if (!t)
        fail_msg("create: %s", err);
    return t;
}

/* How many names in dir end with suffix; the last such name in *last (when given). */
static int count(const char *suffix, char *last, size_t n)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int k = 0;
    while (d && (e = readdir(d))) {
        size_t l = strlen(e->d_name), sl = strlen(suffix);
        if (l > sl && !strcmp(e->d_name + l - sl, suffix)) {
            k++;
            if (last)
                snprintf(last, n, "%s", e->d_name);
        }
    }
    if (d)
        closedir(d);
    return k;
}

static json_t *manifest_line(int i)
{
    char p[400], line[4096];
    snprintf(p, sizeof p, "%s/manifest.jsonl", dir);
    FILE *f = fopen(p, "r");
    json_t *j = NULL;
    for (int k = 0; f && fgets(line, sizeof line, f); k++)
        if (k == i)
            j = json_loads(line, 0, NULL);
    if (f)
        fclose(f);
    return j;
}

static void test_batches_are_acked_by_their_commit_and_a_stop_seals_the_file(void **state)
{
    (void)state;
    struct event_base *b = event_base_new();
    rec_t r = {0};
    json_t *o = json_pack("{s:i}", "sync_ms", 5);
    transport_t *t = make(b, &r, o);
    transport_connect(t);
    run_until(b, &r.ups, 1);
    assert_int_equal(r.ups, 1);
    static const char *p[] = {"{\"a\":1}", "[{\"b\":2},{\"c\":3}]", "{\"d\":4}"};
    for (int i = 0; i < 3; i++)
        assert_int_equal(transport_send(t, (const uint8_t *)p[i], strlen(p[i]), (void *)p[i]), 0);
    assert_int_equal(r.acks, 0); /* never inside send */
    run_until(b, &r.acks, 3);
    assert_int_equal(r.acks, 3);
    assert_int_equal(transport_in_flight(t), 0);
    /* acknowledged while the file is open: the .part and its commit record */
    assert_int_equal(count(".jsonl.part", NULL, 0), 1);
    assert_int_equal(count(".jsonl.part.sync", NULL, 0), 1);
    transport_destroy(t);
    char name[300];
    assert_int_equal(count(".part", NULL, 0), 0);
    assert_int_equal(count(".sync", NULL, 0), 0);
    assert_int_equal(count(".jsonl", name, sizeof name), 2); /* the file and manifest.jsonl */
    json_t *m = manifest_line(0);
    assert_non_null(m);
    assert_int_equal(json_integer_value(json_object_get(m, "records")), 4);
    json_decref(m);
    json_decref(o);
    event_base_free(b);
    teardown(NULL);
    setup(NULL);
}

static void write_at(const char *path, const char *s, off_t at)
{
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, s, strlen(s), at), (ssize_t)strlen(s));
    close(fd);
}

static void test_a_crash_leftover_is_cut_to_its_newest_whole_commit(void **state)
{
    (void)state;
    char p[400], s[420], gone[400];
    snprintf(p, sizeof p, "%s/t-20260101T000000Z-00000007.jsonl.part", dir);
    snprintf(s, sizeof s, "%s.sync", p);
    snprintf(gone, sizeof gone, "%s/t-20260101T000001Z-00000008.jsonl.part", dir);
    write_at(p, "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n", 0); /* the third was never committed */
    write_at(s,
             "{\"commit\":1,\"bytes\":8,\"records\":1,\"partitions\":[{\"partition\":0,\"first\":5,"
             "\"last\":5}]}\n",
             0);
    write_at(s, "{\"commit\":2,\"bytes\":16,\"records\":2,\"partit", 32768); /* torn */
    write_at(gone, "{\"x\":1}\n", 0);                                        /* no commit at all */
    struct event_base *b = event_base_new();
    rec_t r = {0};
    transport_t *t = make(b, &r, NULL);
    transport_connect(t);
    run_until(b, &r.ups, 1);
    assert_int_equal(r.ups, 1);
    assert_int_equal(count(".part", NULL, 0), 0);
    assert_int_equal(count(".sync", NULL, 0), 0);
    char sealed[400];
    snprintf(sealed, sizeof sealed, "%s/t-20260101T000000Z-00000007.jsonl", dir);
    struct stat st;
    assert_int_equal(stat(sealed, &st), 0);
    assert_int_equal(st.st_size, 8); /* cut at commit 1: the torn commit 2 is ignored */
    json_t *m = manifest_line(0);
    assert_non_null(m);
    assert_int_equal(json_integer_value(json_object_get(m, "records")), 1);
    assert_int_equal(json_integer_value(json_object_get(m, "bytes")), 8);
    json_t *p0 = json_array_get(json_object_get(m, "partitions"), 0);
    assert_int_equal(json_integer_value(json_object_get(p0, "first")), 5);
    json_decref(m);
    /* the next file is numbered after every leftover */
    assert_int_equal(transport_send(t, (const uint8_t *)"{\"n\":1}", 7, &r), 0);
    run_until(b, &r.acks, 1);
    char last[300] = "";
    count(".jsonl.part", last, sizeof last);
    assert_non_null(strstr(last, "-00000009.jsonl.part"));
    transport_destroy(t);
    event_base_free(b);
    teardown(NULL);
    setup(NULL);
}

static void test_too_little_room_keeps_it_down_naming_the_directory(void **state)
{
    (void)state;
    struct event_base *b = event_base_new();
    rec_t r = {0};
    json_t *o = json_pack("{s:I}", "min_free_bytes", (json_int_t)1 << 62);
    transport_t *t = make(b, &r, o);
    transport_connect(t);
    run_until(b, &r.downs, 1);
    assert_int_equal(r.ups, 0);
    assert_int_equal(r.downs, 1);
    assert_non_null(strstr(r.reason, "disk full: "));
    assert_non_null(strstr(r.reason, " bytes free in "));
    assert_non_null(strstr(r.reason, dir));
    assert_int_equal(transport_capacity(t), 0);
    transport_destroy(t);
    json_decref(o);
    event_base_free(b);
}

/* A batch of the JSON envelope becomes one line per object: brackets, braces and escaped
 * quotes inside strings are not structure (the file transport's JSON lines, pcap.h). */
static void test_json_lines_step_over_strings(void **state)
{
    static const char arr[] = "[ {\"a\":\"x}]\\\"{\",\"b\":[1,{\"c\":\"\\\\\"}]} ,\n"
                              "  {\"d\":\"[\"} ]";
    buf_t out;
    assert_int_equal(buf_init(&out, 64, 4096), 0);
    assert_int_equal(jsonl_from_json(&out, (const uint8_t *)arr, sizeof arr - 1), 2);
    static const char want[] = "{\"a\":\"x}]\\\"{\",\"b\":[1,{\"c\":\"\\\\\"}]}\n"
                               "{\"d\":\"[\"}\n";
    assert_int_equal(out.len, sizeof want - 1);
    assert_memory_equal(out.data, want, out.len);
    /* An unclosed string or array is refused, the output left as it was. */
    static const char open_str[] = "[{\"a\":\"x}]";
    assert_int_equal(jsonl_from_json(&out, (const uint8_t *)open_str, sizeof open_str - 1), -1);
    assert_int_equal(out.len, sizeof want - 1);
    buf_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batches_are_acked_by_their_commit_and_a_stop_seals_the_file),
        cmocka_unit_test(test_a_crash_leftover_is_cut_to_its_newest_whole_commit),
        cmocka_unit_test(test_too_little_room_keeps_it_down_naming_the_directory),
        cmocka_unit_test(test_json_lines_step_over_strings),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
