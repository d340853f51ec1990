/* The synthetic packet encoding (docs/synthetic.md): each copy becomes the pcap records of the
 * packets of its HTTP/2 message (synthetic.h builds them). A batch is one NDD DATA frame, as
 * for the frame encoding, holding one record per copy: header @correlation-id, the key, and
 * as body the copy's pcap records (16-byte record header + Ethernet frame, each). So the frame
 * transports carry it acknowledged, as any frame (the acknowledged mode); the TCP/TLS
 * transports in fire-and-forget mode write only the records, after a pcap file header, as a
 * pcap stream; the file transport writes them as pcapng blocks.
 *
 * The synthetic connections (sequence numbers, HPACK tables, stream ids) live across batches
 * in a context per feed thread (each feed runs on its own thread): opened by the feed's
 * thread through encoding_t.thread_start with the feed's "synthetic" member, or with defaults
 * on first use. The packets are built straight into the batch's output buffer; a copy whose
 * addresses neither its metadata nor the mapping table give is refused with the reason (the
 * feed dead-letters it).
 *
 * Metrics (docs/observability.md, label feed): the context's counters are published after
 * each copy as deltas into handles resolved once, in thread_start; the adapter removes the
 * feed's series when the feed stops (encoding_t.metrics_remove). */
#include "encoding.h"
#include "frame.h"
#include "log.h"
#include "synthetic.h"

#include <stdio.h>
#include <string.h>

static _Thread_local synth_ctx_t *synth_tls;

/* The feed thread's series, and the counts already added to them. */
typedef struct synth_metrics {
    metrics_counter_t *packets, *opened, *evicted, *unmapped;
    metrics_gauge_t *open;
    synth_stats_t published;
} synth_metrics_t;
static _Thread_local synth_metrics_t synth_m;

static const struct {
    const char *name, *help;
    bool gauge;
} synth_families[] = {
    {"ndd_adapter_synthetic_packets_total",
     "Packets built by the synthetic encoding (handshakes, SETTINGS, ACKs and FINs included)",
     false},
    {"ndd_adapter_synthetic_connections_opened_total",
     "Synthetic TCP connections opened (three-way handshake and HTTP/2 preface written)", false},
    {"ndd_adapter_synthetic_connections_evicted_total",
     "Synthetic connections closed with FIN to stay within synthetic.max_connections", false},
    {"ndd_adapter_synthetic_messages_unmapped_total",
     "Copies refused because neither their metadata nor the mapping table gave an address", false},
    {"ndd_adapter_synthetic_connections_open", "Synthetic connections open now", true},
};
#define SYNTH_FAMILIES (sizeof synth_families / sizeof *synth_families)

static metrics_family_t *synth_family(metrics_registry_t *r, size_t i)
{
    return synth_families[i].gauge
               ? metrics_gauge_new(r, synth_families[i].name, synth_families[i].help, "feed")
               : metrics_counter_new(r, synth_families[i].name, synth_families[i].help, "feed");
}

static void synthetic_metrics_bind(metrics_registry_t *r, const char *feed)
{
    memset(&synth_m, 0, sizeof synth_m);
    if (!r || !feed)
        return;
    metrics_family_t *f[SYNTH_FAMILIES];
    for (size_t i = 0; i < SYNTH_FAMILIES; i++)
        f[i] = synth_family(r, i);
    synth_m.packets = f[0] ? metrics_counter_labels(f[0], feed) : NULL;
    synth_m.opened = f[1] ? metrics_counter_labels(f[1], feed) : NULL;
    synth_m.evicted = f[2] ? metrics_counter_labels(f[2], feed) : NULL;
    synth_m.unmapped = f[3] ? metrics_counter_labels(f[3], feed) : NULL;
    synth_m.open = f[4] ? metrics_gauge_labels(f[4], feed) : NULL;
    if (synth_m.open)
        metrics_gauge_set(synth_m.open, 0);
}

static void synthetic_metrics_remove(metrics_registry_t *r, const char *feed)
{
    for (size_t i = 0; i < SYNTH_FAMILIES; i++) {
        metrics_family_t *f = synth_family(r, i);
        if (f)
            metrics_family_remove_matching(f, "feed", feed);
    }
}

/* The context's counts since the last call into the series (a few relaxed atomics). */
static void synthetic_metrics_publish(const synth_ctx_t *c)
{
    if (!synth_m.packets)
        return;
    const synth_stats_t *s = synth_ctx_stats(c);
    synth_stats_t *p = &synth_m.published;
    if (s->packets != p->packets)
        metrics_counter_add(synth_m.packets, s->packets - p->packets);
    if (s->connections_opened != p->connections_opened) {
        metrics_counter_add(synth_m.opened, s->connections_opened - p->connections_opened);
        metrics_gauge_set(synth_m.open, (double)synth_ctx_open_connections(c));
    }
    if (s->connections_evicted != p->connections_evicted) {
        metrics_counter_add(synth_m.evicted, s->connections_evicted - p->connections_evicted);
        metrics_gauge_set(synth_m.open, (double)synth_ctx_open_connections(c));
    }
    if (s->unmapped != p->unmapped)
        metrics_counter_add(synth_m.unmapped, s->unmapped - p->unmapped);
    *p = *s;
}

synth_ctx_t *encoding_synthetic_context(void)
{
    if (!synth_tls) {
        char err[200];
        synth_tls = synth_ctx_new(NULL, err, sizeof err);
        if (!synth_tls)
            log_error("synthetic encoding: %s", err);
    }
    return synth_tls;
}

static int synthetic_thread_start(const json_t *options, const char *feed,
                                  metrics_registry_t *metrics, char *err, size_t errlen)
{
    synthetic_metrics_bind(metrics, feed); /* also for the defaults, when options are bad */
    synth_ctx_t *c = synth_ctx_new(options, err, errlen);
    if (!c)
        return -1;
    synth_ctx_free(synth_tls);
    synth_tls = c;
    return 0;
}

static void synthetic_thread_stop(void)
{
    synth_ctx_free(synth_tls);
    synth_tls = NULL;
    memset(&synth_m, 0, sizeof synth_m);
}

static int synthetic_check(const json_t *options, char *err, size_t errlen)
{
    synth_ctx_t *c = synth_ctx_new(options, err, errlen);
    synth_ctx_free(c);
    return c ? 0 : -1;
}

static frame_builder_t *fb(encoding_batch_t *b)
{
    return (frame_builder_t *)(void *)b->state.bytes;
}

static encoding_result_t synthetic_begin(encoding_batch_t *b, buf_t *out, size_t max_count)
{
    encoding_batch_open(b, &encoding_synthetic, out, max_count);
    if (frame_data_begin(fb(b), out, 0, FRAME_FLAG_ACK_REQUESTED, 0) != 0) {
        b->out = NULL;
        return ENCODING_TOO_BIG;
    }
    return ENCODING_OK;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static encoding_result_t synthetic_add(encoding_batch_t *b, const codec_msg_t *m)
{
    if (!b->out)
        return ENCODING_ERROR;
    if (b->count >= b->max_count)
        return ENCODING_FULL;
    synth_ctx_t *c = encoding_synthetic_context();
    if (!c) {
        b->refused = "synthetic: no context (out of memory)";
        return ENCODING_REFUSED;
    }
    frame_builder_t *f = fb(b);
    buf_t *out = b->out;
    size_t need = synth_bound(c, m) + 64 + m->key.len;
    if (out->len - f->start - FRAME_HEADER_LEN + need > f->max_payload ||
        out->len + need > out->max)
        return b->count > 0 ? ENCODING_FULL : ENCODING_TOO_BIG;
    static const char cid[] = "@correlation-id", seq[] = "@seq";
    /* the record by hand: frame_data_record_end would copy a body built elsewhere, the
     * packets are written in place instead */
    if (frame_data_record_begin(f) != 0 ||
        frame_data_record_header(f, cid, sizeof cid - 1, m->key.ptr, m->key.len) != 0 ||
        (m->meta[CODEC_META_SEQ].ptr &&
         frame_data_record_header(f, seq, sizeof seq - 1, m->meta[CODEC_META_SEQ].ptr,
                                  m->meta[CODEC_META_SEQ].len) != 0) ||
        buf_append_be32(out, (uint32_t)m->key.len) != 0 ||
        buf_append(out, m->key.ptr, m->key.len) != 0 || buf_append_be32(out, 0) != 0) {
        frame_data_record_abort(f);
        return b->count > 0 ? ENCODING_FULL : ENCODING_TOO_BIG;
    }
    size_t body_at = out->len;
    const char *reason = NULL;
    long n = synth_encode(c, m, out, &reason);
    synthetic_metrics_publish(c);
    if (n < 0) {
        frame_data_record_abort(f);
        if (n == -1) {
            b->refused = reason;
            return ENCODING_REFUSED;
        }
        return b->count > 0 ? ENCODING_FULL : ENCODING_TOO_BIG;
    }
    put_be32(out->data + body_at - 4, (uint32_t)(out->len - body_at));
    put_be32(out->data + f->rec_start, (uint32_t)(out->len - f->rec_start - 4));
    out->data[f->hcount_off] = (uint8_t)(f->hcount >> 8);
    out->data[f->hcount_off + 1] = (uint8_t)f->hcount;
    f->rec_start = SIZE_MAX;
    f->count++;
    b->count++;
    return ENCODING_OK;
}

static encoding_result_t synthetic_end(encoding_batch_t *b)
{
    if (!b->out)
        return ENCODING_ERROR;
    if (b->count == 0) {
        frame_data_abort(fb(b));
        return ENCODING_ERROR;
    }
    frame_data_end(fb(b));
    return ENCODING_OK;
}

/* The synthetic member (docs/synthetic.md): the description the admin serves and checks
 * with; synth_ctx_new parses it (the mapping's addresses and duplicates). */
static const optdesc_t synthetic_mapping_desc[] = {
    {.name = "fqdn",
     .type = OPTDESC_STRING,
     .max = 255,
     .help = "an FQDN the copies name (one of fqdn, instance)"},
    {.name = "instance",
     .type = OPTDESC_STRING,
     .max = 255,
     .help = "an NF instance id (one of fqdn, instance)"},
    {.name = "addr",
     .type = OPTDESC_STRING,
     .flags = OPTDESC_REQUIRED,
     .max = 255,
     .help = "ip:port or [ipv6]:port"},
    {0},
};
static const optdesc_t synthetic_desc[] = {
    {.name = "mss",
     .type = OPTDESC_INT,
     .min = 536,
     .max = 9000,
     .def = "1460",
     .unit = "bytes",
     .help = "TCP segment payload over IPv4"},
    {.name = "mss_ipv6",
     .type = OPTDESC_INT,
     .min = 536,
     .max = 9000,
     .def = "1440",
     .unit = "bytes",
     .help = "TCP segment payload over IPv6"},
    {.name = "max_connections",
     .type = OPTDESC_INT,
     .min = 1,
     .max = SYNTH_MAX_MAX_CONNS,
     .def = "4096",
     .unit = "connections",
     .help = "synthetic TCP connections held; beyond it the least recently used one is closed"},
    {.name = "hpack_indexing",
     .type = OPTDESC_BOOL,
     .def = "false",
     .help = "index header fields in HPACK (smaller packets; a capture read from its middle cannot "
             "decode them)"},
    {.name = "mapping",
     .type = OPTDESC_ARRAY,
     .max = SYNTH_MAX_RULES,
     .help = "addresses for copies without @src-addr/@dst-addr: by fqdn or instance",
     .sub = synthetic_mapping_desc},
    {0},
};

const encoding_t encoding_synthetic = {
    .name = "synthetic",
    .content_type = ENCODING_SYNTHETIC_CONTENT_TYPE,
    .form = ENCODING_FORM_FRAME | ENCODING_FORM_PCAP_RECORDS,
    .max_batch = 10000,
    .default_batch = 16,
    .state_size = sizeof(frame_builder_t),
    .begin_batch = synthetic_begin,
    .add = synthetic_add,
    .end_batch = synthetic_end,
    .options = "synthetic",
    .option_desc = synthetic_desc,
    .check_options = synthetic_check,
    .thread_start = synthetic_thread_start,
    .thread_stop = synthetic_thread_stop,
    .metrics_remove = synthetic_metrics_remove,
};
