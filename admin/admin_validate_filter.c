/* Filters are checked by the filter engine itself (filter_compile), so the admin refuses
 * exactly what the workers would refuse. The name goes through admin_validate_name first, the rule
 * every admin object's name follows, so a bad filter name gets the same 422 as a bad feed name. Its
 * message "path: problem" is split into the error's field and reason by jfield_from_filter, as the
 * feed parser does for inline filters. */
#include "admin.h"
#include "admin_validate.h"
#include "filter.h"

int admin_validate_filter(json_t *body, admin_err_t *err)
{
    if (!json_is_object(body)) {
        admin_err_set(err, 400, "wrong type", "", "a filter must be a JSON object");
        return -1;
    }
    if (admin_validate_name(body, "name", "", true, err) != 0)
        return -1;
    json_t *spec = admin_strip_server_fields(body);
    if (!spec) {
        admin_err_set(err, 500, "internal", "", "out of memory");
        return -1;
    }
    char msg[512] = "";
    filter_t *f = filter_compile(spec, msg, sizeof(msg));
    json_decref(spec);
    if (f) {
        filter_release(f);
        return 0;
    }
    jfield_err_t fe;
    jfield_from_filter(&fe, "", msg);
    admin_err_from_field(err, &fe);
    return -1;
}
