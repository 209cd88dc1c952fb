// Allocations, frees, recordStream, statistics, emptyCache, the memory
// fraction and out of memory (allocator.hpp says what lives where).
#include "allocator.hpp"

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdio>
#include <limits>

namespace cumem_torch {

std::string pointer_text(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

std::string bytes_text(uint64_t n) {
  char buf[64];
  if (n >= (1ull << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", n / double(1ull << 30));
  else if (n >= (1ull << 20))
    std::snprintf(buf, sizeof buf, "%.2f MiB", n / double(1ull << 20));
  else
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(n));
  return buf;
}

namespace {

// The device's primary context, current for the scope (events and copies
// belong to a context; a free may run on any thread).
class ContextScope {
 public:
  explicit ContextScope(int device) {
    static std::mutex mutex;
    static CUcontext contexts[kMaxDevices] = {};
    CUcontext ctx = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!contexts[device]) {
        CUdevice dev = 0;
        CUMEM_TORCH_CU(cuDeviceGet(&dev, device), "cuDeviceGet");
        CUMEM_TORCH_CU(cuDevicePrimaryCtxRetain(&contexts[device], dev), "cuDevicePrimaryCtxRetain");
      }
      ctx = contexts[device];
    }
    CUMEM_TORCH_CU(cuCtxPushCurrent(ctx), "cuCtxPushCurrent");
  }
  ~ContextScope() {
    CUcontext popped = nullptr;
    (void)cuCtxPopCurrent(&popped);
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;
};

size_t stat_index(size_t size) {
  return static_cast<size_t>(size <= kSmallSize ? c10::CachingAllocator::StatType::SMALL_POOL
                                                : c10::CachingAllocator::StatType::LARGE_POOL);
}
constexpr size_t kAggregate = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);

// What libcumem's snapshot says of the segments of `resource` itself (not
// its upstreams): how many, their bytes, the largest cached block, and the
// expandable ranges' mapped bytes per stream.
struct SegmentSums {
  int64_t segments = 0;
  int64_t bytes = 0;
  uint64_t largest_cached = 0;
  std::vector<std::pair<uint64_t, uint64_t>> expandable;  // (stream, mapped bytes)
};

SegmentSums segment_sums(cumem_resource_t* resource) {
  SegmentSums sums;
  cumem_snapshot_t* snap = nullptr;
  CUMEM_TORCH_OK(cumem_snapshot_take(resource, &snap), "taking a snapshot of the framework resource");
  cumem_snapshot_totals_t totals = CUMEM_SNAPSHOT_TOTALS_INIT;
  cumem_snapshot_resource_t top = CUMEM_SNAPSHOT_RESOURCE_INIT;
  cumem_status_t s = cumem_snapshot_get_totals(snap, &totals);
  if (s == CUMEM_SUCCESS && totals.resource_count > 0) s = cumem_snapshot_get_resource(snap, 0, &top);
  for (uint64_t i = 0; s == CUMEM_SUCCESS && i < totals.segment_count; ++i) {
    cumem_snapshot_segment_t seg = CUMEM_SNAPSHOT_SEGMENT_INIT;
    s = cumem_snapshot_get_segment(snap, i, &seg);
    if (s != CUMEM_SUCCESS || seg.resource_id != top.id) continue;
    ++sums.segments;
    uint64_t mapped = 0;
    for (uint64_t b = 0; b < seg.block_count; ++b) {
      cumem_snapshot_block_t block = CUMEM_SNAPSHOT_BLOCK_INIT;
      if (cumem_snapshot_get_block(snap, seg.first_block + b, &block) != CUMEM_SUCCESS) break;
      if (block.state == CUMEM_BLOCK_UNMAPPED) continue;
      mapped += block.size;
      if (block.state == CUMEM_BLOCK_CACHED)
        sums.largest_cached = std::max<uint64_t>(sums.largest_cached, block.size);
    }
    sums.bytes += static_cast<int64_t>(mapped);
    if (seg.kind == CUMEM_SEGMENT_EXPANDABLE) sums.expandable.emplace_back(seg.stream, mapped);
  }
  cumem_snapshot_release(snap);
  CUMEM_TORCH_OK(s, "reading a snapshot of the framework resource");
  return sums;
}

}  // namespace

void fail(cumem_status_t s, const std::string& what) {
  const char* message = cumem_last_error_message();
  CUMEM_TORCH_CHECK(false, "libcumem: ", what, " failed: ", cumem_status_string(s), ": ",
              message ? message : "");
}

void fail_driver(CUresult r, const std::string& what) {
  const char* name = nullptr;
  const char* text = nullptr;
  (void)cuGetErrorName(r, &name);
  (void)cuGetErrorString(r, &text);
  CUMEM_TORCH_CHECK(false, "libcumem: ", what, " failed: ", name ? name : "CUDA error", " (",
              static_cast<int>(r), "): ", text ? text : "");
}

Allocator::Allocator() = default;

Allocator& instance() {
  // Never destroyed: PyTorch frees tensors during interpreter teardown.
  static Allocator* a = new Allocator;
  return *a;
}

Allocator::Shard& Allocator::shard_of(void* ptr) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr) >> 9;
  return shards_[(p ^ (p >> 7) ^ (p >> 17)) % kShards];
}

void Allocator::check_device(int device) const {
  CUMEM_TORCH_CHECK(device >= 0 && device < device_count_ && device < kMaxDevices,
              "libcumem: device ", device, " is out of range (this process has ", device_count_,
              " CUDA device(s))");
}

Allocator::DeviceState& Allocator::device_state(int device) {
  check_device(device);
  return devices_[device];
}

cumem_resource_t* Allocator::resource_of(int device) {
  DeviceState& d = devices_[device];
  if (cumem_resource_t* r = d.resource.load(std::memory_order_acquire)) return r;
  // The framework resource at the device's first allocation (set or
  // configure libcumem before PyTorch allocates, as PyTorch's own
  // PYTORCH_CUDA_ALLOC_CONF is read once).
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (cumem_resource_t* r = d.resource.load(std::memory_order_relaxed)) return r;
  cumem_resource_t* r = nullptr;
  CUMEM_TORCH_OK(cumem_framework_get_resource(device, &r),
        "choosing the framework resource of device " + std::to_string(device));
  cumem_device_t* dev = nullptr;
  uint64_t free = 0;
  if (cumem_device_get(device, &dev) == CUMEM_SUCCESS) {
    (void)cumem_device_memory_info(dev, &free, &d.total_memory);
    cumem_device_release(dev);
  }
  d.resource.store(r, std::memory_order_release);  // after total_memory
  return r;
}

void Allocator::init(int device_count) {
  CUMEM_TORCH_CHECK(device_count >= 0 && device_count <= kMaxDevices, "libcumem: ", device_count,
              " devices: at most ", kMaxDevices, " are supported");
  std::lock_guard<std::mutex> lock(history_mutex_);
  if (initialized_.load()) return;
  device_count_ = device_count;
  traces_.assign(device_count, {});
  trace_next_.assign(device_count, 0);
  initialized_.store(true);
}

bool Allocator::initialized() { return initialized_.load(); }

void Allocator::enable(bool value) { enabled_.store(value); }
bool Allocator::isEnabled() const { return enabled_.load(); }

c10::DataPtr Allocator::allocate(size_t size) {
  const int device = c10::cuda::current_device();
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream(device).stream();
  void* ptr = allocate_on(device, size, stream);
  return {ptr, ptr, &Allocator::free_ptr, c10::Device(c10::DeviceType::CUDA, device)};
}

c10::DeleterFnPtr Allocator::raw_deleter() const { return &Allocator::free_ptr; }

void Allocator::free_ptr(void* ptr) {
  try {
    instance().raw_delete(ptr);
  } catch (const std::exception& e) {
    // A deleter cannot throw: the memory stays allocated, and says why.
    TORCH_WARN(text("libcumem: could not free ", pointer_text(ptr), ": ", e.what()));
  }
}

void* Allocator::raw_alloc(size_t nbytes) {
  const int device = c10::cuda::current_device();
  return allocate_on(device, nbytes, c10::cuda::getCurrentCUDAStream(device).stream());
}

void* Allocator::raw_alloc_with_stream(size_t nbytes, cudaStream_t stream) {
  return allocate_on(c10::cuda::current_device(), nbytes, stream);
}

void* Allocator::allocate_on(int device, size_t requested, cudaStream_t stream) {
  CUMEM_TORCH_CHECK(initialized_.load(), "libcumem: the allocator is used before init()");
  check_device(device);
  if (requested == 0) return nullptr;
  CUMEM_TORCH_CHECK(requested <= std::numeric_limits<size_t>::max() - kRound,
              "libcumem: cannot allocate ", requested, " bytes");
  if (has_pending_.load(std::memory_order_acquire)) process_pending(false);
  const size_t size = (requested + kRound - 1) / kRound * kRound;
  DeviceState& d = devices_[device];
  cumem_resource_t* resource = resource_of(device);
  const double fraction = d.fraction.load(std::memory_order_relaxed);
  if (fraction < 1.0) {
    int64_t in_use = 0;
    {
      std::lock_guard<cumem::core::SpinLock> lock(d.stats_lock);
      in_use = d.stats.allocated_bytes[kAggregate].current;
    }
    const double limit = fraction * static_cast<double>(d.total_memory);
    if (static_cast<double>(in_use) + static_cast<double>(size) > limit)
      out_of_memory(device, size,
                    "the memory fraction " + std::to_string(fraction) + " of device " +
                        std::to_string(device) + " allows " +
                        bytes_text(static_cast<uint64_t>(limit)) + " and " + bytes_text(in_use) +
                        " are allocated");
  }
  std::shared_ptr<Pool> pool;
  if (d.pools_active.load(std::memory_order_acquire)) pool = pool_for(device, stream);
  void* ptr = nullptr;
  if (pool) {
    ptr = pool_allocate(*pool, size, stream);
    resource = pool->upstream;
  } else {
    cumem_status_t s = cumem_resource_allocate_native(resource, size, stream, &ptr);
    if (s == CUMEM_ERROR_OUT_OF_MEMORY) {
      // Frees held back for other streams' work, then once more.
      {
        std::lock_guard<cumem::core::SpinLock> lock(d.stats_lock);
        ++d.stats.num_alloc_retries;
      }
      process_pending(true);
      s = cumem_resource_allocate_native(resource, size, stream, &ptr);
    }
    if (s == CUMEM_ERROR_OUT_OF_MEMORY) {
      // Pools that said setUseOnOOM serve what the device cannot.
      std::shared_ptr<Pool> spare;
      {
        std::lock_guard<std::mutex> lock(pools_mutex_);
        for (auto& [id, p] : pools_[device])
          if (p->use_on_oom) {
            spare = p;
            break;
          }
      }
      if (spare) {
        try {
          ptr = pool_allocate(*spare, size, stream);
          pool = spare;
          resource = spare->upstream;
          s = CUMEM_SUCCESS;
        } catch (const c10::OutOfMemoryError&) {
        }
      }
    }
    if (s == CUMEM_ERROR_OUT_OF_MEMORY) {
      const char* message = cumem_last_error_message();
      out_of_memory(device, size, message ? message : "");
    }
    CUMEM_TORCH_OK(s, "allocating " + std::to_string(size) + " bytes on device " + std::to_string(device));
  }
  Record record;
  record.size = size;
  record.requested = requested;
  record.device = device;
  record.stream = stream;
  record.resource = resource;
  record.pool = pool;
  record.context = context_for_alloc();
  auto context = record.context;
  {
    Shard& shard = shard_of(ptr);
    std::lock_guard<cumem::core::SpinLock> lock(shard.lock);
    if (!shard.records.emplace(ptr, std::move(record)).second) {
      CUMEM_TORCH_CHECK(false, "libcumem: the resource handed out ", pointer_text(ptr),
                  ", which is still allocated");
    }
  }
  count_alloc(device, size, requested);
  if (history_on_.load(std::memory_order_relaxed) || has_trackers_.load(std::memory_order_relaxed))
    trace(TraceEntry::ALLOC, device, reinterpret_cast<uintptr_t>(ptr), size, stream,
          pool ? pool->id : MempoolId_t{0, 0}, context);
  return ptr;
}

void Allocator::raw_delete(void* ptr) {
  if (!ptr) return;
  Record record;
  {
    Shard& shard = shard_of(ptr);
    std::lock_guard<cumem::core::SpinLock> lock(shard.lock);
    auto it = shard.records.find(ptr);
    CUMEM_TORCH_CHECK(it != shard.records.end(), "libcumem: invalid device pointer ", pointer_text(ptr),
                ": not allocated by libcumem's PyTorch allocator, or freed already");
    record = std::move(it->second);
    shard.records.erase(it);
  }
  free_record(ptr, std::move(record));
}

void Allocator::free_record(void* ptr, Record record) {
  const int device = record.device;
  count_free(device, record.size, record.requested);
  if (history_on_.load(std::memory_order_relaxed) || has_trackers_.load(std::memory_order_relaxed))
    trace(TraceEntry::FREE_REQUESTED, device, reinterpret_cast<uintptr_t>(ptr), record.size,
          record.stream, record.pool ? record.pool->id : MempoolId_t{0, 0},
          history_wants(TraceEntry::FREE_REQUESTED) ? context_for_alloc() : nullptr);
  // Memory from outside a private pool freed while a capture is underway
  // waits for its end: a capturing stream cannot free it, and the events
  // of recordStream cannot be recorded or asked about meanwhile.
  const bool capturing = devices_[device].captures_underway.load(std::memory_order_acquire) > 0;
  if (record.other_streams.empty() && !(capturing && !record.pool)) {
    give_back(ptr, record);
    return;
  }
  PendingFree pending;
  pending.ptr = ptr;
  pending.record = std::move(record);
  std::lock_guard<std::mutex> lock(pending_mutex_);
  pending_.push_back(std::move(pending));
  has_pending_.store(true, std::memory_order_release);
}

void Allocator::give_back(void* ptr, const Record& record) {
  if (record.pool) {
    pool_free(*record.pool, ptr, record);
  } else {
    CUMEM_TORCH_OK(cumem_resource_deallocate_native(record.resource, ptr, record.size, record.stream),
          "freeing " + pointer_text(ptr));
  }
  if (history_on_.load(std::memory_order_relaxed) || has_trackers_.load(std::memory_order_relaxed))
    trace(TraceEntry::FREE_COMPLETED, record.device, reinterpret_cast<uintptr_t>(ptr), record.size,
          record.stream, record.pool ? record.pool->id : MempoolId_t{0, 0}, nullptr);
}

void Allocator::process_pending(bool wait) {
  std::deque<PendingFree> done;
  {
    std::lock_guard<std::mutex> lock(pending_mutex_);
    for (auto it = pending_.begin(); it != pending_.end();) {
      PendingFree& p = *it;
      const int device = p.record.device;
      if (devices_[device].captures_underway.load(std::memory_order_acquire) > 0) {
        ++it;
        continue;
      }
      ContextScope context(device);
      if (p.events.empty() && !p.record.other_streams.empty()) {
        for (cudaStream_t s : p.record.other_streams) {
          CUevent e = nullptr;
          CUMEM_TORCH_CU(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
          CUMEM_TORCH_CU(cuEventRecord(e, reinterpret_cast<CUstream>(s)), "cuEventRecord");
          p.events.push_back(e);
        }
      }
      bool complete = true;
      for (CUevent e : p.events) {
        const CUresult r = wait ? cuEventSynchronize(e) : cuEventQuery(e);
        if (r == CUDA_ERROR_NOT_READY) {
          complete = false;
          break;
        }
        CUMEM_TORCH_CU(r, "waiting for a stream that used a freed block (recordStream)");
      }
      if (!complete) {
        ++it;
        continue;
      }
      for (CUevent e : p.events) (void)cuEventDestroy(e);
      p.events.clear();
      done.push_back(std::move(p));
      it = pending_.erase(it);
    }
    has_pending_.store(!pending_.empty(), std::memory_order_release);
  }
  for (PendingFree& p : done) give_back(p.ptr, p.record);
}

void Allocator::recordStream(const c10::DataPtr& data_ptr, c10::cuda::CUDAStream stream) {
  void* ptr = data_ptr.get();
  if (!ptr) return;
  Shard& shard = shard_of(ptr);
  std::lock_guard<cumem::core::SpinLock> lock(shard.lock);
  auto it = shard.records.find(ptr);
  CUMEM_TORCH_CHECK(it != shard.records.end(), "libcumem: recordStream of ", pointer_text(ptr),
              ", which libcumem's PyTorch allocator did not allocate (or freed)");
  Record& r = it->second;
  cudaStream_t s = stream.stream();
  if (s == r.stream) return;
  if (std::find(r.other_streams.begin(), r.other_streams.end(), s) == r.other_streams.end())
    r.other_streams.push_back(s);
}

void* Allocator::getBaseAllocation(void* ptr, size_t* size) {
  Shard& shard = shard_of(ptr);
  std::lock_guard<cumem::core::SpinLock> lock(shard.lock);
  auto it = shard.records.find(ptr);
  CUMEM_TORCH_CHECK(it != shard.records.end(), "libcumem: getBaseAllocation of ", pointer_text(ptr),
              ": not the start of an allocation of libcumem's PyTorch allocator");
  if (size) *size = it->second.size;
  return ptr;
}

void Allocator::count_alloc(int device, size_t size, size_t requested) {
  DeviceState& d = devices_[device];
  const size_t kind = stat_index(size);
  std::lock_guard<cumem::core::SpinLock> lock(d.stats_lock);
  for (size_t i : {kAggregate, kind}) {
    d.stats.allocation[i].increase(1);
    d.stats.active[i].increase(1);
    d.stats.allocated_bytes[i].increase(size);
    d.stats.active_bytes[i].increase(size);
    d.stats.requested_bytes[i].increase(requested);
  }
}

void Allocator::count_free(int device, size_t size, size_t requested) {
  DeviceState& d = devices_[device];
  const size_t kind = stat_index(size);
  std::lock_guard<cumem::core::SpinLock> lock(d.stats_lock);
  for (size_t i : {kAggregate, kind}) {
    d.stats.allocation[i].decrease(1);
    d.stats.active[i].decrease(1);
    d.stats.allocated_bytes[i].decrease(size);
    d.stats.active_bytes[i].decrease(size);
    d.stats.requested_bytes[i].decrease(requested);
  }
}

// What the device's allocations hold from the GPU: the framework
// resource's reserved bytes (a caching adaptor's bytes_reserved, a pool's
// reserved memory, else its bytes in use) plus the private pools' blocks.
int64_t Allocator::reserved_bytes(int device, int64_t* segments, int64_t* peak) {
  cumem_resource_t* r = resource_of(device);
  int64_t reserved = 0;
  int64_t high = 0;
  int64_t count = 0;
  cumem_caching_statistics_t cs = CUMEM_CACHING_STATISTICS_INIT;
  cumem_resource_properties_t props = CUMEM_RESOURCE_PROPERTIES_INIT;
  if (cumem_caching_resource_get_statistics(r, &cs) == CUMEM_SUCCESS) {
    const SegmentSums sums = segment_sums(r);
    reserved = static_cast<int64_t>(cs.bytes_reserved);
    high = static_cast<int64_t>(cs.peak_bytes_reserved);
    count = sums.segments;
  } else {
    CUMEM_TORCH_OK(cumem_resource_get_properties(r, &props), "reading the framework resource's properties");
    cumem_resource_statistics_t rs = CUMEM_RESOURCE_STATISTICS_INIT;
    CUMEM_TORCH_OK(cumem_resource_get_statistics(r, &rs), "reading the framework resource's statistics");
    count = static_cast<int64_t>(rs.live_allocations);
    reserved = static_cast<int64_t>(rs.bytes_in_use);
    high = static_cast<int64_t>(rs.peak_bytes_in_use);
    cumem_pool_attributes_t pa = CUMEM_POOL_ATTRIBUTES_INIT;
    if (props.is_pool && cumem_resource_pool_get_attributes(r, &pa) == CUMEM_SUCCESS) {
      reserved = static_cast<int64_t>(pa.reserved_mem_current);
      high = static_cast<int64_t>(pa.reserved_mem_high);
    }
  }
  {
    std::lock_guard<std::mutex> lock(pools_mutex_);
    for (auto& [id, pool] : pools_[device]) {
      reserved += static_cast<int64_t>(pool->held_bytes);
      count += static_cast<int64_t>(pool->blocks.size());
    }
    for (auto& pool : retired_)
      if (pool->device == device) {
        reserved += static_cast<int64_t>(pool->held_bytes);
        count += static_cast<int64_t>(pool->blocks.size());
      }
  }
  *segments = count;
  *peak = std::max(high, reserved);
  return reserved;
}

DeviceStats Allocator::getDeviceStats(c10::DeviceIndex device) {
  DeviceState& d = device_state(device);
  int64_t segments = 0;
  int64_t peak = 0;
  const int64_t reserved = reserved_bytes(device, &segments, &peak);
  std::lock_guard<cumem::core::SpinLock> lock(d.stats_lock);
  // The peak since resetPeakStats: libcumem's highs are not reset by it
  // for every resource kind, so the base taken then caps what they say.
  DeviceStats& s = d.stats;
  auto& rb = s.reserved_bytes[kAggregate];
  const int64_t old_peak = rb.peak;
  rb.current = reserved;
  rb.peak = std::max({old_peak, reserved, d.reserved_peak_base > 0 ? int64_t(0) : peak});
  auto& seg = s.segment[kAggregate];
  seg.current = segments;
  seg.peak = std::max(seg.peak, segments);
  return s;
}

void Allocator::resetAccumulatedStats(c10::DeviceIndex device) {
  DeviceState& d = device_state(device);
  std::lock_guard<cumem::core::SpinLock> lock(d.stats_lock);
  DeviceStats& s = d.stats;
  for (auto* array : {&s.allocation, &s.segment, &s.active, &s.inactive_split, &s.allocated_bytes,
                      &s.reserved_bytes, &s.active_bytes, &s.inactive_split_bytes,
                      &s.requested_bytes})
    for (auto& stat : *array) stat.reset_accumulated();
  s.num_alloc_retries = 0;
  s.num_ooms = 0;
  s.num_sync_all_streams = 0;
  s.num_device_alloc = 0;
  s.num_device_free = 0;
}

void Allocator::resetPeakStats(c10::DeviceIndex device) {
  DeviceState& d = device_state(device);
  cumem_resource_t* r = resource_of(device);
  (void)cumem_resource_reset_peak(r);
  cumem_resource_properties_t props = CUMEM_RESOURCE_PROPERTIES_INIT;
  if (cumem_resource_get_properties(r, &props) == CUMEM_SUCCESS && props.is_pool)
    (void)cumem_resource_pool_reset_highs(r);
  int64_t segments = 0;
  int64_t peak = 0;
  const int64_t reserved = reserved_bytes(device, &segments, &peak);
  std::lock_guard<cumem::core::SpinLock> lock(d.stats_lock);
  DeviceStats& s = d.stats;
  for (auto* array : {&s.allocation, &s.segment, &s.active, &s.inactive_split, &s.allocated_bytes,
                      &s.reserved_bytes, &s.active_bytes, &s.inactive_split_bytes,
                      &s.requested_bytes})
    for (auto& stat : *array) stat.reset_peak();
  s.reserved_bytes[kAggregate].current = reserved;
  s.reserved_bytes[kAggregate].peak = reserved;
  d.reserved_peak_base = std::max<int64_t>(reserved, 1);
}

void Allocator::emptyCache(MempoolId_t mempool_id) {
  process_pending(true);
  if (mempool_id != MempoolId_t{0, 0}) {
    std::shared_ptr<Pool> pool;
    {
      std::lock_guard<std::mutex> lock(pools_mutex_);
      for (int dev = 0; dev < device_count_ && !pool; ++dev) {
        auto it = pools_[dev].find(mempool_id);
        if (it != pools_[dev].end()) pool = it->second;
      }
    }
    if (pool) release_pool_memory(*pool, true);
    return;
  }
  for (int device = 0; device < device_count_; ++device) {
    DeviceState& d = devices_[device];
    cumem_resource_t* resource = d.resource.load(std::memory_order_acquire);
    if (!resource) continue;
    // The driver refuses to wait for a device while one of its streams
    // captures: the cache stays as it is until the capture ends.
    if (d.captures_underway.load() > 0) continue;
    retire_pools(device);
    cumem_caching_statistics_t cs = CUMEM_CACHING_STATISTICS_INIT;
    if (cumem_caching_resource_get_statistics(resource, &cs) == CUMEM_SUCCESS) {
      CUMEM_TORCH_OK(cumem_caching_resource_trim(resource, 0), "emptying the cache of device " +
                                                            std::to_string(device));
      continue;
    }
    cumem_resource_properties_t props = CUMEM_RESOURCE_PROPERTIES_INIT;
    if (cumem_resource_get_properties(resource, &props) == CUMEM_SUCCESS && props.is_pool) {
      cumem_device_t* dev = nullptr;
      CUMEM_TORCH_OK(cumem_device_get(device, &dev), "cumem_device_get");
      const cumem_status_t s = cumem_device_synchronize(dev);
      cumem_device_release(dev);
      CUMEM_TORCH_OK(s, "waiting for device " + std::to_string(device) + " before trimming its pool");
      CUMEM_TORCH_OK(cumem_resource_pool_trim(resource, 0),
            "trimming the pool of device " + std::to_string(device));
    }
  }
}

double Allocator::getMemoryFraction(c10::DeviceIndex device) {
  return device_state(device).fraction.load(std::memory_order_relaxed);
}

void Allocator::setMemoryFraction(double fraction, c10::DeviceIndex device) {
  CUMEM_TORCH_CHECK(fraction >= 0 && fraction <= 1, "libcumem: invalid fraction ", fraction,
              ": it must be between 0 and 1");
  DeviceState& d = device_state(device);
  (void)resource_of(device);  // reads the device's total memory
  d.fraction.store(fraction, std::memory_order_relaxed);
}

std::vector<cca::StreamSegmentSize> Allocator::getExpandableSegmentSizes(c10::DeviceIndex device) {
  check_device(device);
  std::vector<cca::StreamSegmentSize> sizes;
  for (const auto& [stream, mapped] : segment_sums(resource_of(device)).expandable)
    sizes.emplace_back(reinterpret_cast<cudaStream_t>(stream), false, mapped);
  return sizes;
}

void Allocator::cacheInfo(c10::DeviceIndex device, size_t* largest_block) {
  check_device(device);
  *largest_block = segment_sums(resource_of(device)).largest_cached;
}

void Allocator::out_of_memory(int device, size_t size, const std::string& why) {
  DeviceState& d = devices_[device];
  int64_t allocated = 0;
  {
    std::lock_guard<cumem::core::SpinLock> lock(d.stats_lock);
    ++d.stats.num_ooms;
    allocated = d.stats.allocated_bytes[kAggregate].current;
  }
  uint64_t free = 0;
  uint64_t total = 0;
  cumem_device_t* dev = nullptr;
  if (cumem_device_get(device, &dev) == CUMEM_SUCCESS) {
    (void)cumem_device_memory_info(dev, &free, &total);
    cumem_device_release(dev);
  }
  if (history_on_.load() || has_trackers_.load())
    trace(TraceEntry::OOM, device, free, size, nullptr, {0, 0}, nullptr);
  std::vector<cca::OutOfMemoryObserver> observers;
  {
    std::lock_guard<std::mutex> lock(observers_mutex_);
    observers = oom_observers_;
  }
  for (auto& observer : observers) observer(device, static_cast<size_t>(allocated), total, free);
  std::string summary(4096, '\0');
  size_t length = 0;
  if (cumem_memory_summary(summary.data(), summary.size(), &length) == CUMEM_SUCCESS)
    summary.resize(std::min(length, summary.size() - 1));
  else
    summary.clear();
  TORCH_CHECK_WITH(OutOfMemoryError, false, text("CUDA out of memory (libcumem). Tried to allocate ",
                   bytes_text(size), ". GPU ", device, " has a total capacity of ",
                   bytes_text(total), " of which ", bytes_text(free), " is free; ",
                   bytes_text(static_cast<uint64_t>(allocated)),
                   " is allocated by PyTorch through libcumem. ", why, "\n", summary));
}

void Allocator::attachOutOfMemoryObserver(cca::OutOfMemoryObserver observer) {
  std::lock_guard<std::mutex> lock(observers_mutex_);
  oom_observers_.push_back(std::move(observer));
}

void Allocator::attachAllocatorTraceTracker(cca::AllocatorTraceTracker tracker) {
  std::lock_guard<std::mutex> lock(observers_mutex_);
  trace_trackers_.push_back(std::move(tracker));
  has_trackers_.store(true);
}

void Allocator::copy_data(void* dest, const void* src, std::size_t count) const {
  CUMEM_TORCH_CU(cuMemcpy(reinterpret_cast<CUdeviceptr>(dest), reinterpret_cast<CUdeviceptr>(src),
                        count),
               "cuMemcpy");
}

cudaError_t Allocator::memcpyAsync(void* dst, int dst_device, const void* src, int src_device,
                                   size_t count, cudaStream_t stream, bool p2p_enabled) {
  CUresult r;
  if (p2p_enabled || dst_device == src_device) {
    r = cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src),
                      count, reinterpret_cast<CUstream>(stream));
  } else {
    CUcontext dst_ctx = nullptr;
    CUcontext src_ctx = nullptr;
    CUdevice d = 0;
    CUdevice s = 0;
    r = cuDeviceGet(&d, dst_device);
    if (r == CUDA_SUCCESS) r = cuDeviceGet(&s, src_device);
    if (r == CUDA_SUCCESS) r = cuDevicePrimaryCtxRetain(&dst_ctx, d);
    if (r == CUDA_SUCCESS) r = cuDevicePrimaryCtxRetain(&src_ctx, s);
    if (r == CUDA_SUCCESS)
      r = cuMemcpyPeerAsync(reinterpret_cast<CUdeviceptr>(dst), dst_ctx,
                            reinterpret_cast<CUdeviceptr>(src), src_ctx, count,
                            reinterpret_cast<CUstream>(stream));
    if (dst_ctx) (void)cuDevicePrimaryCtxRelease(d);
    if (src_ctx) (void)cuDevicePrimaryCtxRelease(s);
  }
  // The runtime's codes equal the driver's for the errors a copy can give.
  return static_cast<cudaError_t>(r);
}

void Allocator::enablePeerAccess(c10::DeviceIndex dev, c10::DeviceIndex dev_to_access) {
  check_device(dev);
  check_device(dev_to_access);
  cumem_device_t* a = nullptr;
  cumem_device_t* b = nullptr;
  CUMEM_TORCH_OK(cumem_device_get(dev, &a), "cumem_device_get");
  cumem_status_t s = cumem_device_get(dev_to_access, &b);
  if (s == CUMEM_SUCCESS) s = cumem_device_enable_peer_access(a, b);
  // Memory that is not cuMemAlloc'd needs its own access granted as well:
  // a pool's (the device's, which the private pools share), an expandable
  // cache's pages. NOT_SUPPORTED: memory that has no access to set
  // (cuMemAlloc'd or managed), which the peer reaches as it is.
  cumem_resource_t* r = s == CUMEM_SUCCESS ? resource_of(dev_to_access) : nullptr;
  if (r) {
    s = cumem_resource_set_peer_access(r, a, CUMEM_TRUE);
    if (s == CUMEM_ERROR_NOT_SUPPORTED) s = CUMEM_SUCCESS;
  }
  if (b) cumem_device_release(b);
  cumem_device_release(a);
  CUMEM_TORCH_OK(s, "enabling access of device " + std::to_string(dev) + " to device " +
               std::to_string(dev_to_access) + "'s memory");
}

}  // namespace cumem_torch
