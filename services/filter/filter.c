/* Filter engine: strict compilation of the JSON definition into a tree of pre-parsed
 * predicates, allocation-free evaluation, and the swappable slot. docs/filters.md. */
#include "filter.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"

/* The operators, one file each (services/filter/filter_op_<name>.c). */
extern const filter_op_t filter_op_equals, filter_op_not_equals, filter_op_one_of, filter_op_prefix,
    filter_op_suffix, filter_op_contains, filter_op_regex, filter_op_lt, filter_op_le, filter_op_gt,
    filter_op_ge, filter_op_between, filter_op_exists, filter_op_absent;

static const filter_op_t *const filter_ops[] = {
    &filter_op_equals, &filter_op_not_equals, &filter_op_one_of, &filter_op_prefix,
    &filter_op_suffix, &filter_op_contains,   &filter_op_regex,  &filter_op_lt,
    &filter_op_le,     &filter_op_gt,         &filter_op_ge,     &filter_op_between,
    &filter_op_exists, &filter_op_absent,
};

typedef enum filter_node_kind {
    FILTER_NODE_PRED = 0,
    FILTER_NODE_ALL,
    FILTER_NODE_ANY,
    FILTER_NODE_NOT,
} filter_node_kind_t;

typedef struct filter_node {
    filter_node_kind_t kind;
    size_t n_kids;
    struct filter_node *kids; /* contiguous: ALL/ANY n_kids, NOT exactly one */
    filter_pred_t pred;       /* FILTER_NODE_PRED */
} filter_node_t;

typedef struct filter_rule {
    char name[FILTER_MAX_NAME + 1];
    filter_action_t action;
    filter_node_t match;
} filter_rule_t;

struct filter {
    char name[FILTER_MAX_NAME + 1];
    filter_action_t default_action;
    size_t n_rules;
    filter_rule_t *rules;
    _Atomic uint64_t *hits; /* n_rules + 1; the last one counts the default */
    atomic_uint refs;
};

struct filter_slot {
    _Atomic(filter_t *) cur;
    /* Acquires in progress, split by epoch parity so a swap can wait for the ones that may
     * have read the old pointer while new acquires count on the other side. */
    atomic_uint_fast64_t epoch;
    atomic_long readers[2];
    atomic_uint_fast64_t generation;
    pthread_mutex_t swap_lock;
};

/* ---------------------------------------------------------------- helpers for operators */

const filter_op_t *filter_op_find(const char *name)
{
    for (size_t i = 0; i < sizeof filter_ops / sizeof filter_ops[0]; i++)
        if (strcmp(filter_ops[i]->name, name) == 0)
            return filter_ops[i];
    return NULL;
}

bool filter_number_parse(const char *p, size_t len, filter_number_t *out)
{
    if (!p || len == 0 || len > FILTER_MAX_NUMBER_TEXT)
        return false;
    size_t i = 0;
    if (p[i] == '-')
        i++;
    size_t int_start = i;
    while (i < len && p[i] >= '0' && p[i] <= '9')
        i++;
    size_t int_digits = i - int_start;
    bool integral = true;
    size_t frac_digits = 0;
    if (i < len && p[i] == '.') {
        integral = false;
        i++;
        size_t fs = i;
        while (i < len && p[i] >= '0' && p[i] <= '9')
            i++;
        frac_digits = i - fs;
    }
    if (int_digits == 0 && frac_digits == 0)
        return false;
    if (i < len && (p[i] == 'e' || p[i] == 'E')) {
        integral = false;
        i++;
        if (i < len && (p[i] == '+' || p[i] == '-'))
            i++;
        size_t es = i;
        while (i < len && p[i] >= '0' && p[i] <= '9')
            i++;
        if (i == es)
            return false;
    }
    if (i != len)
        return false;

    char tmp[FILTER_MAX_NUMBER_TEXT + 1];
    memcpy(tmp, p, len);
    tmp[len] = '\0';
    if (integral) {
        errno = 0;
        long long v = strtoll(tmp, NULL, 10);
        if (errno == 0) {
            out->is_int = true;
            out->i = v;
            out->d = (double)v;
            return true;
        }
        /* Out of int64 range: still a number, compared as a double. */
    }
    errno = 0;
    double d = strtod(tmp, NULL);
    if (errno == ERANGE || !isfinite(d))
        return false;
    out->is_int = false;
    out->i = 0;
    out->d = d;
    return true;
}

int filter_number_cmp(const filter_number_t *a, const filter_number_t *b)
{
    if (a->is_int && b->is_int)
        return (a->i > b->i) - (a->i < b->i);
    return (a->d > b->d) - (a->d < b->d);
}

int filter_number_from_json(const json_t *v, filter_number_t *out, char *err, size_t errlen)
{
    if (json_is_integer(v)) {
        out->is_int = true;
        out->i = json_integer_value(v);
        out->d = (double)out->i;
        return 0;
    }
    if (json_is_real(v)) {
        out->is_int = false;
        out->i = 0;
        out->d = json_real_value(v);
        return 0;
    }
    if (json_is_string(v)) {
        if (filter_number_parse(json_string_value(v), json_string_length(v), out))
            return 0;
        snprintf(err, errlen, "\"%.40s\" is not a decimal number", json_string_value(v));
        return -1;
    }
    snprintf(err, errlen, "expected a number");
    return -1;
}

bool filter_eq_icase(const char *a, const char *lower, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (tolower((unsigned char)a[i]) != (unsigned char)lower[i])
            return false;
    return true;
}

char *filter_strdup(const char *s, size_t len, bool icase)
{
    char *d = malloc(len + 1);
    if (!d)
        return NULL;
    for (size_t i = 0; i < len; i++)
        d[i] = icase ? (char)tolower((unsigned char)s[i]) : s[i];
    d[len] = '\0';
    return d;
}

/* ------------------------------------------------------------------------ compilation */

typedef struct filter_cctx {
    char *err;
    size_t errlen;
    size_t nodes;
    const char *rule; /* name of the rule being compiled, for messages */
} filter_cctx_t;

static int filter_fail(filter_cctx_t *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int filter_fail(filter_cctx_t *c, const char *path, const char *fmt, ...)
{
    if (!c->err || c->errlen == 0)
        return -1;
    char problem[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem, sizeof problem, fmt, ap);
    va_end(ap);
    if (c->rule)
        snprintf(c->err, c->errlen, "%s: %s (rule \"%s\")", path, problem, c->rule);
    else
        snprintf(c->err, c->errlen, "%s: %s", path, problem);
    return -1;
}

/* Builds a location string; truncation of a very long path only shortens the message. */
static void filter_path(char *dst, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void filter_path(char *dst, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, n, fmt, ap);
    va_end(ap);
}

/* Names that end up as metrics labels and in log lines. */
static bool filter_name_valid(const char *s, size_t len)
{
    if (len == 0 || len > FILTER_MAX_NAME)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (!isalnum(ch) && ch != '.' && ch != '_' && ch != '-')
            return false;
    }
    return true;
}

/* HTTP field-name characters (RFC 9110 tchar). */
static bool filter_tchar(unsigned char ch)
{
    return isalnum(ch) || strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

static int filter_field_resolve(filter_cctx_t *c, const char *path, const json_t *jf,
                                filter_field_t *out)
{
    if (!json_is_string(jf))
        return filter_fail(c, path,
                           "expected a string (a field name such as \":path\" or "
                           "\"@nf-type\")");
    const char *s = json_string_value(jf);
    size_t len = json_string_length(jf);
    if (len == 0)
        return filter_fail(c, path, "empty field name");
    if (len > FILTER_MAX_FIELD)
        return filter_fail(c, path, "field name longer than %d bytes", FILTER_MAX_FIELD);
    size_t start = (s[0] == '@' || s[0] == ':') ? 1 : 0;
    if (start == len)
        return filter_fail(c, path, "field name \"%s\" has nothing after '%c'", s, s[0]);
    for (size_t i = start; i < len; i++)
        if (!filter_tchar((unsigned char)s[i]))
            return filter_fail(c, path, "field name \"%.*s\" has an invalid character at %zu",
                               (int)len, s, i);

    out->name = filter_strdup(s, len, true);
    if (!out->name)
        return filter_fail(c, path, "out of memory");
    out->name_len = len;
    if (s[0] == '@') {
        for (int m = 0; m < CODEC_META__COUNT; m++) {
            const char *mn = codec_meta_name((codec_meta_t)m);
            if (mn && strlen(mn) == len && strcmp(mn, out->name) == 0) {
                out->kind = FILTER_FIELD_META;
                out->meta = (codec_meta_t)m;
                return 0;
            }
        }
        out->kind = FILTER_FIELD_EXT;
    } else if (strcmp(out->name, ":method") == 0) {
        out->kind = FILTER_FIELD_METHOD;
    } else if (strcmp(out->name, ":path") == 0) {
        out->kind = FILTER_FIELD_PATH;
    } else {
        out->kind = FILTER_FIELD_HTTP;
    }
    return 0;
}

static void filter_pred_destroy(filter_pred_t *p)
{
    if (p->op && p->op->destroy)
        p->op->destroy(p);
    free(p->field.name);
    p->field.name = NULL;
}

static void filter_node_destroy(filter_node_t *n)
{
    if (n->kind == FILTER_NODE_PRED) {
        filter_pred_destroy(&n->pred);
        return;
    }
    for (size_t i = 0; i < n->n_kids; i++)
        filter_node_destroy(&n->kids[i]);
    free(n->kids);
    n->kids = NULL;
    n->n_kids = 0;
}

static int filter_check_operand(filter_cctx_t *c, const char *path, const filter_op_t *op,
                                const json_t *v)
{
    char vpath[512];
    filter_path(vpath, sizeof vpath, "%s.value", path);
    switch (op->operand) {
    case FILTER_OPERAND_NONE:
        if (v)
            return filter_fail(c, vpath, "operator \"%s\" takes no value", op->name);
        return 0;
    case FILTER_OPERAND_STRING:
        if (!v)
            return filter_fail(c, path, "missing \"value\" (operator \"%s\")", op->name);
        if (!json_is_string(v))
            return filter_fail(c, vpath, "expected a string");
        if (json_string_length(v) > FILTER_MAX_VALUE)
            return filter_fail(c, vpath, "string longer than %d bytes", FILTER_MAX_VALUE);
        return 0;
    case FILTER_OPERAND_STRINGS:
        if (!v)
            return filter_fail(c, path, "missing \"value\" (operator \"%s\")", op->name);
        if (!json_is_array(v))
            return filter_fail(c, vpath, "expected an array of strings");
        if (json_array_size(v) == 0)
            return filter_fail(c, vpath, "empty list");
        if (json_array_size(v) > FILTER_MAX_SET)
            return filter_fail(c, vpath, "more than %d elements", FILTER_MAX_SET);
        for (size_t i = 0; i < json_array_size(v); i++) {
            const json_t *e = json_array_get(v, i);
            char epath[540];
            filter_path(epath, sizeof epath, "%s[%zu]", vpath, i);
            if (!json_is_string(e))
                return filter_fail(c, epath, "expected a string");
            if (json_string_length(e) > FILTER_MAX_VALUE)
                return filter_fail(c, epath, "string longer than %d bytes", FILTER_MAX_VALUE);
        }
        return 0;
    case FILTER_OPERAND_NUMBER:
        if (!v)
            return filter_fail(c, path, "missing \"value\" (operator \"%s\")", op->name);
        if (!json_is_number(v) && !json_is_string(v))
            return filter_fail(c, vpath, "expected a number");
        return 0;
    case FILTER_OPERAND_NUMBER2:
        if (!v)
            return filter_fail(c, path, "missing \"value\" (operator \"%s\")", op->name);
        if (!json_is_array(v) || json_array_size(v) != 2)
            return filter_fail(c, vpath, "expected an array [low, high]");
        return 0;
    }
    return filter_fail(c, path, "internal: operator \"%s\" has no operand kind", op->name);
}

static int filter_expr_compile(filter_cctx_t *c, const char *path, const json_t *j, int depth,
                               filter_node_t *out);

static int filter_pred_compile(filter_cctx_t *c, const char *path, const json_t *j,
                               filter_node_t *out)
{
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)j, key, val)
    {
        if (strcmp(key, "field") && strcmp(key, "op") && strcmp(key, "value") &&
            strcmp(key, "icase"))
            return filter_fail(c, path,
                               "unknown key \"%.64s\" (a predicate has field, op, value, "
                               "icase; a combinator is all, any or not)",
                               key);
    }
    char sub[512];
    const json_t *jf = json_object_get(j, "field");
    const json_t *jo = json_object_get(j, "op");
    const json_t *jv = json_object_get(j, "value");
    const json_t *ji = json_object_get(j, "icase");
    if (!jf)
        return filter_fail(c, path, "missing \"field\"");
    if (!jo)
        return filter_fail(c, path, "missing \"op\"");

    out->kind = FILTER_NODE_PRED;
    filter_pred_t *p = &out->pred;
    memset(p, 0, sizeof *p);

    filter_path(sub, sizeof sub, "%s.op", path);
    if (!json_is_string(jo))
        return filter_fail(c, sub, "expected a string");
    const filter_op_t *op = filter_op_find(json_string_value(jo));
    if (!op)
        return filter_fail(c, sub, "unknown operator \"%.64s\"", json_string_value(jo));

    filter_path(sub, sizeof sub, "%s.icase", path);
    if (ji) {
        if (!json_is_boolean(ji))
            return filter_fail(c, sub, "expected true or false");
        if (json_is_true(ji) && !op->icase_allowed)
            return filter_fail(c, sub, "operator \"%s\" has no case-insensitive form", op->name);
        p->icase = json_is_true(ji);
    }
    if (filter_check_operand(c, path, op, jv) < 0)
        return -1;

    filter_path(sub, sizeof sub, "%s.field", path);
    if (filter_field_resolve(c, sub, jf, &p->field) < 0)
        return -1;
    /* From here p owns memory: an error below destroys it. */
    p->op = op;
    char problem[320] = "";
    if (op->compile && op->compile(p, jv, problem, sizeof problem) < 0) {
        filter_path(sub, sizeof sub, "%s.value", path);
        return filter_fail(c, sub, "%s", problem); /* the tree's owner destroys p */
    }
    return 0;
}

static int filter_list_compile(filter_cctx_t *c, const char *path, const json_t *arr, int depth,
                               filter_node_t *out)
{
    if (!json_is_array(arr))
        return filter_fail(c, path, "expected an array of match expressions");
    size_t n = json_array_size(arr);
    if (n == 0)
        return filter_fail(c, path, "empty list");
    if (n > FILTER_MAX_NODES)
        return filter_fail(c, path, "more than %d elements", FILTER_MAX_NODES);
    out->kids = calloc(n, sizeof *out->kids);
    if (!out->kids)
        return filter_fail(c, path, "out of memory");
    for (size_t i = 0; i < n; i++) {
        char sub[512];
        filter_path(sub, sizeof sub, "%s[%zu]", path, i);
        out->n_kids = i + 1; /* counted first: a half-built kid is destroyed with out */
        if (filter_expr_compile(c, sub, json_array_get(arr, i), depth + 1, &out->kids[i]) < 0)
            return -1;
    }
    return 0;
}

static int filter_expr_compile(filter_cctx_t *c, const char *path, const json_t *j, int depth,
                               filter_node_t *out)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(j))
        return filter_fail(c, path, "expected an object (a predicate or all/any/not)");
    if (depth > FILTER_MAX_DEPTH)
        return filter_fail(c, path, "nested deeper than %d levels", FILTER_MAX_DEPTH);
    if (++c->nodes > FILTER_MAX_NODES)
        return filter_fail(c, path, "filter has more than %d expressions", FILTER_MAX_NODES);

    const char *comb = NULL;
    static const char *const combs[] = {"all", "any", "not"};
    for (size_t i = 0; i < 3; i++)
        if (json_object_get(j, combs[i])) {
            if (comb)
                return filter_fail(c, path,
                                   "both \"%s\" and \"%s\": write one combinator per "
                                   "object",
                                   comb, combs[i]);
            comb = combs[i];
        }
    if (!comb)
        return filter_pred_compile(c, path, j, out);
    if (json_object_size(j) != 1) {
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)j, key, val)
        {
            if (strcmp(key, comb) != 0)
                return filter_fail(c, path, "unknown key \"%.64s\" beside \"%s\"", key, comb);
        }
    }
    char sub[512];
    filter_path(sub, sizeof sub, "%s.%s", path, comb);
    const json_t *v = json_object_get(j, comb);
    if (comb[0] == 'n') {
        out->kind = FILTER_NODE_NOT;
        out->kids = calloc(1, sizeof *out->kids);
        if (!out->kids)
            return filter_fail(c, sub, "out of memory");
        out->n_kids = 1;
        return filter_expr_compile(c, sub, v, depth + 1, &out->kids[0]);
    }
    out->kind = comb[1] == 'l' ? FILTER_NODE_ALL : FILTER_NODE_ANY;
    return filter_list_compile(c, sub, v, depth, out);
}

static int filter_action_parse(filter_cctx_t *c, const char *path, const json_t *v,
                               filter_action_t *out)
{
    if (!v)
        return filter_fail(c, path, "missing (\"allow\" or \"drop\")");
    if (!json_is_string(v))
        return filter_fail(c, path, "expected \"allow\" or \"drop\"");
    if (strcmp(json_string_value(v), "allow") == 0)
        *out = FILTER_ALLOW;
    else if (strcmp(json_string_value(v), "drop") == 0)
        *out = FILTER_DROP;
    else
        return filter_fail(c, path, "unknown action \"%.32s\" (\"allow\" or \"drop\")",
                           json_string_value(v));
    return 0;
}

static int filter_description_check(filter_cctx_t *c, const char *path, const json_t *v)
{
    if (!v)
        return 0;
    if (!json_is_string(v))
        return filter_fail(c, path, "expected a string");
    if (json_string_length(v) > FILTER_MAX_DESCRIPTION)
        return filter_fail(c, path, "longer than %d bytes", FILTER_MAX_DESCRIPTION);
    return 0;
}

static int filter_rule_compile(filter_cctx_t *c, filter_t *f, size_t idx, const json_t *j)
{
    char path[64], sub[96];
    filter_path(path, sizeof path, "rules[%zu]", idx);
    if (!json_is_object(j))
        return filter_fail(c, path, "expected an object with name, action and match");
    filter_rule_t *r = &f->rules[idx];

    const json_t *jn = json_object_get(j, "name");
    filter_path(sub, sizeof sub, "%s.name", path);
    if (!jn)
        return filter_fail(c, path, "missing \"name\"");
    if (!json_is_string(jn) || !filter_name_valid(json_string_value(jn), json_string_length(jn)))
        return filter_fail(c, sub, "expected a name of 1 to %d characters [A-Za-z0-9._-]",
                           FILTER_MAX_NAME);
    for (size_t k = 0; k < idx; k++)
        if (strcmp(f->rules[k].name, json_string_value(jn)) == 0)
            return filter_fail(c, sub, "duplicate rule name \"%s\" (also rules[%zu])",
                               json_string_value(jn), k);
    memcpy(r->name, json_string_value(jn), json_string_length(jn) + 1);
    c->rule = r->name;

    const char *key;
    json_t *val;
    json_object_foreach((json_t *)j, key, val)
    {
        if (strcmp(key, "name") && strcmp(key, "action") && strcmp(key, "match") &&
            strcmp(key, "description"))
            return filter_fail(c, path,
                               "unknown key \"%.64s\" (a rule has name, action, match, "
                               "description)",
                               key);
    }
    filter_path(sub, sizeof sub, "%s.description", path);
    if (filter_description_check(c, sub, json_object_get(j, "description")) < 0)
        return -1;
    filter_path(sub, sizeof sub, "%s.action", path);
    if (filter_action_parse(c, sub, json_object_get(j, "action"), &r->action) < 0)
        return -1;
    const json_t *jm = json_object_get(j, "match");
    if (!jm)
        return filter_fail(c, path, "missing \"match\"");
    filter_path(sub, sizeof sub, "%s.match", path);
    int rc = filter_expr_compile(c, sub, jm, 0, &r->match);
    c->rule = NULL;
    return rc;
}

static void filter_destroy(filter_t *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n_rules; i++)
        filter_node_destroy(&f->rules[i].match);
    free(f->rules);
    free((void *)f->hits);
    free(f);
}

filter_t *filter_compile(const json_t *spec, char *err, size_t errlen)
{
    filter_cctx_t c = {.err = err, .errlen = errlen};
    if (err && errlen)
        err[0] = '\0';
    if (!json_is_object(spec)) {
        filter_fail(&c, "$", "expected a JSON object with name, default and rules");
        return NULL;
    }
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)spec, key, val)
    {
        if (strcmp(key, "name") && strcmp(key, "default") && strcmp(key, "rules") &&
            strcmp(key, "description")) {
            filter_fail(&c, "$",
                        "unknown key \"%.64s\" (a filter has name, default, rules, "
                        "description)",
                        key);
            return NULL;
        }
    }
    const json_t *jn = json_object_get(spec, "name");
    if (!jn) {
        filter_fail(&c, "$", "missing \"name\"");
        return NULL;
    }
    if (!json_is_string(jn) || !filter_name_valid(json_string_value(jn), json_string_length(jn))) {
        filter_fail(&c, "name", "expected a name of 1 to %d characters [A-Za-z0-9._-]",
                    FILTER_MAX_NAME);
        return NULL;
    }
    if (filter_description_check(&c, "description", json_object_get(spec, "description")) < 0)
        return NULL;
    filter_action_t def;
    if (filter_action_parse(&c, "default", json_object_get(spec, "default"), &def) < 0)
        return NULL;
    const json_t *jr = json_object_get(spec, "rules");
    if (!jr) {
        filter_fail(&c, "$", "missing \"rules\" (may be an empty array)");
        return NULL;
    }
    if (!json_is_array(jr)) {
        filter_fail(&c, "rules", "expected an array");
        return NULL;
    }
    if (json_array_size(jr) > FILTER_MAX_RULES) {
        filter_fail(&c, "rules", "more than %d rules", FILTER_MAX_RULES);
        return NULL;
    }

    filter_t *f = calloc(1, sizeof *f);
    if (!f) {
        filter_fail(&c, "$", "out of memory");
        return NULL;
    }
    memcpy(f->name, json_string_value(jn), json_string_length(jn) + 1);
    f->default_action = def;
    atomic_init(&f->refs, 1);
    size_t n = json_array_size(jr);
    f->rules = calloc(n ? n : 1, sizeof *f->rules);
    f->hits = calloc(n + 1, sizeof *f->hits);
    if (!f->rules || !f->hits) {
        filter_fail(&c, "$", "out of memory");
        filter_destroy(f);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        int rc = filter_rule_compile(&c, f, i, json_array_get(jr, i));
        f->n_rules = i + 1; /* the rule's partial tree is destroyed with f */
        if (rc < 0) {
            filter_destroy(f);
            return NULL;
        }
    }
    return f;
}

filter_t *filter_compile_text(const char *text, size_t len, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!text) {
        if (err && errlen)
            snprintf(err, errlen, "$: no filter text");
        return NULL;
    }
    if (len > FILTER_MAX_TEXT) {
        if (err && errlen)
            snprintf(err, errlen, "$: filter text of %zu bytes exceeds %d", len, FILTER_MAX_TEXT);
        return NULL;
    }
    json_error_t je;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!j) {
        if (err && errlen)
            snprintf(err, errlen, "$: invalid JSON at line %d column %d: %s", je.line, je.column,
                     je.text);
        return NULL;
    }
    filter_t *f = filter_compile(j, err, errlen);
    json_decref(j);
    return f;
}

/* ------------------------------------------------------------------------- evaluation */

static codec_slice_t filter_http_lookup(const codec_msg_t *m, const filter_field_t *fd)
{
    for (size_t i = 0; i < m->n_http && i < CODEC_MAX_HTTP_HEADERS; i++) {
        const codec_header_t *h = &m->http[i];
        if (h->name.len == fd->name_len && filter_eq_icase(h->name.ptr, fd->name, fd->name_len))
            return h->value;
    }
    return (codec_slice_t){NULL, 0};
}

static codec_slice_t filter_field_value(const filter_field_t *fd, const codec_msg_t *m)
{
    switch (fd->kind) {
    case FILTER_FIELD_META:
        return m->meta[fd->meta];
    case FILTER_FIELD_METHOD:
        if (m->method.ptr)
            return m->method;
        return filter_http_lookup(m, fd);
    case FILTER_FIELD_PATH:
        if (m->path.ptr)
            return m->path;
        return filter_http_lookup(m, fd);
    case FILTER_FIELD_HTTP:
        return filter_http_lookup(m, fd);
    case FILTER_FIELD_EXT:
        for (size_t i = 0; i < m->n_ext && i < CODEC_MAX_EXT_HEADERS; i++) {
            const codec_header_t *h = &m->ext[i];
            if (h->name.len == fd->name_len && filter_eq_icase(h->name.ptr, fd->name, fd->name_len))
                return h->value;
        }
        break;
    }
    return (codec_slice_t){NULL, 0};
}

static bool filter_node_match(const filter_node_t *n, const codec_msg_t *m)
{
    switch (n->kind) {
    case FILTER_NODE_PRED:
        return n->pred.op->match(&n->pred, filter_field_value(&n->pred.field, m));
    case FILTER_NODE_ALL:
        for (size_t i = 0; i < n->n_kids; i++)
            if (!filter_node_match(&n->kids[i], m))
                return false;
        return true;
    case FILTER_NODE_ANY:
        for (size_t i = 0; i < n->n_kids; i++)
            if (filter_node_match(&n->kids[i], m))
                return true;
        return false;
    case FILTER_NODE_NOT:
        return !filter_node_match(&n->kids[0], m);
    }
    return false;
}

filter_action_t filter_eval(const filter_t *f, const codec_msg_t *m, int *rule)
{
    if (!f) {
        if (rule)
            *rule = FILTER_RULE_DEFAULT;
        return FILTER_ALLOW;
    }
    for (size_t i = 0; i < f->n_rules; i++) {
        if (filter_node_match(&f->rules[i].match, m)) {
            atomic_fetch_add_explicit(&f->hits[i], 1, memory_order_relaxed);
            if (rule)
                *rule = (int)i;
            return f->rules[i].action;
        }
    }
    atomic_fetch_add_explicit(&f->hits[f->n_rules], 1, memory_order_relaxed);
    if (rule)
        *rule = FILTER_RULE_DEFAULT;
    return f->default_action;
}

/* ---------------------------------------------------------------------------- accessors */

const char *filter_name(const filter_t *f)
{
    return f ? f->name : "";
}

filter_action_t filter_default_action(const filter_t *f)
{
    return f ? f->default_action : FILTER_ALLOW;
}

size_t filter_rule_count(const filter_t *f)
{
    return f ? f->n_rules : 0;
}

const char *filter_rule_name(const filter_t *f, int i)
{
    if (i == FILTER_RULE_DEFAULT)
        return "default";
    if (!f || i < 0 || (size_t)i >= f->n_rules)
        return NULL;
    return f->rules[i].name;
}

uint64_t filter_rule_hits(const filter_t *f, int i)
{
    if (!f)
        return 0;
    if (i == FILTER_RULE_DEFAULT)
        return atomic_load_explicit(&f->hits[f->n_rules], memory_order_relaxed);
    if (i < 0 || (size_t)i >= f->n_rules)
        return 0;
    return atomic_load_explicit(&f->hits[i], memory_order_relaxed);
}

const char *filter_action_name(filter_action_t a)
{
    return a == FILTER_DROP ? "drop" : "allow";
}

filter_t *filter_retain(filter_t *f)
{
    if (f)
        atomic_fetch_add(&f->refs, 1);
    return f;
}

void filter_release(filter_t *f)
{
    if (f && atomic_fetch_sub(&f->refs, 1) == 1)
        filter_destroy(f);
}

/* -------------------------------------------------------------------------------- slot */

filter_slot_t *filter_slot_new(filter_t *initial)
{
    filter_slot_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    if (pthread_mutex_init(&s->swap_lock, NULL) != 0) {
        free(s);
        return NULL;
    }
    atomic_init(&s->cur, initial);
    atomic_init(&s->epoch, 0);
    atomic_init(&s->readers[0], 0);
    atomic_init(&s->readers[1], 0);
    atomic_init(&s->generation, 0);
    return s;
}

void filter_slot_free(filter_slot_t *s)
{
    if (!s)
        return;
    filter_release(atomic_load(&s->cur));
    pthread_mutex_destroy(&s->swap_lock);
    free(s);
}

filter_t *filter_slot_acquire(filter_slot_t *s)
{
    /* Sequentially consistent on purpose: the swap relies on "counted, then loaded". */
    uint_fast64_t e = atomic_load(&s->epoch) & 1;
    atomic_fetch_add(&s->readers[e], 1);
    filter_t *f = atomic_load(&s->cur);
    if (f)
        atomic_fetch_add(&f->refs, 1);
    atomic_fetch_sub(&s->readers[e], 1);
    return f;
}

uint64_t filter_slot_swap(filter_slot_t *s, filter_t *next)
{
    pthread_mutex_lock(&s->swap_lock);
    filter_t *old = atomic_exchange(&s->cur, next);
    /* An acquire that loaded `old` counted itself on one side before loading. Flip the
     * epoch so new acquires count on the other side, wait for this side to drain, then do
     * the same for the other: afterwards nobody is between load and reference. */
    for (int k = 0; k < 2; k++) {
        uint_fast64_t e = atomic_load(&s->epoch);
        atomic_store(&s->epoch, e + 1);
        while (atomic_load(&s->readers[e & 1]) != 0)
            sched_yield();
    }
    uint64_t gen = atomic_fetch_add(&s->generation, 1) + 1;
    pthread_mutex_unlock(&s->swap_lock);
    filter_release(old);
    return gen;
}

uint64_t filter_slot_generation(filter_slot_t *s)
{
    return atomic_load(&s->generation);
}
