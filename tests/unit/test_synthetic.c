/* The synthetic packet builder (services/copy/synthetic.h): checksums, sequence and
 * acknowledgement numbers, segmentation at the MSS, the HTTP/2 framing (HEADERS +
 * CONTINUATION, DATA at 16,384, END_STREAM, stream ids), an HPACK round trip through
 * nghttp2_hd_inflate, the mapping table, the LRU bound with its FIN exchange, and — when
 * Debian's tshark is installed — a capture tshark decodes without a malformed packet, an
 * expert error or a TCP analysis flag, showing the copies' method, path, status and body. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "encoding.h"
#include "frame.h"
#include "synthetic.h"

typedef struct tmsg {
    codec_msg_t m;
    char key[64], ts[24], src[64], dst[64];
} tmsg_t;

static void hdr(codec_msg_t *m, const char *n, const char *v)
{
    m->http[m->n_http].name = (codec_slice_t){n, strlen(n)};
    m->http[m->n_http].value = (codec_slice_t){v, strlen(v)};
    m->n_http++;
}

/* A copy: request (status 0) or response, addresses may be NULL. */
static void mk(tmsg_t *t, const char *key, int64_t ts, const char *src, const char *dst, int status,
               const char *path, const void *body, size_t blen)
{
    memset(t, 0, sizeof *t);
    codec_msg_t *m = &t->m;
    snprintf(t->key, sizeof t->key, "%s", key);
    m->key = (codec_slice_t){t->key, strlen(t->key)};
    m->meta[CODEC_META_CORRELATION_ID] = m->key;
    m->timestamp_us = ts;
    if (src) {
        snprintf(t->src, sizeof t->src, "%s", src);
        m->meta[CODEC_META_SRC_ADDR] = (codec_slice_t){t->src, strlen(t->src)};
    }
    if (dst) {
        snprintf(t->dst, sizeof t->dst, "%s", dst);
        m->meta[CODEC_META_DST_ADDR] = (codec_slice_t){t->dst, strlen(t->dst)};
    }
    m->type = status ? CODEC_MSG_RESPONSE : CODEC_MSG_REQUEST;
    m->trigger = status ? CODEC_TRIGGER_TX_RESPONSE : CODEC_TRIGGER_RX_REQUEST;
    m->nf = CODEC_NF_NRF;
    m->status = status;
    if (status) {
        static char st[8];
        snprintf(st, sizeof st, "%d", status);
        hdr(m, ":status", status == 200 ? "200" : status == 201 ? "201" : "404");
    } else {
        hdr(m, ":method", "POST");
        hdr(m, ":scheme", "http");
        hdr(m, ":authority", "nrf.example:8080");
        hdr(m, ":path", path);
    }
    hdr(m, "content-type", "application/json");
    m->body = (codec_slice_t){body ? body : "", blen};
}

/* ---- a decoder of what the builder wrote ---- */

typedef struct pkt {
    const uint8_t *ip, *tcp, *pay;
    size_t pay_len;
    int family;
    uint32_t seq, ack;
    uint8_t flags;
    uint16_t sport, dport;
} pkt_t;

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}
static uint32_t rd32le(const uint8_t *p)
{
    return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static uint16_t csum(uint32_t s, const uint8_t *p, size_t n)
{
    for (; n > 1; n -= 2, p += 2)
        s += (uint32_t)(p[0] << 8 | p[1]);
    if (n)
        s += (uint32_t)(p[0] << 8);
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return (uint16_t)~s;
}

/* Parses the record at *p and checks its checksums; returns the record's size. */
static size_t parse_rec(const uint8_t *p, pkt_t *k)
{
    uint32_t incl = rd32le(p + 8);
    assert_int_equal(incl, rd32le(p + 12));
    const uint8_t *eth = p + 16;
    assert_true(eth[0] & 0x02); /* locally administered */
    uint16_t et = rd16(eth + 12);
    k->ip = eth + 14;
    size_t seg;
    uint32_t s = 0;
    if (et == 0x0800) {
        k->family = 4;
        assert_int_equal(csum(0, k->ip, 20), 0);
        seg = rd16(k->ip + 2) - 20u;
        s = 0;
        for (int i = 12; i < 20; i += 2)
            s += rd16(k->ip + i);
        k->tcp = k->ip + 20;
    } else {
        assert_int_equal(et, 0x86DD);
        k->family = 6;
        seg = rd16(k->ip + 4);
        for (int i = 8; i < 40; i += 2)
            s += rd16(k->ip + i);
        k->tcp = k->ip + 40;
    }
    assert_int_equal(14 + (k->family == 4 ? 20 : 40) + seg, incl);
    s += 6 + (uint32_t)seg;
    assert_int_equal(csum(s, k->tcp, seg), 0);
    size_t tl = (size_t)(k->tcp[12] >> 4) * 4;
    k->pay = k->tcp + tl;
    k->pay_len = seg - tl;
    k->seq = rd32(k->tcp + 4);
    k->ack = rd32(k->tcp + 8);
    k->flags = k->tcp[13];
    k->sport = rd16(k->tcp);
    k->dport = rd16(k->tcp + 2);
    return 16 + incl;
}

/* Checks every packet of out and gathers the client->server and server->client streams. */
typedef struct flow {
    uint8_t data[2][400000];
    size_t len[2];
    uint32_t next[2];
    bool seen[2];
    uint16_t cport;
    unsigned packets, syn, fin;
    size_t max_pay;
} flow_t;

static void walk(flow_t *f, const uint8_t *p, size_t n)
{
    size_t at = 0;
    while (at < n) {
        pkt_t k;
        at += parse_rec(p + at, &k);
        f->packets++;
        if (k.flags & 0x02) {
            if (!(k.flags & 0x10))
                f->cport = k.sport;
            int d = k.sport == f->cport ? 0 : 1;
            f->next[d] = k.seq + 1;
            f->seen[d] = true;
            f->syn++;
            continue;
        }
        int d = k.sport == f->cport ? 0 : 1;
        assert_true(f->seen[d]);
        assert_int_equal(k.seq, f->next[d]);  /* continuous */
        assert_int_equal(k.ack, f->next[!d]); /* everything the peer sent */
        f->next[d] += (uint32_t)k.pay_len + ((k.flags & 0x01) ? 1 : 0);
        if (k.flags & 0x01)
            f->fin++;
        if (k.pay_len > f->max_pay)
            f->max_pay = k.pay_len;
        memcpy(f->data[d] + f->len[d], k.pay, k.pay_len);
        f->len[d] += k.pay_len;
    }
}

typedef struct h2msg {
    uint32_t sid;
    char method[16], path[128], status[8];
    uint8_t body[70000];
    size_t body_len;
    bool end_stream, saw_continuation;
} h2msg_t;

/* Parses the HTTP/2 frames of one direction (after the preface on the client side) into
 * messages, inflating every header block with that direction's inflater. */
static size_t h2_parse(const uint8_t *s, size_t n, bool client, h2msg_t *msgs, size_t max)
{
    nghttp2_hd_inflater *inf;
    assert_int_equal(nghttp2_hd_inflate_new(&inf), 0);
    size_t at = 0, nm = 0;
    if (client) {
        assert_memory_equal(s, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24);
        at = 24;
    }
    uint8_t block[70000];
    size_t blen = 0;
    h2msg_t *cur = NULL;
    while (at < n) {
        assert_true(at + 9 <= n);
        size_t len = (size_t)s[at] << 16 | (size_t)s[at + 1] << 8 | s[at + 2];
        uint8_t type = s[at + 3], flags = s[at + 4];
        uint32_t sid = rd32(s + at + 5) & 0x7fffffffu;
        const uint8_t *pl = s + at + 9;
        assert_true(len <= 16384);
        assert_true(at + 9 + len <= n);
        if (type == 0x1) {
            assert_true(nm < max);
            cur = &msgs[nm++];
            memset(cur, 0, sizeof *cur);
            cur->sid = sid;
            blen = 0;
            if (flags & 0x1)
                cur->end_stream = true;
        }
        if (type == 0x1 || type == 0x9) {
            assert_non_null(cur);
            assert_int_equal(sid, cur->sid);
            if (type == 0x9)
                cur->saw_continuation = true;
            memcpy(block + blen, pl, len);
            blen += len;
            if (flags & 0x4) {
                const uint8_t *in = block;
                size_t left = blen;
                for (;;) {
                    nghttp2_nv nv;
                    int fl = 0;
                    ssize_t r = nghttp2_hd_inflate_hd2(inf, &nv, &fl, in, left, 1);
                    assert_true(r >= 0);
                    in += r;
                    left -= (size_t)r;
                    if (fl & NGHTTP2_HD_INFLATE_EMIT) {
                        char *dst = NULL;
                        if (nv.namelen == 7 && !memcmp(nv.name, ":method", 7))
                            dst = cur->method;
                        if (nv.namelen == 5 && !memcmp(nv.name, ":path", 5))
                            dst = cur->path;
                        if (nv.namelen == 7 && !memcmp(nv.name, ":status", 7))
                            dst = cur->status;
                        if (dst)
                            snprintf(dst, 100, "%.*s", (int)nv.valuelen, nv.value);
                    }
                    if (fl & NGHTTP2_HD_INFLATE_FINAL) {
                        nghttp2_hd_inflate_end_headers(inf);
                        break;
                    }
                    if (r == 0 && left == 0)
                        break;
                }
            }
        } else if (type == 0x0) {
            assert_non_null(cur);
            assert_int_equal(sid, cur->sid);
            assert_false(cur->end_stream);
            memcpy(cur->body + cur->body_len, pl, len);
            cur->body_len += len;
            if (flags & 0x1)
                cur->end_stream = true;
        } else {
            assert_int_equal(sid, 0); /* SETTINGS, WINDOW_UPDATE on the connection */
        }
        at += 9 + len;
    }
    nghttp2_hd_inflate_del(inf);
    return nm;
}

static synth_ctx_t *ctx(const char *json)
{
    char err[300] = "";
    json_t *j = json ? json_loads(json, 0, NULL) : NULL;
    synth_ctx_t *c = synth_ctx_new(j, err, sizeof err);
    json_decref(j);
    if (!c)
        fail_msg("synth_ctx_new: %s", err);
    return c;
}

static void encode(synth_ctx_t *c, buf_t *b, tmsg_t *t)
{
    const char *why = NULL;
    if (synth_encode(c, &t->m, b, &why) <= 0)
        fail_msg("synth_encode: %s", why ? why : "?");
}

static uint8_t big[40000];

static void
test_request_and_response_share_a_stream_with_continuous_seq_and_valid_checksums(void **state)
{
    (void)state;
    synth_ctx_t *c = ctx(NULL);
    buf_t b;
    buf_init(&b, 0, 8u << 20);
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)('a' + i % 26);
    tmsg_t t;
    mk(&t, "tx-1", 1700000000000000, "10.0.0.1:41000", "10.0.0.2:8080", 0, "/nnrf-disc/v1/a", "{}",
       2);
    encode(c, &b, &t);
    mk(&t, "tx-1", 1700000000000100, "10.0.0.2:8080", "10.0.0.1:41000", 200, NULL, big, 20000);
    encode(c, &b, &t);
    mk(&t, "tx-2", 1700000000000200, "10.0.0.1:41000", "10.0.0.2:8080", 0, "/empty", NULL, 0);
    encode(c, &b, &t);
    mk(&t, "tx-2", 1700000000000300, "10.0.0.2:8080", "10.0.0.1:41000", 201, NULL, NULL, 0);
    encode(c, &b, &t);
    static flow_t f;
    memset(&f, 0, sizeof f);
    walk(&f, b.data, b.len);
    assert_int_equal(f.syn, 2);
    assert_true(f.max_pay <= 1460);
    assert_int_equal(f.max_pay, 1460); /* the 20 KB body filled segments */
    static h2msg_t req[8], rsp[8];
    assert_int_equal(h2_parse(f.data[0], f.len[0], true, req, 8), 2);
    assert_int_equal(h2_parse(f.data[1], f.len[1], false, rsp, 8), 2);
    assert_int_equal(req[0].sid, 1);
    assert_int_equal(req[1].sid, 3);
    assert_int_equal(rsp[0].sid, 1);
    assert_int_equal(rsp[1].sid, 3);
    assert_string_equal(req[0].method, "POST");
    assert_string_equal(req[0].path, "/nnrf-disc/v1/a");
    assert_string_equal(req[1].path, "/empty");
    assert_string_equal(rsp[0].status, "200");
    assert_string_equal(rsp[1].status, "201");
    assert_int_equal(rsp[0].body_len, 20000);
    assert_memory_equal(rsp[0].body, big, 20000);
    assert_int_equal(req[0].body_len, 2);
    for (int i = 0; i < 2; i++) {
        assert_true(req[i].end_stream);
        assert_true(rsp[i].end_stream);
    }
    buf_free(&b);
    synth_ctx_free(c);
}

static void test_ipv6_segments_at_1440_and_large_header_blocks_use_continuation(void **state)
{
    (void)state;
    synth_ctx_t *c = ctx(NULL);
    buf_t b;
    buf_init(&b, 0, 8u << 20);
    tmsg_t t;
    mk(&t, "v6", 1700000000000000, "[2001:db8::1]:41000", "[2001:db8::2]:443", 0, "/x", big, 35000);
    static char longv[3][8000];
    for (int i = 0; i < 3; i++) { /* 24 KB of incompressible-enough header values */
        for (int k = 0; k < 7999; k++)
            longv[i][k] = (char)('A' + (k * 7 + i) % 50);
        longv[i][7999] = 0;
        hdr(&t.m, i == 0 ? "x-a" : i == 1 ? "x-b" : "x-c", longv[i]);
    }
    encode(c, &b, &t);
    static flow_t f;
    memset(&f, 0, sizeof f);
    walk(&f, b.data, b.len);
    assert_int_equal(f.max_pay, 1440);
    static h2msg_t req[2];
    assert_int_equal(h2_parse(f.data[0], f.len[0], true, req, 2), 1);
    assert_true(req[0].saw_continuation);
    assert_int_equal(req[0].body_len, 35000);
    assert_memory_equal(req[0].body, big, 35000);
    assert_true(req[0].end_stream);
    buf_free(&b);
    synth_ctx_free(c);
}

static void test_mapping_table_gives_missing_addresses_and_unmapped_copies_are_refused(void **state)
{
    (void)state;
    /* 10,000 rules: the table is a hash, the lookups stay cheap */
    json_t *map = json_array();
    for (int i = 0; i < 10000; i++) {
        char v[64], a[64];
        snprintf(v, sizeof v, "nf-%d.example", i);
        snprintf(a, sizeof a, "10.1.%d.%d:8080", i / 250, i % 250 + 1);
        json_array_append_new(map, json_pack("{s:s,s:s}", "fqdn", v, "addr", a));
    }
    json_array_append_new(
        map, json_pack("{s:s,s:s}", "instance", "uuid-1", "addr", "[2001:db8::9]:9000"));
    json_t *o = json_pack("{s:o}", "mapping", map);
    char err[300];
    synth_ctx_t *c = synth_ctx_new(o, err, sizeof err);
    json_decref(o);
    assert_non_null(c);
    synth_addr_t a; /* every rule is in: the first, the last fqdn one and the instance one */
    assert_true(synth_map_lookup(c, SYNTH_MATCH_FQDN, "nf-0.example", 12, &a));
    assert_int_equal(a.ip[3], 1);
    assert_true(synth_map_lookup(c, SYNTH_MATCH_INSTANCE, "uuid-1", 6, &a));
    assert_int_equal(a.family, 6);
    assert_int_equal(a.port, 9000);
    assert_true(synth_map_lookup(c, SYNTH_MATCH_FQDN, "nf-9999.example", 15, &a));
    assert_int_equal(a.family, 4);
    assert_int_equal(a.port, 8080);
    assert_false(synth_map_lookup(c, SYNTH_MATCH_INSTANCE, "nf-9999.example", 15, &a));
    tmsg_t t;
    mk(&t, "m1", 1, NULL, NULL, 0, "/p", NULL, 0);
    t.m.meta[CODEC_META_CONSUMER_FQDN] = (codec_slice_t){"nf-7.example", 12};
    t.m.meta[CODEC_META_PRODUCER_FQDN] = (codec_slice_t){"nf-8.example", 12};
    synth_addr_t cl, sv;
    const char *why = NULL;
    t.m.trigger = CODEC_TRIGGER_TX_REQUEST; /* copied by the consumer: no nf-instance rule */
    assert_true(synth_resolve(c, &t.m, &cl, &sv, &why));
    assert_int_equal(cl.ip[3], 8);
    assert_int_equal(sv.ip[3], 9);
    t.m.meta[CODEC_META_PRODUCER_FQDN] = (codec_slice_t){NULL, 0};
    buf_t b;
    buf_init(&b, 0, 1u << 20);
    assert_int_equal(synth_encode(c, &t.m, &b, &why), -1);
    assert_non_null(strstr(why, "receiver"));
    assert_int_equal(b.len, 0);
    /* mixed families are refused too */
    t.m.meta[CODEC_META_PRODUCER_ID] = (codec_slice_t){"uuid-1", 6};
    assert_int_equal(synth_encode(c, &t.m, &b, &why), -1);
    assert_non_null(strstr(why, "IP versions"));
    buf_free(&b);
    synth_ctx_free(c);
}

static void test_bad_settings_are_refused_with_the_field_named(void **state)
{
    (void)state;
    const char *bad[] = {"{\"mss\":10}", "{\"nope\":1}", "{\"mapping\":[{\"fqdn\":\"a\"}]}",
                         "{\"mapping\":[{\"fqdn\":\"a\",\"addr\":\"a:1\"}]}",
                         /* the same FQDN twice */
                         ("{\"mapping\":[{\"fqdn\":\"a\",\"addr\":\"1.2.3.4:1\"},{\"fqdn\":\"a\","
                          "\"addr\":\"1.2.3.4:2\"}]}")};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *j = json_loads(bad[i], 0, NULL);
        char err[300] = "";
        synth_ctx_t *c = synth_ctx_new(j, err, sizeof err);
        json_decref(j);
        assert_null(c);
        assert_non_null(strstr(err, "synthetic"));
    }
}

static void test_connections_beyond_the_bound_evict_the_least_recent_with_fin(void **state)
{
    (void)state;
    synth_ctx_t *c = ctx("{\"max_connections\":2}");
    buf_t b;
    buf_init(&b, 0, 4u << 20);
    tmsg_t t;
    const char *src[] = {"10.0.0.1:1000", "10.0.0.1:1001", "10.0.0.1:1002"};
    for (int i = 0; i < 3; i++) {
        mk(&t, "k", 1, src[i], "10.0.0.2:80", 0, "/", NULL, 0);
        encode(c, &b, &t);
    }
    assert_int_equal(synth_ctx_open_connections(c), 2);
    assert_int_equal(synth_ctx_stats(c)->connections_evicted, 1);
    size_t at = 0, fins = 0;
    while (at < b.len) {
        pkt_t k;
        at += parse_rec(b.data + at, &k);
        if (k.flags & 0x01) {
            assert_int_equal(k.family, 4);
            assert_true(k.sport == 1000 || k.dport == 1000);
            fins++;
        }
    }
    assert_int_equal(fins, 2);
    buf_free(&b);
    synth_ctx_free(c);
}

/* The encoding's batch: one frame whose records hold each copy's pcap records. */
static void test_encoding_batch_is_a_frame_of_pcap_records(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, 0, 4u << 20);
    encoding_batch_t eb;
    assert_int_equal(encoding_synthetic.begin_batch(&eb, &b, 0), ENCODING_OK);
    tmsg_t t;
    mk(&t, "e1", 5, "10.9.0.1:1", "10.9.0.2:2", 0, "/a", "xyz", 3);
    assert_int_equal(encoding_synthetic.add(&eb, &t.m), ENCODING_OK);
    mk(&t, "e2", 6, NULL, "10.9.0.2:2", 0, "/a", NULL, 0);
    assert_int_equal(encoding_synthetic.add(&eb, &t.m), ENCODING_REFUSED);
    assert_non_null(eb.refused);
    assert_int_equal(encoding_synthetic.end_batch(&eb), ENCODING_OK);
    frame_parser_t p;
    frame_t fr;
    size_t used;
    frame_parser_init(&p, 0, false);
    assert_int_equal(frame_parse(&p, b.data, b.len, &fr, &used), FRAME_OK);
    assert_int_equal(fr.record_count, 1);
    frame_record_iter_t it;
    frame_record_t rec;
    frame_records(&fr, &it);
    assert_true(frame_record_next(&it, &rec));
    static flow_t f;
    memset(&f, 0, sizeof f);
    walk(&f, (const uint8_t *)rec.body.ptr, rec.body.len);
    assert_true(f.packets >= 8);
    buf_free(&b);
}

/* tshark reads a capture of IPv4 and IPv6 transactions cleanly. */
static void test_tshark_decodes_the_capture_without_errors(void **state)
{
    (void)state;
    /* tshark is the independent judge of the packets: its absence fails the test */
    if (system("command -v tshark >/dev/null 2>&1") != 0)
        fail_msg("tshark is missing (deploy/local/install-deps.sh installs it): the capture "
                 "cannot be judged");
    synth_ctx_t *c = ctx(NULL);
    buf_t b;
    buf_init(&b, 0, 8u << 20);
    uint8_t fh[24];
    synth_pcap_file_header(fh);
    buf_append(&b, fh, 24);
    tmsg_t t;
    int64_t ts = 1700000000000000;
    for (int i = 0; i < 6; i++) {
        bool v6 = i % 2;
        const char *cl = v6 ? "[2001:db8::1]:40000" : "10.0.0.1:40000";
        const char *sv = v6 ? "[2001:db8::2]:8443" : "10.0.0.2:8443";
        char key[16], path[32];
        snprintf(key, sizeof key, "t%d", i);
        snprintf(path, sizeof path, "/p/%d", i);
        size_t blen = i < 2 ? 0 : i < 4 ? 3000 : 20000;
        mk(&t, key, ts++, cl, sv, 0, path, big, blen);
        encode(c, &b, &t);
        mk(&t, key, ts++, sv, cl, 200, NULL, big, blen / 2);
        encode(c, &b, &t);
    }
    char file[] = "/tmp/ndd-synth-XXXXXX";
    int fd = mkstemp(file);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, b.data, b.len), (ssize_t)b.len);
    close(fd);
    char cmd[600];
    snprintf(cmd, sizeof cmd,
             "tshark -r %s -d tcp.port==8443,http2 -Y '_ws.malformed || _ws.expert.severity >= "
             "\"error\" || "
             "tcp.analysis.lost_segment || tcp.analysis.retransmission || "
             "tcp.analysis.out_of_order || tcp.analysis.ack_lost_segment || "
             "tcp.analysis.window_full || !tcp' 2>&1 | grep -v '^Running as user'",
             file);
    FILE *p = popen(cmd, "r");
    char bad[2000] = "";
    size_t nb = fread(bad, 1, sizeof bad - 1, p);
    bad[nb] = 0;
    pclose(p);
    if (nb)
        fail_msg("tshark flags packets of %s:\n%s", file, bad);
    snprintf(cmd, sizeof cmd,
             "tshark -r %s -d tcp.port==8443,http2 -Y http2.type==1 -T fields -e "
             "http2.headers.method -e "
             "http2.headers.path -e http2.headers.status 2>/dev/null | tr '\\n' ' '",
             file);
    p = popen(cmd, "r");
    char out[4000] = "";
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    pclose(p);
    for (int i = 0; i < 6; i++) {
        char want[32];
        snprintf(want, sizeof want, "POST\t/p/%d", i);
        if (!strstr(out, want))
            fail_msg("tshark shows no %s in: %s", want, out);
    }
    assert_non_null(strstr(out, "200"));
    if (!getenv("NDD_KEEP_PCAP"))
        unlink(file);
    buf_free(&b);
    synth_ctx_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_request_and_response_share_a_stream_with_continuous_seq_and_valid_checksums),
        cmocka_unit_test(test_ipv6_segments_at_1440_and_large_header_blocks_use_continuation),
        cmocka_unit_test(
            test_mapping_table_gives_missing_addresses_and_unmapped_copies_are_refused),
        cmocka_unit_test(test_bad_settings_are_refused_with_the_field_named),
        cmocka_unit_test(test_connections_beyond_the_bound_evict_the_least_recent_with_fin),
        cmocka_unit_test(test_encoding_batch_is_a_frame_of_pcap_records),
        cmocka_unit_test(test_tshark_decodes_the_capture_without_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
