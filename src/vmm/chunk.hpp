// One physical chunk of a virtual-memory range: a CUmemGenericAllocationHandle
// from cuMemCreate (or imported from another process), owned alone and
// released with the object. Shared (std::shared_ptr) by every mapping of it,
// so that the memory lives while any range maps it: a range remapped to a
// larger one maps the same chunks in both until the old one is destroyed.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <memory>

#include "spec.hpp"

namespace cumem::core::vmm {

class Chunk {
 public:
  // cuMemCreate of `size` bytes, a non-zero multiple of spec->granularity()
  // (else invalid_argument). Out of memory is Error(out_of_memory).
  static std::shared_ptr<Chunk> create(std::shared_ptr<const Spec> spec, size_t size);
  // Takes ownership of `handle` (cuMemImportFromShareableHandle's), of
  // `size` bytes; on a throw the handle is released.
  static std::shared_ptr<Chunk> adopt(std::shared_ptr<const Spec> spec,
                                      CUmemGenericAllocationHandle handle, size_t size);
  // cuMemRelease. The driver frees the memory once no mapping of it is
  // left either. Its owners (ranges, the virtual resource) destroy chunks
  // with the device's context current; a failure goes to the log.
  ~Chunk();
  Chunk(const Chunk&) = delete;
  Chunk& operator=(const Chunk&) = delete;

  CUmemGenericAllocationHandle handle() const noexcept { return handle_; }
  size_t size() const noexcept { return size_; }
  const Spec& spec() const noexcept { return *spec_; }
  // A new POSIX file descriptor of the chunk (close-on-exec), owned by the
  // caller (cuMemExportToShareableHandle). not_supported unless the spec's
  // handle types include POSIX fds.
  int export_fd() const;

 private:
  Chunk(std::shared_ptr<const Spec> spec, CUmemGenericAllocationHandle handle, size_t size)
      : spec_(std::move(spec)), handle_(handle), size_(size) {
    spec_->count_chunk_created();
  }

  std::shared_ptr<const Spec> spec_;
  CUmemGenericAllocationHandle handle_;
  size_t size_;
};

}  // namespace cumem::core::vmm
