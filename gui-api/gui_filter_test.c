/* The filter editor's test box (POST /console/filter-test): compiles the filter being edited
 * with the workers' own engine (services/filter) and decides one sample copy, decoded by the
 * workers' own codec (services/copy/codec), so the answer is the one a worker would give.
 * Body: {"filter": {...}, "sample": {"headers": {"@nf-type": "SCP", ":method": "POST", ...},
 * "body": "..."}}. Answer: {"action": "allow"|"drop", "rule": index or -1, "rule_name"}, or
 * 422 with the engine's or the codec's message and the field at fault. Needs a session and
 * the CSRF token like any write (it changes nothing, but it runs regular expressions). */
#include <stdio.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "codec.h"
#include "filter.h"
#include "gui.h"

static void gui_filter_err(httpd_req_t *req, const char *error, const char *field,
                           const char *reason)
{
    httpd_reply_jansson(
        req, 422, json_pack("{s:s,s:s,s:s}", "error", error, "field", field, "reason", reason));
}

void gui_filter_test_handle(httpd_req_t *req, void *arg)
{
    gui_ctx_t *c = arg;
    gui_session_info_t who;
    gui_security_headers(req);
    if (!gui_session_require(req, c, &who))
        return;
    if (!gui_session_csrf_ok(req, &who)) {
        httpd_reply_json(req, 403,
                         "{\"error\":\"csrf\",\"field\":\"\",\"reason\":\"missing or "
                         "wrong X-CSRF-Token\"}");
        return;
    }
    size_t len;
    const char *text = httpd_req_body(req, &len);
    json_error_t je;
    json_t *b = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    json_t *spec = json_object_get(b, "filter"), *sample = json_object_get(b, "sample");
    json_t *hdrs = json_object_get(sample, "headers");
    const char *body = json_string_value(json_object_get(sample, "body"));
    char err[512];
    filter_t *f = NULL;
    rd_kafka_headers_t *kh = NULL;
    if (!json_is_object(spec) || !json_is_object(hdrs)) {
        gui_filter_err(req, "missing field", !json_is_object(spec) ? "filter" : "sample.headers",
                       "expected {\"filter\": {...}, \"sample\": {\"headers\": {...}, \"body\": "
                       "\"...\"}}");
        goto out;
    }
    if (!(f = filter_compile(spec, err, sizeof(err)))) {
        char field[128];
        size_t fl = strcspn(err, ":");
        snprintf(field, sizeof(field), "filter.%.*s", (int)(fl < 100 ? fl : 100), err);
        gui_filter_err(req, "invalid filter", err[fl] ? field : "filter", err);
        goto out;
    }
    kh = rd_kafka_headers_new(json_object_size(hdrs));
    const char *k;
    json_t *v;
    json_object_foreach(hdrs, k, v)
    {
        const char *s = json_string_value(v);
        if (!s) {
            char field[160];
            snprintf(field, sizeof(field), "sample.headers.%s", k);
            gui_filter_err(req, "wrong type", field, "header values are strings");
            goto out;
        }
        rd_kafka_header_add(kh, k, -1, s, -1);
    }
    codec_msg_t m;
    codec_error_t ce = {0};
    const char *bd = body ? body : "";
    if (codec_decode_parts(&m, NULL, 0, bd, strlen(bd), kh, &ce) != CODEC_OK) {
        char field[96], reason[256];
        snprintf(field, sizeof(field), "sample.headers.%s", ce.field);
        snprintf(reason, sizeof(reason), "%s: %s", codec_reason_name(ce.reason), ce.detail);
        gui_filter_err(req, "invalid sample", field, reason);
        goto out;
    }
    int rule = FILTER_RULE_DEFAULT;
    filter_action_t a = filter_eval(f, &m, &rule);
    httpd_reply_jansson(req, 200,
                        json_pack("{s:s,s:i,s:s?}", "action", filter_action_name(a), "rule",
                                  rule == FILTER_RULE_DEFAULT ? -1 : rule, "rule_name",
                                  rule == FILTER_RULE_DEFAULT ? NULL : filter_rule_name(f, rule)));
out:
    if (kh)
        rd_kafka_headers_destroy(kh);
    filter_release(f);
    json_decref(b);
}
