/* A test-only transport "toy" for test_schema_feeds: a description row with one option of
 * its own and no implementation (the schema and feed_config read only the description). */
#include "transport_desc.h"

static const optdesc_t toy_desc[] = {
    {.name = "depth", .type = OPTDESC_INT, .min = 1, .max = 9, .def = "3", .help = "toy depth"},
    {0},
};

const transport_desc_t transport_desc_schema_toy = {
    .name = "toy",
    .url_example = "toy:///var/toy",
    .schemes = {{"toy", false, NULL}},
    .url_form = TRANSPORT_URL_LOCAL,
    .url_path = TRANSPORT_PATH_REQUIRED,
    .encodings = {"json"},
    .options = "toy",
    .option_desc = toy_desc,
};
