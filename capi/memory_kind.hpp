// cumem_memory_kind_t <-> core::MemoryKind. The C values start at 0 (host,
// the default of cumem_resource_callbacks_t); the core's are those of the
// IPC descriptor's bytes (1..4, so that 0 there is never a kind). Named one
// by one, so that neither numbering depends on the other.
#pragma once

#include <string>

#include "capi.hpp"
#include "../src/resources/resource.hpp"

namespace cumem::capi {

inline cumem_memory_kind_t to_c(core::MemoryKind kind) noexcept {
  switch (kind) {
    case core::MemoryKind::host: return CUMEM_MEMORY_HOST;
    case core::MemoryKind::device: return CUMEM_MEMORY_DEVICE;
    case core::MemoryKind::pinned: return CUMEM_MEMORY_PINNED;
    case core::MemoryKind::managed: return CUMEM_MEMORY_MANAGED;
  }
  return CUMEM_MEMORY_HOST;  // unreachable: every core kind is named above
}

// A caller's value, checked: INVALID_ARGUMENT naming `name` for a value that
// is not a cumem_memory_kind_t.
inline core::MemoryKind to_core(cumem_memory_kind_t kind, const char* name) {
  switch (kind) {
    case CUMEM_MEMORY_HOST: return core::MemoryKind::host;
    case CUMEM_MEMORY_DEVICE: return core::MemoryKind::device;
    case CUMEM_MEMORY_PINNED: return core::MemoryKind::pinned;
    case CUMEM_MEMORY_MANAGED: return core::MemoryKind::managed;
    default: break;
  }
  fail(Status::invalid_argument, std::string(name) + " " +
                                     std::to_string(static_cast<int>(kind)) +
                                     " is not a cumem_memory_kind_t");
}

}  // namespace cumem::capi
