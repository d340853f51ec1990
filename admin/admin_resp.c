/* Response helpers: every error leaves as {"error","field","reason"} so clients can point at
 * the field at fault without parsing prose. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "admin.h"

/* Responses are small JSON documents; the ceiling only guards against a runaway list. */
#define ADMIN_RESP_MAX (64u * 1024u * 1024u)

void admin_err_set(admin_err_t *err, int status, const char *error, const char *field,
                   const char *fmt, ...)
{
    if (!err)
        return;
    err->status = status;
    snprintf(err->error, sizeof(err->error), "%s", error ? error : "");
    snprintf(err->field, sizeof(err->field), "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->reason, sizeof(err->reason), fmt, ap);
    va_end(ap);
}

int admin_resp_init(admin_resp_t *resp)
{
    memset(resp, 0, sizeof(*resp));
    resp->status = 500;
    resp->content_type = "application/json";
    return buf_init(&resp->body, 0, ADMIN_RESP_MAX);
}

void admin_resp_free(admin_resp_t *resp)
{
    buf_free(&resp->body);
}

void admin_resp_error(admin_resp_t *resp, const admin_err_t *err)
{
    buf_reset(&resp->body);
    resp->body_ref = NULL;
    resp->status = err->status;
    resp->content_type = "application/json";
    buf_append_str(&resp->body, "{\"error\":\"");
    buf_append_json_escaped(&resp->body, err->error, strlen(err->error));
    buf_append_str(&resp->body, "\",\"field\":\"");
    buf_append_json_escaped(&resp->body, err->field, strlen(err->field));
    buf_append_str(&resp->body, "\",\"reason\":\"");
    buf_append_json_escaped(&resp->body, err->reason, strlen(err->reason));
    buf_append_str(&resp->body, "\"}\n");
}

void admin_resp_errorf(admin_resp_t *resp, int status, const char *error, const char *field,
                       const char *fmt, ...)
{
    admin_err_t e;
    e.status = status;
    snprintf(e.error, sizeof(e.error), "%s", error ? error : "");
    snprintf(e.field, sizeof(e.field), "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.reason, sizeof(e.reason), fmt, ap);
    va_end(ap);
    admin_resp_error(resp, &e);
}

static int admin_resp_dump_cb(const char *s, size_t n, void *arg)
{
    return buf_append((buf_t *)arg, s, n);
}

void admin_resp_json(admin_resp_t *resp, int status, json_t *json)
{
    buf_reset(&resp->body);
    resp->body_ref = NULL;
    resp->content_type = "application/json";
    if (!json || json_dump_callback(json, admin_resp_dump_cb, &resp->body, JSON_COMPACT) != 0) {
        json_decref(json);
        admin_resp_errorf(resp, 500, "internal", "", "response could not be serialised");
        return;
    }
    json_decref(json);
    buf_append_str(&resp->body, "\n");
    resp->status = status;
}

void admin_resp_text(admin_resp_t *resp, int status, const char *text, size_t len)
{
    buf_reset(&resp->body);
    resp->body_ref = NULL;
    if (buf_append(&resp->body, text, len) != 0) {
        admin_resp_errorf(resp, 500, "internal", "", "response too large");
        return;
    }
    resp->status = status;
}
