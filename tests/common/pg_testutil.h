/* The PostgreSQL of the integration tests (NDD_TEST_PG), directly or through a proxy the test
 * can cut to stage an outage. */
#ifndef NDD_TESTS_PG_TESTUTIL_H
#define NDD_TESTS_PG_TESTUTIL_H

#include <stddef.h>

#include "http_testutil.h"

/* NDD_TEST_PG; exits with a message naming the variable when it is unset. */
const char *ptu_conninfo(void);
/* Starts a proxy in front of NDD_TEST_PG and writes into out a conninfo that connects through
 * it (the password the direct connection used is added, since a passfile names the real host
 * and port). Fails the test when NDD_TEST_PG does not parse or connect. */
htu_proxy_t *ptu_proxy_conninfo(char *out, size_t cap);
/* DROP SCHEMA IF EXISTS schema CASCADE, quietly; nothing when NDD_TEST_PG cannot connect. */
void ptu_drop_schema(const char *schema);
/* Runs `admin_bin token create --role role --name name --db-schema schema` (the documented
 * bootstrap; its stderr appended to log) and writes the token into tok. Fails the test when the
 * command fails or prints no "ndd_" token. */
void ptu_admin_token(const char *admin_bin, const char *schema, const char *role, const char *name,
                     const char *log, char *tok, size_t len);

#endif
