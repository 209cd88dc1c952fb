// Status codes of the core. capi/ maps them 1:1 onto cumem_status_t (the
// values are equal and checked there), so src/ never includes cumem.h.
#pragma once

#include <cstdint>

namespace cumem::core {

enum class Status : int32_t {
  success = 0,
  invalid_argument = 1,
  out_of_memory = 2,
  no_driver = 3,
  no_device = 4,
  not_supported = 5,
  buffer_closed = 6,
  size_mismatch = 7,
  out_of_range = 8,
  wrong_device = 9,
  invalid_state = 10,
  driver = 11,
  no_compiler = 12,
  compilation = 13,
  not_found = 14,
  invalid_launch_config = 15,
  out_of_resources = 16,
  internal = 99,
};

}  // namespace cumem::core
