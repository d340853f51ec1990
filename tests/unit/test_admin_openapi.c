/* docs/openapi.yaml and the server's route table describe the same API: every registered
 * (method, path) is documented and every documented operation is registered. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "admin.h"

#define MAX_OPS 256

typedef struct op {
    char method[8];
    char path[128];
    bool matched;
} op_t;

/* The operations of the document's `paths:` block: a path is a key indented by two spaces,
 * an operation a method key indented by four under it. */
static size_t read_openapi_ops(op_t *ops)
{
    FILE *f = fopen(NDD_SOURCE_DIR "/docs/openapi.yaml", "r");
    if (!f)
        fail_msg("cannot open docs/openapi.yaml");
    static const char *const methods[] = {"get",    "post", "put",     "patch",
                                          "delete", "head", "options", NULL};
    char line[512], path[128] = "";
    bool in_paths = false;
    size_t n = 0;
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] != ' ' && line[0] != '\0' && line[0] != '#') {
            in_paths = strcmp(line, "paths:") == 0;
            continue;
        }
        if (!in_paths)
            continue;
        if (strncmp(line, "  /", 3) == 0) {
            size_t len = strcspn(line + 2, ":");
            snprintf(path, sizeof(path), "%.*s", (int)len, line + 2);
            continue;
        }
        if (strncmp(line, "    ", 4) == 0 && line[4] != ' ') {
            for (size_t m = 0; methods[m]; m++) {
                size_t ml = strlen(methods[m]);
                if (strncmp(line + 4, methods[m], ml) == 0 && line[4 + ml] == ':') {
                    assert_true(n < MAX_OPS);
                    snprintf(ops[n].method, sizeof(ops[n].method), "%s", methods[m]);
                    snprintf(ops[n].path, sizeof(ops[n].path), "%s", path);
                    ops[n].matched = false;
                    n++;
                }
            }
        }
    }
    fclose(f);
    return n;
}

static void test_every_route_is_documented_and_every_documented_operation_is_routed(void **state)
{
    static op_t ops[MAX_OPS];
    size_t nops = read_openapi_ops(ops);
    assert_true(nops > 0);
    size_t nroutes;
    const admin_route_t *routes = admin_routes(&nroutes);
    for (size_t i = 0; i < nroutes; i++) {
        bool found = false;
        for (size_t j = 0; j < nops; j++) {
            if (strcasecmp(ops[j].method, admin_method_name(routes[i].method)) == 0 &&
                strcmp(ops[j].path, routes[i].pattern) == 0) {
                found = true;
                ops[j].matched = true;
            }
        }
        if (!found)
            fail_msg("route %s %s is not in docs/openapi.yaml", admin_method_name(routes[i].method),
                     routes[i].pattern);
    }
    for (size_t j = 0; j < nops; j++)
        if (!ops[j].matched)
            fail_msg("docs/openapi.yaml documents %s %s, which the server does not route",
                     ops[j].method, ops[j].path);
}

static void test_write_routes_need_admin_and_reads_do_not(void **state)
{
    size_t n;
    const admin_route_t *routes = admin_routes(&n);
    for (size_t i = 0; i < n; i++) {
        bool write = routes[i].method != ADMIN_GET;
        assert_int_equal(routes[i].write, write);
        /* only the probes go without a token */
        assert_int_equal(routes[i].anonymous, strncmp(routes[i].pattern, "/api/", 5) != 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_route_is_documented_and_every_documented_operation_is_routed),
        cmocka_unit_test(test_write_routes_need_admin_and_reads_do_not),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
