/* Fuzz target: HV-VES event decoding and validation (protobuf-c into the arena). A valid
 * event's key must decode back to a CommonEventHeader with the same domain. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "VesEvent.pb-c.h"
#include "hvves_event.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static hvves_arena_t a;
    if (!a.mem && hvves_arena_init(&a, 1u << 20))
        abort();
    if (size > (1u << 20))
        return 0;
    hvves_event_t ev;
    if (hvves_event_decode(&a, data, size, &ev) != HVVES_OK)
        return 0;
    Org__Onap__Ves__CommonEventHeader *h =
        org__onap__ves__common_event_header__unpack(NULL, ev.key_len, ev.key);
    if (!h || strcmp(h->domain, ev.domain))
        abort();
    org__onap__ves__common_event_header__free_unpacked(h, NULL);
    return 0;
}
