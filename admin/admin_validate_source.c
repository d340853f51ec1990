/* NF sources (the ingest topics) and correlation settings. */
#include <string.h>

#include "admin.h"
#include "admin_validate.h"

int admin_validate_source(json_t *body, admin_err_t *err)
{
    static const char *const fields[] = {"name",         "type",        "topic",       "partitions",
                                         "retention_ms", "replication", "description", NULL};
    static const char *const types[] = {"SCP", "NRF", "SEPP", "BSF", "PCF", "NON_NF", NULL};
    const char *s;
    if (admin_validate_unknown(body, fields, "", true, err) != 0 ||
        admin_validate_name(body, "name", "", true, err) ||
        admin_validate_enum(body, "type", "", true, types, NULL, err) != 0 ||
        admin_validate_topic(body, "topic", "", true, err) != 0 ||
        admin_validate_int(body, "partitions", "", false, 1, 10000, err) != 0 ||
        admin_validate_int(body, "replication", "", false, 1, 16, err) != 0 ||
        admin_validate_string(body, "description", "", false, 1024, &s, err) != 0)
        return -1;
    json_t *r = json_object_get(body, "retention_ms");
    /* -1 is Kafka's "keep forever"; anything else at least a minute. */
    if (r && json_is_integer(r) && json_integer_value(r) == -1)
        return 0;
    return admin_validate_int(body, "retention_ms", "", false, 60000, INT64_C(31536000000) * 10,
                              err);
}

int admin_validate_correlation(json_t *body, admin_err_t *err)
{
    static const char *const fields[] = {"name",
                                         "enabled",
                                         "source_topic",
                                         "xdr_topic",
                                         "timeout_ms",
                                         "max_open_per_partition",
                                         "extract_subscriber",
                                         "description",
                                         NULL};
    const char *s;
    if (admin_validate_unknown(body, fields, "", true, err) != 0 ||
        admin_validate_name(body, "name", "", true, err) ||
        admin_validate_bool(body, "enabled", "", false, err) != 0 ||
        admin_validate_topic(body, "source_topic", "", false, err) != 0 ||
        admin_validate_topic(body, "xdr_topic", "", false, err) != 0 ||
        admin_validate_int(body, "timeout_ms", "", false, 1, 600000, err) != 0 ||
        admin_validate_int(body, "max_open_per_partition", "", false, 1, 100000000, err) != 0 ||
        admin_validate_bool(body, "extract_subscriber", "", false, err) != 0 ||
        admin_validate_string(body, "description", "", false, 1024, &s, err) != 0)
        return -1;
    return 0;
}
