// The memory resource interface: every kind allocates and frees raw memory
// ordered on a stream, reports what its memory is, and keeps statistics.
// Buffers are built on top of it (src/buffer.hpp).
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "../device.hpp"
#include "../object.hpp"
#include "../stream.hpp"

namespace cumem::core {

enum class ResourceKind { host = 1, device = 2, pinned = 3, legacy_pinned = 4, managed = 5 };

// What a buffer's memory is (the C ABI's cumem_memory_kind_t).
enum class MemoryKind { host = 1, device = 2, pinned = 3, managed = 4 };

// A memory location; the values are CUmemLocationType's.
enum class LocationType { none = 0, device = 1, host = 2, host_numa = 3, host_numa_current = 4 };
struct Location {
  LocationType type = LocationType::none;
  int id = 0;
};
CUmemLocation to_cu(Location location);
std::string describe(Location location);

struct ResourceProperties {
  ResourceKind kind = ResourceKind::host;
  MemoryKind memory_kind = MemoryKind::host;
  bool device_accessible = false;
  bool host_accessible = false;
  int device_id = -1;
  bool stream_ordered = false;
  bool is_pool = false;
  bool ipc_enabled = false;
};

struct ResourceStatistics {
  uint64_t bytes_in_use = 0;
  uint64_t peak_bytes_in_use = 0;
  uint64_t live_allocations = 0;
  uint64_t total_allocations = 0;
};

struct PoolAttributes {
  bool reuse_follow_event_dependencies = false;
  bool reuse_allow_opportunistic = false;
  bool reuse_allow_internal_dependencies = false;
  uint64_t release_threshold = 0;
  uint64_t reserved_current = 0, reserved_high = 0;
  uint64_t used_current = 0, used_high = 0;
};

class Resource : public Object {
 public:
  // Raw memory of `size` bytes ordered on `stream` (null: legacy default
  // stream). size 0 gives nullptr and is not counted. Out of memory throws
  // Error(out_of_memory) with the size, the resource and its usage.
  void* allocate(size_t size, const Stream* stream);
  // Frees memory from allocate() (or adopted with adopt()) of this size.
  void deallocate(void* ptr, size_t size, const Stream* stream);

  const ResourceProperties& properties() const noexcept { return properties_; }
  ResourceStatistics statistics() const noexcept;
  void reset_peak() noexcept;
  // The device whose context the resource uses; null for the host kind.
  const Device* device() const noexcept { return device_.get(); }
  // "device pool of device 0", "host resource", ... for messages.
  virtual std::string describe() const = 0;

  // The cuMemPool behind pool kinds; the pool_* calls throw not_supported
  // for other kinds.
  virtual CUmemoryPool pool() const noexcept { return nullptr; }
  // pool(), or Error(not_supported) naming `operation` when there is none.
  CUmemoryPool require_pool(const char* operation) const;
  PoolAttributes pool_attributes() const;
  void set_pool_attributes(const PoolAttributes& attributes);
  void reset_pool_highs();
  void trim_pool(uint64_t min_bytes_to_keep);
  void set_pool_access(const Device& peer, bool read_write);
  bool pool_access(const Device& peer) const;

 protected:
  Resource(Ref<Device> device, const ResourceProperties& properties)
      : Object(Tag::resource), device_(std::move(device)), properties_(properties) {}
  virtual void* do_allocate(size_t size, const Stream* stream) = 0;
  virtual void do_deallocate(void* ptr, size_t size, const Stream* stream) = 0;
  // Extra words for an out-of-memory message ("; pool reserves ...").
  virtual std::string usage_details() const { return ""; }
  // The device whose context a call on `stream` should use.
  const Device& context_device(const Stream* stream) const {
    return stream ? stream->device() : *device_;
  }

  Ref<Device> device_;

 private:
  void count_allocation(size_t size) noexcept;
  void count_deallocation(size_t size) noexcept;

  ResourceProperties properties_;
  std::atomic<uint64_t> bytes_in_use_{0};
  std::atomic<uint64_t> peak_bytes_in_use_{0};
  std::atomic<uint64_t> live_allocations_{0};
  std::atomic<uint64_t> total_allocations_{0};
};

struct PoolOptions {
  bool use_default_pool = true;
  uint64_t release_threshold = UINT64_MAX;
  uint64_t max_size = 0;
  bool ipc_enabled = false;
  int host_numa_id = -1;
};

// Throws out_of_memory when `size` exceeds the device's free memory: managed
// memory must never oversubscribe the GPU (src/resources/managed_resource.cpp).
void check_within_free_memory(const Device& device, size_t size);

// One factory per kind (src/resources/<kind>_resource.cpp).
Ref<Resource> create_host_resource(size_t alignment);
Ref<Resource> create_device_resource(Ref<Device> device, const PoolOptions& options);
Ref<Resource> create_pinned_resource(Ref<Device> device, const PoolOptions& options);
Ref<Resource> create_legacy_pinned_resource(Ref<Device> device);
Ref<Resource> create_managed_resource(Ref<Device> device, Location preferred, bool use_pool);

}  // namespace cumem::core
