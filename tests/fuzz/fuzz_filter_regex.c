/* Fuzz target: the regex operator (services/filter/filter_op_regex.c, PCRE2). Input: one flag
 * byte (bit 0: icase), the pattern up to the first NUL byte, the value after it. The pattern
 * must be refused with a message or compile; a compiled pattern is matched against the value
 * and against 4 KiB made of its bytes, and every evaluation must end within PCRE2's limits
 * (well under a second of CPU, whatever the pattern): a slower one aborts as a finding. The
 * clock is the thread's CPU time, not the wall: a fuzzer sharing a loaded machine (CI runs two
 * at once on two cores) may wait for a core that long without the pattern being slow. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "filter.h"

static double fuzz_cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void fuzz_eval(const filter_t *f, const char *v, size_t n)
{
    codec_msg_t m;
    memset(&m, 0, sizeof m);
    m.http[0] = (codec_header_t){{"x-v", 3}, {v, n}};
    m.n_http = 1;
    double t0 = fuzz_cpu_ms();
    int rule;
    filter_action_t a = filter_eval(f, &m, &rule);
    double ms = fuzz_cpu_ms() - t0;
    if (ms > 1000) {
        fprintf(stderr, "regex evaluation took %.0f ms of CPU\n", ms);
        abort();
    }
    if (filter_eval(f, &m, &rule) != a) /* the verdict is a function of pattern and value */
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    bool icase = data[0] & 1;
    const char *pat = (const char *)data + 1;
    const char *nul = memchr(pat, 0, size - 1);
    size_t pl = nul ? (size_t)(nul - pat) : size - 1;
    const char *val = nul ? nul + 1 : "";
    size_t vl = nul ? size - 1 - pl - 1 : 0;

    json_t *spec =
        json_pack("{s:s,s:s,s:[{s:s,s:s,s:{s:s,s:s,s:o,s:b}}]}", "name", "fz", "default", "allow",
                  "rules", "name", "r", "action", "drop", "match", "field", "x-v", "op", "regex",
                  "value", json_stringn_nocheck(pat, pl), "icase", icase);
    if (!spec)
        return 0;
    char err[512] = "";
    filter_t *f = filter_compile(spec, err, sizeof err);
    json_decref(spec);
    if (!f) {
        if (!err[0]) /* a refusal always says why */
            abort();
        return 0;
    }
    fuzz_eval(f, val, vl);
    static char big[4096];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = vl ? val[i % vl] : (pl ? pat[i % pl] : 'a');
    fuzz_eval(f, big, sizeof big);
    filter_release(f);
    return 0;
}
