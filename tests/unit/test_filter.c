/* Filter engine: every operator, the combinators, rule order, and the compile errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "codec.h"
#include "filter.h"

static void msg_http(codec_msg_t *m, const char *name, const char *value)
{
    codec_header_t *h = &m->http[m->n_http++];
    h->name = (codec_slice_t){name, strlen(name)};
    h->value = (codec_slice_t){value, strlen(value)};
    if (strcmp(name, ":method") == 0)
        m->method = h->value;
    if (strcmp(name, ":path") == 0)
        m->path = h->value;
}

static void msg_meta(codec_msg_t *m, codec_meta_t k, const char *value)
{
    m->meta[k] = (codec_slice_t){value, strlen(value)};
}

/* An NRF heartbeat request as an SCP copies it. */
static void msg_request(codec_msg_t *m)
{
    memset(m, 0, sizeof *m);
    msg_meta(m, CODEC_META_CORRELATION_ID, "c0ffee-0001");
    msg_meta(m, CODEC_META_TIMESTAMP, "1764484033123456");
    msg_meta(m, CODEC_META_MESSAGE_TYPE, "request");
    msg_meta(m, CODEC_META_TRIGGER_POINT, "rx-request");
    msg_meta(m, CODEC_META_NF_TYPE, "SCP");
    msg_http(m, ":method", "PATCH");
    msg_http(m, ":path", "/nnrf-nfm/v1/nf-instances/5a7bc7d0-97f5-4ed1-a5e0-1c1e3e2b1a11");
    msg_http(m, "content-type", "application/json-patch+json");
    msg_http(m, "user-agent", "SMF-smf01.operator.com");
    m->key = m->meta[CODEC_META_CORRELATION_ID];
    m->type = CODEC_MSG_REQUEST;
}

static void msg_response(codec_msg_t *m, const char *status)
{
    memset(m, 0, sizeof *m);
    msg_meta(m, CODEC_META_CORRELATION_ID, "c0ffee-0002");
    msg_meta(m, CODEC_META_TIMESTAMP, "1764484033200000");
    msg_meta(m, CODEC_META_MESSAGE_TYPE, "response");
    msg_meta(m, CODEC_META_NF_TYPE, "NRF");
    msg_http(m, ":status", status);
    msg_http(m, "content-type", "application/problem+json");
    m->type = CODEC_MSG_RESPONSE;
}

static filter_t *compile_ok(const char *json)
{
    char err[512];
    filter_t *f = filter_compile_text(json, strlen(json), err, sizeof err);
    if (!f)
        fail_msg("compile failed: %s\nfor %s", err, json);
    return f;
}

/* True when `expr` (a match expression) matches m. */
static bool matches(const char *expr, const codec_msg_t *m)
{
    char json[4096];
    snprintf(json, sizeof json,
             "{\"name\":\"t\",\"default\":\"allow\",\"rules\":[{\"name\":\"r\",\"action\":"
             "\"drop\",\"match\":%s}]}",
             expr);
    filter_t *f = compile_ok(json);
    int rule = 99;
    filter_action_t a = filter_eval(f, m, &rule);
    assert_int_equal(rule, a == FILTER_DROP ? 0 : FILTER_RULE_DEFAULT);
    filter_release(f);
    return a == FILTER_DROP;
}

/* The compile error for `json`, which must be refused. */
static const char *compile_error(const char *json)
{
    static char err[512];
    filter_t *f = filter_compile_text(json, strlen(json), err, sizeof err);
    if (f) {
        filter_release(f);
        fail_msg("accepted but should be refused: %s", json);
    }
    assert_true(err[0] != '\0');
    return err;
}

#define RULE1(expr)                                                                                \
    "{\"name\":\"t\",\"default\":\"allow\",\"rules\":[{\"name\":\"r1\",\"action\":\"drop\","       \
    "\"match\":" expr "}]}"

static void test_equals_matches_exact_value_only(void **state)
{
    codec_msg_t m;
    msg_request(&m);
    assert_true(matches("{\"field\":\":method\",\"op\":\"equals\",\"value\":\"PATCH\"}", &m));
    assert_false(matches("{\"field\":\":method\",\"op\":\"equals\",\"value\":\"patch\"}", &m));
    assert_false(matches("{\"field\":\":method\",\"op\":\"equals\",\"value\":\"PATC\"}", &m));
    assert_true(matches("{\"field\":\"@nf-type\",\"op\":\"equals\",\"value\":\"SCP\"}", &m));
    assert_false(matches("{\"field\":\":status\",\"op\":\"equals\",\"value\":\"200\"}", &m));
}

static void test_equals_icase_ignores_ascii_case(void **state)
{
    codec_msg_t m;
    msg_request(&m);
    assert_true(matches(
        "{\"field\":\":method\",\"op\":\"equals\",\"value\":\"patch\",\"icase\":true}", &m));
    assert_true(
        matches("{\"field\":\"@nf-type\",\"op\":\"equals\",\"value\":\"scp\",\"icase\":true}", &m));
    assert_false(
        matches("{\"field\":\":method\",\"op\":\"equals\",\"value\":\"put\",\"icase\":true}", &m));
}

static void test_not_equals_is_false_for_absent_field(void **state)
{
    codec_msg_t m;
    msg_request(&m);
    assert_true(matches("{\"field\":\":method\",\"op\":\"not-equals\",\"value\":\"GET\"}", &m));
    assert_false(matches("{\"field\":\":method\",\"op\":\"not-equals\",\"value\":\"PATCH\"}", &m));
    assert_false(matches(
        "{\"field\":\":method\",\"op\":\"not-equals\",\"value\":\"Patch\",\"icase\":true}", &m));
    assert_false(matches("{\"field\":\"x-missing\",\"op\":\"not-equals\",\"value\":\"GET\"}", &m));
    assert_true(
        matches("{\"not\":{\"field\":\"x-missing\",\"op\":\"equals\",\"value\":\"GET\"}}", &m));
}

static void test_one_of_matches_any_listed_value(void **state)
{
    codec_msg_t m;
    msg_request(&m);
    assert_true(matches("{\"field\":\":method\",\"op\":\"one-of\",\"value\":[\"GET\",\"PUT\","
                        "\"PATCH\",\"DELETE\",\"POST\"]}",
                        &m));
    assert_false(matches("{\"field\":\":method\",\"op\":\"one-of\",\"value\":[\"GET\",\"PUT\","
                         "\"DELETE\",\"POST\",\"PATCHES\",\"patch\"]}",
                         &m));
    assert_true(matches("{\"field\":\":method\",\"op\":\"one-of\",\"value\":[\"get\",\"patch\"],"
                        "\"icase\":true}",
                        &m));
    assert_false(matches("{\"field\":\"x-missing\",\"op\":\"one-of\",\"value\":[\"\"]}", &m));

    /* A long list: every element is found, a near miss is not. */
    char expr[3000];
    size_t o = (size_t)snprintf(expr, sizeof expr,
                                "{\"field\":\"@nf-type\",\"op\":\"one-of\",\"value\":[");
    for (int i = 0; i < 100; i++)
        o += (size_t)snprintf(expr + o, sizeof expr - o, "%s\"NF%d\"", i ? "," : "", i * 7);
    snprintf(expr + o, sizeof expr - o, "]}");
    codec_msg_t n;
    msg_request(&n);
    for (int i = 0; i < 100; i++) {
        char v[16];
        snprintf(v, sizeof v, "NF%d", i * 7);
        msg_meta(&n, CODEC_META_NF_TYPE, v);
        assert_true(matches(expr, &n));
    }
    msg_meta(&n, CODEC_META_NF_TYPE, "NF8");
    assert_false(matches(expr, &n));
}

static void test_prefix_suffix_contains(void **state)
{
    codec_msg_t m;
    msg_request(&m);
    assert_true(matches("{\"field\":\":path\",\"op\":\"prefix\",\"value\":\"/nnrf-nfm/v1/\"}", &m));
    assert_false(matches("{\"field\":\":path\",\"op\":\"prefix\",\"value\":\"/nudm-sdm/\"}", &m));
    assert_true(matches(
        "{\"field\":\":path\",\"op\":\"prefix\",\"value\":\"/NNRF-NFM\",\"icase\":true}", &m));
    assert_true(matches("{\"field\":\":path\",\"op\":\"suffix\",\"value\":\"1c1e3e2b1a11\"}", &m));
    assert_false(matches("{\"field\":\":path\",\"op\":\"suffix\",\"value\":\"1c1e3e2b1a1\"}", &m));
    assert_true(matches(
        "{\"field\":\"content-type\",\"op\":\"suffix\",\"value\":\"+JSON\",\"icase\":true}", &m));
    assert_true(matches("{\"field\":\"user-agent\",\"op\":\"contains\",\"value\":\"smf01\"}", &m));
    assert_false(matches("{\"field\":\"user-agent\",\"op\":\"contains\",\"value\":\"SMF01\"}", &m));
    assert_true(matches(
        "{\"field\":\"user-agent\",\"op\":\"contains\",\"value\":\"SMF01.\",\"icase\":true}", &m));
    assert_true(matches("{\"field\":\"user-agent\",\"op\":\"contains\",\"value\":\"\"}", &m));
    assert_false(matches("{\"field\":\"x-missing\",\"op\":\"contains\",\"value\":\"\"}", &m));
    /* Longer operand than the value never matches (no read past the slice). */
    assert_false(matches("{\"field\":\":method\",\"op\":\"prefix\",\"value\":\"PATCHX\"}", &m));
    assert_false(matches("{\"field\":\":method\",\"op\":\"suffix\",\"value\":\"XPATCH\"}", &m));
}

static void test_regex_matches_slice_without_terminator(void **state)
{
    codec_msg_t m;
    msg_request(&m);
    /* The value is "GET" inside a longer buffer: REG_STARTEND must stop at the slice end. */
    static const char buf[] = "GETTING";
    m.http[0].value = (codec_slice_t){buf, 3};
    m.method = m.http[0].value;
    assert_true(matches("{\"field\":\":method\",\"op\":\"regex\",\"value\":\"^GET$\"}", &m));
    assert_false(matches("{\"field\":\":method\",\"op\":\"regex\",\"value\":\"TING\"}", &m));
    assert_true(matches("{\"field\":\":path\",\"op\":\"regex\",\"value\":"
                        "\"^/nnrf-nfm/v[0-9]+/nf-instances/[0-9a-f-]{36}$\"}",
                        &m));
    assert_true(matches(
        "{\"field\":\":path\",\"op\":\"regex\",\"value\":\"NF-INSTANCES\",\"icase\":true}", &m));
    assert_false(matches("{\"field\":\":path\",\"op\":\"regex\",\"value\":\"NF-INSTANCES\"}", &m));
    assert_false(matches("{\"field\":\"x-missing\",\"op\":\"regex\",\"value\":\".*\"}", &m));
}

static void test_numeric_compare_on_status_and_timestamp(void **state)
{
    codec_msg_t m;
    msg_response(&m, "404");
    assert_true(matches("{\"field\":\":status\",\"op\":\"ge\",\"value\":400}", &m));
    assert_true(matches("{\"field\":\":status\",\"op\":\"ge\",\"value\":404}", &m));
    assert_false(matches("{\"field\":\":status\",\"op\":\"gt\",\"value\":404}", &m));
    assert_true(matches("{\"field\":\":status\",\"op\":\"gt\",\"value\":403.5}", &m));
    assert_true(matches("{\"field\":\":status\",\"op\":\"lt\",\"value\":\"500\"}", &m));
    assert_true(matches("{\"field\":\":status\",\"op\":\"le\",\"value\":404}", &m));
    assert_false(matches("{\"field\":\":status\",\"op\":\"le\",\"value\":403}", &m));
    assert_true(matches("{\"field\":\":status\",\"op\":\"between\",\"value\":[400,499]}", &m));
    assert_true(matches("{\"field\":\":status\",\"op\":\"between\",\"value\":[404,404]}", &m));
    assert_false(matches("{\"field\":\":status\",\"op\":\"between\",\"value\":[500,599]}", &m));
    /* Microsecond timestamps beyond 2^53 compare exactly as integers. */
    assert_true(
        matches("{\"field\":\"@timestamp-us\",\"op\":\"gt\",\"value\":1764484033199999}", &m));
    assert_false(
        matches("{\"field\":\"@timestamp-us\",\"op\":\"gt\",\"value\":1764484033200000}", &m));
    msg_meta(&m, CODEC_META_SEQ, "9007199254740993"); /* 2^53 + 1 */
    assert_true(matches("{\"field\":\"@seq\",\"op\":\"gt\",\"value\":9007199254740992}", &m));
    /* Text that is not a number never matches, whatever the comparison. */
    assert_false(matches("{\"field\":\"@nf-type\",\"op\":\"lt\",\"value\":1e30}", &m));
    assert_false(matches("{\"field\":\"@nf-type\",\"op\":\"ge\",\"value\":-1e30}", &m));
    msg_response(&m, "20x");
    assert_false(matches("{\"field\":\":status\",\"op\":\"ge\",\"value\":0}", &m));
    msg_response(&m, "");
    assert_false(matches("{\"field\":\":status\",\"op\":\"ge\",\"value\":0}", &m));
}

static void test_number_parse_is_strict(void **state)
{
    filter_number_t n;
    assert_true(filter_number_parse("-12", 3, &n));
    assert_true(n.is_int);
    assert_int_equal(n.i, -12);
    assert_true(filter_number_parse("1.5e3", 5, &n));
    assert_false(n.is_int);
    assert_true(n.d == 1500.0);
    assert_true(filter_number_parse(".5", 2, &n));
    assert_false(filter_number_parse("", 0, &n));
    assert_false(filter_number_parse("-", 1, &n));
    assert_false(filter_number_parse(" 1", 2, &n));
    assert_false(filter_number_parse("1 ", 2, &n));
    assert_false(filter_number_parse("0x10", 4, &n));
    assert_false(filter_number_parse("1e", 2, &n));
    assert_false(filter_number_parse("nan", 3, &n));
    assert_false(filter_number_parse("inf", 3, &n));
    assert_false(filter_number_parse("1e999", 5, &n));
    assert_true(filter_number_parse("99999999999999999999", 20, &n)); /* beyond int64 */
    assert_false(n.is_int);
}

static void test_exists_and_absent(void **state)
{
    codec_msg_t m;
    msg_request(&m);
    assert_true(matches("{\"field\":\"user-agent\",\"op\":\"exists\"}", &m));
    assert_false(matches("{\"field\":\"user-agent\",\"op\":\"absent\"}", &m));
    assert_false(matches("{\"field\":\":status\",\"op\":\"exists\"}", &m));
    assert_true(matches("{\"field\":\":status\",\"op\":\"absent\"}", &m));
    assert_true(matches("{\"field\":\"@hop-id\",\"op\":\"absent\"}", &m));
    msg_meta(&m, CODEC_META_HOP_ID, ""); /* present but empty still exists */
    assert_true(matches("{\"field\":\"@hop-id\",\"op\":\"exists\"}", &m));
}

static void test_http_field_names_are_case_insensitive(void **state)
{
    codec_msg_t m;
    msg_request(&m);
    m.http[2].name = (codec_slice_t){"Content-Type", 12};
    assert_true(
        matches("{\"field\":\"content-type\",\"op\":\"prefix\",\"value\":\"application/\"}", &m));
    assert_true(matches("{\"field\":\"CONTENT-TYPE\",\"op\":\"exists\"}", &m));
}

static void test_method_and_path_found_without_parsed_shortcuts(void **state)
{
    codec_msg_t m;
    msg_request(&m);
    m.method = (codec_slice_t){NULL, 0};
    m.path = (codec_slice_t){NULL, 0};
    assert_true(matches("{\"field\":\":method\",\"op\":\"equals\",\"value\":\"PATCH\"}", &m));
    assert_true(
        matches("{\"field\":\":path\",\"op\":\"contains\",\"value\":\"nf-instances\"}", &m));
}

static void test_extension_metadata_field_is_found(void **state)
{
    codec_msg_t m;
    msg_request(&m);
    m.ext[0].name = (codec_slice_t){"@x-site", 7};
    m.ext[0].value = (codec_slice_t){"paris-1", 7};
    m.n_ext = 1;
    assert_true(matches("{\"field\":\"@x-site\",\"op\":\"prefix\",\"value\":\"paris\"}", &m));
    assert_false(matches("{\"field\":\"@x-other\",\"op\":\"exists\"}", &m));
}

static void test_all_any_not_combinators(void **state)
{
    codec_msg_t m;
    msg_request(&m);
    const char *t = "{\"field\":\":method\",\"op\":\"equals\",\"value\":\"PATCH\"}";
    const char *f = "{\"field\":\":method\",\"op\":\"equals\",\"value\":\"GET\"}";
    char e[1024];
    snprintf(e, sizeof e, "{\"all\":[%s,%s]}", t, t);
    assert_true(matches(e, &m));
    snprintf(e, sizeof e, "{\"all\":[%s,%s]}", t, f);
    assert_false(matches(e, &m));
    snprintf(e, sizeof e, "{\"any\":[%s,%s]}", f, t);
    assert_true(matches(e, &m));
    snprintf(e, sizeof e, "{\"any\":[%s,%s]}", f, f);
    assert_false(matches(e, &m));
    snprintf(e, sizeof e, "{\"not\":%s}", f);
    assert_true(matches(e, &m));
    snprintf(e, sizeof e, "{\"not\":{\"any\":[%s,{\"not\":%s}]}}", f, t);
    assert_true(matches(e, &m));
    snprintf(e, sizeof e, "{\"all\":[{\"any\":[%s,%s]},{\"not\":{\"all\":[%s,%s]}}]}", f, t, t, f);
    assert_true(matches(e, &m));
}

static void test_nesting_up_to_the_depth_limit_compiles(void **state)
{
    codec_msg_t m;
    msg_request(&m);
    /* The match root is level 0; each "not" adds one: 8 of them is the deepest allowed. */
    char e[2048] = "{\"field\":\":method\",\"op\":\"exists\"}";
    for (int i = 0; i < FILTER_MAX_DEPTH; i++) {
        char w[2048];
        snprintf(w, sizeof w, i == 3 ? "{\"all\":[{\"any\":[%s]}]}" : "{\"not\":%s}", e);
        strcpy(e, w);
        if (i == 3)
            i++; /* all + any = two levels */
    }
    assert_true(matches(e, &m));
    char deeper[2100];
    snprintf(deeper, sizeof deeper, "{\"not\":%s}", e);
    char json[2300];
    snprintf(json, sizeof json, RULE1("%s"), deeper);
    assert_non_null(strstr(compile_error(json), "nested deeper than 8 levels"));
}

static void test_first_matching_rule_decides_and_hits_are_counted(void **state)
{
    filter_t *f = compile_ok(
        "{\"name\":\"order\",\"default\":\"drop\",\"rules\":["
        "{\"name\":\"keep-errors\",\"action\":\"allow\",\"match\":{\"field\":\":status\","
        "\"op\":\"ge\",\"value\":400}},"
        "{\"name\":\"drop-nrf\",\"action\":\"drop\",\"match\":{\"field\":\"@nf-type\","
        "\"op\":\"equals\",\"value\":\"NRF\"}},"
        "{\"name\":\"keep-all-nrf\",\"action\":\"allow\",\"match\":{\"field\":\"@nf-type\","
        "\"op\":\"equals\",\"value\":\"NRF\"}}]}");
    assert_string_equal(filter_name(f), "order");
    assert_int_equal(filter_rule_count(f), 3);
    assert_int_equal(filter_default_action(f), FILTER_DROP);
    codec_msg_t m;
    int rule;
    msg_response(&m, "404");
    assert_int_equal(filter_eval(f, &m, &rule), FILTER_ALLOW);
    assert_int_equal(rule, 0);
    msg_response(&m, "200");
    assert_int_equal(filter_eval(f, &m, &rule), FILTER_DROP);
    assert_int_equal(rule, 1);
    assert_int_equal(filter_eval(f, &m, NULL), FILTER_DROP);
    msg_request(&m); /* SCP: no rule matches, default drop */
    assert_int_equal(filter_eval(f, &m, &rule), FILTER_DROP);
    assert_int_equal(rule, FILTER_RULE_DEFAULT);

    assert_int_equal(filter_rule_hits(f, 0), 1);
    assert_int_equal(filter_rule_hits(f, 1), 2);
    assert_int_equal(filter_rule_hits(f, 2), 0);
    assert_int_equal(filter_rule_hits(f, FILTER_RULE_DEFAULT), 1);
    assert_string_equal(filter_rule_name(f, 1), "drop-nrf");
    assert_string_equal(filter_rule_name(f, FILTER_RULE_DEFAULT), "default");
    assert_null(filter_rule_name(f, 3));
    assert_string_equal(filter_action_name(FILTER_DROP), "drop");
    filter_release(f);
}

static void test_default_action_applies_when_no_rule_matches(void **state)
{
    codec_msg_t m;
    msg_request(&m);
    filter_t *f = compile_ok("{\"name\":\"empty\",\"default\":\"drop\",\"rules\":[]}");
    int rule = 5;
    assert_int_equal(filter_eval(f, &m, &rule), FILTER_DROP);
    assert_int_equal(rule, FILTER_RULE_DEFAULT);
    filter_release(f);
    f = compile_ok("{\"name\":\"empty\",\"default\":\"allow\",\"rules\":[],"
                   "\"description\":\"lets everything through\"}");
    assert_int_equal(filter_eval(f, &m, &rule), FILTER_ALLOW);
    filter_release(f);
}

static void test_no_filter_allows_everything(void **state)
{
    codec_msg_t m;
    msg_request(&m);
    int rule = 3;
    assert_int_equal(filter_eval(NULL, &m, &rule), FILTER_ALLOW);
    assert_int_equal(rule, FILTER_RULE_DEFAULT);
}

static void test_brief_example_drops_nrf_heartbeat_only(void **state)
{
    filter_t *f = compile_ok(
        "{\"name\":\"scp-no-nrf-heartbeat\",\"default\":\"allow\",\"rules\":[{\"name\":"
        "\"drop-heartbeats\",\"action\":\"drop\",\"match\":{\"all\":[{\"field\":\":method\","
        "\"op\":\"equals\",\"value\":\"PATCH\"},{\"field\":\":path\",\"op\":\"prefix\","
        "\"value\":\"/nnrf-nfm/v1/nf-instances/\"}]}}]}");
    codec_msg_t m;
    msg_request(&m);
    assert_int_equal(filter_eval(f, &m, NULL), FILTER_DROP);
    m.http[0].value = (codec_slice_t){"GET", 3};
    m.method = m.http[0].value;
    assert_int_equal(filter_eval(f, &m, NULL), FILTER_ALLOW);
    msg_response(&m, "204");
    assert_int_equal(filter_eval(f, &m, NULL), FILTER_ALLOW);
    filter_release(f);
}

/* A record decoded by the real codec is filtered like a hand-built one. */
static void test_decoded_record_is_filtered(void **state)
{
    rd_kafka_headers_t *h = rd_kafka_headers_new(16);
    static const char *const hdr[][2] = {{"@correlation-id", "tx-42"},
                                         {"@timestamp-us", "1764484033123456"},
                                         {"@message-type", "response"},
                                         {"@trigger-point", "tx-response"},
                                         {"@nf-type", "PCF"},
                                         {":status", "503"},
                                         {"content-type", "application/json"}};
    for (size_t i = 0; i < sizeof hdr / sizeof hdr[0]; i++)
        rd_kafka_header_add(h, hdr[i][0], -1, hdr[i][1], -1);
    codec_msg_t m;
    codec_error_t e;
    const char body[] = "{\"cause\":\"SYSTEM_FAILURE\"}";
    codec_reason_t r = codec_decode_parts(&m, "tx-42", 5, body, sizeof body - 1, h, &e);
    if (r != CODEC_OK)
        fail_msg("decode: %s %s %s", codec_reason_name(r), e.field, e.detail);
    assert_true(matches("{\"all\":[{\"field\":\"@nf-type\",\"op\":\"equals\",\"value\":\"PCF\"},"
                        "{\"field\":\":status\",\"op\":\"between\",\"value\":[500,599]},"
                        "{\"field\":\"@message-type\",\"op\":\"equals\",\"value\":\"response\"}]}",
                        &m));
    assert_false(matches("{\"field\":\":status\",\"op\":\"lt\",\"value\":500}", &m));
    rd_kafka_headers_destroy(h);
}

/* ------------------------------------------------------------------------ errors */

static void test_compile_error_names_rule_and_path_for_unknown_operator(void **state)
{
    const char *err = compile_error(
        "{\"name\":\"f\",\"default\":\"allow\",\"rules\":["
        "{\"name\":\"ok\",\"action\":\"drop\",\"match\":{\"field\":\":method\",\"op\":\"exists\"}},"
        "{\"name\":\"drop-heartbeats\",\"action\":\"drop\",\"match\":{\"all\":[{\"field\":"
        "\":method\",\"op\":\"equal\",\"value\":\"PATCH\"}]}}]}");
    assert_string_equal(err, "rules[1].match.all[0].op: unknown operator \"equal\" (rule "
                             "\"drop-heartbeats\")");
}

static void test_compile_rejects_unknown_keys(void **state)
{
    assert_string_equal(
        compile_error("{\"name\":\"f\",\"default\":\"allow\",\"rules\":[],\"rulez\":[]}"),
        "$: unknown key \"rulez\" (a filter has name, default, rules, description)");
    assert_non_null(strstr(compile_error("{\"name\":\"f\",\"default\":\"allow\",\"rules\":[{"
                                         "\"name\":\"r\",\"action\":\"drop\",\"enabled\":true,"
                                         "\"match\":{\"field\":\"a\",\"op\":\"exists\"}}]}"),
                           "rules[0]: unknown key \"enabled\""));
    assert_non_null(strstr(compile_error(RULE1("{\"field\":\"a\",\"op\":\"exists\",\"case\":1}")),
                           "rules[0].match: unknown key \"case\""));
    assert_non_null(strstr(
        compile_error(RULE1("{\"all\":[{\"field\":\"a\",\"op\":\"exists\"}],\"field\":\"b\"}")),
        "rules[0].match: unknown key \"field\" beside \"all\""));
    assert_non_null(strstr(compile_error(RULE1("{\"all\":[],\"any\":[]}")),
                           "rules[0].match: both \"all\" and \"any\""));
}

static void test_compile_rejects_wrong_types(void **state)
{
    assert_string_equal(compile_error("[]"),
                        "$: expected a JSON object with name, default and rules");
    assert_non_null(strstr(compile_error("{\"name\":7,\"default\":\"allow\",\"rules\":[]}"),
                           "name: expected a name"));
    assert_non_null(strstr(compile_error("{\"name\":\"bad name\",\"default\":\"allow\","
                                         "\"rules\":[]}"),
                           "name: expected a name"));
    assert_string_equal(compile_error("{\"name\":\"f\",\"default\":\"deny\",\"rules\":[]}"),
                        "default: unknown action \"deny\" (\"allow\" or \"drop\")");
    assert_string_equal(compile_error("{\"name\":\"f\",\"rules\":[]}"),
                        "default: missing (\"allow\" or \"drop\")");
    assert_string_equal(compile_error("{\"name\":\"f\",\"default\":\"allow\",\"rules\":{}}"),
                        "rules: expected an array");
    assert_string_equal(
        compile_error(RULE1("{\"field\":\":status\",\"op\":\"equals\",\"value\":200}")),
        "rules[0].match.value: expected a string (rule \"r1\")");
    assert_string_equal(
        compile_error(RULE1("{\"field\":\":status\",\"op\":\"ge\",\"value\":\"2xx\"}")),
        "rules[0].match.value: \"2xx\" is not a decimal number (rule \"r1\")");
    assert_string_equal(
        compile_error(RULE1("{\"field\":\":status\",\"op\":\"ge\",\"value\":true}")),
        "rules[0].match.value: expected a number (rule \"r1\")");
    assert_string_equal(compile_error(RULE1("{\"field\":5,\"op\":\"exists\"}")),
                        "rules[0].match.field: expected a string (a field name such as "
                        "\":path\" or \"@nf-type\") (rule \"r1\")");
    assert_string_equal(
        compile_error(RULE1("{\"field\":\"a b\",\"op\":\"exists\"}")),
        "rules[0].match.field: field name \"a b\" has an invalid character at 1 (rule \"r1\")");
    assert_string_equal(compile_error(RULE1("{\"field\":\"a\",\"op\":\"exists\",\"icase\":1}")),
                        "rules[0].match.icase: expected true or false (rule \"r1\")");
    assert_string_equal(compile_error(RULE1("{\"all\":{}}")),
                        "rules[0].match.all: expected an array of match expressions (rule "
                        "\"r1\")");
    assert_string_equal(compile_error(RULE1("{\"all\":[\"x\"]}")),
                        "rules[0].match.all[0]: expected an object (a predicate or "
                        "all/any/not) (rule \"r1\")");
    assert_string_equal(
        compile_error("{\"name\":\"f\",\"default\":\"allow\",\"rules\":[{\"name\":\"r\","
                      "\"action\":\"keep\",\"match\":{\"field\":\"a\",\"op\":\"exists\"}}]}"),
        "rules[0].action: unknown action \"keep\" (\"allow\" or \"drop\") (rule \"r\")");
}

static void test_compile_rejects_missing_parts(void **state)
{
    assert_string_equal(compile_error(RULE1("{\"op\":\"exists\"}")),
                        "rules[0].match: missing \"field\" (rule \"r1\")");
    assert_string_equal(compile_error(RULE1("{\"field\":\"a\"}")),
                        "rules[0].match: missing \"op\" (rule \"r1\")");
    assert_string_equal(compile_error(RULE1("{\"field\":\"a\",\"op\":\"equals\"}")),
                        "rules[0].match: missing \"value\" (operator \"equals\") (rule \"r1\")");
    assert_string_equal(
        compile_error("{\"name\":\"f\",\"default\":\"allow\",\"rules\":[{\"action\":\"drop\"}]}"),
        "rules[0]: missing \"name\"");
    assert_string_equal(compile_error("{\"name\":\"f\",\"default\":\"allow\",\"rules\":[{"
                                      "\"name\":\"r\",\"action\":\"drop\"}]}"),
                        "rules[0]: missing \"match\" (rule \"r\")");
    assert_string_equal(compile_error("{\"name\":\"f\",\"default\":\"allow\"}"),
                        "$: missing \"rules\" (may be an empty array)");
}

static void test_compile_rejects_empty_lists(void **state)
{
    assert_string_equal(compile_error(RULE1("{\"field\":\"a\",\"op\":\"one-of\",\"value\":[]}")),
                        "rules[0].match.value: empty list (rule \"r1\")");
    assert_string_equal(
        compile_error(RULE1("{\"field\":\"a\",\"op\":\"one-of\",\"value\":[\"x\",1]}")),
        "rules[0].match.value[1]: expected a string (rule \"r1\")");
    assert_string_equal(compile_error(RULE1("{\"any\":[]}")),
                        "rules[0].match.any: empty list (rule \"r1\")");
}

static void test_compile_rejects_bad_regex_with_pcre2_error_text(void **state)
{
    const char *err =
        compile_error(RULE1("{\"field\":\":path\",\"op\":\"regex\",\"value\":\"([a-z\"}"));
    assert_non_null(strstr(err, "rules[0].match.value: bad regular expression \"([a-z\": "));
    /* PCRE2's message for this pattern, and where it stopped */
    assert_non_null(strstr(err, "missing terminating ] for character class at offset 5"));
}

static void test_compile_rejects_operator_misuse(void **state)
{
    assert_string_equal(compile_error(RULE1("{\"field\":\"a\",\"op\":\"exists\",\"value\":\"x\"}")),
                        "rules[0].match.value: operator \"exists\" takes no value (rule \"r1\")");
    assert_string_equal(
        compile_error(RULE1("{\"field\":\"a\",\"op\":\"lt\",\"value\":1,\"icase\":true}")),
        "rules[0].match.icase: operator \"lt\" has no case-insensitive form (rule \"r1\")");
    assert_string_equal(
        compile_error(RULE1("{\"field\":\"a\",\"op\":\"between\",\"value\":[5,1]}")),
        "rules[0].match.value: low bound is greater than high bound (rule \"r1\")");
    assert_string_equal(compile_error(RULE1("{\"field\":\"a\",\"op\":\"between\",\"value\":[1]}")),
                        "rules[0].match.value: expected an array [low, high] (rule \"r1\")");
    assert_string_equal(
        compile_error(RULE1("{\"field\":\"a\",\"op\":\"between\",\"value\":[1,\"x\"]}")),
        "rules[0].match.value: high bound: \"x\" is not a decimal number (rule \"r1\")");
}

static void test_compile_rejects_duplicate_rule_names(void **state)
{
    assert_string_equal(
        compile_error("{\"name\":\"f\",\"default\":\"allow\",\"rules\":["
                      "{\"name\":\"r\",\"action\":\"drop\",\"match\":{\"field\":\"a\",\"op\":"
                      "\"exists\"}},"
                      "{\"name\":\"r\",\"action\":\"drop\",\"match\":{\"field\":\"a\",\"op\":"
                      "\"exists\"}}]}"),
        "rules[1].name: duplicate rule name \"r\" (also rules[0])");
}

static void test_compile_rejects_bad_json_text(void **state)
{
    const char *err = compile_error("{\"name\":\"f\",\n \"default\":}");
    assert_non_null(strstr(err, "$: invalid JSON at line 2 column"));
    err = compile_error("{\"name\":\"f\",\"name\":\"g\",\"default\":\"allow\",\"rules\":[]}");
    assert_non_null(strstr(err, "duplicate object key"));
    char e2[128];
    assert_null(filter_compile_text("{}", FILTER_MAX_TEXT + 1, e2, sizeof e2));
    assert_non_null(strstr(e2, "exceeds"));
    assert_null(filter_compile_text(NULL, 0, e2, sizeof e2));
}

static void test_compile_rejects_too_many_rules_and_nodes(void **state)
{
    /* FILTER_MAX_RULES + 1 rules */
    size_t cap = (FILTER_MAX_RULES + 2) * 96;
    char *j = malloc(cap);
    size_t o = (size_t)snprintf(j, cap, "{\"name\":\"f\",\"default\":\"allow\",\"rules\":[");
    for (int i = 0; i <= FILTER_MAX_RULES; i++)
        o += (size_t)snprintf(j + o, cap - o,
                              "%s{\"name\":\"r%d\",\"action\":\"drop\",\"match\":{\"field\":"
                              "\"a\",\"op\":\"exists\"}}",
                              i ? "," : "", i);
    snprintf(j + o, cap - o, "]}");
    assert_string_equal(compile_error(j), "rules: more than 1024 rules");
    free(j);

    /* One rule with FILTER_MAX_NODES predicates under one all */
    cap = (FILTER_MAX_NODES + 2) * 40;
    j = malloc(cap);
    o = (size_t)snprintf(j, cap,
                         "{\"name\":\"t\",\"default\":\"allow\",\"rules\":[{\"name\":\"r1\","
                         "\"action\":\"drop\",\"match\":{\"all\":[");
    for (int i = 0; i < FILTER_MAX_NODES; i++)
        o +=
            (size_t)snprintf(j + o, cap - o, "%s{\"field\":\"a\",\"op\":\"exists\"}", i ? "," : "");
    snprintf(j + o, cap - o, "]}}]}");
    assert_non_null(strstr(compile_error(j), "filter has more than 8192 expressions"));
    free(j);
}

/* Every ```json block of docs/filters.md is a valid filter (the doc is the contract). */
static void test_doc_examples_compile(void **state)
{
    FILE *fp = fopen(NDD_SOURCE_DIR "/docs/filters.md", "r");
    assert_non_null(fp);
    static char doc[65536];
    size_t n = fread(doc, 1, sizeof doc - 1, fp);
    fclose(fp);
    doc[n] = '\0';
    int blocks = 0;
    for (char *p = strstr(doc, "```json\n"); p; p = strstr(p, "```json\n")) {
        p += 8;
        char *end = strstr(p, "```");
        assert_non_null(end);
        char err[512];
        filter_t *f = filter_compile_text(p, (size_t)(end - p), err, sizeof err);
        if (!f)
            fail_msg("docs/filters.md example %d refused: %s", blocks, err);
        filter_release(f);
        blocks++;
        p = end + 3;
    }
    assert_true(blocks >= 5);
}

/* What PCRE2's match limits cannot bound is refused when the filter is compiled: stacked
 * quantifiers, repetitions whose compiled form is too large, nesting deeper than 32 groups,
 * UTF mode and \\C. Ordinary patterns still compile. */
static void test_compile_rejects_explosive_regex(void **state)
{
    assert_non_null(strstr(
        compile_error(RULE1("{\"field\":\":path\",\"op\":\"regex\",\"value\":\"ro+++++l\"}")),
        "quantifier does not follow a repeatable item"));
    assert_non_null(
        strstr(compile_error(RULE1("{\"field\":\":path\",\"op\":\"regex\",\"value\":\"a{2}{3}\"}")),
               "quantifier does not follow a repeatable item"));
    const char *big = compile_error(
        RULE1("{\"field\":\":path\",\"op\":\"regex\",\"value\":\"((a{99}){99}){99}\"}"));
    assert_true(strstr(big, "too large") || strstr(big, "compiled form larger than"));
    char deep[200] = "{\"field\":\":path\",\"op\":\"regex\",\"value\":\"";
    for (int i = 0; i < 40; i++)
        strcat(deep, "(");
    strcat(deep, "a");
    for (int i = 0; i < 40; i++)
        strcat(deep, ")");
    strcat(deep, "\"}");
    char rule[400];
    snprintf(rule, sizeof rule, RULE1("%s"), deep);
    assert_non_null(strstr(compile_error(rule), "parentheses are too deeply nested"));
    assert_non_null(
        strstr(compile_error(RULE1("{\"field\":\":path\",\"op\":\"regex\",\"value\":\"(*UTF)a\"}")),
               "bad regular expression"));
    assert_non_null(
        strstr(compile_error(RULE1("{\"field\":\":path\",\"op\":\"regex\",\"value\":\"a\\\\Cb\"}")),
               "bad regular expression"));
    codec_msg_t m;
    msg_request(&m);
    /* Ordinary patterns with brackets, classes, escapes and bounded counts still compile. */
    assert_true(matches("{\"field\":\":path\",\"op\":\"regex\",\"value\":"
                        "\"^/[[:alnum:]-]+/v[0-9]{1,2}/nf-instances/[]0-9a-f[-]{36}$\"}",
                        &m));
    assert_true(matches(
        "{\"field\":\"user-agent\",\"op\":\"regex\",\"value\":\"\\\\.operator\\\\.com$\"}", &m));
}

/* A pattern that backtracks exponentially, against a long value that almost matches, stops at
 * PCRE2's match limit: the predicate is false, the error is counted, and the evaluation takes
 * milliseconds, not the age of the universe. Back-references are allowed: the same limits
 * bound them. */
static void test_catastrophic_regex_stops_at_match_limit(void **state)
{
    static char value[20002];
    memset(value, 'a', sizeof value - 2);
    value[sizeof value - 2] = '!';
    codec_msg_t m;
    memset(&m, 0, sizeof m);
    msg_http(&m, "x-long", value);
    const char *pats[] = {"^(a+)+$", "^(a|aa)+$", "(.*a){12}$", "^(\\\\w+\\\\s?)*$"};
    for (size_t i = 0; i < sizeof pats / sizeof pats[0]; i++) {
        char expr[200];
        snprintf(expr, sizeof expr, "{\"field\":\"x-long\",\"op\":\"regex\",\"value\":\"%s\"}",
                 pats[i]);
        uint64_t before = filter_regex_errors();
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        assert_false(matches(expr, &m));
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
        assert_true(ms < 2000);
        assert_true(filter_regex_errors() > before);
    }
    /* A back-reference is allowed (the same limits bound it); here PCRE2 sees the value
     * lacks the required "b" and answers at once. */
    assert_false(
        matches("{\"field\":\"x-long\",\"op\":\"regex\",\"value\":\"^(a*)*b\\\\1$\"}", &m));
    /* The same patterns still answer on values they can decide within the limits. */
    msg_http(&m, "x-short", "aaaa");
    assert_true(matches("{\"field\":\"x-short\",\"op\":\"regex\",\"value\":\"^(a+)+$\"}", &m));
}

/* A nested repeat of empty alternatives, found by fuzz_filter_regex: PCRE2's JIT matched it
 * against 4 KiB for 14 s without reaching the match limit (it does not count every step);
 * the interpreter the operator uses stops it within the limits, so the evaluation is "no
 * match" in well under a second. */
static void test_regex_of_repeated_empty_alternatives_ends_within_the_limits(void **state)
{
    (void)state;
    static const char unit[] = "aa,|4*}){8}){|4*}){8})99}";
    static char value[4097];
    for (size_t i = 0; i < sizeof value - 1; i++)
        value[i] = unit[i % (sizeof unit - 1)];
    codec_msg_t m;
    memset(&m, 0, sizeof m);
    msg_http(&m, "x-long", value);
    struct timespec t0, t1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    assert_false(matches("{\"field\":\"x-long\",\"op\":\"regex\",\"value\":"
                         "\"8((|||||||||||||||||||||||||x+yy){5}){C9\"}",
                         &m));
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    if (ms >= 500)
        fail_msg("the evaluation took %.0f ms of CPU", ms);
}

/* The engine's pre-resolved lookup finds the same value as codec_msg_field for every kind of
 * name: known metadata, extension metadata, :method/:path shortcuts, other HTTP fields in any
 * case, and absent ones. */
static void test_field_lookup_agrees_with_codec_msg_field(void **state)
{
    rd_kafka_headers_t *h = rd_kafka_headers_new(16);
    static const char *const hdr[][2] = {{"@correlation-id", "tx-7"},
                                         {"@timestamp-us", "1764484033123456"},
                                         {"@message-type", "request"},
                                         {"@trigger-point", "rx-request"},
                                         {"@nf-type", "SCP"},
                                         {"@x-site", "lyon-2"},
                                         {":method", "POST"},
                                         {":path", "/npcf-smpolicycontrol/v1/sm-policies"},
                                         {"content-type", "application/json"},
                                         {"x-dup", "first"},
                                         {"x-dup", "second"}};
    for (size_t i = 0; i < sizeof hdr / sizeof hdr[0]; i++)
        rd_kafka_header_add(h, hdr[i][0], -1, hdr[i][1], -1);
    codec_msg_t m;
    codec_error_t e;
    codec_reason_t r = codec_decode_parts(&m, "tx-7", 4, "{}", 2, h, &e);
    if (r != CODEC_OK)
        fail_msg("decode: %s %s %s", codec_reason_name(r), e.field, e.detail);
    static const char *const names[] = {"@correlation-id", "@timestamp-us", "@nf-type", "@x-site",
                                        "@x-none",         "@hop-id",       ":method",  ":path",
                                        ":status",         "Content-Type",  "x-dup",    "x-none"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        codec_slice_t v;
        bool present = codec_msg_field(&m, names[i], strlen(names[i]), &v);
        char expr[512];
        if (present)
            snprintf(expr, sizeof expr, "{\"field\":\"%s\",\"op\":\"equals\",\"value\":\"%.*s\"}",
                     names[i], (int)v.len, v.ptr);
        else
            snprintf(expr, sizeof expr, "{\"field\":\"%s\",\"op\":\"absent\"}", names[i]);
        if (!matches(expr, &m))
            fail_msg("field %s: engine and codec_msg_field disagree", names[i]);
    }
    rd_kafka_headers_destroy(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equals_matches_exact_value_only),
        cmocka_unit_test(test_equals_icase_ignores_ascii_case),
        cmocka_unit_test(test_not_equals_is_false_for_absent_field),
        cmocka_unit_test(test_one_of_matches_any_listed_value),
        cmocka_unit_test(test_prefix_suffix_contains),
        cmocka_unit_test(test_regex_matches_slice_without_terminator),
        cmocka_unit_test(test_numeric_compare_on_status_and_timestamp),
        cmocka_unit_test(test_number_parse_is_strict),
        cmocka_unit_test(test_exists_and_absent),
        cmocka_unit_test(test_http_field_names_are_case_insensitive),
        cmocka_unit_test(test_method_and_path_found_without_parsed_shortcuts),
        cmocka_unit_test(test_extension_metadata_field_is_found),
        cmocka_unit_test(test_all_any_not_combinators),
        cmocka_unit_test(test_nesting_up_to_the_depth_limit_compiles),
        cmocka_unit_test(test_first_matching_rule_decides_and_hits_are_counted),
        cmocka_unit_test(test_default_action_applies_when_no_rule_matches),
        cmocka_unit_test(test_no_filter_allows_everything),
        cmocka_unit_test(test_brief_example_drops_nrf_heartbeat_only),
        cmocka_unit_test(test_decoded_record_is_filtered),
        cmocka_unit_test(test_field_lookup_agrees_with_codec_msg_field),
        cmocka_unit_test(test_compile_error_names_rule_and_path_for_unknown_operator),
        cmocka_unit_test(test_compile_rejects_unknown_keys),
        cmocka_unit_test(test_compile_rejects_wrong_types),
        cmocka_unit_test(test_compile_rejects_missing_parts),
        cmocka_unit_test(test_compile_rejects_empty_lists),
        cmocka_unit_test(test_compile_rejects_bad_regex_with_pcre2_error_text),
        cmocka_unit_test(test_compile_rejects_operator_misuse),
        cmocka_unit_test(test_compile_rejects_duplicate_rule_names),
        cmocka_unit_test(test_compile_rejects_bad_json_text),
        cmocka_unit_test(test_compile_rejects_too_many_rules_and_nodes),
        cmocka_unit_test(test_doc_examples_compile),
        cmocka_unit_test(test_compile_rejects_explosive_regex),
        cmocka_unit_test(test_catastrophic_regex_stops_at_match_limit),
        cmocka_unit_test(test_regex_of_repeated_empty_alternatives_ends_within_the_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
