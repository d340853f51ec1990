/* HV-VES event validation (hvves_event.h), HV-VES's own (dcaegen2-collectors-hv-ves,
 * hv-collector-domain/.../domain/validation.kt and hv-collector-core/.../impl/
 * HeaderValidator.kt): the header is present, each of headerRequiredFieldDescriptors
 * (version, domain, priority, eventId, eventName, lastEpochMicrosec, startEpochMicrosec,
 * reportingEntityName, sourceName, vesEventListenerVersion; "sequence" deliberately not)
 * "has" a value, which for these proto3 fields means not the default (a non-empty string, a
 * priority other than PRIORITY_NOT_PROVIDED, a non-zero epoch), and vesEventListenerVersion
 * matches 7\.[0-9].* (listener_version_ok). */
#include "hvves_event.h"

#include <stdlib.h>
#include <string.h>

#include "VesEvent.pb-c.h"

static void *arena_alloc(void *ad, size_t size)
{
    hvves_arena_t *a = ad;
    size_t at = (a->used + 15) & ~(size_t)15;
    if (at + size > a->cap)
        return NULL;
    a->used = at + size;
    return a->mem + at;
}

static void arena_free(void *ad, void *p)
{
    (void)ad;
    (void)p; /* the whole arena is reset per event */
}

int hvves_arena_init(hvves_arena_t *a, size_t max_payload)
{
    /* Decoded strings and bytes are copies of the payload's, plus the structs: twice the
     * payload (the key is serialised here too) and room for the structs is enough. */
    a->cap = 2 * max_payload + 65536;
    a->used = 0;
    a->mem = malloc(a->cap);
    return a->mem ? 0 : -1;
}

void hvves_arena_free(hvves_arena_t *a)
{
    free(a->mem);
    a->mem = NULL;
}

/* HV-VES's rule (hv-collector-domain/.../domain/validation.kt, vesEventListenerVersionRegex
 * """7\.[0-9].*""", matched whole by Kotlin's Regex.matches): "7." and a digit, then anything
 * but a line terminator (a regex "." does not match \n, \r, U+0085, U+2028 or U+2029). So
 * "7.0.2" and "7.1-rc1" pass, "7" and "7.x" do not. */
static int listener_version_ok(const char *v)
{
    if (v[0] != '7' || v[1] != '.' || v[2] < '0' || v[2] > '9')
        return 0;
    for (const unsigned char *p = (const unsigned char *)v + 3; *p; p++) {
        if (*p == '\n' || *p == '\r')
            return 0;
        if (p[0] == 0xc2 && p[1] == 0x85)
            return 0;
        if (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9))
            return 0;
    }
    return 1;
}

hvves_reason_t hvves_event_decode(hvves_arena_t *a, const uint8_t *p, size_t n, hvves_event_t *out)
{
    memset(out, 0, sizeof *out);
    a->used = 0;
    ProtobufCAllocator al = {.alloc = arena_alloc, .free = arena_free, .allocator_data = a};
    Org__Onap__Ves__VesEvent *ev = org__onap__ves__ves_event__unpack(&al, n, p);
    if (!ev)
        return HVVES_ERR_PROTOBUF;
    Org__Onap__Ves__CommonEventHeader *h = ev->commoneventheader;
    if (!h) {
        out->field = "commonEventHeader";
        return HVVES_ERR_NO_HEADER;
    }
    static const struct {
        const char *name;
        size_t off;
    } req[] = {
        {"version", offsetof(Org__Onap__Ves__CommonEventHeader, version)},
        {"domain", offsetof(Org__Onap__Ves__CommonEventHeader, domain)},
        {"eventId", offsetof(Org__Onap__Ves__CommonEventHeader, eventid)},
        {"eventName", offsetof(Org__Onap__Ves__CommonEventHeader, eventname)},
        {"reportingEntityName", offsetof(Org__Onap__Ves__CommonEventHeader, reportingentityname)},
        {"sourceName", offsetof(Org__Onap__Ves__CommonEventHeader, sourcename)},
        {"vesEventListenerVersion",
         offsetof(Org__Onap__Ves__CommonEventHeader, veseventlistenerversion)},
    };
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
        const char *s = *(char *const *)((const char *)h + req[i].off);
        if (!s || !*s) {
            out->field = req[i].name;
            return HVVES_ERR_MISSING_FIELD;
        }
    }
    if (h->priority == ORG__ONAP__VES__COMMON_EVENT_HEADER__PRIORITY__PRIORITY_NOT_PROVIDED) {
        out->field = "priority";
        return HVVES_ERR_MISSING_FIELD;
    }
    if (!h->startepochmicrosec || !h->lastepochmicrosec) {
        out->field = !h->startepochmicrosec ? "startEpochMicrosec" : "lastEpochMicrosec";
        return HVVES_ERR_MISSING_FIELD;
    }
    if (!listener_version_ok(h->veseventlistenerversion)) {
        out->field = "vesEventListenerVersion";
        return HVVES_ERR_VERSION;
    }
    size_t kl = org__onap__ves__common_event_header__get_packed_size(h);
    uint8_t *key = arena_alloc(a, kl ? kl : 1);
    if (!key)
        return HVVES_ERR_PROTOBUF;
    out->key_len = org__onap__ves__common_event_header__pack(h, key);
    out->key = key;
    /* The key is what consumers parse: a header protobuf-c accepted but that does not survive
     * its own re-serialisation (a repeated header merged with invalid bytes in one copy, found
     * by fuzz_hvves_event) would be a key no consumer can read, or one routed by a domain it
     * does not carry. Such an event is refused as invalid protobuf. */
    Org__Onap__Ves__CommonEventHeader *back =
        org__onap__ves__common_event_header__unpack(&al, out->key_len, key);
    if (!back || !back->domain || strcmp(back->domain, h->domain) != 0) {
        out->field = "commonEventHeader";
        return HVVES_ERR_PROTOBUF;
    }
    out->domain = h->domain;
    out->last_epoch_us = h->lastepochmicrosec;
    return HVVES_OK;
}

const char *hvves_reason_name(hvves_reason_t r)
{
    static const char *const names[HVVES_REASON__COUNT] = {
        "ok", "invalid-protobuf", "missing-header", "missing-field", "bad-listener-version"};
    return r < HVVES_REASON__COUNT ? names[r] : "unknown";
}
