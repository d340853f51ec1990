/* Configuration loading (see config.h).
 *
 * Sources are applied lowest first (defaults, file, environment, flags), each overriding
 * what came before, and every value is validated as it is applied so an error can name the
 * source it came from. Keys compare with '-' and '_' as the same character, so
 * --feed.max-inflight, NDD_FEED_MAX_INFLIGHT and "max_inflight" in a file all reach the
 * spec "feed.max-inflight". */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "config-int.h"

#define CONFIG_FILE_MAX (1024 * 1024) /* a config file larger than this is refused */
#define CONFIG_SECRET_FILE_MAX (64 * 1024)

extern char **environ;

typedef struct cfg_val {
    char *text; /* NULL = unset */
    char *origin;
    union {
        int64_t i;
        bool b;
        double d;
        uint64_t u;
    } v;
    char **items;
    size_t nitems;
} cfg_val_t;

typedef struct cfg_prop {
    char *name;
    char *value;
    char *origin;
} cfg_prop_t;

struct config {
    const config_spec_t *specs;
    size_t nspecs;
    cfg_val_t *vals;
    bool help, version, check;
    cfg_prop_t *props;
    size_t nprops, capprops;
    config_kafka_prop_t *props_view;
};

/* ---- small helpers ---- */

static bool key_char_eq(char a, char b)
{
    if (a == '-')
        a = '_';
    if (b == '-')
        b = '_';
    return tolower((unsigned char)a) == tolower((unsigned char)b);
}

static bool key_eq_n(const char *a, const char *b, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (!b[i] || !key_char_eq(a[i], b[i]))
            return false;
    return b[i] == '\0';
}

static bool key_eq(const char *a, const char *b)
{
    return key_eq_n(a, b, strlen(a));
}

static const char *type_name(config_type_t t)
{
    static const char *const n[] = {"string", "int", "bool", "double", "duration", "bytes", "list"};
    return (unsigned)t < sizeof n / sizeof n[0] ? n[t] : "?";
}

static const char *type_expect(config_type_t t)
{
    switch (t) {
    case CONFIG_INT:
        return "an integer";
    case CONFIG_BOOL:
        return "true/false, 1/0, yes/no or on/off";
    case CONFIG_DOUBLE:
        return "a finite number";
    case CONFIG_DURATION_MS:
        return "a duration such as 500ms, 5s, 2m, 1h (bare number = ms)";
    case CONFIG_BYTES:
        return "a size such as 4096, 64KiB, 16MiB, 1GB";
    default:
        return "a string";
    }
}

/* ---- value storage ---- */

static void val_clear(cfg_val_t *v)
{
    free(v->text);
    free(v->origin);
    for (size_t i = 0; i < v->nitems; i++)
        free(v->items[i]);
    free(v->items);
    memset(v, 0, sizeof *v);
}

/* Validates text for spec s and stores it. */
static int val_set(cfg_val_t *v, const config_spec_t *s, const char *text, const char *origin,
                   char *err, size_t errlen)
{
    cfg_val_t nv;
    memset(&nv, 0, sizeof nv);
    int bad = 0;
    switch (s->type) {
    case CONFIG_INT:
        bad = config_parse_int(text, &nv.v.i);
        break;
    case CONFIG_BOOL:
        bad = config_parse_bool(text, &nv.v.b);
        break;
    case CONFIG_DOUBLE:
        bad = config_parse_double(text, &nv.v.d);
        break;
    case CONFIG_DURATION_MS:
        bad = config_parse_duration_ms(text, &nv.v.i);
        break;
    case CONFIG_BYTES:
        bad = config_parse_bytes(text, &nv.v.u);
        break;
    case CONFIG_LIST:
        if (config_split_list(text, &nv.items, &nv.nitems)) {
            val_clear(&nv);
            config_err(err, errlen, "%s (from %s): out of memory", s->key, origin);
            return -1;
        }
        break;
    case CONFIG_STRING:
        break;
    }
    if (!bad && s->min < s->max) {
        bool out = s->type == CONFIG_BYTES
                       ? (nv.v.u < (uint64_t)s->min || nv.v.u > (uint64_t)s->max)
                       : (nv.v.i < s->min || nv.v.i > s->max);
        if (out &&
            (s->type == CONFIG_INT || s->type == CONFIG_DURATION_MS || s->type == CONFIG_BYTES)) {
            config_err(err, errlen,
                       "invalid value \"%s\" for %s (from %s): must be %" PRId64 "..%" PRId64 "%s",
                       text, s->key, origin, s->min, s->max,
                       s->type == CONFIG_INT ? "" : (s->type == CONFIG_BYTES ? " bytes" : " ms"));
            return -1;
        }
    }
    if (bad) {
        if (s->flags & CONFIG_F_SECRET)
            config_err(err, errlen, "invalid value for %s (from %s): expected %s", s->key, origin,
                       type_expect(s->type));
        else
            config_err(err, errlen, "invalid value \"%s\" for %s (from %s): expected %s", text,
                       s->key, origin, type_expect(s->type));
        return -1;
    }
    nv.text = strdup(text);
    nv.origin = strdup(origin);
    if (!nv.text || !nv.origin) {
        val_clear(&nv);
        config_err(err, errlen, "%s (from %s): out of memory", s->key, origin);
        return -1;
    }
    val_clear(v);
    *v = nv;
    return 0;
}

static int prop_set(config_t *cfg, const char *name, const char *value, const char *origin,
                    char *err, size_t errlen)
{
    for (size_t i = 0; i < cfg->nprops; i++)
        if (strcmp(cfg->props[i].name, name) == 0) {
            char *nv = strdup(value), *no = strdup(origin);
            if (!nv || !no) {
                free(nv);
                free(no);
                goto oom;
            }
            free(cfg->props[i].value);
            free(cfg->props[i].origin);
            cfg->props[i].value = nv;
            cfg->props[i].origin = no;
            return 0;
        }
    if (cfg->nprops == cfg->capprops) {
        size_t cap = cfg->capprops ? cfg->capprops * 2 : 8;
        cfg_prop_t *np = realloc(cfg->props, cap * sizeof *np);
        if (!np)
            goto oom;
        cfg->props = np;
        cfg->capprops = cap;
    }
    cfg_prop_t *p = &cfg->props[cfg->nprops];
    p->name = strdup(name);
    p->value = strdup(value);
    p->origin = strdup(origin);
    if (!p->name || !p->value || !p->origin) {
        free(p->name);
        free(p->value);
        free(p->origin);
        goto oom;
    }
    cfg->nprops++;
    return 0;
oom:
    config_err(err, errlen, "kafka.%s (from %s): out of memory", name, origin);
    return -1;
}

/* Reads a secret file: one trailing newline (LF or CRLF) trimmed. */
static char *read_secret_file(const char *key, const char *path, const char *origin, char *err,
                              size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        config_err(err, errlen, "%s (from %s): cannot open file %s: %s", key, origin, path,
                   strerror(errno));
        return NULL;
    }
    char *buf = malloc(CONFIG_SECRET_FILE_MAX + 1);
    size_t n = buf ? fread(buf, 1, CONFIG_SECRET_FILE_MAX + 1, f) : 0;
    int rerr = ferror(f);
    fclose(f);
    if (!buf || rerr) {
        free(buf);
        config_err(err, errlen, "%s (from %s): cannot read file %s", key, origin, path);
        return NULL;
    }
    if (n > CONFIG_SECRET_FILE_MAX) {
        free(buf);
        config_err(err, errlen, "%s (from %s): file %s is larger than %d bytes", key, origin, path,
                   CONFIG_SECRET_FILE_MAX);
        return NULL;
    }
    buf[n] = '\0';
    if (strlen(buf) != n) {
        free(buf);
        config_err(err, errlen, "%s (from %s): file %s contains a NUL byte", key, origin, path);
        return NULL;
    }
    if (n && buf[n - 1] == '\n') {
        buf[--n] = '\0';
        if (n && buf[n - 1] == '\r')
            buf[--n] = '\0';
    }
    return buf;
}

static const config_spec_t *find_spec(const config_t *cfg, const char *key, size_t keylen,
                                      size_t *idx)
{
    for (size_t i = 0; i < cfg->nspecs; i++)
        if (key_eq_n(key, cfg->specs[i].key, keylen) && strlen(cfg->specs[i].key) == keylen) {
            if (idx)
                *idx = i;
            return &cfg->specs[i];
        }
    return NULL;
}

static bool ends_with_file(const char *key, size_t len)
{
    return len > 5 && (strcmp(key + len - 5, "_file") == 0 || strcmp(key + len - 5, "-file") == 0);
}

/* One setting from one source. `key` as written in that source (dots, '-' or '_'). */
static int apply(config_t *cfg, const char *key, const char *value, const char *origin, char *err,
                 size_t errlen)
{
    size_t len = strlen(key);
    size_t idx;
    const config_spec_t *s = find_spec(cfg, key, len, &idx);
    if (s)
        return val_set(&cfg->vals[idx], s, value, origin, err, errlen);
    bool is_file = ends_with_file(key, len);
    if (is_file && (s = find_spec(cfg, key, len - 5, &idx)) != NULL) {
        if (!(s->flags & CONFIG_F_SECRET)) {
            config_err(err, errlen,
                       "unknown setting \"%s\" (from %s): only secret settings can be "
                       "read from a file, and %s is not one",
                       key, origin, s->key);
            return -1;
        }
        char *content = read_secret_file(s->key, value, origin, err, errlen);
        if (!content)
            return -1;
        int rc = val_set(&cfg->vals[idx], s, content, origin, err, errlen);
        memset(content, 0, strlen(content));
        free(content);
        return rc;
    }
    if (len > 6 && strncasecmp(key, "kafka.", 6) == 0) {
        char name[CONFIG_KEY_MAX];
        size_t nlen = len - 6 - (is_file ? 5 : 0);
        if (nlen == 0 || nlen >= sizeof name) {
            config_err(err, errlen, "invalid librdkafka property \"%s\" (from %s)", key, origin);
            return -1;
        }
        memcpy(name, key + 6, nlen);
        name[nlen] = '\0';
        if (!is_file)
            return prop_set(cfg, name, value, origin, err, errlen);
        char *content = read_secret_file(key, value, origin, err, errlen);
        if (!content)
            return -1;
        int rc = prop_set(cfg, name, content, origin, err, errlen);
        memset(content, 0, strlen(content));
        free(content);
        return rc;
    }
    config_err(err, errlen, "unknown setting \"%s\" (from %s)", key, origin);
    return -1;
}

struct file_apply {
    config_t *cfg;
    const char *origin;
    char *err;
    size_t errlen;
};

static int file_leaf(const char *key, const char *value, void *arg)
{
    struct file_apply *fa = arg;
    return apply(fa->cfg, key, value, fa->origin, fa->err, fa->errlen);
}

char *config_file_read(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        config_err(err, errlen, "config file %s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = malloc(CONFIG_FILE_MAX + 1);
    size_t n = buf ? fread(buf, 1, CONFIG_FILE_MAX + 1, f) : 0;
    int rerr = ferror(f);
    fclose(f);
    if (!buf || rerr) {
        free(buf);
        config_err(err, errlen, "config file %s: cannot read", path);
        return NULL;
    }
    if (n > CONFIG_FILE_MAX) {
        free(buf);
        config_err(err, errlen, "config file %s: larger than %d bytes", path, CONFIG_FILE_MAX);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static int load_file(config_t *cfg, const char *path, char *err, size_t errlen)
{
    char origin[512];
    snprintf(origin, sizeof origin, "file %s", path);
    size_t n = 0;
    char *buf = config_file_read(path, &n, err, errlen);
    if (!buf)
        return -1;
    struct file_apply fa = {cfg, origin, err, errlen};
    int rc = config_parse_json(buf, n, origin, file_leaf, &fa, err, errlen);
    free(buf);
    return rc;
}

/* ---- environment ---- */

static const char *env_find(char *const *envp, const char *name)
{
    size_t n = strlen(name);
    for (char *const *e = envp; e && *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

static int load_env(config_t *cfg, char *const *envp, char *err, size_t errlen)
{
    char name[CONFIG_KEY_MAX + 16], origin[CONFIG_KEY_MAX + 32];
    for (size_t i = 0; i < cfg->nspecs; i++) {
        const config_spec_t *s = &cfg->specs[i];
        if (config_env_name(s->key, name, sizeof name - 5))
            continue;
        const char *v = env_find(envp, name);
        if (v) {
            snprintf(origin, sizeof origin, "env %s", name);
            if (val_set(&cfg->vals[i], s, v, origin, err, errlen))
                return -1;
        }
        if (s->flags & CONFIG_F_SECRET) {
            strcat(name, "_FILE");
            const char *path = env_find(envp, name);
            if (path) {
                if (v) {
                    config_err(err, errlen, "%s: both env %.*s and env %s are set; use one", s->key,
                               (int)(strlen(name) - 5), name, name);
                    return -1;
                }
                snprintf(origin, sizeof origin, "env %s", name);
                char fkey[CONFIG_KEY_MAX + 8];
                snprintf(fkey, sizeof fkey, "%s_file", s->key);
                if (apply(cfg, fkey, path, origin, err, errlen))
                    return -1;
            }
        }
    }
    /* NDD_KAFKA_<PROP> -> kafka.<prop>: lower case, '_' -> '.'; a trailing _FILE reads a file. */
    for (char *const *e = envp; e && *e; e++) {
        if (strncmp(*e, "NDD_KAFKA_", 10) != 0)
            continue;
        const char *eq = strchr(*e, '=');
        if (!eq || eq == *e + 10 || (size_t)(eq - *e) >= CONFIG_KEY_MAX)
            continue;
        size_t n = (size_t)(eq - *e);
        memcpy(name, *e, n);
        name[n] = '\0';
        /* A declared setting whose environment name this is (kafka.x, kafka-x) was read
         * above under its own name: it is not a librdkafka property. */
        bool declared = false;
        for (size_t i = 0; i < cfg->nspecs && !declared; i++) {
            char own[CONFIG_KEY_MAX + 16];
            if (config_env_name(cfg->specs[i].key, own, sizeof own - 5) == 0) {
                declared = strcmp(own, name) == 0;
                strcat(own, "_FILE");
                declared |= (cfg->specs[i].flags & CONFIG_F_SECRET) && strcmp(own, name) == 0;
            }
        }
        if (declared)
            continue;
        char key[CONFIG_KEY_MAX + 8] = "kafka.";
        size_t k = 6;
        bool file = n > 15 && strcmp(name + n - 5, "_FILE") == 0;
        for (size_t i = 10; i < n - (file ? 5 : 0); i++)
            key[k++] = name[i] == '_' ? '.' : (char)tolower((unsigned char)name[i]);
        key[k] = '\0';
        if (file)
            strcat(key, "_file");
        snprintf(origin, sizeof origin, "env %s", name);
        if (apply(cfg, key, eq + 1, origin, err, errlen))
            return -1;
    }
    return 0;
}

/* ---- flags ---- */

static bool is_help(const char *a)
{
    return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0;
}

static bool is_version(const char *a)
{
    return strcmp(a, "--version") == 0;
}

bool config_help_or_version_asked(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (is_help(argv[i]) || is_version(argv[i]))
            return true;
    return false;
}

int config_file_path(int argc, char **argv, char *const *envp, const char **path, char *err,
                     size_t errlen)
{
    *path = env_find(envp, "NDD_CONFIG");
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strncmp(argv[i], "--config=", 9) == 0) {
            *path = argv[i] + 9;
        } else if (strcmp(argv[i], "--config") == 0) {
            if (i + 1 >= argc) {
                config_err(err, errlen, "flag --config needs a file name");
                return -1;
            }
            *path = argv[++i];
        }
    }
    if (*path && !**path) {
        config_err(err, errlen, "--config (or NDD_CONFIG) names an empty file name");
        return -1;
    }
    return 0;
}

static int load_flags(config_t *cfg, int argc, char **argv, char *err, size_t errlen)
{
    char origin[CONFIG_KEY_MAX + 32], key[CONFIG_KEY_MAX];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (is_help(a)) {
            cfg->help = true;
            continue;
        }
        if (is_version(a) || strcmp(a, "--check-config") == 0) {
            *(is_version(a) ? &cfg->version : &cfg->check) = true;
            continue;
        }
        if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
            config_err(err, errlen, "unexpected argument \"%s\" (settings are --key=value)", a);
            return -1;
        }
        const char *eq = strchr(a + 2, '=');
        size_t klen = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (klen == 0 || klen >= sizeof key) {
            config_err(err, errlen, "malformed flag \"%s\"", a);
            return -1;
        }
        memcpy(key, a + 2, klen);
        key[klen] = '\0';
        if (strcmp(key, "config") == 0) {
            if (!eq)
                i++; /* the value was taken by config_file_path */
            continue;
        }
        snprintf(origin, sizeof origin, "flag --%s", key);
        const char *value = eq ? eq + 1 : NULL;
        if (!value) {
            const config_spec_t *s = find_spec(cfg, key, klen, NULL);
            bool b;
            if (s && s->type == CONFIG_BOOL) {
                /* --flag alone means true; "--flag false" also works */
                if (i + 1 < argc && config_parse_bool(argv[i + 1], &b) == 0)
                    value = argv[++i];
                else
                    value = "true";
            } else if (i + 1 < argc) {
                value = argv[++i];
            } else {
                config_err(err, errlen, "flag --%s needs a value", key);
                return -1;
            }
        }
        if (apply(cfg, key, value, origin, err, errlen))
            return -1;
    }
    return 0;
}

/* ---- load ---- */

config_t *config_load(const config_spec_t *specs, size_t nspecs, int argc, char **argv, char *err,
                      size_t errlen)
{
    return config_load_env(specs, nspecs, argc, argv, environ, err, errlen);
}

config_t *config_load_env(const config_spec_t *specs, size_t nspecs, int argc, char **argv,
                          char *const *envp, char *err, size_t errlen)
{
    return config_load_leaves(specs, nspecs, argc, argv, envp, NULL, 0, NULL, err, errlen);
}

config_t *config_load_leaves(const config_spec_t *specs, size_t nspecs, int argc, char **argv,
                             char *const *envp, const config_leaf_t *leaves, size_t nleaves,
                             const char *origin, char *err, size_t errlen)
{
    config_err(err, errlen, "%s", "");
    config_t *cfg = calloc(1, sizeof *cfg);
    if (!cfg || !(cfg->vals = calloc(nspecs ? nspecs : 1, sizeof *cfg->vals))) {
        free(cfg);
        config_err(err, errlen, "config: out of memory");
        return NULL;
    }
    cfg->specs = specs;
    cfg->nspecs = nspecs;
    for (size_t i = 0; i < nspecs; i++) {
        if (!specs[i].key || !*specs[i].key || strlen(specs[i].key) >= CONFIG_KEY_MAX - 8) {
            config_err(err, errlen, "config: spec %zu has no key or too long a key", i);
            goto fail;
        }
        for (size_t j = 0; j < i; j++)
            if (key_eq(specs[i].key, specs[j].key)) {
                config_err(err, errlen, "config: key %s declared twice", specs[i].key);
                goto fail;
            }
        if (specs[i].def && val_set(&cfg->vals[i], &specs[i], specs[i].def, "default", err, errlen))
            goto fail;
    }
    if (origin) {
        /* The leaves take the file's place: what --config would have read, ndd has read. */
        struct file_apply fa = {cfg, origin, err, errlen};
        for (size_t i = 0; i < nleaves; i++)
            if (file_leaf(leaves[i].key, leaves[i].value, &fa))
                goto fail;
    } else {
        const char *path;
        if (config_file_path(argc, argv, envp, &path, err, errlen))
            goto fail;
        if (path && load_file(cfg, path, err, errlen))
            goto fail;
    }
    if (load_env(cfg, envp, err, errlen) || load_flags(cfg, argc, argv, err, errlen))
        goto fail;
    if (cfg->help || cfg->version)
        return cfg; /* --help, --version: required settings may be missing */
    for (size_t i = 0; i < nspecs; i++) {
        if ((specs[i].flags & CONFIG_F_REQUIRED) && !cfg->vals[i].text) {
            char env[CONFIG_KEY_MAX + 8];
            config_env_name(specs[i].key, env, sizeof env);
            config_err(err, errlen,
                       "missing required setting %s (give --%s, env %s or \"%s\" in "
                       "the config file)",
                       specs[i].key, specs[i].key, env, specs[i].key);
            goto fail;
        }
    }
    return cfg;
fail:
    config_free(cfg);
    return NULL;
}

void config_free(config_t *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < cfg->nspecs; i++) {
        if (cfg->vals[i].text && (cfg->specs[i].flags & CONFIG_F_SECRET))
            memset(cfg->vals[i].text, 0, strlen(cfg->vals[i].text));
        val_clear(&cfg->vals[i]);
    }
    free(cfg->vals);
    for (size_t i = 0; i < cfg->nprops; i++) {
        memset(cfg->props[i].value, 0, strlen(cfg->props[i].value));
        free(cfg->props[i].name);
        free(cfg->props[i].value);
        free(cfg->props[i].origin);
    }
    free(cfg->props);
    free(cfg->props_view);
    free(cfg);
}

bool config_help_requested(const config_t *cfg)
{
    return cfg && cfg->help;
}

bool config_version_requested(const config_t *cfg)
{
    return cfg && cfg->version;
}

bool config_check_requested(const config_t *cfg)
{
    return cfg && cfg->check;
}

int config_map_apply(const config_t *cfg, void *dst)
{
    for (size_t i = 0; i < cfg->nspecs; i++) {
        const config_spec_t *s = &cfg->specs[i];
        const cfg_val_t *v = &cfg->vals[i];
        if (!s->at)
            continue;
        char *at = (char *)dst + s->at - 1;
        switch (s->type) {
        case CONFIG_STRING:
            *(const char **)at = v->text;
            break;
        case CONFIG_INT:
        case CONFIG_DURATION_MS:
            *(int64_t *)at = v->text ? v->v.i : 0;
            break;
        case CONFIG_BOOL:
            *(bool *)at = v->text ? v->v.b : false;
            break;
        case CONFIG_DOUBLE:
            *(double *)at = v->text ? v->v.d : 0.0;
            break;
        case CONFIG_BYTES:
            *(uint64_t *)at = v->text ? v->v.u : 0;
            break;
        case CONFIG_LIST:
            *(config_list_t *)at =
                (config_list_t){.items = (const char *const *)v->items, .n = v->nitems};
            break;
        default:
            return -1;
        }
    }
    return 0;
}

const config_kafka_prop_t *config_kafka_props(const config_t *cfg, size_t *n)
{
    config_t *c = (config_t *)cfg;
    *n = 0;
    if (!c || c->nprops == 0)
        return NULL;
    free(c->props_view);
    c->props_view = malloc(c->nprops * sizeof *c->props_view);
    if (!c->props_view)
        return NULL;
    for (size_t i = 0; i < c->nprops; i++) {
        c->props_view[i].name = c->props[i].name;
        c->props_view[i].value = c->props[i].value;
        c->props_view[i].origin = c->props[i].origin;
    }
    *n = c->nprops;
    return c->props_view;
}

/* ---- dump and help ---- */

static bool kafka_prop_is_secret(const char *name)
{
    static const char *const words[] = {
        "password", "secret", "ssl.key.pem", "sasl.oauthbearer.config", "ssl_key", "keystore"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcasestr(name, words[i]))
            return true;
    return false;
}

void config_dump(const config_t *cfg, FILE *out)
{
    for (size_t i = 0; i < cfg->nspecs; i++) {
        const config_spec_t *s = &cfg->specs[i];
        const cfg_val_t *v = &cfg->vals[i];
        if (!v->text)
            fprintf(out, "%s = (unset)\n", s->key);
        else
            fprintf(out, "%s = %s  (%s)\n", s->key, (s->flags & CONFIG_F_SECRET) ? "***" : v->text,
                    v->origin);
    }
    for (size_t i = 0; i < cfg->nprops; i++)
        fprintf(out, "kafka.%s = %s  (%s)\n", cfg->props[i].name,
                kafka_prop_is_secret(cfg->props[i].name) ? "***" : cfg->props[i].value,
                cfg->props[i].origin);
}

void config_print_help(const config_spec_t *specs, size_t nspecs, const char *program, FILE *out)
{
    const char *base = program ? strrchr(program, '/') : NULL;
    base = base ? base + 1 : (program ? program : "ndd");
    fprintf(out,
            "Usage: %s [--config FILE] [--key=value | --key value]...\n\n"
            "Each setting comes from (highest first) a flag, the environment variable shown,\n"
            "the JSON config file (nested objects join keys with '.'), or its default.\n"
            "Any kafka.<property> setting is passed to librdkafka as <property>.\n"
            "  --help            this table\n"
            "  --version         NDD's version, git revision and library versions\n"
            "  --check-config    validate every setting and what it names, print what would\n"
            "                    run, connect to nothing; exit 0 (valid) or 2\n\n",
            base);
    for (size_t i = 0; i < nspecs; i++) {
        const config_spec_t *s = &specs[i];
        char env[CONFIG_KEY_MAX + 8];
        if (config_env_name(s->key, env, sizeof env))
            env[0] = '\0';
        fprintf(out, "  --%s=<%s>\n      %s\n      env %s", s->key, type_name(s->type),
                s->help ? s->help : "", env);
        if (s->def)
            fprintf(out, "; default %s", (s->flags & CONFIG_F_SECRET) ? "***" : s->def);
        if (s->flags & CONFIG_F_REQUIRED)
            fprintf(out, "; required");
        if (s->flags & CONFIG_F_SECRET)
            fprintf(out, "; secret: or --%s-file FILE / env %s_FILE", s->key, env);
        fputc('\n', out);
    }
}
