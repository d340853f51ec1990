/* Fuzz target: the JSON config file parser (config_parse_json) and the value parsers every
 * leaf then goes through. Invariants checked: keys are non-empty dotted paths without a
 * leading or trailing '.', values are NUL-terminated text, and parsing never crashes, leaks
 * or reads out of bounds (ASan/UBSan builds). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"

static int leaf(const char *key, const char *value, void *arg)
{
    size_t *count = arg;
    size_t kl = strlen(key);
    if (kl == 0 || key[0] == '.' || key[kl - 1] == '.' || value == NULL)
        abort();
    int64_t ms;
    uint64_t b;
    bool v;
    (void)config_parse_duration_ms(value, &ms);
    (void)config_parse_bytes(value, &b);
    (void)config_parse_bool(value, &v);
    char env[64];
    (void)config_env_name(key, env, sizeof env);
    (*count)++;
    return *count > 10000 ? -1 : 0; /* the callback may stop the walk */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet) {
        log_setup("fuzz_config_json", LOG_LEVEL_OFF, 0);
        quiet = 1;
    }
    char err[256];
    size_t count = 0;
    int rc = config_parse_json((const char *)data, size, "fuzz", leaf, &count, err, sizeof err);
    if (rc != 0 && memchr(err, '\0', sizeof err) == NULL)
        abort();
    return 0;
}
