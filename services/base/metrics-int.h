/* What the registry's three files share (metrics.c: families, children, updates;
 * metrics_render.c: the text exposition; metrics_process.c: the process_* families): the
 * layout of a family and a child and the locks that guard them. Not for use outside these
 * files: everything else goes through metrics.h.
 *
 * Concurrency: the registry mutex guards the family list; each family's mutex guards its
 * child table (lookup, insert, remove, render). Values live in C11 atomics updated with
 * relaxed ordering: a scrape may see one update and not another made at the same moment,
 * which Prometheus tolerates; it never sees a torn value. Doubles are stored as their bit
 * patterns in _Atomic uint64_t and added with a compare-exchange loop. */
#ifndef NDD_METRICS_INT_H
#define NDD_METRICS_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "metrics.h"

#define METRICS_HASH_SIZE 1024u

struct metrics_child {
    struct metrics_family *fam;
    struct metrics_child *hnext;
    uint32_t hash;
    bool overflow;
    char **values;          /* nlabels strings, one allocation with the child */
    _Atomic uint64_t u;     /* counter: integer part */
    _Atomic uint64_t dbits; /* gauge value / counter fraction / histogram sum (as bits) */
    _Atomic(metrics_value_fn) cb;
    void *_Atomic cb_arg;
    _Atomic uint64_t buckets[]; /* histogram: nbounds + 1 (last = +Inf), not cumulative */
};

struct metrics_family {
    struct metrics_registry *reg;
    char *name;
    char *help;
    metrics_type_t type;
    size_t nlabels;
    char *labelnames[METRICS_MAX_LABELS];
    double *bounds;
    size_t nbounds;
    size_t max_children;
    pthread_mutex_t mu;
    struct metrics_child *table[METRICS_HASH_SIZE];
    size_t nchildren;                       /* excluding the overflow child */
    struct metrics_child *overflow;         /* created on first fold */
    struct metrics_child *overflow_counter; /* ndd_metrics_overflow_total{family=name} */
};

struct metrics_registry {
    pthread_mutex_t mu;
    struct metrics_family **fams;
    size_t nfams, capfams;
    size_t max_children;
    struct metrics_family *overflow_fam;
};

/* Doubles live in _Atomic uint64_t as their bit patterns. */
static inline uint64_t metrics_dbl_bits(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static inline double metrics_bits_dbl(uint64_t b)
{
    double v;
    memcpy(&v, &b, sizeof v);
    return v;
}

/* The value a scrape shows for a counter or gauge child: its callback's answer when it has
 * one, else the stored value. */
double metrics_child_read(const struct metrics_child *c);
/* Registers the process_* families (from /proc/self) in r: 0, or -1 (OOM). */
int metrics_process_register(metrics_registry_t *r);

#endif
