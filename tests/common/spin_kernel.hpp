// A kernel that keeps memory busy: spin_then_fill spins for spin_ns (the
// global timer counts nanoseconds), then writes `value` over all n words.
// Tests of stream order launch it, free the memory on its stream at once,
// and check that whoever gets the memory next never sees the late writes.
#pragma once

#include <string>

#include "test_util.hpp"

inline const char* const spin_then_fill_source = R"(
extern "C" __global__ void spin_then_fill(unsigned int* words, unsigned long long n,
                                          unsigned int value, unsigned long long spin_ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < spin_ns);
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += stride)
    words[i] = value;
}
)";

// Compiles and loads spin_then_fill on `device`: CUMEM_SUCCESS and
// *out_kernel, CUMEM_ERROR_NO_COMPILER where NVRTC is missing (the caller
// skips), or the failing status.
inline cumem_status_t load_spin_kernel(cumem_device_t* device, cumem_kernel_t** out_kernel) {
  cumem_program_t* program = nullptr;
  cumem_status_t s = cumem_program_compile(device, spin_then_fill_source, nullptr, &program);
  if (s != CUMEM_SUCCESS) return s;
  cumem_library_t* library = nullptr;
  s = cumem_program_load(program, &library);
  cumem_program_release(program);
  if (s != CUMEM_SUCCESS) return s;
  s = cumem_library_get_kernel(library, "spin_then_fill", out_kernel);
  cumem_library_release(library);
  return s;
}

// Launches spin_then_fill over `bytes` at `ptr` on `stream`: 64 blocks of
// 256 threads, few enough to be resident at once, so that all spin together.
inline cumem_status_t launch_spin(cumem_kernel_t* kernel, void* ptr, size_t bytes, uint32_t value,
                                  uint64_t spin_ns, cumem_stream_t* stream) {
  uint64_t n = bytes / sizeof(uint32_t);
  void* args[] = {&ptr, &n, &value, &spin_ns};
  cumem_launch_config_t config = CUMEM_LAUNCH_CONFIG_INIT;
  config.grid[0] = 64;
  config.block[0] = 256;
  return cumem_launch(kernel, stream, &config, args, 4);
}
