// The memory history (torch.cuda.memory._record_memory_history) and
// snapshot() in PyTorch's shape, so that torch.cuda.memory._snapshot() and
// _dump_snapshot() give what pytorch.org/memory_viz opens: the segments and
// blocks come from libcumem's snapshot of each resource the allocator uses,
// the stacks and requested sizes from the allocator's records.
#include "allocator.hpp"

#include <c10/util/ApproximateClock.h>
#include <c10/util/Exception.h>

#include <cstdlib>

namespace cumem_torch {

namespace {

thread_local std::vector<std::string> compile_contexts;

struct SegmentsOf {
  cumem_resource_t* resource;
  MempoolId_t pool;
  bool is_pool;
};

}  // namespace

std::string current_compile_context() {
  return compile_contexts.empty() ? std::string("N/A") : compile_contexts.back();
}

void Allocator::pushCompileContext(std::string& md) { compile_contexts.push_back(md); }

void Allocator::popCompileContext() {
  if (!compile_contexts.empty()) compile_contexts.pop_back();
}

void Allocator::setUserMetadata(const std::string& metadata) {
  std::lock_guard<std::mutex> lock(history_mutex_);
  user_metadata_ = metadata;
}

std::string Allocator::getUserMetadata() {
  std::lock_guard<std::mutex> lock(history_mutex_);
  return user_metadata_;
}

bool Allocator::isHistoryEnabled() { return history_on_.load(); }

bool Allocator::history_wants(TraceEntry::Action action) const {
  // STATE keeps stacks of live allocations only; ALLOC adds them to the
  // trace's allocations, ALL to its frees too.
  if (action == TraceEntry::FREE_REQUESTED) return record_when_ == cca::RecordContext::ALL;
  return record_when_ >= cca::RecordContext::STATE;
}

std::shared_ptr<c10::GatheredContext> Allocator::context_for_alloc() {
  if (!history_on_.load(std::memory_order_relaxed)) return nullptr;
  cca::CreateContextFn recorder = nullptr;
  {
    std::lock_guard<std::mutex> lock(history_mutex_);
    if (record_when_ >= cca::RecordContext::STATE) recorder = context_recorder_;
  }
  return recorder ? recorder() : nullptr;
}

void Allocator::recordHistory(bool enabled, cca::CreateContextFn context_recorder,
                              size_t alloc_trace_max_entries, cca::RecordContext when,
                              bool clear_history, const std::vector<std::string>& skip_actions) {
  std::lock_guard<std::mutex> lock(history_mutex_);
  std::unordered_set<int> skip;
  for (const std::string& name : skip_actions)
    skip.insert(static_cast<int>(c10::CachingDeviceAllocator::parseTraceEntryAction(name)));
  skip_actions_ = std::move(skip);
  context_recorder_ = enabled ? context_recorder : nullptr;
  record_when_ = enabled ? when : cca::RecordContext::NEVER;
  if (clear_history || !enabled) {
    if (clear_history) {
      for (auto& t : traces_) t.clear();
      for (auto& n : trace_next_) n = 0;
      annotations_.clear();
    }
  }
  if (enabled) {
    trace_capacity_ = std::max<size_t>(alloc_trace_max_entries, 1);
    for (auto& t : traces_)
      if (t.size() > trace_capacity_) t.erase(t.begin() + trace_capacity_, t.end());
    for (auto& n : trace_next_) n %= trace_capacity_;
  }
  history_on_.store(enabled);
}

void Allocator::recordAnnotation(const std::vector<std::pair<std::string, std::string>>& md) {
  if (!history_on_.load()) return;
  const int device = c10::cuda::current_device();
  c10::CachingDeviceAllocator::AnnotationEntry entry(static_cast<c10::DeviceIndex>(device),
                                                     c10::getApproximateTime());
  for (const auto& [name, value] : md) entry.recordUserMetadata(name, value);
  std::lock_guard<std::mutex> lock(history_mutex_);
  annotations_.push_back(std::move(entry));
}

void Allocator::trace(TraceEntry::Action action, int device, uintptr_t addr, size_t size,
                      cudaStream_t stream, MempoolId_t pool,
                      std::shared_ptr<c10::GatheredContext> context) {
  std::vector<cca::AllocatorTraceTracker> trackers;
  if (has_trackers_.load()) {
    std::lock_guard<std::mutex> lock(observers_mutex_);
    trackers = trace_trackers_;
  }
  std::lock_guard<std::mutex> lock(history_mutex_);
  const bool keep = history_on_.load() && !skip_actions_.count(static_cast<int>(action)) &&
                    device >= 0 && static_cast<size_t>(device) < traces_.size();
  if (!keep && trackers.empty()) return;
  if (action == TraceEntry::ALLOC && record_when_ < cca::RecordContext::ALLOC) context = nullptr;
  TraceEntry entry(action, static_cast<c10::DeviceIndex>(device), addr, size, stream, pool,
                   c10::getApproximateTime(), std::move(context), current_compile_context(),
                   user_metadata_);
  for (auto& tracker : trackers) tracker(entry);
  if (!keep) return;
  auto& ring = traces_[device];
  size_t& next = trace_next_[device];
  if (ring.size() < trace_capacity_) {
    ring.push_back(std::move(entry));
  } else {
    ring[next] = std::move(entry);
    next = (next + 1) % trace_capacity_;
  }
}

cca::SnapshotInfo Allocator::snapshot(MempoolId_t mempool_id, bool include_traces) {
  cca::SnapshotInfo info;
  // The resources whose segments are listed: each device's framework
  // resource, and the private pools' caches (one pool when asked for one).
  std::vector<std::pair<int, SegmentsOf>> sources;
  // A private pool's blocks, as the pool keeps them (each its own segment:
  // the pool never splits them); allocated where a record says so.
  struct PoolBlock {
    int device;
    MempoolId_t pool;
    void* ptr;
    cudaStream_t stream;
    size_t size;
  };
  std::vector<PoolBlock> pool_blocks;
  {
    std::lock_guard<std::mutex> lock(pools_mutex_);
    for (int device = 0; device < device_count_; ++device) {
      cumem_resource_t* resource = devices_[device].resource.load(std::memory_order_acquire);
      if (mempool_id == MempoolId_t{0, 0} && resource)
        sources.push_back({device, {resource, {0, 0}, false}});
      for (auto& [id, pool] : pools_[device])
        if (mempool_id == MempoolId_t{0, 0} || id == mempool_id)
          for (auto& [ptr, where] : pool->blocks)
            pool_blocks.push_back({device, id, ptr, where.first, where.second});
    }
  }
  for (const PoolBlock& pb : pool_blocks) {
    c10::CachingDeviceAllocator::SegmentInfo out;
    out.registration_counter = 0;  // never registered with NCCL (ProcessGroupNCCL asserts >= 0)
    out.device = static_cast<c10::DeviceIndex>(pb.device);
    out.address = reinterpret_cast<uintptr_t>(pb.ptr);
    out.stream = pb.stream;
    out.total_size = pb.size;
    out.is_large = pb.size > kSmallSize;
    out.owner_private_pool_id = pb.pool;
    c10::CachingDeviceAllocator::BlockInfo bi;
    bi.size = pb.size;
    bi.requested_size = pb.size;
    {
      Shard& shard = shard_of(pb.ptr);
      std::lock_guard<cumem::core::SpinLock> lock(shard.lock);
      auto r = shard.records.find(pb.ptr);
      if (r != shard.records.end() && r->second.pool) {
        bi.allocated = bi.active = true;
        bi.requested_size = r->second.requested;
        bi.context_when_allocated = r->second.context;
        out.allocated_size = out.active_size = pb.size;
        out.requested_size = r->second.requested;
      }
    }
    out.blocks.push_back(std::move(bi));
    info.segments.push_back(std::move(out));
  }
  for (auto& [device, source] : sources) {
    // A resource that keeps no segments of its own (a pool, the device's
    // memory): each allocation is its own segment, as the records say.
    cumem_caching_statistics_t cs = CUMEM_CACHING_STATISTICS_INIT;
    if (cumem_caching_resource_get_statistics(source.resource, &cs) != CUMEM_SUCCESS) {
      for (Shard& shard : shards_) {
        std::lock_guard<cumem::core::SpinLock> lock(shard.lock);
        for (const auto& [ptr, r] : shard.records) {
          if (r.resource != source.resource || r.pool || r.device != device) continue;
          c10::CachingDeviceAllocator::SegmentInfo out;
          out.registration_counter = 0;  // never registered with NCCL (ProcessGroupNCCL asserts >= 0)
          out.device = static_cast<c10::DeviceIndex>(device);
          out.address = reinterpret_cast<uintptr_t>(ptr);
          out.stream = r.stream;
          out.total_size = out.allocated_size = out.active_size = r.size;
          out.requested_size = r.requested;
          out.is_large = r.size > kSmallSize;
          c10::CachingDeviceAllocator::BlockInfo bi;
          bi.size = r.size;
          bi.requested_size = r.requested;
          bi.allocated = bi.active = true;
          bi.context_when_allocated = r.context;
          out.blocks.push_back(std::move(bi));
          info.segments.push_back(std::move(out));
        }
      }
      continue;
    }
    cumem_snapshot_t* snap = nullptr;
    CUMEM_TORCH_OK(cumem_snapshot_take(source.resource, &snap), "taking a snapshot");
    cumem_snapshot_totals_t totals = CUMEM_SNAPSHOT_TOTALS_INIT;
    cumem_snapshot_resource_t top = CUMEM_SNAPSHOT_RESOURCE_INIT;
    cumem_status_t s = cumem_snapshot_get_totals(snap, &totals);
    if (s == CUMEM_SUCCESS && totals.resource_count) s = cumem_snapshot_get_resource(snap, 0, &top);
    for (uint64_t i = 0; s == CUMEM_SUCCESS && i < totals.segment_count; ++i) {
      cumem_snapshot_segment_t seg = CUMEM_SNAPSHOT_SEGMENT_INIT;
      s = cumem_snapshot_get_segment(snap, i, &seg);
      if (s != CUMEM_SUCCESS || seg.resource_id != top.id) continue;
      c10::CachingDeviceAllocator::SegmentInfo out;
      out.registration_counter = 0;  // never registered with NCCL (ProcessGroupNCCL asserts >= 0)
      out.device = static_cast<c10::DeviceIndex>(device);
      out.address = seg.address;
      out.stream = reinterpret_cast<void*>(seg.stream);
      out.is_expandable = seg.kind == CUMEM_SEGMENT_EXPANDABLE;
      out.owner_private_pool_id = source.pool;
      for (uint64_t b = 0; b < seg.block_count; ++b) {
        cumem_snapshot_block_t block = CUMEM_SNAPSHOT_BLOCK_INIT;
        if (cumem_snapshot_get_block(snap, seg.first_block + b, &block) != CUMEM_SUCCESS) break;
        if (block.state == CUMEM_BLOCK_UNMAPPED) continue;
        c10::CachingDeviceAllocator::BlockInfo bi;
        bi.size = block.size;
        bi.requested_size = block.size;
        // In use to libcumem, but allocated to PyTorch only if a record
        // says so (a private pool's free blocks are in use to its cache).
        if (block.state == CUMEM_BLOCK_IN_USE) {
          void* ptr = reinterpret_cast<void*>(block.address);
          Shard& shard = shard_of(ptr);
          std::lock_guard<cumem::core::SpinLock> lock(shard.lock);
          auto r = shard.records.find(ptr);
          if (r != shard.records.end()) {
            bi.allocated = true;
            bi.active = true;
            bi.requested_size = r->second.requested;
            bi.context_when_allocated = r->second.context;
            if (!out.stream) out.stream = r->second.stream;
          }
        }
        out.total_size += bi.size;
        if (bi.allocated) {
          out.allocated_size += bi.size;
          out.active_size += bi.size;
          out.requested_size += bi.requested_size;
        }
        out.blocks.push_back(std::move(bi));
      }
      out.is_large = out.total_size > kSmallSize;
      if (!out.blocks.empty()) info.segments.push_back(std::move(out));
    }
    cumem_snapshot_release(snap);
    CUMEM_TORCH_OK(s, "reading a snapshot");
  }

  std::lock_guard<std::mutex> lock(history_mutex_);
  info.device_traces.resize(device_count_);
  auto to_ns = c10::ApproximateClockToUnixTimeConverter().makeConverter();
  if (include_traces) {
    for (int device = 0; device < device_count_ && device < static_cast<int>(traces_.size());
         ++device) {
      const auto& ring = traces_[device];
      auto& out = info.device_traces[device];
      const size_t start = ring.size() < trace_capacity_ ? 0 : trace_next_[device];
      for (size_t i = 0; i < ring.size(); ++i) {
        TraceEntry entry = ring[(start + i) % ring.size()];
        entry.time_.t_ = to_ns(entry.time_.approx_t_) / 1000;  // microseconds, as PyTorch's
        out.push_back(std::move(entry));
      }
    }
    info.external_annotations = annotations_;
    for (auto& a : info.external_annotations) a.time_.t_ = to_ns(a.time_.approx_t_) / 1000;
  }
  auto& config = info.config_metadata;
  config.garbage_collection_threshold = 0;
  config.max_split_size = SIZE_MAX;
  config.pinned_num_register_threads = 1;
  config.expandable_segments = false;
  for (const auto& seg : info.segments) config.expandable_segments |= seg.is_expandable;
  config.release_lock_on_malloc = false;
  config.pinned_use_host_register = false;
  config.graph_capture_record_stream_reuse = false;
  const char* conf = std::getenv("CUMEM_ALLOC_CONF");
  config.last_allocator_settings = std::string("libcumem") + (conf ? std::string(" ") + conf : "");
  return info;
}

}  // namespace cumem_torch
