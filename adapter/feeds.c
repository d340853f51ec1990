#include "feeds.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define FEEDS_MAX 1024

struct feed_manager {
    pthread_mutex_t mu;
    feed_runtime_t rt;
    uint32_t drain_ms;
    feed_t *feeds[FEEDS_MAX];
    size_t n;
};

feed_manager_t *feed_manager_new(const feed_runtime_t *rt, uint32_t drain_ms)
{
    feed_manager_t *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    pthread_mutex_init(&m->mu, NULL);
    m->rt = *rt;
    m->drain_ms = drain_ms;
    return m;
}

static ssize_t feeds_find(feed_manager_t *m, const char *name)
{
    for (size_t i = 0; i < m->n; i++)
        if (!strcmp(feed_get_config(m->feeds[i])->name, name))
            return (ssize_t)i;
    return -1;
}

static void feeds_remove_at(feed_manager_t *m, size_t i)
{
    feed_t *f = m->feeds[i];
    m->feeds[i] = m->feeds[--m->n];
    feed_stop(f, m->drain_ms);
}

/* With the lock held. Takes ownership of cfg. */
static int feeds_apply_parsed(feed_manager_t *m, feed_config_t *cfg, char *err, size_t errlen)
{
    ssize_t i = feeds_find(m, cfg->name);
    if (i >= 0 && feed_config_equal(feed_get_config(m->feeds[i]), cfg)) {
        feed_config_free(cfg);
        return 0;
    }
    char name[128];
    snprintf(name, sizeof name, "%s", cfg->name);
    if (i >= 0) {
        /* Stop first: the same consumer group must be left before it is joined again, and
         * what the old feed acknowledged is committed before the new one starts. */
        log_info("feed %s: configuration changed; restarting it", name);
        feeds_remove_at(m, (size_t)i);
    } else if (m->n == FEEDS_MAX) {
        feed_config_free(cfg);
        snprintf(err, errlen, "feed %s: too many feeds (max %d)", name, FEEDS_MAX);
        return -1;
    }
    feed_t *f = feed_start(cfg, &m->rt, err, errlen);
    if (!f)
        return -1;
    m->feeds[m->n++] = f;
    return 0;
}

int feed_manager_apply(feed_manager_t *m, const char *name, const json_t *feed_json, char *err,
                       size_t errlen)
{
    int rc = 0;
    pthread_mutex_lock(&m->mu);
    if (!feed_json) {
        ssize_t i = name ? feeds_find(m, name) : -1;
        if (i < 0) {
            snprintf(err, errlen, "feed %s: not running", name ? name : "(null)");
            rc = -1;
        } else {
            log_info("feed %s: removed from the configuration; stopping it", name);
            feeds_remove_at(m, (size_t)i);
        }
    } else {
        char where[160];
        snprintf(where, sizeof where, "feed %s", name ? name : "");
        jfield_err_t fe;
        feed_config_t *cfg = feed_config_parse(feed_json, NULL, &fe);
        if (!cfg) {
            feed_config_err_format(&fe, where, err, errlen);
            rc = -1;
        } else if (name && strcmp(name, cfg->name)) {
            snprintf(err, errlen, "feed %s: the JSON names it \"%s\"", name, cfg->name);
            feed_config_free(cfg);
            rc = -1;
        } else {
            rc = feeds_apply_parsed(m, cfg, err, errlen);
        }
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* Parses and validates every feed of a document ({"feeds":[...]} or [...]) into *out (n of
 * them; free each and the array): 0, or -1 with err naming the feed and field. */
static int feeds_parse_document(const json_t *doc, feed_config_t ***out, size_t *nout, char *err,
                                size_t errlen)
{
    const json_t *arr = json_is_object(doc) ? json_object_get(doc, "feeds") : doc;
    if (!json_is_array(arr)) {
        snprintf(err, errlen, "feeds document: expected {\"feeds\":[...]} or [...]");
        return -1;
    }
    if (json_is_object(doc) && json_object_size(doc) != 1) {
        snprintf(err, errlen, "feeds document: only the key \"feeds\" is allowed");
        return -1;
    }
    size_t n = json_array_size(arr);
    if (n > FEEDS_MAX) {
        snprintf(err, errlen, "feeds document: too many feeds (max %d)", FEEDS_MAX);
        return -1;
    }
    feed_config_t **cfgs = calloc(n ? n : 1, sizeof *cfgs);
    if (!cfgs) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char where[64];
        snprintf(where, sizeof where, "feeds[%zu]", i);
        jfield_err_t fe;
        cfgs[i] = feed_config_parse(json_array_get(arr, i), NULL, &fe);
        if (!cfgs[i]) {
            feed_config_err_format(&fe, where, err, errlen);
            rc = -1;
        }
        for (size_t j = 0; rc == 0 && j < i; j++)
            if (!strcmp(cfgs[j]->name, cfgs[i]->name)) {
                snprintf(err, errlen, "%s.name: duplicate feed name \"%s\"", where, cfgs[i]->name);
                rc = -1;
            }
    }
    if (rc != 0) {
        for (size_t i = 0; i < n; i++)
            feed_config_free(cfgs[i]);
        free(cfgs);
        return -1;
    }
    *out = cfgs;
    *nout = n;
    return 0;
}

static json_t *feeds_load_file(const char *path, char *err, size_t errlen)
{
    json_error_t je;
    json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!doc)
        snprintf(err, errlen, "%s:%d:%d: %s", path, je.line, je.column, je.text);
    return doc;
}

int feed_manager_check_file(const char *path, FILE *out, char *err, size_t errlen)
{
    char e1[512];
    json_t *doc = feeds_load_file(path, e1, sizeof e1);
    feed_config_t **cfgs = NULL;
    size_t n = 0;
    if (!doc || feeds_parse_document(doc, &cfgs, &n, e1, sizeof e1)) {
        if (doc)
            snprintf(err, errlen, "%s: %s", path, e1);
        else
            snprintf(err, errlen, "%s", e1);
        json_decref(doc);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const feed_config_t *c = cfgs[i];
        if (out)
            fprintf(out, "feed %s: topic %s -> %zu endpoint(s) (%s ...), %s encoding\n", c->name,
                    c->source_topic, c->n_endpoints, c->n_endpoints ? c->endpoints[0].url : "",
                    c->encoding ? c->encoding->name : "?");
        feed_config_free(cfgs[i]);
    }
    free(cfgs);
    json_decref(doc);
    return 0;
}

/* A whole document: every feed validated first, then applied; absent ones removed. */
static int feed_manager_apply_document(feed_manager_t *m, const json_t *doc, char *err,
                                       size_t errlen)
{
    feed_config_t **cfgs = NULL;
    size_t n = 0;
    if (feeds_parse_document(doc, &cfgs, &n, err, errlen))
        return -1;
    int rc = 0;
    pthread_mutex_lock(&m->mu);
    /* Removals first: they free resources the new set may need. */
    for (size_t i = m->n; i-- > 0;) {
        const char *name = feed_get_config(m->feeds[i])->name;
        bool keep = false;
        for (size_t j = 0; j < n && !keep; j++)
            keep = !strcmp(cfgs[j]->name, name);
        if (!keep) {
            log_info("feed %s: removed from the configuration; stopping it", name);
            feeds_remove_at(m, i);
        }
    }
    char e1[512];
    for (size_t i = 0; i < n; i++) {
        if (feeds_apply_parsed(m, cfgs[i], e1, sizeof e1) != 0) {
            log_error("%s", e1);
            if (rc == 0)
                snprintf(err, errlen, "%s", e1);
            rc = -1;
        }
    }
    pthread_mutex_unlock(&m->mu);
    free(cfgs);
    return rc;
}

int feed_manager_apply_file(feed_manager_t *m, const char *path, char *err, size_t errlen)
{
    json_t *doc = feeds_load_file(path, err, errlen);
    if (!doc)
        return -1;
    char e1[512];
    int rc = feed_manager_apply_document(m, doc, e1, sizeof e1);
    if (rc)
        snprintf(err, errlen, "%s: %s", path, e1);
    json_decref(doc);
    return rc;
}

size_t feed_manager_count(feed_manager_t *m)
{
    pthread_mutex_lock(&m->mu);
    size_t n = m->n;
    pthread_mutex_unlock(&m->mu);
    return n;
}

int feed_manager_assigned(void *arg)
{
    feed_manager_t *m = arg;
    pthread_mutex_lock(&m->mu);
    int any = m->n == 0;
    for (size_t i = 0; i < m->n && !any; i++)
        any = feed_assigned(m->feeds[i]) > 0;
    pthread_mutex_unlock(&m->mu);
    return any;
}

void feed_manager_foreach(feed_manager_t *m, void (*fn)(const feed_t *f, void *arg), void *arg)
{
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->n; i++)
        fn(m->feeds[i], arg);
    pthread_mutex_unlock(&m->mu);
}

void feed_manager_free(feed_manager_t *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    while (m->n > 0)
        feeds_remove_at(m, m->n - 1);
    pthread_mutex_unlock(&m->mu);
    pthread_mutex_destroy(&m->mu);
    free(m);
}
