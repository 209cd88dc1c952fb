// Between the two files of the fake memory driver: what fake_memory_cuda.cpp
// (memory, streams, the log) gives fake_copy_kernel.cpp (loaded code and the
// batch copy kernels), and the entry points the latter serves.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "fake_memory.hpp"

namespace fake_memory {

// Given by fake_memory_cuda.cpp.
FakeMemoryState& state();
bool in_context();
std::string stream_name(CUstream s);
// Whether [p, p + n) lies in one device, pinned or managed allocation: the
// memory a kernel of the fake's device may load and store.
bool kernel_reachable(uintptr_t p, size_t n);

// Given by fake_copy_kernel.cpp: the entry point `symbol` (cuLibraryLoadData,
// cuLaunchKernelEx, ...) where $FAKE_CUDA_COPY_KERNEL has the fake serve
// loaded code, else null.
void* copy_kernel_entry(const char* symbol);

}  // namespace fake_memory
