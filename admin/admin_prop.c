/* Propagation of configuration changes: when every worker following ndd.config has applied
 * a change the admin published (docs/control-path.md, "Propagation").
 *
 * The publisher's delivery report gives each record its partition and offset; the workers
 * report the offsets they have applied (config events, and a copy in every heartbeat), with
 * the wall-clock time of that apply. A change at offset o of partition p is applied by a
 * worker once the worker's next offset of p is past o; the time of the first report that says
 * so is an upper bound of when it applied it (workers report within EVENTS_CONFIG_MIN_MS).
 * Once every worker that follows the change's kind and is not down has applied it, the
 * change is complete: max over those workers of (apply time - publish time) goes into
 * ndd_admin_config_propagation_seconds{kind}.
 *
 * Bounded: the last ADMIN_PROP_CHANGES changes are kept (a ring; an older change still
 * incomplete when it is overwritten is counted in
 * ndd_admin_config_changes_total{result="expired"}), and ADMIN_PROP_MAX_WORKERS workers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin.h"
#include "log.h"
#include "metrics.h"

#define ADMIN_PROP_CHANGES 1024
#define ADMIN_PROP_MAX_WORKERS 4096
#define ADMIN_PROP_MAX_PARTS 16
#define ADMIN_PROP_ALL_KINDS ((1u << ADMIN_KIND_COUNT) - 1)

typedef struct admin_prop_worker {
    char name[192]; /* "service/instance" */
    unsigned kinds; /* bit per admin_kind_t followed */
    int nparts;     /* offsets known */
    int64_t next[ADMIN_PROP_MAX_PARTS];
    int64_t applied_ms; /* of the last report */
    bool down;
} admin_prop_worker_t;

typedef struct admin_prop_change {
    char key[192];
    int kind;        /* admin_kind_t, -1 for a key of no known kind */
    int64_t version; /* 0: tombstone */
    int32_t partition;
    int64_t offset;
    int64_t publish_ms;
    int64_t applied_ms; /* max over the workers that applied it so far */
    int applied_by, workers;
    int64_t propagation_ms; /* -1 until complete */
} admin_prop_change_t;

struct admin_prop {
    admin_prop_worker_t *workers;
    size_t nworkers;
    admin_prop_change_t *ring;
    size_t head;  /* next slot */
    size_t count; /* used slots */
    size_t pending;
    metrics_histogram_t *m_prop[ADMIN_KIND_COUNT];
    metrics_counter_t *m_done, *m_expired;
    metrics_gauge_t *m_pending;
};

static const double admin_prop_buckets[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                            0.25,  0.5,    1,     2.5,  5,     10,   30};

admin_prop_t *admin_prop_new(void)
{
    admin_prop_t *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->workers = calloc(ADMIN_PROP_MAX_WORKERS, sizeof(*p->workers));
    p->ring = calloc(ADMIN_PROP_CHANGES, sizeof(*p->ring));
    metrics_registry_t *r = metrics_default_registry();
    metrics_family_t *fh = metrics_histogram_new(
        r, "ndd_admin_config_propagation_seconds",
        "Time from the publish of a configuration change to the last worker following its kind "
        "having applied it",
        "kind", admin_prop_buckets, sizeof(admin_prop_buckets) / sizeof(*admin_prop_buckets));
    metrics_family_t *fc = metrics_counter_new(
        r, "ndd_admin_config_changes_total",
        "Configuration changes published, by outcome: applied by every worker following their "
        "kind (complete), or dropped from the tracking ring before that (expired)",
        "result");
    metrics_family_t *fp = metrics_gauge_new(
        r, "ndd_admin_config_changes_pending",
        "Configuration changes published and not yet applied by every worker", NULL);
    if (!p->workers || !p->ring || !fh || !fc || !fp) {
        admin_prop_free(p);
        return NULL;
    }
    for (int k = 0; k < ADMIN_KIND_COUNT; k++)
        p->m_prop[k] = metrics_histogram_labels(fh, admin_kind_name((admin_kind_t)k));
    p->m_done = metrics_counter_labels(fc, "complete");
    p->m_expired = metrics_counter_labels(fc, "expired");
    p->m_pending = metrics_gauge_labels(fp);
    metrics_gauge_set(p->m_pending, 0);
    return p;
}

void admin_prop_free(admin_prop_t *p)
{
    if (!p)
        return;
    free(p->workers);
    free(p->ring);
    free(p);
}

static bool admin_prop_follows(const admin_prop_worker_t *w, int kind)
{
    return !w->down && w->nparts > 0 && kind >= 0 && (w->kinds & (1u << kind));
}

static bool admin_prop_covers(const admin_prop_worker_t *w, const admin_prop_change_t *c)
{
    return c->partition >= 0 && c->partition < w->nparts && w->next[c->partition] > c->offset;
}

/* Recounts who applied c; completes it when every follower did. */
static void admin_prop_evaluate(admin_prop_t *p, admin_prop_change_t *c)
{
    if (c->propagation_ms >= 0)
        return;
    int by = 0, of = 0;
    for (size_t i = 0; i < p->nworkers; i++) {
        const admin_prop_worker_t *w = &p->workers[i];
        if (!admin_prop_follows(w, c->kind))
            continue;
        of++;
        by += admin_prop_covers(w, c);
    }
    c->applied_by = by;
    c->workers = of;
    if (of == 0 || by < of)
        return;
    int64_t d = c->applied_ms - c->publish_ms;
    c->propagation_ms = d > 0 ? d : 0;
    p->pending--;
    metrics_gauge_set(p->m_pending, (double)p->pending);
    metrics_histogram_observe(p->m_prop[c->kind], (double)c->propagation_ms / 1000.0);
    metrics_counter_inc(p->m_done);
}

void admin_prop_published(admin_prop_t *p, const char *key, size_t key_len, int64_t version,
                          int32_t partition, int64_t offset, int64_t publish_ms)
{
    if (!p)
        return;
    admin_prop_change_t *c = &p->ring[p->head];
    if (p->count == ADMIN_PROP_CHANGES && c->propagation_ms < 0) {
        p->pending--;
        metrics_counter_inc(p->m_expired);
    }
    p->head = (p->head + 1) % ADMIN_PROP_CHANGES;
    if (p->count < ADMIN_PROP_CHANGES)
        p->count++;
    memset(c, 0, sizeof(*c));
    snprintf(c->key, sizeof(c->key), "%.*s", (int)key_len, key);
    char kname[32];
    const char *slash = strchr(c->key, '/');
    admin_kind_t k;
    c->kind = -1;
    if (slash && (size_t)(slash - c->key) < sizeof(kname)) {
        memcpy(kname, c->key, (size_t)(slash - c->key));
        kname[slash - c->key] = '\0';
        if (admin_kind_from_name(kname, &k) == 0)
            c->kind = (int)k;
    }
    c->version = version;
    c->partition = partition;
    c->offset = offset;
    c->publish_ms = publish_ms;
    c->propagation_ms = -1;
    p->pending++;
    if (c->kind < 0) {
        /* No worker follows it: complete at once, not timed. */
        c->propagation_ms = 0;
        p->pending--;
        return;
    }
    metrics_gauge_set(p->m_pending, (double)p->pending);
    /* A worker may report before the delivery report reaches us. */
    for (size_t i = 0; i < p->nworkers; i++) {
        const admin_prop_worker_t *w = &p->workers[i];
        if (admin_prop_follows(w, c->kind) && admin_prop_covers(w, c) &&
            w->applied_ms > c->applied_ms)
            c->applied_ms = w->applied_ms;
    }
    admin_prop_evaluate(p, c);
}

static admin_prop_worker_t *admin_prop_worker_find(admin_prop_t *p, const char *service,
                                                   const char *instance, bool add)
{
    char name[192];
    snprintf(name, sizeof(name), "%s/%s", service, instance);
    for (size_t i = 0; i < p->nworkers; i++)
        if (strcmp(p->workers[i].name, name) == 0)
            return &p->workers[i];
    if (!add || p->nworkers >= ADMIN_PROP_MAX_WORKERS)
        return NULL;
    admin_prop_worker_t *w = &p->workers[p->nworkers++];
    memset(w, 0, sizeof(*w));
    snprintf(w->name, sizeof(w->name), "%s", name);
    return w;
}

static void admin_prop_evaluate_all(admin_prop_t *p)
{
    for (size_t i = 0; i < p->count; i++)
        admin_prop_evaluate(p, &p->ring[i]);
}

int admin_prop_worker(admin_prop_t *p, const char *service, const char *instance, json_t *config)
{
    json_t *offsets = json_object_get(config, "offsets");
    json_t *kinds = json_object_get(config, "kinds");
    json_t *applied = json_object_get(config, "applied_ms");
    if (!p || !json_is_array(offsets) || !json_is_array(kinds) || !json_is_integer(applied))
        return -1;
    admin_prop_worker_t *w = admin_prop_worker_find(p, service, instance, true);
    if (!w)
        return -1;
    /* A heartbeat's copy of the state is taken before it is produced: a config event sent in
     * between arrives first. An older state than the one held is stale, not a step back. */
    if (w->nparts > 0 && json_integer_value(applied) < w->applied_ms)
        return 0;
    unsigned mask = 0;
    size_t i;
    json_t *v;
    json_array_foreach(kinds, i, v)
    {
        admin_kind_t k;
        if (json_is_string(v) && admin_kind_from_name(json_string_value(v), &k) == 0)
            mask |= 1u << k;
    }
    w->kinds = json_array_size(kinds) == 0 ? ADMIN_PROP_ALL_KINDS : mask;
    int64_t old[ADMIN_PROP_MAX_PARTS];
    int oldn = w->nparts;
    memcpy(old, w->next, sizeof(old));
    int n = 0;
    json_array_foreach(offsets, i, v)
    {
        if (n >= ADMIN_PROP_MAX_PARTS)
            break;
        w->next[n++] = json_is_integer(v) ? json_integer_value(v) : 0;
    }
    w->nparts = n;
    w->applied_ms = json_integer_value(applied);
    w->down = false;
    /* Changes this report covers for the first time: applied by now at the latest. */
    for (size_t c = 0; c < p->count; c++) {
        admin_prop_change_t *ch = &p->ring[c];
        if (ch->propagation_ms >= 0 || !admin_prop_follows(w, ch->kind) ||
            !admin_prop_covers(w, ch))
            continue;
        bool before = ch->partition < oldn && old[ch->partition] > ch->offset;
        if (!before && w->applied_ms > ch->applied_ms)
            ch->applied_ms = w->applied_ms;
    }
    /* A new follower, or one whose kinds changed, changes every pending change's M. */
    admin_prop_evaluate_all(p);
    return 0;
}

void admin_prop_worker_down(admin_prop_t *p, const char *service, const char *instance, bool down)
{
    if (!p)
        return;
    admin_prop_worker_t *w = admin_prop_worker_find(p, service, instance, false);
    if (!w || w->down == down)
        return;
    w->down = down;
    /* A follower gone: the changes it had not applied may now be complete. */
    admin_prop_evaluate_all(p);
}

json_t *admin_prop_status(admin_prop_t *p, int changes)
{
    json_t *followers = json_object(), *list = json_array();
    for (int k = 0; k < ADMIN_KIND_COUNT; k++) {
        int n = 0;
        for (size_t i = 0; p && i < p->nworkers; i++)
            n += admin_prop_follows(&p->workers[i], k);
        json_object_set_new(followers, admin_kind_name((admin_kind_t)k), json_integer(n));
    }
    size_t want = changes < 0 ? 0 : (size_t)changes;
    for (size_t i = 0; p && i < p->count && i < want; i++) {
        /* newest first */
        const admin_prop_change_t *c =
            &p->ring[(p->head + ADMIN_PROP_CHANGES - 1 - i) % ADMIN_PROP_CHANGES];
        char at[40];
        wall_iso_utc(c->publish_ms, at, sizeof(at));
        json_t *j = json_pack("{s:s,s:I,s:b,s:i,s:I,s:s,s:i,s:i}", "key", c->key, "version",
                              (json_int_t)c->version, "deleted", c->version == 0, "partition",
                              (int)c->partition, "offset", (json_int_t)c->offset, "published_at",
                              at, "applied_by", c->applied_by, "workers", c->workers);
        json_object_set_new(j, "propagation_ms",
                            c->propagation_ms >= 0 ? json_integer(c->propagation_ms) : json_null());
        json_array_append_new(list, j);
    }
    return json_pack("{s:o,s:I,s:o}", "followers", followers, "changes_pending",
                     (json_int_t)(p ? p->pending : 0), "changes", list);
}
