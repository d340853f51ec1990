/* Fuzz target: VES request validation (single event when the first byte is even, batch when
 * odd). An accepted request has at least one event, all of one valid domain; a refused one
 * has an ONAP error whose body serialises; the fast path of a single event agrees with the
 * jansson tree it stands in for. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ves_event.h"

/* The fast path (a single event validated without a tree) must agree with jansson's tree:
 * whatever it accepts the tree accepts, with the same domain and sourceName. */
static void same_as_tree(const uint8_t *b, size_t n, bool batch, const ves_parsed_t *p)
{
    ves_parsed_t t;
    ves_error_t e;
    if (ves_validate_tree(b, n, batch, &t, &e) != 0)
        abort();
    size_t l1, l2;
    const char *s1 = ves_parsed_source(p, 0, &l1), *s2 = ves_parsed_source(&t, 0, &l2);
    if (t.n_events != p->n_events || strcmp(t.domain, p->domain) || l1 != l2 || memcmp(s1, s2, l1))
        abort();
    ves_parsed_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    ves_parsed_t p;
    ves_error_t e;
    bool batch = data[0] & 1;
    if (ves_validate(data + 1, size - 1, batch, &p, &e) == 0) {
        if (p.n_events < 1 || !p.domain || strlen(p.domain) != p.domain_len)
            abort();
        for (size_t i = 0; i < p.n_events; i++) {
            size_t l;
            if (!ves_parsed_source(&p, i, &l))
                abort();
        }
        same_as_tree(data + 1, size - 1, batch, &p);
        ves_parsed_free(&p);
    } else {
        char body[1024];
        if (e.status < 400 || !e.message_id || ves_error_body(&e, body, sizeof body) == 0)
            abort();
    }
    return 0;
}
