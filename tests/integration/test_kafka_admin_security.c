/* Topic creation (services/kafka/kafka_admin.c) on a listener that requires security: the
 * client's kafka.* properties (as a daemon passes them, read here from the shared stack's client
 * property files) configure the admin client, so NDD creates and finds its topics on an SSL or
 * SASL_SSL listener; without them the same listener refuses it. Needs NDD_TEST_KAFKA_SASL,
 * NDD_TEST_KAFKA_SSL, NDD_TEST_KAFKA_CLIENTS (deploy/local/stack.sh) and NDD_TEST_KAFKA (the
 * plaintext listener of the same broker, to delete the topics). A missing one fails the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "kafka.h"

#define MAX_PROPS 16

typedef struct props {
    kafka_prop_t p[MAX_PROPS];
    size_t n;
    char text[4096];
} props_t;

static const char *need_env(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        fail_msg("%s is not set (. /work/notes/testenv.sh, or deploy/local/stack.sh env)", name);
    return v;
}

/* A Java-style client property file (key=value lines) as librdkafka properties. */
static void read_props(props_t *pr, const char *file)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", need_env("NDD_TEST_KAFKA_CLIENTS"), file);
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot read %s", path);
    size_t len = fread(pr->text, 1, sizeof pr->text - 1, f);
    fclose(f);
    pr->text[len] = '\0';
    pr->n = 0;
    for (char *save = NULL, *line = strtok_r(pr->text, "\n", &save); line && pr->n < MAX_PROPS;
         line = strtok_r(NULL, "\n", &save)) {
        char *eq = strchr(line, '=');
        if (line[0] == '#' || !eq)
            continue;
        *eq = '\0';
        pr->p[pr->n++] = (kafka_prop_t){line, eq + 1};
    }
    assert_true(pr->n > 0);
}

#define TOPIC_PREFIX "ndd-test-admin-"

/* The listeners enforce ACLs: the test principal may create and describe the topics of this
 * test (prefix TOPIC_PREFIX). Granted through the plaintext listener, whose principal is a
 * super user (deploy/local/kafka/server.properties.in); granting again is harmless. */
static void grant(const char *principal)
{
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    assert_int_equal(
        rd_kafka_conf_set(conf, "bootstrap.servers", need_env("NDD_TEST_KAFKA"), err, sizeof err),
        RD_KAFKA_CONF_OK);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    assert_non_null(rk);
    const rd_kafka_AclOperation_t ops[] = {RD_KAFKA_ACL_OPERATION_CREATE,
                                           RD_KAFKA_ACL_OPERATION_DESCRIBE};
    rd_kafka_AclBinding_t *b[2];
    for (int i = 0; i < 2; i++) {
        b[i] = rd_kafka_AclBinding_new(RD_KAFKA_RESOURCE_TOPIC, TOPIC_PREFIX,
                                       RD_KAFKA_RESOURCE_PATTERN_PREFIXED, principal, "*", ops[i],
                                       RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW, err, sizeof err);
        assert_non_null(b[i]);
    }
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_CreateAcls(rk, b, 2, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 15000);
    assert_non_null(ev);
    assert_int_equal(rd_kafka_event_error(ev), RD_KAFKA_RESP_ERR_NO_ERROR);
    size_t n = 0;
    const rd_kafka_acl_result_t **res =
        rd_kafka_CreateAcls_result_acls(rd_kafka_event_CreateAcls_result(ev), &n);
    for (size_t i = 0; i < n; i++)
        assert_null(rd_kafka_acl_result_error(res[i]));
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    for (int i = 0; i < 2; i++)
        rd_kafka_AclBinding_destroy(b[i]);
    rd_kafka_destroy(rk);
}

static void topic_name(char *out, size_t size, const char *what)
{
    snprintf(out, size, TOPIC_PREFIX "%s-%d-%ld", what, (int)getpid(), (long)time(NULL));
}

static void create_on(const char *listener_env, const char *file, const char *principal,
                      const char *what)
{
    grant(principal);
    const char *brokers = need_env(listener_env);
    props_t pr;
    read_props(&pr, file);
    char topic[128];
    topic_name(topic, sizeof topic, what);

    /* Without the properties the listener does not speak to the client: no topic. */
    assert_int_equal(kafka_admin_create_topic_with(brokers, NULL, 0, topic, 2,
                                                   KAFKA_REPLICATION_AUTO, NULL, 0, 3000),
                     -1);
    /* With them (and properties that are not the admin's, which it leaves out), created with
     * NDD's settings and visible with its partitions. */
    kafka_prop_t all[MAX_PROPS + 2];
    memcpy(all, pr.p, pr.n * sizeof *all);
    all[pr.n] = (kafka_prop_t){"linger.ms", "7"};
    all[pr.n + 1] = (kafka_prop_t){"consumer.fetch.wait.max.ms", "10"};
    assert_int_equal(kafka_admin_create_topic_with(brokers, all, pr.n + 2, topic, 2,
                                                   KAFKA_REPLICATION_AUTO, NULL, 0, 15000),
                     0);
    assert_int_equal(kafka_admin_topic_partitions_with(brokers, all, pr.n + 2, topic, 10000), 2);
    /* Created again: already there is success. */
    assert_int_equal(kafka_admin_create_topic_with(brokers, all, pr.n + 2, topic, 2,
                                                   KAFKA_REPLICATION_AUTO, NULL, 0, 15000),
                     0);
    assert_int_equal(kafka_admin_delete_topic(need_env("NDD_TEST_KAFKA"), topic, 15000), 0);
}

static void test_topics_are_created_on_the_sasl_ssl_listener(void **state)
{
    (void)state;
    create_on("NDD_TEST_KAFKA_SASL", "scram.properties", "User:ndd-test-scram", "sasl");
}

static void test_topics_are_created_on_the_ssl_listener(void **state)
{
    (void)state;
    create_on("NDD_TEST_KAFKA_SSL", "ssl.properties", "User:CN=ndd-test-ssl", "ssl");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_topics_are_created_on_the_sasl_ssl_listener),
        cmocka_unit_test(test_topics_are_created_on_the_ssl_listener),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
