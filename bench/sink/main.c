/* ndd-sink: options, listeners, the metrics/control port, signals, the final summary.
 * Usage: ndd-sink --help; documentation: docs/encodings.md ("ndd-sink"). */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <openssl/err.h>

#include "httpd.h"
#include "log.h"
#include "metrics.h"
#include "sink.h"
#include "tls.h"

/* ---- connections and counting ---- */

void sink_conn_add(sink_t *s, sink_conn_t *c)
{
    c->prev = NULL;
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->nconns++;
    s->stats.t[c->transport].connections_total++;
    s->stats.t[c->transport].connections_open++;
}

void sink_conn_remove(sink_t *s, sink_conn_t *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else if (s->conns == c)
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
    s->nconns--;
    s->stats.t[c->transport].connections_open--;
}

struct bufferevent *sink_conn_bev_new(sink_t *s, int fd, SSL_CTX *ctx)
{
    if (!ctx)
        return bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
    char err[256];
    SSL *ssl = tls_server_ssl_new(ctx, err, sizeof err);
    struct bufferevent *bev =
        ssl ? bufferevent_openssl_socket_new(s->base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                             BEV_OPT_CLOSE_ON_FREE)
            : NULL;
    if (!bev && ssl)
        SSL_free(ssl);
    return bev;
}

void sink_conn_start(sink_conn_t *c, bufferevent_data_cb readcb, bufferevent_data_cb writecb,
                     bufferevent_event_cb eventcb, void *arg, size_t out_high)
{
    bufferevent_setcb(c->bev, readcb, writecb, eventcb, arg);
    bufferevent_setwatermark(c->bev, EV_WRITE, out_high / 2, 0);
    /* libevent reads at most 16 KiB per wake-up by default: four or five 3.4 KB copies, so a
     * burst of requests got its answers in many small writes, each waking the client. A read
     * of what a burst holds answers it in one write, as servers with larger receive buffers
     * (nginx's 256 KiB) do. */
    bufferevent_set_max_single_read(c->bev, SINK_MAX_SINGLE_READ);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    if (c->transport == SINK_H2TLS || c->transport == SINK_TLS) {
        struct timeval hs = {SINK_TLS_HANDSHAKE_S, 0};
        bufferevent_set_timeouts(c->bev, &hs, NULL);
    }
}

bool sink_conn_log_tls_error(const sink_conn_t *c, struct bufferevent *bev)
{
    unsigned long e = bufferevent_get_openssl_error(bev);
    if (!e)
        return false;
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING)
        log_debug("sink: %s connection %s: TLS EOF without close_notify",
                  sink_transport_name(c->transport), c->peer);
    else
        log_warn("sink: %s connection %s: TLS error: %s", sink_transport_name(c->transport),
                 c->peer, buf);
    return true;
}

static void close_all_connections(sink_t *s)
{
    while (s->conns)
        s->conns->close(s->conns);
}

void sink_count_record(sink_t *s, sink_transport_t t, const sink_record_info_t *info)
{
    sink_stats_t *st = &s->stats;
    int64_t now = sink_now_us();
    st->t[t].records++;
    if (info->has_seq)
        sink_seqwin_add(&st->seq, info->seq);
    else
        st->unsequenced++;
    if (info->has_ts) {
        int64_t lat = now - info->ts_us;
        sink_latency_add(&st->lat, lat);
        if (s->m_latency)
            metrics_histogram_observe(s->m_latency, lat > 0 ? (double)lat / 1e6 : 0.0);
    }
    double now_s = (double)now / 1e6;
    if (st->first_s == 0)
        st->first_s = now_s;
    st->last_s = now_s;
}

void sink_check_done(sink_t *s)
{
    if (s->cfg.exit_on_expect && s->stats.expect && s->stats.seq.unique >= s->stats.expect &&
        !s->stopping) {
        log_info("sink: all %llu expected records arrived; stopping",
                 (unsigned long long)s->stats.expect);
        s->stopping = true;
        event_base_loopexit(s->base, NULL);
    }
}

/* ---- listeners ---- */

static void accept_cb(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa,
                      int salen, void *arg)
{
    sink_listener_t *l = arg;
    sink_t *s = l->sink;
    char peer[64] = "?";
    char host[INET6_ADDRSTRLEN] = "?";
    if (sa->sa_family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        snprintf(peer, sizeof peer, "%s:%u", host, ntohs(in->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        snprintf(peer, sizeof peer, "[%s]:%u", host, ntohs(in6->sin6_port));
    }
    if (s->nconns >= s->cfg.max_connections) {
        log_warn("sink: %zu connections open (--max-connections); refusing %s on %s port %u",
                 s->nconns, peer, sink_transport_name(l->transport), l->port);
        evutil_closesocket(fd);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (l->transport == SINK_H2 || l->transport == SINK_H2TLS)
        sink_h2_accept(s, l->transport, fd, peer);
    else
        sink_frame_accept(s, l->transport, fd, peer);
}

static int listen_one(sink_t *s, sink_transport_t t, uint16_t port)
{
    sink_listener_t *l = &s->listeners[t];
    struct sockaddr_storage ss;
    int sslen;
    char addr[128];
    memset(&ss, 0, sizeof ss);
    snprintf(addr, sizeof addr, strchr(s->cfg.bind_addr, ':') ? "[%s]:%u" : "%s:%u",
             s->cfg.bind_addr, port);
    struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, s->cfg.bind_addr, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons(port);
        sslen = sizeof *in4;
    } else if (inet_pton(AF_INET6, s->cfg.bind_addr, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(port);
        sslen = sizeof *in6;
    } else {
        log_error("sink: bad bind address %s (an IPv4 or IPv6 literal)", s->cfg.bind_addr);
        return -1;
    }
    l->sink = s;
    l->transport = t;
    l->lev =
        evconnlistener_new_bind(s->base, accept_cb, l, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE,
                                1024, (struct sockaddr *)&ss, sslen);
    if (!l->lev) {
        log_error("sink: cannot listen for %s on %s: %s", sink_transport_name(t), addr,
                  strerror(errno));
        return -1;
    }
    struct sockaddr_storage bound;
    socklen_t blen = sizeof bound;
    getsockname(evconnlistener_get_fd(l->lev), (struct sockaddr *)&bound, &blen);
    l->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                : ((struct sockaddr_in *)&bound)->sin_port);
    return 0;
}

static void close_listeners(sink_t *s)
{
    for (int t = 0; t < SINK__TRANSPORTS; t++) {
        if (s->listeners[t].lev) {
            evconnlistener_free(s->listeners[t].lev);
            s->listeners[t].lev = NULL;
        }
    }
}

static void refuse_end_cb(evutil_socket_t fd, short what, void *arg)
{
    sink_t *s = arg;
    for (int t = 0; t < SINK__TRANSPORTS; t++) {
        if (s->cfg.port[t] >= 0 && !s->listeners[t].lev &&
            listen_one(s, (sink_transport_t)t, s->listeners[t].port) != 0)
            log_error("sink: cannot listen again for %s after the refuse period",
                      sink_transport_name((sink_transport_t)t));
    }
    log_info("sink: fault injection: listening again");
}

static void refuse_for(sink_t *s, double seconds)
{
    log_info("sink: fault injection: refusing connections for %.0f s", seconds);
    close_listeners(s);
    close_all_connections(s);
    struct timeval tv = {(time_t)seconds, 0};
    event_add(s->refuse_timer, &tv);
}

/* ---- metrics, summary, control ---- */

static double read_u64(void *p)
{
    return (double)*(const uint64_t *)p;
}

static double read_gaps(void *p)
{
    return (double)sink_seqwin_gaps((const sink_seqwin_t *)p);
}

static double read_quantile(void *p, double q)
{
    return sink_latency_quantile_us((const sink_latency_t *)p, q) / 1e6;
}
static double read_p50(void *p)
{
    return read_quantile(p, 0.5);
}
static double read_p99(void *p)
{
    return read_quantile(p, 0.99);
}

static void counter_cb(metrics_family_t *f, const char *label, metrics_value_fn fn, void *arg)
{
    if (!f)
        return;
    struct metrics_child *c = label ? metrics_counter_labels(f, label) : metrics_counter_labels(f);
    if (c)
        metrics_child_set_callback(c, fn, arg);
}

static void gauge_cb(metrics_family_t *f, const char *label, metrics_value_fn fn, void *arg)
{
    if (!f)
        return;
    struct metrics_child *c = label ? metrics_gauge_labels(f, label) : metrics_gauge_labels(f);
    if (c)
        metrics_child_set_callback(c, fn, arg);
}

static void setup_metrics(sink_t *s)
{
    metrics_registry_t *r = s->reg;
    metrics_family_t *rec = metrics_counter_new(r, "ndd_sink_messages_received_total",
                                                "Records accepted (acknowledged)", "transport");
    metrics_family_t *req = metrics_counter_new(
        r, "ndd_sink_requests_total", "HTTP/2 requests or DATA frames received", "transport");
    metrics_family_t *rej =
        metrics_counter_new(r, "ndd_sink_requests_rejected_total",
                            "Requests or frames answered with a fault status", "transport");
    metrics_family_t *byt = metrics_counter_new(r, "ndd_sink_received_bytes_total",
                                                "Body or frame payload bytes", "transport");
    metrics_family_t *perr = metrics_counter_new(r, "ndd_sink_protocol_errors_total",
                                                 "Malformed requests or frames", "transport");
    metrics_family_t *conn =
        metrics_gauge_new(r, "ndd_sink_connections", "Open data connections", "transport");
    for (int t = 0; t < SINK__TRANSPORTS; t++) {
        const char *name = sink_transport_name((sink_transport_t)t);
        sink_tstats_t *ts = &s->stats.t[t];
        counter_cb(rec, name, read_u64, &ts->records);
        counter_cb(req, name, read_u64, &ts->requests);
        counter_cb(rej, name, read_u64, &ts->rejected);
        counter_cb(byt, name, read_u64, &ts->bytes);
        counter_cb(perr, name, read_u64, &ts->protocol_errors);
        gauge_cb(conn, name, read_u64, &ts->connections_open);
    }
    counter_cb(
        metrics_counter_new(r, "ndd_sink_unique_total", "Distinct sequence numbers received", NULL),
        NULL, read_u64, &s->stats.seq.unique);
    counter_cb(metrics_counter_new(r, "ndd_sink_messages_duplicated_total",
                                   "Records whose sequence number was already received", NULL),
               NULL, read_u64, &s->stats.seq.duplicates);
    counter_cb(metrics_counter_new(r, "ndd_sink_messages_unsequenced_total",
                                   "Records without a sequence number", NULL),
               NULL, read_u64, &s->stats.unsequenced);
    counter_cb(metrics_counter_new(r, "ndd_sink_out_of_window_total",
                                   "Sequence numbers below the tracking window", NULL),
               NULL, read_u64, &s->stats.seq.out_of_window);
    gauge_cb(metrics_gauge_new(r, "ndd_sink_gaps",
                               "Sequence numbers missing between the lowest and highest seen",
                               NULL),
             NULL, read_gaps, &s->stats.seq);
    gauge_cb(metrics_gauge_new(r, "ndd_sink_e2e_latency_p50_seconds",
                               "Median end-to-end latency (@timestamp-us to arrival)", NULL),
             NULL, read_p50, &s->stats.lat);
    gauge_cb(metrics_gauge_new(r, "ndd_sink_e2e_latency_p99_seconds",
                               "99th percentile end-to-end latency", NULL),
             NULL, read_p99, &s->stats.lat);
    metrics_family_t *h = metrics_histogram_new(
        r, "ndd_sink_e2e_latency_seconds", "End-to-end latency, @timestamp-us to arrival", NULL,
        metrics_latency_buckets_seconds, metrics_latency_buckets_seconds_n);
    s->m_latency = h ? metrics_histogram_labels(h) : NULL;
}

static void serve_summary(httpd_req_t *req, void *arg)
{
    sink_t *s = arg;
    buf_t out;
    buf_init(&out, 0, 1 << 16);
    if (sink_stats_summary(&s->stats, &out) != 0) {
        httpd_reply_error(req, 500, "summary too large");
    } else {
        buf_append_u8(&out, 0);
        httpd_reply_json(req, 200, (const char *)out.data);
    }
    buf_free(&out);
}

static void serve_control(httpd_req_t *req, void *arg)
{
    sink_t *s = arg;
    double now = sink_now_s();
    if (strcmp(httpd_req_method(req), "POST") == 0) {
        size_t len;
        const char *body = httpd_req_body(req, &len);
        double refuse_s;
        bool close_now;
        char err[256];
        if (sink_fault_apply_json(&s->fault, body, len, now, &refuse_s, &close_now, err,
                                  sizeof err) != 0) {
            httpd_reply_error(req, 400, "%s", err);
            return;
        }
        log_info("sink: control from %s: %.*s", httpd_req_peer(req), (int)(len > 200 ? 200 : len),
                 body);
        if (close_now) {
            log_info("sink: fault injection: closing %zu data connections", s->nconns);
            close_all_connections(s);
        }
        if (refuse_s > 0)
            refuse_for(s, refuse_s);
    }
    buf_t out;
    buf_init(&out, 0, 4096);
    sink_fault_to_json(&s->fault, now, &out);
    buf_append_u8(&out, 0);
    httpd_reply_json(req, 200, (const char *)out.data);
    buf_free(&out);
}

/* ---- main ---- */

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
    sink_t *s = arg;
    log_info("sink: signal %d: stopping", (int)sig);
    s->stopping = true;
    event_base_loopexit(s->base, NULL);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: ndd-sink [options]\n"
               "listeners (each off unless given; 0 = ephemeral port):\n"
               "  --h2-port N          HTTP/2 cleartext (prior knowledge)\n"
               "  --h2tls-port N       HTTP/2 over TLS (ALPN h2)\n"
               "  --tcp-port N         binary frames over TCP\n"
               "  --tls-port N         binary frames over TLS\n"
               "  --metrics-port N     /metrics /summary /control /healthz (default 9103, -1 off)\n"
               "  --bind ADDR          listen address (default 127.0.0.1)\n"
               "TLS:\n"
               "  --cert FILE --key FILE [--key-password-file FILE]\n"
               "  --ca FILE --require-client-cert   (mTLS)\n"
               "measurement:\n"
               "  --expect N           records (distinct @seq) expected; summary says missing\n"
               "  --exit-on-expect     stop once N distinct records arrived\n"
               "  --summary-file FILE  also write the final summary JSON there\n"
               "  --seq-window BITS    duplicate/gap window (default 16777216)\n"
               "limits:\n"
               "  --max-connections N (1024)  --max-body BYTES (16777216)  --max-streams N (1000)\n"
               "faults at start (same as POST /control):\n"
               "  --fault-status N [--fault-count K | --fault-duration-ms D] [--retry-after S]\n"
               "  --delay-ms D\n"
               "  --log.level debug|info|warn|error\n");
}

static int parse_num(const char *opt, const char *v, long long lo, long long hi, long long *out)
{
    char *e;
    errno = 0;
    long long n = strtoll(v, &e, 10);
    if (errno || *e || e == v || n < lo || n > hi) {
        fprintf(stderr, "ndd-sink: --%s: \"%s\" is not a number in [%lld, %lld]\n", opt, v, lo, hi);
        return -1;
    }
    *out = n;
    return 0;
}

int main(int argc, char **argv)
{
    static sink_t sink;
    sink_t *s = &sink;
    sink_config_t *c = &s->cfg;
    c->bind_addr = "127.0.0.1";
    for (int t = 0; t < SINK__TRANSPORTS; t++)
        c->port[t] = -1;
    c->metrics_port = 9103;
    c->max_connections = 1024;
    c->max_body = 16u << 20;
    c->max_streams = 1000;
    c->seq_window_bits = 1u << 24;
    long long fault_status = 0, fault_count = 0, fault_dur = 0, retry_after = -1, delay = 0;
    log_level_t level = LOG_LEVEL_INFO;

    enum {
        O_H2 = 256,
        O_H2TLS,
        O_TCP,
        O_TLS,
        O_METRICS,
        O_BIND,
        O_CERT,
        O_KEY,
        O_KEYPW,
        O_CA,
        O_MTLS,
        O_EXPECT,
        O_EXIT,
        O_SUMMARY,
        O_WINDOW,
        O_MAXCONN,
        O_MAXBODY,
        O_MAXSTREAMS,
        O_FSTATUS,
        O_FCOUNT,
        O_FDUR,
        O_RA,
        O_DELAY,
        O_LOG,
        O_HELP
    };
    static const struct option opts[] = {
        {"h2-port", required_argument, 0, O_H2},
        {"h2tls-port", required_argument, 0, O_H2TLS},
        {"tcp-port", required_argument, 0, O_TCP},
        {"tls-port", required_argument, 0, O_TLS},
        {"metrics-port", required_argument, 0, O_METRICS},
        {"bind", required_argument, 0, O_BIND},
        {"cert", required_argument, 0, O_CERT},
        {"key", required_argument, 0, O_KEY},
        {"key-password-file", required_argument, 0, O_KEYPW},
        {"ca", required_argument, 0, O_CA},
        {"require-client-cert", no_argument, 0, O_MTLS},
        {"expect", required_argument, 0, O_EXPECT},
        {"exit-on-expect", no_argument, 0, O_EXIT},
        {"summary-file", required_argument, 0, O_SUMMARY},
        {"seq-window", required_argument, 0, O_WINDOW},
        {"max-connections", required_argument, 0, O_MAXCONN},
        {"max-body", required_argument, 0, O_MAXBODY},
        {"max-streams", required_argument, 0, O_MAXSTREAMS},
        {"fault-status", required_argument, 0, O_FSTATUS},
        {"fault-count", required_argument, 0, O_FCOUNT},
        {"fault-duration-ms", required_argument, 0, O_FDUR},
        {"retry-after", required_argument, 0, O_RA},
        {"delay-ms", required_argument, 0, O_DELAY},
        {"log.level", required_argument, 0, O_LOG},
        {"help", no_argument, 0, O_HELP},
        {0, 0, 0, 0},
    };
    int o;
    long long n;
    while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        const char *name = o >= 256 && o <= O_HELP ? opts[o - 256].name : "?";
        switch (o) {
        case O_H2:
        case O_H2TLS:
        case O_TCP:
        case O_TLS:
            if (parse_num(name, optarg, 0, 65535, &n))
                return 2;
            c->port[o - O_H2] = (int)n;
            break;
        case O_METRICS:
            if (parse_num(name, optarg, -1, 65535, &n))
                return 2;
            c->metrics_port = (int)n;
            break;
        case O_BIND:
            c->bind_addr = optarg;
            break;
        case O_CERT:
            c->cert_file = optarg;
            break;
        case O_KEY:
            c->key_file = optarg;
            break;
        case O_KEYPW:
            c->key_password_file = optarg;
            break;
        case O_CA:
            c->ca_file = optarg;
            break;
        case O_MTLS:
            c->require_client_cert = true;
            break;
        case O_EXPECT:
            if (parse_num(name, optarg, 0, 1LL << 50, &n))
                return 2;
            c->expect = (uint64_t)n;
            break;
        case O_EXIT:
            c->exit_on_expect = true;
            break;
        case O_SUMMARY:
            c->summary_file = optarg;
            break;
        case O_WINDOW:
            if (parse_num(name, optarg, 64, 1LL << 34, &n))
                return 2;
            c->seq_window_bits = (size_t)n;
            break;
        case O_MAXCONN:
            if (parse_num(name, optarg, 1, 1000000, &n))
                return 2;
            c->max_connections = (size_t)n;
            break;
        case O_MAXBODY:
            if (parse_num(name, optarg, 1024, 1LL << 30, &n))
                return 2;
            c->max_body = (size_t)n;
            break;
        case O_MAXSTREAMS:
            if (parse_num(name, optarg, 1, 100000, &n))
                return 2;
            c->max_streams = (uint32_t)n;
            break;
        case O_FSTATUS:
            if (parse_num(name, optarg, 100, 599, &fault_status))
                return 2;
            break;
        case O_FCOUNT:
            if (parse_num(name, optarg, 1, 1000000000LL, &fault_count))
                return 2;
            break;
        case O_FDUR:
            if (parse_num(name, optarg, 1, 86400000LL, &fault_dur))
                return 2;
            break;
        case O_RA:
            if (parse_num(name, optarg, 0, 86400, &retry_after))
                return 2;
            break;
        case O_DELAY:
            if (parse_num(name, optarg, 0, 600000, &delay))
                return 2;
            break;
        case O_LOG:
            if (log_level_parse(optarg, &level) != 0) {
                fprintf(stderr, "ndd-sink: --log.level: unknown level \"%s\"\n", optarg);
                return 2;
            }
            break;
        case 'h':
        case O_HELP:
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ndd-sink: unexpected argument \"%s\"\n", argv[optind]);
        return 2;
    }
    log_setup("ndd-sink", level, 0);
    bool any = false;
    for (int t = 0; t < SINK__TRANSPORTS; t++)
        any |= c->port[t] >= 0;
    if (!any) {
        fprintf(stderr, "ndd-sink: no listener: give --h2-port, --h2tls-port, --tcp-port "
                        "and/or --tls-port\n");
        return 2;
    }
    bool need_tls = c->port[SINK_H2TLS] >= 0 || c->port[SINK_TLS] >= 0;
    if (need_tls && (!c->cert_file || !c->key_file)) {
        fprintf(stderr, "ndd-sink: TLS listeners need --cert and --key\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);

    if (sink_stats_init(&s->stats, c->seq_window_bits, c->expect) != 0) {
        fprintf(stderr, "ndd-sink: cannot allocate the sequence window\n");
        return 1;
    }
    /* Faults given as flags go through the control document parser: one set of rules. */
    if (fault_status || delay) {
        char doc[256], err[256];
        int len = snprintf(doc, sizeof doc, "{");
        if (fault_status)
            len += snprintf(doc + len, sizeof doc - (size_t)len, "\"status\":%lld,", fault_status);
        if (delay)
            len += snprintf(doc + len, sizeof doc - (size_t)len, "\"delay_ms\":%lld,", delay);
        if (fault_count)
            len += snprintf(doc + len, sizeof doc - (size_t)len, "\"count\":%lld,", fault_count);
        if (fault_dur)
            len +=
                snprintf(doc + len, sizeof doc - (size_t)len, "\"duration_ms\":%lld,", fault_dur);
        if (retry_after >= 0)
            len +=
                snprintf(doc + len, sizeof doc - (size_t)len, "\"retry_after\":%lld,", retry_after);
        doc[len - 1] = '}';
        double refuse;
        bool close_now;
        if (sink_fault_apply_json(&s->fault, doc, (size_t)len, sink_now_s(), &refuse, &close_now,
                                  err, sizeof err) != 0) {
            fprintf(stderr, "ndd-sink: fault flags: %s\n", err);
            return 2;
        }
    }

    s->base = event_base_new();
    if (!s->base) {
        fprintf(stderr, "ndd-sink: cannot create the event loop\n");
        return 1;
    }
    if (need_tls) {
        char err[512];
        tls_config_t tc = {.cert_file = c->cert_file,
                           .key_file = c->key_file,
                           .key_password_file = c->key_password_file,
                           .ca_file = c->ca_file,
                           .require_client_cert = c->require_client_cert};
        s->ssl_frame = tls_server_ctx_new(&tc, err, sizeof err);
        tc.alpn = "h2";
        s->ssl_h2 = s->ssl_frame ? tls_server_ctx_new(&tc, err, sizeof err) : NULL;
        if (!s->ssl_h2) {
            fprintf(stderr, "ndd-sink: TLS: %s\n", err);
            return 1;
        }
    }
    s->refuse_timer = evtimer_new(s->base, refuse_end_cb, s);
    for (int t = 0; t < SINK__TRANSPORTS; t++) {
        if (c->port[t] >= 0 && listen_one(s, (sink_transport_t)t, (uint16_t)c->port[t]) != 0)
            return 1;
    }

    s->reg = metrics_registry_new();
    if (!s->reg) {
        fprintf(stderr, "ndd-sink: cannot create the metrics registry\n");
        return 1;
    }
    setup_metrics(s);
    httpd_t *h = NULL;
    if (c->metrics_port >= 0) {
        char err[256];
        h = httpd_new(s->base, c->bind_addr, (uint16_t)c->metrics_port, err, sizeof err);
        if (!h) {
            fprintf(stderr, "ndd-sink: metrics port: %s\n", err);
            return 1;
        }
        httpd_set_metrics(h, s->reg);
        httpd_route(h, "GET", "/summary", serve_summary, s);
        httpd_route(h, "GET", "/control", serve_control, s);
        httpd_route(h, "POST", "/control", serve_control, s);
        httpd_set_ready(h, true);
    }
    struct event *sigterm = evsignal_new(s->base, SIGTERM, signal_cb, s);
    struct event *sigint = evsignal_new(s->base, SIGINT, signal_cb, s);
    event_add(sigterm, NULL);
    event_add(sigint, NULL);

    char ports[256];
    int pl = 0;
    ports[0] = '\0';
    for (int t = 0; t < SINK__TRANSPORTS; t++)
        if (s->listeners[t].lev)
            pl += snprintf(ports + pl, sizeof ports - (size_t)pl, " %s=%u",
                           sink_transport_name((sink_transport_t)t), s->listeners[t].port);
    if (h)
        snprintf(ports + pl, sizeof ports - (size_t)pl, " metrics=%u", httpd_port(h));
    log_info("sink: listening on %s:%s", c->bind_addr, ports);

    event_base_dispatch(s->base);

    buf_t out;
    buf_init(&out, 0, 1 << 16);
    sink_stats_summary(&s->stats, &out);
    buf_append_u8(&out, '\n');
    fwrite(out.data, 1, out.len, stdout);
    fflush(stdout);
    int rc = 0;
    if (c->summary_file) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", c->summary_file);
        FILE *f = fopen(tmp, "w");
        /* Write then rename: a reader never sees half a summary. */
        if (!f || fwrite(out.data, 1, out.len, f) != out.len || fclose(f) != 0 ||
            rename(tmp, c->summary_file) != 0) {
            log_error("sink: cannot write the summary to %s: %s", c->summary_file, strerror(errno));
            rc = 1;
        }
    }
    buf_free(&out);

    close_all_connections(s);
    close_listeners(s);
    if (h)
        httpd_free(h);
    event_free(sigterm);
    event_free(sigint);
    event_free(s->refuse_timer);
    event_base_free(s->base);
    metrics_registry_free(s->reg);
    tls_ctx_free(s->ssl_h2);
    tls_ctx_free(s->ssl_frame);
    sink_stats_free(&s->stats);
    return rc;
}
