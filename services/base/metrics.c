/* Metrics registry: families (counter, gauge, histogram), their children (one per label
 * value set), the lock-free updates and the reads of a child's value. The text exposition
 * is in metrics_render.c, the process_* families in metrics_process.c; the layout all three
 * share, and the locking rules, are in metrics-int.h. */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "log.h"
#include "metrics-int.h"

const double metrics_latency_buckets_seconds[] = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                                  0.005,   0.01,   0.025,   0.05,   0.1,   0.25,
                                                  0.5,     1,      2.5,     5,      10};
const size_t metrics_latency_buckets_seconds_n =
    sizeof metrics_latency_buckets_seconds / sizeof metrics_latency_buckets_seconds[0];
const double metrics_size_buckets_bytes[] = {64,    256,   1024,   2048,    4096,   8192,
                                             16384, 65536, 262144, 1048576, 4194304};
const size_t metrics_size_buckets_bytes_n =
    sizeof metrics_size_buckets_bytes / sizeof metrics_size_buckets_bytes[0];

/* ---- atomic doubles ---- */

static void atomic_dbl_add(_Atomic uint64_t *p, double v)
{
    uint64_t old = atomic_load_explicit(p, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(p, &old,
                                                  metrics_dbl_bits(metrics_bits_dbl(old) + v),
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
}

/* ---- names ---- */

static bool valid_metric_name(const char *s)
{
    if (!s || !*s || !(isalpha((unsigned char)*s) || *s == '_' || *s == ':'))
        return false;
    for (s++; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_' || *s == ':'))
            return false;
    return true;
}

static bool valid_label_name(const char *s, size_t n)
{
    if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return false;
    if (n >= 2 && s[0] == '_' && s[1] == '_')
        return false;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
            return false;
    return true;
}

/* "a,b" -> names; returns count or -1 (logged). */
static int split_labels(const char *fam, const char *labels, char **out, bool histogram)
{
    int n = 0;
    if (!labels || !*labels)
        return 0;
    const char *p = labels;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        while (len && isspace((unsigned char)*p)) {
            p++;
            len--;
        }
        while (len && isspace((unsigned char)p[len - 1]))
            len--;
        if (!valid_label_name(p, len) || n >= METRICS_MAX_LABELS ||
            (histogram && len == 2 && memcmp(p, "le", 2) == 0)) {
            log_error("metrics: family %s: invalid or too many label names in \"%s\"", fam, labels);
            goto fail;
        }
        out[n] = strndup(p, len);
        if (!out[n])
            goto fail;
        for (int i = 0; i < n; i++)
            if (strcmp(out[i], out[n]) == 0) {
                log_error("metrics: family %s: duplicate label name %s", fam, out[n]);
                n++;
                goto fail;
            }
        n++;
        if (!comma)
            break;
        p = comma + 1;
    }
    return n;
fail:
    for (int i = 0; i < n; i++)
        free(out[i]);
    return -1;
}

/* ---- label values ---- */

/* Length of the valid UTF-8 sequence at p (1-4), or 0 when it is not one (overlong forms,
 * surrogates and code points past U+10FFFF are invalid). */
static size_t utf8_seq(const unsigned char *p)
{
    if (p[0] < 0x80)
        return 1;
    if (p[0] >= 0xC2 && p[0] <= 0xDF)
        return (p[1] & 0xC0) == 0x80 ? 2 : 0;
    if (p[0] >= 0xE0 && p[0] <= 0xEF) {
        if ((p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80)
            return 0;
        if ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] >= 0xA0))
            return 0;
        return 3;
    }
    if (p[0] >= 0xF0 && p[0] <= 0xF4) {
        if ((p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80)
            return 0;
        if ((p[0] == 0xF0 && p[1] < 0x90) || (p[0] == 0xF4 && p[1] >= 0x90))
            return 0;
        return 4;
    }
    return 0;
}

/* The exposition format is UTF-8 and one bad byte makes Prometheus reject the whole scrape,
 * so label values are canonicalised when a child is looked up: invalid sequences become
 * U+FFFD and values are cut at METRICS_MAX_LABEL_VALUE bytes. Returns v itself when it is
 * already canonical, else a malloc'd copy stored in *owned (NULL on OOM: v is used). */
static const char *label_canonical(const char *v, char **owned)
{
    *owned = NULL;
    if (!v)
        return "";
    const unsigned char *p = (const unsigned char *)v;
    size_t len = 0, n;
    while (p[len] && (n = utf8_seq(p + len)) != 0 && len + n <= METRICS_MAX_LABEL_VALUE)
        len += n;
    if (!p[len])
        return v;
    char *out = malloc(METRICS_MAX_LABEL_VALUE + 4);
    if (!out)
        return v;
    size_t o = 0;
    for (size_t i = 0; p[i];) {
        n = utf8_seq(p + i);
        size_t need = n ? n : 3;
        if (o + need > METRICS_MAX_LABEL_VALUE)
            break;
        if (n) {
            memcpy(out + o, p + i, n);
            i += n;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            i++;
        }
        o += need;
    }
    out[o] = '\0';
    *owned = out;
    return out;
}

/* ---- children ---- */

static uint32_t labels_hash(const char *const *values, size_t n)
{
    uint32_t h = BUF_FNV1A_INIT;
    for (size_t i = 0; i < n; i++) {
        h = buf_fnv1a_str(h, values[i] ? values[i] : "");
        h = buf_fnv1a_byte(h, 0xff); /* separator: ("ab","c") != ("a","bc") */
    }
    return h;
}

static bool labels_equal(char *const *a, const char *const *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(a[i], b[i] ? b[i] : "") != 0)
            return false;
    return true;
}

static struct metrics_child *child_alloc(struct metrics_family *f, const char *const *values,
                                         uint32_t hash)
{
    size_t nb = f->type == METRICS_HISTOGRAM ? f->nbounds + 1 : 0;
    size_t head = sizeof(struct metrics_child) + nb * sizeof(_Atomic uint64_t);
    size_t strs = 0;
    for (size_t i = 0; i < f->nlabels; i++)
        strs += strlen(values[i] ? values[i] : "") + 1;
    /* One allocation: child, bucket array, value pointer array, value strings. */
    head = (head + sizeof(char *) - 1) / sizeof(char *) * sizeof(char *);
    struct metrics_child *c = calloc(1, head + f->nlabels * sizeof(char *) + strs);
    if (!c)
        return NULL;
    c->fam = f;
    c->hash = hash;
    c->values = (char **)((char *)c + head);
    char *s = (char *)(c->values + f->nlabels);
    for (size_t i = 0; i < f->nlabels; i++) {
        size_t len = strlen(values[i] ? values[i] : "");
        memcpy(s, values[i] ? values[i] : "", len + 1);
        c->values[i] = s;
        s += len + 1;
    }
    atomic_init(&c->u, 0);
    atomic_init(&c->dbits, metrics_dbl_bits(0.0));
    atomic_init(&c->cb, NULL);
    atomic_init(&c->cb_arg, NULL);
    for (size_t i = 0; i < nb; i++)
        atomic_init(&c->buckets[i], 0);
    return c;
}

static struct metrics_child *overflow_counter_for(struct metrics_family *f);

static struct metrics_child *child_lookup(metrics_family_t *f, const char *const *values);

struct metrics_child *metrics_child_labelv(metrics_family_t *f, const char *const *values)
{
    if (!f)
        return NULL;
    static const char *const none[1] = {NULL};
    if (f->nlabels == 0)
        return child_lookup(f, none);
    const char *canon[METRICS_MAX_LABELS];
    char *owned[METRICS_MAX_LABELS];
    for (size_t i = 0; i < f->nlabels; i++)
        canon[i] = label_canonical(values[i], &owned[i]);
    struct metrics_child *c = child_lookup(f, canon);
    for (size_t i = 0; i < f->nlabels; i++)
        free(owned[i]);
    return c;
}

static struct metrics_child *child_lookup(metrics_family_t *f, const char *const *values)
{
    uint32_t h = labels_hash(values, f->nlabels);
    struct metrics_child *overflow_ctr = NULL;
    pthread_mutex_lock(&f->mu);
    struct metrics_child *c;
    for (c = f->table[h % METRICS_HASH_SIZE]; c; c = c->hnext)
        if (c->hash == h && labels_equal(c->values, values, f->nlabels))
            goto out;
    if (f->nchildren >= f->max_children) {
        if (!f->overflow) {
            const char *ov[METRICS_MAX_LABELS];
            for (size_t i = 0; i < f->nlabels; i++)
                ov[i] = METRICS_OVERFLOW_VALUE;
            f->overflow = child_alloc(f, ov, 0);
            if (f->overflow)
                f->overflow->overflow = true;
        }
        c = f->overflow;
        overflow_ctr = f->overflow_counter;
        goto out;
    }
    c = child_alloc(f, values, h);
    if (!c) {
        log_error("metrics: family %s: out of memory adding a child", f->name);
        goto out;
    }
    c->hnext = f->table[h % METRICS_HASH_SIZE];
    f->table[h % METRICS_HASH_SIZE] = c;
    f->nchildren++;
out:
    pthread_mutex_unlock(&f->mu);
    if (c && c->overflow) {
        /* Outside f->mu: the overflow family has its own lock. */
        if (!overflow_ctr) {
            overflow_ctr = overflow_counter_for(f);
            pthread_mutex_lock(&f->mu);
            f->overflow_counter = overflow_ctr;
            pthread_mutex_unlock(&f->mu);
        }
        if (overflow_ctr)
            metrics_counter_inc(overflow_ctr);
    }
    return c;
}

static struct metrics_child *child_labels_va(metrics_family_t *f, metrics_type_t want, va_list ap)
{
    if (!f)
        return NULL;
    if (f->type != want) {
        log_error("metrics: family %s used with the wrong type", f->name);
        return NULL;
    }
    const char *values[METRICS_MAX_LABELS];
    for (size_t i = 0; i < f->nlabels; i++)
        values[i] = va_arg(ap, const char *);
    return metrics_child_labelv(f, values);
}

/* The typed variadic entries (C cannot pass "..." on, so each is its own function around
 * child_labels_va). */
#define METRICS_LABELS_FN(ret, name, type)                                                         \
    ret *name(metrics_family_t *f, ...)                                                            \
    {                                                                                              \
        va_list ap;                                                                                \
        va_start(ap, f);                                                                           \
        struct metrics_child *c = child_labels_va(f, type, ap);                                    \
        va_end(ap);                                                                                \
        return c;                                                                                  \
    }
METRICS_LABELS_FN(metrics_counter_t, metrics_counter_labels, METRICS_COUNTER)
METRICS_LABELS_FN(metrics_gauge_t, metrics_gauge_labels, METRICS_GAUGE)
METRICS_LABELS_FN(metrics_histogram_t, metrics_histogram_labels, METRICS_HISTOGRAM)
#undef METRICS_LABELS_FN

size_t metrics_family_remove_matching(metrics_family_t *f, const char *label, const char *value)
{
    if (!f || !label)
        return 0;
    size_t li;
    for (li = 0; li < f->nlabels; li++)
        if (strcmp(f->labelnames[li], label) == 0)
            break;
    if (li == f->nlabels)
        return 0;
    char *owned;
    value = label_canonical(value, &owned);
    size_t removed = 0;
    pthread_mutex_lock(&f->mu);
    for (size_t b = 0; b < METRICS_HASH_SIZE; b++) {
        struct metrics_child **pp = &f->table[b];
        while (*pp) {
            struct metrics_child *c = *pp;
            if (strcmp(c->values[li], value) == 0) {
                *pp = c->hnext;
                f->nchildren--;
                free(c);
                removed++;
            } else {
                pp = &c->hnext;
            }
        }
    }
    pthread_mutex_unlock(&f->mu);
    free(owned);
    return removed;
}

/* ---- updates ---- */

void metrics_counter_inc(metrics_counter_t *c)
{
    if (c)
        atomic_fetch_add_explicit(&c->u, 1, memory_order_relaxed);
}

void metrics_counter_add(metrics_counter_t *c, uint64_t n)
{
    if (c)
        atomic_fetch_add_explicit(&c->u, n, memory_order_relaxed);
}

double metrics_child_read(const struct metrics_child *c)
{
    metrics_value_fn fn =
        atomic_load_explicit(&((struct metrics_child *)c)->cb, memory_order_acquire);
    if (fn)
        return fn(atomic_load_explicit(&((struct metrics_child *)c)->cb_arg, memory_order_acquire));
    double d = metrics_bits_dbl(
        atomic_load_explicit(&((struct metrics_child *)c)->dbits, memory_order_relaxed));
    if (c->fam->type == METRICS_COUNTER)
        return (double)atomic_load_explicit(&((struct metrics_child *)c)->u, memory_order_relaxed) +
               d;
    return d;
}

double metrics_counter_value(const metrics_counter_t *c)
{
    return c ? metrics_child_read(c) : 0.0;
}

uint64_t metrics_counter_get(const metrics_counter_t *c)
{
    return c ? atomic_load_explicit(&((struct metrics_child *)c)->u, memory_order_relaxed) : 0;
}

void metrics_gauge_set(metrics_gauge_t *g, double v)
{
    if (g)
        atomic_store_explicit(&g->dbits, metrics_dbl_bits(v), memory_order_relaxed);
}

double metrics_gauge_value(const metrics_gauge_t *g)
{
    return g ? metrics_child_read(g) : 0.0;
}

void metrics_child_set_callback(struct metrics_child *c, metrics_value_fn fn, void *arg)
{
    if (!c || c->fam->type == METRICS_HISTOGRAM)
        return;
    /* arg first: a scrape that sees the new fn must see its arg. */
    atomic_store_explicit(&c->cb_arg, arg, memory_order_release);
    atomic_store_explicit(&c->cb, fn, memory_order_release);
}

void metrics_histogram_observe(metrics_histogram_t *h, double v)
{
    if (!h || isnan(v))
        return;
    const struct metrics_family *f = h->fam;
    /* Binary search for the first bound >= v (buckets are "less or equal"). */
    size_t lo = 0, hi = f->nbounds;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v <= f->bounds[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    atomic_fetch_add_explicit(&h->buckets[lo], 1, memory_order_relaxed);
    atomic_dbl_add(&h->dbits, v);
}

uint64_t metrics_histogram_count(const metrics_histogram_t *h)
{
    if (!h)
        return 0;
    uint64_t n = 0;
    for (size_t i = 0; i <= h->fam->nbounds; i++)
        n += atomic_load_explicit(&((struct metrics_child *)h)->buckets[i], memory_order_relaxed);
    return n;
}

double metrics_histogram_sum(const metrics_histogram_t *h)
{
    return h ? metrics_bits_dbl(
                   atomic_load_explicit(&((struct metrics_child *)h)->dbits, memory_order_relaxed))
             : 0.0;
}

size_t metrics_histogram_buckets(const metrics_histogram_t *h, const double **bounds,
                                 uint64_t *counts, size_t max)
{
    if (!h)
        return 0;
    const struct metrics_child *c = h;
    size_t n = c->fam->nbounds + 1;
    for (size_t i = 0; i < n && i < max; i++)
        counts[i] =
            atomic_load_explicit(&((struct metrics_child *)c)->buckets[i], memory_order_relaxed);
    if (bounds)
        *bounds = c->fam->bounds;
    return n;
}

/* ---- buckets ---- */

int metrics_buckets_exponential(double start, double factor, size_t count, double *out)
{
    if (!out || count == 0 || count > METRICS_MAX_BUCKETS || !(start > 0) || !(factor > 1) ||
        !isfinite(start) || !isfinite(factor))
        return -1;
    double v = start;
    for (size_t i = 0; i < count; i++) {
        if (!isfinite(v))
            return -1;
        out[i] = v;
        v *= factor;
    }
    return 0;
}

/* ---- families ---- */

static void family_free(struct metrics_family *f)
{
    if (!f)
        return;
    for (size_t b = 0; b < METRICS_HASH_SIZE; b++) {
        struct metrics_child *c = f->table[b];
        while (c) {
            struct metrics_child *next = c->hnext;
            free(c);
            c = next;
        }
    }
    free(f->overflow);
    for (size_t i = 0; i < f->nlabels; i++)
        free(f->labelnames[i]);
    free(f->bounds);
    free(f->name);
    free(f->help);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

static bool family_matches(const struct metrics_family *f, metrics_type_t type, char **labels,
                           size_t nlabels, const double *bounds, size_t nbounds)
{
    if (f->type != type || f->nlabels != nlabels)
        return false;
    for (size_t i = 0; i < nlabels; i++)
        if (strcmp(f->labelnames[i], labels[i]) != 0)
            return false;
    if (type == METRICS_HISTOGRAM &&
        (f->nbounds != nbounds || memcmp(f->bounds, bounds, nbounds * sizeof(double)) != 0))
        return false;
    return true;
}

/* Whether name suits a family of type: what promtool's lint would reject is refused here, at
 * registration, rather than in a scrape. */
static bool family_check_name(metrics_type_t type, const char *name)
{
    if (!valid_metric_name(name)) {
        log_error("metrics: invalid metric name \"%s\"", name ? name : "(null)");
        return false;
    }
    size_t nlen = strlen(name);
    bool total = nlen > 6 && strcmp(name + nlen - 6, "_total") == 0;
    bool reserved = false, upper = false;
    for (const char *p = name; *p; p++)
        upper |= isupper((unsigned char)*p) != 0;
    static const char *const suffixes[] = {"_count", "_sum", "_bucket"};
    for (size_t i = 0; i < 3; i++) {
        size_t sl = strlen(suffixes[i]);
        reserved |= nlen > sl && strcmp(name + nlen - sl, suffixes[i]) == 0;
    }
    if (upper || (type != METRICS_HISTOGRAM && reserved)) {
        /* promtool's lint: snake_case, and _count/_sum/_bucket belong to histograms */
        log_error("metrics: %s: names are snake_case and only histograms end in "
                  "_count/_sum/_bucket",
                  name);
        return false;
    }
    if (type == METRICS_COUNTER ? !total : total) {
        /* the exposition convention promtool enforces: counters, and only counters, end in
         * _total */
        log_error("metrics: %s: a %s name must %send in _total", name,
                  type == METRICS_COUNTER ? "counter" : "gauge or histogram",
                  type == METRICS_COUNTER ? "" : "not ");
        return false;
    }
    return true;
}

/* A histogram's bucket bounds: 1..METRICS_MAX_BUCKETS, finite, strictly increasing. */
static bool family_check_bounds(const char *name, const double *bounds, size_t nbounds)
{
    if (!bounds || nbounds == 0 || nbounds > METRICS_MAX_BUCKETS) {
        log_error("metrics: histogram %s: needs 1 to %d bucket bounds", name, METRICS_MAX_BUCKETS);
        return false;
    }
    for (size_t i = 0; i < nbounds; i++)
        if (!isfinite(bounds[i]) || (i > 0 && !(bounds[i] > bounds[i - 1]))) {
            log_error("metrics: histogram %s: bounds must be finite and strictly increasing", name);
            return false;
        }
    return true;
}

/* The family registered under name, or NULL (r->mu held). */
static struct metrics_family *family_lookup(metrics_registry_t *r, const char *name)
{
    for (size_t i = 0; i < r->nfams; i++)
        if (strcmp(r->fams[i]->name, name) == 0)
            return r->fams[i];
    return NULL;
}

/* The rest of a new family f (its type and label names set): -1 when out of memory, f then
 * half made and freed by the caller with family_free. */
static int family_fill(struct metrics_family *f, metrics_registry_t *r, const char *name,
                       const char *help, const double *bounds, size_t nbounds)
{
    f->max_children = r->max_children;
    pthread_mutex_init(&f->mu, NULL);
    f->name = strdup(name);
    /* promtool rejects an empty HELP: fall back to the name rather than fail the caller */
    char *help_owned;
    const char *h = label_canonical(help && *help ? help : name, &help_owned); /* UTF-8 */
    f->help = strdup(h);
    free(help_owned);
    if (!f->name || !f->help)
        return -1;
    if (f->type == METRICS_HISTOGRAM) {
        f->bounds = malloc(nbounds * sizeof(double));
        if (!f->bounds)
            return -1;
        memcpy(f->bounds, bounds, nbounds * sizeof(double));
        f->nbounds = nbounds;
    }
    return 0;
}

/* Appends f to the registry, growing it by doubling (r->mu held); -1 when out of memory. */
static int family_register(metrics_registry_t *r, struct metrics_family *f)
{
    if (r->nfams == r->capfams) {
        size_t cap = r->capfams ? r->capfams * 2 : 32;
        struct metrics_family **nf = realloc(r->fams, cap * sizeof *nf);
        if (!nf)
            return -1;
        r->fams = nf;
        r->capfams = cap;
    }
    r->fams[r->nfams++] = f;
    return 0;
}

/* A family, or the one already registered under name when it is the same (type, labels,
 * buckets): registering twice is how two users of one registry share a family. */
static metrics_family_t *family_new(metrics_registry_t *r, metrics_type_t type, const char *name,
                                    const char *help, const char *labels, const double *bounds,
                                    size_t nbounds)
{
    if (!r)
        return NULL;
    if (!family_check_name(type, name))
        return NULL;
    if (type == METRICS_HISTOGRAM && !family_check_bounds(name, bounds, nbounds))
        return NULL;
    char *lnames[METRICS_MAX_LABELS];
    int nl = split_labels(name, labels, lnames, type == METRICS_HISTOGRAM);
    if (nl < 0)
        return NULL;

    pthread_mutex_lock(&r->mu);
    struct metrics_family *f = family_lookup(r, name);
    if (f) {
        bool same = family_matches(f, type, lnames, (size_t)nl, bounds, nbounds);
        pthread_mutex_unlock(&r->mu);
        for (int k = 0; k < nl; k++)
            free(lnames[k]);
        if (!same)
            log_error("metrics: %s already registered with another type, labels or buckets", name);
        return same ? f : NULL;
    }
    f = calloc(1, sizeof *f);
    if (!f)
        goto oom;
    f->reg = r;
    f->type = type;
    f->nlabels = (size_t)nl;
    for (int k = 0; k < nl; k++)
        f->labelnames[k] = lnames[k];
    nl = 0; /* owned by f now */
    if (family_fill(f, r, name, help, bounds, nbounds) != 0 || family_register(r, f) != 0)
        goto oom;
    pthread_mutex_unlock(&r->mu);
    return f;
oom:
    pthread_mutex_unlock(&r->mu);
    for (int k = 0; k < nl; k++)
        free(lnames[k]);
    family_free(f);
    log_error("metrics: out of memory registering %s", name);
    return NULL;
}

metrics_family_t *metrics_counter_new(metrics_registry_t *r, const char *name, const char *help,
                                      const char *labels)
{
    return family_new(r, METRICS_COUNTER, name, help, labels, NULL, 0);
}

metrics_family_t *metrics_gauge_new(metrics_registry_t *r, const char *name, const char *help,
                                    const char *labels)
{
    return family_new(r, METRICS_GAUGE, name, help, labels, NULL, 0);
}

metrics_family_t *metrics_histogram_new(metrics_registry_t *r, const char *name, const char *help,
                                        const char *labels, const double *bounds, size_t nbounds)
{
    return family_new(r, METRICS_HISTOGRAM, name, help, labels, bounds, nbounds);
}

void metrics_family_set_max_children(metrics_family_t *f, size_t max)
{
    if (!f)
        return;
    pthread_mutex_lock(&f->mu);
    f->max_children = max;
    pthread_mutex_unlock(&f->mu);
}

size_t metrics_family_children(const metrics_family_t *f)
{
    if (!f)
        return 0;
    pthread_mutex_lock(&((struct metrics_family *)f)->mu);
    size_t n = f->nchildren;
    pthread_mutex_unlock(&((struct metrics_family *)f)->mu);
    return n;
}

static struct metrics_child *overflow_counter_for(struct metrics_family *f)
{
    struct metrics_family *of = f->reg->overflow_fam;
    if (!of || of == f)
        return NULL;
    const char *v[1] = {f->name};
    return metrics_child_labelv(of, v);
}

/* ---- registry ---- */

metrics_registry_t *metrics_registry_new(void)
{
    metrics_registry_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    pthread_mutex_init(&r->mu, NULL);
    r->max_children = METRICS_DEFAULT_MAX_CHILDREN;
    r->overflow_fam =
        metrics_counter_new(r, "ndd_metrics_overflow_total",
                            "Label sets folded into the _overflow child because a family was "
                            "at its child limit",
                            "family");
    if (!r->overflow_fam || metrics_process_register(r)) {
        metrics_registry_free(r);
        return NULL;
    }
    return r;
}

void metrics_registry_free(metrics_registry_t *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nfams; i++)
        family_free(r->fams[i]);
    free(r->fams);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

static metrics_registry_t *g_default;
static pthread_once_t g_default_once = PTHREAD_ONCE_INIT;

static void default_init(void)
{
    g_default = metrics_registry_new();
}

metrics_registry_t *metrics_default_registry(void)
{
    pthread_once(&g_default_once, default_init);
    return g_default;
}
