/* h2server's streams (h2server-int.h): a stream object per request, filled by nghttp2's
 * callbacks with the request's fields and body, checked against RFC 9113 (h2check.c),
 * handed to the owner once END_STREAM came, and answered through h2server_respond. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h2server-int.h"
#include "log.h"

/* ---- streams ---- */

void h2stream_release(h2server_stream_t *st)
{
    if (st->conn) {
        h2conn_t *c = st->conn;
        c->srv->buffered -= st->body_cap;
        if (st->prev)
            st->prev->next = st->next;
        else
            c->streams = st->next;
        if (st->next)
            st->next->prev = st->prev;
        if (c->sess && !st->closed)
            nghttp2_session_set_stream_user_data(c->sess, st->id, NULL);
    }
    free(st->body);
    h2server_t *srv = st->srv;
    if (srv && srv->n_pool < POOL_MAX && st->hdr_cap <= POOL_HDR_MAX) {
        if (st->resp_cap > POOL_RESP_MAX) {
            free(st->resp);
            st->resp = NULL;
            st->resp_cap = 0;
        }
        st->next = srv->pool;
        srv->pool = st;
        srv->n_pool++;
        return;
    }
    free(st->resp);
    free(st->hdr);
    free(st);
}

/* A stream for a new request: from the pool (its header buffer kept) or new. */
static h2server_stream_t *stream_new(h2server_t *srv)
{
    h2server_stream_t *st = srv->pool;
    if (!st) {
        st = malloc(sizeof *st);
        if (!st)
            return NULL;
        st->hdr = NULL;
        st->hdr_cap = 0;
        st->resp = NULL;
        st->resp_cap = 0;
    } else {
        srv->pool = st->next;
        srv->n_pool--;
    }
    /* Everything but the request record, which stream_dispatch fills (it is 2.6 KB: clearing
     * it per request was the largest memset of the copy path). */
    char *hdr = st->hdr;
    size_t hdr_cap = st->hdr_cap;
    uint8_t *resp = st->resp;
    size_t resp_cap = st->resp_cap;
    memset(st, 0, offsetof(h2server_stream_t, req));
    st->hdr = hdr;
    st->hdr_cap = hdr_cap;
    st->resp = resp;
    st->resp_cap = resp_cap;
    st->srv = srv;
    return st;
}

/* Room for n more bytes at *buf + *len (capacity doubling, at most limit); 0 or -1. */
static int reserve(char **buf, size_t *len, size_t *cap, size_t n, size_t limit)
{
    if (*len + n > limit)
        return -1;
    if (*len + n > *cap) {
        size_t nc = *cap ? *cap : 256;
        while (nc < *len + n)
            nc *= 2;
        if (nc > limit)
            nc = limit;
        char *nb = realloc(*buf, nc);
        if (!nb)
            return -1;
        *buf = nb;
        *cap = nc;
    }
    return 0;
}

static int append(char **buf, size_t *len, size_t *cap, const void *p, size_t n, size_t limit)
{
    if (reserve(buf, len, cap, n, limit))
        return -1;
    memcpy(*buf + *len, p, n);
    *len += n;
    return 0;
}

static ssize_t resp_read(nghttp2_session *sess, int32_t id, uint8_t *out, size_t len,
                         uint32_t *flags, nghttp2_data_source *src, void *user)
{
    h2server_stream_t *st = src->ptr;
    size_t n = st->resp_len - st->resp_off;
    if (n > len)
        n = len;
    if (n)
        memcpy(out, st->resp + st->resp_off, n);
    st->resp_off += n;
    if (st->resp_off == st->resp_len)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

static int stream_submit(h2server_stream_t *st, int status, const h2server_header_t *hdrs,
                         size_t n_hdrs, const void *body, size_t body_len)
{
    h2conn_t *c = st->conn;
    nghttp2_nv nv[32];
    char code[8];
    if (status >= 100 && status <= 999) {
        code[0] = (char)('0' + status / 100);
        code[1] = (char)('0' + status / 10 % 10);
        code[2] = (char)('0' + status % 10);
        code[3] = 0;
    } else {
        snprintf(code, sizeof code, "%d", status);
    }
    size_t n = 0;
    nv[n++] =
        (nghttp2_nv){(uint8_t *)":status", (uint8_t *)code, 7, strlen(code), NGHTTP2_NV_FLAG_NONE};
    for (size_t i = 0; i < n_hdrs && n < 32; i++)
        nv[n++] = (nghttp2_nv){(uint8_t *)hdrs[i].name, (uint8_t *)hdrs[i].value,
                               strlen(hdrs[i].name), strlen(hdrs[i].value), NGHTTP2_NV_FLAG_NONE};
    if (body_len) {
        if (body_len > st->resp_cap) {
            uint8_t *nb = malloc(body_len);
            if (!nb)
                return -1;
            free(st->resp);
            st->resp = nb;
            st->resp_cap = body_len;
        }
        memcpy(st->resp, body, body_len);
        st->resp_len = body_len;
    }
    nghttp2_data_provider dp = {.source.ptr = st, .read_callback = resp_read};
    st->responded = true;
    return nghttp2_submit_response(c->sess, st->id, nv, n, body_len ? &dp : NULL) == 0 ? 0 : -1;
}

int h2server_respond(h2server_stream_t *st, int status, const h2server_header_t *hdrs,
                     size_t n_hdrs, const void *body, size_t body_len)
{
    st->handed = false;
    if (!st->conn || st->closed || st->responded) {
        h2stream_release(st);
        return -1;
    }
    /* The request body is done with (Kafka acknowledged it): give its memory back now. */
    st->conn->srv->buffered -= st->body_cap;
    free(st->body);
    st->body = NULL;
    st->body_cap = st->body_len = 0;
    h2conn_t *c = st->conn;
    int rc = stream_submit(st, status, hdrs, n_hdrs, body, body_len);
    /* Inside a read (an immediate answer) conn_read flushes when nghttp2 is done; a deferred
     * answer (Kafka's acknowledgements come in batches) is flushed once per loop turn, so the
     * responses of one batch leave in one write instead of one each. */
    if (!c->in_ng && !c->flush_pending) {
        c->flush_pending = true;
        event_active(c->flush_ev, EV_WRITE, 1);
    }
    return rc;
}

void *h2server_stream_memo(h2server_stream_t *st)
{
    return st->conn ? st->conn->memo : NULL;
}

/* ---- nghttp2 callbacks ---- */

/* RFC 9113 §8.1.1: a malformed request never reaches the owner. It is answered 400 with the
 * check it failed (the RFC lets a server answer before it closes the stream, and an operator
 * then reads the reason at the client instead of a bare stream reset); whatever more the client
 * sends for it is dropped, as after a 413. The answer waits for the end of the header block
 * when the fault is in a field (refuse_pending). */
static int stream_malformed(h2server_stream_t *st, const char *why, bool answer_now)
{
    h2conn_t *c = st->conn;
    st->malformed = true;
    st->malformed_why = why;
    log_debug("h2server: %s: stream %d: malformed request: %s", c->peer, (int)st->id, why);
    c->srv->buffered -= st->body_cap;
    free(st->body);
    st->body = NULL;
    st->body_len = st->body_cap = 0;
    if (!answer_now || st->responded)
        return 0;
    char msg[160];
    int n = snprintf(msg, sizeof msg, "malformed HTTP/2 request: %s\n", why);
    static const h2server_header_t text[] = {{"content-type", "text/plain; charset=utf-8"}};
    return stream_submit(st, 400, text, 1, msg, (size_t)n) ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
}

static int on_begin_headers(nghttp2_session *sess, const nghttp2_frame *f, void *user)
{
    h2conn_t *c = user;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    h2server_stream_t *st = stream_new(c->srv);
    if (!st)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    st->conn = c;
    st->id = f->hd.stream_id;
    st->next = c->streams;
    if (c->streams)
        c->streams->prev = st;
    c->streams = st;
    nghttp2_session_set_stream_user_data(sess, st->id, st);
    return 0;
}

static int on_header(nghttp2_session *sess, const nghttp2_frame *f, nghttp2_rcbuf *name_buf,
                     nghttp2_rcbuf *value_buf, uint8_t flags, void *user)
{
    h2server_stream_t *st = nghttp2_session_get_stream_user_data(sess, f->hd.stream_id);
    if (!st || st->malformed || f->hd.type != NGHTTP2_HEADERS)
        return 0;
    nghttp2_vec nm = nghttp2_rcbuf_get_buf(name_buf), val = nghttp2_rcbuf_get_buf(value_buf);
    const uint8_t *name = nm.base, *value = val.base;
    size_t namelen = nm.len, valuelen = val.len;
    /* A static name is one of HPACK's static table: nghttp2 hands those out as static
     * buffers. */
    const char *why = h2check_field(&st->check, name, namelen, nghttp2_rcbuf_is_static(name_buf),
                                    value, valuelen, f->headers.cat != NGHTTP2_HCAT_REQUEST);
    if (why)
        return stream_malformed(st, why, false);
    /* Kept: the regular fields (up to H2SERVER_MAX_HEADERS), :method and :path, each as
     * "name\0value\0" with its place noted, so stream_dispatch need not look for them. The
     * header list size is bounded by SETTINGS_MAX_HEADER_LIST_SIZE already. */
    uint32_t *note = NULL;
    if (name[0] == ':') {
        if (namelen == 7 && !memcmp(name, ":method", 7))
            note = &st->method_at;
        else if (namelen == 5 && !memcmp(name, ":path", 5))
            note = &st->path_at;
        else
            return 0;
    } else if (st->n_fields == H2SERVER_MAX_HEADERS) {
        st->too_many_fields = true;
        return 0;
    }
    size_t at = st->hdr_len;
    if (reserve(&st->hdr, &st->hdr_len, &st->hdr_cap, namelen + valuelen + 2, 1 << 17))
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    st->hdr_len += namelen + valuelen + 2;
    memcpy(st->hdr + at, name, namelen);
    st->hdr[at + namelen] = 0;
    memcpy(st->hdr + at + namelen + 1, value, valuelen);
    st->hdr[at + namelen + 1 + valuelen] = 0;
    if (note) {
        *note = (uint32_t)(at + namelen + 2);
    } else {
        st->req.fields[st->n_fields].name_len = namelen;
        st->req.fields[st->n_fields].value_len = valuelen;
        st->field_at[st->n_fields++] = (uint32_t)at;
    }
    return 0;
}

static int on_data(nghttp2_session *sess, uint8_t flags, int32_t id, const uint8_t *data,
                   size_t len, void *user)
{
    h2conn_t *c = user;
    h2server_stream_t *st = nghttp2_session_get_stream_user_data(sess, id);
    if (!st || st->too_big || st->malformed)
        return 0;
    const char *why = h2check_data(&st->check, len, false);
    if (why)
        return stream_malformed(st, why, true);
    size_t cap0 = st->body_cap;
    if (append((char **)&st->body, &st->body_len, &st->body_cap, data, len, c->srv->o.max_body)) {
        /* Past the limit: answer 413 at once; what else comes for this stream is dropped. */
        st->too_big = true;
        c->srv->buffered -= cap0;
        free(st->body);
        st->body = NULL;
        st->body_len = st->body_cap = 0;
        static const char msg[] = "request body exceeds the size limit\n";
        h2server_header_t type = {"content-type", "text/plain; charset=utf-8"};
        const char *body = msg;
        size_t n = sizeof msg - 1;
        if (c->srv->o.too_large)
            c->srv->o.too_large(c->srv->o.arg, st->path_at ? st->hdr + st->path_at - 1 : "",
                                &type.value, &body, &n);
        stream_submit(st, 413, &type, 1, body, n);
        return 0;
    }
    c->srv->buffered += st->body_cap - cap0;
    return 0;
}

static void stream_dispatch(h2conn_t *c, h2server_stream_t *st)
{
    h2server_request_t *r = &st->req;
    r->n_fields = st->n_fields;
    r->too_many_fields = st->too_many_fields;
    r->method = st->method_at ? st->hdr + st->method_at - 1 : "";
    r->path = st->path_at ? st->hdr + st->path_at - 1 : "";
    for (size_t i = 0; i < st->n_fields; i++) {
        r->fields[i].name = st->hdr + st->field_at[i];
        r->fields[i].value = r->fields[i].name + r->fields[i].name_len + 1;
    }
    r->body = st->body ? st->body : (const uint8_t *)"";
    r->body_len = st->body_len;
    r->peer = c->peer;
    r->ssl = c->nc.ssl;
    st->handed = true;
    c->srv->o.on_request(c->srv->o.arg, st, r);
}

static int on_frame_recv(nghttp2_session *sess, const nghttp2_frame *f, void *user)
{
    h2conn_t *c = user;
    if (f->hd.type != NGHTTP2_DATA && f->hd.type != NGHTTP2_HEADERS)
        return 0;
    h2server_stream_t *st = nghttp2_session_get_stream_user_data(sess, f->hd.stream_id);
    if (!st)
        return 0;
    if (st->malformed) /* a field failed: the header block is complete now, answer once */
        return st->responded ? 0 : stream_malformed(st, st->malformed_why, true);
    bool end = f->hd.flags & NGHTTP2_FLAG_END_STREAM;
    const char *why = NULL;
    if (f->hd.type == NGHTTP2_DATA)
        why = end ? h2check_data(&st->check, 0, true) : NULL;
    else if (f->headers.cat == NGHTTP2_HCAT_REQUEST)
        why = h2check_headers_end(&st->check, end);
    else
        why = h2check_trailers_end(&st->check, end);
    if (why)
        return stream_malformed(st, why, true);
    /* The body buffer at its announced size (h2check parsed content-length): one allocation
     * instead of a doubling series; a body above max_body is refused in on_data. */
    const h2check_t *chk = &st->check;
    if (!end && f->hd.type == NGHTTP2_HEADERS && chk->has_length && chk->length > 0 &&
        chk->length <= c->srv->o.max_body && !st->body && (st->body = malloc(chk->length))) {
        st->body_cap = chk->length;
        c->srv->buffered += chk->length;
    }
    if (end && !st->responded && !st->handed)
        stream_dispatch(c, st);
    return 0;
}

static int on_stream_close(nghttp2_session *sess, int32_t id, uint32_t code, void *user)
{
    h2server_stream_t *st = nghttp2_session_get_stream_user_data(sess, id);
    if (!st)
        return 0;
    st->closed = true;
    if (!st->handed)
        h2stream_release(st);
    return 0;
}

void h2stream_callbacks(nghttp2_session_callbacks *cb)
{
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback2(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
}
