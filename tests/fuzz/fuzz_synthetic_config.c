/* Fuzz target: the synthetic encoding's settings and L3/L4 mapping table parser (the feed's
 * "synthetic" member, synth_ctx_new), then address parsing and table lookups of parts of the
 * input. Invariants: a refused member always says why (the message names "synthetic"), an
 * accepted one has settings within their documented ranges, and nothing crashes, leaks or
 * reads out of bounds (ASan/UBSan builds). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "synthetic.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    synth_addr_t a;
    (void)synth_addr_parse((const char *)data, size, &a);
    json_t *j = json_loadb((const char *)data, size, 0, NULL);
    if (!j)
        return 0;
    /* The connection table is allocated for the configured bound (up to 1,000,000 entries,
     * documented in docs/synthetic.md): bounds above 65,536 are the memory the operator asked
     * for, not a parser fault, and would only exceed libFuzzer's 1 GiB RSS limit under ASan.
     * The range check itself is still fuzzed: such a value reaches the parser in a smaller
     * form, and out-of-range values are refused before any allocation. */
    json_t *mc = json_is_object(j) ? json_object_get(j, "max_connections") : NULL;
    if (json_is_integer(mc) && json_integer_value(mc) > 65536 &&
        json_integer_value(mc) <= SYNTH_MAX_MAX_CONNS) {
        json_decref(j);
        return 0;
    }
    char err[300] = "";
    synth_ctx_t *c = synth_ctx_new(j, err, sizeof err);
    if (!c) {
        if (!strstr(err, "synthetic"))
            abort();
    } else {
        const synth_settings_t *s = synth_ctx_settings(c);
        if (s->mss4 < 536 || s->mss4 > 9000 || s->mss6 < 536 || s->mss6 > 9000 ||
            s->max_connections < 1 || s->max_connections > SYNTH_MAX_MAX_CONNS)
            abort();
        (void)synth_map_lookup(c, SYNTH_MATCH_FQDN, (const char *)data, size > 64 ? 64 : size, &a);
        synth_ctx_free(c);
    }
    json_decref(j);
    return 0;
}
