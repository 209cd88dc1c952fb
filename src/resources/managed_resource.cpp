// Unified (managed) memory with a preferred location: from the managed
// cuMemPool of CUDA 13+ drivers, else cuMemAllocManaged. Both kinds refuse
// allocations larger than the device's free memory: oversubscribing managed
// memory can stall the GPU.
#include "../capture.hpp"
#include "../driver/driver.hpp"
#include "../error.hpp"
#include "pool_resource.hpp"
#include "sync_resource.hpp"

namespace cumem::core {
namespace {

ResourceProperties managed_properties(const Device& device, bool pool) {
  ResourceProperties p;
  p.kind = ResourceKind::managed;
  p.memory_kind = MemoryKind::managed;
  p.device_accessible = true;
  p.host_accessible = true;
  p.device_id = device.ordinal();
  p.stream_ordered = pool;
  p.is_pool = pool;
  return p;
}

void check_within_free_memory(const Device& device, size_t size) {
  uint64_t free_bytes = 0, total = 0;
  device.memory_info(free_bytes, total);
  if (size > free_bytes)
    fail(Status::out_of_memory, "managed allocations are limited to the device's free memory (" +
                                    describe_bytes(free_bytes) + " on " + device.describe() +
                                    ") so that they cannot oversubscribe it");
}

// The managed pool, guarded by the device's free memory.
class ManagedPoolResource final : public PoolResource {
 public:
  using PoolResource::PoolResource;

 protected:
  void* do_allocate(size_t size, const Stream* stream) override {
    check_within_free_memory(*device_, size);
    return PoolResource::do_allocate(size, stream);
  }
};

// cuMemAllocManaged with the preferred location advised on each allocation.
class ManagedAllocResource final : public SyncResource {
 public:
  ManagedAllocResource(Ref<Device> device, const ResourceProperties& props, Location preferred)
      : SyncResource(std::move(device), props), preferred_(preferred) {}
  std::string describe() const override {
    return "managed resource (cuMemAllocManaged) of " + device_->describe() +
           ", preferring " + core::describe(preferred_);
  }

 protected:
  void* do_allocate(size_t size, const Stream*) override {
    check_within_free_memory(*device_, size);
    ScopedContext scope(*device_);
    // Synchronous: legal under capture in relaxed mode (not captured; the
    // memory is the caller's until freed).
    RelaxedCaptureMode relaxed;
    CUdeviceptr ptr = 0;
    CUMEM_CU(cuMemAllocManaged, (&ptr, size, CU_MEM_ATTACH_GLOBAL),
             "allocating " + describe_bytes(size) + " of managed memory");
    if (preferred_.type != LocationType::none) {
      const CUresult r = CUMEM_CU_RESULT(
          cuMemAdvise, (ptr, size, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, to_cu(preferred_)));
      if (r != CUDA_SUCCESS) {
        CUMEM_CU_CLEANUP(cuMemFree, (ptr), "freeing managed memory whose advice failed");
        driver::check(r, "cuMemAdvise", "setting the preferred location of managed memory");
      }
    }
    return reinterpret_cast<void*>(ptr);
  }
  void free_now(void* ptr, size_t size) override {
    ScopedContext scope(*device_);
    CUMEM_CU(cuMemFree, (reinterpret_cast<CUdeviceptr>(ptr)),
             "freeing " + describe_bytes(size) + " of managed memory");
  }

 private:
  Location preferred_;
};

}  // namespace

Ref<Resource> create_managed_resource(Ref<Device> device, Location preferred, bool use_pool) {
  validate(preferred,
           {LocationType::none, LocationType::device, LocationType::host, LocationType::host_numa},
           "the preferred location of managed memory");
  if (device->attribute(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY) == 0)
    fail(Status::not_supported, device->describe() + " does not support managed memory");
  const auto& drv = driver::get();
  if (use_pool && drv.cuMemGetDefaultMemPool_fn) {
    ScopedContext scope(*device);
    RelaxedCaptureMode relaxed;  // pool calls while a capture may be underway
    CUmemLocation location = to_cu(preferred);
    CUmemoryPool pool = nullptr;
    // Drivers or devices without managed pools answer with an error: fall
    // back to cuMemAllocManaged then.
    if (CUMEM_CU_QUIET(cuMemGetDefaultMemPool,
                       (&pool, &location, CU_MEM_ALLOCATION_TYPE_MANAGED)) == CUDA_SUCCESS &&
        pool) {
      set_release_threshold(pool, UINT64_MAX);
      return Ref<Resource>::adopt(
          new ManagedPoolResource(device, managed_properties(*device, true), pool, false,
                                  "managed pool preferring " + describe(preferred), 0));
    }
  }
  const ResourceProperties props = managed_properties(*device, false);
  return Ref<Resource>::adopt(new ManagedAllocResource(std::move(device), props, preferred));
}

}  // namespace cumem::core
