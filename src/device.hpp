// A CUDA device and its primary context. One Device per ordinal lives for
// the whole process; its reference count (Object's: core references, one of
// them shared by the user's handles) is the number of libcumem objects and
// user handles that use it, and the primary context is retained while that
// count is above zero: Device::get takes the first reference under the
// device's lock, retaining the context, and the last one lets it go
// (last_reference_gone, which keeps the object).
#pragma once

#include <cuda.h>

#include <array>
#include <cstdint>
#include <mutex>
#include <string>

#include "object.hpp"

namespace cumem::core {

struct DeviceProperties {
  int ordinal = 0;
  std::string name;
  std::array<uint8_t, 16> uuid{};
  int compute_capability_major = 0, compute_capability_minor = 0;
  uint64_t total_memory = 0;
  int multiprocessor_count = 0;
  bool memory_pools_supported = false;
  uint32_t ipc_handle_types = 0;
  bool managed_memory = false;
  bool concurrent_managed_access = false;
  bool virtual_memory_management = false;
  int host_numa_id = -1;
  int pci_domain_id = 0, pci_bus_id = 0, pci_device_id = 0;
  int max_threads_per_block = 0;
  int max_shared_memory_per_block_optin = 0;
  bool cluster_launch = false;
  bool dma_buf_supported = false;  // CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED
};

// What the fabric probe found (src/fabric.cpp).
struct FabricProbe {
  bool supported = false;
  std::string why;  // "" when supported; else what refused it
};

// Launch limits of a device; they never change, so they are read once.
struct DeviceLimits {
  int max_grid[3] = {0, 0, 0};
  int max_block[3] = {0, 0, 0};
  int max_shared_memory_per_block_optin = 0;
  bool cluster_launch = false;
};

// The CUDA driver's version, e.g. 13000 for 13.0. Throws no_driver.
int driver_version();

class Device final : public Object {
 public:
  // Number of devices (0 when the driver sees none). Throws no_driver.
  static int count();
  // The device, with one reference for the caller (retains the primary
  // context on the first). Throws no_device for a bad ordinal.
  static Ref<Device> get(int ordinal);

  int ordinal() const noexcept { return ordinal_; }
  CUdevice native() const noexcept { return handle_; }
  CUcontext context() const noexcept { return context_; }

  DeviceProperties properties() const;
  // The device's UUID, read once.
  const std::array<uint8_t, 16>& uuid() const;
  int attribute(CUdevice_attribute attribute) const;
  const DeviceLimits& limits() const;
  void set_current() const;
  void synchronize() const;
  void memory_info(uint64_t& free_bytes, uint64_t& total_bytes) const;
  bool can_access_peer(const Device& peer) const;
  void enable_peer_access(const Device& peer) const;
  void stream_priority_range(int& least, int& greatest) const;
  // "device 0 (NVIDIA H200)" for messages.
  std::string describe() const;
  // Whether fabric handles work on this device (src/fabric.cpp): one
  // granule created with the FABRIC handle type and exported, once; the
  // answer is kept, except after out of memory (asked again next time).
  FabricProbe fabric_probe() const;

 private:
  // No reference yet: acquire() takes each one that Device::get hands out.
  Device(int ordinal, CUdevice handle)
      : Object(Tag::device, 0), ordinal_(ordinal), handle_(handle) {}
  ~Device() override = default;  // never called: devices live for the process
  // One more reference; retains the primary context when none is held.
  void acquire();
  // The count reached zero: the primary context is released unless a
  // reference was taken again meanwhile (under mutex_).
  void last_reference_gone() const noexcept override;

  const int ordinal_;
  const CUdevice handle_;
  mutable std::mutex mutex_;  // guards context_'s retain and release
  mutable CUcontext context_ = nullptr;
  mutable std::once_flag limits_once_, uuid_once_;
  mutable std::array<uint8_t, 16> uuid_{};
  mutable DeviceLimits limits_;
  mutable std::mutex fabric_mutex_;
  mutable bool fabric_known_ = false;
  mutable FabricProbe fabric_;
};

// Makes a device's primary context current for a scope, and restores the
// previous one after (only when it had to change it).
class ScopedContext {
 public:
  explicit ScopedContext(const Device& device);
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;

 private:
  CUcontext previous_ = nullptr;
  bool changed_ = false;
};

}  // namespace cumem::core
