// Where the expandable segments' memory comes from: address ranges reserved
// once, with physical pages mapped into them and unmapped again. The real
// source is the virtual-memory layer (vmm_pages.hpp: vmm::Range over the
// upstream's device); the host tests use a recording one. Mapping is
// synchronous with the GPU and costs about the same per page whatever its
// size; the default page is still small (2 MiB, vmm_pages.hpp says why).
#pragma once

#include <cstdint>
#include <memory>

namespace cumem::core::caching {

// One reserved address range. Not thread-safe: the cache calls it under its
// central lock.
class PageRange {
 public:
  virtual ~PageRange() = default;  // unmaps what is mapped, frees the address space
  virtual char* base() const = 0;
  virtual uint64_t size() const = 0;
  // Physical memory for [offset, offset + bytes), multiples of the page
  // size, nothing mapped there yet; all or nothing. Out of memory:
  // Error(out_of_memory), nothing mapped.
  virtual void map(uint64_t offset, uint64_t bytes) = 0;
  // Unmaps [offset, offset + bytes) (whole pages, mapped) at once: the
  // caller ordered it after the work that used the memory.
  virtual void unmap(uint64_t offset, uint64_t bytes) = 0;
};

class PageSource {
 public:
  virtual ~PageSource() = default;
  // What map and unmap work in: every offset and size is a multiple.
  virtual uint64_t page_size() const = 0;
  // The address space a stream's first range reserves (enough for the
  // device's whole memory and some more, as PyTorch's expandable segments).
  virtual uint64_t range_size() const = 0;
  // A new range of `bytes` (a multiple of page_size()) with nothing mapped.
  virtual std::unique_ptr<PageRange> reserve(uint64_t bytes) = 0;
  // The resource the pages are for (its id): ranges reserved from then on
  // tell the unmap subscribers before pages are unmapped (src/unmap_events.hpp).
  virtual void set_owner(uint64_t resource_id) { (void)resource_id; }
};

}  // namespace cumem::core::caching
