/* ndd-gui-api's resolve-all step (gui-api/gui_http.c): a metrics URL means every address its
 * host resolves to, each once, bounded, with the URL's port; and one family of them, so a
 * process listening on 127.0.0.1 and ::1 is not counted twice. */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gui.h"

/* What getaddrinfo itself gives for host (TCP), each address once: the reference. */
static int system_count(const char *host, bool *has_v4_loopback)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
    if (getaddrinfo(host, "9102", &hints, &ai) != 0)
        return -1;
    char seen[64][INET6_ADDRSTRLEN + 2];
    int n = 0;
    *has_v4_loopback = false;
    for (struct addrinfo *a = ai; a && n < 64; a = a->ai_next) {
        char s[INET6_ADDRSTRLEN + 2];
        const void *p = a->ai_family == AF_INET
                            ? (const void *)&((struct sockaddr_in *)a->ai_addr)->sin_addr
                            : (const void *)&((struct sockaddr_in6 *)a->ai_addr)->sin6_addr;
        inet_ntop(a->ai_family, p, s + 1, INET6_ADDRSTRLEN);
        s[0] = a->ai_family == AF_INET ? '4' : '6';
        bool dup = false;
        for (int i = 0; i < n && !dup; i++)
            dup = strcmp(seen[i], s) == 0;
        if (!dup)
            strcpy(seen[n++], s);
        if (strcmp(s, "4127.0.0.1") == 0)
            *has_v4_loopback = true;
    }
    freeaddrinfo(ai);
    return n;
}

static void test_resolve_localhost_gives_each_of_its_addresses_once_with_the_port(void **st)
{
    (void)st;
    gui_url_t u;
    gui_addr_t a[GUI_HTTP_MAX_ADDRS];
    char err[256], s[64];
    bool v4;
    int want = system_count("localhost", &v4);
    assert_true(want >= 1 && v4); /* 127.0.0.1, and ::1 where the hosts file lists it */
    assert_int_equal(gui_url_parse("http://localhost:9102/metrics", &u, err, sizeof(err)), 0);
    int n = gui_http_resolve(&u, a, GUI_HTTP_MAX_ADDRS, err, sizeof(err));
    assert_int_equal(n, want);
    bool saw_v4 = false;
    for (int i = 0; i < n; i++) {
        gui_addr_format(&a[i], s, sizeof(s));
        printf("localhost: %s\n", s);
        assert_true(strcmp(s, "127.0.0.1:9102") == 0 || strcmp(s, "[::1]:9102") == 0);
        saw_v4 |= strcmp(s, "127.0.0.1:9102") == 0;
        for (int j = 0; j < i; j++)
            assert_false(a[j].len == a[i].len && memcmp(&a[j].sa, &a[i].sa, a[i].len) == 0);
    }
    assert_true(saw_v4);
    /* bounded: with room for one, one is stored and the count still says how many there are */
    gui_addr_t one[1];
    assert_int_equal(gui_http_resolve(&u, one, 1, err, sizeof(err)), want);
    assert_memory_equal(&one[0].sa, &a[0].sa, a[0].len);
}

static void test_resolve_literals_and_a_name_that_does_not_resolve(void **st)
{
    (void)st;
    gui_url_t u;
    gui_addr_t a[4];
    char err[256], s[64];
    assert_int_equal(gui_url_parse("http://127.0.0.3:9101", &u, err, sizeof(err)), 0);
    assert_int_equal(gui_http_resolve(&u, a, 4, err, sizeof(err)), 1);
    gui_addr_format(&a[0], s, sizeof(s));
    assert_string_equal(s, "127.0.0.3:9101");
    assert_int_equal(gui_url_parse("https://[::1]:9443/m", &u, err, sizeof(err)), 0);
    assert_int_equal(gui_http_resolve(&u, a, 4, err, sizeof(err)), 1);
    gui_addr_format(&a[0], s, sizeof(s));
    assert_string_equal(s, "[::1]:9443");
    assert_int_equal(gui_url_parse("http://no-such-host.invalid:9102", &u, err, sizeof(err)), 0);
    assert_int_equal(gui_http_resolve(&u, a, 4, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "no-such-host.invalid:9102"));
}

static void test_one_family_keeps_ipv4_when_there_is_any(void **st)
{
    (void)st;
    gui_url_t u;
    gui_addr_t a[3];
    char err[256], s[64];
    const char *urls[] = {"http://[::1]:9102", "http://127.0.0.1:9102", "http://127.0.0.2:9102"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(gui_url_parse(urls[i], &u, err, sizeof(err)), 0);
        assert_int_equal(gui_http_resolve(&u, &a[i], 1, err, sizeof(err)), 1);
    }
    assert_int_equal(gui_addrs_one_family(a, 3), 2); /* the v4 ones, in order */
    gui_addr_format(&a[0], s, sizeof(s));
    assert_string_equal(s, "127.0.0.1:9102");
    gui_addr_format(&a[1], s, sizeof(s));
    assert_string_equal(s, "127.0.0.2:9102");
    assert_int_equal(gui_url_parse("http://[::1]:9102", &u, err, sizeof(err)), 0);
    assert_int_equal(gui_http_resolve(&u, a, 1, err, sizeof(err)), 1);
    assert_int_equal(gui_addrs_one_family(a, 1), 1); /* IPv6 only: kept */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolve_localhost_gives_each_of_its_addresses_once_with_the_port),
        cmocka_unit_test(test_resolve_literals_and_a_name_that_does_not_resolve),
        cmocka_unit_test(test_one_family_keeps_ipv4_when_there_is_any),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
