// libcumem behind PyTorch's whole CUDA allocator interface
// (c10::cuda::CUDACachingAllocator::CUDAAllocator), over libcumem's C ABI.
// cumem.torch.use_libcumem_allocator() loads this library and installs it
// with cumem_torch_allocator_install() (install.cpp).
//
// What lives where:
//   allocator.cpp  allocations on streams, records, recordStream, frees,
//                  statistics, emptyCache, memory fraction, out of memory
//   pools.cpp      private pools: CUDA graphs, MemPool, checkpoint state
//   history.cpp    recordHistory, the trace, snapshot() in PyTorch's shape
//   ipc.cpp        CUDA IPC of tensors (torch.multiprocessing): shareIpcHandle,
//                  getIpcDevPtr
//   install.cpp    the C entry points that install it
#pragma once

#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda.h>
#include <cumem/cumem.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "pointer_map.hpp"  // src/: the flat map of records
#include "spin_lock.hpp"    // src/

namespace cumem_torch {

namespace cca = c10::cuda::CUDACachingAllocator;
using c10::MempoolId_t;
using c10::CachingDeviceAllocator::DeviceStats;
using c10::CachingDeviceAllocator::TraceEntry;

constexpr int kMaxDevices = 64;
constexpr size_t kShards = 256;
// PyTorch rounds every request up to 512 bytes; its small pool holds
// blocks up to 1 MiB (the statistics' small_pool / large_pool split).
constexpr size_t kRound = 512;
constexpr size_t kSmallSize = 1 << 20;

struct Pool;
struct SharedBlock;  // ipc.cpp

// One live allocation. The map of records is sharded by address (a lock and
// a flat map per shard: no allocation per insert or erase); a record
// is looked up by the pointer PyTorch frees (DataPtr's context is the
// pointer, as with PyTorch's own allocator, so that code that needs a
// "simple" DataPtr keeps working).
struct Record {
  size_t size = 0;       // rounded, as held
  size_t requested = 0;  // as asked for
  int device = 0;
  cudaStream_t stream = nullptr;            // the allocation's stream
  std::vector<cudaStream_t> other_streams;  // recordStream
  cumem_resource_t* resource = nullptr;     // the one it came from (not owned)
  std::shared_ptr<Pool> pool;               // a private pool's, else null
  std::shared_ptr<c10::GatheredContext> context;
  // Shared with other processes (shareIpcHandle, ipc.cpp): the handle
  // string and what keeps its fds open while the block lives, so that a
  // receiver can take them.
  std::shared_ptr<SharedBlock> shared;
};

// A free held back until the events recorded on the streams that used the
// block (recordStream) have completed, or until no capture is underway.
struct PendingFree {
  void* ptr = nullptr;
  Record record;
  std::vector<CUevent> events;
};

// A private pool (PyTorch's graph pools and MemPool): blocks of its own,
// from a caching adaptor of its own, reused only inside the pool.
struct Pool {
  MempoolId_t id{0, 0};
  int device = 0;
  cumem_resource_t* upstream = nullptr;  // owned: a caching adaptor
  int use_count = 0;
  bool use_on_oom = false;
  bool no_split = false;
  // Blocks the pool holds: every one of them, and the free ones by
  // (stream, size), reused only on the stream that freed them.
  std::unordered_map<void*, std::pair<cudaStream_t, size_t>> blocks;
  std::multimap<std::pair<cudaStream_t, size_t>, void*> free_blocks;
  std::unordered_set<void*> live;
  std::vector<uint64_t> capture_ids;  // captures that allocated from upstream
  size_t held_bytes = 0;
};

struct MempoolHash {
  size_t operator()(const MempoolId_t& id) const {
    return std::hash<uint64_t>()(id.first) ^ (std::hash<uint64_t>()(id.second) << 1);
  }
};

// The allocation filters of beginAllocateToPool, per device.
struct ActivePool {
  MempoolId_t id;
  std::function<bool(cudaStream_t)> filter;
};

class Allocator final : public cca::CUDAAllocator {
 public:
  Allocator();

  // c10::Allocator
  c10::DataPtr allocate(size_t size) override;
  c10::DeleterFnPtr raw_deleter() const override;
  void copy_data(void* dest, const void* src, std::size_t count) const override;

  // c10::DeviceAllocator
  bool initialized() override;
  void emptyCache(MempoolId_t mempool_id) override;
  DeviceStats getDeviceStats(c10::DeviceIndex device) override;
  void resetAccumulatedStats(c10::DeviceIndex device) override;
  void resetPeakStats(c10::DeviceIndex device) override;

  // CUDAAllocator
  void* raw_alloc(size_t nbytes) override;
  void* raw_alloc_with_stream(size_t nbytes, cudaStream_t stream) override;
  void raw_delete(void* ptr) override;
  void init(int device_count) override;
  double getMemoryFraction(c10::DeviceIndex device) override;
  void setMemoryFraction(double fraction, c10::DeviceIndex device) override;
  std::vector<cca::StreamSegmentSize> getExpandableSegmentSizes(c10::DeviceIndex device) override;
  void enable(bool value) override;
  bool isEnabled() const override;
  void cacheInfo(c10::DeviceIndex device, size_t* largest_block) override;
  void* getBaseAllocation(void* ptr, size_t* size) override;
  using cca::CUDAAllocator::recordStream;
  void recordStream(const c10::DataPtr& ptr, c10::cuda::CUDAStream stream) override;
  cca::SnapshotInfo snapshot(MempoolId_t mempool_id, bool include_traces) override;
  void beginAllocateToPool(c10::DeviceIndex device, MempoolId_t mempool_id,
                           std::function<bool(cudaStream_t)> filter) override;
  void endAllocateToPool(c10::DeviceIndex device, MempoolId_t mempool_id) override;
  void releasePool(c10::DeviceIndex device, MempoolId_t mempool_id) override;
  int getPoolUseCount(c10::DeviceIndex device, MempoolId_t mempool_id) override;
  void createOrIncrefPool(c10::DeviceIndex device, MempoolId_t mempool_id,
                          std::shared_ptr<cca::CUDAAllocator> allocator) override;
  void setUseOnOOM(c10::DeviceIndex device, MempoolId_t mempool_id, bool use_on_oom) override;
  void setNoSplit(c10::DeviceIndex device, MempoolId_t mempool_id) override;
  bool checkPoolLiveAllocations(c10::DeviceIndex device, MempoolId_t mempool_id,
                                const std::unordered_set<void*>& expected) override;
  cca::ShareableHandle shareIpcHandle(void* ptr) override;
  std::shared_ptr<void> getIpcDevPtr(std::string handle) override;
  bool isHistoryEnabled() override;
  void recordHistory(bool enabled, cca::CreateContextFn context_recorder,
                     size_t alloc_trace_max_entries, cca::RecordContext when, bool clear_history,
                     const std::vector<std::string>& skip_actions) override;
  void recordAnnotation(const std::vector<std::pair<std::string, std::string>>& md) override;
  void pushCompileContext(std::string& md) override;
  void popCompileContext() override;
  void setUserMetadata(const std::string& metadata) override;
  std::string getUserMetadata() override;
  void attachOutOfMemoryObserver(cca::OutOfMemoryObserver observer) override;
  void attachAllocatorTraceTracker(cca::AllocatorTraceTracker tracker) override;
  void enablePeerAccess(c10::DeviceIndex dev, c10::DeviceIndex dev_to_access) override;
  cudaError_t memcpyAsync(void* dst, int dst_device, const void* src, int src_device,
                          size_t count, cudaStream_t stream, bool p2p_enabled) override;
  std::shared_ptr<cca::AllocatorState> getCheckpointState(c10::DeviceIndex device,
                                                          MempoolId_t id) override;
  cca::CheckpointDelta setCheckpointPoolState(c10::DeviceIndex device,
                                              std::shared_ptr<cca::AllocatorState> pps) override;
  std::string name() override { return "libcumem"; }

  // The free behind every DataPtr (its context is the pointer).
  static void free_ptr(void* ptr);

 private:
  // Records by address; 256 shards, each on its own cache line, so that
  // threads rarely meet on one, and a lock held for a few instructions.
  struct alignas(64) Shard {
    cumem::core::SpinLock lock;
    cumem::PointerMap<Record> records;
  };
  struct DeviceState {
    cumem::core::SpinLock stats_lock;  // a few additions per allocation
    DeviceStats stats;
    int64_t reserved_peak_base = 0;  // reserved bytes when the peak was last reset
    std::atomic<double> fraction{1.0};
    uint64_t total_memory = 0;  // written before `resource` is published
    // The framework resource (a reference), chosen at the device's first
    // allocation and read without a lock after that.
    std::atomic<cumem_resource_t*> resource{nullptr};
    std::atomic<int> captures_underway{0};
    std::atomic<bool> pools_active{false};
  };

  // ipc.cpp: each framework resource's pool exported once (for its small
  // blocks), the resource retained while the handle is kept.
  std::shared_ptr<cumem_allocation_handle_t> pool_handle_of(cumem_resource_t* resource);
  std::mutex ipc_mutex_;
  std::unordered_map<cumem_resource_t*, std::shared_ptr<cumem_allocation_handle_t>> pool_handles_;

  Shard& shard_of(void* ptr);
  DeviceState& device_state(int device);
  void check_device(int device) const;
  cumem_resource_t* resource_of(int device);
  void* allocate_on(int device, size_t size, cudaStream_t stream);
  void free_record(void* ptr, Record record);
  void give_back(void* ptr, const Record& record);
  void process_pending(bool wait);
  [[noreturn]] void out_of_memory(int device, size_t size, const std::string& why);
  void count_alloc(int device, size_t size, size_t requested);
  void count_free(int device, size_t size, size_t requested);
  int64_t reserved_bytes(int device, int64_t* segments, int64_t* peak);

  // pools.cpp
  std::shared_ptr<Pool> pool_for(int device, cudaStream_t stream);
  std::shared_ptr<Pool> find_or_create_pool(int device, MempoolId_t id);
  void* pool_allocate(Pool& pool, size_t size, cudaStream_t stream);
  void pool_free(Pool& pool, void* ptr, const Record& record);
  void release_pool_memory(Pool& pool, bool free_blocks_only);
  void retire_pools(int device);

  // history.cpp
  void trace(TraceEntry::Action action, int device, uintptr_t addr, size_t size,
             cudaStream_t stream, MempoolId_t pool, std::shared_ptr<c10::GatheredContext> context);
  std::shared_ptr<c10::GatheredContext> context_for_alloc();
  bool history_wants(TraceEntry::Action action) const;

  Shard shards_[kShards];
  DeviceState devices_[kMaxDevices];
  std::atomic<bool> initialized_{false};
  std::atomic<bool> enabled_{true};
  int device_count_ = 0;

  std::mutex pending_mutex_;
  std::deque<PendingFree> pending_;
  std::atomic<bool> has_pending_{false};
  std::vector<CUevent> event_pool_;  // under pending_mutex_

  std::mutex pools_mutex_;
  std::unordered_map<MempoolId_t, std::shared_ptr<Pool>, MempoolHash> pools_[kMaxDevices];
  std::vector<ActivePool> active_[kMaxDevices];
  std::vector<std::shared_ptr<Pool>> retired_;  // released, waiting for their blocks

  std::mutex observers_mutex_;
  std::vector<cca::OutOfMemoryObserver> oom_observers_;
  std::vector<cca::AllocatorTraceTracker> trace_trackers_;
  std::atomic<bool> has_trackers_{false};

  // The history (history.cpp).
  mutable std::mutex history_mutex_;
  std::atomic<bool> history_on_{false};
  cca::CreateContextFn context_recorder_ = nullptr;
  cca::RecordContext record_when_ = cca::RecordContext::NEVER;
  size_t trace_capacity_ = 0;
  std::unordered_set<int> skip_actions_;
  std::vector<std::vector<TraceEntry>> traces_;  // a ring per device
  std::vector<size_t> trace_next_;
  std::vector<c10::CachingDeviceAllocator::AnnotationEntry> annotations_;
  std::string user_metadata_;
};

Allocator& instance();

// Messages are put together here, as one string, before PyTorch sees them.
inline std::string to_text(const std::string& s) { return s; }
inline std::string to_text(const char* s) { return s; }
template <typename T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
std::string to_text(T v) {
  return std::to_string(v);
}
template <typename... A>
std::string text(const A&... parts) {
  std::string out;
  ((out += to_text(parts)), ...);
  return out;
}
#define CUMEM_TORCH_CHECK(cond, ...) TORCH_CHECK(cond, ::cumem_torch::text(__VA_ARGS__))

// For messages: "0x7f0000200000"; "2.00 MiB".
std::string pointer_text(const void* p);
std::string bytes_text(uint64_t n);

// The status `s` as a PyTorch error naming `what`, with libcumem's message;
// the driver's result `r` the same way.
[[noreturn]] void fail(cumem_status_t s, const std::string& what);
[[noreturn]] void fail_driver(CUresult r, const std::string& what);
// CUMEM_TORCH_OK(call, what...): the libcumem call's status, a PyTorch error
// naming `what` (its parts concatenated, as CUMEM_TORCH_CHECK's) if it
// failed; CUMEM_TORCH_CU the same for a driver call. The message is made
// only on failure: an allocation and a free make none (building it on
// every call cost a fifth of the extension's torch.empty + del on the
// H200, 2026-12-04).
#define CUMEM_TORCH_OK(call, ...)                                              \
  do {                                                                         \
    const cumem_status_t cumem_torch_s_ = (call);                              \
    if (C10_UNLIKELY(cumem_torch_s_ != CUMEM_SUCCESS))                         \
      ::cumem_torch::fail(cumem_torch_s_, ::cumem_torch::text(__VA_ARGS__));   \
  } while (0)
#define CUMEM_TORCH_CU(call, ...)                                              \
  do {                                                                         \
    const CUresult cumem_torch_r_ = (call);                                    \
    if (C10_UNLIKELY(cumem_torch_r_ != CUDA_SUCCESS))                          \
      ::cumem_torch::fail_driver(cumem_torch_r_, ::cumem_torch::text(__VA_ARGS__)); \
  } while (0)

// Each thread's stack of compile contexts (pushCompileContext).
std::string current_compile_context();

}  // namespace cumem_torch
