/* Operator "regex": the field is present and a PCRE2 (Perl-compatible) regular expression
 * finds a match in it (anywhere; anchor with ^ and $). Compiled once and matched by PCRE2's
 * interpreter on the slice itself, so the value is neither copied nor NUL-terminated.
 *
 * Not JIT-compiled: the JIT does not count every backtracking step against the match limit.
 * fuzz_filter_regex found a nested repeat of empty alternatives (8((||||...|x+yy){5}){C9}) that
 * the JIT matched against 4 KiB for 14-160 s without reaching the limit, where the interpreter
 * stops at it in milliseconds. A filter that can hold a worker that long is worse than one a
 * few times slower on every value.
 *
 * Bounds (docs/filters.md, "Regular expressions"): every match runs under a match context with
 * a match limit, a depth limit and a heap limit, so a pattern that backtracks exponentially
 * ((a+)+$ on a long value) stops with an error, counted by filter_regex_errors() and treated
 * as "no match", instead of taking the worker thread. What those limits cannot bound is
 * refused when the filter is compiled: patterns longer than FILTER_MAX_REGEX, more than 32
 * nested groups, UTF/UCP mode (every match would first validate the whole value) and \C, and
 * a compiled form above FILTER_REGEX_MAX_CODE (compile-time memory: the compile context's
 * allocator refuses any larger block, whatever PCRE2's link size). */
#define PCRE2_CODE_UNIT_WIDTH 8

#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"

/* PCRE2 counts its match limit afresh at every start position of an unanchored search, so a
 * value of n bytes may take n times the limit ((.a*){12}$ on 4 KiB: 1 s at 100,000). Each
 * evaluation gets FILTER_REGEX_BUDGET steps in all: the limit per start position is the
 * budget over the positions, at most FILTER_REGEX_MATCH_LIMIT, at least FILTER_REGEX_MIN. */
#define FILTER_REGEX_BUDGET 1000000
#define FILTER_REGEX_MATCH_LIMIT 100000 /* backtracking steps from one start position */
#define FILTER_REGEX_MIN 100
#define FILTER_REGEX_DEPTH_LIMIT 5000 /* nested backtracking points */
#define FILTER_REGEX_HEAP_LIMIT 1024  /* KiB of backtracking frames */
#define FILTER_REGEX_NEST_LIMIT 32    /* nested parentheses */
#define FILTER_REGEX_MAX_CODE (256 * 1024)

static _Atomic uint64_t filter_regex_error_count;

uint64_t filter_regex_errors(void)
{
    return atomic_load_explicit(&filter_regex_error_count, memory_order_relaxed);
}

/* The compile context's allocator: one ceiling on every block, so compile-time memory is
 * bounded by this file and not by how PCRE2 was built. */
static void *filter_regex_malloc(PCRE2_SIZE n, void *ud)
{
    (void)ud;
    return n > FILTER_REGEX_MAX_CODE ? NULL : malloc(n);
}

static void filter_regex_free(void *p, void *ud)
{
    (void)ud;
    free(p);
}

/* Match data and the match context (whose limit depends on the value's length) are written
 * by every match, so each evaluating thread has its own (one pair of offsets: a filter needs
 * only "matched or not"); made on the thread's first regex evaluation, freed when it ends. */
typedef struct filter_regex_tls {
    pcre2_match_data *md;
    pcre2_match_context *mc;
} filter_regex_tls_t;

static pthread_key_t filter_regex_key;
static pthread_once_t filter_regex_once = PTHREAD_ONCE_INIT;
static pcre2_general_context *filter_regex_gctx;

static void filter_regex_tls_free(void *arg)
{
    filter_regex_tls_t *t = arg;
    pcre2_match_data_free(t->md);
    pcre2_match_context_free(t->mc);
    free(t);
}

static void filter_regex_init(void)
{
    pthread_key_create(&filter_regex_key, filter_regex_tls_free);
    filter_regex_gctx = pcre2_general_context_create(filter_regex_malloc, filter_regex_free, NULL);
}

static filter_regex_tls_t *filter_regex_tls(void)
{
    filter_regex_tls_t *t = pthread_getspecific(filter_regex_key);
    if (t)
        return t;
    if (!(t = calloc(1, sizeof *t)) || !(t->md = pcre2_match_data_create(1, NULL)) ||
        !(t->mc = pcre2_match_context_create(NULL)) || pthread_setspecific(filter_regex_key, t)) {
        if (t) {
            pcre2_match_data_free(t->md);
            pcre2_match_context_free(t->mc);
            free(t);
        }
        return NULL;
    }
    pcre2_set_depth_limit(t->mc, FILTER_REGEX_DEPTH_LIMIT);
    pcre2_set_heap_limit(t->mc, FILTER_REGEX_HEAP_LIMIT);
    return t;
}

static int filter_regex_compile(filter_pred_t *p, const json_t *v, char *err, size_t errlen)
{
    const char *pat = json_string_value(v);
    size_t len = json_string_length(v);
    if (len > FILTER_MAX_REGEX) {
        snprintf(err, errlen, "regular expression longer than %d bytes", FILTER_MAX_REGEX);
        return -1;
    }
    /* PCRE2 would take a NUL, but the definition, the admin's database and every log line
     * carry patterns as C strings: one would silently cut them. */
    if (strlen(pat) != len) {
        snprintf(err, errlen, "regular expression contains a NUL character");
        return -1;
    }
    pthread_once(&filter_regex_once, filter_regex_init);
    pcre2_compile_context *cc = pcre2_compile_context_create(filter_regex_gctx);
    if (!filter_regex_gctx || !cc) {
        pcre2_compile_context_free(cc);
        snprintf(err, errlen, "out of memory compiling a regular expression");
        return -1;
    }
    pcre2_set_max_pattern_length(cc, FILTER_MAX_REGEX);
    pcre2_set_parens_nest_limit(cc, FILTER_REGEX_NEST_LIMIT);
    uint32_t opts = PCRE2_NEVER_UTF | PCRE2_NEVER_UCP | PCRE2_NEVER_BACKSLASH_C |
                    (p->icase ? PCRE2_CASELESS : 0);
    int code;
    PCRE2_SIZE at;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pat, len, opts, &code, &at, cc);
    pcre2_compile_context_free(cc);
    if (!re) {
        PCRE2_UCHAR why[160];
        if (pcre2_get_error_message(code, why, sizeof why) < 0)
            snprintf((char *)why, sizeof why, "error %d", code);
        if (code == PCRE2_ERROR_HEAPLIMIT || code == PCRE2_ERROR_NOMEMORY)
            snprintf((char *)why, sizeof why, "compiled form larger than %d bytes",
                     FILTER_REGEX_MAX_CODE);
        snprintf(err, errlen, "bad regular expression \"%.64s\": %s at offset %zu", pat,
                 (const char *)why, (size_t)at);
        return -1;
    }
    p->u.rx.code = re;
    return 0;
}

static bool filter_regex_match(const filter_pred_t *p, codec_slice_t v)
{
    if (!v.ptr)
        return false;
    filter_regex_tls_t *t = filter_regex_tls();
    int rc = PCRE2_ERROR_NOMEMORY;
    if (t) {
        size_t limit = FILTER_REGEX_BUDGET / (v.len + 1);
        if (limit > FILTER_REGEX_MATCH_LIMIT)
            limit = FILTER_REGEX_MATCH_LIMIT;
        if (limit < FILTER_REGEX_MIN)
            limit = FILTER_REGEX_MIN;
        pcre2_set_match_limit(t->mc, (uint32_t)limit);
        rc = pcre2_match(p->u.rx.code, (PCRE2_SPTR)v.ptr, v.len, 0, 0, t->md, t->mc);
    }
    if (rc >= 0)
        return true; /* 0: matched, the one offset pair was too small for the groups */
    if (rc != PCRE2_ERROR_NOMATCH)
        atomic_fetch_add_explicit(&filter_regex_error_count, 1, memory_order_relaxed);
    return false;
}

static void filter_regex_destroy(filter_pred_t *p)
{
    pcre2_code_free(p->u.rx.code);
    p->u.rx.code = NULL;
}

const filter_op_t filter_op_regex = {
    .name = "regex",
    .operand = FILTER_OPERAND_STRING,
    .icase_allowed = true,
    .compile = filter_regex_compile,
    .match = filter_regex_match,
    .destroy = filter_regex_destroy,
};
