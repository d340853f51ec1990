#include "adapter_testutil.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <jansson.h>
#include <nghttp2/nghttp2.h>

#include "buf.h"
#include "daemon_testutil.h"
#include "frame.h"
#include "kafka_testutil.h"

uint64_t atu_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

pid_t atu_spawn(char *const argv[], const char *log_path)
{
    return ktu_spawn(argv, NULL, log_path);
}

void atu_stop(pid_t pid, int sig)
{
    if (pid <= 0)
        return;
    kill(pid, sig);
    uint64_t end = atu_now_ms() + 5000;
    while (atu_now_ms() < end) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD))
            return;
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static bool atu_port_free(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return false;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

int atu_listen_loopback(int port)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (lfd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(lfd, 8) != 0) {
        close(lfd);
        return -1;
    }
    return lfd;
}

/* The machine-wide port reservations of deploy/local/stack.sh free-ports (one directory per
 * port, held NDD_PORT_HOLD seconds): tests run side by side, and a port a neighbour's server
 * left unbound for a while (an endpoint outage, a broker restart) is not free to take. */
static bool atu_port_reserve(int port)
{
    const char *tmp = getenv("TMPDIR");
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/ndd-port-reservations", tmp && *tmp ? tmp : "/tmp");
    (void)mkdir(dir, 0777);
    snprintf(path, sizeof path, "%s/%d", dir, port);
    if (mkdir(path, 0777) == 0)
        return true;
    if (errno != EEXIST)
        return true; /* no registry here: the bind check alone decides */
    const char *h = getenv("NDD_PORT_HOLD");
    long hold = h && *h ? atol(h) : 1200;
    struct stat st;
    if (stat(path, &st) != 0 || time(NULL) - st.st_mtime <= hold)
        return false;
    return utime(path, NULL) == 0; /* a stale reservation: renewed, ours */
}

int atu_free_port(int lo, int hi)
{
    static unsigned seed;
    if (!seed)
        seed = (unsigned)(getpid() ^ (unsigned)atu_now_ms());
    /* Never the same port twice in one process: several are picked before any is bound. */
    static uint8_t given[65536 / 8];
    int span = hi - lo + 1;
    int start = (int)(rand_r(&seed) % (unsigned)span);
    for (int i = 0; i < span; i++) {
        int p = lo + (start + i) % span;
        if (given[p / 8] & (1u << (p % 8)))
            continue;
        if (atu_port_free(p) && atu_port_reserve(p)) {
            given[p / 8] |= (uint8_t)(1u << (p % 8));
            return p;
        }
    }
    return -1;
}

bool atu_wait_port(int port, int timeout_ms)
{
    uint64_t end = atu_now_ms() + (uint64_t)timeout_ms;
    do {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        bool ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
        close(fd);
        if (ok)
            return true;
        usleep(20000);
    } while (atu_now_ms() < end);
    return false;
}

static void atu_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

bool atu_run_until(struct event_base *base, bool (*cond)(void *), void *arg, int timeout_ms)
{
    uint64_t end = atu_now_ms() + (uint64_t)timeout_ms;
    struct event *tick = event_new(base, -1, EV_PERSIST, atu_tick, NULL);
    struct timeval tv = {0, 5000};
    event_add(tick, &tv);
    bool ok;
    while (!(ok = cond(arg)) && atu_now_ms() < end)
        event_base_loop(base, EVLOOP_ONCE);
    event_free(tick);
    return ok;
}

static int atu_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int atu_scratch_make(char *dir, size_t size, const char *name)
{
    int n = snprintf(dir, size, "/tmp/ndd-%s.XXXXXX", name);
    return n > 0 && (size_t)n < size && mkdtemp(dir) ? 0 : -1;
}

void atu_scratch_remove(const char *dir)
{
    if (!getenv("NDD_TEST_KEEP_LOGS"))
        atu_remove_tree(dir);
}

void atu_remove_tree(const char *dir)
{
    if (dir && dir[0] == '/' && strncmp(dir, "/tmp/", 5) == 0)
        nftw(dir, atu_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

char *atu_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = 0;
    fclose(f);
    return s;
}

/* ---- recording endpoints ---- */

#define ATU_SEQ_MAX (1u << 22)

struct atu_srv {
    atu_srv_kind_t kind;
    SSL_CTX *ssl;
    struct event_base *base;
    struct evconnlistener *lis;
    pthread_t th;
    pthread_mutex_t mu;
    uint8_t *seen; /* bitmap of @seq */
    size_t total, distinct, rejected;
    int status;
    long count;
    int retry_after;
    struct event *keep;
    struct atu_conn *conns;
};

typedef struct atu_stream {
    int32_t id;
    buf_t body;
    struct atu_stream *next;
} atu_stream_t;

typedef struct atu_conn {
    atu_srv_t *s;
    struct bufferevent *bev;
    nghttp2_session *ng;
    atu_stream_t *streams;
    frame_parser_t fp;
    struct atu_conn *prev, *next;
} atu_conn_t;

static void atu_record(atu_srv_t *s, uint64_t seq)
{
    s->total++;
    if (seq < ATU_SEQ_MAX && !(s->seen[seq / 8] & (1u << (seq % 8)))) {
        s->seen[seq / 8] |= (uint8_t)(1u << (seq % 8));
        s->distinct++;
    }
}

/* The verdict for the next request: 0 = success, else the scripted status. */
static int atu_verdict(atu_srv_t *s, int *retry_after)
{
    int st = 0;
    pthread_mutex_lock(&s->mu);
    if (s->count != 0) {
        st = s->status;
        *retry_after = s->retry_after;
        if (s->count > 0)
            s->count--;
        s->rejected++;
    }
    pthread_mutex_unlock(&s->mu);
    return st;
}

static void atu_record_json(atu_srv_t *s, const uint8_t *p, size_t n)
{
    json_t *j = json_loadb((const char *)p, n, 0, NULL);
    if (!j)
        return;
    size_t cnt = json_is_array(j) ? json_array_size(j) : 1;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < cnt; i++) {
        json_t *o = json_is_array(j) ? json_array_get(j, i) : j;
        json_t *seq = json_object_get(json_object_get(o, "metadata"), "seq");
        if (json_is_integer(seq))
            atu_record(s, (uint64_t)json_integer_value(seq));
        else if (json_is_string(seq))
            atu_record(s, strtoull(json_string_value(seq), NULL, 10));
    }
    pthread_mutex_unlock(&s->mu);
    json_decref(j);
}

static void atu_conn_free(atu_conn_t *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        c->s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    if (c->ng)
        nghttp2_session_del(c->ng);
    while (c->streams) {
        atu_stream_t *st = c->streams;
        c->streams = st->next;
        buf_free(&st->body);
        free(st);
    }
    bufferevent_free(c->bev);
    free(c);
}

static atu_stream_t *atu_stream(atu_conn_t *c, int32_t id, bool create)
{
    for (atu_stream_t *st = c->streams; st; st = st->next)
        if (st->id == id)
            return st;
    if (!create)
        return NULL;
    atu_stream_t *st = calloc(1, sizeof *st);
    st->id = id;
    buf_init(&st->body, 0, 64u << 20);
    st->next = c->streams;
    c->streams = st;
    return st;
}

static void atu_stream_drop(atu_conn_t *c, int32_t id)
{
    for (atu_stream_t **pp = &c->streams; *pp; pp = &(*pp)->next)
        if ((*pp)->id == id) {
            atu_stream_t *st = *pp;
            *pp = st->next;
            buf_free(&st->body);
            free(st);
            return;
        }
}

static int atu_h2_begin(nghttp2_session *ng, const nghttp2_frame *fr, void *ud)
{
    if (fr->hd.type == NGHTTP2_HEADERS)
        atu_stream(ud, fr->hd.stream_id, true);
    return 0;
}

static int atu_h2_data(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *d, size_t n,
                       void *ud)
{
    atu_stream_t *st = atu_stream(ud, id, false);
    if (st)
        buf_append(&st->body, d, n);
    return 0;
}

static int atu_h2_frame(nghttp2_session *ng, const nghttp2_frame *fr, void *ud)
{
    atu_conn_t *c = ud;
    if ((fr->hd.type != NGHTTP2_DATA && fr->hd.type != NGHTTP2_HEADERS) ||
        !(fr->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    atu_stream_t *st = atu_stream(c, fr->hd.stream_id, false);
    if (!st)
        return 0;
    int ra = 0;
    int v = atu_verdict(c->s, &ra);
    char sts[8], ras[16];
    snprintf(sts, sizeof sts, "%d", v ? v : 200);
    snprintf(ras, sizeof ras, "%d", ra);
    nghttp2_nv nv[2] = {
        {(uint8_t *)":status", (uint8_t *)sts, 7, strlen(sts), NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)"retry-after", (uint8_t *)ras, 11, strlen(ras), NGHTTP2_NV_FLAG_NONE}};
    if (!v)
        atu_record_json(c->s, st->body.data, st->body.len);
    nghttp2_submit_response(ng, fr->hd.stream_id, nv, v && ra > 0 ? 2 : 1, NULL);
    return 0;
}

static int atu_h2_close(nghttp2_session *ng, int32_t id, uint32_t ec, void *ud)
{
    atu_stream_drop(ud, id);
    return 0;
}

static void atu_h2_flush(atu_conn_t *c)
{
    const uint8_t *p;
    ssize_t n;
    while ((n = nghttp2_session_mem_send(c->ng, &p)) > 0)
        bufferevent_write(c->bev, p, (size_t)n);
}

static void atu_readcb(struct bufferevent *bev, void *arg)
{
    atu_conn_t *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    if (c->s->kind == ATU_SRV_H2) {
        size_t n = evbuffer_get_length(in);
        const uint8_t *p = evbuffer_pullup(in, (ssize_t)n);
        if (nghttp2_session_mem_recv(c->ng, p, n) < 0) {
            atu_conn_free(c);
            return;
        }
        evbuffer_drain(in, n);
        atu_h2_flush(c);
        return;
    }
    for (;;) {
        size_t n = evbuffer_get_length(in);
        if (n < FRAME_HEADER_LEN)
            return;
        uint8_t hb[FRAME_HEADER_LEN];
        evbuffer_copyout(in, hb, sizeof hb);
        frame_header_t h;
        frame_header_read(hb, &h);
        if (n < FRAME_HEADER_LEN + (size_t)h.payload_len)
            return;
        size_t need = FRAME_HEADER_LEN + (size_t)h.payload_len;
        const uint8_t *p = evbuffer_pullup(in, (ssize_t)need);
        frame_t f;
        size_t used;
        if (frame_parse(&c->fp, p, need, &f, &used) != FRAME_OK) {
            atu_conn_free(c);
            return;
        }
        int ra = 0;
        int v = atu_verdict(c->s, &ra);
        buf_t out;
        buf_init(&out, 0, 1024);
        if (v) {
            frame_build_nack(&out, f.hdr.id, (uint16_t)v, "scripted", 8);
        } else {
            frame_record_iter_t it;
            frame_record_t rec;
            frame_records(&f, &it);
            pthread_mutex_lock(&c->s->mu);
            while (frame_record_next(&it, &rec)) {
                codec_slice_t sv;
                if (frame_record_header(&rec, "@seq", &sv)) {
                    char tmp[32] = {0};
                    memcpy(tmp, sv.ptr, sv.len < 31 ? sv.len : 31);
                    atu_record(c->s, strtoull(tmp, NULL, 10));
                }
            }
            pthread_mutex_unlock(&c->s->mu);
            if (f.hdr.flags & FRAME_FLAG_ACK_REQUESTED)
                frame_build_ack(&out, f.hdr.id);
        }
        if (out.len)
            bufferevent_write(bev, out.data, out.len);
        buf_free(&out);
        evbuffer_drain(in, used);
    }
}

static void atu_eventcb(struct bufferevent *bev, short what, void *arg)
{
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
        atu_conn_free(arg);
}

static void atu_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int sl,
                       void *arg)
{
    atu_srv_t *s = arg;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    atu_conn_t *c = calloc(1, sizeof *c);
    c->s = s;
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    if (s->ssl)
        c->bev = bufferevent_openssl_socket_new(s->base, fd, SSL_new(s->ssl),
                                                BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    else
        c->bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (s->kind == ATU_SRV_H2) {
        nghttp2_session_callbacks *cb;
        nghttp2_session_callbacks_new(&cb);
        nghttp2_session_callbacks_set_on_begin_headers_callback(cb, atu_h2_begin);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, atu_h2_data);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cb, atu_h2_frame);
        nghttp2_session_callbacks_set_on_stream_close_callback(cb, atu_h2_close);
        nghttp2_session_server_new(&c->ng, cb, c);
        nghttp2_session_callbacks_del(cb);
        nghttp2_settings_entry iv[1] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1000}};
        nghttp2_submit_settings(c->ng, NGHTTP2_FLAG_NONE, iv, 1);
        atu_h2_flush(c);
    } else {
        frame_parser_init(&c->fp, 0, true);
    }
    bufferevent_setcb(c->bev, atu_readcb, NULL, atu_eventcb, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

static void atu_srv_close_all(evutil_socket_t fd, short w, void *arg)
{
    atu_srv_t *s = arg;
    evconnlistener_free(s->lis);
    s->lis = NULL;
    while (s->conns) {
        evutil_socket_t cfd = bufferevent_getfd(s->conns->bev);
        if (cfd >= 0)
            shutdown(cfd, SHUT_RDWR); /* the peer sees the close now, not at the deferred free */
        atu_conn_free(s->conns);
    }
    struct timeval tv = {0, 50000};
    event_base_loopexit(s->base, &tv);
}

static void *atu_srv_thread(void *arg)
{
    atu_srv_t *s = arg;
    event_base_dispatch(s->base);
    return NULL;
}

atu_srv_t *atu_srv_start(atu_srv_kind_t kind, int port, SSL_CTX *ssl)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, (void (*)(void))evthread_use_pthreads);
    atu_srv_t *s = calloc(1, sizeof *s);
    s->kind = kind;
    s->ssl = ssl;
    s->seen = calloc(ATU_SEQ_MAX / 8, 1);
    pthread_mutex_init(&s->mu, NULL);
    s->base = event_base_new();
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    s->lis = evconnlistener_new_bind(
        s->base, atu_accept, s, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
        64, (struct sockaddr *)&a, sizeof a);
    if (!s->lis) {
        fprintf(stderr, "atu_srv_start: cannot listen on %d: %s\n", port, strerror(errno));
        event_base_free(s->base);
        free(s->seen);
        free(s);
        return NULL;
    }
    /* Keeps the loop alive while no connection exists. */
    s->keep = event_new(s->base, -1, EV_PERSIST, atu_tick, NULL);
    struct timeval tv = {0, 20000};
    event_add(s->keep, &tv);
    pthread_create(&s->th, NULL, atu_srv_thread, s);
    return s;
}

void atu_srv_stop(atu_srv_t *s)
{
    if (!s)
        return;
    /* Close the listener and every connection on the server's own thread (bufferevents
     * finish closing in deferred callbacks), then let the loop end. */
    event_base_once(s->base, -1, EV_TIMEOUT, atu_srv_close_all, s, NULL);
    pthread_join(s->th, NULL);
    event_free(s->keep);
    event_base_free(s->base);
    pthread_mutex_destroy(&s->mu);
    free(s->seen);
    free(s);
}

void atu_srv_script(atu_srv_t *s, int status, long count, int retry_after_s)
{
    pthread_mutex_lock(&s->mu);
    s->status = status;
    s->count = count;
    s->retry_after = retry_after_s;
    pthread_mutex_unlock(&s->mu);
}

#define ATU_GET(field)                                                                             \
    size_t v;                                                                                      \
    pthread_mutex_lock(&s->mu);                                                                    \
    v = s->field;                                                                                  \
    pthread_mutex_unlock(&s->mu);                                                                  \
    return v

size_t atu_srv_total(atu_srv_t *s)
{
    ATU_GET(total);
}
size_t atu_srv_distinct(atu_srv_t *s)
{
    ATU_GET(distinct);
}
size_t atu_srv_rejected(atu_srv_t *s)
{
    ATU_GET(rejected);
}

bool atu_srv_has_range(atu_srv_t *s, uint64_t from, uint64_t to)
{
    bool ok = true;
    pthread_mutex_lock(&s->mu);
    for (uint64_t i = from; i < to && ok; i++)
        ok = i < ATU_SEQ_MAX && (s->seen[i / 8] & (1u << (i % 8)));
    pthread_mutex_unlock(&s->mu);
    return ok;
}

bool atu_srv_has(atu_srv_t *s, uint64_t seq)
{
    return atu_srv_has_range(s, seq, seq + 1);
}

/* ---- Kafka side and the daemon ---- */

int atu_produce_copies(const char *topic, uint64_t first, size_t n, size_t body_size)
{
    rd_kafka_t *p = ktu_producer_new(NULL, 0);
    if (!p)
        return -1;
    char *body = malloc(body_size + 64);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        uint64_t seq = first + i;
        char key[32], ts[32], sq[32];
        snprintf(key, sizeof key, "corr-%llu", (unsigned long long)(seq % 64));
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        snprintf(ts, sizeof ts, "%lld",
                 (long long)now.tv_sec * 1000000 + (long long)now.tv_nsec / 1000);
        snprintf(sq, sizeof sq, "%llu", (unsigned long long)seq);
        int len = snprintf(body, body_size + 64, "{\"supi\":\"imsi-00101%010llu\",\"pad\":\"",
                           (unsigned long long)seq);
        while ((size_t)len < body_size - 2 && (size_t)len < body_size + 60)
            body[len++] = 'x';
        body[len++] = '"';
        body[len++] = '}';
        const char *h[] = {"@correlation-id",
                           key,
                           "@timestamp-us",
                           ts,
                           "@message-type",
                           "request",
                           "@trigger-point",
                           "rx-request",
                           "@nf-type",
                           "SCP",
                           "@seq",
                           sq,
                           ":method",
                           "POST",
                           ":path",
                           "/nudm-sdm/v2/imsi-001010000000001/am-data",
                           "content-type",
                           "application/json"};
        rc = ktu_produce(p, topic, -1, key, strlen(key), body, (size_t)len, h, 9);
    }
    if (rc == 0)
        rc = ktu_flush(p, 30000);
    rd_kafka_destroy(p);
    free(body);
    return rc;
}

bool atu_group_caught_up(const char *topic, const char *group, int timeout_ms)
{
    char errstr[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", ktu_brokers(), errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "group.id", group, errstr, sizeof errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    if (!rk)
        return false;
    const rd_kafka_metadata_t *md = NULL;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    bool ok = false;
    uint64_t end = atu_now_ms() + (uint64_t)timeout_ms;
    if (rd_kafka_metadata(rk, 0, rkt, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR &&
        md->topic_cnt == 1) {
        int np = md->topics[0].partition_cnt;
        do {
            rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(np);
            for (int i = 0; i < np; i++)
                rd_kafka_topic_partition_list_add(l, topic, i);
            ok = rd_kafka_committed(rk, l, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR;
            for (int i = 0; ok && i < np; i++) {
                int64_t lo, hi;
                if (rd_kafka_query_watermark_offsets(rk, topic, i, &lo, &hi, 5000) != 0)
                    ok = false;
                else if (hi > 0 && l->elems[i].offset != hi)
                    ok = false;
            }
            rd_kafka_topic_partition_list_destroy(l);
            if (!ok)
                usleep(200000);
        } while (!ok && atu_now_ms() < end);
    }
    if (md)
        rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    return ok;
}

pid_t atu_start_adapter(const char *feeds_file, int metrics_port, const char *log_path,
                        const char *const *extra)
{
    char bin[600], port[16], boot[300], ff[600];
    snprintf(bin, sizeof bin, "%s/adapter/ndd-adapter", NDD_BINARY_DIR);
    snprintf(port, sizeof port, "%d", metrics_port);
    snprintf(boot, sizeof boot, "%s", ktu_brokers());
    snprintf(ff, sizeof ff, "%s", feeds_file);
    char *argv[64];
    size_t n = 0;
    argv[n++] = bin;
    argv[n++] = "--bootstrap";
    argv[n++] = boot;
    argv[n++] = "--feeds-file";
    argv[n++] = ff;
    argv[n++] = "--http.port";
    argv[n++] = port;
    bool watch_given = false;
    for (size_t i = 0; extra && extra[i]; i++)
        watch_given |= !strncmp(extra[i], "--feeds-watch", 13);
    if (!watch_given) {
        argv[n++] = "--feeds-watch";
        argv[n++] = "200ms";
    }
    argv[n++] = "--drain-timeout";
    argv[n++] = "3s";
    argv[n++] = "--kafka.session.timeout.ms=6000";
    argv[n++] = "--kafka.heartbeat.interval.ms=500";
    argv[n++] = "--kafka.auto.commit.interval.ms=200";
    for (size_t i = 0; extra && extra[i] && n < 62; i++)
        argv[n++] = (char *)extra[i];
    argv[n] = NULL;
    pid_t pid = atu_spawn(argv, log_path);
    if (pid > 0 && !atu_wait_port(metrics_port, 10000)) {
        atu_stop(pid, SIGKILL);
        return -1;
    }
    return pid;
}

int atu_write_file(const char *path, const char *text)
{
    char tmp[700];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    fputs(text, f);
    if (fclose(f) != 0)
        return -1;
    return rename(tmp, path);
}

size_t atu_count_in_file(const char *path, const char *needle)
{
    char *s = atu_read_file(path);
    if (!s)
        return 0;
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    free(s);
    return n;
}
