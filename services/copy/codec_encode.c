/* The write side of the message copy codec: a decoded copy's headers written back (the
 * aggregation's re-produce to MAIN), single headers replaced, and the dead-letter headers
 * (docs/message-format.md). codec.c decodes; this file only writes what a decode read. */
#include "codec.h"

#include "buf.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int codec_encode_headers(const codec_msg_t *m, rd_kafka_headers_t *hdrs)
{
    for (int i = 0; i < CODEC_META__COUNT; i++) {
        if (!m->meta[i].ptr)
            continue;
        if (rd_kafka_header_add(hdrs, codec_meta_name((codec_meta_t)i), -1, m->meta[i].ptr,
                                (ssize_t)m->meta[i].len) != RD_KAFKA_RESP_ERR_NO_ERROR)
            return -1;
    }
    for (size_t i = 0; i < m->n_http; i++) {
        const codec_header_t *h = &m->http[i];
        if (rd_kafka_header_add(hdrs, h->name.ptr, (ssize_t)h->name.len, h->value.ptr,
                                (ssize_t)h->value.len) != RD_KAFKA_RESP_ERR_NO_ERROR)
            return -1;
    }
    for (size_t i = 0; i < m->n_ext; i++) {
        const codec_header_t *h = &m->ext[i];
        if (rd_kafka_header_add(hdrs, h->name.ptr, (ssize_t)h->name.len, h->value.ptr,
                                (ssize_t)h->value.len) != RD_KAFKA_RESP_ERR_NO_ERROR)
            return -1;
    }
    return 0;
}

int codec_headers_set(rd_kafka_headers_t *hdrs, const char *name, const void *value, size_t len)
{
    rd_kafka_resp_err_t e = rd_kafka_header_remove(hdrs, name);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR && e != RD_KAFKA_RESP_ERR__NOENT)
        return -1;
    return rd_kafka_header_add(hdrs, name, -1, value, (ssize_t)len) == RD_KAFKA_RESP_ERR_NO_ERROR
               ? 0
               : -1;
}

int codec_headers_set_meta(rd_kafka_headers_t *hdrs, codec_meta_t m, const void *value, size_t len)
{
    if ((unsigned)m >= CODEC_META__COUNT)
        return -1;
    return codec_headers_set(hdrs, codec_meta_name(m), value, len);
}

bool codec_msg_cid_needs_header(const codec_msg_t *m)
{
    return m->cid_in == CODEC_CID_IN_KEY;
}

int codec_headers_correlation_id(const rd_kafka_headers_t *hdrs, const void **value, size_t *len)
{
    const void *v = NULL;
    size_t n = 0;
    if (!hdrs ||
        rd_kafka_header_get_last(hdrs, codec_meta_name(CODEC_META_CORRELATION_ID), &v, &n) !=
            RD_KAFKA_RESP_ERR_NO_ERROR ||
        !v || n == 0)
        return -1;
    *value = v;
    *len = n;
    return 0;
}

int codec_format_origin(char *dst, size_t dstlen, const char *topic, int32_t partition,
                        int64_t offset)
{
    /* "topic/partition/offset" as snprintf would write it, formatted directly: the aggregation
     * writes one into every record it forwards. */
    size_t tl = strlen(topic);
    char num[2 * BUF_DEC_MAX + 2];
    size_t nl = 0;
    num[nl++] = '/';
    nl += buf_format_i64(num + nl, partition);
    num[nl++] = '/';
    nl += buf_format_i64(num + nl, offset);
    if (tl >= dstlen || nl >= dstlen - tl) {
        if (dstlen > 0)
            dst[0] = '\0';
        return -1;
    }
    memcpy(dst, topic, tl);
    memcpy(dst + tl, num, nl + 1);
    return (int)(tl + nl);
}

int codec_dlq_headers(rd_kafka_headers_t *hdrs, const codec_error_t *err, const char *origin)
{
    const char *reason = codec_reason_name(err->reason);
    if (codec_headers_set(hdrs, CODEC_DLQ_REASON, reason, strlen(reason)) != 0 ||
        codec_headers_set(hdrs, CODEC_DLQ_FIELD, err->field, strlen(err->field)) != 0 ||
        codec_headers_set(hdrs, CODEC_DLQ_DETAIL, err->detail, strlen(err->detail)) != 0)
        return -1;
    if (origin && codec_headers_set(hdrs, CODEC_DLQ_ORIGIN, origin, strlen(origin)) != 0)
        return -1;
    return 0;
}
