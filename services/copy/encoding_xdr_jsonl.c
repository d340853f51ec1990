/* The xDR JSON lines encoding "xdr-jsonl" (docs/encodings.md): for a feed of the XDR topic,
 * whose records are xDRs written by ndd-correlation (docs/xdr.md), not message copies. It is
 * `raw`: the adapter hands on each record's value undecoded. A batch is one JSON line per
 * record: the xDR object with the whitespace between its tokens removed (a JSON string holds
 * no raw newline, so the line ends only where the record does), then '\n'. The file transport
 * writes the batch as it is into its .jsonl files; HTTP/2 posts it as application/x-ndjson.
 *
 * A value that is not one JSON object is refused (the feed dead-letters it with the reason).
 * A binary xDR ("XDR1", correlation's xdr_encode_binary) is refused too: its decoder lives in
 * correlation/, out of reach of services/, and the feed's reason says to emit JSON xDRs. */
#include "encoding.h"

#include <string.h>

#define XDR_BINARY_MAGIC "XDR1"

static encoding_result_t xdrl_begin(encoding_batch_t *b, buf_t *out, size_t max_count)
{
    encoding_batch_open(b, &encoding_xdr_jsonl, out, max_count);
    return ENCODING_OK;
}

static bool xdrl_space(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static encoding_result_t xdrl_add(encoding_batch_t *b, const codec_msg_t *m)
{
    if (!b->out)
        return ENCODING_ERROR;
    if (b->count >= b->max_count)
        return ENCODING_FULL;
    const uint8_t *p = (const uint8_t *)m->body.ptr;
    size_t n = m->body.len;
    if (n >= 4 && !memcmp(p, XDR_BINARY_MAGIC, 4)) {
        b->refused = "xdr-jsonl: a binary xDR (XDR1); the correlation must emit JSON xDRs";
        return ENCODING_REFUSED;
    }
    size_t i = 0;
    while (i < n && xdrl_space(p[i]))
        i++;
    if (i == n || p[i] != '{' || !encoding_json_valid(p, n)) {
        b->refused = "xdr-jsonl: the record's value is not one JSON object";
        return ENCODING_REFUSED;
    }
    buf_t *out = b->out;
    size_t at = out->len;
    if (buf_reserve(out, n - i + 1) != 0)
        return b->count > 0 ? ENCODING_FULL : ENCODING_TOO_BIG;
    /* compacted: whitespace outside strings dropped (valid JSON, so strings are closed) */
    uint8_t *d = out->data + at;
    size_t k = 0;
    while (i < n) {
        uint8_t c = p[i];
        if (c == '"') {
            size_t end = encoding_json_string_end(p, n, i);
            memcpy(d + k, p + i, end - i);
            k += end - i;
            i = end;
            continue;
        }
        if (!xdrl_space(c))
            d[k++] = c;
        i++;
    }
    d[k++] = '\n';
    out->len = at + k;
    b->count++;
    return ENCODING_OK;
}

const encoding_t encoding_xdr_jsonl = {
    .name = "xdr-jsonl",
    .content_type = ENCODING_NDJSON_CONTENT_TYPE,
    .form = ENCODING_FORM_JSON_LINES,
    .max_batch = 10000,
    .default_batch = 64,
    .raw = true,
    .begin_batch = xdrl_begin,
    .add = xdrl_add,
    .end_batch = encoding_batch_close,
};
