/* The feed schema (feed_schema.h): the feed object, every transport and every encoding, built
 * from the same rows feed_config.c checks feeds with. Nothing here names a transport or an
 * encoding: a row added to either table appears in the schema by being added. */
#include "feed_schema.h"

#include <stdio.h>
#include <string.h>

#include "encoding.h"
#include "transport_desc.h"

static json_t *feed_schema_strings(const char *const *v, size_t max)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < max && v[i]; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

static json_t *feed_schema_transport(const transport_desc_t *d)
{
    json_t *schemes = json_array(), *sections = json_array();
    for (size_t i = 0; i < TRANSPORT_MAX_SCHEMES && d->schemes[i].name; i++)
        json_array_append_new(schemes, json_string(d->schemes[i].name));
    json_array_append_new(sections, json_string("delivery"));
    if (d->sections & TRANSPORT_SECTION_TLS)
        json_array_append_new(sections, json_string("tls"));
    if (d->sections & TRANSPORT_SECTION_HTTP)
        json_array_append_new(sections, json_string("http"));
    json_t *o =
        json_pack("{s:s,s:o,s:s?,s:o,s:s,s:b,s:b,s:b,s:o,s:s?,s:o}", "name", d->name, "schemes",
                  schemes, "url_example", d->url_example, "encodings",
                  feed_schema_strings(d->encodings, TRANSPORT_MAX_ENCODINGS), "acknowledged",
                  d->ack == TRANSPORT_ACK_DURABLE ? "durable" : "peer", "exactly_once",
                  d->exactly_once, "fire_and_forget", d->fire_and_forget, "provisions_topic",
                  d->provisions_topic, "sections", sections, "member", d->options, "options",
                  d->options ? optdesc_schema(d->option_desc, d->options) : json_array());
    return o;
}

static json_t *feed_schema_encoding(const encoding_t *e)
{
    return json_pack("{s:s,s:s,s:i,s:b,s:s?,s:o}", "name", e->name, "content_type", e->content_type,
                     "default_batch", (int)(e->default_batch ? e->default_batch : 1), "raw", e->raw,
                     "member", e->options, "options",
                     e->options ? optdesc_schema(e->option_desc, e->options) : json_array());
}

/* The feed's own members, with the choices of transport and encoding from their tables. */
static json_t *feed_schema_members(size_t name_max)
{
    const char *transports[TRANSPORT_MAX + 1], *encodings[ENCODING_MAX + 1];
    size_t nt = 0, ne = 0;
    for (; nt < transport_count(); nt++)
        transports[nt] = transport_at(nt)->name;
    transports[nt] = NULL;
    for (; ne < encoding_count(); ne++)
        encodings[ne] = encoding_at(ne)->name;
    encodings[ne] = NULL;
    json_t *a = json_array();
    for (const optdesc_t *d = feed_config_desc; a && d->type != OPTDESC_END; d++) {
        const char *const *choices = NULL;
        if (!strcmp(d->name, "transport"))
            choices = transports;
        else if (!strcmp(d->name, "encoding"))
            choices = encodings;
        json_t *row = optdesc_schema_row(d, "", choices);
        if (row && !strcmp(d->name, "name") && name_max)
            json_object_set_new(row, "maxLength", json_integer((json_int_t)name_max));
        json_array_append_new(a, row);
    }
    return a;
}

json_t *feed_schema_json(size_t name_max)
{
    json_t *ts = json_array(), *es = json_array();
    for (size_t i = 0; i < transport_count(); i++)
        json_array_append_new(ts, feed_schema_transport(transport_at(i)));
    for (size_t i = 0; i < encoding_count(); i++)
        json_array_append_new(es, feed_schema_encoding(encoding_at(i)));
    return json_pack("{s:o,s:o,s:o}", "feed", feed_schema_members(name_max), "transports", ts,
                     "encodings", es);
}
