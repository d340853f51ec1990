/* The walk-through of docs/contributing.md, "Adding an ingress listener": a test-only listener
 * "toy", ONE file plus ONE table row (test_ingress_listener_added_by_one_file_and_one_row/:
 * ingress_toy.c and tables.c, linked in place of ingress/ingress_table.c), with no other
 * change: its settings are keys of ndd-ingress's config map, it shows in --check-config's
 * listener table, gets its own row (metrics index) and label, and ndd-ingress's run starts it
 * and counts under its label, beside the product's listeners (all off here). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon_role.h"
#include "ingress.h"

extern const ingress_listener_kind_t ingress_listener_toy;

/* ndd-ingress's settings as its config map gives them from argv (every product listener is
 * off by default); the map is kept in *cfg (the strings point into it). */
static ingress_settings_t settings(int argc, char **argv, config_t **cfg)
{
    const daemon_def_t *def = ingress_role.def;
    char err[256];
    *cfg = config_load_env(def->specs, def->n_specs, argc, argv, (char *const[]){NULL}, err,
                           sizeof err);
    if (!*cfg)
        fail_msg("config: %s", err);
    ingress_settings_t S;
    memset(&S, 0, sizeof S);
    assert_int_equal(config_map_apply(*cfg, &S), 0);
    return S;
}

static char *check_config(const ingress_settings_t *S)
{
    daemon_def_t def = {.name = "ndd-ingress", .settings = (void *)S};
    daemon_t d = {.name = "ndd-ingress", .def = &def};
    char *text = NULL, err[256] = "";
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_int_equal(ingress_check(&d, out, err, sizeof err), 0);
    fclose(out);
    return text;
}

static void test_the_toy_settings_are_keys_of_the_config_map(void **state)
{
    const daemon_def_t *def = ingress_role.def;
    bool found = false;
    for (size_t i = 0; i < def->n_specs; i++)
        found |= !strcmp(def->specs[i].key, "toy.messages");
    assert_true(found);
    config_t *cfg;
    ingress_settings_t S =
        settings(2, (char *[]){"ndd-ingress", "--toy.enabled=false", NULL}, &cfg);
    char *text = check_config(&S);
    if (!strstr(text, "listener toy: off\n"))
        fail_msg("--toy.enabled=false did not turn the toy off:\n%s", text);
    free(text);
    config_free(cfg);
}

static void test_check_config_lists_the_toy_in_the_listener_table(void **state)
{
    config_t *cfg;
    ingress_settings_t S = settings(1, (char *[]){"ndd-ingress", NULL}, &cfg);
    char *text = check_config(&S);
    assert_non_null(strstr(text, "listener h2: off\n"));
    assert_non_null(strstr(text, "listener tcp: off\n"));
    if (!strstr(text, "listener toy: on\n"))
        fail_msg("no toy in the listener table:\n%s", text);
    free(text);
    config_free(cfg);
}

static void test_the_toy_gets_its_own_row_and_label(void **state)
{
    ingress_transport_t t = ingress_listener_index(&ingress_listener_toy);
    assert_int_equal(t, INGRESS_T__BUILTIN); /* after the product's rows */
    assert_string_equal(ingress_label(t), "toy-copy");
    assert_string_equal(ingress_label(INGRESS_T_VES), "ves");
}

static void test_ingress_run_starts_the_toy_and_counts_under_its_label(void **state)
{
    config_t *cfg;
    ingress_settings_t S = settings(2, (char *[]){"ndd-ingress", "--toy.messages=3", NULL}, &cfg);
    daemon_def_t def = {.name = "ndd-ingress", .settings = &S};
    volatile sig_atomic_t stop = 1, reload = 0; /* the loop's first tick ends the run */
    daemon_t d = {.name = "ndd-ingress",
                  .def = &def,
                  .brokers = "127.0.0.1:1", /* never reached: nothing is produced */
                  .metrics = metrics_registry_new(),
                  .stop = &stop,
                  .reload = &reload};
    assert_int_equal(ingress_run(&d, &S), 0);
    buf_t out;
    buf_init(&out, 0, 1 << 20);
    assert_int_equal(metrics_render(d.metrics, &out), 0);
    assert_int_equal(buf_append_u8(&out, 0), 0);
    if (!strstr((const char *)out.data,
                "ndd_ingress_messages_received_total{transport=\"toy-copy\"} 3"))
        fail_msg("no toy-copy count in:\n%s", (const char *)out.data);
    buf_free(&out);
    metrics_registry_free(d.metrics);
    config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_toy_settings_are_keys_of_the_config_map),
        cmocka_unit_test(test_check_config_lists_the_toy_in_the_listener_table),
        cmocka_unit_test(test_the_toy_gets_its_own_row_and_label),
        cmocka_unit_test(test_ingress_run_starts_the_toy_and_counts_under_its_label),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
