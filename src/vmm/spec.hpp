// What the physical memory of a virtual-memory range is: where it lives (a
// device, the host, a host NUMA node), which handle types it can be shared
// as, whether it is GPUDirect-RDMA capable, and the granularity that every
// size and offset of a range is a multiple of. Resolved once (device checks,
// cuMemGetAllocationGranularity, the FABRIC probe), then shared, immutable,
// by every range and chunk made from it.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "../device.hpp"
#include "../location.hpp"

namespace cumem::core::vmm {

// Which granularity cuMemGetAllocationGranularity is asked for. Both are
// 2 MiB on an H200; elsewhere "recommended" may be larger, for speed.
enum class Granularity { minimum, recommended };

// Handle-type bits: the driver's CUmemAllocationHandleType values.
constexpr uint32_t kHandlePosixFd = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;  // 0x1
constexpr uint32_t kHandleFabric = CU_MEM_HANDLE_TYPE_FABRIC;                  // 0x8

struct SpecOptions {
  // LocationType::device (its id must be the spec's device), host, or
  // host_numa (id >= 0).
  Location location{LocationType::device, 0};
  Granularity granularity = Granularity::recommended;
  // kHandlePosixFd and/or kHandleFabric; 0: the chunks cannot be exported.
  uint32_t handle_types = 0;
  bool gpu_direct_rdma = false;
  // Adds what NCCL's qualified allocator has and the device allows: POSIX
  // fd handles, FABRIC after a successful probe, GPUDirect RDMA.
  bool nccl_qualified = false;
};

class Spec {
 public:
  // Checks that `device` can make such memory (virtual memory management,
  // host or host NUMA locations, each handle type, GPUDirect RDMA: else
  // Error(not_supported) naming what is missing), reads the granularity,
  // and, when FABRIC is asked for, creates and releases one granule with
  // FABRIC first: FABRIC handles need an IMEX channel, which a device may
  // lack while reporting fabric support (the H200s here do), so nothing is
  // ever made with FABRIC unless that probe succeeded (else not_supported
  // with the probe's driver error). A location that is not device, host or
  // host_numa, or a device location naming another device, is
  // invalid_argument. Makes `device`'s context current for its calls.
  static std::shared_ptr<const Spec> create(Ref<Device> device, const SpecOptions& options);
  // The spec of chunks imported from another process: the properties the
  // driver reports for an imported handle (cuMemGetAllocationPropertiesFromHandle),
  // mapped and accessed from `device`.
  static std::shared_ptr<const Spec> from_properties(Ref<Device> device,
                                                     const CUmemAllocationProp& prop);

  // What cuMemCreate is given.
  const CUmemAllocationProp& prop() const noexcept { return prop_; }
  // Every chunk size, reservation size, offset and alignment of a range is
  // a multiple of this (a power of two).
  size_t granularity() const noexcept { return granularity_; }
  const SpecOptions& options() const noexcept { return options_; }
  // The device whose context the driver calls use: the memory's own device,
  // or for host memory the device it is made for.
  const Device& device() const noexcept { return *device_; }
  const Ref<Device>& device_ref() const noexcept { return device_; }
  bool is_host_memory() const noexcept { return options_.location.type != LocationType::device; }
  // `bytes` rounded up to a multiple of the granularity; out_of_memory
  // when that does not fit in size_t.
  size_t round_up(size_t bytes) const;
  // "device 0 memory", "host memory", "host NUMA node 1 memory".
  std::string describe() const;
  // Chunks of this spec ever made (created or imported) and released: the
  // driver handles still live are the difference (for statistics and tests).
  uint64_t chunks_created() const noexcept { return created_.load(std::memory_order_relaxed); }
  uint64_t chunks_released() const noexcept { return released_.load(std::memory_order_relaxed); }
  void count_chunk_created() const noexcept { created_.fetch_add(1, std::memory_order_relaxed); }
  void count_chunk_released() const noexcept { released_.fetch_add(1, std::memory_order_relaxed); }

 private:
  Spec(Ref<Device> device, const SpecOptions& options, const CUmemAllocationProp& prop,
       size_t granularity)
      : device_(std::move(device)), options_(options), prop_(prop), granularity_(granularity) {}

  Ref<Device> device_;
  SpecOptions options_;
  CUmemAllocationProp prop_;
  size_t granularity_;
  mutable std::atomic<uint64_t> created_{0}, released_{0};
};

}  // namespace cumem::core::vmm
