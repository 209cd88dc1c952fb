// What a resource whose memory can be exported as a dma-buf knows: the
// driver allocation behind one of its allocations, in the form
// cuMemGetHandleForAddressRange takes (one range, wholly mapped, on one
// device, of memory with one set of allocation properties). A capability
// beside the Resource interface, found by dynamic_cast as Trimmable and
// Snapshottable are: the pools (device memory), the legacy device resource
// and the virtual resource answer it; adaptors pass the question on to
// their upstream (adaptor.hpp), the caching adaptor with the segment that
// holds the block and the aligned adaptor with the upstream's allocation.
// The export itself is src/dmabuf.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "resource.hpp"

namespace cumem::core {

struct DmaBufSpan {
  uintptr_t base = 0;
  size_t size = 0;  // 0: none
};

struct DmaBufRanges {
  const Device* device = nullptr;  // whose memory it is (the context of the call)
  DmaBufSpan whole;   // the backing allocation that holds the bytes
  // Virtual memory: the chunks that hold the bytes, alone; tried when the
  // driver refuses `whole` (a range over several chunks). Empty when there
  // is nothing smaller than `whole` to try.
  DmaBufSpan chunks;
  std::string what;   // "the pool allocation", ... for messages
  // Added to the driver's CUDA_ERROR_INVALID_VALUE for `whole`: what the
  // kind of memory knows of such refusals ("" when nothing).
  const char* refusal_hint = "";
};

class DmaBufSource {
 public:
  // The ranges for the bytes [first, first + bytes) of the allocation
  // (ptr, size) that this resource handed out (allocate_raw's), which the
  // caller holds. Throws not_supported, naming why, for memory that cannot
  // be exported (imported from another process, ...).
  virtual DmaBufRanges dmabuf_ranges(void* ptr, size_t size, uintptr_t first,
                                     size_t bytes) const = 0;

 protected:
  ~DmaBufSource() = default;
};

// `resource`'s answer; not_supported naming the memory (host, pinned,
// managed, or a kind that does not know its driver allocations) when it
// has none.
DmaBufRanges dmabuf_ranges_of(const Resource& resource, void* ptr, size_t size, uintptr_t first,
                              size_t bytes);

// The driver's allocation that holds [first, first + bytes)
// (cuMemGetAddressRange), in `device`'s context; `what` names the memory
// in messages. For memory from cuMemAlloc and memory pools.
DmaBufSpan driver_allocation(const Device& device, uintptr_t first, size_t bytes,
                             const std::string& what);

}  // namespace cumem::core
