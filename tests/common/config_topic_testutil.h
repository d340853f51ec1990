/* Reading a config-topic follower (services/kafka/config_topic.h) the way its owners do, for
 * the unit and integration tests and the fuzz target (tests/CMakeLists.txt links it into the
 * fuzz targets through ndd_fuzzutil). */
#ifndef NDD_TEST_CONFIG_TOPIC_TESTUTIL_H
#define NDD_TEST_CONFIG_TOPIC_TESTUTIL_H

#include <jansson.h>

#include "config_topic.h"

/* The record the follower holds for kind/id, found with config_topic_foreach as the workers
 * resolve their configuration; borrowed, valid until the next poll. NULL when none. */
json_t *cttu_held(const config_topic_t *ft, const char *kind, const char *id);
/* Polls the follower (config_topic_poll, 100 ms at a time) until config_topic_loaded, as
 * worker_control_wait_loaded does: 0, or -1 when timeout_ms passed first. */
int cttu_wait_loaded(config_topic_t *ft, int timeout_ms);

#endif
