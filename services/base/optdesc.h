/* Option descriptions: one typed table per JSON object of a configuration (a feed's delivery
 * settings, a transport's own member, an encoding's), used for two things that must never
 * disagree: checking an object (types, ranges, choices, lengths, unknown members; parsed
 * scalars stored into the caller's struct) and describing it (the schema the admin serves,
 * the console renders its forms from, and the docs test compares the docs with). A row says
 * everything a reader of the option needs: its type, default, range, unit, whether its value
 * names a secret file, and one line of help. Cross-member rules (max_pending >= batch_max, a
 * certificate needs its key) stay in the owner's code, after optdesc_check. */
#ifndef NDD_SERVICES_OPTDESC_H
#define NDD_SERVICES_OPTDESC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "jfield.h"

/* ---- types ---- */

typedef enum optdesc_type {
    OPTDESC_END = 0, /* ends a table */
    OPTDESC_INT,     /* a JSON integer in [min, max] */
    OPTDESC_BOOL,
    OPTDESC_STRING, /* at most max bytes (0: any length) */
    OPTDESC_ENUM,   /* a string, one of choices */
    OPTDESC_MAP,    /* an object of string values (header names to values, properties) */
    OPTDESC_OBJECT, /* an object whose members are described by sub */
    OPTDESC_ARRAY,  /* an array of objects described by sub, min..max items (max 0: any) */
    OPTDESC_FILTER, /* the name of a filter object, an inline filter, or null (owner checks) */
} optdesc_type_t;

enum {
    OPTDESC_REQUIRED = 1u << 0,
    OPTDESC_SECRET = 1u << 1, /* the value names a file that holds a secret, never the secret */
};

typedef struct optdesc {
    const char *name;
    optdesc_type_t type;
    unsigned flags;
    int64_t min, max;           /* INT: range; STRING: max length; ARRAY: item count */
    const char *def;            /* the default as JSON text ("64", "true", "\"POST\""); NULL:
                                   none, or one the help explains (computed from other members) */
    const char *unit;           /* "ms", "bytes", "MiB", "messages"; NULL: none */
    const char *help;           /* one line for people */
    const char *const *choices; /* ENUM, NULL-terminated; NULL: the owner supplies them */
    const struct optdesc *sub;  /* OBJECT and ARRAY: the members (of each item) */
    /* Where a checked INT, BOOL or STRING goes in the caller's struct: offset and size
     * (1 bool; 2, 4 or 8 unsigned integer; a char array's size). size 0: not stored. */
    size_t off, size;
} optdesc_t;

/* Row helpers: a stored integer and a stored bool. */
#define OPTDESC_STORE(type, field) .off = offsetof(type, field), .size = sizeof(((type *)0)->field)

/* ---- functions ---- */

/* Checks obj (an object) against tab: members not in tab are refused, required ones must be
 * there, each present member has its type and range (INT, STRING, ENUM, MAP; OBJECT and
 * ARRAY recursively, their items' paths "endpoints[2].url"); stored rows are written into
 * dst (may be NULL: check only). prefix is obj's path ("" at the top). 0, or -1 with *err. */
int optdesc_check(const optdesc_t *tab, const json_t *obj, const char *prefix, void *dst,
                  jfield_err_t *err);
/* The integer member name of obj (checked before), else the default its row states: an
 * implementation reads its settings through the description, so a default is written once.
 * 0 when the row has neither. */
int64_t optdesc_int(const optdesc_t *tab, const json_t *obj, const char *name);
/* The table as a JSON array of option objects (docs/api.md, "Feed schema"): name, path (under
 * prefix), type, default, minimum/maximum (or maxLength, minItems/maxItems), unit, enum,
 * required, secret, help, and "options" for objects and arrays. A new reference. */
json_t *optdesc_schema(const optdesc_t *tab, const char *prefix);
/* One row as a schema object, with choices overriding the row's (NULL: the row's). */
json_t *optdesc_schema_row(const optdesc_t *d, const char *prefix, const char *const *choices);

#endif
