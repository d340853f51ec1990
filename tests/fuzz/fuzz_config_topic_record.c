/* Fuzz target: the workers' side of ndd.config (services/kafka/config_topic.h) without Kafka: the
 * key splitter, the record parser, and the state machine of an offline follower
 * (brokers NULL) fed a sequence of records.
 *
 * Input: text lines. An optional first line starting with '!' sets options: 'k' follow only
 * the kinds feed and filter, 'm' max_keys 3, 's' max_record_bytes 256, 'l' finish the initial
 * load before the records (so they run the live callbacks). Every other line is one record
 * "<key>\t<value>", or "<key>" alone for a tombstone (null value). Seeds in
 * tests/fuzz/corpus/fuzz_config_topic_record/ are the admin's own records (admin_publish.c:
 * compact JSON, keys sorted).
 *
 * Log lines are written at debug level to /dev/null, so their formatting of key bytes runs.
 *
 * Invariants checked (abort on violation), besides no crash, leak or out-of-bounds access:
 * - parse_key on the whole input, into exactly sized heap buffers: on success kind and id
 *   are NUL-terminated, fit their buffers, "kind/id" rebuilds the key, kind matches
 *   [a-z][a-z0-9_-]* and id has no control character;
 * - parse_record: a record returned is an object whose kind and id are the ones asked for and
 *   whose spec is an object; on failure err is a NUL-terminated reason;
 * - config_topic_apply returns what the documented contract says, computed on a model
 *   (a JSON object key -> last record) from parse_key/parse_record alone, and afterwards the
 *   follower holds exactly the model's records (get, stats.keys, foreach);
 * - callbacks: on_upsert's record is the one now held and previous the model's former one,
 *   on_delete's previous is the one removed; none runs before the load is finished, and
 *   finish_load hands every held key once and on_loaded the right count. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_topic.h"
#include "config_topic_testutil.h"
#include "log.h"
#include "metrics.h"

#define FUZZ_MAX_RECORDS 64

typedef struct fuzz_ctx {
    config_topic_t *ft;
    json_t *model;       /* "<kind>/<id>" -> record, what the follower must hold */
    json_t *expect_prev; /* the previous record the next callback must report (or NULL) */
    bool expect_cb;      /* a callback is due for the record being applied */
    size_t upserts, deletes, loaded_calls, loaded_keys;
} fuzz_ctx_t;

static void fuzz_check(bool ok)
{
    if (!ok)
        abort();
}

static json_t *fuzz_model_get(json_t *model, const char *kind, const char *id)
{
    char key[CONFIG_TOPIC_MAX_KEY + 2];
    if (snprintf(key, sizeof(key), "%s/%s", kind, id) >= (int)sizeof(key))
        return NULL;
    return json_object_get(model, key);
}

static void fuzz_on_upsert(void *owner, const char *kind, const char *id, json_t *record,
                           json_t *previous)
{
    fuzz_ctx_t *c = owner;
    fuzz_check(config_topic_loaded(c->ft));
    fuzz_check(strcmp(json_string_value(json_object_get(record, "kind")), kind) == 0);
    fuzz_check(strcmp(json_string_value(json_object_get(record, "id")), id) == 0);
    fuzz_check(json_is_object(json_object_get(record, "spec")));
    fuzz_check(cttu_held(c->ft, kind, id) == record);
    if (c->expect_cb) { /* live: previous is what was held before this record */
        fuzz_check((previous == NULL) == (c->expect_prev == NULL));
        fuzz_check(!previous || json_equal(previous, c->expect_prev));
        c->expect_cb = false;
    } else { /* finish_load: every held key once, as new */
        fuzz_check(previous == NULL);
    }
    c->upserts++;
}

static void fuzz_on_delete(void *owner, const char *kind, const char *id, json_t *previous)
{
    fuzz_ctx_t *c = owner;
    fuzz_check(config_topic_loaded(c->ft) && c->expect_cb && c->expect_prev);
    fuzz_check(json_equal(previous, c->expect_prev));
    fuzz_check(cttu_held(c->ft, kind, id) == NULL);
    c->expect_cb = false;
    c->deletes++;
}

static void fuzz_on_loaded(void *owner, size_t keys)
{
    fuzz_ctx_t *c = owner;
    c->loaded_calls++;
    c->loaded_keys = keys;
}

static int fuzz_count_held(void *arg, const char *kind, const char *id, json_t *record)
{
    fuzz_ctx_t *c = arg;
    fuzz_check(json_equal(record, fuzz_model_get(c->model, kind, id)));
    c->loaded_keys++; /* reused as a counter by the caller */
    return 0;
}

/* parse_key on raw bytes, into heap buffers of the given sizes so ASan sees any overrun. */
static void fuzz_parse_key(const uint8_t *data, size_t size, size_t kind_size, size_t id_size)
{
    char *kind = malloc(kind_size), *id = malloc(id_size);
    fuzz_check(kind && id);
    if (config_topic_parse_key(data, size, kind, kind_size, id, id_size) == 0) {
        size_t kl = strnlen(kind, kind_size), il = strnlen(id, id_size);
        fuzz_check(kl < kind_size && il < id_size);
        fuzz_check(kl >= 1 && kl <= CONFIG_TOPIC_MAX_KIND && il >= 1);
        fuzz_check(kl + 1 + il == size && size <= CONFIG_TOPIC_MAX_KEY);
        fuzz_check(memcmp(data, kind, kl) == 0 && data[kl] == '/' &&
                   memcmp(data + kl + 1, id, il) == 0);
        fuzz_check(kind[0] >= 'a' && kind[0] <= 'z');
        for (size_t i = 1; i < kl; i++)
            fuzz_check((kind[i] >= 'a' && kind[i] <= 'z') || (kind[i] >= '0' && kind[i] <= '9') ||
                       kind[i] == '_' || kind[i] == '-');
        for (size_t i = 0; i < il; i++)
            fuzz_check((unsigned char)id[i] >= 0x20 && (unsigned char)id[i] != 0x7f);
    }
    free(kind);
    free(id);
}

static json_t *fuzz_parse_record(const char *kind, const char *id, const void *value, size_t len)
{
    char err[128];
    err[0] = 'x';
    json_t *rec = config_topic_parse_record(kind, id, value, len, err, sizeof(err));
    if (rec) {
        fuzz_check(json_is_object(rec));
        fuzz_check(strcmp(json_string_value(json_object_get(rec, "kind")), kind) == 0);
        fuzz_check(strcmp(json_string_value(json_object_get(rec, "id")), id) == 0);
        fuzz_check(json_is_object(json_object_get(rec, "spec")));
    } else {
        fuzz_check(memchr(err, '\0', sizeof(err)) != NULL && err[0] != '\0');
    }
    return rec;
}

static bool fuzz_wants(bool only_feed_filter, const char *kind)
{
    return !only_feed_filter || strcmp(kind, "feed") == 0 || strcmp(kind, "filter") == 0;
}

/* What config_topic_apply must answer, from the model; updates the model the same way. */
static config_topic_result_t fuzz_expect(fuzz_ctx_t *c, const config_topic_opts_t *o,
                                         const char *key, size_t key_len, const char *value,
                                         size_t value_len)
{
    char kind[CONFIG_TOPIC_MAX_KIND + 1], id[CONFIG_TOPIC_MAX_KEY + 1];
    c->expect_cb = false;
    c->expect_prev = NULL;
    if (config_topic_parse_key(key, key_len, kind, sizeof(kind), id, sizeof(id)) != 0)
        return CONFIG_TOPIC_INVALID;
    if (!fuzz_wants(o->n_kinds > 0, kind))
        return CONFIG_TOPIC_IGNORED;
    char skey[CONFIG_TOPIC_MAX_KEY + 1];
    memcpy(skey, key, key_len);
    skey[key_len] = '\0';
    json_t *prev = json_object_get(c->model, skey);
    if (!value) {
        if (!prev)
            return CONFIG_TOPIC_UNCHANGED;
        c->expect_prev = json_incref(prev);
        json_object_del(c->model, skey);
        c->expect_cb = config_topic_loaded(c->ft);
        return CONFIG_TOPIC_DELETE;
    }
    if (value_len > o->max_record_bytes)
        return CONFIG_TOPIC_TOO_LARGE;
    json_t *rec = fuzz_parse_record(kind, id, value, value_len);
    if (!rec)
        return CONFIG_TOPIC_INVALID;
    if (prev && json_equal(prev, rec)) {
        json_decref(rec);
        return CONFIG_TOPIC_UNCHANGED;
    }
    if (!prev && json_object_size(c->model) >= o->max_keys) {
        json_decref(rec);
        return CONFIG_TOPIC_MAX_KEYS;
    }
    c->expect_prev = json_incref(prev);
    fuzz_check(json_object_set_new(c->model, skey, rec) == 0);
    c->expect_cb = config_topic_loaded(c->ft);
    return CONFIG_TOPIC_UPSERT;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static metrics_registry_t *reg;
    if (!reg) {
        /* Every log line is formatted (its arguments come from the input) but goes nowhere. */
        FILE *devnull = fopen("/dev/null", "w");
        fuzz_check(devnull != NULL);
        log_setup("fuzz_config_topic_record", LOG_LEVEL_DEBUG, 0);
        log_set_stream(devnull);
        reg = metrics_registry_new();
        fuzz_check(reg != NULL);
    }

    /* The splitter and the parser on the raw input, buffers sized from the input. */
    fuzz_parse_key(data, size, CONFIG_TOPIC_MAX_KIND + 1, CONFIG_TOPIC_MAX_KEY + 1);
    fuzz_parse_key(data, size, size % 8 + 1, size % 13 + 1);
    json_decref(fuzz_parse_record("feed", "0b6c", data, size));

    const char *p = (const char *)data, *end = p + size;
    bool live = false;
    static const char *const kinds[] = {"feed", "filter"};
    config_topic_opts_t o = {.metrics = reg};
    if (p < end && *p == '!') {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *optend = nl ? nl : end;
        for (const char *q = p + 1; q < optend; q++) {
            if (*q == 'k') {
                o.kinds = kinds;
                o.n_kinds = 2;
            } else if (*q == 'm') {
                o.max_keys = 3;
            } else if (*q == 's') {
                o.max_record_bytes = 256;
            } else if (*q == 'l') {
                live = true;
            }
        }
        p = nl ? nl + 1 : end;
    }
    fuzz_ctx_t c = {.model = json_object()};
    o.on_upsert = fuzz_on_upsert;
    o.on_delete = fuzz_on_delete;
    o.on_loaded = fuzz_on_loaded;
    o.owner = &c;
    char err[256];
    c.ft = config_topic_new(&o, err, sizeof(err));
    fuzz_check(c.ft != NULL && c.model != NULL);
    fuzz_check(config_topic_fd(c.ft) == -1);
    /* The options as the follower resolves them, for the model. */
    if (!o.max_keys)
        o.max_keys = CONFIG_TOPIC_DEFAULT_MAX_KEYS;
    if (!o.max_record_bytes)
        o.max_record_bytes = CONFIG_TOPIC_DEFAULT_MAX_RECORD;
    if (live) {
        config_topic_finish_load(c.ft);
        fuzz_check(c.loaded_calls == 1 && c.loaded_keys == 0 && c.upserts == 0);
    }

    for (int64_t offset = 0; p < end && offset < FUZZ_MAX_RECORDS; offset++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *lend = nl ? nl : end;
        const char *tab = memchr(p, '\t', (size_t)(lend - p));
        size_t key_len = (size_t)((tab ? tab : lend) - p);
        const char *value = tab ? tab + 1 : NULL;
        size_t value_len = tab ? (size_t)(lend - value) : 0;

        config_topic_result_t want = fuzz_expect(&c, &o, p, key_len, value, value_len);
        size_t up = c.upserts, del = c.deletes;
        config_topic_result_t got =
            config_topic_apply(c.ft, p, key_len, value, value_len, 0, offset);
        fuzz_check(got == want);
        fuzz_check(!c.expect_cb); /* the due callback ran */
        if (!config_topic_loaded(c.ft) ||
            (got != CONFIG_TOPIC_UPSERT && got != CONFIG_TOPIC_DELETE))
            fuzz_check(c.upserts == up && c.deletes == del);
        json_decref(c.expect_prev);
        c.expect_prev = NULL;
        config_topic_stats_t st = config_topic_stats(c.ft);
        fuzz_check(st.keys == json_object_size(c.model) && st.keys <= o.max_keys);
        fuzz_check(st.results[got] >= 1 && st.partitions == 0);
        p = nl ? nl + 1 : end;
    }

    /* The follower holds exactly the model. */
    c.loaded_keys = 0;
    /* Every held record is the model's, and as many: the same set (keys are unique). */
    fuzz_check(config_topic_foreach(c.ft, fuzz_count_held, &c) == 0);
    fuzz_check(c.loaded_keys == json_object_size(c.model));
    if (!live) {
        size_t before = c.upserts;
        config_topic_finish_load(c.ft);
        fuzz_check(c.loaded_calls == 1 && c.loaded_keys == json_object_size(c.model));
        fuzz_check(c.upserts - before == json_object_size(c.model));
        config_topic_finish_load(c.ft); /* a second call does nothing */
        fuzz_check(c.loaded_calls == 1 && c.upserts - before == json_object_size(c.model));
    }
    config_topic_free(c.ft);
    json_decref(c.model);
    return 0;
}
