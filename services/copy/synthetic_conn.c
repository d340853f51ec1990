/* The synthetic feed's context (synthetic.h): its settings and L3/L4 mapping table, parsed
 * from the feed's "synthetic" member, and the table of synthetic TCP connections. The table is
 * bounded (max_connections): a new connection beyond it evicts the least recently used one,
 * whose FIN exchange the packet builder writes, so that memory stays fixed however many
 * 4-tuples the copies name. Everything is allocated when the context is made or when a
 * connection opens (its two HPACK deflaters), never per copy. */
#include "synthetic-int.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t synth_hash(uint64_t h, const void *p, size_t n)
{
    const uint8_t *s = p;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ull;
    }
    return h;
}

bool synth_addr_parse(const char *s, size_t len, synth_addr_t *a)
{
    char host[64];
    const char *port;
    size_t hl;
    memset(a, 0, sizeof *a);
    if (len == 0 || len > 100)
        return false;
    if (s[0] == '[') {
        const char *rb = memchr(s, ']', len);
        if (!rb || rb + 1 >= s + len || rb[1] != ':')
            return false;
        const char *zone = memchr(s, '%', (size_t)(rb - s)); /* zone ids do not go on the wire */
        hl = (size_t)((zone ? zone : rb) - s - 1);
        if (hl >= sizeof host)
            return false;
        memcpy(host, s + 1, hl);
        host[hl] = 0;
        port = rb + 2;
        if (inet_pton(AF_INET6, host, a->ip) != 1)
            return false;
        a->family = 6;
    } else {
        const char *colon = NULL;
        for (size_t i = len; i > 0; i--)
            if (s[i - 1] == ':') {
                colon = s + i - 1;
                break;
            }
        if (!colon || (size_t)(colon - s) >= sizeof host)
            return false;
        hl = (size_t)(colon - s);
        memcpy(host, s, hl);
        host[hl] = 0;
        port = colon + 1;
        if (inet_pton(AF_INET, host, a->ip) != 1)
            return false;
        a->family = 4;
    }
    size_t pl = len - (size_t)(port - s);
    unsigned v = 0;
    if (pl == 0 || pl > 5)
        return false;
    for (size_t i = 0; i < pl; i++) {
        if (port[i] < '0' || port[i] > '9')
            return false;
        v = v * 10 + (unsigned)(port[i] - '0');
    }
    if (v == 0 || v > 65535)
        return false;
    a->port = (uint16_t)v;
    return true;
}

/* ---- mapping table ---- */

static uint64_t rule_hash(synth_match_t kind, const char *v, size_t len)
{
    uint8_t k = (uint8_t)kind;
    uint64_t h = synth_hash(synth_hash(SYNTH_HASH_SEED, &k, 1), v, len);
    return h ? h : 1;
}

bool synth_map_lookup(const synth_ctx_t *c, synth_match_t kind, const char *v, size_t len,
                      synth_addr_t *a)
{
    if (!c->n_rules || !v)
        return false;
    uint64_t h = rule_hash(kind, v, len);
    for (size_t i = h & c->rule_mask;; i = (i + 1) & c->rule_mask) {
        uint32_t x = c->rule_idx[i];
        if (!x)
            return false;
        const synth_rule_t *r = &c->rules[x - 1];
        if (r->hash == h && r->kind == kind && r->len == len && !memcmp(r->value, v, len)) {
            *a = r->addr;
            return true;
        }
    }
}

static const char *const synth_match_keys[SYNTH_MATCH__COUNT] = {"fqdn", "instance"};

static int parse_rule(synth_ctx_t *c, size_t i, const json_t *r, char *err, size_t errlen)
{
    if (!json_is_object(r)) {
        snprintf(err, errlen, "synthetic.mapping[%zu]: must be an object", i);
        return -1;
    }
    synth_rule_t *rule = &c->rules[c->n_rules];
    int kinds = 0;
    const char *key;
    json_t *v;
    const char *addr = NULL;
    json_object_foreach((json_t *)r, key, v)
    {
        int k = -1;
        for (int m = 0; m < SYNTH_MATCH__COUNT; m++)
            if (!strcmp(key, synth_match_keys[m]))
                k = m;
        if (k < 0 && strcmp(key, "addr")) {
            snprintf(err, errlen, "synthetic.mapping[%zu].%s: unknown key (fqdn, instance, addr)",
                     i, key);
            return -1;
        }
        if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > 255) {
            snprintf(err, errlen, "synthetic.mapping[%zu].%s: must be a string of 1..255 bytes", i,
                     key);
            return -1;
        }
        if (k < 0) {
            addr = json_string_value(v);
            continue;
        }
        if (kinds++) { /* a second match key: refused before its value replaces the first */
            snprintf(err, errlen,
                     "synthetic.mapping[%zu]: needs exactly one of fqdn, instance, and an addr", i);
            return -1;
        }
        rule->kind = (synth_match_t)k;
        rule->len = json_string_length(v);
        rule->value = malloc(rule->len + 1);
        if (!rule->value) {
            snprintf(err, errlen, "synthetic.mapping[%zu]: out of memory", i);
            return -1;
        }
        memcpy(rule->value, json_string_value(v), rule->len + 1);
    }
    if (kinds != 1 || !addr) {
        snprintf(err, errlen,
                 "synthetic.mapping[%zu]: needs exactly one of fqdn, instance, and an addr", i);
        return -1;
    }
    if (!synth_addr_parse(addr, strlen(addr), &rule->addr)) {
        snprintf(err, errlen, "synthetic.mapping[%zu].addr: \"%s\" is not ip:port or [ipv6]:port",
                 i, addr);
        return -1;
    }
    rule->hash = rule_hash(rule->kind, rule->value, rule->len);
    for (size_t s = rule->hash & c->rule_mask;; s = (s + 1) & c->rule_mask) {
        uint32_t x = c->rule_idx[s];
        if (!x) {
            c->rule_idx[s] = (uint32_t)(c->n_rules + 1);
            break;
        }
        const synth_rule_t *o = &c->rules[x - 1];
        if (o->hash == rule->hash && o->kind == rule->kind && o->len == rule->len &&
            !memcmp(o->value, rule->value, rule->len)) {
            snprintf(err, errlen, "synthetic.mapping[%zu]: %s \"%s\" is mapped twice", i,
                     synth_match_keys[rule->kind], rule->value);
            return -1;
        }
    }
    c->n_rules++;
    return 0;
}

static int parse_uint(const json_t *o, const char *key, unsigned min, unsigned max, unsigned *out,
                      char *err, size_t errlen)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
        snprintf(err, errlen, "synthetic.%s: must be an integer in %u..%u", key, min, max);
        return -1;
    }
    *out = (unsigned)json_integer_value(v);
    return 0;
}

static int ctx_parse(synth_ctx_t *c, const json_t *o, char *err, size_t errlen)
{
    if (!o)
        return 0;
    if (!json_is_object(o)) {
        snprintf(err, errlen, "synthetic: must be an object");
        return -1;
    }
    static const char *const keys[] = {"mss",     "mss_ipv6",       "max_connections",
                                       "mapping", "hpack_indexing", NULL};
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v)
    {
        size_t k = 0;
        while (keys[k] && strcmp(keys[k], key))
            k++;
        if (!keys[k]) {
            snprintf(err, errlen,
                     "synthetic.%s: unknown key (mss, mss_ipv6, max_connections, "
                     "mapping)",
                     key);
            return -1;
        }
    }
    if (parse_uint(o, "mss", 536, 9000, &c->set.mss4, err, errlen) ||
        parse_uint(o, "mss_ipv6", 536, 9000, &c->set.mss6, err, errlen) ||
        parse_uint(o, "max_connections", 1, SYNTH_MAX_MAX_CONNS, &c->set.max_connections, err,
                   errlen))
        return -1;
    json_t *hi = json_object_get(o, "hpack_indexing");
    if (hi && !json_is_boolean(hi)) {
        snprintf(err, errlen, "synthetic.hpack_indexing: must be true or false");
        return -1;
    }
    c->set.hpack_indexing = hi && json_is_true(hi);
    json_t *map = json_object_get(o, "mapping");
    if (!map)
        return 0;
    if (!json_is_array(map) || json_array_size(map) > SYNTH_MAX_RULES) {
        snprintf(err, errlen, "synthetic.mapping: must be an array of at most %d rules",
                 SYNTH_MAX_RULES);
        return -1;
    }
    size_t n = json_array_size(map), slots = 16;
    while (slots < 2 * n)
        slots *= 2;
    c->rules = calloc(n ? n : 1, sizeof *c->rules);
    c->rule_idx = calloc(slots, sizeof *c->rule_idx);
    c->rule_mask = slots - 1;
    if (!c->rules || !c->rule_idx) {
        snprintf(err, errlen, "synthetic.mapping: out of memory for %zu rules", n);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (parse_rule(c, i, json_array_get(map, i), err, errlen)) {
            free(c->rules[c->n_rules].value); /* the rule that failed */
            c->rules[c->n_rules].value = NULL;
            return -1;
        }
    return 0;
}

synth_ctx_t *synth_ctx_new(const json_t *options, char *err, size_t errlen)
{
    synth_ctx_t *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "synthetic: out of memory");
        return NULL;
    }
    c->set =
        (synth_settings_t){SYNTH_DEFAULT_MSS4, SYNTH_DEFAULT_MSS6, SYNTH_DEFAULT_MAX_CONNS, false};
    if (ctx_parse(c, options, err, errlen)) {
        synth_ctx_free(c);
        return NULL;
    }
    size_t b = 16;
    while (b < 2 * (size_t)c->set.max_connections)
        b *= 2;
    c->n_conns = c->set.max_connections;
    c->conns = calloc(c->n_conns, sizeof *c->conns);
    c->buckets = calloc(b, sizeof *c->buckets);
    c->bucket_mask = b - 1;
    /* the largest header block a valid copy can have, HPACK-encoded without Huffman */
    c->hb_cap = CODEC_MAX_HEADER_BYTES + CODEC_MAX_HTTP_HEADERS * 12 + 64;
    c->hb = malloc(c->hb_cap);
    if (!c->conns || !c->buckets || !c->hb) {
        snprintf(err, errlen, "synthetic: out of memory for %zu connections", c->n_conns);
        synth_ctx_free(c);
        return NULL;
    }
    for (size_t i = 0; i < c->n_conns; i++) /* the free list, through lru_next */
        c->conns[i].lru_next = i + 1 < c->n_conns ? (uint32_t)(i + 2) : 0;
    c->free_head = 1;
    return c;
}

void synth_ctx_free(synth_ctx_t *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_rules; i++)
        free(c->rules[i].value);
    for (size_t i = 0; c->conns && i < c->n_conns; i++)
        if (c->conns[i].used)
            synth_conn_release(&c->conns[i]);
    free(c->rules);
    free(c->rule_idx);
    free(c->conns);
    free(c->buckets);
    free(c->hb);
    free(c);
}

const synth_settings_t *synth_ctx_settings(const synth_ctx_t *c)
{
    return &c->set;
}

const synth_stats_t *synth_ctx_stats(const synth_ctx_t *c)
{
    return &c->stats;
}

size_t synth_ctx_open_connections(const synth_ctx_t *c)
{
    return (size_t)(c->stats.connections_opened - c->stats.connections_evicted);
}

/* ---- connections ---- */

static uint64_t conn_hash(const synth_addr_t *cl, const synth_addr_t *sv)
{
    uint64_t h = synth_hash(SYNTH_HASH_SEED, cl, sizeof *cl);
    return synth_hash(h, sv, sizeof *sv);
}

static void lru_unlink(synth_ctx_t *c, synth_conn_t *k)
{
    if (k->lru_prev)
        c->conns[k->lru_prev - 1].lru_next = k->lru_next;
    else
        c->lru_head = k->lru_next;
    if (k->lru_next)
        c->conns[k->lru_next - 1].lru_prev = k->lru_prev;
    else
        c->lru_tail = k->lru_prev;
    k->lru_prev = k->lru_next = 0;
}

static void lru_push_front(synth_ctx_t *c, synth_conn_t *k)
{
    uint32_t x = (uint32_t)(k - c->conns + 1);
    k->lru_prev = 0;
    k->lru_next = c->lru_head;
    if (c->lru_head)
        c->conns[c->lru_head - 1].lru_prev = x;
    c->lru_head = x;
    if (!c->lru_tail)
        c->lru_tail = x;
}

static void bucket_remove(synth_ctx_t *c, synth_conn_t *k)
{
    uint32_t x = (uint32_t)(k - c->conns + 1);
    uint32_t *p = &c->buckets[k->hash & c->bucket_mask];
    while (*p && *p != x)
        p = &c->conns[*p - 1].hnext;
    if (*p)
        *p = k->hnext;
    k->hnext = 0;
}

void synth_conn_release(synth_conn_t *k)
{
    for (int d = 0; d < 2; d++)
        if (k->hd[d])
            nghttp2_hd_deflate_del(k->hd[d]);
    k->hd[0] = k->hd[1] = NULL;
    k->used = false;
}

void synth_conn_close(synth_ctx_t *c, synth_conn_t *k)
{
    bucket_remove(c, k);
    lru_unlink(c, k);
    synth_conn_release(k);
    k->lru_next = c->free_head;
    c->free_head = (uint32_t)(k - c->conns + 1);
    c->stats.connections_evicted++;
}

synth_conn_t *synth_conn_get(synth_ctx_t *c, const synth_addr_t *client, const synth_addr_t *server,
                             synth_conn_t *evicted, bool *fresh)
{
    uint64_t h = conn_hash(client, server);
    *fresh = false;
    evicted->used = false;
    for (uint32_t x = c->buckets[h & c->bucket_mask]; x; x = c->conns[x - 1].hnext) {
        synth_conn_t *k = &c->conns[x - 1];
        if (k->hash == h && !memcmp(&k->end[0], client, sizeof *client) &&
            !memcmp(&k->end[1], server, sizeof *server)) {
            lru_unlink(c, k);
            lru_push_front(c, k);
            return k;
        }
    }
    nghttp2_hd_deflater *hd[2] = {NULL, NULL};
    if (nghttp2_hd_deflate_new(&hd[0], 4096) != 0 || nghttp2_hd_deflate_new(&hd[1], 4096) != 0) {
        if (hd[0])
            nghttp2_hd_deflate_del(hd[0]);
        return NULL;
    }
    if (!c->free_head) { /* full: the least recently used one goes (its FIN is the caller's) */
        synth_conn_t *old = &c->conns[c->lru_tail - 1];
        *evicted = *old;
        old->hd[0] = old->hd[1] = NULL;
        synth_conn_close(c, old);
    }
    synth_conn_t *k = &c->conns[c->free_head - 1];
    c->free_head = k->lru_next;
    memset(k, 0, sizeof *k);
    k->used = true;
    k->end[0] = *client;
    k->end[1] = *server;
    k->hash = h;
    k->hd[0] = hd[0];
    k->hd[1] = hd[1];
    /* Initial sequence numbers as RFC 6528 makes them: a hash of the 4-tuple plus a clock
     * that ticks every 4 us. The clock makes a connection opened again (after an eviction, or
     * by an adapter restarted after a crash, whose previous connection on the same 4-tuple
     * never saw its FIN) start a new sequence space: a capture read in order shows a new
     * connection there, not a SYN of the old one followed by data that overlaps it. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint32_t m = (uint32_t)(((uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000) / 4);
    k->seq[0] = (uint32_t)(h >> 32) + m;
    k->seq[1] = (uint32_t)h + m;
    k->next_sid = 1;
    k->hnext = c->buckets[h & c->bucket_mask];
    c->buckets[h & c->bucket_mask] = (uint32_t)(k - c->conns + 1);
    lru_push_front(c, k);
    c->stats.connections_opened++;
    *fresh = true;
    return k;
}
