// The upstream of the expandable cache in the host tests: a callback
// resource that says it is device memory of device 0 (so the cache may be
// expandable over it) and serves the small blocks, the only ones it is
// asked for, from host memory, counting the bytes it holds.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>

#include "cumem/cumem.h"

inline std::atomic<int64_t> upstream_bytes{0};

inline int32_t upstream_allocate(size_t size, void*, void*, void** out) {
  *out = std::aligned_alloc(256, (size + 255) / 256 * 256);
  if (*out) upstream_bytes += static_cast<int64_t>(size);
  return *out ? 0 : 1;
}
inline void upstream_deallocate(void* ptr, size_t size, void*, void*) {
  upstream_bytes -= static_cast<int64_t>(size);
  std::free(ptr);
}

// The callback resource on `device`; CUMEM_SUCCESS and *out, or the status.
inline cumem_status_t host_upstream_create(cumem_device_t* device, cumem_resource_t** out) {
  cumem_resource_callbacks_t c = CUMEM_RESOURCE_CALLBACKS_INIT;
  c.memory_kind = CUMEM_MEMORY_DEVICE;
  c.allocate = upstream_allocate;
  c.deallocate = upstream_deallocate;
  c.stream_ordered = CUMEM_TRUE;
  return cumem_callback_resource_create(device, &c, out);
}
