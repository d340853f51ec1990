/* Feed JSON: defaults, every section, and refusals that name the JSON path of the problem.
 * Also the feeds document check (duplicates, shape) that runs before anything is applied. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "adapter_testutil.h"
#include "feed.h"
#include "feed_config.h"
#include "feed_kafka_acl.h"
#include "feeds.h"
#include "log.h"

static feed_config_t *parse(const char *text, char *err, size_t errlen)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j)
        fail_msg("bad test JSON: %s", je.text);
    jfield_err_t fe;
    feed_config_t *c = feed_config_parse(j, NULL, &fe);
    if (!c)
        feed_config_err_format(&fe, "feeds[0]", err, errlen);
    json_decref(j);
    return c;
}

static void expect_error(const char *text, const char *want)
{
    char err[512] = "";
    feed_config_t *c = parse(text, err, sizeof err);
    if (c) {
        feed_config_free(c);
        fail_msg("accepted: %s", text);
    }
    if (!strstr(err, want))
        fail_msg("error \"%s\" does not contain \"%s\"", err, want);
}

static void test_minimal_feed_gets_documented_defaults(void **state)
{
    char err[256];
    feed_config_t *c = parse(
        "{\"name\":\"probe-1\",\"endpoints\":[{\"url\":\"http://h:8080/in\"}]}", err, sizeof err);
    assert_non_null(c);
    assert_string_equal(c->source_topic, "MAIN");
    assert_string_equal(c->dlq_topic, "ndd.dlq.probe-1");
    assert_string_equal(c->group_id, "ndd-feed-probe-1");
    assert_string_equal(c->encoding->name, "json");
    assert_ptr_equal(c->transport, &transport_desc_http2);
    assert_int_equal(c->delivery.max_in_flight, 64);
    assert_int_equal(c->delivery.batch_max, 1);
    assert_true(c->verify);
    assert_string_equal(c->method, "POST");
    assert_int_equal(c->endpoints[0].weight, 1);
    assert_string_equal(c->endpoints[0].u.path, "/in");
    feed_config_free(c);
}

static void test_full_feed_with_secret_header_from_file(void **state)
{
    char path[] = "/tmp/ndd-feed-secret-XXXXXX";
    int fd = mkstemp(path);
    assert_true(write(fd, "Bearer s3cret\n", 14) == 14);
    close(fd);
    char text[2048], err[256];
    snprintf(
        text, sizeof text,
        "{\"name\":\"f\",\"source_topic\":\"XDR\",\"encoding\":\"frame\",\"transport\":\"tls\","
        "\"filter\":{\"name\":\"x\",\"default\":\"allow\",\"rules\":[]},"
        "\"endpoints\":[{\"url\":\"tls://a:1\",\"weight\":3},{\"url\":\"tls://b:2\"}],"
        "\"delivery\":{\"max_in_flight\":8,\"timeout_ms\":100,\"retry_max_ms\":1000,"
        "\"batch_max\":10,\"batch_ms\":5,\"fire_and_forget\":true},"
        "\"tls\":{\"ca_file\":\"/ca\",\"verify\":true,\"sni\":\"probe.example\"}}");
    feed_config_t *c = parse(text, err, sizeof err);
    if (!c)
        fail_msg("%s", err);
    assert_int_equal(c->n_endpoints, 2);
    assert_int_equal(c->endpoints[0].weight, 3);
    assert_int_equal(c->delivery.batch_max, 10);
    assert_true(c->delivery.fire_and_forget);
    assert_string_equal(c->sni, "probe.example");
    assert_non_null(c->filter_json);
    feed_config_free(c);
    snprintf(text, sizeof text,
             "{\"name\":\"g\",\"endpoints\":[{\"url\":\"https://a/x\"}],"
             "\"http\":{\"path\":\"/ingest\",\"method\":\"PUT\",\"headers\":{\"x-tenant\":\"t1\"},"
             "\"header_files\":{\"authorization\":\"%s\"}}}",
             path);
    c = parse(text, err, sizeof err);
    if (!c)
        fail_msg("%s", err);
    assert_int_equal(c->n_headers, 2);
    assert_string_equal(c->header_names[1], "authorization");
    assert_string_equal(c->header_values[1], "Bearer s3cret");
    assert_string_equal(c->method, "PUT");
    feed_config_free(c);
    unlink(path);
}

static void test_memory_mb_is_optional_and_bounded(void **state)
{
    char err[256];
    feed_config_t *c =
        parse("{\"name\":\"m\",\"endpoints\":[{\"url\":\"http://h/\"}]}", err, sizeof err);
    assert_non_null(c);
    assert_int_equal(c->delivery.memory_mb, 0); /* 0: the process's --feed-memory-mb */
    feed_config_free(c);
    c = parse("{\"name\":\"m\",\"endpoints\":[{\"url\":\"http://h/\"}],"
              "\"delivery\":{\"memory_mb\":32}}",
              err, sizeof err);
    assert_non_null(c);
    assert_int_equal(c->delivery.memory_mb, 32);
    feed_config_free(c);
    expect_error("{\"name\":\"m\",\"endpoints\":[{\"url\":\"http://h/\"}],\"delivery\":"
                 "{\"memory_mb\":70000}}",
                 "feeds[0].delivery.memory_mb");
    expect_error("{\"name\":\"m\",\"endpoints\":[{\"url\":\"http://h/\"}],\"delivery\":"
                 "{\"memory_mb\":\"big\"}}",
                 "feeds[0].delivery.memory_mb");
}

/* The parts of the budget must stay within it and must satisfy librdkafka's own checks, or
 * the consumer would not even start; the prefetch queue holds two fetch responses. */
static void test_memory_plan_fits_the_budget_and_librdkafka_rules(void **state)
{
    static const unsigned mbs[] = {1, 2, 6, 8, 16, 64, 1024, 65536};
    for (size_t i = 0; i < sizeof mbs / sizeof *mbs; i++) {
        feed_memory_plan_t p;
        feed_memory_plan(mbs[i], &p);
        uint64_t b = (uint64_t)mbs[i] << 20;
        /* librdkafka: fetch.max.bytes >= message.max.bytes >= 1000, receive >= fetch+512 */
        assert_true(p.fetch_max_bytes >= p.message_max_bytes && p.message_max_bytes >= 1000);
        assert_true(p.receive_max_bytes >= (uint64_t)p.fetch_max_bytes + 512);
        assert_true((uint64_t)p.queued_max_kbytes * 1024 >= 2 * (uint64_t)p.fetch_max_bytes);
        assert_true(p.partition_fetch_bytes <= p.fetch_max_bytes);
        assert_true(p.queued_max_kbytes >= 1);
        assert_true(p.queued_min_messages >= 1);
        assert_true(p.held_bytes_max > 0 && p.held_bytes_max <= b / 2);
        if (mbs[i] >= 16) { /* above the floors, the parts add up to at most the budget */
            uint64_t sum = p.held_bytes_max + p.fetch_max_bytes +
                           (uint64_t)p.queued_max_kbytes * 1024 +
                           (uint64_t)p.dlq_buffer_kbytes * 1024 + p.idle_buffer_bytes;
            if (sum > b)
                fail_msg("budget %u MiB: parts add up to %llu bytes", mbs[i],
                         (unsigned long long)sum);
        }
    }
    feed_memory_plan_t a, d;
    memset(&a, 0, sizeof a); /* padding: compared bytewise below */
    memset(&d, 0, sizeof d);
    feed_memory_plan(0, &d);
    feed_memory_plan(5, &a);
    assert_memory_equal(&a, &d, sizeof a); /* 0 means the documented default, 5 MiB */
    feed_memory_plan(64, &a);
    assert_true(a.queued_max_kbytes > d.queued_max_kbytes); /* a bigger budget prefetches more */
}

static void test_frame_feeds_batch_by_default_json_feeds_do_not(void **state)
{
    char err[256];
    feed_config_t *c = parse("{\"name\":\"f\",\"transport\":\"tcp\",\"encoding\":\"frame\","
                             "\"endpoints\":[{\"url\":\"tcp://h:1\"}]}",
                             err, sizeof err);
    assert_non_null(c);
    assert_int_equal(c->delivery.batch_max, encoding_frame.default_batch);
    assert_int_equal(c->delivery.batch_ms, 0); /* never waits to fill a frame */
    feed_config_free(c);
    c = parse("{\"name\":\"f\",\"transport\":\"tcp\",\"encoding\":\"frame\","
              "\"endpoints\":[{\"url\":\"tcp://h:1\"}],\"delivery\":{\"batch_max\":1}}",
              err, sizeof err);
    assert_non_null(c);
    assert_int_equal(c->delivery.batch_max, 1); /* an explicit value wins */
    feed_config_free(c);
    c = parse("{\"name\":\"f\",\"transport\":\"tcp\",\"encoding\":\"frame\","
              "\"endpoints\":[{\"url\":\"tcp://h:1\"}],\"delivery\":{\"max_pending\":4}}",
              err, sizeof err);
    assert_non_null(c);
    assert_int_equal(c->delivery.batch_max, 4); /* the default never exceeds max_pending */
    feed_config_free(c);
    c = parse("{\"name\":\"j\",\"endpoints\":[{\"url\":\"http://h/\"}]}", err, sizeof err);
    assert_non_null(c);
    assert_int_equal(c->delivery.batch_max, 1);
    feed_config_free(c);
    expect_error("{\"name\":\"f\",\"endpoints\":[{\"url\":\"http://h/\"}],\"delivery\":"
                 "{\"batch_max\":8,\"max_pending\":4}}",
                 "max_pending: must be >= batch_max");
}

static void test_invalid_feeds_are_refused_with_json_path(void **state)
{
    expect_error("{\"endpoints\":[{\"url\":\"http://h/\"}]}",
                 "feeds[0].name: field \"name\" is required");
    expect_error("{\"name\":\"a b\",\"endpoints\":[{\"url\":\"http://h/\"}]}", "feeds[0].name");
    expect_error("{\"name\":\"a\",\"endpoints\":[]}", "feeds[0].endpoints");
    expect_error("{\"name\":\"a\",\"endpoints\":[{\"url\":\"tcp://h:1\"}]}",
                 "feeds[0].endpoints[0].url: scheme does not match");
    expect_error("{\"name\":\"a\",\"transport\":\"tcp\",\"endpoints\":[{\"url\":\"tcp://h:1\"}]}",
                 "feeds[0].encoding");
    expect_error("{\"name\":\"a\",\"endpoints\":[{\"url\":\"http://h/\"}],\"delivery\":"
                 "{\"timeout_ms\":0}}",
                 "feeds[0].delivery.timeout_ms");
    expect_error("{\"name\":\"a\",\"endpoints\":[{\"url\":\"http://h/\"}],\"delivery\":"
                 "{\"timout_ms\":5}}",
                 "feeds[0].delivery.timout_ms: field \"timout_ms\" is not part of this object");
    expect_error("{\"name\":\"a\",\"endpoints\":[{\"url\":\"http://h/\"}],\"filter\":"
                 "{\"name\":\"x\",\"default\":\"allow\",\"rules\":[{\"name\":\"r\","
                 "\"action\":\"drop\",\"match\":{\"field\":\":path\",\"op\":\"equal\","
                 "\"value\":\"/\"}}]}}",
                 "feeds[0].filter.rules[0].match.op: unknown operator");
    expect_error("{\"name\":\"a\",\"endpoints\":[{\"url\":\"http://h/\"}],\"delivery\":"
                 "{\"fire_and_forget\":true}}",
                 "fire_and_forget");
    expect_error("{\"name\":\"a\",\"endpoints\":[{\"url\":\"http://h/\"}],\"http\":"
                 "{\"header_files\":{\"authorization\":\"/nonexistent/token\"}}}",
                 "cannot read /nonexistent/token");
    expect_error("{\"name\":\"a\",\"endpoints\":[{\"url\":\"http://h/\",\"weight\":0}]}",
                 "feeds[0].endpoints[0].weight");
    expect_error("{\"name\":\"a\",\"colour\":1,\"endpoints\":[{\"url\":\"http://h/\"}]}",
                 "feeds[0].colour: field \"colour\" is not part of this object");
}

/* The structured refusal: the path of the field, what kind of fault, a reason. */
static jfield_err_t refusal(const char *text, const feed_config_opts_t *opts)
{
    json_t *j = json_loads(text, 0, NULL);
    if (!j)
        fail_msg("bad test JSON: %s", text);
    jfield_err_t fe = {0};
    feed_config_t *c = feed_config_parse(j, opts, &fe);
    json_decref(j);
    if (c) {
        feed_config_free(c);
        fail_msg("accepted: %s", text);
    }
    assert_true(fe.reason[0] != '\0');
    return fe;
}

#define EP "\"endpoints\":[{\"url\":\"http://h:1/\"}]"

static void test_refusals_name_the_field_and_the_kind_of_fault(void **state)
{
    static const struct {
        const char *text;
        jfield_kind_t kind;
        const char *path;
    } cases[] = {
        {"{" EP "}", JFIELD_MISSING, "name"},
        {"{\"name\":null," EP "}", JFIELD_WRONG_TYPE, "name"},
        {"{\"name\":\"f\",\"endpoints\":[{\"url\":\"http://h:1/\"},{\"url\":\"ftp://x/\"}]}",
         JFIELD_BAD_URL, "endpoints[1].url"},
        {"{\"name\":\"f\",\"endpoints\":[{\"url\":\"http://u:p@h:1/\"}]}", JFIELD_BAD_URL,
         "endpoints[0].url"},
        {"{\"name\":\"f\",\"endpoints\":[{\"url\":\"http://a b:1/\"}]}", JFIELD_BAD_URL,
         "endpoints[0].url"},
        {"{\"name\":\"f\",\"endpoints\":[{\"url\":\"http://h:1/\",\"prio\":1}]}", JFIELD_UNKNOWN,
         "endpoints[0].prio"},
        {"{\"name\":\"f\",\"endpoints\":[7]}", JFIELD_WRONG_TYPE, "endpoints[0]"},
        {"{\"name\":\"f\",\"endpoints\":{}}", JFIELD_WRONG_TYPE, "endpoints"},
        {"{\"name\":\"f\"," EP ",\"delivery\":{\"timeout_ms\":0}}", JFIELD_RANGE,
         "delivery.timeout_ms"},
        {"{\"name\":\"f\"," EP ",\"delivery\":{\"timeout_ms\":1.5}}", JFIELD_WRONG_TYPE,
         "delivery.timeout_ms"},
        {"{\"name\":\"f\"," EP ",\"delivery\":[]}", JFIELD_WRONG_TYPE, "delivery"},
        {"{\"name\":\"f\"," EP ",\"tls\":{\"cert_file\":\"/c\"}}", JFIELD_INVALID, "tls.key_file"},
        {"{\"name\":\"f\"," EP ",\"http\":{\"method\":\"GET\"}}", JFIELD_INVALID, "http.method"},
        {"{\"name\":\"f\"," EP ",\"http\":{\"headers\":{\"X-Tenant\":\"a\"}}}", JFIELD_INVALID,
         "http.headers.X-Tenant"},
        {"{\"name\":\"f\"," EP ",\"http\":{\"headers\":{\"x\":\"a\\nb\"}}}", JFIELD_INVALID,
         "http.headers.x"},
        {"{\"name\":\"f\"," EP ",\"http\":{\"headers\":{\"x\":1}}}", JFIELD_WRONG_TYPE,
         "http.headers.x"},
        {"{\"name\":\"f\",\"source_topic\":\"a topic\"," EP "}", JFIELD_INVALID, "source_topic"},
        {"{\"name\":\"f\",\"encoding\":\"xml\"," EP "}", JFIELD_INVALID, "encoding"},
        {"{\"name\":\"f\",\"filter\":\"scp-only\"," EP "}", JFIELD_WRONG_TYPE, "filter"},
        {"{\"name\":\"f\",\"filter\":{\"default\":\"allow\",\"rules\":[],\"x\":1}," EP "}",
         JFIELD_UNKNOWN, "filter.x"},
        {"[1]", JFIELD_WRONG_TYPE, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        jfield_err_t fe = refusal(cases[i].text, NULL);
        if (fe.kind != cases[i].kind || strcmp(fe.path, cases[i].path))
            fail_msg("case %zu (%s): got %s \"%s\" (%s), want %s \"%s\"", i, cases[i].text,
                     jfield_kind_name(fe.kind), fe.path, fe.reason, jfield_kind_name(cases[i].kind),
                     cases[i].path);
    }
}

static void test_more_than_sixteen_headers_in_all_are_refused(void **state)
{
    char text[2048];
    int n = snprintf(text, sizeof text, "{\"name\":\"f\"," EP ",\"http\":{\"headers\":{");
    for (int i = 0; i < 10; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, "%s\"h%d\":\"v\"", i ? "," : "", i);
    n += snprintf(text + n, sizeof text - (size_t)n, "},\"header_files\":{");
    for (int i = 0; i < 7; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, "%s\"s%d\":\"/f\"", i ? "," : "", i);
    snprintf(text + n, sizeof text - (size_t)n, "}}}");
    const feed_config_opts_t admin = {.read_secrets = false};
    jfield_err_t fe = refusal(text, &admin);
    assert_int_equal(fe.kind, JFIELD_INVALID);
    assert_string_equal(fe.path, "http.header_files");
}

/* What the admin asks of the parser: a filter by name, its shorter names, its own fields let
 * through, and no secret file opened on its host. */
static void test_admin_options_filter_by_name_no_secrets_short_names(void **state)
{
    static const char *const server[] = {"id", "version", NULL};
    const feed_config_opts_t admin = {
        .filter_by_name = true, .read_secrets = false, .name_max = 64, .ignore_keys = server};
    json_t *j = json_loads("{\"name\":\"f\",\"id\":\"x\",\"version\":2,\"filter\":\"scp-only\","
                           "\"endpoints\":[{\"url\":\"http://h:1/\"}],\"http\":{\"header_files\":"
                           "{\"authorization\":\"/nonexistent/token\"}}}",
                           0, NULL);
    jfield_err_t fe;
    feed_config_t *c = feed_config_parse(j, &admin, &fe);
    if (!c)
        fail_msg("%s: %s", fe.path, fe.reason);
    assert_string_equal(c->filter_ref, "scp-only");
    assert_null(c->filter_json);
    assert_int_equal(c->n_headers, 1);
    assert_null(c->header_values[0]); /* the file was not read */
    feed_config_free(c);
    /* the workers' parse reads it, and refuses the feed when it cannot */
    assert_null(feed_config_parse(j, NULL, &fe));
    json_decref(j);
    assert_int_equal(fe.kind, JFIELD_UNKNOWN); /* id is not part of a feed for the workers */
    fe = refusal("{\"name\":\"f\",\"http\":{\"header_files\":{\"authorization\":\"/nonexistent/"
                 "token\"}}," EP "}",
                 NULL);
    assert_string_equal(fe.path, "http.header_files.authorization");
    assert_non_null(strstr(fe.reason, "cannot read /nonexistent/token"));

    char name[80];
    memset(name, 'n', 70);
    name[70] = 0;
    char text[256];
    snprintf(text, sizeof text, "{\"name\":\"%s\"," EP "}", name);
    fe = refusal(text, &admin);
    assert_int_equal(fe.kind, JFIELD_INVALID);
    assert_string_equal(fe.path, "name");
    j = json_loads(text, 0, NULL);
    c = feed_config_parse(j, NULL, &fe); /* the workers take up to 100 */
    assert_non_null(c);
    feed_config_free(c);
    json_decref(j);
    fe = refusal("{\"name\":\"f\",\"filter\":\"bad name!\"," EP "}", &admin);
    assert_int_equal(fe.kind, JFIELD_INVALID);
    assert_string_equal(fe.path, "filter");
}

/* A feeds file (--feeds-file) as the adapter reads it: written to a temporary file. */
static int apply_text(feed_manager_t *m, const char *text, char *err, size_t errlen)
{
    char path[] = "/tmp/ndd-test-feeds-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    int rc = feed_manager_apply_file(m, path, err, errlen);
    unlink(path);
    return rc;
}

static void test_feeds_document_is_validated_before_anything_changes(void **state)
{
    log_setup("test_feed_config", LOG_LEVEL_ERROR, 0);
    feed_runtime_t rt = {.brokers = "127.0.0.1:1"};
    feed_manager_t *m = feed_manager_new(&rt, 100);
    char err[512];
    const char *dup = "{\"feeds\":[{\"name\":\"a\",\"endpoints\":[{\"url\":\"http://h/\"}]},"
                      "{\"name\":\"a\",\"endpoints\":[{\"url\":\"http://h/\"}]}]}";
    assert_int_equal(apply_text(m, dup, err, sizeof err), -1);
    assert_non_null(strstr(err, "feeds[1].name: duplicate feed name"));
    assert_int_equal(apply_text(m, "{\"feedz\":[]}", err, sizeof err), -1);
    assert_int_equal(feed_manager_apply(m, "nope", NULL, err, sizeof err), -1);
    assert_int_equal(feed_manager_count(m), 0);
    feed_manager_free(m);
}

static void test_equal_json_means_unchanged_feed(void **state)
{
    char err[256];
    feed_config_t *a =
        parse("{\"name\":\"a\",\"endpoints\":[{\"url\":\"http://h/\"}]}", err, sizeof err);
    feed_config_t *b =
        parse("{\"endpoints\":[{\"url\":\"http://h/\"}],\"name\":\"a\"}", err, sizeof err);
    feed_config_t *c =
        parse("{\"name\":\"a\",\"endpoints\":[{\"url\":\"http://h2/\"}]}", err, sizeof err);
    assert_true(feed_config_equal(a, b));
    assert_false(feed_config_equal(a, c));
    feed_config_free(a);
    feed_config_free(b);
    feed_config_free(c);
}

/* docs/adapter.md's feeds file, the block after "<!-- docs-test: json feeds-file -->": a user
 * copies it as it is, so it must parse as JSON and every feed in it with the workers' parser. */
static void test_the_feeds_file_example_in_docs_adapter_md_is_accepted(void **state)
{
    (void)state;
    FILE *f = fopen(NDD_SOURCE_DIR "/docs/adapter.md", "r");
    assert_non_null(f);
    char line[1024], text[16384] = "";
    int phase = 0; /* 0 before the marker, 1 before the fence, 2 in the block, 3 done */
    while (phase < 3 && fgets(line, sizeof line, f)) {
        if (phase == 0 && strstr(line, "<!-- docs-test: json feeds-file -->"))
            phase = 1;
        else if (phase == 1) {
            if (strncmp(line, "```json", 7) != 0)
                fail_msg("docs/adapter.md: no ```json block right after the marker");
            phase = 2;
        } else if (phase == 2 && strncmp(line, "```", 3) == 0)
            phase = 3;
        else if (phase == 2) {
            assert_true(strlen(text) + strlen(line) < sizeof text);
            strcat(text, line);
        }
    }
    fclose(f);
    assert_int_equal(phase, 3);
    json_error_t je;
    json_t *doc = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!doc)
        fail_msg("docs/adapter.md example: line %d: %s", je.line, je.text);
    json_t *feeds = json_object_get(doc, "feeds");
    assert_true(json_is_array(feeds));
    assert_true(json_array_size(feeds) >= 1);
    size_t i;
    json_t *feed;
    json_array_foreach(feeds, i, feed)
    {
        jfield_err_t fe;
        feed_config_t *c = feed_config_parse(feed, NULL, &fe);
        if (!c) {
            char err[512];
            char where[32];
            snprintf(where, sizeof where, "feeds[%zu]", i);
            feed_config_err_format(&fe, where, err, sizeof err);
            fail_msg("docs/adapter.md example refused: %s", err);
        }
        feed_config_free(c);
    }
    json_decref(doc);
}

#define FILE_FEED                                                                                  \
    "{\"name\":\"f\",\"transport\":\"file\",\"endpoints\":[{\"url\":\"file:///tmp/x\"}]"

/* A wrong type or an out-of-range value of the file member is refused with its path: before,
 * the transport read a string "100" or -5 as "absent" and silently used its default. */
static void test_file_options_of_wrong_type_or_range_are_refused_with_their_path(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        jfield_kind_t kind;
        const char *path;
    } cases[] = {
        {"{\"max_bytes\":\"100\"}", JFIELD_WRONG_TYPE, "file.max_bytes"},
        {"{\"max_bytes\":0}", JFIELD_RANGE, "file.max_bytes"},
        {"{\"max_bytes\":1.5}", JFIELD_WRONG_TYPE, "file.max_bytes"},
        {"{\"max_seconds\":-5}", JFIELD_RANGE, "file.max_seconds"},
        {"{\"max_seconds\":true}", JFIELD_WRONG_TYPE, "file.max_seconds"},
        {"{\"max_records\":null}", JFIELD_WRONG_TYPE, "file.max_records"},
        {"{\"retention_bytes\":-1}", JFIELD_RANGE, "file.retention_bytes"},
        {"{\"retention_seconds\":\"1d\"}", JFIELD_WRONG_TYPE, "file.retention_seconds"},
        {"{\"retention_seconds\":400000000}", JFIELD_RANGE, "file.retention_seconds"},
        {"{\"min_free_bytes\":[]}", JFIELD_WRONG_TYPE, "file.min_free_bytes"},
        {"{\"prefix\":7}", JFIELD_WRONG_TYPE, "file.prefix"},
        {"{\"prefix\":\"../up\"}", JFIELD_INVALID, "file.prefix"},
        {"{\"prefix\":\"a/b\"}", JFIELD_INVALID, "file.prefix"},
        {"{\"prefix\":\"\"}", JFIELD_INVALID, "file.prefix"},
        {"{\"rotate\":1}", JFIELD_UNKNOWN, "file.rotate"},
        {"[]", JFIELD_WRONG_TYPE, "file"},
    };
    char text[512];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(text, sizeof text, FILE_FEED ",\"file\":%s}", cases[i].file);
        jfield_err_t fe = refusal(text, NULL);
        if (fe.kind != cases[i].kind || strcmp(fe.path, cases[i].path))
            fail_msg("case %zu (%s): got %s \"%s\" (%s), want %s \"%s\"", i, cases[i].file,
                     jfield_kind_name(fe.kind), fe.path, fe.reason, jfield_kind_name(cases[i].kind),
                     cases[i].path);
    }
    char err[512];
    snprintf(text, sizeof text,
             FILE_FEED ",\"file\":{\"prefix\":\"probe_1.a-b\",\"max_bytes\":1048576,"
                       "\"max_seconds\":0,\"max_records\":10,\"retention_bytes\":0,"
                       "\"retention_seconds\":86400,\"min_free_bytes\":0}}");
    feed_config_t *c = parse(text, err, sizeof err);
    if (!c)
        fail_msg("refused: %s", err);
    assert_int_equal(json_integer_value(json_object_get(c->transport_options, "max_records")), 10);
    feed_config_free(c);
}

/* kafka.exactly_once is a boolean (default true: transactions); the kafka transport takes
 * frame and passthrough (xDRs), nothing else. */
static void test_kafka_exactly_once_is_a_boolean_and_passthrough_is_taken(void **state)
{
    (void)state;
    char err[256];
    static const char *const ok[] = {
        "{\"name\":\"k\",\"transport\":\"kafka\",\"encoding\":\"frame\",\"endpoints\":"
        "[{\"url\":\"kafka://h:9092/t\"}],\"kafka\":{\"exactly_once\":false}}",
        "{\"name\":\"k\",\"source_topic\":\"XDR\",\"transport\":\"kafka\",\"encoding\":"
        "\"passthrough\",\"endpoints\":[{\"url\":\"kafka://h:9092/t\"}]}",
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        feed_config_t *c = parse(ok[i], err, sizeof err);
        if (!c)
            fail_msg("refused: %s: %s", ok[i], err);
        feed_config_free(c);
    }
    expect_error("{\"name\":\"k\",\"transport\":\"kafka\",\"encoding\":\"frame\",\"endpoints\":"
                 "[{\"url\":\"kafka://h:9092/t\"}],\"kafka\":{\"exactly_once\":\"yes\"}}",
                 "kafka.exactly_once");
    expect_error("{\"name\":\"k\",\"transport\":\"kafka\",\"encoding\":\"json\",\"endpoints\":"
                 "[{\"url\":\"kafka://h:9092/t\"}]}",
                 "encoding");
}

/* kafka.topic and kafka.consumer (what ndd-admin creates and grants, feed_kafka_acl.c): each
 * fault names its field; an absent member gets the documented default. */
#define KAFKA_FEED                                                                                 \
    "{\"name\":\"k\",\"source_topic\":\"MAIN\",\"transport\":\"kafka\",\"encoding\":\"frame\","    \
    "\"endpoints\":[{\"url\":\"kafka://127.0.0.1:9092/ndd.feed.k\"}]"
static void test_kafka_topic_and_consumer_are_checked_with_their_path(void **state)
{
    (void)state;
    static const struct {
        const char *kafka;
        jfield_kind_t kind;
        const char *path;
    } cases[] = {
        {"{\"topic\":{\"partitions\":0}}", JFIELD_RANGE, "kafka.topic.partitions"},
        {"{\"topic\":{\"partitions\":\"3\"}}", JFIELD_WRONG_TYPE, "kafka.topic.partitions"},
        {"{\"topic\":{\"replication_factor\":0}}", JFIELD_RANGE, "kafka.topic.replication_factor"},
        {"{\"topic\":{\"replication_factor\":-2}}", JFIELD_RANGE, "kafka.topic.replication_factor"},
        {"{\"topic\":{\"retention_ms\":0}}", JFIELD_RANGE, "kafka.topic.retention_ms"},
        {"{\"topic\":{\"segments\":1}}", JFIELD_UNKNOWN, "kafka.topic.segments"},
        {"{\"topic\":[]}", JFIELD_WRONG_TYPE, "kafka.topic"},
        {"{\"consumer\":{}}", JFIELD_MISSING, "kafka.consumer.principal"},
        {"{\"consumer\":{\"principal\":\"vendor-a\"}}", JFIELD_INVALID, "kafka.consumer.principal"},
        {"{\"consumer\":{\"principal\":\"User:*\"}}", JFIELD_INVALID, "kafka.consumer.principal"},
        {"{\"consumer\":{\"principal\":\"User:\"}}", JFIELD_INVALID, "kafka.consumer.principal"},
        {"{\"consumer\":{\"principal\":\"User:a\",\"group_prefix\":\"\"}}", JFIELD_INVALID,
         "kafka.consumer.group_prefix"},
        {"{\"consumer\":{\"principal\":\"User:a\",\"group_prefix\":\"a b\"}}", JFIELD_INVALID,
         "kafka.consumer.group_prefix"},
        {"{\"consumer\":{\"principal\":\"User:a\",\"host\":\"*\"}}", JFIELD_UNKNOWN,
         "kafka.consumer.host"},
    };
    char text[768];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(text, sizeof text, KAFKA_FEED ",\"kafka\":%s}", cases[i].kafka);
        jfield_err_t fe = refusal(text, NULL);
        if (fe.kind != cases[i].kind || strcmp(fe.path, cases[i].path))
            fail_msg("case %zu (%s): got %s \"%s\" (%s), want %s \"%s\"", i, cases[i].kafka,
                     jfield_kind_name(fe.kind), fe.path, fe.reason, jfield_kind_name(cases[i].kind),
                     cases[i].path);
    }
    char err[512];
    snprintf(text, sizeof text,
             KAFKA_FEED ",\"kafka\":{\"topic\":{\"partitions\":6,\"replication_factor\":1,"
                        "\"retention_ms\":-1},\"consumer\":{\"principal\":\"User:CN=vendor-a,O=V\","
                        "\"group_prefix\":\"vendor-a.\"}}}");
    feed_config_t *c = parse(text, err, sizeof err);
    if (!c)
        fail_msg("full kafka object refused: %s", err);
    feed_config_free(c);
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    feed_kafka_acl_t a;
    feed_kafka_acl_get(j, &a);
    assert_int_equal(a.partitions, 6);
    assert_int_equal(a.replication, 1);
    assert_int_equal(a.retention_ms, -1);
    assert_string_equal(a.principal, "User:CN=vendor-a,O=V");
    assert_string_equal(a.group_prefix, "vendor-a.");
    json_decref(j);
    snprintf(text, sizeof text, KAFKA_FEED "}");
    j = json_loads(text, 0, NULL);
    assert_non_null(j);
    feed_kafka_acl_get(j, &a);
    assert_int_equal(a.partitions, FEED_KAFKA_PARTITIONS_DEFAULT);
    assert_int_equal(a.replication, FEED_KAFKA_REPLICATION_DEFAULT);
    assert_int_equal(a.retention_ms, FEED_KAFKA_RETENTION_MS_DEFAULT);
    assert_null(a.principal);
    assert_null(a.group_prefix);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_minimal_feed_gets_documented_defaults),
        cmocka_unit_test(test_full_feed_with_secret_header_from_file),
        cmocka_unit_test(test_invalid_feeds_are_refused_with_json_path),
        cmocka_unit_test(test_refusals_name_the_field_and_the_kind_of_fault),
        cmocka_unit_test(test_more_than_sixteen_headers_in_all_are_refused),
        cmocka_unit_test(test_admin_options_filter_by_name_no_secrets_short_names),
        cmocka_unit_test(test_memory_mb_is_optional_and_bounded),
        cmocka_unit_test(test_frame_feeds_batch_by_default_json_feeds_do_not),
        cmocka_unit_test(test_memory_plan_fits_the_budget_and_librdkafka_rules),
        cmocka_unit_test(test_feeds_document_is_validated_before_anything_changes),
        cmocka_unit_test(test_equal_json_means_unchanged_feed),
        cmocka_unit_test(test_the_feeds_file_example_in_docs_adapter_md_is_accepted),
        cmocka_unit_test(test_file_options_of_wrong_type_or_range_are_refused_with_their_path),
        cmocka_unit_test(test_kafka_exactly_once_is_a_boolean_and_passthrough_is_taken),
        cmocka_unit_test(test_kafka_topic_and_consumer_are_checked_with_their_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
