// The C entry points of the extension (cumem/torch.py loads it with ctypes
// and calls cumem_torch_allocator_install): plain C, so that the extension
// needs neither pybind11 nor PyTorch's Python headers, only c10's.
#include "allocator.hpp"

#include <c10/core/Allocator.h>

#include <cstring>
#include <exception>

namespace {

int with_message(char* message, size_t capacity, const char* text) {
  if (message && capacity) {
    std::strncpy(message, text, capacity - 1);
    message[capacity - 1] = '\0';
  }
  return 1;
}

}  // namespace

extern "C" {

// Makes libcumem PyTorch's CUDA allocator. 0: done (or it was already);
// else 1 and why in `message`: PyTorch's allocator is initialised already
// (a CUDA tensor was made), no CUDA device, or libcumem failed.
__attribute__((visibility("default"))) int cumem_torch_allocator_install(char* message,
                                                                         size_t capacity) {
  try {
    namespace cca = c10::cuda::CUDACachingAllocator;
    cumem_torch::Allocator& ours = cumem_torch::instance();
    cca::CUDAAllocator* current = cca::allocator.load();
    if (current == &ours) return 0;
    if (current && current->initialized())
      return with_message(message, capacity,
                          ("PyTorch's CUDA allocator (" + current->name() +
                           ") is initialized already: call cumem.torch.use_libcumem_allocator() "
                           "before the first CUDA allocation (PyTorch cannot change allocators "
                           "after that)")
                              .c_str());
    int32_t count = 0;
    const cumem_status_t s = cumem_device_count(&count);
    if (s != CUMEM_SUCCESS)
      return with_message(message, capacity,
                          (std::string("libcumem: counting the CUDA devices failed: ") +
                           cumem_status_string(s) + ": " + cumem_last_error_message())
                              .c_str());
    ours.init(count);
    cca::allocator.store(&ours);
    c10::SetAllocator(c10::DeviceType::CUDA, &ours, UINT8_MAX);
    return 0;
  } catch (const std::exception& e) {
    return with_message(message, capacity, e.what());
  }
}

// 1 when libcumem is PyTorch's CUDA allocator now.
__attribute__((visibility("default"))) int cumem_torch_allocator_is_installed(void) {
  return c10::cuda::CUDACachingAllocator::allocator.load() == &cumem_torch::instance() ? 1 : 0;
}

}  // extern "C"
