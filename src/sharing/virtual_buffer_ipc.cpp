// Virtual-memory buffers across processes: a buffer's chunks as file
// descriptors, and a buffer mapping another process's chunks. The virtual
// resource does the work (src/resources/virtual_ipc.cpp); the buffer checks
// what only it knows (closed, a slice).
#include "../buffer.hpp"
#include "../error.hpp"
#include "../ipc/virtual_handle.hpp"
#include "../resources/virtual_resource.hpp"
#include "../resources/virtual_shareable.hpp"

namespace cumem::core {

Ref<VirtualIpcHandle> Buffer::get_virtual_ipc_handle() const {
  ensure_open();
  const VirtualShareable& resource = virtual_shareable(resource_.get(), "this buffer's memory");
  if (info_.is_slice)
    fail(Status::not_supported, "a slice cannot be shared on its own; share the whole buffer");
  if (info_.size == 0) fail(Status::invalid_argument, "an empty buffer cannot be shared");
  return resource.get_virtual_ipc_handle(info_.ptr, info_.size);
}

Ref<Buffer> Buffer::from_virtual_ipc_handle(Ref<Device> device, const VirtualIpcHandle& handle,
                                            const Stream* stream) {
  void* ptr = nullptr;
  size_t size = 0;
  Ref<Resource> resource = VirtualResource::import(std::move(device), handle, &ptr, &size);
  // Counted like an allocation, so that closing the buffer counts its free.
  resource->count_allocation(size);
  try {
    return owned_by(resource, ptr, size, stream);
  } catch (...) {
    resource->deallocate_raw(ptr, size, stream);
    throw;
  }
}

}  // namespace cumem::core
