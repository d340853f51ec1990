/* Fuzz target: VES request validation (single event when the first byte is even, batch when
 * odd). An accepted request has at least one event, all of one valid domain; a refused one
 * has an ONAP error whose body serialises. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ves_event.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    ves_parsed_t p;
    ves_error_t e;
    if (ves_validate(data + 1, size - 1, data[0] & 1, &p, &e) == 0) {
        if (p.n_events < 1 || !p.domain || strlen(p.domain) != p.domain_len)
            abort();
        for (size_t i = 0; i < p.n_events; i++)
            if (!ves_event_source_name(p.events[i]))
                abort();
        ves_parsed_free(&p);
    } else {
        char body[1024];
        if (e.status < 400 || !e.message_id || ves_error_body(&e, body, sizeof body) == 0)
            abort();
    }
    return 0;
}
