// What a resource that takes part in IPC can do beyond allocating: export
// itself (an allocation handle), describe one of its buffers for another
// process, and open such a description from another process. Resources mix
// this in next to Resource; each call a resource does not support says so.
#pragma once

#include <cstddef>

#include "../object.hpp"
#include "../stream.hpp"
#include "../ipc/allocation_handle.hpp"
#include "../ipc/descriptor.hpp"

namespace cumem::core {

class IpcShareable {
 public:
  virtual Ref<AllocationHandle> get_allocation_handle() const;
  // The descriptor of the allocation [ptr, ptr + size) of this resource.
  virtual IpcDescriptor get_ipc_descriptor(void* ptr, size_t size) const;
  // Maps a descriptor of another process; the pointer goes back through
  // the resource's deallocate_raw with the descriptor's size, which unmaps.
  // The caller counts it in the resource's statistics.
  virtual void* open_ipc_descriptor(const IpcDescriptor& descriptor, const Stream* stream);

 protected:
  ~IpcShareable() = default;
};

// Imported resources by pool id, so that a pool imported twice in one
// process is one resource: the driver refuses to map some memory twice.
class Resource;
class Device;
// Runs `import` under the registry's lock unless a live resource with this
// pool id exists (then returns it, with a new reference).
Ref<Resource> import_once(const std::array<uint8_t, 16>& pool_id,
                          Ref<Resource> (*import)(Ref<Device>, const AllocationHandle&),
                          Ref<Device> device, const AllocationHandle& handle);
// Called by an imported resource's destructor.
void forget_imported(const std::array<uint8_t, 16>& pool_id, const Resource* resource) noexcept;

// cumem_resource_from_allocation_handle: picks the import by memory kind.
Ref<Resource> import_resource(Ref<Device> device, Ref<AllocationHandle> handle);

}  // namespace cumem::core
