// Private pools: PyTorch's graph pools (torch.cuda.graph, cudagraph trees of
// torch.compile) and MemPool / use_mem_pool, and their checkpoint state.
//
// A pool is a caching adaptor of its own over the device's memory resource
// (libcumem's caching adaptor gives a capturing stream memory allocated
// outside the capture, so a graph's blocks are ordinary memory that its
// replays write) plus the pool's own lists: blocks freed into the pool stay
// in it, reused only on the stream that freed them, until the pool is
// released (use count 0) or emptied. Because the pool never splits or
// merges its blocks, its state is which of its blocks are live: that is
// what a checkpoint holds and restores.
#include "allocator.hpp"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdio>

namespace cumem_torch {

namespace {

std::string pool_text(const MempoolId_t& id) {
  return "(" + std::to_string(id.first) + ", " + std::to_string(id.second) + ")";
}

// The state cudagraph trees checkpoint: the pool's live blocks.
struct PoolState final : cca::AllocatorState {
  MempoolId_t id{0, 0};
  int device = 0;
  struct Block {
    void* ptr;
    size_t size;
    size_t requested;
    cudaStream_t stream;
    std::shared_ptr<c10::GatheredContext> context;
  };
  std::vector<Block> live;
};

}  // namespace

std::shared_ptr<Pool> Allocator::find_or_create_pool(int device, MempoolId_t id) {
  // pools_mutex_ held by the caller.
  auto& pools = pools_[device];
  auto it = pools.find(id);
  if (it != pools.end()) return it->second;
  auto pool = std::make_shared<Pool>();
  pool->id = id;
  pool->device = device;
  cumem_device_t* dev = nullptr;
  CUMEM_TORCH_OK(cumem_device_get(device, &dev), "cumem_device_get");
  cumem_resource_t* memory = nullptr;
  cumem_status_t s = cumem_device_get_memory_resource(dev, &memory);
  cumem_device_release(dev);
  CUMEM_TORCH_OK(s, "the memory resource of device " + std::to_string(device));
  s = cumem_caching_resource_create(memory, &pool->upstream);
  cumem_resource_release(memory);
  CUMEM_TORCH_OK(s, "making the cache of private pool " + pool_text(id));
  pools.emplace(id, pool);
  return pool;
}

void Allocator::createOrIncrefPool(c10::DeviceIndex device, MempoolId_t mempool_id,
                                   std::shared_ptr<cca::CUDAAllocator> allocator) {
  check_device(device);
  CUMEM_TORCH_CHECK(!allocator || allocator.get() == this,
              "libcumem: a MemPool with an allocator of its own (", allocator ? allocator->name() : "",
              ") cannot be served while libcumem is PyTorch's allocator; make the MemPool "
              "without one");
  std::lock_guard<std::mutex> lock(pools_mutex_);
  ++find_or_create_pool(device, mempool_id)->use_count;
}

int Allocator::getPoolUseCount(c10::DeviceIndex device, MempoolId_t mempool_id) {
  check_device(device);
  std::lock_guard<std::mutex> lock(pools_mutex_);
  auto it = pools_[device].find(mempool_id);
  return it == pools_[device].end() ? 0 : it->second->use_count;
}

void Allocator::setUseOnOOM(c10::DeviceIndex device, MempoolId_t mempool_id, bool use_on_oom) {
  check_device(device);
  std::lock_guard<std::mutex> lock(pools_mutex_);
  auto it = pools_[device].find(mempool_id);
  CUMEM_TORCH_CHECK(it != pools_[device].end(), "libcumem: setUseOnOOM: no pool ", pool_text(mempool_id),
              " on device ", device);
  it->second->use_on_oom = use_on_oom;
}

void Allocator::setNoSplit(c10::DeviceIndex device, MempoolId_t mempool_id) {
  check_device(device);
  std::lock_guard<std::mutex> lock(pools_mutex_);
  auto it = pools_[device].find(mempool_id);
  CUMEM_TORCH_CHECK(it != pools_[device].end(), "libcumem: setNoSplit: no pool ", pool_text(mempool_id),
              " on device ", device);
  // A pool never splits its blocks (each is a block of its cache, reused
  // whole): the flag only records the request.
  it->second->no_split = true;
}

void Allocator::beginAllocateToPool(c10::DeviceIndex device, MempoolId_t mempool_id,
                                    std::function<bool(cudaStream_t)> filter) {
  check_device(device);
  CUMEM_TORCH_CHECK(mempool_id != MempoolId_t({0, 0}), "libcumem: beginAllocateToPool with pool (0, 0)");
  std::lock_guard<std::mutex> lock(pools_mutex_);
  auto pool = find_or_create_pool(device, mempool_id);
  ++pool->use_count;
  active_[device].push_back({mempool_id, std::move(filter)});
  devices_[device].captures_underway.fetch_add(1);
  devices_[device].pools_active.store(true, std::memory_order_release);
}

void Allocator::endAllocateToPool(c10::DeviceIndex device, MempoolId_t mempool_id) {
  check_device(device);
  bool none_left = false;
  {
    std::lock_guard<std::mutex> lock(pools_mutex_);
    auto& active = active_[device];
    auto it = std::find_if(active.begin(), active.end(),
                           [&](const ActivePool& a) { return a.id == mempool_id; });
    CUMEM_TORCH_CHECK(it != active.end(), "libcumem: endAllocateToPool: pool ", pool_text(mempool_id),
                " is not being allocated to on device ", device);
    active.erase(it);
    devices_[device].pools_active.store(!active.empty(), std::memory_order_release);
    none_left = devices_[device].captures_underway.fetch_sub(1) == 1;
  }
  // Frees held back while the capture ran.
  if (none_left && has_pending_.load()) process_pending(false);
}

std::shared_ptr<Pool> Allocator::pool_for(int device, cudaStream_t stream) {
  std::vector<ActivePool> active;
  {
    std::lock_guard<std::mutex> lock(pools_mutex_);
    active = active_[device];
  }
  // The filters ask the driver about the stream: outside the lock. The
  // newest pool wins, as in PyTorch.
  for (auto it = active.rbegin(); it != active.rend(); ++it) {
    if (!it->filter(stream)) continue;
    std::lock_guard<std::mutex> lock(pools_mutex_);
    auto found = pools_[device].find(it->id);
    if (found != pools_[device].end()) return found->second;
  }
  return nullptr;
}

void* Allocator::pool_allocate(Pool& pool, size_t size, cudaStream_t stream) {
  {
    std::lock_guard<std::mutex> lock(pools_mutex_);
    auto it = pool.free_blocks.find({stream, size});
    if (it != pool.free_blocks.end()) {
      void* ptr = it->second;
      pool.free_blocks.erase(it);
      pool.live.insert(ptr);
      return ptr;
    }
  }
  void* ptr = nullptr;
  const cumem_status_t s = cumem_resource_allocate_native(pool.upstream, size, stream, &ptr);
  if (s == CUMEM_ERROR_OUT_OF_MEMORY) {
    const char* message = cumem_last_error_message();
    out_of_memory(pool.device, size,
                  "(private pool " + pool_text(pool.id) + ") " + (message ? message : ""));
  }
  CUMEM_TORCH_OK(s, "allocating " + std::to_string(size) + " bytes in private pool " + pool_text(pool.id));
  // The capture that allocated it, for releasing its memory with the pool.
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t capture_id = 0;
  if (stream && reinterpret_cast<uintptr_t>(stream) > 2 &&
      cuStreamGetCaptureInfo(reinterpret_cast<CUstream>(stream), &status, &capture_id, nullptr,
                             nullptr, nullptr, nullptr) != CUDA_SUCCESS)
    status = CU_STREAM_CAPTURE_STATUS_NONE;
  std::lock_guard<std::mutex> lock(pools_mutex_);
  pool.blocks.emplace(ptr, std::make_pair(stream, size));
  pool.live.insert(ptr);
  pool.held_bytes += size;
  if (status != CU_STREAM_CAPTURE_STATUS_NONE &&
      std::find(pool.capture_ids.begin(), pool.capture_ids.end(), capture_id) ==
          pool.capture_ids.end())
    pool.capture_ids.push_back(capture_id);
  return ptr;
}

void Allocator::pool_free(Pool& pool, void* ptr, const Record& record) {
  bool retired = false;
  {
    std::lock_guard<std::mutex> lock(pools_mutex_);
    pool.live.erase(ptr);
    pool.free_blocks.emplace(std::make_pair(record.stream, record.size), ptr);
    retired = pool.use_count == 0;
  }
  if (retired && devices_[pool.device].captures_underway.load() == 0) retire_pools(pool.device);
}

// Gives the pool's free blocks back to its cache and the cache's memory
// back to the device; with free_blocks_only false, also the captures'
// private pools of the cache (the pool is gone for good).
void Allocator::release_pool_memory(Pool& pool, bool free_blocks_only) {
  std::vector<std::pair<void*, std::pair<cudaStream_t, size_t>>> blocks;
  {
    std::lock_guard<std::mutex> lock(pools_mutex_);
    for (auto& [key, ptr] : pool.free_blocks) {
      blocks.push_back({ptr, key});
      pool.blocks.erase(ptr);
      pool.held_bytes -= key.second;
    }
    pool.free_blocks.clear();
  }
  for (auto& [ptr, key] : blocks)
    CUMEM_TORCH_OK(cumem_resource_deallocate_native(pool.upstream, ptr, key.second, key.first),
          "giving a block of private pool " + pool_text(pool.id) + " back");
  if (!free_blocks_only) {
    for (uint64_t id : pool.capture_ids) {
      const cumem_status_t s = cumem_caching_resource_release_capture_pool(pool.upstream, id);
      if (s != CUMEM_ERROR_NOT_FOUND)
        CUMEM_TORCH_OK(s, "releasing the memory of capture " + std::to_string(id));
    }
    pool.capture_ids.clear();
  }
  CUMEM_TORCH_OK(cumem_caching_resource_release_cached(pool.upstream),
        "emptying the cache of private pool " + pool_text(pool.id));
}

void Allocator::releasePool(c10::DeviceIndex device, MempoolId_t mempool_id) {
  check_device(device);
  {
    std::lock_guard<std::mutex> lock(pools_mutex_);
    auto it = pools_[device].find(mempool_id);
    CUMEM_TORCH_CHECK(it != pools_[device].end(), "libcumem: releasePool: no pool ",
                pool_text(mempool_id), " on device ", device);
    std::shared_ptr<Pool> pool = it->second;
    CUMEM_TORCH_CHECK(pool->use_count > 0, "libcumem: releasePool: pool ", pool_text(mempool_id),
                " was released more often than it was used");
    if (--pool->use_count > 0) return;
    pools_[device].erase(it);
    retired_.push_back(pool);
  }
  // Its memory goes back once no capture runs (the release waits for the
  // device, which would break a capture) and its blocks are free.
  if (devices_[device].captures_underway.load() == 0) retire_pools(device);
}

// Pools released by PyTorch whose blocks are all free: their memory goes
// back and their caches are destroyed.
void Allocator::retire_pools(int device) {
  std::vector<std::shared_ptr<Pool>> gone;
  {
    std::lock_guard<std::mutex> lock(pools_mutex_);
    for (auto it = retired_.begin(); it != retired_.end();) {
      if ((*it)->device == device && (*it)->live.empty()) {
        gone.push_back(*it);
        it = retired_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& pool : gone) {
    release_pool_memory(*pool, false);
    cumem_resource_release(pool->upstream);
    pool->upstream = nullptr;
  }
}

bool Allocator::checkPoolLiveAllocations(c10::DeviceIndex device, MempoolId_t mempool_id,
                                         const std::unordered_set<void*>& expected) {
  check_device(device);
  std::lock_guard<std::mutex> lock(pools_mutex_);
  auto it = pools_[device].find(mempool_id);
  if (it == pools_[device].end()) return expected.empty();
  return it->second->live == expected;
}

std::shared_ptr<cca::AllocatorState> Allocator::getCheckpointState(c10::DeviceIndex device,
                                                                   MempoolId_t id) {
  check_device(device);
  auto state = std::make_shared<PoolState>();
  state->id = id;
  state->device = device;
  std::vector<void*> live;
  {
    std::lock_guard<std::mutex> lock(pools_mutex_);
    auto it = pools_[device].find(id);
    CUMEM_TORCH_CHECK(it != pools_[device].end(), "libcumem: getCheckpointState: no pool ",
                pool_text(id), " on device ", device);
    live.assign(it->second->live.begin(), it->second->live.end());
  }
  for (void* ptr : live) {
    Shard& shard = shard_of(ptr);
    std::lock_guard<cumem::core::SpinLock> lock(shard.lock);
    auto r = shard.records.find(ptr);
    if (r == shard.records.end()) continue;
    state->live.push_back({ptr, r->second.size, r->second.requested, r->second.stream,
                           r->second.context});
  }
  return state;
}

cca::CheckpointDelta Allocator::setCheckpointPoolState(c10::DeviceIndex device,
                                                       std::shared_ptr<cca::AllocatorState> pps) {
  check_device(device);
  auto* state = dynamic_cast<PoolState*>(pps.get());
  CUMEM_TORCH_CHECK(state, "libcumem: setCheckpointPoolState: a state libcumem did not make");
  CUMEM_TORCH_CHECK(state->device == device, "libcumem: setCheckpointPoolState: the state is of device ",
              state->device, ", not ", device);
  std::shared_ptr<Pool> pool;
  {
    std::lock_guard<std::mutex> lock(pools_mutex_);
    auto it = pools_[device].find(state->id);
    CUMEM_TORCH_CHECK(it != pools_[device].end(), "libcumem: setCheckpointPoolState: no pool ",
                pool_text(state->id), " on device ", device);
    pool = it->second;
  }
  cca::CheckpointDelta delta;
  std::unordered_set<void*> wanted;
  for (auto& b : state->live) wanted.insert(b.ptr);
  // Live now, not then: freed into the pool.
  std::vector<void*> now;
  {
    std::lock_guard<std::mutex> lock(pools_mutex_);
    now.assign(pool->live.begin(), pool->live.end());
  }
  for (void* ptr : now) {
    if (wanted.count(ptr)) continue;
    Record record;
    {
      Shard& shard = shard_of(ptr);
      std::lock_guard<cumem::core::SpinLock> lock(shard.lock);
      auto r = shard.records.find(ptr);
      if (r == shard.records.end()) continue;
      record = std::move(r->second);
      shard.records.erase(r);
    }
    count_free(device, record.size, record.requested);
    pool_free(*pool, ptr, record);
    delta.ptrs_freed.push_back(ptr);
  }
  // Live then, free now: taken back out of the pool, as they were.
  for (auto& b : state->live) {
    {
      std::lock_guard<std::mutex> lock(pools_mutex_);
      if (pool->live.count(b.ptr)) continue;
      auto range = pool->free_blocks.equal_range({b.stream, b.size});
      auto it = std::find_if(range.first, range.second,
                             [&](const auto& entry) { return entry.second == b.ptr; });
      CUMEM_TORCH_CHECK(it != range.second, "libcumem: setCheckpointPoolState: block ",
                  reinterpret_cast<uintptr_t>(b.ptr), " of pool ", pool_text(pool->id),
                  " was given back (emptyCache) since the checkpoint");
      pool->free_blocks.erase(it);
      pool->live.insert(b.ptr);
    }
    Record record;
    record.size = b.size;
    record.requested = b.requested;
    record.device = device;
    record.stream = b.stream;
    record.resource = pool->upstream;
    record.pool = pool;
    record.context = b.context;
    {
      Shard& shard = shard_of(b.ptr);
      std::lock_guard<cumem::core::SpinLock> lock(shard.lock);
      shard.records.emplace(b.ptr, std::move(record));
    }
    count_alloc(device, b.size, b.requested);
    delta.dataptrs_allocd.emplace_back(b.ptr, b.ptr, &Allocator::free_ptr,
                                       c10::Device(c10::DeviceType::CUDA, device));
  }
  return delta;
}

}  // namespace cumem_torch
