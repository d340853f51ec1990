/* The file transport and the synthetic encoding end to end (real broker, ndd-adapter as a
 * child): real copies — NRF two-copy and SCP four-copy transactions, IPv4 and IPv6, empty
 * bodies, bodies above the MSS and above 16 KiB — go into rotated pcapng files that tshark
 * reads without a malformed packet, an expert error or a TCP analysis flag, with every
 * copy's method, path and status; the manifest matches the files (records, SHA-256,
 * offsets); a kill -9 mid-file loses nothing and leaves no incomplete closed file; retention
 * removes the oldest files; a full disk (a 2 MiB tmpfs) takes the endpoint down and the feed
 * resumes when space returns. The pcap stream over tcp:// is read by tshark as it arrives;
 * the acknowledged mode loses nothing across a kill -9 and a receiver down for 30 s. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <pthread.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "adapter_testutil.h"
#include "kafka_testutil.h"
#include "log.h"

static char tmpdir[256];

static int setup_all(void **state)
{
    (void)state;
    log_setup("test_file_feed", LOG_LEVEL_WARN, 0);
    signal(SIGPIPE, SIG_IGN);
    (void)ktu_brokers();
    /* tshark is the independent judge of the packets: without it the test fails, it does not
     * pass with its packet checks left out */
    if (system("command -v tshark >/dev/null 2>&1") != 0) {
        fprintf(stderr, "tshark is missing (deploy/local/install-deps.sh installs it)\n");
        return -1;
    }
    return atu_scratch_make(tmpdir, sizeof tmpdir, "file-feed");
}

static int teardown_all(void **state)
{
    (void)state;
    atu_scratch_remove(tmpdir);
    return 0;
}

static char body[40000];

/* Transaction t: NRF (two copies) when t is even, SCP (four) when odd; IPv6 every third;
 * bodies cycle through empty, small, > MSS and > 16 KiB. Returns the copies produced. */
static unsigned long next_seq;
static uint64_t body_bytes; /* of every copy produced, for the DATA frame check */

static size_t produce_tx(rd_kafka_t *p, const char *topic, int t)
{
    static const size_t sizes[] = {0, 120, 3000, 20000};
    size_t blen = sizes[t % 4], n = 0;
    bool v6 = t % 3 == 0, scp = t % 2;
    char key[32], path[64], ts[32], cl[64], sv[64], sc[64];
    snprintf(key, sizeof key, "tx-%d", t);
    snprintf(path, sizeof path, "/nnrf-disc/v1/nf-instances/%d", t);
    snprintf(cl, sizeof cl, v6 ? "[2001:db8::%x]:%d" : "10.20.%d.1:%d", t % 200 + 1, 40000 + t);
    snprintf(sv, sizeof sv, v6 ? "[2001:db8:1::%x]:8443" : "10.30.%d.1:8443", t % 7 + 1);
    snprintf(sc, sizeof sc, v6 ? "[2001:db8:2::1]:%d" : "10.40.0.1:%d", 50000 + t);
    const char *trig_req[] = {"rx-request", "tx-request"},
               *trig_rsp[] = {"rx-response", "tx-response"};
    for (int hop = 0; hop < (scp ? 2 : 1); hop++) {
        /* SCP: consumer -> SCP (rx-request), SCP -> producer (tx-request), and back */
        const char *src = scp && hop == 1 ? sc : cl, *dst = scp && hop == 0 ? sc : sv;
        for (int rsp = 0; rsp < 2; rsp++) {
            snprintf(ts, sizeof ts, "%lld", 1700000000000000LL + t * 1000 + hop * 10 + rsp);
            const char *h[28];
            size_t k = 0;
#define H(a, b) (h[k++] = (a), h[k++] = (b))
            H("@correlation-id", key);
            H("@timestamp-us", ts);
            H("@message-type", rsp ? "response" : "request");
            H("@trigger-point", scp ? (rsp ? trig_rsp[hop == 0] : trig_req[hop])
                                    : (rsp ? "tx-response" : "rx-request"));
            H("@nf-type", scp ? "SCP" : "NRF");
            H("@src-addr", rsp ? dst : src);
            H("@dst-addr", rsp ? src : dst);
            if (rsp) {
                H(":status", "200");
            } else {
                H(":method", "GET");
                H(":path", path);
                H(":scheme", "http");
            }
            H("content-type", "application/json");
            char sq[24];
            snprintf(sq, sizeof sq, "%lu", next_seq++);
            H("@seq", sq);
            size_t bl = rsp ? blen : blen / 2;
            body_bytes += bl;
            assert_int_equal(ktu_produce(p, topic, -1, key, strlen(key), body, bl, h, k / 2), 0);
            n++;
        }
    }
    return n;
}

static size_t produce(const char *topic, int from, int to)
{
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    size_t n = 0;
    for (int t = from; t < to; t++)
        n += produce_tx(p, topic, t);
    assert_int_equal(ktu_flush(p, 30000), 0);
    rd_kafka_destroy(p);
    return n;
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

/* Checks every manifest line against its file; returns the records in all files still
 * present, and counts the files in *files. */
static size_t check_manifest(const char *dir, size_t *files, bool allow_missing)
{
    char mp[400];
    snprintf(mp, sizeof mp, "%s/manifest.jsonl", dir);
    FILE *m = fopen(mp, "r");
    assert_non_null(m);
    char line[8192];
    size_t records = 0;
    *files = 0;
    while (fgets(line, sizeof line, m)) {
        json_t *j = json_loads(line, 0, NULL);
        assert_non_null(j);
        char fp[600], hex[65];
        snprintf(fp, sizeof fp, "%s/%s", dir, json_string_value(json_object_get(j, "name")));
        if (access(fp, F_OK) != 0 && allow_missing) {
            json_decref(j);
            continue;
        }
        assert_non_null(sha256_file(fp, hex));
        assert_string_equal(hex, json_string_value(json_object_get(j, "sha256")));
        json_t *parts = json_object_get(j, "partitions");
        assert_true(json_array_size(parts) >= 1);
        json_t *p0 = json_array_get(parts, 0);
        assert_true(json_integer_value(json_object_get(p0, "first")) <=
                    json_integer_value(json_object_get(p0, "last")));
        records += (size_t)json_integer_value(json_object_get(j, "records"));
        (*files)++;
        json_decref(j);
    }
    fclose(m);
    return records;
}

static size_t count_files(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t l = strlen(e->d_name), sl = strlen(suffix);
        if (l > sl && !strcmp(e->d_name + l - sl, suffix))
            n++;
    }
    if (d)
        closedir(d);
    return n;
}

/* tshark over every pcapng in dir: no bad packet; returns the distinct request paths. */
static size_t tshark_check(const char *dir, size_t *responses, size_t *requests,
                           uint64_t *data_bytes)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd,
             "cd %s && for f in *.pcapng; do tshark -r $f -d tcp.port==8443,http2 "
             "-d tcp.port==50000-50100,http2 -Y '_ws.malformed || _ws.expert.severity >= "
             "\"error\" || tcp.analysis.lost_segment || tcp.analysis.retransmission || "
             "tcp.analysis.out_of_order || tcp.analysis.ack_lost_segment || !tcp'; done 2>&1 "
             "| grep -v '^Running as' | head -5",
             dir);
    FILE *p = popen(cmd, "r");
    char out[4000] = "";
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    pclose(p);
    if (n)
        fail_msg("tshark flags packets in %s:\n%s", dir, out);
    snprintf(cmd, sizeof cmd,
             "cd %s && for f in *.pcapng; do tshark -r $f -d tcp.port==8443,http2 "
             "-d tcp.port==50000-50100,http2 -Y http2.type==1 -T fields -e http2.headers.method "
             "-e http2.headers.path -e http2.headers.status; done 2>/dev/null",
             dir);
    p = popen(cmd, "r");
    char line[512];
    size_t paths = 0, gets = 0;
    *responses = 0;
    static char seen[400];
    memset(seen, 0, sizeof seen);
    while (fgets(line, sizeof line, p)) {
        int t;
        if (sscanf(line, "GET\t/nnrf-disc/v1/nf-instances/%d", &t) == 1 && t >= 0 && t < 400 &&
            !seen[t]) {
            seen[t] = 1;
            paths++;
        }
        if (strstr(line, "\t200"))
            (*responses)++;
        if (!strncmp(line, "GET\t/nnrf-disc/v1/nf-instances/", 31))
            gets++;
    }
    pclose(p);
    *requests = gets;
    /* the body bytes: every DATA frame's payload, summed over all files */
    snprintf(cmd, sizeof cmd,
             "cd %s && for f in *.pcapng; do tshark -r $f -d tcp.port==8443,http2 "
             "-d tcp.port==50000-50100,http2 -Y http2.type==0 -T fields -e http2.type -e "
             "http2.length; done 2>/dev/null | awk -F'\\t' '{nt = split($1, t, \",\"); "
             "split($2, l, \",\"); for (i = 1; i <= nt; i++) if (t[i] == 0) s += l[i]} "
             "END {printf \"%%d\\n\", s}'",
             dir);
    p = popen(cmd, "r");
    unsigned long long data = 0;
    if (fscanf(p, "%llu", &data) != 1)
        data = 0;
    pclose(p);
    *data_bytes = data;
    return paths;
}

static pid_t start(const char *name, const char *topic, const char *dir, const char *fileopts,
                   int mport, const char *log)
{
    char doc[1500], ff[400];
    snprintf(ff, sizeof ff, "%s/%s.json", tmpdir, name);
    snprintf(doc, sizeof doc,
             "{\"feeds\":[{\"name\":\"%s\",\"source_topic\":\"%s\",\"transport\":\"file\","
             "\"encoding\":\"synthetic\",\"endpoints\":[{\"url\":\"file://%s\"}],"
             "\"delivery\":{\"max_in_flight\":256,\"max_pending\":4096,\"batch_max\":16,"
             "\"backoff_max_ms\":500},\"file\":%s}]}",
             name, topic, dir, fileopts);
    assert_int_equal(atu_write_file(ff, doc), 0);
    pid_t a = atu_start_adapter(ff, mport, log, NULL);
    if (a <= 0)
        fail_msg("ndd-adapter did not start (log %s)", log);
    return a;
}

static void test_synthetic_feed_into_rotated_pcapng_files_tshark_reads(void **state)
{
    (void)state;
    char topic[128], feed[96], dir[300], log[400], group[200];
    ktu_unique_name("file-src", topic, sizeof topic);
    ktu_unique_name("filefeed", feed, sizeof feed);
    snprintf(dir, sizeof dir, "%s/out1", tmpdir);
    snprintf(log, sizeof log, "%s/%s.log", tmpdir, feed);
    snprintf(group, sizeof group, "ndd-feed-%s", feed);
    mkdir(dir, 0755);
    assert_int_equal(ktu_create_topic(topic, 2), 0);
    int mport = atu_free_port(27100, 27999);
    pid_t a = start(feed, topic, dir, "{\"max_records\":40,\"max_seconds\":2}", mport, log);
    uint64_t b0 = body_bytes;
    size_t n = produce(topic, 0, 60); /* 30 NRF x 2 + 30 SCP x 4 = 180 copies */
    uint64_t body_bytes_run = body_bytes - b0;
    assert_int_equal(n, 180);
    bool caught = atu_group_caught_up(topic, group, 60000);
    if (!caught) {
        char cmd[600];
        snprintf(
            cmd, sizeof cmd,
            "curl -s http://127.0.0.1:%d/metrics | grep -v '^#' | grep ndd_adapter > %s.metrics",
            mport, log);
        (void)system(cmd);
    }
    assert_true(caught);
    atu_stop(a, SIGTERM);
    size_t files;
    assert_int_equal(check_manifest(dir, &files, false), n);
    assert_true(files >= 4); /* rotation by record count (40) */
    assert_int_equal(count_files(dir, ".part"), 0);
    size_t rsp, req;
    uint64_t data;
    assert_int_equal(tshark_check(dir, &rsp, &req, &data), 60);
    assert_int_equal(req, 90);              /* every request copy's :method and :path */
    assert_int_equal(rsp, 90);              /* every response copy's :status */
    assert_int_equal(data, body_bytes_run); /* every body byte, in DATA frames */
}

static void test_kill_9_mid_file_loses_nothing_and_leaves_no_incomplete_file(void **state)
{
    (void)state;
    char topic[128], feed[96], dir[300], log[400], group[200];
    ktu_unique_name("file-k9", topic, sizeof topic);
    ktu_unique_name("filek9", feed, sizeof feed);
    snprintf(dir, sizeof dir, "%s/out2", tmpdir);
    snprintf(log, sizeof log, "%s/%s.log", tmpdir, feed);
    snprintf(group, sizeof group, "ndd-feed-%s", feed);
    mkdir(dir, 0755);
    assert_int_equal(ktu_create_topic(topic, 2), 0);
    int mport = atu_free_port(27100, 27999);
    /* a file stays open for a minute: the kill finds it half written */
    pid_t a = start(feed, topic, dir, "{\"max_seconds\":60,\"max_records\":100000}", mport, log);
    size_t n = produce(topic, 0, 40);
    uint64_t end = atu_now_ms() + 30000;
    while (count_files(dir, ".part") == 0 && atu_now_ms() < end)
        usleep(50000);
    assert_int_equal(count_files(dir, ".part"), 1);
    usleep(500000);
    atu_stop(a, SIGKILL);
    assert_int_equal(count_files(dir, ".pcapng"), 0);
    a = start(feed, topic, dir, "{\"max_seconds\":1}", mport, log);
    assert_true(atu_group_caught_up(topic, group, 60000));
    atu_stop(a, SIGTERM);
    assert_int_equal(count_files(dir, ".part"), 0);
    size_t files;
    assert_true(check_manifest(dir, &files, false) >= n);
    size_t rsp, req;
    uint64_t data;
    assert_int_equal(tshark_check(dir, &rsp, &req, &data), 40);
}

static void test_retention_removes_the_oldest_files(void **state)
{
    (void)state;
    char topic[128], feed[96], dir[300], log[400], group[200];
    ktu_unique_name("file-ret", topic, sizeof topic);
    ktu_unique_name("fileret", feed, sizeof feed);
    snprintf(dir, sizeof dir, "%s/out3", tmpdir);
    snprintf(log, sizeof log, "%s/%s.log", tmpdir, feed);
    snprintf(group, sizeof group, "ndd-feed-%s", feed);
    mkdir(dir, 0755);
    assert_int_equal(ktu_create_topic(topic, 1), 0);
    int mport = atu_free_port(27100, 27999);
    /* Records count per batch, so the last file can hold fewer than 10 and closes on time:
     * max_seconds keeps that wait well inside the catch-up deadline on a slow machine. */
    pid_t a =
        start(feed, topic, dir, "{\"max_records\":10,\"max_seconds\":2,\"retention_bytes\":200000}",
              mport, log);
    produce(topic, 0, 80);
    assert_true(atu_group_caught_up(topic, group, 60000));
    atu_stop(a, SIGTERM);
    size_t files, present;
    check_manifest(dir, &files, true);
    present = count_files(dir, ".pcapng");
    assert_int_equal(present, files);
    assert_true(atu_count_in_file(log, "retention removed") >= 1);
    /* what is left is within the limit, and it is the newest */
    char cmd[400];
    snprintf(cmd, sizeof cmd, "du -cb %s/*.pcapng | tail -1 | cut -f1", dir);
    FILE *p = popen(cmd, "r");
    long total = 0;
    assert_int_equal(fscanf(p, "%ld", &total), 1);
    pclose(p);
    assert_true(total <= 200000);
    snprintf(cmd, sizeof cmd, "%s/manifest.jsonl", dir);
    char *m = atu_read_file(cmd);
    char first[200];
    assert_int_equal(sscanf(m, "{\"name\":\"%199[^\"]", first), 1);
    char oldest[600];
    snprintf(oldest, sizeof oldest, "%s/%s", dir, first);
    assert_int_not_equal(access(oldest, F_OK), 0); /* the oldest went first */
    free(m);
}

static void test_full_disk_pauses_with_the_endpoint_down_and_resumes(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        fprintf(stderr, "not root: the tmpfs test is skipped\n");
        skip();
    }
    char topic[128], feed[96], dir[300], log[400], group[200], fill[400];
    ktu_unique_name("file-full", topic, sizeof topic);
    ktu_unique_name("filefull", feed, sizeof feed);
    snprintf(dir, sizeof dir, "%s/tmpfs", tmpdir);
    snprintf(log, sizeof log, "%s/%s.log", tmpdir, feed);
    snprintf(group, sizeof group, "ndd-feed-%s", feed);
    snprintf(fill, sizeof fill, "%s/filler", dir);
    mkdir(dir, 0755);
    assert_int_equal(mount("tmpfs", dir, "tmpfs", 0, "size=2m"), 0);
    assert_int_equal(ktu_create_topic(topic, 1), 0);
    int mport = atu_free_port(27100, 27999);
    char cmd[600];
    /* fill the disk first: the feed finds no room and stays down */
    snprintf(cmd, sizeof cmd, "dd if=/dev/zero of=%s bs=64k count=100 2>/dev/null", fill);
    (void)system(cmd);
    pid_t a = start(feed, topic, dir, "{\"max_records\":20,\"min_free_bytes\":262144}", mport, log);
    size_t n = produce(topic, 0, 20);
    usleep(3000000);
    bool down = atu_count_in_file(log, "disk full") >= 1;
    snprintf(
        cmd, sizeof cmd,
        "curl -s http://127.0.0.1:%d/metrics | grep '^ndd_adapter_endpoint_up' | grep -c ' 0$'",
        mport);
    FILE *p = popen(cmd, "r");
    int zero = 0;
    if (fscanf(p, "%d", &zero) != 1)
        zero = 0;
    pclose(p);
    unlink(fill); /* space returns */
    bool caught = atu_group_caught_up(topic, group, 60000);
    atu_stop(a, SIGTERM);
    size_t files, recs = check_manifest(dir, &files, false);
    umount2(dir, MNT_DETACH);
    assert_true(down);
    assert_int_equal(zero, 1);
    assert_true(caught);
    assert_int_equal(recs, n);
}

/* The pcap stream: a plain TCP listener gets a pcap header and the records, tshark reads it. */
typedef struct rx {
    int lfd;
    char path[400];
    size_t bytes;
} rx_t;

static void *rx_main(void *arg)
{
    rx_t *r = arg;
    int c = accept(r->lfd, NULL, NULL);
    FILE *f = fopen(r->path, "wb");
    static uint8_t b[65536];
    ssize_t n;
    struct timeval tv = {3, 0};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    while ((n = read(c, b, sizeof b)) > 0) {
        fwrite(b, 1, (size_t)n, f);
        r->bytes += (size_t)n;
    }
    fclose(f);
    close(c);
    return NULL;
}

static void test_pcap_stream_over_tcp_is_read_by_tshark(void **state)
{
    (void)state;
    char topic[128], feed[96], log[400], group[200], doc[1200], ff[400];
    ktu_unique_name("pcap-src", topic, sizeof topic);
    ktu_unique_name("pcapstream", feed, sizeof feed);
    snprintf(log, sizeof log, "%s/%s.log", tmpdir, feed);
    snprintf(group, sizeof group, "ndd-feed-%s", feed);
    assert_int_equal(ktu_create_topic(topic, 1), 0);
    int port = atu_free_port(27100, 27999), mport = atu_free_port(27100, 27999);
    rx_t r = {0};
    snprintf(r.path, sizeof r.path, "%s/stream.pcap", tmpdir);
    r.lfd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(r.lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(0x7f000001)};
    assert_int_equal(bind(r.lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    listen(r.lfd, 1);
    pthread_t th;
    pthread_create(&th, NULL, rx_main, &r);
    snprintf(ff, sizeof ff, "%s/%s.json", tmpdir, feed);
    snprintf(doc, sizeof doc,
             "{\"feeds\":[{\"name\":\"%s\",\"source_topic\":\"%s\",\"transport\":\"tcp\","
             "\"encoding\":\"synthetic\",\"endpoints\":[{\"url\":\"tcp://127.0.0.1:%d\"}],"
             "\"delivery\":{\"fire_and_forget\":true}}]}",
             feed, topic, port);
    assert_int_equal(atu_write_file(ff, doc), 0);
    pid_t a = atu_start_adapter(ff, mport, log, NULL);
    assert_true(a > 0);
    produce(topic, 0, 24);
    assert_true(atu_group_caught_up(topic, group, 60000));
    pthread_join(th, NULL); /* ends 3 s after the last byte */
    atu_stop(a, SIGTERM);
    close(r.lfd);
    assert_true(r.bytes > 24);
    char cmd[800];
    snprintf(cmd, sizeof cmd,
             "tshark -r %s -d tcp.port==8443,http2 -d tcp.port==50000-50100,http2 -Y "
             "'_ws.malformed || _ws.expert.severity >= \"error\" || tcp.analysis.lost_segment "
             "|| tcp.analysis.retransmission || tcp.analysis.out_of_order' 2>&1 | grep -v "
             "'^Running as' | wc -l",
             r.path);
    FILE *p = popen(cmd, "r");
    int bad = -1;
    assert_int_equal(fscanf(p, "%d", &bad), 1);
    pclose(p);
    assert_int_equal(bad, 0);
    snprintf(cmd, sizeof cmd,
             "tshark -r %s -d tcp.port==8443,http2 -d tcp.port==50000-50100,http2 -Y "
             "http2.headers.path -T fields -e http2.headers.path 2>/dev/null | sort -u | wc -l",
             r.path);
    p = popen(cmd, "r");
    int paths = 0;
    assert_int_equal(fscanf(p, "%d", &paths), 1);
    pclose(p);
    assert_int_equal(paths, 24);
}

/* The acknowledged mode (synthetic records in NDD frames, ACKed by the receiver) loses
 * nothing across a kill -9 of the adapter and a receiver down for 30 s. */
static void test_acknowledged_mode_survives_kill_9_and_a_receiver_down_30_s(void **state)
{
    (void)state;
    char topic[128], feed[96], log[400], doc[1200], ff[400];
    ktu_unique_name("synth-ack", topic, sizeof topic);
    ktu_unique_name("synthack", feed, sizeof feed);
    snprintf(log, sizeof log, "%s/%s.log", tmpdir, feed);
    assert_int_equal(ktu_create_topic(topic, 2), 0);
    int port = atu_free_port(27100, 27999), mport = atu_free_port(27100, 27999);
    atu_srv_t *srv = atu_srv_start(ATU_SRV_FRAME, port, NULL);
    assert_non_null(srv);
    snprintf(ff, sizeof ff, "%s/%s.json", tmpdir, feed);
    snprintf(doc, sizeof doc,
             "{\"feeds\":[{\"name\":\"%s\",\"source_topic\":\"%s\",\"transport\":\"tcp\","
             "\"encoding\":\"synthetic\",\"endpoints\":[{\"url\":\"tcp://127.0.0.1:%d\"}],"
             "\"delivery\":{\"backoff_max_ms\":1000,\"retry_max_ms\":600000}}]}",
             feed, topic, port);
    assert_int_equal(atu_write_file(ff, doc), 0);
    pid_t a = atu_start_adapter(ff, mport, log, NULL);
    assert_true(a > 0);
    unsigned long first = next_seq;
    produce(topic, 0, 40);
    uint64_t end = atu_now_ms() + 30000;
    while (atu_srv_distinct(srv) < 20 && atu_now_ms() < end)
        usleep(20000);
    atu_stop(a, SIGKILL); /* mid-run */
    a = atu_start_adapter(ff, mport, log, NULL);
    assert_true(a > 0);
    atu_srv_stop(srv); /* the receiver goes away for 30 s while copies keep coming */
    produce(topic, 40, 80);
    sleep(30);
    srv = atu_srv_start(ATU_SRV_FRAME, port, NULL);
    assert_non_null(srv);
    unsigned long last = next_seq;
    end = atu_now_ms() + 90000;
    while (!atu_srv_has_range(srv, first, last) && atu_now_ms() < end)
        usleep(50000);
    bool all = atu_srv_has_range(srv, first, last);
    atu_stop(a, SIGTERM);
    atu_srv_stop(srv);
    assert_true(all); /* produced = delivered (nothing dead-lettered: every copy has addresses) */
}

int main(void)
{
    for (size_t i = 0; i < sizeof body; i++)
        body[i] = (char)('a' + i % 26);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_synthetic_feed_into_rotated_pcapng_files_tshark_reads),
        cmocka_unit_test(test_kill_9_mid_file_loses_nothing_and_leaves_no_incomplete_file),
        cmocka_unit_test(test_retention_removes_the_oldest_files),
        cmocka_unit_test(test_full_disk_pauses_with_the_endpoint_down_and_resumes),
        cmocka_unit_test(test_pcap_stream_over_tcp_is_read_by_tshark),
        cmocka_unit_test(test_acknowledged_mode_survives_kill_9_and_a_receiver_down_30_s),
    };
    return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
