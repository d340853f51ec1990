/* What config.c, config_parse.c and config_map.c share and nothing else sees. */
#ifndef NDD_CONFIG_INT_H
#define NDD_CONFIG_INT_H

#include <stddef.h>
#include <stdint.h>

#define CONFIG_KEY_MAX 256

/* snprintf into err (when err and errlen are set). */
void config_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* 0 or -1: a whole decimal / 0x integer; a finite strtod number. */
int config_parse_int(const char *s, int64_t *out);
int config_parse_double(const char *s, double *out);
/* Splits at ',' (items trimmed, empty ones dropped) into *items (malloc'd strings). -1 on
 * out of memory (what was split so far is in *items for the caller to free). */
int config_split_list(const char *s, char ***items, size_t *n);

#endif
