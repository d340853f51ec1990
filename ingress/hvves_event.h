/* HV-VES event decoding and validation (docs/ingress.md, "HV-VES"): the protobuf VesEvent of a
 * WTP payload decoded with protobuf-c (VesEvent.proto, generated at build time) into an arena
 * that is reset per event (no allocation per event), its CommonEventHeader checked as HV-VES
 * checks it, and the header serialised again: HV-VES's Kafka key. */
#ifndef NDD_HVVES_EVENT_H
#define NDD_HVVES_EVENT_H

#include <stddef.h>
#include <stdint.h>

typedef enum hvves_reason {
    HVVES_OK = 0,
    HVVES_ERR_PROTOBUF,      /* "invalid-protobuf": the payload does not decode */
    HVVES_ERR_NO_HEADER,     /* "missing-header": no commonEventHeader */
    HVVES_ERR_MISSING_FIELD, /* "missing-field": a required header field is empty */
    HVVES_ERR_VERSION,       /* "bad-listener-version": vesEventListenerVersion not 7\.[0-9].* */
    HVVES_REASON__COUNT
} hvves_reason_t;

/* The decoding memory: one block, reused for every event. */
typedef struct hvves_arena {
    uint8_t *mem;
    size_t cap, used;
} hvves_arena_t;

typedef struct hvves_event {
    const char *domain;
    uint64_t last_epoch_us;
    const uint8_t *key; /* the serialised CommonEventHeader, in the arena */
    size_t key_len;
    const char *field; /* the field at fault */
} hvves_event_t;

/* An arena for payloads of at most max_payload bytes. 0 or -1. */
int hvves_arena_init(hvves_arena_t *a, size_t max_payload);
void hvves_arena_free(hvves_arena_t *a);

/* Decodes and validates p[0..n); out points into the arena until the next call. */
hvves_reason_t hvves_event_decode(hvves_arena_t *a, const uint8_t *p, size_t n, hvves_event_t *out);
const char *hvves_reason_name(hvves_reason_t r);

#endif
