/* Fuzz target for REST bodies and ndd.events records, both outside input of ndd-admin.
 * The first byte picks what the rest is fed to:
 *   0-3  a create body for feeds / filters / sources / correlation, through the real handler
 *        (parse, validate; no database, so a valid body ends in 503)
 *   4-7  a merge patch applied to a valid object of that kind, then validated
 *   8    an ndd.events record (heartbeat or alarm), then status and the heartbeat check
 *   9-10 a declarative apply document (POST /api/v1/apply, 10 with prune), through the real
 *        handler over a cache holding one object of each kind (no database: a plan that
 *        writes ends in 503, a dry run or an unchanged plan in 200)
 * Whatever the input, the answer must be a status below 500 or the 503 of "no database",
 * with a JSON error body, and nothing may crash or leak. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "log.h"

static const char *const fuzz_paths[ADMIN_KIND_COUNT] = {"/api/v1/feeds", "/api/v1/filters",
                                                         "/api/v1/sources", "/api/v1/correlation"};

static const char *const fuzz_valid[ADMIN_KIND_COUNT] = {
    "{\"name\":\"f\",\"transport\":\"http2\",\"filter\":{\"name\":\"x\",\"default\":\"allow\","
    "\"rules\":[]},\"endpoints\":[{\"url\":\"http://127.0.0.1:1/x\",\"weight\":1}]}",
    "{\"name\":\"x\",\"default\":\"allow\",\"rules\":[{\"name\":\"r\",\"action\":\"drop\","
    "\"match\":{\"field\":\":path\",\"op\":\"regex\",\"value\":\"^/a\"}}]}",
    "{\"name\":\"s\",\"type\":\"SCP\",\"topic\":\"SCP\"}",
    "{\"name\":\"c\",\"timeout_ms\":5000}",
};

static void fuzz_check(const admin_resp_t *resp)
{
    if (resp->status >= 500 && resp->status != 503)
        abort();
    if (resp->status >= 400 && (resp->body.len == 0 || resp->body.data[0] != '{'))
        abort();
}

/* The apply handler over a cache with the valid object of every kind in it. */
static void fuzz_apply(const char *body, size_t len, bool prune)
{
    admin_ctx_t ctx;
    if (admin_ctx_init(&ctx, 8, 64 * 1024) != 0)
        return;
    for (int k = 0; k < ADMIN_KIND_COUNT; k++) {
        json_t *o = json_loads(fuzz_valid[k], 0, NULL);
        if (o) {
            json_object_set_new(o, "id", json_sprintf("00000000-0000-0000-0000-00000000000%d", k));
            json_object_set_new(o, "version", json_integer(1));
            admin_cache_put(&ctx.cache[k], o); /* takes the reference */
        }
    }
    admin_req_t req = {.method = ADMIN_POST,
                       .path = "/api/v1/apply",
                       .query = prune ? "prune=true" : "dry_run=true",
                       .body = body,
                       .body_len = len,
                       .principal = {.role = ADMIN_ROLE_ADMIN, .name = "fuzz"}};
    admin_resp_t resp;
    if (admin_resp_init(&resp) == 0) {
        admin_h_apply(&ctx, &req, "", &resp);
        fuzz_check(&resp);
        admin_resp_free(&resp);
    }
    admin_ctx_free(&ctx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet) {
        log_setup("fuzz_admin_body", LOG_LEVEL_OFF, 0);
        quiet = 1;
    }
    if (size < 1)
        return 0;
    unsigned sel = data[0] % 11;
    const char *body = (const char *)data + 1;
    size_t len = size - 1;
    if (sel < 4) {
        admin_ctx_t ctx;
        if (admin_ctx_init(&ctx, 4, 64 * 1024) != 0)
            return 0;
        admin_req_t req = {.method = ADMIN_POST,
                           .path = fuzz_paths[sel],
                           .body = body,
                           .body_len = len,
                           .principal = {.role = ADMIN_ROLE_ADMIN, .name = "fuzz"}};
        admin_resp_t resp;
        if (admin_resp_init(&resp) == 0) {
            admin_h_create(&ctx, &req, "", &resp);
            fuzz_check(&resp);
            admin_resp_free(&resp);
        }
        admin_ctx_free(&ctx);
    } else if (sel < 8) {
        admin_kind_t kind = (admin_kind_t)(sel - 4);
        admin_err_t err;
        json_t *patch = admin_parse_body(body, len, 64 * 1024, &err);
        if (!patch)
            return 0;
        json_t *target = json_loads(fuzz_valid[kind], 0, NULL);
        json_t *merged = admin_merge_patch(target, patch);
        if (merged && json_is_object(merged)) {
            if (admin_validate(kind, merged, &err) != 0 && (err.status < 400 || err.status >= 500))
                abort();
        }
        json_decref(merged);
        json_decref(target);
        json_decref(patch);
    } else if (sel >= 9) {
        fuzz_apply(body, len, sel == 10);
    } else {
        char e[128];
        admin_events_t *ev = admin_events_new(NULL, "ndd.events", "g", NULL, 1000, e, sizeof(e));
        if (!ev)
            return 0;
        admin_events_apply(ev, body, len, 1000);
        admin_events_apply(ev, body, len, 2000);
        admin_events_check(ev, 10000);
        json_decref(admin_events_status(ev, 10000));
        admin_events_free(ev);
    }
    return 0;
}
