/* The walk-through of docs/contributing.md, "Adding an ingress listener": a test-only listener
 * "toy", ONE file plus ONE table row (test_ingress_listener_added_by_one_file_and_one_row/:
 * ingress_toy.c and tables.c, linked in place of ingress/ingress_table.c), with no other
 * change: it shows in --check-config's listener table, gets its own row (metrics index) and
 * label, and ndd-ingress's run starts it and counts under its label, beside the product's
 * listeners (all off here). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ingress.h"

extern const ingress_listener_kind_t ingress_listener_toy;

/* Every product listener off (no port); the toy is on by itself. */
static ingress_settings_t settings(void)
{
    return (ingress_settings_t){.listen = "127.0.0.1",
                                .h2_port = -1,
                                .ves_port = -1,
                                .hvves_port = -1,
                                .tcp_port = -1,
                                .max_in_flight = 100,
                                .max_in_flight_bytes = 1 << 20,
                                .produce_timeout_ms = 5000};
}

static void test_check_config_lists_the_toy_in_the_listener_table(void **state)
{
    ingress_settings_t S = settings();
    daemon_def_t def = {.name = "ndd-ingress", .settings = &S};
    daemon_t d = {.name = "ndd-ingress", .def = &def};
    char *text = NULL, err[256] = "";
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_int_equal(ingress_check(&d, out, err, sizeof err), 0);
    fclose(out);
    assert_non_null(strstr(text, "listener h2: off\n"));
    assert_non_null(strstr(text, "listener tcp: off\n"));
    if (!strstr(text, "listener toy: on\n"))
        fail_msg("no toy in the listener table:\n%s", text);
    free(text);
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
    ingress_settings_t S = settings();
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
                "ndd_ingress_messages_received_total{transport=\"toy-copy\"} 1"))
        fail_msg("no toy-copy count in:\n%s", (const char *)out.data);
    buf_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_config_lists_the_toy_in_the_listener_table),
        cmocka_unit_test(test_the_toy_gets_its_own_row_and_label),
        cmocka_unit_test(test_ingress_run_starts_the_toy_and_counts_under_its_label),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
