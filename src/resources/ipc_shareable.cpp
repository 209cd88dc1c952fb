#include "ipc_shareable.hpp"

#include <map>
#include <mutex>

#include "../error.hpp"
#include "resource.hpp"

namespace cumem::core {

Ref<AllocationHandle> IpcShareable::get_allocation_handle() const {
  fail(Status::not_supported,
       "only IPC-enabled resources can be exported: a device or pinned pool created with "
       "ipc_enabled, a host shared resource, or a resource imported from one of those");
}

IpcDescriptor IpcShareable::get_ipc_descriptor(void*, size_t) const {
  fail(Status::not_supported,
       "only buffers of IPC-enabled pools, host shared resources and legacy device resources "
       "(or buffers opened from a descriptor) can be shared with other processes");
}

void* IpcShareable::open_ipc_descriptor(const IpcDescriptor&, const Stream*) {
  fail(Status::invalid_argument,
       "descriptors are opened with the resource imported from their pool "
       "(or, for legacy descriptors, a legacy device resource of their device)");
}

namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::array<uint8_t, 16>, const Resource*> imported;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: resources outlive static destructors
  return *r;
}

}  // namespace

Ref<Resource> import_once(const std::array<uint8_t, 16>& pool_id,
                          Ref<Resource> (*import)(Ref<Device>, const AllocationHandle&),
                          Ref<Device> device, const AllocationHandle& handle) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.imported.find(pool_id);
  if (it != r.imported.end() && it->second->try_retain())
    return Ref<Resource>::adopt(const_cast<Resource*>(it->second));
  Ref<Resource> resource = import(std::move(device), handle);
  r.imported[pool_id] = resource.get();
  return resource;
}

void forget_imported(const std::array<uint8_t, 16>& pool_id, const Resource* resource) noexcept {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.imported.find(pool_id);
  if (it != r.imported.end() && it->second == resource) r.imported.erase(it);
}

Ref<Resource> import_pool(Ref<Device> device, const AllocationHandle& handle);
Ref<Resource> import_host_shared(Ref<Device> device, const AllocationHandle& handle);

Ref<Resource> import_resource(Ref<Device> device, Ref<AllocationHandle> handle) {
  const IpcDescriptor& pool = handle->pool();
  switch (pool.memory_kind) {
    case MemoryKind::host:
      return import_once(pool.pool_id, import_host_shared, nullptr, *handle);
    case MemoryKind::device:
    case MemoryKind::pinned:
      if (!device)
        fail(Status::invalid_argument,
             "importing " + describe(pool) + " needs the device whose context maps it");
      if (pool.memory_kind == MemoryKind::device &&
          device->uuid() != pool.device_uuid)
        fail(Status::wrong_device, "the pool lives on another device than " +
                                       device->describe() + " (its UUID differs)");
      return import_once(pool.pool_id, import_pool, std::move(device), *handle);
    default:
      break;
  }
  fail(Status::invalid_argument, "cannot import " + describe(pool));
}

}  // namespace cumem::core
