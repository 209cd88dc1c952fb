// One chunk mapped at one address (cuMemMap), owned alone and unmapped with
// the object (cuMemUnmap) unless unmap() or abandon() came first; the
// object drops its share of the chunk. A mapping starts with no access;
// set_access grants it.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "chunk.hpp"

namespace cumem::core::vmm {

class Mapping {
 public:
  // Maps all of `chunk` at `address`, which must lie in a reservation with
  // nothing mapped over [address, address + chunk->size()).
  static std::unique_ptr<Mapping> map(CUdeviceptr address, std::shared_ptr<Chunk> chunk);
  // cuMemUnmap, unless unmap() or abandon() came first: the caller orders
  // it after the GPU work that used the memory. A failure goes to the log.
  ~Mapping();
  // cuMemUnmap now, reporting a failure (Error with the driver's status):
  // the memory then stays mapped, and a later unmap() or the destructor
  // tries again. After success the destructor only drops the chunk.
  void unmap();
  // Gives up on unmapping (after unmap() failed where no one can report
  // it): the destructor leaves the address mapped and only drops the
  // chunk, whose memory the driver frees if it ever unmaps the address.
  void abandon() noexcept { mapped_ = false; }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  CUdeviceptr address() const noexcept { return address_; }
  size_t size() const noexcept { return chunk_->size(); }
  CUdeviceptr end() const noexcept { return address_ + chunk_->size(); }
  const std::shared_ptr<Chunk>& chunk() const noexcept { return chunk_; }
  // cuMemSetAccess of every descriptor over the whole mapping; nothing for
  // an empty list.
  void set_access(const std::vector<CUmemAccessDesc>& descriptors) const;

 private:
  Mapping(CUdeviceptr address, std::shared_ptr<Chunk> chunk)
      : address_(address), chunk_(std::move(chunk)) {}

  CUdeviceptr address_;
  std::shared_ptr<Chunk> chunk_;
  bool mapped_ = true;
};

}  // namespace cumem::core::vmm
