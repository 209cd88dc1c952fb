#include "pool_resource.hpp"

#include "../driver/driver.hpp"
#include "../error.hpp"

namespace cumem::core {

PoolResource::PoolResource(Ref<Device> device, const ResourceProperties& properties,
                           CUmemoryPool pool, bool owned, std::string name,
                           bool within_free_memory)
    : Resource(std::move(device), properties),
      pool_(pool),
      owned_(owned),
      within_free_memory_(within_free_memory),
      name_(std::move(name)) {}

PoolResource::~PoolResource() {
  if (!owned_) return;
  // The driver keeps the pool until its outstanding allocations are freed.
  try {
    ScopedContext scope(*device_);
    CUMEM_CU_QUIET(cuMemPoolDestroy, (pool_));
  } catch (...) {
  }
}

void* PoolResource::do_allocate(size_t size, const Stream* stream) {
  if (within_free_memory_) check_within_free_memory(*device_, size);
  ScopedContext scope(context_device(stream));
  CUdeviceptr ptr = 0;
  CUMEM_CU(cuMemAllocFromPoolAsync, (&ptr, size, pool_, native_or_legacy(stream)),
           "allocating " + describe_bytes(size) + " from " + name_);
  return reinterpret_cast<void*>(ptr);
}

void PoolResource::do_deallocate(void* ptr, size_t size, const Stream* stream) {
  ScopedContext scope(context_device(stream));
  CUMEM_CU(cuMemFreeAsync, (reinterpret_cast<CUdeviceptr>(ptr), native_or_legacy(stream)),
           "freeing " + describe_bytes(size) + " to " + name_);
}

std::string PoolResource::usage_details() const {
  try {
    const PoolAttributes a = pool_attributes();
    return "; the pool reserves " + describe_bytes(a.reserved_current) + " and uses " +
           describe_bytes(a.used_current);
  } catch (...) {
    return "";
  }
}

void set_release_threshold(CUmemoryPool pool, uint64_t threshold) {
  cuuint64_t value = threshold;
  CUMEM_CU(cuMemPoolSetAttribute, (pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &value),
           "setting a pool's release threshold");
}

}  // namespace cumem::core
