// Where the expandable segments' memory comes from: address ranges reserved
// once, with physical pages mapped into them and unmapped again. The real
// source is the virtual-memory layer (vmm_pages.hpp: vmm::Range over the
// upstream's device); the host tests use a recording one. A page costs
// the same driver calls whatever its size (more while kernels run, though
// none waits for them), so a source may have two page sizes: large pages for the blocks of
// at least two large pages, small pages for the others, each size in
// ranges of its own (vmm_pages.hpp says which sizes, and why).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "../../error.hpp"
#include "../../ipc/owned_fds.hpp"

namespace cumem::core::caching {

// One reserved address range, mapped in pages of one size. Not
// thread-safe: the cache calls it under its central lock.
class PageRange {
 public:
  virtual ~PageRange() = default;  // unmaps what is mapped, frees the address space
  virtual char* base() const = 0;
  virtual uint64_t size() const = 0;
  // What map and unmap work in: every offset and size is a multiple.
  virtual uint64_t page_size() const = 0;
  // Physical memory for [offset, offset + bytes), multiples of the page
  // size, nothing mapped there yet; all or nothing. Out of memory:
  // Error(out_of_memory), nothing mapped.
  virtual void map(uint64_t offset, uint64_t bytes) = 0;
  // Unmaps [offset, offset + bytes) (whole pages, mapped) at once, from
  // `offset` up: the caller ordered it after the work that used the memory.
  // Returns the bytes unmapped: all of them, or fewer when the driver
  // refused a page (logged), which stays mapped with the pages after it.
  virtual uint64_t unmap(uint64_t offset, uint64_t bytes) noexcept = 0;
  // Grants (read_write) or revokes device `ordinal`'s read-write access to
  // every page mapped now and later (the range's own device keeps its
  // own); all or nothing.
  virtual void set_access(int ordinal, bool read_write) = 0;
  // The physical memory of [offset, offset + bytes) (whole pages, every one
  // mapped) for another process: one new POSIX file descriptor per page
  // (added to `fds`) and its (offset from `offset`, size) appended to
  // `pages`. not_supported when the pages were not made shareable
  // (PageSource::shareable()).
  virtual void export_pages(uint64_t offset, uint64_t bytes,
                            std::vector<std::pair<uint64_t, uint64_t>>& pages,
                            OwnedFds& fds) const {
    (void)offset, (void)bytes, (void)pages, (void)fds;
    fail(Status::not_supported, "these pages cannot be exported");
  }
};

class PageSource {
 public:
  virtual ~PageSource() = default;
  // The pages of ranges for blocks smaller than two large pages.
  virtual uint64_t page_size() const = 0;
  // The pages of ranges for blocks of at least two of them (so that a
  // block's last, partly used page is at most a third of what it maps): a
  // multiple of page_size(); equal to it when the source has one size.
  virtual uint64_t large_page_size() const { return page_size(); }
  // The page size of the ranges that map blocks of `rounded` bytes.
  uint64_t page_for(uint64_t rounded) const {
    const uint64_t large = large_page_size();
    return rounded >= 2 * large ? large : page_size();
  }
  // The address space a stream's first range of either page size reserves
  // (enough for the device's whole memory and some more, as PyTorch's
  // expandable segments): a multiple of large_page_size().
  virtual uint64_t range_size() const = 0;
  // A new range of `bytes` (a multiple of `page`, which is page_size() or
  // large_page_size()) mapped in pages of `page`, nothing mapped yet.
  virtual std::unique_ptr<PageRange> reserve(uint64_t bytes, uint64_t page) = 0;
  // The resource the pages are for (its id): ranges reserved from then on
  // tell the unmap subscribers before pages are unmapped (src/unmap_events.hpp).
  virtual void set_owner(uint64_t resource_id) { (void)resource_id; }
  // Whether its pages can be exported (made with the POSIX fd handle type).
  virtual bool shareable() const { return false; }
  // The granularity the pages were made at, for the descriptor of exported
  // pages.
  virtual uint64_t granularity() const { return page_size(); }
};

}  // namespace cumem::core::caching
