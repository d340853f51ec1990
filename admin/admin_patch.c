/* JSON merge patch (RFC 7396): an object patch merges member by member, null deletes, any
 * other value replaces. Arrays are replaced whole, which is what the RFC specifies. */
#include "admin.h"

json_t *admin_merge_patch(json_t *target, json_t *patch)
{
    if (!json_is_object(patch))
        return json_deep_copy(patch);
    json_t *result = json_is_object(target) ? json_deep_copy(target) : json_object();
    if (!result)
        return NULL;
    const char *key;
    json_t *value;
    json_object_foreach(patch, key, value)
    {
        if (json_is_null(value)) {
            json_object_del(result, key);
            continue;
        }
        json_t *merged = admin_merge_patch(json_object_get(result, key), value);
        if (!merged || json_object_set_new(result, key, merged) != 0) {
            json_decref(result);
            return NULL;
        }
    }
    return result;
}
