// Stream-ordered allocation from a cuMemPool: the device, pinned and managed
// kinds differ only in how their pool is made (see their factories).
#pragma once

#include "resource.hpp"

namespace cumem::core {

class PoolResource final : public Resource {
 public:
  // Takes the pool; destroys it at the end when `owned`. With
  // `within_free_memory` (managed pools) no allocation may exceed the
  // device's free memory.
  PoolResource(Ref<Device> device, const ResourceProperties& properties, CUmemoryPool pool,
               bool owned, std::string name, bool within_free_memory = false);
  CUmemoryPool pool() const noexcept override { return pool_; }
  std::string describe() const override { return name_; }

 protected:
  void* do_allocate(size_t size, const Stream* stream) override;
  void do_deallocate(void* ptr, size_t size, const Stream* stream) override;
  std::string usage_details() const override;

 private:
  ~PoolResource() override;

  CUmemoryPool pool_;
  bool owned_;
  bool within_free_memory_;
  std::string name_;
};

// Sets a pool's release threshold (UINT64_MAX keeps all freed memory).
void set_release_threshold(CUmemoryPool pool, uint64_t threshold);

}  // namespace cumem::core
