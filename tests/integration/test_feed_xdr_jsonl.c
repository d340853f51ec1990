/* A file feed of xDRs: JSON xDRs (as ndd-correlation writes them, docs/xdr.md; some compact,
 * some pretty-printed across lines) on a two-partition topic go through an xdr-jsonl feed
 * into rotated .jsonl files. Every xDR is in the files exactly once, one JSON object per line
 * and equal to what was produced; the manifest's counts, SHA-256 and offsets match the files;
 * a binary xDR and a value that is not JSON go to the feed's dead-letter topic, not into a
 * file. The adapter's /metrics then carries the file transport's families. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "adapter_testutil.h"
#include "kafka_testutil.h"
#include "log.h"

#define N_XDRS 300

static char tmpdir[256];

static int setup_all(void **state)
{
    (void)state;
    log_setup("test_feed_xdr_jsonl", LOG_LEVEL_WARN, 0);
    (void)ktu_brokers();
    return atu_scratch_make(tmpdir, sizeof tmpdir, "xdr-jsonl");
}

static int teardown_all(void **state)
{
    (void)state;
    atu_scratch_remove(tmpdir);
    return 0;
}

/* xDR i in JSON; every fifth pretty-printed over several lines (the line breaks must go). */
static int xdr_json(int i, char *out, size_t n)
{
    const char *sep = i % 5 == 0 ? "\n  " : "";
    return snprintf(out, n,
                    "{%s\"correlation_id\":\"xdr-%05d\",%s\"nf_type\":\"SCP\",%s\"method\":\"GET\","
                    "%s\"path\":\"/nudm-sdm/v2/imsi-2089300000%05d/am-data\",%s\"status_code\":200,"
                    "%s\"timestamps_us\":{\"rx-request\":%lld,\"tx-response\":%lld},"
                    "%s\"completion\":\"complete\",\"missing\":[],\"duplicates\":0,"
                    "\"truncated\":false,%s\"note\":\"a b  {c}\\n\\\"d\\\"\"}%s",
                    sep, i, sep, sep, sep, i, sep, sep, 1764486000000000LL + i,
                    1764486000002420LL + i, sep, sep, i % 5 == 0 ? "\n" : "");
}

static char *sha256_file(const char *path, char hex[65])
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    EVP_DigestInit_ex(c, EVP_sha256(), NULL);
    static uint8_t b[65536];
    size_t n;
    while ((n = fread(b, 1, sizeof b, f)) > 0)
        EVP_DigestUpdate(c, b, n);
    fclose(f);
    uint8_t md[32];
    unsigned ml;
    EVP_DigestFinal_ex(c, md, &ml);
    EVP_MD_CTX_free(c);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    return hex;
}

/* Reads one .jsonl file: each line one JSON object equal to the xDR it names; seen[i]++. */
static size_t check_lines(const char *path, int *seen)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char line[8192], want[8192];
    size_t n = 0;
    while (fgets(line, sizeof line, f)) {
        size_t l = strlen(line);
        assert_true(l > 1 && line[l - 1] == '\n');
        json_error_t je;
        json_t *got = json_loads(line, 0, &je);
        if (!got)
            fail_msg("%s: line %zu is not JSON: %s", path, n + 1, je.text);
        assert_true(json_is_object(got));
        const char *cid = json_string_value(json_object_get(got, "correlation_id"));
        assert_non_null(cid);
        int i = atoi(cid + 4);
        assert_true(i >= 0 && i < N_XDRS);
        seen[i]++;
        xdr_json(i, want, sizeof want);
        json_t *w = json_loads(want, 0, NULL);
        assert_true(json_equal(got, w));
        json_decref(w);
        json_decref(got);
        n++;
    }
    fclose(f);
    return n;
}

static void test_json_xdrs_are_written_once_each_as_json_lines_with_a_matching_manifest(void **s)
{
    (void)s;
    char topic[128], feed[96], dir[300], log[400], group[200], ff[400], doc[1500];
    ktu_unique_name("xdr-src", topic, sizeof topic);
    ktu_unique_name("xdrfile", feed, sizeof feed);
    snprintf(dir, sizeof dir, "%s/out", tmpdir);
    snprintf(log, sizeof log, "%s/%s.log", tmpdir, feed);
    snprintf(group, sizeof group, "ndd-feed-%s", feed);
    snprintf(ff, sizeof ff, "%s/feeds.json", tmpdir);
    mkdir(dir, 0755);
    assert_int_equal(ktu_create_topic(topic, 2), 0);
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    char v[2048], key[32];
    for (int i = 0; i < N_XDRS; i++) {
        int n = xdr_json(i, v, sizeof v);
        snprintf(key, sizeof key, "xdr-%05d", i);
        assert_int_equal(ktu_produce(p, topic, -1, key, strlen(key), v, (size_t)n, NULL, 0), 0);
    }
    static const char bin[] = "XDR1\x01\x00\x01\x1e\x00\x00\x00\xc8";
    assert_int_equal(ktu_produce(p, topic, 0, "bin", 3, bin, sizeof bin - 1, NULL, 0), 0);
    assert_int_equal(ktu_produce(p, topic, 1, "txt", 3, "not json", 8, NULL, 0), 0);
    assert_int_equal(ktu_flush(p, 30000), 0);
    rd_kafka_destroy(p);

    snprintf(doc, sizeof doc,
             "{\"feeds\":[{\"name\":\"%s\",\"source_topic\":\"%s\",\"transport\":\"file\","
             "\"encoding\":\"xdr-jsonl\",\"endpoints\":[{\"url\":\"file://%s\"}],"
             "\"delivery\":{\"batch_max\":16,\"backoff_max_ms\":500},"
             "\"file\":{\"max_records\":64,\"max_seconds\":1,\"prefix\":\"xdrs\"}}]}",
             feed, topic, dir);
    assert_int_equal(atu_write_file(ff, doc), 0);
    int mport = atu_free_port(27100, 27999);
    pid_t a = atu_start_adapter(ff, mport, log, NULL);
    if (a <= 0)
        fail_msg("ndd-adapter did not start (log %s)", log);
    assert_true(atu_group_caught_up(topic, group, 60000));
    /* copies are acknowledged once committed, before their file closes: the last file
     * closes by time (max_seconds 1), then the metrics count every file */
    char cmd[700], mf[500];
    snprintf(cmd, sizeof cmd, "ls %s | grep -q '\\.part$'", dir);
    for (uint64_t end = atu_now_ms() + 10000; system(cmd) == 0 && atu_now_ms() < end;)
        usleep(100000);
    snprintf(mf, sizeof mf, "%s/metrics.txt", tmpdir);
    snprintf(cmd, sizeof cmd, "curl -s http://127.0.0.1:%d/metrics > %s", mport, mf);
    assert_int_equal(system(cmd), 0);
    atu_stop(a, SIGTERM);

    /* the manifest: one line per file, its SHA-256 and record count those of the file */
    char mp[400];
    snprintf(mp, sizeof mp, "%s/manifest.jsonl", dir);
    FILE *m = fopen(mp, "r");
    assert_non_null(m);
    static int seen[N_XDRS];
    char line[8192];
    size_t files = 0, records = 0;
    while (fgets(line, sizeof line, m)) {
        json_t *j = json_loads(line, 0, NULL);
        assert_non_null(j);
        const char *name = json_string_value(json_object_get(j, "name"));
        assert_non_null(name);
        assert_non_null(strstr(name, ".jsonl"));
        assert_string_equal(json_string_value(json_object_get(j, "format")), "jsonl");
        char fp[700], hex[65];
        snprintf(fp, sizeof fp, "%s/%s", dir, name);
        assert_non_null(sha256_file(fp, hex));
        assert_string_equal(hex, json_string_value(json_object_get(j, "sha256")));
        size_t lines = check_lines(fp, seen);
        assert_int_equal(lines, (size_t)json_integer_value(json_object_get(j, "records")));
        json_t *parts = json_object_get(j, "partitions");
        assert_true(json_array_size(parts) >= 1);
        for (size_t k = 0; k < json_array_size(parts); k++) {
            json_t *pk = json_array_get(parts, k);
            assert_true(json_integer_value(json_object_get(pk, "first")) <=
                        json_integer_value(json_object_get(pk, "last")));
        }
        records += lines;
        files++;
        json_decref(j);
    }
    fclose(m);
    assert_int_equal(records, N_XDRS);
    assert_true(files >= 2); /* rotation by record count (64) */
    for (int i = 0; i < N_XDRS; i++)
        if (seen[i] != 1)
            fail_msg("xDR %d written %d times", i, seen[i]);
    /* no file the manifest does not list, no .part left */
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t on_disk = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        assert_null(strstr(e->d_name, ".part"));
        if (strstr(e->d_name, ".jsonl") && strcmp(e->d_name, "manifest.jsonl"))
            on_disk++;
    }
    closedir(d);
    assert_int_equal(on_disk, files);

    /* the binary xDR and the non-JSON value were dead-lettered, with the reason */
    char dlq[200];
    snprintf(dlq, sizeof dlq, "ndd.dlq.%s", feed);
    assert_int_equal(ktu_topic_record_count(dlq, 10000), 2);
    /* the file transport's families, labelled with the feed */
    char *metrics = atu_read_file(mf);
    assert_non_null(metrics);
    char want[300];
    snprintf(want, sizeof want, "ndd_adapter_files_closed_total{feed=\"%s\"} %zu", feed, files);
    if (!strstr(metrics, want))
        fail_msg("/metrics lacks \"%s\"", want);
    free(metrics);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_json_xdrs_are_written_once_each_as_json_lines_with_a_matching_manifest),
    };
    return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
