/* GET /api/v1/deadletters: the dead-letter topics of the admin's cluster, and the last records
 * of one (admin_dlq.c reads them). Any role sees reasons and fields; only the admin role sees
 * the bodies (the first 512 bytes), which are copies of the traffic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "httpd.h"

void admin_h_deadletters(admin_ctx_t *ctx, const admin_req_t *req, const char *id,
                         admin_resp_t *resp)
{
    if (!ctx->dlq) {
        admin_resp_errorf(resp, 503, "kafka unavailable", "",
                          "the dead-letter view reads Kafka, and this admin has no Kafka "
                          "(--bootstrap)");
        return;
    }
    char topic[256], v[16];
    int limit = 20;
    if (httpd_query_get(req->query, "limit", v, sizeof(v))) {
        char *end;
        long n = strtol(v, &end, 10);
        if (end == v || *end || n < 1 || n > 100) {
            admin_resp_errorf(resp, 400, "invalid parameter", "limit",
                              "expected an integer 1..100");
            return;
        }
        limit = (int)n;
    }
    admin_err_t err;
    json_t *j;
    if (!httpd_query_get(req->query, "topic", topic, sizeof(topic))) {
        j = admin_dlq_topics(ctx->dlq, ctx, &err);
    } else if (!admin_dlq_topic_ok(ctx, topic)) {
        admin_resp_errorf(resp, 404, "not found", "topic",
                          "\"%s\" is not a dead-letter topic (ndd.dlq.*, or a feed's dlq_topic)",
                          topic);
        return;
    } else {
        j = admin_dlq_read(ctx->dlq, topic, limit, req->principal.role == ADMIN_ROLE_ADMIN, &err);
    }
    if (!j)
        admin_resp_error(resp, &err);
    else
        admin_resp_json(resp, 200, j);
}
