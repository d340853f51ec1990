/* The synthetic packet builder (synthetic.h): one copy becomes the pcap records of the packets
 * its HTTP/2 message travelled in, written straight into the caller's output buffer (the
 * batch's): Ethernet II with locally administered MACs derived from the IPs, IPv4 or IPv6,
 * TCP with continuous sequence and acknowledgement numbers, segmented at the MSS, carrying
 * HEADERS (+ CONTINUATION) with the copy's header list HPACK-encoded by the connection's
 * deflater for that direction, and DATA frames of at most 16,384 bytes, END_STREAM on the
 * last frame of the message. A new connection starts with the three-way handshake, the
 * client preface and the SETTINGS exchange; an evicted one ends with FIN, FIN, ACK.
 *
 * The receiving side acknowledges each message (and every 32 segments of a long one) with a
 * pure ACK, plus a WINDOW_UPDATE for the DATA it received, as a real peer would: a capture
 * of the stream then shows no window or flow-control anomaly. Only standard fields are set
 * (docs/synthetic.md). The body is copied once, from the copy into its packets. */
#include "synthetic-int.h"

#include <string.h>

#define ETH_LEN 14
#define TCP_LEN 20
#define TCP_SYN_OPTS 8 /* MSS (4), NOP (1), window scale (3) */
#define WSCALE 7
#define WINDOW_FIELD 8192 /* << WSCALE: a 1 MiB receive window */
#define H2_WINDOW 16777216u
#define ACK_EVERY 32 /* segments of one message between the receiver's ACKs */

#define F_FIN 0x01
#define F_SYN 0x02
#define F_PSH 0x08
#define F_ACK 0x10

static const char H2_PREFACE[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/* Writes one message's packets; everything is within the reserved output. */
typedef struct seg_writer {
    synth_ctx_t *c;
    synth_conn_t *k;
    uint8_t *base; /* out->data */
    size_t *len;   /* &out->len */
    int dir;
    int64_t ts_us;
    size_t rec, tcp, pay; /* offsets of the open packet's record, TCP header, payload */
    size_t pay_len;
    bool open;
    unsigned mss, segs;
    long records;
} seg_writer_t;

static void wr16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}
static void wr32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
static void wr32le(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t csum_add(uint32_t s, const uint8_t *p, size_t n)
{
    for (; n > 1; n -= 2, p += 2)
        s += (uint32_t)(p[0] << 8 | p[1]);
    if (n)
        s += (uint32_t)(p[0] << 8);
    return s;
}

static uint16_t csum_fold(uint32_t s)
{
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return (uint16_t)~s;
}

static void mac_of(const synth_addr_t *a, uint8_t mac[6])
{
    uint64_t h = synth_hash(SYNTH_HASH_SEED, a->ip, a->family == 4 ? 4 : 16);
    mac[0] = 0x02; /* locally administered, unicast */
    for (int i = 1; i < 6; i++)
        mac[i] = (uint8_t)(h >> (8 * i));
    if (a->family == 4) /* readable: 02:00:a.b.c.d */
        mac[1] = 0, memcpy(mac + 2, a->ip, 4);
}

static unsigned ip_len(const synth_addr_t *a)
{
    return a->family == 4 ? 20 : 40;
}

/* Opens a packet from w->dir's sender with the given flags (and SYN options). */
static void pkt_open(seg_writer_t *w, uint8_t flags)
{
    const synth_addr_t *src = &w->k->end[w->dir], *dst = &w->k->end[!w->dir];
    uint8_t *p = w->base + *w->len;
    w->rec = *w->len;
    p += SYNTH_PCAP_REC_HDR;
    mac_of(dst, p);
    mac_of(src, p + 6);
    wr16(p + 12, src->family == 4 ? 0x0800 : 0x86DD);
    p += ETH_LEN;
    unsigned il = ip_len(src);
    memset(p, 0, il);
    if (src->family == 4) {
        p[0] = 0x45;
        wr16(p + 4, w->k->ip_id[w->dir]++);
        wr16(p + 6, 0x4000); /* DF */
        p[8] = 64;
        p[9] = 6;
        memcpy(p + 12, src->ip, 4);
        memcpy(p + 16, dst->ip, 4);
    } else {
        p[0] = 0x60;
        p[6] = 6;
        p[7] = 64;
        memcpy(p + 8, src->ip, 16);
        memcpy(p + 24, dst->ip, 16);
    }
    p += il;
    w->tcp = (size_t)(p - w->base);
    unsigned tl = TCP_LEN + ((flags & F_SYN) ? TCP_SYN_OPTS : 0);
    memset(p, 0, tl);
    wr16(p, src->port);
    wr16(p + 2, dst->port);
    wr32(p + 4, w->k->seq[w->dir]);
    if (flags & F_ACK)
        wr32(p + 8, w->k->seq[!w->dir]);
    p[12] = (uint8_t)((tl / 4) << 4);
    p[13] = flags;
    wr16(p + 14, (flags & F_SYN) ? 65535 : WINDOW_FIELD);
    if (flags & F_SYN) {
        p[20] = 2, p[21] = 4;
        wr16(p + 22, (uint16_t)(src->family == 4 ? w->c->set.mss4 : w->c->set.mss6));
        p[24] = 1;
        p[25] = 3, p[26] = 3, p[27] = WSCALE;
    }
    w->pay = w->tcp + tl;
    w->pay_len = 0;
    w->open = true;
    *w->len = w->pay;
}

/* Fills the lengths and checksums of the open packet and advances the sender's sequence. */
static void pkt_close(seg_writer_t *w)
{
    uint8_t *rec = w->base + w->rec, *tcp = w->base + w->tcp;
    const synth_addr_t *src = &w->k->end[w->dir];
    size_t tl = w->pay - w->tcp, seg = tl + w->pay_len;
    uint8_t *ip = rec + SYNTH_PCAP_REC_HDR + ETH_LEN;
    uint32_t s = 0;
    if (src->family == 4) {
        wr16(ip + 2, (uint16_t)(20 + seg));
        wr16(ip + 10, csum_fold(csum_add(0, ip, 20)));
        s = csum_add(s, ip + 12, 8);
    } else {
        wr16(ip + 4, (uint16_t)seg);
        s = csum_add(s, ip + 8, 32);
    }
    s += 6 + (uint32_t)seg;
    s = csum_add(s, tcp, seg);
    wr16(tcp + 16, csum_fold(s));
    size_t caplen = ETH_LEN + ip_len(src) + seg;
    wr32le(rec, (uint32_t)(w->ts_us / 1000000));
    wr32le(rec + 4, (uint32_t)(w->ts_us % 1000000));
    wr32le(rec + 8, (uint32_t)caplen);
    wr32le(rec + 12, (uint32_t)caplen);
    uint8_t flags = tcp[13];
    w->k->seq[w->dir] += (uint32_t)w->pay_len + ((flags & (F_SYN | F_FIN)) ? 1 : 0);
    w->open = false;
    w->records++;
    w->c->stats.packets++;
}

/* One packet without payload beyond what is written before the close. */
static void pkt_bare(seg_writer_t *w, int dir, uint8_t flags)
{
    w->dir = dir;
    pkt_open(w, flags);
    pkt_close(w);
}

/* The receiving side's acknowledgement, with a WINDOW_UPDATE for DATA it took. */
static void peer_ack(seg_writer_t *w, uint32_t data_bytes)
{
    int dir = w->dir;
    w->dir = !dir;
    pkt_open(w, F_ACK | (data_bytes ? F_PSH : 0));
    if (data_bytes) {
        uint8_t *p = w->base + *w->len;
        memset(p, 0, 9);
        p[2] = 4;    /* length */
        p[3] = 0x08; /* WINDOW_UPDATE, stream 0 */
        wr32(p + 9, data_bytes);
        *w->len += 13;
        w->pay_len = 13;
    }
    pkt_close(w);
    w->dir = dir;
}

/* Appends bytes of the HTTP/2 stream, opening and closing segments at the MSS. */
static void seg_put(seg_writer_t *w, const void *data, size_t n)
{
    const uint8_t *p = data;
    while (n) {
        if (!w->open)
            pkt_open(w, F_ACK | F_PSH);
        size_t room = w->mss - w->pay_len, take = n < room ? n : room;
        memcpy(w->base + *w->len, p, take);
        *w->len += take;
        w->pay_len += take;
        p += take;
        n -= take;
        if (w->pay_len == w->mss) {
            pkt_close(w);
            if (++w->segs % ACK_EVERY == 0)
                peer_ack(w, 0);
        }
    }
}

static void seg_flush(seg_writer_t *w)
{
    if (w->open)
        pkt_close(w);
}

static void h2_frame_hdr(seg_writer_t *w, size_t len, uint8_t type, uint8_t flags, uint32_t sid)
{
    uint8_t h[9] = {(uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len, type, flags};
    wr32(h + 5, sid & 0x7fffffffu);
    seg_put(w, h, 9);
}

static void h2_settings(seg_writer_t *w)
{
    uint8_t s[12];
    wr16(s, 0x2); /* ENABLE_PUSH 0 (meaningful from a client only, harmless otherwise) */
    wr32(s + 2, 0);
    wr16(s + 6, 0x4); /* INITIAL_WINDOW_SIZE */
    wr32(s + 8, H2_WINDOW);
    h2_frame_hdr(w, w->dir == 0 ? 12 : 6, 0x4, 0, 0);
    seg_put(w, w->dir == 0 ? s : s + 6, w->dir == 0 ? 12 : 6);
    uint8_t wu[4];
    wr32(wu, H2_WINDOW - 65535); /* the connection window to match */
    h2_frame_hdr(w, 4, 0x8, 0, 0);
    seg_put(w, wu, 4);
}

/* Handshake, preface, SETTINGS exchange. */
static void conn_open_packets(seg_writer_t *w)
{
    synth_conn_t *k = w->k;
    uint32_t isn_s = k->seq[1];
    w->dir = 0;
    pkt_open(w, F_SYN);
    wr32(w->base + w->tcp + 8, 0);
    pkt_close(w);
    w->dir = 1;
    pkt_open(w, F_SYN | F_ACK);
    pkt_close(w);
    (void)isn_s;
    pkt_bare(w, 0, F_ACK);
    w->dir = 0;
    seg_put(w, H2_PREFACE, sizeof H2_PREFACE - 1);
    h2_settings(w);
    seg_flush(w);
    w->dir = 1;
    h2_settings(w);
    h2_frame_hdr(w, 0, 0x4, 0x1, 0); /* SETTINGS ACK */
    seg_flush(w);
    w->dir = 0;
    h2_frame_hdr(w, 0, 0x4, 0x1, 0);
    seg_flush(w);
    pkt_bare(w, 1, F_ACK);
}

static void conn_fin_packets(seg_writer_t *w, synth_conn_t *k)
{
    synth_conn_t *keep = w->k;
    w->k = k;
    pkt_bare(w, 0, F_FIN | F_ACK);
    pkt_bare(w, 1, F_FIN | F_ACK);
    pkt_bare(w, 0, F_ACK);
    w->k = keep;
}

/* ---- resolution ---- */

static bool field(const codec_msg_t *m, codec_meta_t f, codec_slice_t *s)
{
    *s = m->meta[f];
    return s->ptr && s->len;
}

/* One side of the message: its address, or the mapping table's for who that side is. */
static bool side_resolve(const synth_ctx_t *c, const codec_msg_t *m, bool sender, synth_addr_t *a)
{
    codec_slice_t v;
    codec_meta_t af = sender ? CODEC_META_SRC_ADDR : CODEC_META_DST_ADDR;
    uint16_t port = 0;
    if (field(m, af, &v)) {
        if (synth_addr_parse(v.ptr, v.len, a))
            return true;
        /* host:port with a name: the table gives the IP, the copy the port */
        const char *colon = NULL;
        for (size_t i = v.len; i > 0 && !colon; i--)
            if (v.ptr[i - 1] == ':')
                colon = v.ptr + i - 1;
        size_t hl = colon ? (size_t)(colon - v.ptr) : v.len;
        if (colon) {
            unsigned p = 0;
            for (const char *q = colon + 1; q < v.ptr + v.len && *q >= '0' && *q <= '9'; q++)
                p = p * 10 + (unsigned)(*q - '0');
            port = p > 0 && p < 65536 ? (uint16_t)p : 0;
        }
        if (synth_map_lookup(c, SYNTH_MATCH_FQDN, v.ptr, hl, a)) {
            if (port)
                a->port = port;
            return true;
        }
    }
    /* who the side is: the copying NF when the copy was taken there (rx-*: receiver, tx-*:
     * sender), else the consumer (request sender, response receiver) or the producer */
    bool rx = m->trigger == CODEC_TRIGGER_RX_REQUEST || m->trigger == CODEC_TRIGGER_RX_RESPONSE;
    bool consumer = (m->type == CODEC_MSG_REQUEST) == sender;
    if (sender != rx && field(m, CODEC_META_NF_INSTANCE, &v) &&
        synth_map_lookup(c, SYNTH_MATCH_INSTANCE, v.ptr, v.len, a))
        return true;
    codec_meta_t id = consumer ? CODEC_META_CONSUMER_ID : CODEC_META_PRODUCER_ID;
    codec_meta_t fq = consumer ? CODEC_META_CONSUMER_FQDN : CODEC_META_PRODUCER_FQDN;
    if (field(m, id, &v) && synth_map_lookup(c, SYNTH_MATCH_INSTANCE, v.ptr, v.len, a))
        return true;
    if (field(m, fq, &v) && synth_map_lookup(c, SYNTH_MATCH_FQDN, v.ptr, v.len, a))
        return true;
    return false;
}

bool synth_resolve(const synth_ctx_t *c, const codec_msg_t *m, synth_addr_t *client,
                   synth_addr_t *server, const char **reason)
{
    synth_addr_t s, d;
    if (!side_resolve(c, m, true, &s)) {
        *reason = "synthetic: no sender address (@src-addr absent or not ip:port, and no "
                  "mapping rule for the sender)";
        return false;
    }
    if (!side_resolve(c, m, false, &d)) {
        *reason = "synthetic: no receiver address (@dst-addr absent or not ip:port, and no "
                  "mapping rule for the receiver)";
        return false;
    }
    if (s.family != d.family) {
        *reason = "synthetic: sender and receiver addresses are of different IP versions";
        return false;
    }
    bool req = m->type != CODEC_MSG_RESPONSE;
    *client = req ? s : d;
    *server = req ? d : s;
    return true;
}

/* ---- the message ---- */

size_t synth_bound(const synth_ctx_t *c, const codec_msg_t *m)
{
    size_t hb = 64;
    for (size_t i = 0; i < m->n_http; i++)
        hb += m->http[i].name.len + m->http[i].value.len + 12;
    size_t frames = hb / SYNTH_H2_MAX_FRAME + 2 + m->body.len / SYNTH_H2_MAX_FRAME + 1;
    size_t bytes = hb + m->body.len + 9 * frames;
    unsigned mss = c->set.mss6 < c->set.mss4 ? c->set.mss6 : c->set.mss4;
    size_t segs = bytes / mss + 2;
    const size_t per = SYNTH_PCAP_REC_HDR + ETH_LEN + 40 + TCP_LEN + TCP_SYN_OPTS + 13;
    return bytes + (segs + segs / ACK_EVERY + 24) * per + 512;
}

static bool skip_header(const codec_slice_t *n)
{
    static const char *const hop[] = {"connection",        "keep-alive", "proxy-connection",
                                      "transfer-encoding", "upgrade",    NULL};
    for (int i = 0; hop[i]; i++)
        if (n->len == strlen(hop[i]) && !memcmp(n->ptr, hop[i], n->len))
            return true;
    return false;
}

static uint32_t stream_for(synth_conn_t *k, const codec_msg_t *m, bool *exhausted)
{
    uint64_t h = synth_hash(SYNTH_HASH_SEED, m->key.ptr, m->key.len);
    h = h ? h : 1;
    *exhausted = false;
    if (m->type == CODEC_MSG_RESPONSE)
        for (unsigned i = 0; i < SYNTH_STREAMS_PER_CONN; i++)
            if (k->streams[i].corr == h) {
                k->streams[i].corr = 0;
                return k->streams[i].sid;
            }
    /* a request, or a response whose request this connection never carried: a new stream */
    uint32_t sid = k->next_sid;
    k->next_sid += 2;
    if (k->next_sid > 0x7fffffffu)
        *exhausted = true;
    if (m->type != CODEC_MSG_RESPONSE) {
        k->streams[k->st_next] = (synth_stream_t){h, sid};
        k->st_next = (k->st_next + 1) % SYNTH_STREAMS_PER_CONN;
    }
    return sid;
}

long synth_encode(synth_ctx_t *c, const codec_msg_t *m, buf_t *out, const char **reason)
{
    synth_addr_t cl, sv;
    if (!synth_resolve(c, m, &cl, &sv, reason)) {
        c->stats.unmapped++;
        return -1;
    }
    if (buf_reserve(out, synth_bound(c, m)) != 0) {
        *reason = "synthetic: output buffer full";
        return -2;
    }
    /* the header block first: nothing has changed yet if it cannot be built */
    nghttp2_nv nva[CODEC_MAX_HTTP_HEADERS];
    size_t nv = 0;
    uint8_t nvflag = c->set.hpack_indexing ? NGHTTP2_NV_FLAG_NONE : NGHTTP2_NV_FLAG_NO_INDEX;
    for (int pass = 0; pass < 2; pass++) /* pseudo-headers first (RFC 9113 8.3) */
        for (size_t i = 0; i < m->n_http; i++) {
            const codec_header_t *h = &m->http[i];
            if ((h->name.len && h->name.ptr[0] == ':') != (pass == 0) || skip_header(&h->name))
                continue;
            nva[nv++] = (nghttp2_nv){(uint8_t *)h->name.ptr, (uint8_t *)h->value.ptr, h->name.len,
                                     h->value.len, nvflag};
        }
    synth_conn_t evicted;
    bool fresh;
    synth_conn_t *k = synth_conn_get(c, &cl, &sv, &evicted, &fresh);
    if (!k) {
        *reason = "synthetic: out of memory for an HPACK context";
        return -2;
    }
    int dir = m->type == CODEC_MSG_RESPONSE ? 1 : 0;
    ssize_t hl = nghttp2_hd_deflate_hd(k->hd[dir], c->hb, c->hb_cap, nva, nv);
    if (hl < 0) {
        *reason = "synthetic: HPACK encoding failed";
        return -2; /* unreachable with a valid copy: hb holds the largest header block */
    }
    seg_writer_t w = {
        .c = c, .k = k, .base = out->data, .len = &out->len, .ts_us = m->timestamp_us};
    if (w.ts_us < 0)
        w.ts_us = 0;
    if (evicted.used) {
        conn_fin_packets(&w, &evicted);
        synth_conn_release(&evicted);
    }
    w.mss = cl.family == 4 ? c->set.mss4 : c->set.mss6;
    if (fresh)
        conn_open_packets(&w);
    bool exhausted;
    uint32_t sid = stream_for(k, m, &exhausted);
    w.dir = dir;
    w.segs = 0;
    const uint8_t *hp = c->hb;
    size_t left = (size_t)hl;
    bool no_body = m->body.len == 0;
    uint8_t type = 0x1; /* HEADERS, then CONTINUATION */
    do {
        size_t n = left < SYNTH_H2_MAX_FRAME ? left : SYNTH_H2_MAX_FRAME;
        uint8_t fl = (uint8_t)((n == left ? 0x4 : 0) | (type == 0x1 && no_body ? 0x1 : 0));
        h2_frame_hdr(&w, n, type, fl, sid);
        seg_put(&w, hp, n);
        hp += n;
        left -= n;
        type = 0x9;
    } while (left);
    const uint8_t *bp = (const uint8_t *)m->body.ptr;
    left = m->body.len;
    while (left) {
        size_t n = left < SYNTH_H2_MAX_FRAME ? left : SYNTH_H2_MAX_FRAME;
        h2_frame_hdr(&w, n, 0x0, n == left ? 0x1 : 0, sid);
        seg_put(&w, bp, n);
        bp += n;
        left -= n;
    }
    seg_flush(&w);
    peer_ack(&w, (uint32_t)m->body.len);
    if (exhausted) { /* stream ids used up: the connection ends, the next copy opens anew */
        conn_fin_packets(&w, k);
        synth_conn_close(c, k);
    }
    return w.records;
}

void synth_pcap_file_header(uint8_t out[24])
{
    wr32le(out, 0xa1b2c3d4);
    out[4] = 2, out[5] = 0, out[6] = 4, out[7] = 0; /* version 2.4 */
    memset(out + 8, 0, 8);
    wr32le(out + 16, 65535); /* snaplen */
    wr32le(out + 20, 1);     /* LINKTYPE_ETHERNET */
}
