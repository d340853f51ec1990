/* Keeps ndd_testutil non-empty before any shared test helper exists. */
int ndd_testutil_linked;
