/* Fuzz target: ndd-gui-api's Prometheus text parser (gui-api/gui_prom.c), which reads the
 * workers' /metrics, i.e. outside input. The input is parsed in a buffer of exactly its size
 * (ASan sees any read past it); every sample's labels are read back with gui_prom_label, and
 * the sample count must not exceed the number of lines. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gui.h"

static void visit(const gui_prom_sample_t *s, void *arg)
{
    char out[64];
    size_t *n = arg;
    if (s->name_len == 0 || strlen(s->name) != s->name_len)
        abort();
    gui_prom_label(s, "feed", out, sizeof(out));
    gui_prom_label(s, "le", out, sizeof(out));
    (*n)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size ? size : 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    size_t lines = 1, seen = 0;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    char err[128];
    int n = gui_prom_parse(text, size, visit, &seen, err, sizeof(err));
    if (n >= 0 && ((size_t)n != seen || (size_t)n > lines))
        abort();
    free(text);
    return 0;
}
