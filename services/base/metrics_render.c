/* The Prometheus text exposition (format 0.0.4) of a registry: families sorted by name,
 * children by label values, numbers in the shortest form that reads back exactly. Renders
 * under each family's lock while workers keep updating the values (metrics-int.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics-int.h"

/* ---- rendering ---- */

/* Shortest text that reads back as the same double; integers without exponent or point. */
static void fmt_double(double v, char *out, size_t len)
{
    if (isnan(v)) {
        snprintf(out, len, "NaN");
        return;
    }
    if (isinf(v)) {
        snprintf(out, len, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (v == floor(v) && fabs(v) < 1e15) {
        snprintf(out, len, "%.0f", v);
        return;
    }
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(out, len, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            return;
    }
}

static int put_escaped(buf_t *out, const char *s, bool quote)
{
    const char *run = s;
    for (; *s; s++) {
        const char *rep = NULL;
        if (*s == '\\')
            rep = "\\\\";
        else if (*s == '\n')
            rep = "\\n";
        else if (quote && *s == '"')
            rep = "\\\"";
        if (!rep)
            continue;
        if (buf_append(out, run, (size_t)(s - run)) || buf_append_str(out, rep))
            return -1;
        run = s + 1;
    }
    return buf_append(out, run, (size_t)(s - run));
}

/* name{l1="v1",...[,le="x"]} value\n */
static int put_sample(buf_t *out, const struct metrics_family *f, const char *suffix,
                      const struct metrics_child *c, const char *le, double v)
{
    char num[40];
    if (buf_append_str(out, f->name) || buf_append_str(out, suffix))
        return -1;
    if (f->nlabels || le) {
        if (buf_append_u8(out, '{'))
            return -1;
        for (size_t i = 0; i < f->nlabels; i++) {
            if ((i && buf_append_u8(out, ',')) || buf_append_str(out, f->labelnames[i]) ||
                buf_append_str(out, "=\"") || put_escaped(out, c->values[i], true) ||
                buf_append_u8(out, '"'))
                return -1;
        }
        if (le && ((f->nlabels && buf_append_u8(out, ',')) || buf_append_str(out, "le=\"") ||
                   buf_append_str(out, le) || buf_append_u8(out, '"')))
            return -1;
        if (buf_append_u8(out, '}'))
            return -1;
    }
    fmt_double(v, num, sizeof num);
    return buf_printf(out, " %s\n", num) < 0 ? -1 : 0;
}

static int render_child(buf_t *out, const struct metrics_family *f, const struct metrics_child *c)
{
    if (f->type != METRICS_HISTOGRAM)
        return put_sample(out, f, "", c, NULL, metrics_child_read(c));
    /* Cumulative counts; _count is the +Inf bucket so the two always agree even while
     * observations land during the scrape. */
    uint64_t cum = 0;
    char le[40];
    for (size_t i = 0; i <= f->nbounds; i++) {
        cum += atomic_load_explicit(&((struct metrics_child *)c)->buckets[i], memory_order_relaxed);
        if (i < f->nbounds)
            fmt_double(f->bounds[i], le, sizeof le);
        else
            snprintf(le, sizeof le, "+Inf");
        if (put_sample(out, f, "_bucket", c, le, (double)cum))
            return -1;
    }
    if (put_sample(out, f, "_sum", c, NULL, metrics_histogram_sum(c)) ||
        put_sample(out, f, "_count", c, NULL, (double)cum))
        return -1;
    return 0;
}

static int cmp_child(const void *a, const void *b, void *arg)
{
    const struct metrics_child *x = *(struct metrics_child *const *)a;
    const struct metrics_child *y = *(struct metrics_child *const *)b;
    size_t nlabels = *(const size_t *)arg;
    for (size_t i = 0; i < nlabels; i++) {
        int r = strcmp(x->values[i], y->values[i]);
        if (r)
            return r;
    }
    return 0;
}

static int cmp_family(const void *a, const void *b)
{
    const struct metrics_family *x = *(struct metrics_family *const *)a;
    const struct metrics_family *y = *(struct metrics_family *const *)b;
    return strcmp(x->name, y->name);
}

static int render_family(buf_t *out, struct metrics_family *f)
{
    static const char *const type_names[] = {"counter", "gauge", "histogram"};
    int rc = 0;
    pthread_mutex_lock(&f->mu);
    size_t n = f->nchildren + (f->overflow ? 1 : 0);
    if (n == 0)
        goto done; /* a family without samples is left out, as client_golang does */
    struct metrics_child **v = malloc(n * sizeof *v);
    if (!v) {
        rc = -1;
        goto done;
    }
    size_t k = 0;
    for (size_t b = 0; b < METRICS_HASH_SIZE; b++)
        for (struct metrics_child *c = f->table[b]; c; c = c->hnext)
            v[k++] = c;
    qsort_r(v, k, sizeof *v, cmp_child, &f->nlabels);
    if (f->overflow)
        v[k++] = f->overflow;
    if (buf_append_str(out, "# HELP ") || buf_append_str(out, f->name) || buf_append_u8(out, ' ') ||
        put_escaped(out, f->help, false) ||
        buf_printf(out, "\n# TYPE %s %s\n", f->name, type_names[f->type]) < 0)
        rc = -1;
    for (size_t i = 0; rc == 0 && i < k; i++)
        rc = render_child(out, f, v[i]);
    free(v);
done:
    pthread_mutex_unlock(&f->mu);
    return rc;
}

int metrics_render(metrics_registry_t *r, buf_t *out)
{
    if (!r || !out)
        return -1;
    pthread_mutex_lock(&r->mu);
    size_t n = r->nfams;
    struct metrics_family **v = malloc((n ? n : 1) * sizeof *v);
    if (!v) {
        pthread_mutex_unlock(&r->mu);
        return -1;
    }
    memcpy(v, r->fams, n * sizeof *v);
    pthread_mutex_unlock(&r->mu);
    /* Families are never removed while the registry lives, so the copied pointers stay
     * valid without the registry lock. */
    qsort(v, n, sizeof *v, cmp_family);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = render_family(out, v[i]);
    free(v);
    return rc;
}
