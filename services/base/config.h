/* Configuration: every daemon declares its settings as a table of typed specs, and
 * config_load() fills them from (highest first) command-line flags, NDD_* environment
 * variables, an optional JSON file (--config FILE or NDD_CONFIG), and the defaults.
 *
 *   flags:  --http.port=9100   --http.port 9100   --tls.enabled (bool: true)
 *   env:    NDD_HTTP_PORT=9100  (key upper-cased, '.' and '-' become '_')
 *   file:   {"http": {"port": 9100}}  (nested objects flatten with '.')
 *
 * Any `kafka.X` setting, from any source, is not validated here: it is collected as the
 * librdkafka property X for the daemon to apply (config_kafka_props()). From the
 * environment, NDD_KAFKA_BOOTSTRAP_SERVERS becomes property "bootstrap.servers"
 * (lower-cased, '_' -> '.'; librdkafka's own names use dots only).
 *
 * Secrets: a spec flagged CONFIG_F_SECRET is never printed by config_dump(), and may be read
 * from a file instead: --<key>-file PATH, NDD_<KEY>_FILE=PATH, or "<key>_file" in the JSON
 * file (one trailing newline trimmed). kafka.<prop>_file works the same for librdkafka
 * secrets such as kafka.sasl.password_file.
 *
 * The typed config map: a spec row also says where its value lands in the daemon's settings
 * struct (CONFIG_AT) and, for numbers, the range it must be in; config_map_apply fills the
 * struct, so defaults are written once (in the row) and a daemon reads its settings from
 * its struct (the only way to read them). Where each value came from is what config_dump
 * prints beside it (--check-config).
 *
 * Errors (unknown key, bad value, value out of range, unreadable file) fail config_load() with a
 * message naming the key, the source ("flag --x", "env NDD_X", "file /path") and the reason. */
#ifndef NDD_CONFIG_H
#define NDD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum config_type {
    CONFIG_STRING = 0,
    CONFIG_INT,         /* int64, decimal (or 0x hex) */
    CONFIG_BOOL,        /* true/false, 1/0, yes/no, on/off */
    CONFIG_DOUBLE,      /* strtod syntax, finite */
    CONFIG_DURATION_MS, /* "250ms", "5s", "2m", "1h", "1d"; bare number = milliseconds */
    CONFIG_BYTES,       /* "512", "64KiB", "16MiB", "1GiB" (binary), "1KB"/"1MB"/"1GB" (decimal),
                           "k"/"m"/"g" (binary) */
    CONFIG_LIST,        /* comma-separated in flags/env; a JSON array or string in the file */
} config_type_t;

enum {
    CONFIG_F_SECRET = 1u << 0,   /* never printed; <key>_file accepted */
    CONFIG_F_REQUIRED = 1u << 1, /* config_load fails when no source gives a value */
};

typedef struct config_spec {
    const char *key; /* lowercase, dotted: "http.port", "feed.max-inflight" */
    config_type_t type;
    const char *def;  /* default as text (parsed like any other source); NULL = unset */
    const char *help; /* one line for --help */
    unsigned flags;   /* CONFIG_F_* */
    /* Where config_map_apply stores the value in the daemon's settings struct: CONFIG_AT(type,
     * field), 0 for nowhere. The field's C type follows the spec's: STRING const char *,
     * INT and DURATION_MS int64_t, BOOL bool, DOUBLE double, BYTES uint64_t, LIST
     * config_list_t. */
    size_t at;
    /* INT, DURATION_MS (ms) and BYTES: the accepted range, when min < max; a value outside is
     * refused by config_load with the key and its source named. */
    int64_t min, max;
} config_spec_t;

/* The offset of field in type, plus one so that 0 can mean "nowhere". */
#define CONFIG_AT(type, field) (offsetof(type, field) + 1)

/* A CONFIG_LIST's items in the settings struct (they live as long as the config_t). */
typedef struct config_list {
    const char *const *items;
    size_t n;
} config_list_t;

/* One librdkafka property collected from kafka.* settings. */
typedef struct config_kafka_prop {
    const char *name; /* without the "kafka." prefix */
    const char *value;
    const char *origin; /* "flag --kafka.x", "env NDD_KAFKA_X", "file /path" */
} config_kafka_prop_t;

typedef struct config config_t;

/* Parses argv[1..argc-1] (argv[0] is the program name), the environment and the config
 * file against specs. Returns NULL with a message in err on any error; the specs table
 * must outlive the returned config. --help / -h is not an error: the result reports
 * config_help_requested() and the daemon prints config_print_help() and exits 0. */
config_t *config_load(const config_spec_t *specs, size_t nspecs, int argc, char **argv, char *err,
                      size_t errlen);
/* As config_load, with the environment given as a NULL-terminated "NAME=value" array
 * (tests); config_load passes environ. */
config_t *config_load_env(const config_spec_t *specs, size_t nspecs, int argc, char **argv,
                          char *const *envp, char *err, size_t errlen);
/* One setting handed over by the program instead of read from a file: ndd gives each of its
 * roles its section of ndd's own file this way. key and value as config_parse_json gives a
 * file's leaves. */
typedef struct config_leaf {
    const char *key;
    const char *value;
} config_leaf_t;
/* As config_load_env, with leaves where the config file would be (--config and NDD_CONFIG
 * are not read); origin names them in errors and --check-config ("file ndd.json, roles.adapter").
 */
config_t *config_load_leaves(const config_spec_t *specs, size_t nspecs, int argc, char **argv,
                             char *const *envp, const config_leaf_t *leaves, size_t nleaves,
                             const char *origin, char *err, size_t errlen);
void config_free(config_t *cfg);

/* The config file the loader would read: --config FILE, --config=FILE (the last wins), else
 * NDD_CONFIG from envp; *path is NULL when none is named. -1 with err on "--config" without
 * a value or an empty name. For a program that reads its file itself (ndd). */
int config_file_path(int argc, char **argv, char *const *envp, const char **path, char *err,
                     size_t errlen);
/* The whole file, NUL-terminated (*len bytes before the NUL), as the loader reads a config
 * file: at most 1 MiB. NULL with err naming the file; the caller frees the text. */
char *config_file_read(const char *path, size_t *len, char *err, size_t errlen);

bool config_help_requested(const config_t *cfg);
/* --help, -h or --version among argv's flags: what config_help_requested and
 * config_version_requested will say, known before anything is loaded (ndd names its missing
 * --config only when neither is asked). */
bool config_help_or_version_asked(int argc, char **argv);
/* --version and --check-config were given (flags only, like --help). With --version the
 * required settings may be missing. */
bool config_version_requested(const config_t *cfg);
bool config_check_requested(const config_t *cfg);
/* Stores every spec's value (default when no source gave one, 0/NULL when unset) at its
 * CONFIG_AT offset in dst, the daemon's settings struct. Strings and lists point into cfg:
 * dst is valid while cfg lives. 0, or -1 on a spec of unknown type. */
int config_map_apply(const config_t *cfg, void *dst);
/* The table of settings: key, type, default, environment name, help. */
void config_print_help(const config_spec_t *specs, size_t nspecs, const char *program, FILE *out);

/* The librdkafka properties from kafka.* settings, after precedence (one entry per name). */
const config_kafka_prop_t *config_kafka_props(const config_t *cfg, size_t *n);

/* Every setting as "key = value  (origin)", origin one of "default", "file /path",
 * "env NDD_X", "flag --x" (the source that won), or "key = (unset)"; secrets and secret-looking
 * kafka properties (password, secret, private key, oauth config) print as "***". */
void config_dump(const config_t *cfg, FILE *out);

/* Parsers used by config_load, exposed for reuse (e.g. REST validation). 0 or -1. */
int config_parse_duration_ms(const char *s, int64_t *out);
int config_parse_bytes(const char *s, uint64_t *out);
int config_parse_bool(const char *s, bool *out);
/* "http.port" -> "NDD_HTTP_PORT" into out (size outlen); -1 when it does not fit. */
int config_env_name(const char *key, char *out, size_t outlen);

/* Parses a JSON config document (flattening objects with '.') and calls fn for each leaf:
 * strings as-is, numbers and booleans as text, arrays joined with ',' (for lists).
 * Returns 0, or -1 with err naming the key/position. Used by config_load and the fuzzer. */
typedef int (*config_json_leaf_fn)(const char *key, const char *value, void *arg);
int config_parse_json(const char *text, size_t len, const char *origin, config_json_leaf_fn fn,
                      void *arg, char *err, size_t errlen);

#endif
