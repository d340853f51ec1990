/* Loader of the message-copy test vectors (format: docs/message-format.md, "Test vectors"). */
#include "vectors.h"

#include <ctype.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>

/* Vectors may ask for a body larger than any sensible file ("value_repeat"); this bounds
 * what a broken vector can make a test allocate. */
#define VECTORS_MAX_VALUE (64u << 20)

/* OpenSSL's decoder under RFC 4648's rules. EVP_DecodeBlock takes only whole 4-character
 * groups, counts the padding's zero bytes in its result and skips blanks at both ends, so:
 * the alphabet is checked here (no blanks, '=' only at the end), the padding is taken off and
 * a short last group re-padded in a small buffer, and the real byte count is returned. */
#define VECTORS_BASE64_DCHUNK ((size_t)4 << 20) /* a multiple of 4 */

long vectors_base64_decode(const char *s, size_t n, uint8_t *out, size_t cap)
{
    while (n > 0 && s[n - 1] == '=' && n % 4 != 1)
        n--;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '+' && s[i] != '/')
            return -1;
    size_t tail = n % 4, whole = n - tail;
    if (tail == 1 || whole / 4 * 3 + (tail ? tail - 1 : 0) > cap)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < whole;) {
        size_t k = whole - i < VECTORS_BASE64_DCHUNK ? whole - i : VECTORS_BASE64_DCHUNK;
        if (EVP_DecodeBlock(out + o, (const unsigned char *)s + i, (int)k) < 0)
            return -1;
        o += k / 4 * 3;
        i += k;
    }
    if (tail) {
        unsigned char group[4] = {'=', '=', '=', '='}, bytes[3];
        memcpy(group, s + whole, tail);
        if (EVP_DecodeBlock(bytes, group, 4) < 0)
            return -1;
        memcpy(out + o, bytes, tail - 1);
        o += tail - 1;
    }
    return (long)o;
}

static int verr(char *err, size_t errlen, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int verr(char *err, size_t errlen, const char *path, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(err, errlen, "%s: %s", path, msg);
    return -1;
}

static int load_value(json_t *root, vectors_record_t *v, const char *path, char *err, size_t errlen)
{
    json_t *text = json_object_get(root, "value");
    json_t *b64 = json_object_get(root, "value_base64");
    json_t *rep = json_object_get(root, "value_repeat");
    int given = (text && !json_is_null(text)) + (b64 != NULL) + (rep != NULL);
    if (given > 1)
        return verr(err, errlen, path, "more than one of value, value_base64, value_repeat");
    if (text && !json_is_null(text)) {
        if (!json_is_string(text))
            return verr(err, errlen, path, "\"value\" must be a string or null");
        v->value_len = json_string_length(text);
        v->value = malloc(v->value_len + 1);
        if (!v->value)
            return verr(err, errlen, path, "out of memory");
        memcpy(v->value, json_string_value(text), v->value_len);
    } else if (b64) {
        if (!json_is_string(b64))
            return verr(err, errlen, path, "\"value_base64\" must be a string");
        size_t n = json_string_length(b64);
        v->value = malloc(n / 4 * 3 + 4);
        if (!v->value)
            return verr(err, errlen, path, "out of memory");
        long len = vectors_base64_decode(json_string_value(b64), n, v->value, n / 4 * 3 + 4);
        if (len < 0)
            return verr(err, errlen, path, "\"value_base64\" is not base64");
        v->value_len = (size_t)len;
    } else if (rep) {
        json_t *t = json_object_get(rep, "text");
        json_t *c = json_object_get(rep, "count");
        if (!json_is_string(t) || json_string_length(t) == 0 || !json_is_integer(c) ||
            json_integer_value(c) < 0)
            return verr(err, errlen, path,
                        "\"value_repeat\" needs {\"text\": non-empty string, \"count\": n >= 0}");
        size_t tl = json_string_length(t);
        size_t count = (size_t)json_integer_value(c);
        if (count > VECTORS_MAX_VALUE / tl)
            return verr(err, errlen, path, "\"value_repeat\" larger than %u bytes",
                        VECTORS_MAX_VALUE);
        v->value_len = tl * count;
        v->value = malloc(v->value_len + 1);
        if (!v->value)
            return verr(err, errlen, path, "out of memory");
        for (size_t i = 0; i < count; i++)
            memcpy(v->value + i * tl, json_string_value(t), tl);
    } else {
        v->value = malloc(1);
        if (!v->value)
            return verr(err, errlen, path, "out of memory");
        v->value_len = 0;
    }
    return 0;
}

static int load_headers(json_t *root, vectors_record_t *v, const char *path, char *err,
                        size_t errlen)
{
    json_t *hs = json_object_get(root, "headers");
    if (!json_is_array(hs))
        return verr(err, errlen, path, "\"headers\" must be an array of [name, value]");
    v->headers = rd_kafka_headers_new(json_array_size(hs) ? json_array_size(hs) : 1);
    size_t i;
    json_t *h;
    json_array_foreach(hs, i, h)
    {
        json_t *name = json_array_get(h, 0);
        json_t *val = json_array_get(h, 1);
        if (!json_is_array(h) || json_array_size(h) != 2 || !json_is_string(name) ||
            !(json_is_string(val) || json_is_null(val)))
            return verr(err, errlen, path, "headers[%zu] must be [\"name\", \"value\" or null]", i);
        rd_kafka_resp_err_t e;
        if (json_is_null(val))
            e = rd_kafka_header_add(v->headers, json_string_value(name),
                                    (ssize_t)json_string_length(name), NULL, 0);
        else
            e = rd_kafka_header_add(v->headers, json_string_value(name),
                                    (ssize_t)json_string_length(name), json_string_value(val),
                                    (ssize_t)json_string_length(val));
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
            return verr(err, errlen, path, "headers[%zu]: %s", i, rd_kafka_err2str(e));
    }
    return 0;
}

static int load_expect(json_t *root, vectors_record_t *v, const char *path, char *err,
                       size_t errlen)
{
    json_t *ex = json_object_get(root, "expect");
    const char *result = json_string_value(json_object_get(ex, "result"));
    if (!result)
        return verr(err, errlen, path, "\"expect\" needs \"result\"");
    if (strcmp(result, "ok") == 0) {
        v->expect_ok = true;
        return 0;
    }
    if (strcmp(result, "error") != 0)
        return verr(err, errlen, path, "\"expect.result\" must be ok or error");
    const char *reason = json_string_value(json_object_get(ex, "reason"));
    const char *field = json_string_value(json_object_get(ex, "field"));
    if (!reason || !field)
        return verr(err, errlen, path, "an error expectation needs \"reason\" and \"field\"");
    snprintf(v->expect_reason, sizeof v->expect_reason, "%s", reason);
    snprintf(v->expect_field, sizeof v->expect_field, "%s", field);
    return 0;
}

int vectors_load(const char *path, vectors_record_t *v, char *err, size_t errlen)
{
    memset(v, 0, sizeof *v);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root)
        return verr(err, errlen, path, "line %d: %s", jerr.line, jerr.text);

    const char *base = strrchr(path, '/');
    snprintf(v->name, sizeof v->name, "%s", base ? base + 1 : path);
    int rc = -1;
    const char *desc = json_string_value(json_object_get(root, "description"));
    json_t *key = json_object_get(root, "key");
    if (!json_is_object(root)) {
        verr(err, errlen, path, "not a JSON object");
    } else if (!desc) {
        verr(err, errlen, path, "\"description\" must be a string");
    } else if (!key || !(json_is_string(key) || json_is_null(key))) {
        verr(err, errlen, path, "\"key\" must be a string or null");
    } else if ((v->description = strdup(desc)) == NULL) {
        verr(err, errlen, path, "out of memory");
    } else if (json_is_string(key) &&
               (v->key = strndup(json_string_value(key), json_string_length(key))) == NULL) {
        verr(err, errlen, path, "out of memory");
    } else if (load_value(root, v, path, err, errlen) == 0 &&
               load_headers(root, v, path, err, errlen) == 0 &&
               load_expect(root, v, path, err, errlen) == 0) {
        if (v->key)
            v->key_len = json_string_length(key);
        rc = 0;
    }
    json_decref(root);
    if (rc != 0)
        vectors_free(v);
    return rc;
}

void vectors_free(vectors_record_t *v)
{
    free(v->description);
    free(v->key);
    free(v->value);
    if (v->headers)
        rd_kafka_headers_destroy(v->headers);
    memset(v, 0, sizeof *v);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int vectors_list(const char *dir, char ***paths, size_t *n)
{
    *paths = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    size_t cap = 0;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 32;
            char **grown = realloc(*paths, cap * sizeof **paths);
            if (!grown) {
                rc = -1;
                break;
            }
            *paths = grown;
        }
        char *full = NULL;
        if (asprintf(&full, "%s/%s", dir, e->d_name) < 0) {
            rc = -1;
            break;
        }
        (*paths)[(*n)++] = full;
    }
    closedir(d);
    if (rc != 0) {
        vectors_list_free(*paths, *n);
        *paths = NULL;
        *n = 0;
        return -1;
    }
    if (*n)
        qsort(*paths, *n, sizeof **paths, cmp_str);
    return 0;
}

void vectors_list_free(char **paths, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
}

const char *vectors_dir(const char *sub, char *dst, size_t dstlen)
{
    snprintf(dst, dstlen, "%s/tests/vectors/%s", NDD_SOURCE_DIR, sub);
    return dst;
}
