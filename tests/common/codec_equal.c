/* Equality of two decoded copies, for the tests and fuzz targets that check a round trip
 * (see codec_equal.h). */
#include "codec_equal.h"

#include <string.h>

static bool slice_same(codec_slice_t a, codec_slice_t b)
{
    if (!a.ptr || !b.ptr)
        return !a.ptr && !b.ptr;
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

static bool headers_same(const codec_header_t *a, const codec_header_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!slice_same(a[i].name, b[i].name) || !slice_same(a[i].value, b[i].value))
            return false;
    return true;
}

bool codec_equal_msg(const codec_msg_t *a, const codec_msg_t *b)
{
    if (!slice_same(a->key, b->key) || !slice_same(a->body, b->body))
        return false;
    for (int i = 0; i < CODEC_META__COUNT; i++)
        if (!slice_same(a->meta[i], b->meta[i]))
            return false;
    return a->timestamp_us == b->timestamp_us && a->type == b->type && a->trigger == b->trigger &&
           a->nf == b->nf && a->status == b->status && a->seq == b->seq &&
           a->agg_timestamp_us == b->agg_timestamp_us && a->agg_seq == b->agg_seq &&
           slice_same(a->method, b->method) && slice_same(a->path, b->path) &&
           a->n_http == b->n_http && a->n_ext == b->n_ext &&
           headers_same(a->http, b->http, a->n_http) && headers_same(a->ext, b->ext, a->n_ext);
}
