/* What the test reads of the toy transport (transport_toy.c): where its sends went. */
#ifndef NDD_TEST_TOY_H
#define NDD_TEST_TOY_H

#include <stddef.h>

typedef struct toy_sink {
    char box[64];      /* the endpoint URL's path */
    char bytes[4096];  /* every payload sent, one after the other */
    size_t len, sends; /* bytes in it, send() calls */
} toy_sink_t;
extern toy_sink_t toy_sink;

#endif
