/* Logging: one line per event on stderr, plain text or JSON lines.
 *
 * Messages carry their own context (feed, endpoint, topic/partition/offset, field) in the
 * text. Secrets never reach this API: callers log names of secret files, never contents;
 * log_redact() exists for the rare place that must print a URL or DSN that may hold one. */
#ifndef NDD_LOG_H
#define NDD_LOG_H

#include <stddef.h>

typedef enum log_level {
    LOG_LEVEL_DEBUG = 0,
    LOG_LEVEL_INFO = 1,
    LOG_LEVEL_WARN = 2,
    LOG_LEVEL_ERROR = 3,
    LOG_LEVEL_OFF = 4,
} log_level_t;

/* Process-wide settings; call once at start (safe to call again, e.g. from a config reload). */
void log_setup(const char *program, log_level_t level, int json_lines);
/* "debug", "info", "warn", "error", "off" -> level; returns -1 for anything else. */
int log_level_parse(const char *name, log_level_t *out);
log_level_t log_get_level(void);
/* Where lines go (default stderr); tests point it at a memstream. */
void log_set_stream(void *file /* FILE * */);

void log_write(log_level_t level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Copies src into dst (size dstlen) with any userinfo password, "password=..." or
 * token-like query value replaced by "***". Returns dst. */
char *log_redact(const char *src, char *dst, size_t dstlen);

#define log_enabled(lvl) ((lvl) >= log_get_level())
#define log_debug(...)                                                                             \
    do {                                                                                           \
        if (log_enabled(LOG_LEVEL_DEBUG))                                                          \
            log_write(LOG_LEVEL_DEBUG, __FILE__, __LINE__, __VA_ARGS__);                           \
    } while (0)
#define log_info(...) log_write(LOG_LEVEL_INFO, __FILE__, __LINE__, __VA_ARGS__)
#define log_warn(...) log_write(LOG_LEVEL_WARN, __FILE__, __LINE__, __VA_ARGS__)
#define log_error(...) log_write(LOG_LEVEL_ERROR, __FILE__, __LINE__, __VA_ARGS__)

#endif
