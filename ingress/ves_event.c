/* VES 7.x commonEventHeader and request-shape validation (ves_event.h). The rules are those of
 * the VES 7.x event format's commonEventHeader: the required fields, their JSON types, the
 * domain and priority enumerations, version "4.x" of the header and vesEventListenerVersion
 * "7.x". The error texts follow ONAP's VES collector: a body that is not JSON is SVC2000
 * "Couldn't parse JSON object", one that breaks the schema is SVC2000 naming the field. */
#include "ves_event.h"

#include <stdio.h>
#include <string.h>

#include "buf.h"

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

/* One member of a commonEventHeader as the checks see it, whichever parser found it. */
typedef enum hv_type { HV_ABSENT = 0, HV_STRING, HV_INTEGER, HV_REAL, HV_OTHER } hv_type_t;
typedef struct hval {
    hv_type_t t;
    const char *s; /* HV_STRING: the bytes (not NUL-terminated in the fast path) */
    size_t n;
    bool neg; /* HV_INTEGER, HV_REAL: the value is below 0 */
} hval_t;

typedef hval_t (*header_get_fn)(const void *h, const char *name);

/* schema_error for commonEventHeader.<name> (the path is built only for a refusal). */
static int header_error(ves_error_t *err, const char *what, const char *name)
{
    char f[96];
    snprintf(f, sizeof f, "commonEventHeader.%s", name);
    return schema_error(err, what, f);
}

static bool in_set_n(const char *s, size_t n, const char *const *set, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (strlen(set[i]) == n && !memcmp(s, set[i], n))
            return true;
    return false;
}

/* "<major>.<digits>[.<digits>]" with the given major, over n bytes. */
static bool version_of(const char *s, size_t n, char major)
{
    if (n < 3 || s[0] != major || s[1] != '.')
        return false;
    size_t i = 2;
    int groups = 0;
    while (i < n) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        groups++;
        if (i < n && s[i] == '.' && i + 1 < n)
            i++;
        else if (i < n)
            return false;
    }
    return groups >= 1 && groups <= 2;
}

/* The commonEventHeader rules over its members (get), in one order for both parsers so a
 * header is refused for the same first fault. domain, dlen: the domain's bytes. */
static int check_header_fields(header_get_fn get, const void *h, const char **domain, size_t *dlen,
                               ves_error_t *err)
{
    static const char *const strings[] = {"domain",
                                          "eventId",
                                          "eventName",
                                          "priority",
                                          "reportingEntityName",
                                          "sourceName",
                                          "version",
                                          "vesEventListenerVersion"};
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) {
        hval_t v = get(h, strings[i]);
        if (v.t == HV_ABSENT)
            return header_error(err, "is missing", strings[i]);
        if (v.t != HV_STRING)
            return header_error(err, "is not a string", strings[i]);
        if (v.n == 0)
            return header_error(err, "is empty", strings[i]);
    }
    static const char *const numbers[] = {"lastEpochMicrosec", "startEpochMicrosec"};
    for (size_t i = 0; i < 2; i++) {
        hval_t v = get(h, numbers[i]);
        if (v.t == HV_ABSENT)
            return header_error(err, "is missing", numbers[i]);
        if ((v.t != HV_INTEGER && v.t != HV_REAL) || v.neg)
            return header_error(err, "is not a non-negative number", numbers[i]);
    }
    hval_t seq = get(h, "sequence");
    if (seq.t == HV_ABSENT)
        return schema_error(err, "is missing", "commonEventHeader.sequence");
    if (seq.t != HV_INTEGER || seq.neg)
        return schema_error(err, "is not a non-negative integer", "commonEventHeader.sequence");
    hval_t d = get(h, "domain");
    if (!in_set_n(d.s, d.n, domains, sizeof domains / sizeof domains[0]))
        return schema_error(err, "is not a VES domain", "commonEventHeader.domain");
    hval_t pr = get(h, "priority");
    if (!in_set_n(pr.s, pr.n, priorities, 4))
        return schema_error(err, "is not High, Medium, Normal or Low",
                            "commonEventHeader.priority");
    hval_t ver = get(h, "version");
    if (!version_of(ver.s, ver.n, '4'))
        return schema_error(err, "is not 4.x", "commonEventHeader.version");
    hval_t lv = get(h, "vesEventListenerVersion");
    if (!version_of(lv.s, lv.n, '7'))
        return schema_error(err, "is not 7.x", "commonEventHeader.vesEventListenerVersion");
    for (const char *const *o =
             (const char *const[]){"eventType", "nfNamingCode", "nfVendorName", "reportingEntityId",
                                   "sourceId", "timeZoneOffset", NULL};
         *o; o++) {
        hval_t v = get(h, *o);
        if (v.t != HV_ABSENT && v.t != HV_STRING)
            return header_error(err, "is not a string", *o);
    }
    *domain = d.s;
    *dlen = d.n;
    return 0;
}

static hval_t tree_get(const void *h, const char *name)
{
    json_t *v = json_object_get(h, name);
    hval_t r = {0};
    if (!v)
        return r;
    if (json_is_string(v)) {
        r.t = HV_STRING;
        r.s = json_string_value(v);
        r.n = json_string_length(v);
    } else if (json_is_integer(v)) {
        r.t = HV_INTEGER;
        r.neg = json_integer_value(v) < 0;
    } else if (json_is_real(v)) {
        r.t = HV_REAL;
        r.neg = json_real_value(v) < 0;
    } else {
        r.t = HV_OTHER;
    }
    return r;
}

static int check_header(json_t *event, const char **domain, size_t *dlen, ves_error_t *err)
{
    if (!json_is_object(event))
        return schema_error(err, "is not an object", "event");
    json_t *h = json_object_get(event, "commonEventHeader");
    if (!h)
        return schema_error(err, "is missing", "event.commonEventHeader");
    if (!json_is_object(h))
        return schema_error(err, "is not an object", "event.commonEventHeader");
    return check_header_fields(tree_get, h, domain, dlen, err);
}

/* ---- the fast path of a single event ----
 *
 * jansson builds a tree of every value of the request (an allocation per value, a hash table
 * per object) and it was 60 % of a VES request's cost, for a check that reads 14 members of
 * one object. fast_scan validates the whole body as JSON in one pass without building
 * anything and keeps only the commonEventHeader's members. It is conservative: it accepts
 * only a subset of what jansson accepts (strings of ASCII from 0x20 without escapes, numbers
 * without exponent of at most 18 characters, depth at most 32, at most 64 members an object)
 * and says "not sure" for anything else, and a request it does not accept in full (invalid,
 * or any header rule broken) goes through jansson as before. So the answers, errors and
 * their bodies are jansson's path's exactly; fuzz_ves_json checks that both paths agree. */

#define FAST_DEPTH 32
#define FAST_KEYS 64   /* members of one object */
#define FAST_STACK 512 /* member names held at once (duplicates are refused, as jansson does) */

typedef enum frame_role { ROLE_OTHER = 0, ROLE_ROOT, ROLE_EVENT, ROLE_HEADER } frame_role_t;

typedef struct fast_member {
    const char *k;
    size_t kn;
    hval_t v;
} fast_member_t;

typedef struct fast {
    const char *p, *end;
    int depth;
    bool event_seen, header_seen; /* "event" an object, "commonEventHeader" one in it */
    fast_member_t hdr[FAST_KEYS];
    size_t n_hdr;
    struct {
        const char *k;
        size_t kn;
    } keys[FAST_STACK];
    size_t n_keys;
} fast_t;

static void fast_ws(fast_t *f)
{
    while (f->p < f->end && (*f->p == ' ' || *f->p == '\t' || *f->p == '\n' || *f->p == '\r'))
        f->p++;
}

/* A string of ASCII from 0x20 without escapes: its bytes, or -1 (not sure). */
static int fast_string(fast_t *f, const char **s, size_t *n)
{
    if (f->p >= f->end || *f->p != '"')
        return -1;
    const char *b = ++f->p;
    /* The project's SSE2 run scanner (buf.h): stops at '"', '\\', a control byte or
     * non-ASCII; only the closing quote keeps the string on the fast path. */
    f->p += buf_json_plain_run((const uint8_t *)f->p, (size_t)(f->end - f->p));
    if (f->p >= f->end || *f->p != '"')
        return -1;
    *s = b;
    *n = (size_t)(f->p - b);
    f->p++;
    return 0;
}

/* JSON's number grammar without exponent, at most 18 characters (no jansson overflow). */
static int fast_number(fast_t *f, hval_t *v)
{
    const char *b = f->p;
    bool neg = false, nonzero = false, real = false;
    if (f->p < f->end && *f->p == '-') {
        neg = true;
        f->p++;
    }
    if (f->p >= f->end || *f->p < '0' || *f->p > '9')
        return -1;
    if (*f->p == '0') {
        f->p++;
    } else {
        while (f->p < f->end && *f->p >= '0' && *f->p <= '9')
            f->p++;
        nonzero = true;
    }
    if (f->p < f->end && *f->p == '.') {
        real = true;
        f->p++;
        if (f->p >= f->end || *f->p < '0' || *f->p > '9')
            return -1;
        while (f->p < f->end && *f->p >= '0' && *f->p <= '9')
            nonzero |= *f->p++ != '0';
    }
    if (f->p < f->end && (*f->p == 'e' || *f->p == 'E'))
        return -1;
    if (f->p - b > 18)
        return -1;
    v->t = real ? HV_REAL : HV_INTEGER;
    v->neg = neg && nonzero; /* -0 and -0.0 are not below 0 */
    return 0;
}

static int fast_value(fast_t *f, frame_role_t role, hval_t *v);

static int fast_object(fast_t *f, frame_role_t role)
{
    if (++f->depth > FAST_DEPTH)
        return -1;
    f->p++; /* '{' */
    size_t base = f->n_keys;
    fast_ws(f);
    if (f->p < f->end && *f->p == '}') {
        f->p++;
        f->depth--;
        return 0;
    }
    for (;;) {
        const char *k;
        size_t kn;
        fast_ws(f);
        if (fast_string(f, &k, &kn))
            return -1;
        if (f->n_keys - base >= FAST_KEYS || f->n_keys >= FAST_STACK)
            return -1;
        for (size_t i = base; i < f->n_keys; i++)
            if (f->keys[i].kn == kn && !memcmp(f->keys[i].k, k, kn))
                return -1; /* a duplicate: jansson refuses the request */
        f->keys[f->n_keys].k = k;
        f->keys[f->n_keys].kn = kn;
        f->n_keys++;
        fast_ws(f);
        if (f->p >= f->end || *f->p != ':')
            return -1;
        f->p++;
        fast_ws(f);
        frame_role_t child = ROLE_OTHER;
        if (role == ROLE_ROOT && kn == 5 && !memcmp(k, "event", 5))
            child = ROLE_EVENT;
        else if (role == ROLE_EVENT && kn == 17 && !memcmp(k, "commonEventHeader", 17))
            child = ROLE_HEADER;
        hval_t v = {0};
        if (fast_value(f, child, &v))
            return -1;
        if (role == ROLE_HEADER)
            f->hdr[f->n_hdr++] = (fast_member_t){k, kn, v};
        fast_ws(f);
        if (f->p < f->end && *f->p == ',') {
            f->p++;
            continue;
        }
        if (f->p < f->end && *f->p == '}') {
            f->p++;
            break;
        }
        return -1;
    }
    f->n_keys = base;
    f->depth--;
    return 0;
}

static int fast_array(fast_t *f)
{
    if (++f->depth > FAST_DEPTH)
        return -1;
    f->p++; /* '[' */
    fast_ws(f);
    if (f->p < f->end && *f->p == ']') {
        f->p++;
        f->depth--;
        return 0;
    }
    for (;;) {
        hval_t v;
        fast_ws(f);
        if (fast_value(f, ROLE_OTHER, &v))
            return -1;
        fast_ws(f);
        if (f->p < f->end && *f->p == ',') {
            f->p++;
            continue;
        }
        if (f->p < f->end && *f->p == ']') {
            f->p++;
            break;
        }
        return -1;
    }
    f->depth--;
    return 0;
}

static int fast_literal(fast_t *f, const char *lit, size_t n)
{
    if ((size_t)(f->end - f->p) < n || memcmp(f->p, lit, n))
        return -1;
    f->p += n;
    return 0;
}

/* One value; role says what an object here is (the event, its header, or neither). */
static int fast_value(fast_t *f, frame_role_t role, hval_t *v)
{
    if (f->p >= f->end)
        return -1;
    v->t = HV_OTHER;
    switch (*f->p) {
    case '{':
        if (role == ROLE_EVENT)
            f->event_seen = true;
        if (role == ROLE_HEADER)
            f->header_seen = true;
        return fast_object(f, role);
    case '[':
        return fast_array(f);
    case '"':
        v->t = HV_STRING;
        return fast_string(f, &v->s, &v->n);
    case 't':
        return fast_literal(f, "true", 4);
    case 'f':
        return fast_literal(f, "false", 5);
    case 'n':
        return fast_literal(f, "null", 4);
    default:
        return fast_number(f, v);
    }
}

static hval_t fast_get(const void *hp, const char *name)
{
    const fast_t *f = hp;
    size_t n = strlen(name);
    for (size_t i = 0; i < f->n_hdr; i++)
        if (f->hdr[i].kn == n && !memcmp(f->hdr[i].k, name, n))
            return f->hdr[i].v;
    return (hval_t){0};
}

/* A single event accepted by the fast path: 0 with out filled, or -1 (use jansson). */
static int fast_single(const uint8_t *body, size_t len, ves_parsed_t *out)
{
    /* Not zero-initialised whole: its member tables are 11 KB, written only as far as used. */
    fast_t f;
    f.p = (const char *)body;
    f.end = (const char *)body + len;
    f.depth = 0;
    f.event_seen = f.header_seen = false;
    f.n_hdr = f.n_keys = 0;
    fast_ws(&f);
    if (f.p >= f.end || *f.p != '{' || fast_object(&f, ROLE_ROOT))
        return -1;
    fast_ws(&f);
    if (f.p != f.end || !f.event_seen || !f.header_seen)
        return -1;
    ves_error_t unused;
    const char *d;
    size_t dl;
    if (check_header_fields(fast_get, &f, &d, &dl, &unused))
        return -1;
    hval_t src = fast_get(&f, "sourceName");
    memcpy(out->domain_buf, d, dl); /* a VES domain: at most 22 bytes */
    out->domain_buf[dl] = 0;
    out->domain = out->domain_buf;
    out->domain_len = dl;
    out->n_events = 1;
    out->source = src.s;
    out->source_len = src.n;
    return 0;
}

int ves_validate(const uint8_t *body, size_t len, bool batch, ves_parsed_t *out, ves_error_t *err)
{
    memset(out, 0, sizeof *out);
    if (!batch && fast_single(body, len, out) == 0)
        return 0;
    memset(out, 0, sizeof *out);
    return ves_validate_tree(body, len, batch, out, err);
}

int ves_validate_tree(const uint8_t *body, size_t len, bool batch, ves_parsed_t *out,
                      ves_error_t *err)
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
        size_t dl;
        if (check_header(out->events[i], &d, &dl, err))
            goto bad;
        if (i == 0) {
            out->domain = d;
            out->domain_len = dl;
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

/* The sourceName of one event of a tree (ves_validate_tree's events). */
static const char *ves_event_source_name(json_t *event)
{
    return json_string_value(
        json_object_get(json_object_get(event, "commonEventHeader"), "sourceName"));
}

const char *ves_parsed_source(const ves_parsed_t *p, size_t i, size_t *len)
{
    if (!p->events) { /* the fast path's single event */
        *len = p->source_len;
        return p->source;
    }
    const char *s = ves_event_source_name(p->events[i]);
    *len = s ? strlen(s) : 0;
    return s;
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
