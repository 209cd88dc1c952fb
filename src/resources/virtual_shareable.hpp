// What a resource whose memory is virtual-memory chunks can do for IPC:
// export an allocation's chunks as POSIX file descriptors with the
// descriptor that lists them (a virtual IPC handle, src/ipc/virtual_handle.hpp),
// which another process maps into one range of its own
// (VirtualResource::import). The virtual-memory resource shares its buffers
// so; an expandable cache made with the POSIX fd handle type shares its
// large blocks as the pages that hold them.
#pragma once

#include <cstddef>

#include "../object.hpp"

namespace cumem::core {

class VirtualIpcHandle;

class VirtualShareable {
 public:
  // The memory of the live allocation at `ptr` (its start) as `size`
  // bytes: a virtual resource's allocation size, or at most the size of an
  // expandable cache's block (which it rounded up); 0 for all of it.
  // not_supported when the resource cannot share it (the message says
  // why), invalid_argument for a pointer it did not hand out or a size it
  // does not have.
  virtual Ref<VirtualIpcHandle> get_virtual_ipc_handle(void* ptr, size_t size) const = 0;

 protected:
  ~VirtualShareable() = default;
};

// `resource`'s VirtualShareable, or not_supported naming the resource and
// what can be shared so (`what`: "this buffer's memory").
const VirtualShareable& virtual_shareable(const class Resource* resource, const char* what);

}  // namespace cumem::core
