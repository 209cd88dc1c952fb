// Device memory: the device's default cuMemPool or a new one; synchronous
// cuMemAlloc on devices without memory pools.
#include "../driver/driver.hpp"
#include "../error.hpp"
#include "pool_resource.hpp"

namespace cumem::core {
namespace {

ResourceProperties device_properties(const Device& device, bool pool, bool ipc) {
  ResourceProperties p;
  p.kind = ResourceKind::device;
  p.memory_kind = MemoryKind::device;
  p.device_accessible = true;
  p.device_id = device.ordinal();
  p.stream_ordered = pool;
  p.is_pool = pool;
  p.ipc_enabled = ipc;
  return p;
}

// For devices without memory pools: cuMemAlloc, and frees that wait for the
// stream first.
class SyncDeviceResource final : public Resource {
 public:
  SyncDeviceResource(Ref<Device> device, const ResourceProperties& properties)
      : Resource(std::move(device), properties) {}
  std::string describe() const override { return "device memory (cuMemAlloc) of " + device_->describe(); }

 protected:
  void* do_allocate(size_t size, const Stream*) override {
    ScopedContext scope(*device_);
    CUdeviceptr ptr = 0;
    CUMEM_CU(cuMemAlloc, (&ptr, size), "allocating " + describe_bytes(size) + " with cuMemAlloc");
    return reinterpret_cast<void*>(ptr);
  }
  void do_deallocate(void* ptr, size_t size, const Stream* stream) override {
    if (stream) stream->synchronize();
    ScopedContext scope(*device_);
    if (!stream) CUMEM_CU(cuCtxSynchronize, (), "waiting for the device before cuMemFree");
    CUMEM_CU(cuMemFree, (reinterpret_cast<CUdeviceptr>(ptr)),
             "freeing " + describe_bytes(size) + " with cuMemFree");
  }
};

}  // namespace

Ref<Resource> create_device_resource(Ref<Device> device, const PoolOptions& options) {
  const bool pools = device->attribute(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) != 0;
  if (options.use_default_pool && (options.max_size != 0 || options.ipc_enabled))
    fail(Status::invalid_argument,
         "max_size and ipc_enabled apply to new pools only; set use_default_pool to false");
  if (!pools) {
    if (!options.use_default_pool || options.ipc_enabled)
      fail(Status::not_supported, device->describe() + " has no memory pools, so it cannot "
                                                      "create a pool; use the default resource");
    const ResourceProperties props = device_properties(*device, false, false);
    return Ref<Resource>::adopt(new SyncDeviceResource(std::move(device), props));
  }
  ScopedContext scope(*device);
  const std::string where = device->describe();
  CUmemoryPool pool = nullptr;
  if (options.use_default_pool) {
    CUMEM_CU(cuDeviceGetDefaultMemPool, (&pool, device->handle()),
             "getting the default memory pool of " + where);
    set_release_threshold(pool, options.release_threshold);
    return Ref<Resource>::adopt(new PoolResource(device, device_properties(*device, true, false),
                                                 pool, false, "default pool of " + where));
  }
  if (options.ipc_enabled) {
    const int types = device->attribute(CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES);
    if (!(types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
      fail(Status::not_supported,
           where + " cannot export pool memory as POSIX file descriptors (IPC)");
  }
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = options.ipc_enabled ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
                                          : CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = device->ordinal();
  props.maxSize = static_cast<size_t>(options.max_size);
  CUMEM_CU(cuMemPoolCreate, (&pool, &props), "creating a memory pool on " + where);
  Ref<Resource> resource = Ref<Resource>::adopt(
      new PoolResource(device, device_properties(*device, true, options.ipc_enabled), pool, true,
                       "pool of " + where));
  set_release_threshold(pool, options.release_threshold);
  return resource;
}

}  // namespace cumem::core
