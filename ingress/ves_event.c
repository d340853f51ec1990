/* VES 7.x commonEventHeader and request-shape validation (ves_event.h). The rules are those of
 * the VES 7.x event format's commonEventHeader: the required fields, their JSON types, the
 * domain and priority enumerations, version "4.x" of the header and vesEventListenerVersion
 * "7.x". The error texts follow ONAP's VES collector: a body that is not JSON is SVC2000
 * "Couldn't parse JSON object", one that breaks the schema is SVC2000 naming the field. */
#include "ves_event.h"

#include <stdio.h>
#include <string.h>

static const char *const domains[] = {
    "fault",
    "heartbeat",
    "measurement",
    "mobileFlow",
    "notification",
    "other",
    "perf3gpp",
    "pnfRegistration",
    "sipSignaling",
    "stateChange",
    "stndDefined",
    "syslog",
    "thresholdCrossingAlert",
    "voiceQuality",
};
static const char *const priorities[] = {"High", "Medium", "Normal", "Low"};

void ves_error_set(ves_error_t *err, int status, const char *kind, const char *id, const char *text,
                   const char *var1, const char *var2)
{
    err->status = status;
    err->kind = kind;
    err->message_id = id;
    err->text = text;
    snprintf(err->var1, sizeof err->var1, "%s", var1 ? var1 : "");
    snprintf(err->var2, sizeof err->var2, "%s", var2 ? var2 : "");
}

/* ONAP's SCHEMA_VALIDATION_FAILED (SVC0002, no variables in ONAP's body); NDD adds one
 * variable naming the field and what is wrong with it, which ONAP's clients ignore. */
static int schema_error(ves_error_t *err, const char *what, const char *field)
{
    char v[192];
    snprintf(v, sizeof v, "%s %s", field, what);
    ves_error_set(err, 400, "ServiceException", "SVC0002",
                  "Bad Parameter (JSON does not conform to schema)", v, NULL);
    return -1;
}

/* ONAP's INVALID_JSON_INPUT: not JSON, or not the shape of the path (event / eventList). */
static void json_input_error(ves_error_t *err, const char *detail)
{
    ves_error_set(err, 400, "ServiceException", "SVC0002", "Incorrect JSON payload", detail, NULL);
}

static bool in_set(const char *s, const char *const *set, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(s, set[i]))
            return true;
    return false;
}

/* "<major>.<digits>[.<digits>]" with the given major. */
static bool version_of(const char *s, char major)
{
    if (s[0] != major || s[1] != '.')
        return false;
    const char *p = s + 2;
    int groups = 0;
    while (*p) {
        if (*p < '0' || *p > '9')
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
        groups++;
        if (*p == '.' && p[1])
            p++;
        else if (*p)
            return false;
    }
    return groups >= 1 && groups <= 2;
}

static int check_header(json_t *event, const char **domain, ves_error_t *err)
{
    if (!json_is_object(event))
        return schema_error(err, "is not an object", "event");
    json_t *h = json_object_get(event, "commonEventHeader");
    if (!h)
        return schema_error(err, "is missing", "event.commonEventHeader");
    if (!json_is_object(h))
        return schema_error(err, "is not an object", "event.commonEventHeader");
    static const char *const strings[] = {"domain",
                                          "eventId",
                                          "eventName",
                                          "priority",
                                          "reportingEntityName",
                                          "sourceName",
                                          "version",
                                          "vesEventListenerVersion"};
    char f[96];
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) {
        json_t *v = json_object_get(h, strings[i]);
        snprintf(f, sizeof f, "commonEventHeader.%s", strings[i]);
        if (!v)
            return schema_error(err, "is missing", f);
        if (!json_is_string(v))
            return schema_error(err, "is not a string", f);
        if (json_string_length(v) == 0)
            return schema_error(err, "is empty", f);
    }
    static const char *const numbers[] = {"lastEpochMicrosec", "startEpochMicrosec"};
    for (size_t i = 0; i < 2; i++) {
        json_t *v = json_object_get(h, numbers[i]);
        snprintf(f, sizeof f, "commonEventHeader.%s", numbers[i]);
        if (!v)
            return schema_error(err, "is missing", f);
        if (!json_is_number(v) || json_number_value(v) < 0)
            return schema_error(err, "is not a non-negative number", f);
    }
    json_t *seq = json_object_get(h, "sequence");
    if (!seq)
        return schema_error(err, "is missing", "commonEventHeader.sequence");
    if (!json_is_integer(seq) || json_integer_value(seq) < 0)
        return schema_error(err, "is not a non-negative integer", "commonEventHeader.sequence");
    const char *d = json_string_value(json_object_get(h, "domain"));
    if (!in_set(d, domains, sizeof domains / sizeof domains[0]))
        return schema_error(err, "is not a VES domain", "commonEventHeader.domain");
    if (!in_set(json_string_value(json_object_get(h, "priority")), priorities, 4))
        return schema_error(err, "is not High, Medium, Normal or Low",
                            "commonEventHeader.priority");
    if (!version_of(json_string_value(json_object_get(h, "version")), '4'))
        return schema_error(err, "is not 4.x", "commonEventHeader.version");
    if (!version_of(json_string_value(json_object_get(h, "vesEventListenerVersion")), '7'))
        return schema_error(err, "is not 7.x", "commonEventHeader.vesEventListenerVersion");
    for (const char *const *o =
             (const char *const[]){"eventType", "nfNamingCode", "nfVendorName", "reportingEntityId",
                                   "sourceId", "timeZoneOffset", NULL};
         *o; o++) {
        json_t *v = json_object_get(h, *o);
        snprintf(f, sizeof f, "commonEventHeader.%s", *o);
        if (v && !json_is_string(v))
            return schema_error(err, "is not a string", f);
    }
    *domain = d;
    return 0;
}

int ves_validate(const uint8_t *body, size_t len, bool batch, ves_parsed_t *out, ves_error_t *err)
{
    memset(out, 0, sizeof *out);
    json_error_t je;
    json_t *root = json_loadb((const char *)body, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        json_input_error(err, NULL);
        return -1;
    }
    out->root = root;
    if (!json_is_object(root)) {
        json_input_error(err, "the body is not an object");
        goto bad;
    }
    if (!batch) {
        json_t *ev = json_object_get(root, "event");
        if (!ev) {
            json_input_error(err, "event is missing");
            goto bad;
        }
        out->one[0] = ev;
        out->events = out->one;
        out->n_events = 1;
    } else {
        json_t *list = json_object_get(root, "eventList");
        if (!list) {
            json_input_error(err, "eventList is missing");
            goto bad;
        }
        if (!json_is_array(list) || json_array_size(list) == 0) {
            schema_error(err, "is not a non-empty array", "eventList");
            goto bad;
        }
        if (json_array_size(list) > VES_MAX_BATCH) {
            schema_error(err, "has more than 1000 events", "eventList");
            goto bad;
        }
        out->n_events = json_array_size(list);
        out->events = malloc(out->n_events * sizeof(json_t *));
        if (!out->events) {
            ves_error_set(err, 503, "ServiceException", "SVC1000",
                          "No server resources (internal processing queue full)", NULL, NULL);
            goto bad;
        }
        for (size_t i = 0; i < out->n_events; i++)
            out->events[i] = json_array_get(list, i);
    }
    for (size_t i = 0; i < out->n_events; i++) {
        const char *d;
        if (check_header(out->events[i], &d, err))
            goto bad;
        if (i == 0) {
            out->domain = d;
            out->domain_len = strlen(d);
        } else if (strcmp(d, out->domain)) {
            ves_error_set(err, 400, "ServiceException", "SVC0001",
                          "Different value of domain fields in Batch Event", NULL, NULL);
            goto bad;
        }
    }
    return 0;
bad:
    ves_parsed_free(out);
    return -1;
}

void ves_parsed_free(ves_parsed_t *p)
{
    if (p->events && p->events != p->one)
        free(p->events);
    if (p->root)
        json_decref(p->root);
    memset(p, 0, sizeof *p);
}

const char *ves_event_source_name(json_t *event)
{
    return json_string_value(
        json_object_get(json_object_get(event, "commonEventHeader"), "sourceName"));
}

size_t ves_error_body(const ves_error_t *err, char *out, size_t outlen)
{
    json_t *vars = json_array();
    if (err->var1[0])
        json_array_append_new(vars, json_string(err->var1));
    if (err->var2[0])
        json_array_append_new(vars, json_string(err->var2));
    /* As ONAP's ApiException.toJSON: "variables" only when there are some. */
    json_t *o = json_array_size(vars)
                    ? json_pack("{s:{s:{s:s,s:s,s:o}}}", "requestError", err->kind, "messageId",
                                err->message_id, "text", err->text, "variables", vars)
                    : json_pack("{s:{s:{s:s,s:s}}}", "requestError", err->kind, "messageId",
                                err->message_id, "text", err->text);
    if (!json_array_size(vars))
        json_decref(vars);
    size_t n = o ? json_dumpb(o, out, outlen - 1, JSON_COMPACT) : 0;
    if (n >= outlen)
        n = 0;
    out[n] = 0;
    json_decref(o);
    return n;
}
