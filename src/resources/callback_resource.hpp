// A resource made of user callbacks (see callback_resource.cpp).
#pragma once

#include <cuda.h>

#include "resource.hpp"

namespace cumem::core {

// The C ABI's callback types (stream: the native CUstream as void*).
struct Callbacks {
  // 0 on success with *out_ptr set; anything else is out of memory.
  int32_t (*allocate)(size_t size, void* stream, void* user_data, void** out_ptr) = nullptr;
  void (*deallocate)(void* ptr, size_t size, void* stream, void* user_data) = nullptr;
  // Called once when the resource goes (may be null).
  void (*destroy)(void* user_data) = nullptr;
  void* user_data = nullptr;
};

// `device` (may be null) gives the memory's device and keeps it alive;
// `properties` says what the memory is (memory kind, accessibility, stream
// order); kind, device id, pool and IPC fields are set here.
Ref<Resource> create_callback_resource(Ref<Device> device, const Callbacks& callbacks,
                                       const ResourceProperties& properties);

}  // namespace cumem::core
