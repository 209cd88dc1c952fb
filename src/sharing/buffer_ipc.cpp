// Buffers across processes: a buffer's descriptor, and a buffer opened from
// one. The resource does the work (IpcShareable); the buffer checks what
// only it knows (closed, a slice).
#include "../buffer.hpp"
#include "../error.hpp"
#include "../resources/ipc_shareable.hpp"

namespace cumem::core {
namespace {

IpcShareable& shareable_of(const Resource& resource, const char* what) {
  auto* s = dynamic_cast<IpcShareable*>(const_cast<Resource*>(&resource));
  if (!s)
    fail(Status::not_supported, std::string(what) + ": " + resource.describe() +
                                    " does not take part in IPC (use an IPC-enabled pool, a "
                                    "host shared resource or a legacy device resource)");
  return *s;
}

}  // namespace

IpcDescriptor Buffer::get_ipc_descriptor() const {
  ensure_open();
  if (!resource_)
    fail(Status::not_supported,
         "wrapped and registered memory cannot be shared with other processes");
  if (info_.size == 0) fail(Status::invalid_argument, "an empty buffer cannot be shared");
  // Pools export whole allocations; legacy and host shared memory export
  // any range by its offset.
  if (info_.is_slice && resource_->properties().is_pool)
    fail(Status::not_supported,
         "a slice of pool memory cannot be shared on its own; share the whole buffer");
  return shareable_of(*resource_, "sharing a buffer").get_ipc_descriptor(info_.ptr, info_.size);
}

Ref<Buffer> Buffer::from_ipc_descriptor(Ref<Resource> resource, const uint8_t* bytes,
                                        const Stream* stream) {
  const IpcDescriptor d = decode(bytes, kIpcDescriptorSize);
  IpcShareable& s = shareable_of(*resource, "opening a descriptor");
  void* ptr = s.open_ipc_descriptor(d, stream);
  // Counted like an allocation, so that closing the buffer counts its free.
  resource->count_allocation(static_cast<size_t>(d.size));
  try {
    return owned_by(resource, ptr, static_cast<size_t>(d.size), stream);
  } catch (...) {
    resource->deallocate_raw(ptr, static_cast<size_t>(d.size), stream);
    throw;
  }
}

}  // namespace cumem::core
