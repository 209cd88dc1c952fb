// The memory resource interface: allocate and deallocate raw memory ordered
// on a stream, properties, statistics, describe; nothing else. Pool
// administration lives on PoolResource (pool_resource.hpp); synchronous kinds
// share SyncResource (sync_resource.hpp); adaptors wrap an upstream resource
// (adaptor.hpp). Buffers are built on top (src/buffer.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "../device.hpp"
#include "../location.hpp"
#include "../memory_kind.hpp"
#include "../object.hpp"
#include "../stream.hpp"
#include "../thread_shard.hpp"
#include "statistics.hpp"

namespace cumem::core {

// The C ABI's cumem_resource_kind_t.
enum class ResourceKind {
  host = 1, device = 2, pinned = 3, legacy_pinned = 4, managed = 5, limit = 6,
  legacy_device = 7, host_shared = 8, caching = 9, tracking = 10, logging = 11,
  callback = 12, aligned = 13, virtual_memory = 14, graph_memory = 15, failure_callback = 16,
};

struct ResourceProperties {
  ResourceKind kind = ResourceKind::host;
  MemoryKind memory_kind = MemoryKind::host;
  bool device_accessible = false;
  bool host_accessible = false;
  int device_id = -1;
  bool stream_ordered = false;
  bool is_pool = false;
  bool ipc_enabled = false;
  bool is_imported = false;
};

// A resource's per-thread credit words (resource_refs.cpp): references
// taken from the shared count in batches of kBatch, or a mark. The marks
// are the word's high bits, so a word below kLowestMark is plain credit.
namespace credit {
inline constexpr int64_t kBatch = 64;
inline constexpr int64_t kNotYet = int64_t{1} << 62;  // the user never held a handle
inline constexpr int64_t kClosed = int64_t{1} << 61;  // the user's handles are all gone
inline constexpr int64_t kMarks = kNotYet | kClosed;
inline constexpr int64_t kLowestMark = kClosed;
}  // namespace credit

class Resource : public Object {
 public:
  // While the user holds a handle, core references (a buffer's on its
  // resource, ...) are counted in the calling thread's shard, so that
  // threads allocating buffers from one resource share no cache line
  // (resource_refs.cpp). They hide Object's (not virtual): a reference
  // taken or given back through Object's shared count instead is fine.
  // Inline: one compare-and-swap on the thread's credit, when it has some
  // to take (or room to give back); else the paths of resource_refs.cpp.
  void retain() const noexcept { retain(this_thread()); }
  void release() const noexcept { release(this_thread()); }
  // The same for a caller that has the thread's block at hand.
  void retain(const ThisThread& t) const noexcept {
    std::atomic<int64_t>& c = credits_[thread_shard(t).index].refs;
    int64_t n = c.load(std::memory_order_relaxed);
    if (__builtin_expect(n > 0 && n < credit::kLowestMark, 1) &&
        c.compare_exchange_strong(n, n - 1, std::memory_order_relaxed))
      return;
    retain_slow(c);
  }
  void release(const ThisThread& t) const noexcept {
    std::atomic<int64_t>& c = credits_[thread_shard(t).index].refs;
    int64_t n = c.load(std::memory_order_relaxed);
    if (__builtin_expect(n + 1 < 2 * credit::kBatch, 1) &&
        c.compare_exchange_strong(n, n + 1, std::memory_order_acq_rel))
      return;
    release_slow(c);
  }

  // Raw memory of `size` bytes ordered on `stream` (null: the legacy default
  // stream of the resource's device). size 0 gives nullptr and is not
  // counted. Out of memory throws Error(out_of_memory) with the size, the
  // resource and its usage.
  void* allocate_raw(size_t size, const Stream* stream);
  // Frees memory from allocate_raw() of this size, ordered on `stream`. A size
  // above the largest allocation ever made is refused (invalid_argument)
  // and frees nothing.
  void deallocate_raw(void* ptr, size_t size, const Stream* stream);

  const ResourceProperties& properties() const noexcept { return properties_; }
  ResourceStatistics statistics() const noexcept { return statistics_.snapshot(); }
  void reset_peak() noexcept { statistics_.reset_peak(); }
  // Counts memory that reached this resource without allocate_raw (a buffer
  // opened from another process), so that its deallocate_raw is counted.
  void count_allocation(size_t size) noexcept { statistics_.count_allocation(size); }
  // Counts an allocation that changed size in place of its old one (a
  // virtual buffer resized).
  void count_resize(size_t old_size, size_t new_size) noexcept {
    statistics_.count_resize(old_size, new_size);
  }
  // The device whose context the resource uses; null for the host kind.
  const Device* device() const noexcept { return device_.get(); }
  // The number naming it in snapshots and history events (src/snapshot/).
  uint64_t id() const noexcept { return id_; }
  // "pool of device 0", "host resource", ... for messages.
  virtual std::string describe() const = 0;

 protected:
  Resource(Ref<Device> device, const ResourceProperties& properties);
  ~Resource() override;
  virtual void* do_allocate(size_t size, const Stream* stream) = 0;
  virtual void do_deallocate(void* ptr, size_t size, const Stream* stream) = 0;
  // Extra words for an out-of-memory message ("; the pool reserves ...").
  virtual std::string usage_details() const { return ""; }
  void user_handles_live(bool live) const noexcept override;
  // The device whose context a call on `stream` should use.
  const Device& context_device(const Stream* stream) const {
    return stream ? stream->device() : *device_;
  }

  Ref<Device> device_;

 private:
  // References taken from the shared count in batches and held by a
  // thread shard, or a mark (credit:: above).
  struct alignas(64) Credit {
    std::atomic<int64_t> refs;
  };
  void retain_slow(std::atomic<int64_t>& credit) const noexcept;
  void release_slow(std::atomic<int64_t>& credit) const noexcept;
  // What a call does while the memory history is on (resource.cpp).
  struct Recording;
  void record_out_of_memory(size_t size, const Stream* stream) const noexcept;

  ResourceProperties properties_;
  const uint64_t id_;
  Statistics statistics_;
  mutable Credit credits_[kThreadShards + 1];
};

// The core's pool options, in the driver's terms (capi/ maps the C struct,
// whose zero means every default, onto these).
struct PoolOptions {
  bool use_default_pool = true;
  uint64_t release_threshold = UINT64_MAX;  // the driver's value: 0 keeps nothing
  uint64_t max_size = 0;
  bool ipc_enabled = false;
  int host_numa_id = -1;  // -1: any node
};

// One factory per kind (src/resources/<kind>_resource.cpp).
Ref<Resource> create_host_resource(size_t alignment);
Ref<Resource> create_device_resource(Ref<Device> device, const PoolOptions& options);
Ref<Resource> create_pinned_resource(Ref<Device> device, const PoolOptions& options);
Ref<Resource> create_legacy_pinned_resource(Ref<Device> device);
// `kind` device: the device resource of a device without memory pools.
Ref<Resource> create_legacy_device_resource(Ref<Device> device,
                                            ResourceKind kind = ResourceKind::legacy_device);
Ref<Resource> create_host_shared_resource(uint64_t capacity);
Ref<Resource> create_managed_resource(Ref<Device> device, Location preferred, bool use_pool);
// Adaptors (src/resources/<name>_resource.cpp).
Ref<Resource> create_limit_resource(Ref<Resource> upstream, uint64_t limit_bytes);
// `alignment`: a power of two from 1 to 1 GiB.
Ref<Resource> create_aligned_resource(Ref<Resource> upstream, uint64_t alignment);
// `path` null or empty: $CUMEM_LOG_FILE.
Ref<Resource> create_logging_resource(Ref<Resource> upstream, const char* path);

}  // namespace cumem::core
