#include "peer_torch.hpp"

#include <c10/cuda/CUDACachingAllocator.h>

namespace peer_torch {

namespace cca = c10::cuda::CUDACachingAllocator;

void init(int devices) { cca::init(devices); }

void* allocate(size_t size, cudaStream_t stream) {
  try {
    return cca::raw_alloc_with_stream(size, stream);
  } catch (const std::exception&) {
    return nullptr;
  }
}

void deallocate(void* ptr) { cca::raw_delete(ptr); }

void empty_cache() { cca::emptyCache(); }

void reset_peak() { cca::resetPeakStats(0); }

uint64_t peak_reserved() {
  // Index 0 of each statistic is the aggregate over all pools.
  return static_cast<uint64_t>(cca::getDeviceStats(0).reserved_bytes[0].peak);
}

}  // namespace peer_torch
