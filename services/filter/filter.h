/* The filter engine: ingress filters of ndd-aggregation and egress filters of ndd-adapter.
 * JSON format, operators and semantics: docs/filters.md.
 *
 * Typical use by a worker thread (one acquire per poll batch is enough):
 *
 *     filter_t *f = filter_slot_acquire(slot);       // NULL: no filter, allow everything
 *     for each message m:
 *         int rule;
 *         if (filter_eval(f, &m, &rule) == FILTER_DROP) ... count under filter_rule_name(f, rule)
 *     filter_release(f);
 *
 * and by the config thread:
 *
 *     filter_t *nf = filter_compile(json, err, sizeof err);
 *     if (!nf) refuse the change with err; else filter_slot_swap(slot, nf);
 */
#ifndef NDD_FILTER_H
#define NDD_FILTER_H

#include <jansson.h>

#include "filter-t.h"

/* Compiles a filter definition. Returns a filter holding one reference (drop it with
 * filter_release), or NULL with a message in err such as
 *   rules[1].match.all[0].op: unknown operator "equal" (rule "drop-heartbeats")
 * The definition is checked strictly: unknown keys, wrong types, empty lists, bad regular
 * expressions and exceeded limits (filter-t.h) are refused. spec is not modified or kept. */
filter_t *filter_compile(const json_t *spec, char *err, size_t errlen);
/* The same from JSON text (at most FILTER_MAX_TEXT bytes; need not be NUL-terminated). */
filter_t *filter_compile_text(const char *text, size_t len, char *err, size_t errlen);

/* Decides for one message: the action of the first matching rule, or the default action.
 * *rule (may be NULL) receives the index of that rule or FILTER_RULE_DEFAULT. f == NULL means
 * "no filter": FILTER_ALLOW, FILTER_RULE_DEFAULT. Allocates nothing (except a thread's
 * PCRE2 match data on its first regex evaluation, kept until the thread ends), takes no lock,
 * and only reads f and m; it also adds one to the hit counter of the deciding rule (relaxed
 * atomic). */
filter_action_t filter_eval(const filter_t *f, const codec_msg_t *m, int *rule);
/* regex evaluations stopped by a PCRE2 limit (match, depth, heap) or another match error
 * since the process started; each counted as "no match". */
uint64_t filter_regex_errors(void);

const char *filter_name(const filter_t *f);
filter_action_t filter_default_action(const filter_t *f);
size_t filter_rule_count(const filter_t *f);
/* Name of rule i, or "default" for FILTER_RULE_DEFAULT; NULL when out of range. */
const char *filter_rule_name(const filter_t *f, int i);
/* Messages decided by rule i (or by the default) since the filter was compiled. */
uint64_t filter_rule_hits(const filter_t *f, int i);
/* "allow" / "drop". */
const char *filter_action_name(filter_action_t a);

/* Reference counting: a filter is freed when its last reference is released. */
filter_t *filter_retain(filter_t *f);
void filter_release(filter_t *f); /* NULL is a no-op */

/* ---- Run-time swap ----
 * A slot holds the current filter. filter_slot_acquire returns a reference to it that stays
 * valid (and unchanged) until released, whatever swaps happen meanwhile; a swap installs a
 * new filter for every later acquire and releases the slot's reference on the old one, which
 * is freed when the last evaluator releases it. No message is evaluated against a freed or
 * half-built filter and no evaluator waits for the config thread. A swap waits only for
 * acquires in progress (a few instructions each), never for holders of references. */

/* initial may be NULL (allow everything); the slot takes over the caller's reference. */
filter_slot_t *filter_slot_new(filter_t *initial);
/* Releases the slot's reference; references still held elsewhere stay valid. */
void filter_slot_free(filter_slot_t *s);
/* A new reference to the current filter (NULL when the slot holds none). Thread-safe. */
filter_t *filter_slot_acquire(filter_slot_t *s);
/* Installs next (NULL clears the slot), taking over the caller's reference. Thread-safe;
 * swaps are serialised. Returns the slot's generation after the swap (1, 2, ...). */
uint64_t filter_slot_swap(filter_slot_t *s, filter_t *next);
/* Number of swaps so far (0 for a new slot). */
uint64_t filter_slot_generation(filter_slot_t *s);

/* ---- For operator implementations (services/filter/filter_op_*.c) only ---- */

/* Operators by name, e.g. "equals"; NULL when unknown. */
const filter_op_t *filter_op_find(const char *name);
/* Parses decimal text ("-12", "404", "1.5e3") strictly; returns false for anything else. */
bool filter_number_parse(const char *p, size_t len, filter_number_t *out);
/* <0, 0, >0 like memcmp, comparing exactly when both are integers. */
int filter_number_cmp(const filter_number_t *a, const filter_number_t *b);
/* Parses a JSON operand (number, or string holding a number) into out; -1 with err. */
int filter_number_from_json(const json_t *v, filter_number_t *out, char *err, size_t errlen);
/* ASCII case-insensitive helpers; needle/other side already lowercased by compile. */
bool filter_eq_icase(const char *a, const char *lower, size_t len);
/* Copies s (len bytes) into a new NUL-terminated string, lowercased when icase. */
char *filter_strdup(const char *s, size_t len, bool icase);

#endif
