/* ndd's configuration file, split into ndd's own settings and one leaf list per role
 * instance: see ndd_config.h. */
#include "ndd_config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "buf.h"

extern char **environ;

typedef struct leaf_list {
    config_leaf_t *v;
    size_t n, cap;
} leaf_list_t;

static int leaf_push(leaf_list_t *l, const char *key, const char *value)
{
    config_leaf_t *v = buf_array_room(l->v, l->n, &l->cap, sizeof(*v), 16, 0);
    if (!v)
        return -1;
    l->v = v;
    char *k = strdup(key), *val = strdup(value);
    if (!k || !val) {
        free(k);
        free(val);
        return -1;
    }
    l->v[l->n++] = (config_leaf_t){k, val};
    return 0;
}

static void leaf_list_free(config_leaf_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free((char *)v[i].key);
        /* a secret may be among the values (kafka.sasl.password) */
        memset((char *)v[i].value, 0, strlen(v[i].value));
        free((char *)v[i].value);
    }
    free(v);
}

static int collect_leaf(const char *key, const char *value, void *arg)
{
    return leaf_push(arg, key, value);
}

static bool has_prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

/* What every role takes from the top of the file as well as ndd itself. */
static bool is_shared(const char *key)
{
    return strcmp(key, "bootstrap") == 0 || has_prefix(key, "log.") || has_prefix(key, "kafka.");
}

static const daemon_role_t *role_find(const ndd_roles_t *known, const char *name, size_t len)
{
    for (size_t i = 0; i < known->n_roles; i++)
        if (strlen(known->roles[i]->name) == len && strncmp(known->roles[i]->name, name, len) == 0)
            return known->roles[i];
    return NULL;
}

/* The NF of an aggregation key's first component ("SCP.topic" -> "SCP"), or NULL. */
static const char *nf_of_key(const char *key, char *const *nfs, size_t n_nfs)
{
    const char *dot = strchr(key, '.');
    if (!dot)
        return NULL;
    for (size_t i = 0; i < n_nfs; i++)
        if (strlen(nfs[i]) == (size_t)(dot - key) && strncmp(key, nfs[i], dot - key) == 0)
            return nfs[i];
    return NULL;
}

static bool looks_like_nf(const char *key)
{
    static const char *const names[] = {"SCP", "NRF", "SEPP", "BSF", "PCF", "NON_NF"};
    const char *dot = strchr(key, '.');
    for (size_t i = 0; dot && i < sizeof(names) / sizeof(names[0]); i++)
        if (strlen(names[i]) == (size_t)(dot - key) && strncmp(key, names[i], dot - key) == 0)
            return true;
    return false;
}

/* One instance: the shared leaves, ndd's forced ones, the role's, then the NF's overrides. */
static int instance_add(ndd_config_t *c, const daemon_role_t *role, const char *nf,
                        const leaf_list_t *all, char *const *nfs, size_t n_nfs, const char *origin,
                        char *err, size_t errlen)
{
    if (c->n_inst == NDD_CONFIG_MAX_INSTANCES) {
        snprintf(err, errlen, "roles: more than %d role instances", NDD_CONFIG_MAX_INSTANCES);
        return -1;
    }
    ndd_instance_conf_t *in = &c->inst[c->n_inst];
    memset(in, 0, sizeof(*in));
    in->role = role;
    snprintf(in->name, sizeof in->name, "%s%s%s", role->name, nf ? "-" : "", nf ? nf : "");
    snprintf(in->origin, sizeof in->origin, "%s, roles.%s%s%s", origin, role->name, nf ? " " : "",
             nf ? nf : "");
    leaf_list_t l = {0};
    char prefix[96];
    snprintf(prefix, sizeof prefix, "roles.%s.", role->name);
    size_t plen = strlen(prefix);
    bool ok = true;
    for (size_t i = 0; ok && i < all->n; i++)
        if (!has_prefix(all->v[i].key, "roles.") && is_shared(all->v[i].key))
            ok = leaf_push(&l, all->v[i].key, all->v[i].value) == 0;
    /* The roles answer on ndd's one /metrics /healthz /readyz; one with a listener of its own
     * keeps its daemon's http.* (its default port included). */
    if (!role->own_http)
        ok = ok && leaf_push(&l, "http.port", "-1") == 0;
    for (size_t i = 0; ok && i < all->n; i++) {
        const char *k = all->v[i].key;
        if (!has_prefix(k, prefix))
            continue;
        k += plen;
        if (nfs && (strcmp(k, "nf-types") == 0 || nf_of_key(k, nfs, n_nfs)))
            continue;
        ok = leaf_push(&l, k, all->v[i].value) == 0;
    }
    if (nf) {
        ok = ok && leaf_push(&l, "nf-type", nf) == 0;
        size_t nlen = strlen(nf);
        for (size_t i = 0; ok && i < all->n; i++) {
            const char *k = all->v[i].key;
            if (has_prefix(k, prefix) && nf_of_key(k + plen, nfs, n_nfs) &&
                strncmp(k + plen, nf, nlen) == 0 && k[plen + nlen] == '.')
                ok = leaf_push(&l, k + plen + nlen + 1, all->v[i].value) == 0;
        }
    }
    if (!ok) {
        leaf_list_free(l.v, l.n);
        snprintf(err, errlen, "roles.%s: out of memory", role->name);
        return -1;
    }
    in->leaves = l.v;
    in->n_leaves = l.n;
    c->n_inst++;
    return 0;
}

/* A role's own section may not set what ndd owns (unless the role has its own listener). */
static int role_keys_check(const leaf_list_t *all, const char *prefix, char *err, size_t errlen)
{
    size_t plen = strlen(prefix);
    for (size_t i = 0; i < all->n; i++) {
        const char *k = all->v[i].key;
        if (has_prefix(k, prefix) && has_prefix(k + plen, "http.")) {
            snprintf(err, errlen,
                     "%s: every role answers on ndd's one HTTP server: set \"http\" at the top "
                     "of the file",
                     k);
            return -1;
        }
    }
    return 0;
}

static const char *leaf_get(const leaf_list_t *all, const char *key)
{
    const char *v = NULL;
    for (size_t i = 0; i < all->n; i++)
        if (strcmp(all->v[i].key, key) == 0)
            v = all->v[i].value;
    return v;
}

static int aggregation_add(ndd_config_t *c, const daemon_role_t *role, const leaf_list_t *all,
                           const char *origin, char *err, size_t errlen)
{
    const char *list = leaf_get(all, "roles.aggregation.nf-types");
    if (!list || !*list) {
        snprintf(err, errlen,
                 "roles.aggregation.nf-types: name the NF types to aggregate, e.g. [\"SCP\", "
                 "\"NRF\"]");
        return -1;
    }
    char *nfs[NDD_CONFIG_MAX_INSTANCES];
    size_t n = 0;
    char *copy = strdup(list), *save = NULL;
    if (!copy)
        return -1;
    int rc = 0;
    for (char *t = strtok_r(copy, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
        for (size_t i = 0; i < n; i++)
            if (strcmp(nfs[i], t) == 0) {
                snprintf(err, errlen, "roles.aggregation.nf-types: %s is listed twice", t);
                rc = -1;
            }
        if (rc == 0 && n == NDD_CONFIG_MAX_INSTANCES) {
            snprintf(err, errlen, "roles.aggregation.nf-types: too many");
            rc = -1;
        }
        if (rc)
            break;
        nfs[n++] = t;
    }
    /* An NF's own object for an NF that does not run is a mistake worth naming. */
    for (size_t i = 0; rc == 0 && i < all->n; i++) {
        const char *k = all->v[i].key;
        if (has_prefix(k, "roles.aggregation.") && looks_like_nf(k + 18) &&
            !nf_of_key(k + 18, nfs, n)) {
            snprintf(err, errlen, "%s: that NF type is not in roles.aggregation.nf-types", k);
            rc = -1;
        }
    }
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = instance_add(c, role, nfs[i], all, nfs, n, origin, err, errlen);
    free(copy);
    return rc;
}

int ndd_config_parse(ndd_config_t *c, const ndd_roles_t *known, const char *text, size_t len,
                     const char *origin, char *err, size_t errlen)
{
    memset(c, 0, sizeof(*c));
    leaf_list_t all = {0}, own = {0};
    json_error_t je;
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    int rc = -1;
    if (!doc || !json_is_object(doc)) {
        snprintf(err, errlen, "%s: not a JSON object%s%s", origin, doc ? "" : ": ",
                 doc ? "" : je.text);
        goto out;
    }
    if (config_parse_json(text, len, origin, collect_leaf, &all, err, errlen))
        goto out;
    for (size_t i = 0; i < all.n; i++)
        if (!has_prefix(all.v[i].key, "roles.") &&
            leaf_push(&own, all.v[i].key, all.v[i].value) != 0)
            goto out;
    json_t *roles = json_object_get(doc, "roles");
    if (!roles || !json_is_object(roles) || json_object_size(roles) == 0) {
        snprintf(err, errlen, "roles: name at least one role (an object under \"roles\")");
        goto out;
    }
    const char *name;
    json_t *sec;
    json_object_foreach(roles, name, sec)
    {
        const daemon_role_t *role = role_find(known, name, strlen(name));
        if (!role) {
            size_t o = (size_t)snprintf(err, errlen, "roles.%s: not a role of ndd (", name);
            for (size_t i = 0; i < known->n_roles && o < errlen; i++)
                o += (size_t)snprintf(err + o, errlen - o, "%s%s", i ? ", " : "",
                                      known->roles[i]->name);
            if (o < errlen)
                snprintf(err + o, errlen - o, ")");
            goto out;
        }
        if (!json_is_object(sec)) {
            snprintf(err, errlen, "roles.%s: an object of the role's settings", name);
            goto out;
        }
        char prefix[96];
        snprintf(prefix, sizeof prefix, "roles.%s.", name);
        if (!role->own_http && role_keys_check(&all, prefix, err, errlen))
            goto out;
        if (strcmp(name, "aggregation") == 0
                ? aggregation_add(c, role, &all, origin, err, errlen)
                : instance_add(c, role, NULL, &all, NULL, 0, origin, err, errlen))
            goto out;
    }
    c->own = own.v;
    c->n_own = own.n;
    own.v = NULL;
    own.n = 0;
    rc = 0;
out:
    json_decref(doc);
    leaf_list_free(all.v, all.n);
    leaf_list_free(own.v, own.n);
    if (rc)
        ndd_config_free(c);
    return rc;
}

void ndd_config_free(ndd_config_t *c)
{
    leaf_list_free(c->own, c->n_own);
    for (size_t i = 0; i < c->n_inst; i++)
        leaf_list_free(c->inst[i].leaves, c->inst[i].n_leaves);
    memset(c, 0, sizeof(*c));
}

int ndd_config_load(ndd_config_t *c, const ndd_roles_t *known, int argc, char **argv, char *err,
                    size_t errlen)
{
    memset(c, 0, sizeof(*c));
    const char *path = NULL;
    if (config_file_path(argc, argv, environ, &path, err, errlen))
        return -1;
    if (!path) {
        if (config_help_or_version_asked(argc, argv))
            return 0;
        snprintf(err, errlen,
                 "--config FILE (or NDD_CONFIG) names the file of roles (docs/ndd.md)");
        return -1;
    }
    size_t len = 0;
    char *text = config_file_read(path, &len, err, errlen);
    if (!text)
        return -1;
    char origin[sizeof c->origin];
    snprintf(origin, sizeof origin, "file %s", path);
    int rc = ndd_config_parse(c, known, text, len, origin, err, errlen);
    free(text);
    if (rc == 0)
        memcpy(c->origin, origin, sizeof origin);
    return rc;
}
