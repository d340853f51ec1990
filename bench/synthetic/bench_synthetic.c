/* ndd-bench-synthetic: what the synthetic feed and the file export cost, in one run.
 *
 *   ndd-bench-synthetic [--seconds S] [--body BYTES] [--dir DIR] [--files N]
 *
 * Copies: NRF-like request/response pairs over 256 client 4-tuples (IPv4, a third IPv6),
 * JSON bodies of --body bytes (default 1,500: two segments). Measured, each for S seconds
 * of its own CPU time (CLOCK_THREAD_CPUTIME_ID of the encoding thread):
 *   json-tcp     JSON envelope batches of 16 written to a loopback TCP socket
 *   synthetic    synthetic batches (frames of pcap records) built, not sent
 *   pcap-tcp     synthetic batches written as a pcap stream (records only) to loopback TCP
 * A thread drains the socket (its CPU is not counted: it is the receiver's). Then the file
 * export: N files of 1 MB of pcapng written as .part, fsynced, renamed, directory fsynced,
 * with their SHA-256, in DIR (default /tmp): files/s and MB/s of wall time. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "encoding.h"
#include "frame.h"
#include "pcap.h"
#include "synthetic.h"

typedef struct copy {
    codec_msg_t m;
    char key[32], ts[24], src[64], dst[64], path[64];
} copy_t;

#define NCOPIES 4096
static copy_t copies[NCOPIES];
static char *body;

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void hdr(codec_msg_t *m, const char *n, const char *v)
{
    m->http[m->n_http].name = (codec_slice_t){n, strlen(n)};
    m->http[m->n_http].value = (codec_slice_t){v, strlen(v)};
    m->n_http++;
}

static void make_copies(size_t blen)
{
    body = malloc(blen + 1);
    for (size_t i = 0; i < blen; i++)
        body[i] = (char)('a' + i % 26);
    for (int i = 0; i < NCOPIES; i++) {
        copy_t *c = &copies[i];
        codec_msg_t *m = &c->m;
        int tx = i / 2, conn = tx % 256;
        bool rsp = i % 2, v6 = conn % 3 == 0;
        snprintf(c->key, sizeof c->key, "tx-%d", tx);
        m->key = (codec_slice_t){c->key, strlen(c->key)};
        m->timestamp_us = 1700000000000000LL + i;
        char cl[64], sv[64];
        snprintf(cl, sizeof cl, v6 ? "[2001:db8::%x]:%d" : "10.0.%d.1:%d", conn + 1, 40000 + conn);
        snprintf(sv, sizeof sv, v6 ? "[2001:db8:1::1]:8443" : "10.9.0.1:8443");
        snprintf(c->src, sizeof c->src, "%s", rsp ? sv : cl);
        snprintf(c->dst, sizeof c->dst, "%s", rsp ? cl : sv);
        m->meta[CODEC_META_SRC_ADDR] = (codec_slice_t){c->src, strlen(c->src)};
        m->meta[CODEC_META_DST_ADDR] = (codec_slice_t){c->dst, strlen(c->dst)};
        m->meta[CODEC_META_CORRELATION_ID] = m->key;
        m->type = rsp ? CODEC_MSG_RESPONSE : CODEC_MSG_REQUEST;
        m->trigger = rsp ? CODEC_TRIGGER_TX_RESPONSE : CODEC_TRIGGER_RX_REQUEST;
        m->nf = CODEC_NF_NRF;
        if (rsp) {
            hdr(m, ":status", "200");
            m->status = 200;
        } else {
            snprintf(c->path, sizeof c->path, "/nnrf-disc/v1/nf-instances?target=%d", tx);
            hdr(m, ":method", "GET");
            hdr(m, ":scheme", "http");
            hdr(m, ":authority", "nrf.example:8443");
            hdr(m, ":path", c->path);
        }
        hdr(m, "content-type", "application/json");
        hdr(m, "user-agent", "AMF-3fa85f64");
        m->body = (codec_slice_t){body, blen};
    }
}

static void *drain(void *arg)
{
    int fd = *(int *)arg;
    static char b[1 << 16];
    while (read(fd, b, sizeof b) > 0)
        ;
    return NULL;
}

/* A connected loopback TCP pair: *w the writer, the reader drained by a thread. */
static int tcp_pair(int *w, pthread_t *th, int *r)
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
    socklen_t al = sizeof a;
    if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1) ||
        getsockname(l, (struct sockaddr *)&a, &al))
        return -1;
    *w = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(*w, (struct sockaddr *)&a, sizeof a))
        return -1;
    *r = accept(l, NULL, NULL);
    close(l);
    return pthread_create(th, NULL, drain, r);
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static void writev_all(int fd, struct iovec *iov, int n)
{
    while (n > 0) {
        ssize_t k = writev(fd, iov, n);
        if (k <= 0)
            return;
        while (n > 0 && (size_t)k >= iov->iov_len) {
            k -= (ssize_t)iov->iov_len;
            iov++, n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + k;
            iov->iov_len -= (size_t)k;
        }
    }
}

/* mode 0 json-tcp, 1 synthetic (build only), 2 pcap-tcp */
static double run(int mode, double seconds, uint64_t *bytes_out)
{
    const encoding_t *e = mode == 0 ? &encoding_json : &encoding_synthetic;
    buf_t b;
    buf_init(&b, 1 << 20, 64u << 20);
    int w = -1, r = -1;
    pthread_t th;
    if (mode != 1 && tcp_pair(&w, &th, &r) != 0) {
        perror("loopback");
        exit(1);
    }
    uint64_t n = 0, bytes = 0;
    double t0 = cpu_now();
    size_t i = 0;
    while (cpu_now() - t0 < seconds) {
        for (int k = 0; k < 64; k++) {
            buf_reset(&b);
            encoding_batch_t eb;
            e->begin_batch(&eb, &b, 16);
            for (int j = 0; j < 16; j++, i = (i + 1) % NCOPIES)
                if (e->add(&eb, &copies[i].m) != ENCODING_OK)
                    exit(2);
            e->end_batch(&eb);
            n += 16;
            if (mode == 0) {
                write_all(w, b.data, b.len);
                bytes += b.len;
            } else if (mode == 2) { /* as transport_tcp.c does: each record's body */
                frame_parser_t p;
                frame_t fr;
                size_t used;
                frame_parser_init(&p, 0, false);
                frame_parse(&p, b.data, b.len, &fr, &used);
                frame_record_iter_t it;
                frame_record_t rec;
                frame_records(&fr, &it);
                struct iovec iov[16];
                int niov = 0;
                while (frame_record_next(&it, &rec) && niov < 16) {
                    iov[niov++] = (struct iovec){(void *)rec.body.ptr, rec.body.len};
                    bytes += rec.body.len;
                }
                writev_all(w, iov, niov); /* one writev per batch, as the evbuffer does */
            } else {
                bytes += b.len;
            }
        }
    }
    double cpu = cpu_now() - t0;
    if (w >= 0) {
        shutdown(w, SHUT_WR);
        pthread_join(th, NULL);
        close(w);
        close(r);
    }
    buf_free(&b);
    *bytes_out = bytes;
    return (double)n / cpu;
}

static void file_export(const char *dir, int files)
{
    /* 1 MB of pcapng per file from synthetic batches */
    buf_t batch, out;
    buf_init(&batch, 1 << 20, 64u << 20);
    buf_init(&out, 2 << 20, 64u << 20);
    EVP_MD_CTX *sha = EVP_MD_CTX_new();
    size_t i = 0;
    double t0 = wall_now();
    uint64_t total = 0;
    for (int f = 0; f < files; f++) {
        char part[600], fin[512];
        snprintf(fin, sizeof fin, "%s/ndd-bench-%d.pcapng", dir, f);
        snprintf(part, sizeof part, "%s.part", fin);
        int fd = open(part, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) {
            perror(part);
            exit(1);
        }
        EVP_DigestInit_ex(sha, EVP_sha256(), NULL);
        uint8_t h[PCAPNG_HEADER_LEN];
        pcapng_file_header(h);
        write_all(fd, h, sizeof h);
        size_t bytes = sizeof h;
        while (bytes < 1000000) {
            buf_reset(&batch);
            buf_reset(&out);
            encoding_batch_t eb;
            encoding_synthetic.begin_batch(&eb, &batch, 16);
            for (int j = 0; j < 16; j++, i = (i + 1) % NCOPIES)
                encoding_synthetic.add(&eb, &copies[i].m);
            encoding_synthetic.end_batch(&eb);
            pcapng_from_frame(&out, batch.data, batch.len);
            write_all(fd, out.data, out.len);
            EVP_DigestUpdate(sha, out.data, out.len);
            bytes += out.len;
        }
        uint8_t md[32];
        unsigned ml;
        EVP_DigestFinal_ex(sha, md, &ml);
        fsync(fd);
        close(fd);
        rename(part, fin);
        int d = open(dir, O_RDONLY);
        fsync(d);
        close(d);
        total += bytes;
    }
    double wall = wall_now() - t0;
    printf("file-export  %d files of 1 MB pcapng (.part, fsync, rename, dir fsync, SHA-256) in "
           "%s: %.1f files/s, %.1f MB/s (wall)\n",
           files, dir, files / wall, total / wall / 1e6);
    for (int f = 0; f < files; f++) {
        char fin[512];
        snprintf(fin, sizeof fin, "%s/ndd-bench-%d.pcapng", dir, f);
        unlink(fin);
    }
    EVP_MD_CTX_free(sha);
    buf_free(&batch);
    buf_free(&out);
}

int main(int argc, char **argv)
{
    double seconds = 3;
    size_t blen = 1500;
    const char *dir = "/tmp";
    int files = 50;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--seconds"))
            seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--body"))
            blen = (size_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--dir"))
            dir = argv[i + 1];
        else if (!strcmp(argv[i], "--files"))
            files = atoi(argv[i + 1]);
    }
    make_copies(blen);
    printf("ndd-bench-synthetic: body %zu bytes, %d copies over 256 4-tuples, %.1f CPU-s each\n",
           blen, NCOPIES, seconds);
    const char *names[] = {"json-tcp", "synthetic", "pcap-tcp"};
    for (int mode = 0; mode < 3; mode++) {
        uint64_t bytes;
        uint64_t p0 = synth_ctx_stats(encoding_synthetic_context())->packets;
        double r = run(mode, seconds, &bytes);
        uint64_t p1 = synth_ctx_stats(encoding_synthetic_context())->packets;
        printf("%-12s %10.0f copies per CPU-second  (%.0f bytes, %.1f packets per copy)\n",
               names[mode], r, (double)bytes / (r * seconds), (double)(p1 - p0) / (r * seconds));
    }
    file_export(dir, files);
    return 0;
}
