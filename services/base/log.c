/* Logging: one line per event. Lines are assembled in a local buffer and written with a
 * single fwrite so lines from different threads never interleave. */
#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "clock.h"

static const char *const level_names[] = {"debug", "info", "warn", "error", "off"};

static _Atomic int g_level = LOG_LEVEL_INFO;
static _Atomic int g_json;
static char g_program[64] = "ndd";
static FILE *_Atomic g_stream;
/* Serialises the write of a line (and program-name updates). stdio's own FILE lock would do
 * for interleaving, but it is invisible to ThreadSanitizer, and this is not a hot path. */
static pthread_mutex_t g_write_mu = PTHREAD_MUTEX_INITIALIZER;

void log_setup(const char *program, log_level_t level, int json_lines)
{
    if (program) {
        const char *slash = strrchr(program, '/');
        pthread_mutex_lock(&g_write_mu);
        snprintf(g_program, sizeof g_program, "%s", slash ? slash + 1 : program);
        pthread_mutex_unlock(&g_write_mu);
    }
    atomic_store(&g_level, (int)level);
    atomic_store(&g_json, json_lines ? 1 : 0);
}

int log_level_parse(const char *name, log_level_t *out)
{
    for (int i = 0; i <= LOG_LEVEL_OFF; i++) {
        if (name && strcmp(name, level_names[i]) == 0) {
            *out = (log_level_t)i;
            return 0;
        }
    }
    return -1;
}

log_level_t log_get_level(void)
{
    return (log_level_t)atomic_load_explicit(&g_level, memory_order_relaxed);
}

void log_set_stream(void *file)
{
    pthread_mutex_lock(&g_write_mu);
    atomic_store(&g_stream, (FILE *)file);
    pthread_mutex_unlock(&g_write_mu);
}

/* JSON string body into dst; returns bytes written (never past cap - 1). */
static size_t json_escape(char *dst, size_t cap, const char *src)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)src; *p && o + 7 < cap; p++) {
        switch (*p) {
        case '"':
            dst[o++] = '\\';
            dst[o++] = '"';
            break;
        case '\\':
            dst[o++] = '\\';
            dst[o++] = '\\';
            break;
        case '\n':
            dst[o++] = '\\';
            dst[o++] = 'n';
            break;
        case '\t':
            dst[o++] = '\\';
            dst[o++] = 't';
            break;
        default:
            if (*p < 0x20)
                o += (size_t)snprintf(dst + o, cap - o, "\\u%04x", *p);
            else
                dst[o++] = (char)*p;
        }
    }
    dst[o] = '\0';
    return o;
}

void log_write(log_level_t level, const char *file, int line, const char *fmt, ...)
{
    if ((int)level < atomic_load_explicit(&g_level, memory_order_relaxed) || level >= LOG_LEVEL_OFF)
        return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t mlen = strlen(msg);
    if (mlen == sizeof msg - 1) {
        /* truncated: do not leave half a UTF-8 sequence at the end (JSON lines must parse) */
        size_t cut = mlen;
        while (cut > 0 && ((unsigned char)msg[cut - 1] & 0xC0) == 0x80)
            cut--;
        if (cut > 0 && ((unsigned char)msg[cut - 1] & 0x80))
            cut--;
        if (mlen - cut < 4 && cut < mlen)
            msg[cut] = '\0';
    }
    /* One event, one line: embedded newlines would split it for line-based collectors. */
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';

    char when[40];
    wall_iso_utc(wall_now_ms(), when, sizeof when);

    const char *base = file ? strrchr(file, '/') : NULL;
    base = base ? base + 1 : (file ? file : "?");

    char out[5000];
    int n;
    pthread_mutex_lock(&g_write_mu);
    if (atomic_load_explicit(&g_json, memory_order_relaxed)) {
        char esc[4200], prog[200], src[200];
        json_escape(esc, sizeof esc, msg);
        json_escape(prog, sizeof prog, g_program);
        json_escape(src, sizeof src, base);
        n = snprintf(out, sizeof out,
                     "{\"ts\":\"%s\",\"level\":\"%s\",\"program\":\"%s\",\"src\":\"%s:%d\","
                     "\"msg\":\"%s\"}\n",
                     when, level_names[level], prog, src, line, esc);
    } else {
        n = snprintf(out, sizeof out, "%s %-5s %s %s:%d %s\n", when, level_names[level], g_program,
                     base, line, msg);
    }
    if (n >= 0) {
        if ((size_t)n >= sizeof out) {
            n = (int)sizeof out - 1;
            out[n - 1] = '\n';
        }
        FILE *f = atomic_load(&g_stream);
        if (!f)
            f = stderr;
        fwrite(out, 1, (size_t)n, f);
        fflush(f);
    }
    pthread_mutex_unlock(&g_write_mu);
}

/* A key names a secret when it contains password/passwd/secret/token anywhere
 * ("sslpassword", "kafka.sasl.password", "access_token"), or when its last component
 * (after '.', '_' or '-') is key/pwd/apikey/auth ("api_key", "ssl.key"). */
static int is_secret_key(const char *k, size_t n)
{
    static const char *const anywhere[] = {"password", "passwd", "secret", "token", "credential"};
    static const char *const last[] = {"key", "pwd", "apikey", "auth", "pass"};
    for (size_t i = 0; i < sizeof anywhere / sizeof anywhere[0]; i++) {
        size_t wl = strlen(anywhere[i]);
        for (size_t j = 0; j + wl <= n; j++)
            if (strncasecmp(k + j, anywhere[i], wl) == 0)
                return 1;
    }
    size_t start = n;
    while (start > 0 && k[start - 1] != '.' && k[start - 1] != '_' && k[start - 1] != '-')
        start--;
    for (size_t i = 0; i < sizeof last / sizeof last[0]; i++)
        if (strlen(last[i]) == n - start && strncasecmp(k + start, last[i], n - start) == 0)
            return 1;
    return 0;
}

char *log_redact(const char *src, char *dst, size_t dstlen)
{
    if (!dst || dstlen == 0)
        return dst;
    size_t o = 0;
    const char *p = src ? src : "";
    /* scheme://user:password@host -> scheme://user:***@host */
    const char *scheme = strstr(p, "://");
    const char *at = scheme ? strchr(scheme + 3, '@') : NULL;
    const char *slash = scheme ? strchr(scheme + 3, '/') : NULL;
    const char *colon = scheme ? strchr(scheme + 3, ':') : NULL;
    if (at && (!slash || at < slash) && colon && colon < at) {
        size_t keep = (size_t)(colon - p) + 1;
        if (keep >= dstlen)
            keep = dstlen - 1;
        memcpy(dst, p, keep);
        o = keep;
        o += (size_t)snprintf(dst + o, dstlen - o, "***");
        if (o >= dstlen)
            o = dstlen - 1;
        p = at;
    }
    /* key=value pairs (conninfo, query strings): secret keys get their value masked */
    while (*p && o + 1 < dstlen) {
        const char *eq = strchr(p, '=');
        if (!eq) {
            break;
        }
        const char *kstart = eq;
        while (kstart > p && (kstart[-1] == '_' || kstart[-1] == '.' || kstart[-1] == '-' ||
                              (kstart[-1] >= 'a' && kstart[-1] <= 'z') ||
                              (kstart[-1] >= 'A' && kstart[-1] <= 'Z') ||
                              (kstart[-1] >= '0' && kstart[-1] <= '9')))
            kstart--;
        size_t upto = (size_t)(eq - p) + 1;
        if (o + upto >= dstlen)
            upto = dstlen - 1 - o;
        memcpy(dst + o, p, upto);
        o += upto;
        p = eq + 1;
        if (is_secret_key(kstart, (size_t)(eq - kstart))) {
            if (*p == '\'' || *p == '"') {
                /* quoted conninfo value: up to the closing quote, backslash escapes */
                char q = *p++;
                while (*p && *p != q) {
                    if (*p == '\\' && p[1])
                        p++;
                    p++;
                }
                if (*p)
                    p++;
            } else {
                while (*p && *p != '&' && *p != ' ' && *p != ';' && *p != ',')
                    p++;
            }
            int w = snprintf(dst + o, dstlen - o, "***");
            o += (size_t)w;
            if (o >= dstlen)
                o = dstlen - 1;
        }
    }
    size_t rest = strlen(p);
    if (o + rest >= dstlen)
        rest = dstlen - 1 - o;
    memcpy(dst + o, p, rest);
    o += rest;
    dst[o] = '\0';
    return dst;
}
