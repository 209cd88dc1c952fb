// What a buffer's memory is. Base layer: no CUDA, no C types, so that the
// IPC descriptor (plain bytes, src/ipc/) and the resources share it. The
// values are the C ABI's cumem_memory_kind_t (asserted in capi/enums.cpp);
// the IPC descriptor's bytes number the kinds their own way and map them
// in src/ipc/descriptor.cpp.
#pragma once

namespace cumem::core {

enum class MemoryKind { host = 0, device = 1, pinned = 2, managed = 3 };

// "host", "device", "pinned", "managed": for messages and JSON.
inline const char* memory_kind_name(MemoryKind kind) noexcept {
  switch (kind) {
    case MemoryKind::host: return "host";
    case MemoryKind::device: return "device";
    case MemoryKind::pinned: return "pinned";
    case MemoryKind::managed: return "managed";
  }
  return "unknown";
}

}  // namespace cumem::core
