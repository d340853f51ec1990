/* Egress encodings: every valid test vector through the JSON envelope and the binary frame,
 * checked field by field against the decoded copy and against golden files
 * (tests/unit/golden/encoding/<vector>.json|.frame.hex; NDD_UPDATE_GOLDEN=1 rewrites them),
 * plus batching, bounds and the JSON validator. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "codec.h"
#include "encoding.h"
#include "frame.h"
#include "vectors.h"

#define GOLDEN_DIR NDD_SOURCE_DIR "/tests/unit/golden/encoding"

static int slice_eq_str(codec_slice_t s, const char *str)
{
    size_t n = strlen(str);
    return s.len == n && (n == 0 || memcmp(s.ptr, str, n) == 0);
}

static int slice_eq(codec_slice_t a, codec_slice_t b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

/* Checks one JSON envelope against the decoded copy it came from. */
static void check_envelope(json_t *env, const codec_msg_t *m, const char *vname)
{
    json_t *meta = json_object_get(env, "metadata");
    assert_true(json_is_object(meta));
    size_t expect_meta = m->n_ext;
    for (int i = 0; i < CODEC_META__COUNT; i++) {
        if (!m->meta[i].ptr)
            continue;
        expect_meta++;
        const char *name = codec_meta_name((codec_meta_t)i) + 1;
        json_t *v = json_object_get(meta, name);
        if (!v)
            fail_msg("%s: metadata %s missing", vname, name);
        char text[256];
        if (json_is_integer(v))
            snprintf(text, sizeof text, "%lld", (long long)json_integer_value(v));
        else if (json_is_string(v))
            snprintf(text, sizeof text, "%s", json_string_value(v));
        else
            fail_msg("%s: metadata %s neither number nor string", vname, name);
        if (!slice_eq_str(m->meta[i], text))
            fail_msg("%s: metadata %s is %s", vname, name, text);
        if (i == CODEC_META_TIMESTAMP || i == CODEC_META_SEQ)
            assert_true(json_is_integer(v));
    }
    for (size_t i = 0; i < m->n_ext; i++) {
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)m->ext[i].name.len - 1, m->ext[i].name.ptr + 1);
        json_t *v = json_object_get(meta, name);
        assert_true(json_is_string(v));
        assert_true(slice_eq_str(m->ext[i].value, json_string_value(v)));
    }
    assert_int_equal(json_object_size(meta), expect_meta);

    json_t *hdrs = json_object_get(env, "headers");
    assert_true(json_is_array(hdrs));
    assert_int_equal(json_array_size(hdrs), m->n_http);
    for (size_t i = 0; i < m->n_http; i++) {
        json_t *pair = json_array_get(hdrs, i);
        assert_int_equal(json_array_size(pair), 2);
        assert_true(slice_eq_str(m->http[i].name, json_string_value(json_array_get(pair, 0))));
        assert_true(slice_eq_str(m->http[i].value, json_string_value(json_array_get(pair, 1))));
    }

    json_t *key = json_object_get(env, "key");
    if (m->key.ptr)
        assert_true(json_is_string(key) && slice_eq_str(m->key, json_string_value(key)));
    else
        assert_true(json_is_null(key));

    json_t *body = json_object_get(env, "body");
    json_t *benc = json_object_get(env, "body_encoding");
    if (m->body.len == 0) {
        assert_true(json_is_null(body));
        assert_null(benc);
    } else if (benc) {
        assert_string_equal(json_string_value(benc), "base64");
        uint8_t *raw = malloc(m->body.len + 4);
        long n = vectors_base64_decode(json_string_value(body), json_string_length(body), raw,
                                       m->body.len + 4);
        assert_int_equal(n, (long)m->body.len);
        assert_memory_equal(raw, m->body.ptr, m->body.len);
        free(raw);
    } else {
        /* Embedded: the same JSON value as the body. */
        json_error_t je;
        json_t *orig = json_loadb(m->body.ptr, m->body.len, JSON_DECODE_ANY, &je);
        assert_non_null(orig);
        assert_true(json_equal(orig, body));
        json_decref(orig);
    }
}

static void check_frame_record(const frame_record_t *r, const codec_msg_t *m)
{
    assert_true(slice_eq(r->key, m->key));
    assert_true(slice_eq(r->body, m->body));
    size_t n = 0;
    for (int i = 0; i < CODEC_META__COUNT; i++) {
        if (!m->meta[i].ptr)
            continue;
        codec_slice_t v;
        assert_true(frame_record_header(r, codec_meta_name((codec_meta_t)i), &v));
        assert_true(slice_eq(v, m->meta[i]));
        n++;
    }
    /* HTTP fields and extensions in their order, after the metadata. */
    frame_header_iter_t it;
    codec_slice_t name, value;
    frame_headers(r, &it);
    for (size_t i = 0; i < n; i++)
        assert_true(frame_header_next(&it, &name, &value));
    for (size_t i = 0; i < m->n_http; i++) {
        assert_true(frame_header_next(&it, &name, &value));
        assert_true(slice_eq(name, m->http[i].name));
        assert_true(slice_eq(value, m->http[i].value));
    }
    for (size_t i = 0; i < m->n_ext; i++) {
        assert_true(frame_header_next(&it, &name, &value));
        assert_true(slice_eq(name, m->ext[i].name));
        assert_true(slice_eq(value, m->ext[i].value));
    }
    assert_false(frame_header_next(&it, &name, &value));
    assert_int_equal(r->header_count, n + m->n_http + m->n_ext);
}

/* Compares bytes with a golden file, or writes it when NDD_UPDATE_GOLDEN is set. */
static void check_golden(const char *vname, const char *ext, const uint8_t *p, size_t n, int as_hex)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.%s", GOLDEN_DIR, vname, ext);
    buf_t want;
    buf_init(&want, 0, 64u << 20);
    if (as_hex) {
        for (size_t i = 0; i < n; i++)
            buf_printf(&want, "%02x%s", p[i], (i % 32 == 31 || i + 1 == n) ? "\n" : "");
    } else {
        buf_append(&want, p, n);
        buf_append_u8(&want, '\n');
    }
    const char *upd = getenv("NDD_UPDATE_GOLDEN");
    if (upd && *upd == '1') {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        fwrite(want.data, 1, want.len, f);
        fclose(f);
        buf_free(&want);
        return;
    }
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("golden file %s missing (NDD_UPDATE_GOLDEN=1 writes it)", path);
    char *got = malloc(want.len + 2);
    size_t r = fread(got, 1, want.len + 1, f);
    fclose(f);
    if (r != want.len || memcmp(got, want.data, want.len) != 0)
        fail_msg("%s differs from the encoder output", path);
    free(got);
    buf_free(&want);
}

typedef struct loaded {
    vectors_record_t v;
    codec_msg_t m;
} loaded_t;

static loaded_t *load_valid(size_t *count)
{
    char dir[1024], err[256];
    char **paths;
    size_t n;
    vectors_dir("valid", dir, sizeof dir);
    if (vectors_list(dir, &paths, &n) != 0 || n == 0)
        fail_msg("no vectors in %s", dir);
    loaded_t *l = calloc(n, sizeof *l);
    for (size_t i = 0; i < n; i++) {
        if (vectors_load(paths[i], &l[i].v, err, sizeof err) != 0)
            fail_msg("%s", err);
        codec_error_t ce;
        codec_reason_t rc = codec_decode_parts(&l[i].m, l[i].v.key, l[i].v.key_len, l[i].v.value,
                                               l[i].v.value_len, l[i].v.headers, &ce);
        if (rc != CODEC_OK)
            fail_msg("%s: %s %s", l[i].v.name, ce.field, ce.detail);
    }
    vectors_list_free(paths, n);
    *count = n;
    return l;
}

static void free_loaded(loaded_t *l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        vectors_free(&l[i].v);
    free(l);
}

static void strip_ext(char *name)
{
    char *dot = strrchr(name, '.');
    if (dot)
        *dot = '\0';
}

static void test_json_envelope_of_every_valid_vector(void **state)
{
    size_t n;
    loaded_t *l = load_valid(&n);
    buf_t out;
    buf_init(&out, 0, 8u << 20);
    size_t embedded = 0, base64 = 0;
    for (size_t i = 0; i < n; i++) {
        encoding_batch_t b;
        buf_reset(&out);
        assert_int_equal(encoding_json.begin_batch(&b, &out, 1), ENCODING_OK);
        assert_int_equal(encoding_json.add(&b, &l[i].m), ENCODING_OK);
        assert_int_equal(encoding_json.end_batch(&b), ENCODING_OK);
        assert_true(encoding_json_valid(out.data, out.len));
        json_error_t je;
        json_t *env = json_loadb((const char *)out.data, out.len, 0, &je);
        if (!env)
            fail_msg("%s: output is not JSON: %s", l[i].v.name, je.text);
        assert_true(json_is_object(env));
        check_envelope(env, &l[i].m, l[i].v.name);
        if (json_object_get(env, "body_encoding"))
            base64++;
        else if (l[i].m.body.len)
            embedded++;
        json_decref(env);
        char name[128];
        snprintf(name, sizeof name, "%s", l[i].v.name);
        strip_ext(name);
        check_golden(name, "json", out.data, out.len, 0);
    }
    /* The vectors exercise both body forms. */
    assert_true(embedded > 0);
    assert_true(base64 > 0);
    buf_free(&out);
    free_loaded(l, n);
}

static void test_frame_of_every_valid_vector(void **state)
{
    size_t n;
    loaded_t *l = load_valid(&n);
    buf_t out;
    buf_init(&out, 0, 16u << 20);
    /* One frame per vector (golden), then all of them in one batch. */
    for (size_t i = 0; i < n; i++) {
        encoding_batch_t b;
        buf_reset(&out);
        assert_int_equal(encoding_frame.begin_batch(&b, &out, 1), ENCODING_OK);
        assert_int_equal(encoding_frame.add(&b, &l[i].m), ENCODING_OK);
        assert_int_equal(encoding_frame.add(&b, &l[i].m), ENCODING_FULL);
        assert_int_equal(encoding_frame.end_batch(&b), ENCODING_OK);
        char name[128];
        snprintf(name, sizeof name, "%s", l[i].v.name);
        strip_ext(name);
        check_golden(name, "frame.hex", out.data, out.len, 1);
    }
    buf_reset(&out);
    encoding_batch_t b;
    assert_int_equal(encoding_frame.begin_batch(&b, &out, 0), ENCODING_OK);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(encoding_frame.add(&b, &l[i].m), ENCODING_OK);
    assert_int_equal(encoding_frame.end_batch(&b), ENCODING_OK);
    frame_parser_t p;
    frame_t f;
    size_t used;
    frame_parser_init(&p, 0, true);
    assert_int_equal(frame_parse(&p, out.data, out.len, &f, &used), FRAME_OK);
    assert_int_equal(used, out.len);
    assert_int_equal(f.record_count, n);
    assert_int_equal(f.hdr.flags & FRAME_FLAG_ACK_REQUESTED, FRAME_FLAG_ACK_REQUESTED);
    frame_record_iter_t it;
    frame_record_t r;
    frame_records(&f, &it);
    for (size_t i = 0; i < n; i++) {
        assert_true(frame_record_next(&it, &r));
        check_frame_record(&r, &l[i].m);
    }
    assert_false(frame_record_next(&it, &r));
    buf_free(&out);
    free_loaded(l, n);
}

/* A hand-made copy for the cases the vectors do not pin down. */
static void make_msg(codec_msg_t *m, const char *ctype, const char *body, size_t body_len,
                     const char *seq)
{
    memset(m, 0, sizeof *m);
    m->key = (codec_slice_t){"cid-1", 5};
    m->meta[CODEC_META_CORRELATION_ID] = (codec_slice_t){"cid-1", 5};
    m->meta[CODEC_META_TIMESTAMP] = (codec_slice_t){"1764486000000000", 16};
    m->meta[CODEC_META_SEQ] = (codec_slice_t){seq, strlen(seq)};
    m->n_http = 1;
    m->http[0].name = (codec_slice_t){"content-type", 12};
    m->http[0].value = (codec_slice_t){ctype, strlen(ctype)};
    m->body = (codec_slice_t){body, body_len};
}

static void test_json_body_forms(void **state)
{
    buf_t out;
    codec_msg_t m;
    buf_init(&out, 0, 1 << 16);

    make_msg(&m, "application/problem+json; charset=utf-8", "{\"status\":503}", 14, "7");
    assert_int_equal(encoding_json_envelope(&out, &m), 0);
    buf_append_u8(&out, 0);
    assert_string_equal((const char *)out.data,
                        "{\"metadata\":{\"correlation-id\":\"cid-1\",\"timestamp-us\":"
                        "1764486000000000,\"seq\":7},\"headers\":[[\"content-type\","
                        "\"application/problem+json; charset=utf-8\"]],\"key\":\"cid-1\","
                        "\"body\":{\"status\":503}}");

    /* Says JSON but is not: base64, never broken output. */
    buf_reset(&out);
    make_msg(&m, "application/json", "{\"a\":", 5, "8");
    assert_int_equal(encoding_json_envelope(&out, &m), 0);
    buf_append_u8(&out, 0);
    assert_non_null(
        strstr((const char *)out.data, "\"body\":\"eyJhIjo=\",\"body_encoding\":\"base64\""));

    /* Not JSON by content type: base64 even when the bytes parse. */
    buf_reset(&out);
    make_msg(&m, "text/plain", "123", 3, "9");
    assert_int_equal(encoding_json_envelope(&out, &m), 0);
    buf_append_u8(&out, 0);
    assert_non_null(
        strstr((const char *)out.data, "\"body\":\"MTIz\",\"body_encoding\":\"base64\""));

    /* A non-numeric @seq stays a string rather than producing invalid JSON. */
    buf_reset(&out);
    make_msg(&m, "text/plain", "", 0, "12x");
    assert_int_equal(encoding_json_envelope(&out, &m), 0);
    buf_append_u8(&out, 0);
    assert_non_null(strstr((const char *)out.data, "\"seq\":\"12x\""));
    assert_non_null(strstr((const char *)out.data, "\"body\":null}"));

    /* An xDR record: body embedded by the @record-type marker. */
    buf_reset(&out);
    make_msg(&m, "text/plain", "[1,2]", 5, "10");
    m.n_http = 0;
    m.n_ext = 1;
    m.ext[0].name = (codec_slice_t){"@record-type", 12};
    m.ext[0].value = (codec_slice_t){"xdr", 3};
    assert_int_equal(encoding_json_envelope(&out, &m), 0);
    buf_append_u8(&out, 0);
    assert_non_null(strstr((const char *)out.data, "\"record-type\":\"xdr\""));
    assert_non_null(strstr((const char *)out.data, "\"body\":[1,2]}"));
    buf_free(&out);
}

/* The envelope is one level of nesting: a body that fills our 64 levels on its own would make
 * an envelope our own check (and a consumer with the same limit) refuses, so it goes base64;
 * one level less is embedded. Found by fuzz_encoding_json. */
static void
test_json_body_one_level_short_of_the_limit_is_embedded_and_a_full_one_goes_base64(void **state)
{
    char body[2 * 64];
    buf_t out;
    codec_msg_t m;
    (void)state;
    buf_init(&out, 0, 1 << 16);
    for (int levels = 63; levels <= 64; levels++) {
        memset(body, '[', (size_t)levels);
        memset(body + levels, ']', (size_t)levels);
        assert_true(encoding_json_valid((const uint8_t *)body, 2 * (size_t)levels));
        buf_reset(&out);
        make_msg(&m, "application/json", body, 2 * (size_t)levels, "11");
        assert_int_equal(encoding_json_envelope(&out, &m), 0);
        assert_true(encoding_json_valid(out.data, out.len));
        buf_append_u8(&out, 0);
        int base64 = strstr((const char *)out.data, "\"body_encoding\":\"base64\"") != NULL;
        assert_int_equal(base64, levels == 64);
    }
    buf_free(&out);
}

static void test_json_batch_is_array_and_respects_count_and_bytes(void **state)
{
    buf_t out;
    codec_msg_t m;
    encoding_batch_t b;
    make_msg(&m, "application/json", "{\"x\":1}", 7, "1");
    buf_init(&out, 0, 1 << 16);
    assert_int_equal(encoding_json.begin_batch(&b, &out, 3), ENCODING_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(encoding_json.add(&b, &m), ENCODING_OK);
    assert_int_equal(encoding_json.add(&b, &m), ENCODING_FULL);
    assert_int_equal(encoding_json.end_batch(&b), ENCODING_OK);
    json_t *arr = json_loadb((const char *)out.data, out.len, 0, NULL);
    assert_true(json_is_array(arr));
    assert_int_equal(json_array_size(arr), 3);
    json_decref(arr);

    /* Byte limit: the message that does not fit is rolled back; the batch stays valid. */
    buf_t one;
    buf_init(&one, 0, 1 << 16);
    encoding_json_envelope(&one, &m);
    size_t env = one.len;
    buf_free(&one);
    buf_t small;
    buf_init(&small, 0, 1 + env + 1 + env + 1 + env / 2);
    assert_int_equal(encoding_json.begin_batch(&b, &small, 100), ENCODING_OK);
    assert_int_equal(encoding_json.add(&b, &m), ENCODING_OK);
    assert_int_equal(encoding_json.add(&b, &m), ENCODING_OK);
    size_t before = small.len;
    assert_int_equal(encoding_json.add(&b, &m), ENCODING_FULL);
    assert_int_equal(small.len, before);
    assert_int_equal(encoding_json.end_batch(&b), ENCODING_OK);
    assert_true(encoding_json_valid(small.data, small.len));
    assert_int_equal(b.count, 2);

    /* Nothing fits: too big for any batch. */
    buf_t tiny;
    buf_init(&tiny, 0, env / 2);
    assert_int_equal(encoding_json.begin_batch(&b, &tiny, 1), ENCODING_OK);
    assert_int_equal(encoding_json.add(&b, &m), ENCODING_TOO_BIG);
    assert_int_equal(encoding_json.end_batch(&b), ENCODING_ERROR);
    assert_int_equal(tiny.len, 0);

    /* An empty batch leaves nothing behind. */
    buf_reset(&out);
    assert_int_equal(encoding_json.begin_batch(&b, &out, 5), ENCODING_OK);
    assert_int_equal(encoding_json.end_batch(&b), ENCODING_ERROR);
    assert_int_equal(out.len, 0);
    buf_free(&tiny);
    buf_free(&small);
    buf_free(&out);
}

static void test_frame_batch_respects_bytes_and_too_big(void **state)
{
    buf_t out;
    codec_msg_t m;
    encoding_batch_t b;
    char body[1000];
    memset(body, 'b', sizeof body);
    make_msg(&m, "application/octet-stream", body, sizeof body, "1");
    buf_init(&out, 0, 2500);
    assert_int_equal(encoding_frame.begin_batch(&b, &out, 0), ENCODING_OK);
    assert_int_equal(encoding_frame.add(&b, &m), ENCODING_OK);
    assert_int_equal(encoding_frame.add(&b, &m), ENCODING_OK);
    assert_int_equal(encoding_frame.add(&b, &m), ENCODING_FULL);
    assert_int_equal(encoding_frame.end_batch(&b), ENCODING_OK);
    frame_parser_t p;
    frame_t f;
    size_t used;
    frame_parser_init(&p, 0, false);
    assert_int_equal(frame_parse(&p, out.data, out.len, &f, &used), FRAME_OK);
    assert_int_equal(f.record_count, 2);

    buf_t tiny;
    buf_init(&tiny, 0, 500);
    assert_int_equal(encoding_frame.begin_batch(&b, &tiny, 0), ENCODING_OK);
    assert_int_equal(encoding_frame.add(&b, &m), ENCODING_TOO_BIG);
    assert_int_equal(encoding_frame.end_batch(&b), ENCODING_ERROR);
    assert_int_equal(tiny.len, 0);
    buf_free(&tiny);
    buf_free(&out);
}

static void test_encoding_find_and_content_types(void **state)
{
    assert_ptr_equal(encoding_find("json"), &encoding_json);
    assert_ptr_equal(encoding_find("frame"), &encoding_frame);
    assert_null(encoding_find("xml"));
    assert_null(encoding_find(NULL));
    assert_string_equal(encoding_json.content_type, "application/json");
    assert_string_equal(encoding_frame.content_type, "application/vnd.ndd.frame");
}

static int valid_str(const char *s)
{
    return encoding_json_valid((const uint8_t *)s, strlen(s));
}

static void test_json_validator_accepts_rfc8259_and_rejects_the_rest(void **state)
{
    const char *good[] = {"{}",
                          "[]",
                          " {\"a\" : [1, -2.5e+3, true, false, null]} ",
                          "\"x\"",
                          "0",
                          "-0.0e0",
                          "\"\\u00e9\\n\\\"\"",
                          "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"",
                          "[[[[[]]]]]"};
    const char *bad[] = {"",
                         "{",
                         "{\"a\"}",
                         "{\"a\":1,}",
                         "[1,]",
                         "01",
                         "1.",
                         "-",
                         "+1",
                         "tru",
                         "nul",
                         "\"a",
                         "\"\\x\"",
                         "\"\\u12\"",
                         "{} {}",
                         "'a'",
                         "\"\x01\"",
                         "\"\xc3\"",
                         "\"\xc0\xaf\"",
                         "\"\xed\xa0\x80\"",
                         "\"\xf5\x80\x80\x80\"",
                         "NaN",
                         "[1 2]"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (!valid_str(good[i]))
            fail_msg("rejected valid JSON %s", good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (valid_str(bad[i]))
            fail_msg("accepted invalid JSON %s", bad[i]);
    /* Nesting is bounded (64): deeper input is refused instead of recursing on. */
    char deep[200];
    memset(deep, '[', 65);
    memset(deep + 65, ']', 65);
    deep[130] = '\0';
    assert_false(valid_str(deep));
    memset(deep, '[', 64);
    memset(deep + 64, ']', 64);
    deep[128] = '\0';
    assert_true(valid_str(deep));
}

/* Strings longer than 32 bytes are scanned past their first 32 bytes in wider steps: every
 * byte that ends a plain run (quote, backslash, control, non-ASCII) is still seen wherever it
 * sits in a long string, at each step's edges too. */
static void test_json_validator_long_strings(void **state)
{
    static const size_t at[] = {31, 32, 33, 47, 63, 64, 65, 95, 96, 100, 1000, 3396};
    char s[3410];
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        size_t n = 3400, k = at[i] + 1; /* the opening quote is byte 0 */
        memset(s, 'a', n);
        s[0] = '"';
        s[n - 1] = '"';
        s[n] = '\0';
        assert_true(valid_str(s));
        s[k] = '\\', s[k + 1] = '"'; /* an escaped quote */
        if (!valid_str(s))
            fail_msg("escaped quote at %zu refused", k);
        s[k] = 0x01, s[k + 1] = 'a'; /* a raw control character */
        if (valid_str(s))
            fail_msg("control character at %zu accepted", k);
        s[k] = (char)0xc3, s[k + 1] = (char)0xa9; /* U+00E9 */
        if (!valid_str(s))
            fail_msg("UTF-8 at %zu refused", k);
        s[k + 1] = 'a'; /* a lone lead byte */
        if (valid_str(s))
            fail_msg("broken UTF-8 at %zu accepted", k);
        s[k] = '"', s[k + 1] = 'a'; /* the string ends early, then garbage */
        if (valid_str(s))
            fail_msg("garbage after a quote at %zu accepted", k);
    }
    memset(s, 'a', 3400);
    s[0] = '"';
    s[3400] = '\0';
    assert_false(valid_str(s)); /* never closed */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_envelope_of_every_valid_vector),
        cmocka_unit_test(test_frame_of_every_valid_vector),
        cmocka_unit_test(test_json_body_forms),
        cmocka_unit_test(
            test_json_body_one_level_short_of_the_limit_is_embedded_and_a_full_one_goes_base64),
        cmocka_unit_test(test_json_batch_is_array_and_respects_count_and_bytes),
        cmocka_unit_test(test_frame_batch_respects_bytes_and_too_big),
        cmocka_unit_test(test_encoding_find_and_content_types),
        cmocka_unit_test(test_json_validator_accepts_rfc8259_and_rejects_the_rest),
        cmocka_unit_test(test_json_validator_long_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
