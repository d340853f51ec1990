/* Logging: levels, one line per event, JSON lines that parse, secrets redacted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "log.h"

static char *cap_buf;
static size_t cap_len;
static FILE *cap;

static void capture_start(void)
{
    cap_buf = NULL;
    cap_len = 0;
    cap = open_memstream(&cap_buf, &cap_len);
    assert_non_null(cap);
    log_set_stream(cap);
}

/* Stops capturing; returns the text (caller frees). */
static char *capture_end(void)
{
    log_set_stream(NULL);
    fclose(cap);
    return cap_buf;
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void test_messages_below_the_level_are_dropped(void **state)
{
    log_setup("ndd-test", LOG_LEVEL_WARN, 0);
    capture_start();
    log_debug("debug %d", 1);
    log_info("info %d", 2);
    log_warn("warn %d", 3);
    log_error("error %d", 4);
    char *out = capture_end();
    assert_null(strstr(out, "debug 1"));
    assert_null(strstr(out, "info 2"));
    assert_non_null(strstr(out, " warn  ndd-test test_log.c:"));
    assert_non_null(strstr(out, "warn 3\n"));
    assert_non_null(strstr(out, " error ndd-test "));
    assert_int_equal(count_lines(out), 2);
    free(out);
    log_setup(NULL, LOG_LEVEL_OFF, 0);
    capture_start();
    log_error("nothing");
    out = capture_end();
    assert_string_equal(out, "");
    free(out);
}

static void test_embedded_newlines_stay_on_one_line(void **state)
{
    log_setup("ndd-test", LOG_LEVEL_DEBUG, 0);
    capture_start();
    log_info("feed %s: endpoint said\n\"bad\"\r\nrequest", "f1");
    char *out = capture_end();
    assert_int_equal(count_lines(out), 1);
    assert_non_null(strstr(out, "feed f1: endpoint said \"bad\"  request\n"));
    free(out);
}

static void test_json_lines_parse_and_carry_fields(void **state)
{
    log_setup("/usr/bin/ndd-\"adapter\"", LOG_LEVEL_DEBUG, 1);
    capture_start();
    log_info("topic %s partition %d offset %lld: \"quoted\" \\ and \x01 control", "MAIN", 3, 42LL);
    char big[5000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    memcpy(big + 2040, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 8); /* UTF-8 across the cut */
    log_warn("%s", big);
    char *out = capture_end();
    assert_int_equal(count_lines(out), 2);
    char *second = strchr(out, '\n') + 1;
    json_error_t je;
    json_t *j = json_loadb(out, (size_t)(second - out), 0, &je);
    if (!j)
        fprintf(stderr, "not JSON: %s (%s)\n", out, je.text);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "level")), "info");
    assert_string_equal(json_string_value(json_object_get(j, "program")), "ndd-\"adapter\"");
    assert_string_equal(json_string_value(json_object_get(j, "msg")),
                        "topic MAIN partition 3 offset 42: \"quoted\" \\ and \x01 control");
    assert_non_null(strstr(json_string_value(json_object_get(j, "src")), "test_log.c:"));
    assert_non_null(json_string_value(json_object_get(j, "ts")));
    json_decref(j);
    j = json_loads(second, 0, &je);
    if (!j)
        fprintf(stderr, "long line not JSON: %s\n", je.text);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "level")), "warn");
    json_decref(j);
    free(out);
    log_setup("ndd-test", LOG_LEVEL_INFO, 0);
}

static void test_level_names_parse(void **state)
{
    log_level_t l;
    assert_int_equal(log_level_parse("debug", &l), 0);
    assert_int_equal(l, LOG_LEVEL_DEBUG);
    assert_int_equal(log_level_parse("error", &l), 0);
    assert_int_equal(l, LOG_LEVEL_ERROR);
    assert_int_equal(log_level_parse("off", &l), 0);
    assert_int_equal(l, LOG_LEVEL_OFF);
    assert_int_equal(log_level_parse("verbose", &l), -1);
    assert_int_equal(log_level_parse(NULL, &l), -1);
    log_setup("x", LOG_LEVEL_ERROR, 0);
    assert_int_equal(log_get_level(), LOG_LEVEL_ERROR);
}

static void expect_redacted(const char *in, const char *want)
{
    char out[512];
    log_redact(in, out, sizeof out);
    if (strcmp(out, want) != 0) {
        fprintf(stderr, "redact(\"%s\") = \"%s\", want \"%s\"\n", in, out, want);
        fail();
    }
}

static void test_redact_masks_passwords_tokens_and_userinfo(void **state)
{
    expect_redacted("postgresql://ndd:hunter2@db:5432/ndd", "postgresql://ndd:***@db:5432/ndd");
    expect_redacted("host=db user=ndd password=hunter2 dbname=ndd",
                    "host=db user=ndd password=*** dbname=ndd");
    expect_redacted("host=db password='hun ter2' user=x", "host=db password=*** user=x");
    expect_redacted("https://h/p?user=a&access_token=abc123&x=1",
                    "https://h/p?user=a&access_token=***&x=1");
    expect_redacted("kafka.sasl.password=pw1;sslpassword=pw2;api_key=k3",
                    "kafka.sasl.password=***;sslpassword=***;api_key=***");
    expect_redacted("client_secret=s,name=n", "client_secret=***,name=n");
    /* nothing secret: unchanged */
    expect_redacted("topic=MAIN partition=3 offset=42", "topic=MAIN partition=3 offset=42");
    expect_redacted("http://host:8080/path", "http://host:8080/path");
    expect_redacted("", "");
}

static void test_redact_never_overflows_a_small_buffer(void **state)
{
    char out[8];
    memset(out, 'Z', sizeof out);
    log_redact("postgresql://user:secretpassword@host/db password=abc", out, sizeof out);
    assert_true(memchr(out, '\0', sizeof out) != NULL);
    assert_null(strstr(out, "secret"));
    char one[1];
    log_redact("password=abc", one, 1);
    assert_int_equal(one[0], '\0');
    char *big = malloc(4096);
    memset(big, 'p', 4095);
    big[4095] = '\0';
    memcpy(big, "password=", 9);
    char out2[64];
    log_redact(big, out2, sizeof out2);
    assert_string_equal(out2, "password=***");
    free(big);
}

#define LOG_THREAD_LINES 2000

static void *log_thread(void *arg)
{
    for (int i = 0; i < LOG_THREAD_LINES; i++)
        log_info("thread %s line %d %s", (const char *)arg, i,
                 "padding-padding-padding-padding-padding-padding-padding-padding");
    return NULL;
}

static void test_lines_from_two_threads_never_interleave(void **state)
{
    log_setup("ndd-test", LOG_LEVEL_INFO, 0);
    capture_start();
    pthread_t a, b;
    pthread_create(&a, NULL, log_thread, "A");
    pthread_create(&b, NULL, log_thread, "B");
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    char *out = capture_end();
    assert_int_equal(count_lines(out), 2 * LOG_THREAD_LINES);
    size_t ok = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n"))
        /* a whole line: one prefix, one message, ending where the message ends */
        if (strstr(line, " info  ndd-test ") && strstr(line, "thread ") &&
            strstr(strstr(line, "thread ") + 1, "thread ") == NULL &&
            strcmp(line + strlen(line) - 8, "-padding") == 0)
            ok++;
    assert_int_equal(ok, 2 * LOG_THREAD_LINES);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_messages_below_the_level_are_dropped),
        cmocka_unit_test(test_embedded_newlines_stay_on_one_line),
        cmocka_unit_test(test_json_lines_parse_and_carry_fields),
        cmocka_unit_test(test_level_names_parse),
        cmocka_unit_test(test_redact_masks_passwords_tokens_and_userinfo),
        cmocka_unit_test(test_redact_never_overflows_a_small_buffer),
        cmocka_unit_test(test_lines_from_two_threads_never_interleave),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
