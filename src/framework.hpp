// libcumem as other frameworks' allocator (PyTorch's CUDAPluggableAllocator,
// CuPy's CFunctionAllocator): a resource per device, and a record of every
// allocation (resource, size, stream) until it is freed, so that frees go
// to the right resource, need no size (CuPy), and are safe on another
// stream than the allocation's. The C entry points are in
// capi/framework.cpp.
#pragma once

#include <cuda.h>

#include <cstddef>

#include "resources/resource.hpp"

namespace cumem::core::framework {

// The resource for `device` (null: back to the default, made on first use
// as $CUMEM_FRAMEWORK_RESOURCE says).
void set_resource(int device, Ref<Resource> resource);
Ref<Resource> get_resource(int device);

// `size` bytes for `device` ordered on `stream`, from `resource` (null: the
// device's). Size 0 gives nullptr.
void* allocate(int device, size_t size, CUstream stream, Resource* resource);
// Frees memory from allocate(). With `stream_given`, ordered on `stream`
// (after the allocating stream's work so far, when they differ); else on
// the allocating stream. `size` (when not SIZE_MAX) must be the
// allocation's. Unknown pointers are refused.
void deallocate(void* ptr, size_t size, CUstream stream, bool stream_given);

}  // namespace cumem::core::framework
