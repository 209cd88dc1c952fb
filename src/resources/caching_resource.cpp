// The caching adaptor. Rules:
// - Sizes are rounded up: to 512 B at least, to 8 steps per power of two up
//   to 1 MiB (at most 12.5% more), and to multiples of 2 MiB above.
// - A freed block is cached by its rounded size and the stream it was freed
//   on, in the freeing thread's shard (64 shards, one per thread until there
//   are more threads; each has its own lock and cache line), and handed out
//   again without asking the upstream: at once to an allocation on the same
//   stream (stream order makes that safe); to an allocation on another
//   stream after making that stream wait for an event recorded now on the
//   freeing stream (two driver calls, on that path only).
// - Over an upstream that frees synchronously (host, legacy pinned, ...), a
//   free first waits as the upstream would (the stream, else the legacy
//   default stream of its device), and blocks are then reusable anywhere.
// - When the upstream is out of memory: every cached block goes back to it
//   (after waiting for the device), a pool upstream is trimmed, and the
//   allocation is tried once more before failing.
#include "caching_resource.hpp"

#include <atomic>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "../driver/driver.hpp"
#include "../error.hpp"
#include "../thread_shard.hpp"
#include "pool_resource.hpp"
#include "sync_resource.hpp"

namespace cumem::core {
namespace {

constexpr size_t kShards = kThreadShards;
constexpr uint64_t kMinBlock = 512;
constexpr uint64_t kSmallLimit = uint64_t{1} << 20;
constexpr uint64_t kLargeStep = uint64_t{2} << 20;
constexpr int kSameStreamScan = 8;  // entries looked at for one on the same stream

uint64_t round_size(uint64_t size) {
  if (size <= kMinBlock) return kMinBlock;
  const uint64_t step =
      size > kSmallLimit ? kLargeStep : (uint64_t{1} << (63 - __builtin_clzll(size - 1))) >> 3;
  if (size > UINT64_MAX - step)
    fail(Status::out_of_memory, "the size " + std::to_string(size) + " cannot be rounded up");
  return (size + step - 1) / step * step;
}

// Which stream a block was freed on. The per-thread default stream is a
// different stream on every thread.
uintptr_t stream_key(const Stream* stream) {
  static thread_local char per_thread;
  const CUstream s = native_or_legacy(stream);
  if (s == CU_STREAM_PER_THREAD) return reinterpret_cast<uintptr_t>(&per_thread);
  return reinterpret_cast<uintptr_t>(s);
}

// A cached block keeps the stream it was freed on alive: its reuse on
// another stream records an event there.
struct Block {
  void* ptr = nullptr;
  uintptr_t key = 0;
  Ref<Stream> stream;  // null: the legacy default stream (or a synchronous upstream)
};

struct alignas(64) Shard {
  std::atomic_flag busy = ATOMIC_FLAG_INIT;
  std::unordered_map<uint64_t, std::vector<Block>> bins;  // rounded size -> blocks
  uint64_t last_size = 0;
  std::vector<Block>* last_bin = nullptr;
  int64_t cached = 0, handed = 0;  // bytes; `handed` may go below 0 in one shard
  uint64_t hits = 0, misses = 0, reuses = 0;

  void lock() {
    while (busy.test_and_set(std::memory_order_acquire)) std::this_thread::yield();
  }
  void unlock() { busy.clear(std::memory_order_release); }
  std::vector<Block>& bin(uint64_t size) {
    if (last_bin && last_size == size) return *last_bin;
    last_size = size;
    last_bin = &bins[size];
    return *last_bin;
  }
};

using Locked = std::lock_guard<Shard>;

class CachingResource final : public Adaptor, public Caching {
 public:
  explicit CachingResource(Ref<Resource> upstream)
      : Adaptor(std::move(upstream), ResourceKind::caching),
        stream_ordered_(this->upstream().properties().stream_ordered) {}
  ~CachingResource() override {
    try {
      release_cached();
    } catch (...) {
    }
  }
  std::string describe() const override { return "caching over " + upstream().describe(); }

  CachingStatistics caching_statistics() const override {
    CachingStatistics c;
    int64_t cached = 0;
    for (Shard& s : shards_) {
      Locked lock(s);
      cached += s.cached;
      c.hits += s.hits;
      c.misses += s.misses;
      c.stream_reuses += s.reuses;
    }
    c.bytes_cached = static_cast<uint64_t>(cached);
    c.bytes_reserved = reserved_.load(std::memory_order_relaxed);
    c.peak_bytes_reserved = peak_reserved_.load(std::memory_order_relaxed);
    c.oom_retries = retries_.load(std::memory_order_relaxed);
    return c;
  }

  void release_cached() override {
    std::vector<std::pair<uint64_t, Block>> blocks;
    for (Shard& s : shards_) {
      Locked lock(s);
      for (auto& [size, bin] : s.bins)
        for (Block& b : bin) blocks.emplace_back(size, std::move(b));
      s.bins.clear();
      s.last_bin = nullptr;
      s.cached = 0;
    }
    if (blocks.empty()) return;
    // Work queued before the frees may still use the blocks.
    if (stream_ordered_ && device_) device_->synchronize();
    for (const auto& [size, b] : blocks) {
      upstream().deallocate_raw(b.ptr, static_cast<size_t>(size), nullptr);
      reserved_.fetch_sub(size, std::memory_order_relaxed);
    }
  }

 protected:
  void* do_allocate(size_t size, const Stream* stream) override {
    const uint64_t rounded = round_size(size);
    const uintptr_t key = stream_ordered_ ? stream_key(stream) : 0;
    Shard& s = shards_[thread_shard()];
    Block found;
    bool hit = false, other_stream = false;
    {
      Locked lock(s);
      std::vector<Block>& bin = s.bin(rounded);
      const int n = static_cast<int>(bin.size());
      for (int i = n - 1; i >= 0 && i >= n - kSameStreamScan; --i) {
        if (bin[static_cast<size_t>(i)].key == key) {
          found = std::move(bin[static_cast<size_t>(i)]);
          bin.erase(bin.begin() + i);
          hit = true;
          break;
        }
      }
      if (!hit && n > 0) {
        found = std::move(bin.back());
        bin.pop_back();
        hit = other_stream = true;
      }
      if (hit) {
        s.cached -= static_cast<int64_t>(rounded);
        s.handed += static_cast<int64_t>(rounded);
        ++s.hits;
        if (other_stream) ++s.reuses;
      }
    }
    if (hit) {
      if (other_stream) order_after_free(found, stream);
      return found.ptr;
    }
    void* ptr = allocate_upstream(size, rounded, stream);
    Locked lock(s);
    ++s.misses;
    s.handed += static_cast<int64_t>(rounded);
    return ptr;
  }

  void do_deallocate(void* ptr, size_t size, const Stream* stream) override {
    const uint64_t rounded = round_size(size);
    if (!stream_ordered_) wait_before_free(device_.get(), stream);
    Shard& s = shards_[thread_shard()];
    Locked lock(s);
    Block block;
    block.ptr = ptr;
    if (stream_ordered_) {
      block.key = stream_key(stream);
      block.stream = Ref<Stream>::share(const_cast<Stream*>(stream));
    }
    s.bin(rounded).push_back(std::move(block));
    s.cached += static_cast<int64_t>(rounded);
    s.handed -= static_cast<int64_t>(rounded);
  }

 private:
  void* allocate_upstream(size_t size, uint64_t rounded, const Stream* stream) {
    void* ptr = nullptr;
    try {
      ptr = upstream().allocate_raw(static_cast<size_t>(rounded), stream);
    } catch (const Error& first) {
      if (first.status() != Status::out_of_memory) throw;
      retries_.fetch_add(1, std::memory_order_relaxed);
      const CachingStatistics before = caching_statistics();
      release_cached();
      if (auto* pool = dynamic_cast<PoolResource*>(&upstream())) pool->pool_trim(0);
      try {
        ptr = upstream().allocate_raw(static_cast<size_t>(rounded), stream);
      } catch (const Error& again) {
        if (again.status() != Status::out_of_memory) throw;
        fail(Status::out_of_memory,
             "the cache asked its upstream for " + describe_bytes(rounded) + " (" +
                 describe_bytes(size) + " rounded up) and was refused even after giving back " +
                 describe_bytes(before.bytes_cached) + " of cached blocks; it had " +
                 describe_bytes(before.bytes_reserved - before.bytes_cached) + " in use of " +
                 describe_bytes(before.bytes_reserved) + " reserved; the upstream said: " +
                 again.what());
      }
    }
    const uint64_t now = reserved_.fetch_add(rounded, std::memory_order_relaxed) + rounded;
    uint64_t peak = peak_reserved_.load(std::memory_order_relaxed);
    while (now > peak &&
           !peak_reserved_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
    return ptr;
  }

  // A block freed on another stream: that stream's work queued so far (the
  // last users of the block) comes before anything queued on `stream` now.
  void order_after_free(const Block& b, const Stream* stream) {
    ScopedContext scope(stream ? stream->device() : *device_);
    CUevent event = nullptr;
    CUresult r = CUMEM_CU_RESULT(cuEventCreate, (&event, CU_EVENT_DISABLE_TIMING));
    if (r == CUDA_SUCCESS) r = CUMEM_CU_RESULT(cuEventRecord, (event, native_or_legacy(b.stream.get())));
    if (r == CUDA_SUCCESS) r = CUMEM_CU_RESULT(cuStreamWaitEvent, (native_or_legacy(stream), event, 0));
    if (event) CUMEM_CU_QUIET(cuEventDestroy, (event));
    // Should the event fail, wait for the whole device instead.
    if (r != CUDA_SUCCESS) CUMEM_CU(cuCtxSynchronize, (), "ordering a cached block's reuse");
  }

  const bool stream_ordered_;
  mutable Shard shards_[kShards];
  std::atomic<uint64_t> reserved_{0}, peak_reserved_{0}, retries_{0};
};

}  // namespace

Ref<Resource> create_caching_resource(Ref<Resource> upstream) {
  return Ref<Resource>::adopt(new CachingResource(std::move(upstream)));
}

}  // namespace cumem::core
