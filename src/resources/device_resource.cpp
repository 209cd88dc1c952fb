// Device memory: the device's default cuMemPool or a new one; on devices
// without memory pools, cuMemAlloc (the legacy device resource).
#include "../capture.hpp"
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

}  // namespace

Ref<Resource> create_device_resource(Ref<Device> device, const PoolOptions& options) {
  check_pool_options(options);
  const bool pools = device->attribute(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) != 0;
  if (!pools) {
    if (!options.use_default_pool)
      fail(Status::not_supported, device->describe() + " has no memory pools, so it cannot "
                                                      "create a pool; use the default resource");
    // cuMemAlloc with synchronous frees: the legacy device resource.
    return create_legacy_device_resource(std::move(device), ResourceKind::device);
  }
  ScopedContext scope(*device);
  // A resource may be made while a capture is underway (the frameworks'
  // default resource is made on first use): its pool calls run relaxed.
  RelaxedCaptureMode relaxed;
  const std::string where = device->describe();
  if (options.use_default_pool) {
    CUmemoryPool pool = nullptr;
    CUMEM_CU(cuDeviceGetDefaultMemPool, (&pool, device->native()),
             "getting the default memory pool of " + where);
    set_release_threshold(pool, options.release_threshold);
    return Ref<Resource>::adopt(new PoolResource(device, device_properties(*device, true, false),
                                                 pool, false, "default pool of " + where, 0));
  }
  if (options.ipc_enabled) {
    const int types = device->attribute(CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES);
    if (!(types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
      fail(Status::not_supported,
           where + " cannot export pool memory as POSIX file descriptors (IPC)");
  }
  PoolSpec spec;
  spec.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  spec.location.id = device->ordinal();
  spec.ipc_enabled = options.ipc_enabled;
  spec.max_size = options.max_size;
  CUmemoryPool pool = create_pool(spec, where);
  Ref<Resource> resource = Ref<Resource>::adopt(
      new PoolResource(device, device_properties(*device, true, options.ipc_enabled), pool, true,
                       "pool of " + where, options.max_size));
  set_release_threshold(pool, options.release_threshold);
  return resource;
}

}  // namespace cumem::core
