/* Types of the filter engine (docs/filters.md is the contract for the JSON form).
 *
 * A filter is a named, ordered list of rules; each rule is a match expression (predicates
 * combined with all / any / not) and an action. The first rule whose expression matches a
 * message decides; when none matches the filter's default action applies. */
#ifndef NDD_FILTER_T_H
#define NDD_FILTER_T_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec-t.h"

struct json_t; /* jansson */

typedef enum filter_action {
    FILTER_ALLOW = 0,
    FILTER_DROP = 1,
} filter_action_t;

/* Index reported by filter_eval when no rule matched and the default action applied. */
#define FILTER_RULE_DEFAULT (-1)

/* Limits of one filter; a definition beyond them is refused by filter_compile. */
#define FILTER_MAX_TEXT (1024 * 1024) /* JSON text accepted by filter_compile_text */
#define FILTER_MAX_RULES 1024
#define FILTER_MAX_NODES 8192       /* predicates + combinators in the whole filter */
#define FILTER_MAX_DEPTH 8          /* nesting of all / any / not inside one match */
#define FILTER_MAX_NAME 64          /* filter and rule names: [A-Za-z0-9._-]{1,64} */
#define FILTER_MAX_FIELD 128        /* length of a field name */
#define FILTER_MAX_VALUE 4096       /* bytes of one string operand */
#define FILTER_MAX_SET 4096         /* elements of one one-of list */
#define FILTER_MAX_REGEX 1024       /* bytes of one regular expression */
#define FILTER_MAX_NUMBER_TEXT 48   /* field text longer than this is not a number */
#define FILTER_MAX_DESCRIPTION 1024 /* optional "description" strings */

/* The compiled filter. Opaque: build with filter_compile, read with the functions of filter.h. */
typedef struct filter filter_t;

/* Swappable holder of the current filter, shared by one config thread and any number of
 * evaluating threads (filter.h: filter_slot_*). */
typedef struct filter_slot filter_slot_t;

/* ---- Operator interface (implemented once per operator in services/filter/filter_op_<name>.c)
 * ---- */

/* Where a predicate finds its field, resolved once at compile time. */
typedef enum filter_field_kind {
    FILTER_FIELD_META = 0, /* a known '@' field: msg->meta[index] */
    FILTER_FIELD_EXT,      /* an '@' name this codec version does not know: msg->ext[] */
    FILTER_FIELD_METHOD,   /* ":method" (msg->method) */
    FILTER_FIELD_PATH,     /* ":path" (msg->path) */
    FILTER_FIELD_HTTP,     /* any other HTTP field: msg->http[], name case-insensitive */
} filter_field_kind_t;

typedef struct filter_field {
    filter_field_kind_t kind;
    codec_meta_t meta; /* FILTER_FIELD_META */
    char *name;        /* as written in the rule, lowercased for HTTP names */
    size_t name_len;
} filter_field_t;

/* A number parsed from text: integers stay exact in int64, anything else is a double. */
typedef struct filter_number {
    bool is_int;
    int64_t i;
    double d;
} filter_number_t;

typedef struct filter_pred filter_pred_t;

/* What an operator's JSON "value" must be; checked by the engine before compile(). */
typedef enum filter_operand {
    FILTER_OPERAND_NONE = 0, /* no "value" key allowed (exists, absent) */
    FILTER_OPERAND_STRING,   /* a string */
    FILTER_OPERAND_STRINGS,  /* a non-empty array of strings */
    FILTER_OPERAND_NUMBER,   /* a number, or a string holding a decimal number */
    FILTER_OPERAND_NUMBER2,  /* an array [low, high] of such numbers */
} filter_operand_t;

typedef struct filter_op {
    const char *name;         /* as written in JSON "op" */
    filter_operand_t operand; /* shape of "value" */
    bool icase_allowed;       /* accepts "icase": true */
    /* Pre-parses the operand into p->u. On error writes the problem (without the location,
     * which the engine prepends) to err and returns -1. */
    int (*compile)(filter_pred_t *p, const struct json_t *value, char *err, size_t errlen);
    /* v.ptr == NULL when the field is absent. Must not allocate. */
    bool (*match)(const filter_pred_t *p, codec_slice_t v);
    void (*destroy)(filter_pred_t *p); /* may be NULL */
} filter_op_t;

struct filter_pred {
    const filter_op_t *op;
    filter_field_t field;
    bool icase;
    union {
        struct {
            char *s; /* lowercased when icase */
            size_t len;
        } str;
        struct {
            codec_slice_t *v; /* sorted by (length, bytes); lowercased when icase */
            size_t n;
            char *storage;
        } set;
        struct {
            void *code; /* pcre2_code (filter_op_regex.c) */
        } rx;
        struct {
            filter_number_t lo;   /* the operand of lt/le/gt/ge; low bound of between */
            filter_number_t hi;   /* high bound of between */
            uint8_t lo_ok, hi_ok; /* outcomes that match (filter_op_compare.c) */
        } num;
    } u;
};

#endif
