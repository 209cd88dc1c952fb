// The caching adaptor: freed blocks stay cached, by rounded size and by the
// stream they were freed on, and are handed out again without asking the
// upstream. See caching_resource.cpp for the rules, caching/ for its parts.
#pragma once

#include <cstdint>

#include "adaptor.hpp"

namespace cumem::core {

struct CachingStatistics {
  uint64_t bytes_cached = 0;    // in the cache, ready to be handed out
  uint64_t bytes_reserved = 0;  // held from the upstream: handed out (rounded) + cached
  uint64_t peak_bytes_reserved = 0;
  uint64_t hits = 0;            // allocations served from the cache
  uint64_t misses = 0;          // allocations that went to the upstream
  uint64_t stream_reuses = 0;   // hits on a block freed on another stream
  uint64_t oom_retries = 0;     // upstream out of memory: cache released, retried
  uint64_t pages_mapped = 0;    // expandable: pages ever mapped
  uint64_t pages_unmapped = 0;  // expandable: pages ever unmapped
  uint64_t capture_pools = 0;   // private pools of CUDA graph captures
  uint64_t capture_pool_bytes = 0;  // upstream memory they hold (in bytes_reserved too)
  uint64_t recycles = 0;       // expandable: fragments' pages unmapped before mapping new ones
  uint64_t recycle_waits = 0;  // expandable: of those, after a wait for the device
};

struct CachingOptions {
  // Large blocks are pieces of address ranges the cache reserves per stream
  // on the upstream's device, pages mapped on demand (caching/expandable.hpp).
  bool expandable = false;
  uint64_t page_size = 0;  // expandable: bytes mapped at a time; 0: 2 MiB
  // expandable: vmm::kHandlePosixFd makes its pages exportable, so that
  // large blocks can be shared with other processes; 0: they cannot.
  uint32_t handle_types = 0;
  // Only captures begun through libcumem are seen (no driver call per
  // allocation and free while none is underway); else every capture is.
  bool libcumem_captures_only = false;
};

// The caching adaptor's own calls (the C layer finds them by dynamic_cast).
class Caching {
 public:
  virtual CachingStatistics caching_statistics() const = 0;
  // Gives every cached block back to the upstream (waits for the device).
  virtual void release_cached() = 0;
  // Gives cached blocks back until at most keep_bytes stay cached (waits
  // for the device), then, once its frees ran, asks the upstream to give
  // back what it holds unused (trimmable.hpp: a pool trims to 0).
  virtual void trim(uint64_t keep_bytes) = 0;
  // The graph(s) of capture `capture_id` are gone: the capture's private
  // pool gives its memory back (what is free now, after waiting for the
  // device; the rest as it is freed). not_found: no such pool.
  virtual void release_capture_pool(uint64_t capture_id) = 0;

 protected:
  ~Caching() = default;
};

// Expandable needs an upstream of device memory on a device with virtual
// memory management (else not_supported) and a page size that is a
// multiple of the device's granularity (else invalid_argument).
Ref<Resource> create_caching_resource(Ref<Resource> upstream, const CachingOptions& options = {});

}  // namespace cumem::core
