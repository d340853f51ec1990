/* Binary frame parser and builder (format: frame.h, docs/encodings.md). */
#include "frame.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "codec.h"

static void wr_be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void wr_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void wr_be64(uint8_t *p, uint64_t v)
{
    wr_be32(p, (uint32_t)(v >> 32));
    wr_be32(p + 4, (uint32_t)v);
}

const char *frame_type_name(uint8_t type)
{
    switch (type) {
    case FRAME_TYPE_DATA:
        return "DATA";
    case FRAME_TYPE_ACK:
        return "ACK";
    case FRAME_TYPE_NACK:
        return "NACK";
    default:
        return "unknown";
    }
}

void frame_parser_init(frame_parser_t *p, uint32_t max_payload, bool check_ids)
{
    memset(p, 0, sizeof *p);
    p->max_payload = max_payload ? max_payload : FRAME_DEFAULT_MAX_PAYLOAD;
    p->check_ids = check_ids;
}

void frame_header_read(const uint8_t *frame, frame_header_t *h)
{
    h->version = frame[4];
    h->type = frame[5];
    h->flags = buf_rd_be16(frame + FRAME_OFF_FLAGS);
    h->payload_len = buf_rd_be32(frame + FRAME_OFF_LENGTH);
    h->id = buf_rd_be64(frame + FRAME_OFF_ID);
}

__attribute__((format(printf, 2, 3))) static frame_status_t fail(frame_parser_t *p, const char *fmt,
                                                                 ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->error, sizeof p->error, fmt, ap);
    va_end(ap);
    return FRAME_ERROR;
}

/* Walks one record [p, end) completely; returns NULL on success or what is wrong. On success
 * *headers_end (when asked) is where the header block ends and the key length starts, so a
 * reader needs no second walk to find the key and the body. */
static const char *check_record(const uint8_t *p, const uint8_t *end, const uint8_t **headers_end)
{
    if (end - p < 2)
        return "record shorter than its header count";
    uint16_t hc = buf_rd_be16(p);
    p += 2;
    for (uint16_t i = 0; i < hc; i++) {
        if (end - p < 2)
            return "header name length past record end";
        uint16_t nl = buf_rd_be16(p);
        p += 2;
        if ((size_t)(end - p) < nl)
            return "header name past record end";
        if (nl == 0)
            return "empty header name";
        p += nl;
        if (end - p < 4)
            return "header value length past record end";
        uint32_t vl = buf_rd_be32(p);
        p += 4;
        if ((size_t)(end - p) < vl)
            return "header value past record end";
        p += vl;
    }
    if (headers_end)
        *headers_end = p;
    if (end - p < 4)
        return "key length past record end";
    uint32_t kl = buf_rd_be32(p);
    p += 4;
    if ((size_t)(end - p) < kl)
        return "key past record end";
    p += kl;
    if (end - p < 4)
        return "body length past record end";
    uint32_t bl = buf_rd_be32(p);
    p += 4;
    if ((size_t)(end - p) != bl)
        return bl > (size_t)(end - p) ? "body past record end" : "bytes after body in record";
    return NULL;
}

frame_status_t frame_parse(frame_parser_t *p, const uint8_t *data, size_t len, frame_t *out,
                           size_t *consumed)
{
    *consumed = 0;
    /* Check the magic as soon as its bytes arrive: garbage fails fast instead of waiting. */
    static const uint8_t magic[4] = {0x4E, 0x44, 0x44, 0x31};
    size_t m = len < 4 ? len : 4;
    if (memcmp(data, magic, m) != 0)
        return fail(p, "bad magic (frame %llu): not an NDD1 frame", (unsigned long long)p->frames);
    if (len < FRAME_HEADER_LEN)
        return FRAME_NEED_MORE;

    memset(out, 0, sizeof *out);
    frame_header_read(data, &out->hdr);
    const frame_header_t *h = &out->hdr;
    if (h->version != FRAME_VERSION)
        return fail(p, "unsupported version %u (frame id %llu)", h->version,
                    (unsigned long long)h->id);
    if (h->type < FRAME_TYPE_DATA || h->type > FRAME_TYPE_NACK)
        return fail(p, "unknown frame type %u (frame id %llu)", h->type, (unsigned long long)h->id);
    if (h->payload_len > p->max_payload)
        return fail(p, "payload length %u above limit %u (frame id %llu)", h->payload_len,
                    p->max_payload, (unsigned long long)h->id);
    if (h->type == FRAME_TYPE_ACK && h->payload_len != 0)
        return fail(p, "ACK with a %u-byte payload (frame id %llu)", h->payload_len,
                    (unsigned long long)h->id);
    if (len - FRAME_HEADER_LEN < h->payload_len)
        return FRAME_NEED_MORE;

    const uint8_t *pl = data + FRAME_HEADER_LEN;
    const uint8_t *end = pl + h->payload_len;
    out->payload = pl;
    if (h->type == FRAME_TYPE_DATA) {
        if (h->payload_len < 4)
            return fail(p, "DATA payload shorter than its record count (frame id %llu)",
                        (unsigned long long)h->id);
        out->record_count = buf_rd_be32(pl);
        const uint8_t *q = pl + 4;
        for (uint32_t i = 0; i < out->record_count; i++) {
            if (end - q < 4)
                return fail(p, "record %u of %u: length past payload end (frame id %llu)", i,
                            out->record_count, (unsigned long long)h->id);
            uint32_t rl = buf_rd_be32(q);
            q += 4;
            if ((size_t)(end - q) < rl)
                return fail(p, "record %u: length %u past payload end (frame id %llu)", i, rl,
                            (unsigned long long)h->id);
            const char *why = check_record(q, q + rl, NULL);
            if (why)
                return fail(p, "record %u: %s (frame id %llu)", i, why, (unsigned long long)h->id);
            q += rl;
        }
        if (q != end)
            return fail(p, "%zu bytes after the last record (frame id %llu)", (size_t)(end - q),
                        (unsigned long long)h->id);
        if (p->check_ids) {
            if (p->have_last_id && h->id <= p->last_id)
                return fail(p, "frame id %llu not above previous %llu", (unsigned long long)h->id,
                            (unsigned long long)p->last_id);
            p->have_last_id = true;
            p->last_id = h->id;
        }
    } else if (h->type == FRAME_TYPE_NACK) {
        if (h->payload_len < 4)
            return fail(p, "NACK payload shorter than 4 bytes (frame id %llu)",
                        (unsigned long long)h->id);
        out->nack_status = buf_rd_be16(pl);
        uint16_t rl = buf_rd_be16(pl + 2);
        if ((size_t)rl != h->payload_len - 4u)
            return fail(p, "NACK reason length %u does not match payload (frame id %llu)", rl,
                        (unsigned long long)h->id);
        out->nack_reason.ptr = (const char *)pl + 4;
        out->nack_reason.len = rl;
    }
    p->frames++;
    *consumed = FRAME_HEADER_LEN + (size_t)h->payload_len;
    return FRAME_OK;
}

void frame_records(const frame_t *f, frame_record_iter_t *it)
{
    if (f->hdr.type != FRAME_TYPE_DATA || !f->payload) {
        it->p = it->end = NULL;
        it->left = 0;
        return;
    }
    it->p = f->payload + 4;
    it->end = f->payload + f->hdr.payload_len;
    it->left = f->record_count;
}

bool frame_record_next(frame_record_iter_t *it, frame_record_t *rec)
{
    if (it->left == 0)
        return false;
    /* The frame was validated by frame_parse; the bounds checks stay as a guard for
     * callers that iterate a frame they did not parse. */
    if (it->end - it->p < 4)
        return false;
    uint32_t rl = buf_rd_be32(it->p);
    const uint8_t *p = it->p + 4, *hend = NULL;
    if ((size_t)(it->end - p) < rl || check_record(p, p + rl, &hend) != NULL)
        return false;
    const uint8_t *rend = p + rl;
    rec->header_count = buf_rd_be16(p);
    rec->headers = p + 2;
    rec->headers_len = (size_t)(hend - rec->headers);
    p = hend;
    uint32_t kl = buf_rd_be32(p);
    rec->key.ptr = (const char *)p + 4;
    rec->key.len = kl;
    p += 4 + kl;
    uint32_t bl = buf_rd_be32(p);
    rec->body.ptr = (const char *)p + 4;
    rec->body.len = bl;
    it->p = rend;
    it->left--;
    return true;
}

void frame_headers(const frame_record_t *rec, frame_header_iter_t *it)
{
    it->p = rec->headers;
    it->end = rec->headers + rec->headers_len;
    it->left = rec->header_count;
}

bool frame_header_next(frame_header_iter_t *it, codec_slice_t *name, codec_slice_t *value)
{
    if (it->left == 0 || it->end - it->p < 2)
        return false;
    uint16_t nl = buf_rd_be16(it->p);
    const uint8_t *p = it->p + 2;
    if ((size_t)(it->end - p) < (size_t)nl + 4)
        return false;
    name->ptr = (const char *)p;
    name->len = nl;
    p += nl;
    uint32_t vl = buf_rd_be32(p);
    p += 4;
    if ((size_t)(it->end - p) < vl)
        return false;
    value->ptr = (const char *)p;
    value->len = vl;
    it->p = p + vl;
    it->left--;
    return true;
}

bool frame_record_header(const frame_record_t *rec, const char *name, codec_slice_t *value)
{
    frame_header_iter_t it;
    codec_slice_t n, v;
    size_t len = strlen(name);
    frame_headers(rec, &it);
    while (frame_header_next(&it, &n, &v)) {
        if (n.len == len && memcmp(n.ptr, name, len) == 0) {
            *value = v;
            return true;
        }
    }
    return false;
}

/* ---- building ---- */

static int put_header(buf_t *out, uint8_t type, uint16_t flags, uint32_t len, uint64_t id)
{
    if (buf_reserve(out, FRAME_HEADER_LEN) != 0)
        return -1;
    uint8_t *h = out->data + out->len;
    wr_be32(h, FRAME_MAGIC);
    h[4] = FRAME_VERSION;
    h[5] = type;
    wr_be16(h + FRAME_OFF_FLAGS, flags);
    wr_be32(h + FRAME_OFF_LENGTH, len);
    wr_be64(h + FRAME_OFF_ID, id);
    out->len += FRAME_HEADER_LEN;
    return 0;
}

int frame_build_ack(buf_t *out, uint64_t id)
{
    return put_header(out, FRAME_TYPE_ACK, 0, 0, id);
}

int frame_build_nack(buf_t *out, uint64_t id, uint16_t status, const char *reason,
                     size_t reason_len)
{
    if (reason_len > UINT16_MAX)
        reason_len = UINT16_MAX;
    size_t start = out->len;
    if (buf_reserve(out, FRAME_HEADER_LEN + 4 + reason_len) != 0)
        return -1;
    if (put_header(out, FRAME_TYPE_NACK, 0, (uint32_t)(4 + reason_len), id) != 0 ||
        buf_append_be16(out, status) != 0 || buf_append_be16(out, (uint16_t)reason_len) != 0 ||
        buf_append(out, reason, reason_len) != 0) {
        out->len = start;
        return -1;
    }
    return 0;
}

int frame_data_begin(frame_builder_t *b, buf_t *out, uint64_t id, uint16_t flags,
                     uint32_t max_payload)
{
    b->out = out;
    b->start = out->len;
    b->rec_start = SIZE_MAX;
    b->hcount_off = 0;
    b->hcount = 0;
    b->count = 0;
    b->max_payload = max_payload ? max_payload : FRAME_DEFAULT_MAX_PAYLOAD;
    if (put_header(out, FRAME_TYPE_DATA, flags, 4, id) != 0 || buf_append_be32(out, 0) != 0) {
        out->len = b->start;
        return -1;
    }
    return 0;
}

/* Would the payload stay within max_payload after `extra` more bytes? */
static int fits(const frame_builder_t *b, size_t extra)
{
    size_t payload = b->out->len - b->start - FRAME_HEADER_LEN;
    return payload + extra <= b->max_payload;
}

int frame_data_record_begin(frame_builder_t *b)
{
    if (b->rec_start != SIZE_MAX)
        frame_data_record_abort(b);
    if (b->count == UINT32_MAX || !fits(b, 6))
        return -1;
    size_t at = b->out->len;
    if (buf_append_be32(b->out, 0) != 0 || buf_append_be16(b->out, 0) != 0) {
        b->out->len = at;
        return -1;
    }
    b->rec_start = at;
    b->hcount_off = at + 4;
    b->hcount = 0;
    return 0;
}

void frame_data_record_abort(frame_builder_t *b)
{
    if (b->rec_start != SIZE_MAX) {
        b->out->len = b->rec_start;
        b->rec_start = SIZE_MAX;
    }
}

int frame_data_record_header(frame_builder_t *b, const void *name, size_t name_len,
                             const void *value, size_t value_len)
{
    if (b->rec_start == SIZE_MAX)
        return -1;
    size_t need = 2 + name_len + 4 + value_len;
    if (name_len == 0 || name_len > UINT16_MAX || value_len > UINT32_MAX ||
        b->hcount == UINT16_MAX || !fits(b, need) || buf_reserve(b->out, need) != 0) {
        frame_data_record_abort(b);
        return -1;
    }
    buf_append_be16(b->out, (uint16_t)name_len);
    buf_append(b->out, name, name_len);
    buf_append_be32(b->out, (uint32_t)value_len);
    buf_append(b->out, value, value_len);
    b->hcount++;
    return 0;
}

int frame_data_record_end(frame_builder_t *b, const void *key, size_t key_len, const void *body,
                          size_t body_len)
{
    if (b->rec_start == SIZE_MAX)
        return -1;
    size_t need = 4 + key_len + 4 + body_len;
    if (key_len > UINT32_MAX || body_len > UINT32_MAX || !fits(b, need) ||
        buf_reserve(b->out, need) != 0) {
        frame_data_record_abort(b);
        return -1;
    }
    buf_append_be32(b->out, (uint32_t)key_len);
    buf_append(b->out, key, key_len);
    buf_append_be32(b->out, (uint32_t)body_len);
    buf_append(b->out, body, body_len);
    uint8_t *d = b->out->data;
    wr_be32(d + b->rec_start, (uint32_t)(b->out->len - b->rec_start - 4));
    wr_be16(d + b->hcount_off, b->hcount);
    b->rec_start = SIZE_MAX;
    b->count++;
    return 0;
}

/* One header written into room already reserved. */
static uint8_t *put_hdr(uint8_t *d, const void *name, size_t nl, const void *value, size_t vl)
{
    wr_be16(d, (uint16_t)nl);
    memcpy(d + 2, name, nl);
    d += 2 + nl;
    wr_be32(d, (uint32_t)vl);
    if (vl)
        memcpy(d + 4, value, vl);
    return d + 4 + vl;
}

/* Sizes the whole record first, checks and reserves it once, then writes it without further
 * checks: the same bytes and the same refusals as record_begin / header x N / record_end
 * (any refusal leaves no record behind), without a reserve and a bounds check per field. */
int frame_data_add_msg(frame_builder_t *b, const codec_msg_t *m)
{
    frame_data_record_abort(b);
    const char *names[CODEC_META__COUNT];
    size_t name_lens[CODEC_META__COUNT];
    size_t need = 4 + 2, hcount = 0;
    int bad = 0;
    for (int i = 0; i < CODEC_META__COUNT; i++) {
        if (!m->meta[i].ptr)
            continue;
        names[i] = codec_meta_name((codec_meta_t)i);
        name_lens[i] = codec_meta_name_len((codec_meta_t)i);
        bad |= name_lens[i] == 0 || name_lens[i] > UINT16_MAX || m->meta[i].len > UINT32_MAX;
        need += 2 + name_lens[i] + 4 + m->meta[i].len;
        hcount++;
    }
    for (size_t i = 0; i < m->n_http; i++) {
        const codec_header_t *h = &m->http[i];
        bad |= h->name.len == 0 || h->name.len > UINT16_MAX || h->value.len > UINT32_MAX;
        need += 2 + h->name.len + 4 + h->value.len;
    }
    for (size_t i = 0; i < m->n_ext; i++) {
        const codec_header_t *h = &m->ext[i];
        bad |= h->name.len == 0 || h->name.len > UINT16_MAX || h->value.len > UINT32_MAX;
        need += 2 + h->name.len + 4 + h->value.len;
    }
    hcount += m->n_http + m->n_ext;
    bad |= hcount > UINT16_MAX || m->key.len > UINT32_MAX || m->body.len > UINT32_MAX;
    need += 4 + m->key.len + 4 + m->body.len;
    if (bad || b->count == UINT32_MAX || !fits(b, need) || buf_reserve(b->out, need) != 0)
        return -1;

    uint8_t *start = b->out->data + b->out->len;
    uint8_t *d = start + 6;
    for (int i = 0; i < CODEC_META__COUNT; i++)
        if (m->meta[i].ptr)
            d = put_hdr(d, names[i], name_lens[i], m->meta[i].ptr, m->meta[i].len);
    for (size_t i = 0; i < m->n_http; i++)
        d = put_hdr(d, m->http[i].name.ptr, m->http[i].name.len, m->http[i].value.ptr,
                    m->http[i].value.len);
    for (size_t i = 0; i < m->n_ext; i++)
        d = put_hdr(d, m->ext[i].name.ptr, m->ext[i].name.len, m->ext[i].value.ptr,
                    m->ext[i].value.len);
    wr_be32(d, (uint32_t)m->key.len);
    if (m->key.len)
        memcpy(d + 4, m->key.ptr, m->key.len);
    d += 4 + m->key.len;
    wr_be32(d, (uint32_t)m->body.len);
    if (m->body.len)
        memcpy(d + 4, m->body.ptr, m->body.len);
    d += 4 + m->body.len;
    wr_be32(start, (uint32_t)(need - 4));
    wr_be16(start + 4, (uint16_t)hcount);
    b->out->len += need;
    b->count++;
    return 0;
}

int frame_data_end(frame_builder_t *b)
{
    frame_data_record_abort(b);
    uint8_t *d = b->out->data + b->start;
    wr_be32(d + FRAME_OFF_LENGTH, (uint32_t)(b->out->len - b->start - FRAME_HEADER_LEN));
    wr_be32(d + FRAME_HEADER_LEN, b->count);
    return 0;
}

void frame_data_abort(frame_builder_t *b)
{
    b->out->len = b->start;
    b->rec_start = SIZE_MAX;
    b->count = 0;
}

void frame_set_id(uint8_t *frame, uint64_t id)
{
    wr_be64(frame + FRAME_OFF_ID, id);
}

void frame_set_flags(uint8_t *frame, uint16_t flags)
{
    wr_be16(frame + FRAME_OFF_FLAGS, flags);
}

int frame_build_copy(buf_t *out, const codec_msg_t *m)
{
    frame_builder_t b;
    if (frame_data_begin(&b, out, 0, 0, UINT32_MAX) != 0)
        return -1;
    if (frame_data_add_msg(&b, m) != 0) {
        frame_data_abort(&b);
        return -1;
    }
    return frame_data_end(&b);
}
