// libcumem as other frameworks' allocator (PyTorch's CUDAPluggableAllocator,
// CuPy's CFunctionAllocator): a resource per device, and a record of every
// allocation (resource, size, stream) until it is freed, so that frees go
// to the right resource, need no size (CuPy), and are safe on another
// stream than the allocation's. The C entry points are in
// capi/framework.cpp.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <string_view>

#include "resources/resource.hpp"

namespace cumem::core::framework {

// The resource for `device` (null: back to the default, made on first use
// as the configuration says: $CUMEM_ALLOC_CONF, $CUMEM_FRAMEWORK_RESOURCE,
// or configure()).
void set_resource(int device, Ref<Resource> resource);
Ref<Resource> get_resource(int device);

// Replaces the configuration of the defaults (src/alloc_conf.hpp's text)
// for every device; each device's default is made anew at its next choice.
// Throws invalid_argument (nothing changed) for text that does not parse.
void configure(std::string_view text);

// `size` bytes for `device` ordered on `stream`, from `resource` (null: the
// device's). Size 0 gives nullptr.
void* allocate(int device, size_t size, CUstream stream, Resource* resource);
// Frees memory from allocate(). With `stream_given`, ordered on `stream`
// (after the allocating stream's work so far, when they differ); else on
// the allocating stream. `size` (when not SIZE_MAX) must be the
// allocation's. Unknown pointers are refused.
void deallocate(void* ptr, size_t size, CUstream stream, bool stream_given);

}  // namespace cumem::core::framework
