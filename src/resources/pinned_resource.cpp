// Pinned host memory from a host-located cuMemPool (CUDA 12.6+ drivers).
#include "../capture.hpp"
#include "../driver/driver.hpp"
#include "../error.hpp"
#include "pool_resource.hpp"

namespace cumem::core {

Ref<Resource> create_pinned_resource(Ref<Device> device, const PoolOptions& options) {
  const auto& drv = driver::get();
  if (drv.driver_version < 12060)
    fail(Status::not_supported,
         "pinned memory pools need a CUDA 12.6 driver or newer; the installed driver is CUDA " +
             std::to_string(drv.driver_version / 1000) + "." +
             std::to_string((drv.driver_version % 1000) / 10));
  check_pool_options(options);
  if (options.host_numa_id >= 0) check_host_numa_node(options.host_numa_id, "options->host_numa_id");

  // Pools on plain CU_MEM_LOCATION_TYPE_HOST cannot do IPC: they need a node.
  int numa = options.host_numa_id;
  if (options.ipc_enabled && numa < 0) {
    numa = device->properties().host_numa_id;
    if (numa < 0)
      fail(Status::not_supported,
           "IPC-enabled pinned pools need a host NUMA node, and this system reports none");
  }
  CUmemLocation location{};
  location.type = numa >= 0 ? CU_MEM_LOCATION_TYPE_HOST_NUMA : CU_MEM_LOCATION_TYPE_HOST;
  location.id = numa >= 0 ? numa : 0;
  const std::string where = numa >= 0 ? "host NUMA node " + std::to_string(numa) : "the host";

  ResourceProperties props;
  props.kind = ResourceKind::pinned;
  props.memory_kind = MemoryKind::pinned;
  props.device_accessible = true;
  props.host_accessible = true;
  props.device_id = -1;
  props.stream_ordered = true;
  props.is_pool = true;
  props.ipc_enabled = options.ipc_enabled;

  ScopedContext scope(*device);
  RelaxedCaptureMode relaxed;  // pool calls while a capture may be underway
  CUmemoryPool pool = nullptr;
  bool owned = false;
  std::string name;
  if (options.use_default_pool && drv.cuMemGetDefaultMemPool_fn) {
    CUMEM_CU(cuMemGetDefaultMemPool, (&pool, &location, CU_MEM_ALLOCATION_TYPE_PINNED),
             "getting the default pinned pool of " + where);
    name = "default pinned pool of " + where;
  } else {
    PoolSpec spec;
    spec.location = location;
    spec.ipc_enabled = options.ipc_enabled;
    spec.max_size = options.max_size;
    pool = create_pool(spec, where);
    owned = true;
    name = "pinned pool of " + where;
  }
  auto* resource = new PoolResource(device, props, pool, owned, name, options.max_size);
  Ref<Resource> ref = Ref<Resource>::adopt(resource);
  set_release_threshold(pool, options.release_threshold);
  // Host pools are only host-accessible at first; the device must be granted.
  resource->pool_set_access(*device, true);
  return ref;
}

}  // namespace cumem::core
