/* Fuzz target: filter definitions as JSON text. Every input must either be refused with a
 * message or compile into a filter that evaluates a few fixed copies without fault; the
 * verdict of a compiled filter must also be stable across two evaluations. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"

static void fuzz_msg_add(codec_msg_t *m, const char *name, const char *value)
{
    codec_header_t *h = &m->http[m->n_http++];
    h->name = (codec_slice_t){name, strlen(name)};
    h->value = (codec_slice_t){value, strlen(value)};
}

static void fuzz_meta(codec_msg_t *m, codec_meta_t k, const char *v)
{
    m->meta[k] = (codec_slice_t){v, strlen(v)};
}

static void fuzz_msgs(codec_msg_t *req, codec_msg_t *rsp, codec_msg_t *bare)
{
    memset(req, 0, sizeof *req);
    fuzz_meta(req, CODEC_META_CORRELATION_ID, "fz-1");
    fuzz_meta(req, CODEC_META_TIMESTAMP, "1764484033123456");
    fuzz_meta(req, CODEC_META_MESSAGE_TYPE, "request");
    fuzz_meta(req, CODEC_META_TRIGGER_POINT, "rx-request");
    fuzz_meta(req, CODEC_META_NF_TYPE, "SCP");
    fuzz_meta(req, CODEC_META_SEQ, "18446744073709551615");
    fuzz_msg_add(req, ":method", "PATCH");
    fuzz_msg_add(req, ":path", "/nnrf-nfm/v1/nf-instances/5a7bc7d0-97f5-4ed1-a5e0-1c1e3e2b1a11");
    fuzz_msg_add(req, "content-type", "application/json-patch+json");
    fuzz_msg_add(req, "user-agent", "SMF-smf01");
    req->method = req->http[0].value;
    req->path = req->http[1].value;
    req->ext[0] = (codec_header_t){{"@x-site", 7}, {"paris-1", 7}};
    req->n_ext = 1;

    memset(rsp, 0, sizeof *rsp);
    fuzz_meta(rsp, CODEC_META_CORRELATION_ID, "fz-1");
    fuzz_meta(rsp, CODEC_META_TIMESTAMP, "1764484033200000");
    fuzz_meta(rsp, CODEC_META_MESSAGE_TYPE, "response");
    fuzz_meta(rsp, CODEC_META_NF_TYPE, "NRF");
    fuzz_meta(rsp, CODEC_META_HOP_ID, "");
    fuzz_msg_add(rsp, ":status", "404");
    fuzz_msg_add(rsp, "content-type", "application/problem+json");

    memset(bare, 0, sizeof *bare); /* every field absent */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static codec_msg_t req, rsp, bare;
    static int ready;
    if (!ready) {
        fuzz_msgs(&req, &rsp, &bare);
        ready = 1;
    }
    char err[512];
    err[0] = 'x';
    filter_t *f = filter_compile_text((const char *)data, size, err, sizeof err);
    if (!f) {
        /* A refusal always says why. */
        if (err[0] == '\0' || strnlen(err, sizeof err) == sizeof err)
            abort();
        return 0;
    }
    const codec_msg_t *msgs[] = {&req, &rsp, &bare};
    for (size_t i = 0; i < 3; i++) {
        int r1, r2;
        filter_action_t a1 = filter_eval(f, msgs[i], &r1);
        filter_action_t a2 = filter_eval(f, msgs[i], &r2);
        if (a1 != a2 || r1 != r2)
            abort();
        if (!filter_rule_name(f, r1))
            abort();
    }
    filter_release(f);
    return 0;
}
