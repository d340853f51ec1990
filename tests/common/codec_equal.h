/* Equality of two decoded message copies, for the codec's round-trip checks: the unit and
 * integration tests and the fuzz targets (tests/CMakeLists.txt links this file into each fuzz
 * target; the tests have it in ndd_testutil). The product never compares copies. */
#ifndef NDD_TEST_CODEC_EQUAL_H
#define NDD_TEST_CODEC_EQUAL_H

#include <stdbool.h>

#include "codec.h"

/* Field-by-field equality of two decoded copies (contents, not pointers). */
bool codec_equal_msg(const codec_msg_t *a, const codec_msg_t *b);

#endif
