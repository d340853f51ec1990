/* A feed's configuration, parsed strictly from its JSON (docs/adapter.md has the format):
 * {"name","source_topic","dlq_topic","filter","encoding","transport",
 *  "endpoints":[{"url","weight"}],"delivery":{…},"tls":{…},"http":{…}}.
 * The one parser of that format: the adapter's workers run it to apply a feed, the admin runs
 * it to refuse a bad one before it is stored. A refusal is a jfield_err_t naming the JSON path
 * of the problem (e.g. `endpoints[1].url`, `delivery.timeout_ms`), its kind and a reason. */
#ifndef NDD_SERVICES_FEED_CONFIG_H
#define NDD_SERVICES_FEED_CONFIG_H

#include "feed_config-t.h"
#include "optdesc.h"

/* The feed object's members (name, topics, filter, transport, encoding, endpoints, delivery,
 * tls, http): the description the parser checks with and feed_schema.h serves. */
extern const optdesc_t feed_config_desc[];

/* Parses one feed object. opts NULL: the workers' parse (secrets read, inline filters only).
 * NULL with *err set when the feed is refused. */
feed_config_t *feed_config_parse(const json_t *j, const feed_config_opts_t *opts,
                                 jfield_err_t *err);
void feed_config_free(feed_config_t *c);
/* true when both were parsed from equal JSON. */
bool feed_config_equal(const feed_config_t *a, const feed_config_t *b);
/* "<where>.<path>: <reason>" (where e.g. "feeds[2]"; either may be empty) for log lines. */
void feed_config_err_format(const jfield_err_t *err, const char *where, char *out, size_t outlen);

#endif
