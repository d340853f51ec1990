/* Operator "regex": the field is present and a POSIX extended regular expression finds a
 * match in it (anywhere; anchor with ^ and $). Compiled once by regcomp; matched with
 * REG_STARTEND on the slice itself, so the value is neither copied nor NUL-terminated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"

/* glibc's regcomp expands repetitions by copying the repeated subtree, so stacked or nested
 * counted repetitions ("a++++++", "((a{99}){99}){99}") make it allocate without bound, and
 * back-references make regexec exponential. Both are refused before regcomp sees the pattern:
 * this walk estimates the expanded size (an atom is 1, x{m,n} costs max(m,n) copies, x+ two)
 * and rejects stacked quantifiers and back-references. */
#define FILTER_REGEX_MAX_EXPANSION 20000
#define FILTER_REGEX_MAX_GROUPS 32

static const char *filter_regex_check(const char *pat, size_t len)
{
    double size[FILTER_REGEX_MAX_GROUPS + 1] = {0}; /* per open group: expanded size so far */
    double last[FILTER_REGEX_MAX_GROUPS + 1] = {0}; /* size of the atom a quantifier repeats */
    int depth = 0;
    bool quantified = false; /* previous token was a quantifier */
    for (size_t i = 0; i < len; i++) {
        char ch = pat[i];
        double atom = 0, mult = 0;
        if (ch == '\\') {
            if (i + 1 < len && pat[i + 1] >= '1' && pat[i + 1] <= '9')
                return "back-references are not supported";
            i++;
            atom = 1;
        } else if (ch == '[') {
            size_t j = i + 1;
            if (j < len && pat[j] == '^')
                j++;
            if (j < len && pat[j] == ']')
                j++;
            while (j < len && pat[j] != ']') {
                if (pat[j] == '[' && j + 1 < len &&
                    (pat[j + 1] == ':' || pat[j + 1] == '.' || pat[j + 1] == '=')) {
                    char close = pat[j + 1];
                    j += 2;
                    while (j + 1 < len && !(pat[j] == close && pat[j + 1] == ']'))
                        j++;
                    j += 2;
                    continue;
                }
                j++;
            }
            i = j; /* an unterminated bracket is left to regcomp to report */
            atom = 1;
        } else if (ch == '(') {
            if (depth == FILTER_REGEX_MAX_GROUPS)
                return "more than 32 nested groups";
            depth++;
            size[depth] = 0;
            last[depth] = 0;
            quantified = false;
            continue;
        } else if (ch == ')' && depth > 0) {
            atom = size[depth];
            depth--;
        } else if (ch == '|') {
            last[depth] = 0;
            quantified = false;
            continue;
        } else if (ch == '*' || ch == '?') {
            mult = 1;
        } else if (ch == '+') {
            mult = 2;
        } else if (ch == '{') {
            size_t j = i + 1;
            double m = 0, n = -1;
            while (j < len && pat[j] >= '0' && pat[j] <= '9')
                m = m * 10 + (pat[j++] - '0');
            if (j < len && pat[j] == ',') {
                j++;
                if (j < len && pat[j] >= '0' && pat[j] <= '9') {
                    n = 0;
                    while (j < len && pat[j] >= '0' && pat[j] <= '9')
                        n = n * 10 + (pat[j++] - '0');
                }
            } else {
                n = m;
            }
            i = j; /* at '}' (or wherever regcomp will complain) */
            mult = n < 0 ? m + 1 : (n > m ? n : m);
            if (mult < 1)
                mult = 1;
        } else {
            atom = 1;
        }
        if (mult > 0) {
            if (quantified)
                return "stacked repetition operators (e.g. \"a++\" or \"a{2}{3}\")";
            size[depth] += last[depth] * (mult - 1);
            last[depth] *= mult;
            quantified = true;
        } else {
            size[depth] += atom;
            last[depth] = atom;
            quantified = false;
        }
        if (size[depth] > FILTER_REGEX_MAX_EXPANSION || last[depth] > FILTER_REGEX_MAX_EXPANSION)
            return "repetitions expand beyond 20000 elements";
    }
    return NULL;
}

static int filter_regex_compile(filter_pred_t *p, const json_t *v, char *err, size_t errlen)
{
    const char *pat = json_string_value(v);
    size_t len = json_string_length(v);
    if (len > FILTER_MAX_REGEX) {
        snprintf(err, errlen, "regular expression longer than %d bytes", FILTER_MAX_REGEX);
        return -1;
    }
    if (strlen(pat) != len) {
        snprintf(err, errlen, "regular expression contains a NUL character");
        return -1;
    }
    const char *why_not = filter_regex_check(pat, len);
    if (why_not) {
        snprintf(err, errlen, "bad regular expression \"%.64s\": %s", pat, why_not);
        return -1;
    }
    int flags = REG_EXTENDED | REG_NOSUB | (p->icase ? REG_ICASE : 0);
    int rc = regcomp(&p->u.rx.re, pat, flags);
    if (rc != 0) {
        char why[160];
        regerror(rc, &p->u.rx.re, why, sizeof why);
        regfree(&p->u.rx.re);
        snprintf(err, errlen, "bad regular expression \"%.64s\": %s", pat, why);
        return -1;
    }
    p->u.rx.compiled = true;
    return 0;
}

static bool filter_regex_match(const filter_pred_t *p, codec_slice_t v)
{
    if (!v.ptr)
        return false;
    regmatch_t span = {.rm_so = 0, .rm_eo = (regoff_t)v.len};
    return regexec(&p->u.rx.re, v.ptr, 1, &span, REG_STARTEND) == 0;
}

static void filter_regex_destroy(filter_pred_t *p)
{
    if (p->u.rx.compiled)
        regfree(&p->u.rx.re);
    p->u.rx.compiled = false;
}

const filter_op_t filter_op_regex = {
    .name = "regex",
    .operand = FILTER_OPERAND_STRING,
    .icase_allowed = true,
    .compile = filter_regex_compile,
    .match = filter_regex_match,
    .destroy = filter_regex_destroy,
};
