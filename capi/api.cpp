// cumem_get_api: the C ABI as one table of function pointers, filled from
// the generated list (api_table.inc, from capi/api_table.txt).
#include <cstddef>
#include <cstdio>

#include "../include/cumem/cumem_api.h"
#include "capi.hpp"

namespace cumem::capi {
namespace {

const cumem_api_t table = {
    CUMEM_API_TABLE_VERSION,
    sizeof(cumem_api_t),
#define CUMEM_API_ENTRY(name) &name,
#include "api_table.inc"
#undef CUMEM_API_ENTRY
};

// Released versions never move. Version 1 (ABI 1.0): 149 functions from
// cumem_version to cumem_get_log_level, after the two 32-bit header fields.
static_assert(offsetof(cumem_api_t, cumem_version) == 8, "version 1 of the table moved");
static_assert(offsetof(cumem_api_t, cumem_get_log_level) == 8 + 148 * sizeof(void*),
              "version 1 of the table moved: functions are only appended, in a new version");
// While version 1 is the newest, the table is exactly its 149 functions;
// once version 2 exists, its members follow cumem_get_log_level (above).
static_assert(CUMEM_API_TABLE_VERSION > 1 || sizeof(cumem_api_t) == 8 + 149 * sizeof(void*),
              "version 1 is frozen: a new function goes in version 2 (docs/ABI.md)");
static_assert(sizeof(cumem_api_t) >= 8 + 149 * sizeof(void*), "version 1 lost members");

}  // namespace
}  // namespace cumem::capi

CUMEM_EXPORT const cumem_api_t* cumem_get_api(uint32_t version) {
  if (version == 0 || version > CUMEM_API_TABLE_VERSION) {
    char message[96];
    std::snprintf(message, sizeof message,
                  "table version %u is not one this library has (it has 1 to %d)",
                  static_cast<unsigned>(version), CUMEM_API_TABLE_VERSION);
    cumem::capi::record_failure("cumem_get_api", cumem::core::Status::not_supported, message);
    return nullptr;
  }
  return &cumem::capi::table;
}
