// PyTorch's CUDA caching allocator (c10), as bench_peers uses it: kept in
// its own file so that the rest of the benchmark needs no PyTorch headers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace peer_torch {

void init(int devices);
// nullptr when PyTorch refuses (out of memory).
void* allocate(size_t size, cudaStream_t stream);
void deallocate(void* ptr);
// Gives every cached block back to the driver.
void empty_cache();
void reset_peak();
// Highest bytes PyTorch held from the driver since reset_peak().
uint64_t peak_reserved();

}  // namespace peer_torch
