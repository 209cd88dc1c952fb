// The caching adaptor. Rules:
// - Sizes are rounded up: to 512 B at least, to 8 steps per power of two up
//   to 16 MiB (at most 12.5% more), and to multiples of 2 MiB above.
// - Small blocks (up to 128 KiB) are cached in the freeing thread's shard
//   (thread_shard.hpp: one per live thread, so its lock is uncontended) by
//   rounded size, and handed out again from there: an allocate + free pair
//   takes no shared lock and writes no shared cache line. A shard keeps up
//   to kShardCap bytes of small blocks (a small cap, so that a thread that only frees what
//   another allocates, as PyTorch's backward pass does, hoards little); beyond that, freed blocks go to the central
//   cache, which every thread looks in before asking the upstream.
// - Large blocks (above 128 KiB) come from segments, each one upstream
//   allocation: of 20 MiB for requests under 10 MiB (when the upstream has
//   room), else of the rounded size. The central cache hands out the smallest free piece that
//   fits (the lowest address among equals), split to the rounded size; a freed piece merges with free
//   neighbours of its segment freed on the same stream, and a segment that
//   is free whole goes back to the upstream when the cache is released. A
//   thread keeps its last kThreadLarge freed large blocks (up to
//   kShardCap bytes) and hands them out again without the central lock; a
//   large miss moves every thread's kept blocks to the central pieces.
// - Streams: a block freed on a stream is handed out again at once on that
//   stream (stream order makes that safe). On another stream, that stream
//   is first made to wait for an event recorded then on the freeing stream
//   (two driver calls, on that path only). Each cache keeps a reference to
//   the streams its blocks were freed on (one per stream, not per block).
// - Over an upstream that frees synchronously (host, legacy pinned, ...), a
//   free first waits as the upstream would (the stream, else the legacy
//   default stream of its device), and blocks are then reusable anywhere.
// - Stream capture: allocating or freeing on a stream that is capturing a
//   CUDA graph is refused (a cached block would be reused before the graph
//   runs); allocate captured memory from the upstream. Only captures begun
//   through libcumem (capture.hpp) are seen: asking the driver on every
//   call would cost more than the whole cached pair.
// - Out of memory upstream: every cached block goes back (after waiting for
//   the device), a pool upstream is trimmed, and the allocation is tried
//   once more before failing.
#include "caching_resource.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "../capture.hpp"
#include "../driver/driver.hpp"
#include "../error.hpp"
#include "../thread_shard.hpp"
#include "pool_resource.hpp"
#include "sync_resource.hpp"
#include "../log.hpp"

namespace cumem::core {
namespace {

constexpr uint64_t kMinBlock = 512;
constexpr uint64_t kSmallLimit = uint64_t{128} << 10;
constexpr uint64_t kLargeStep = uint64_t{2} << 20;
constexpr uint64_t kMidLimit = uint64_t{10} << 20;
constexpr uint64_t kMidSegment = uint64_t{20} << 20;
constexpr uint64_t kShardCap = uint64_t{64} << 20;
constexpr size_t kThreadLarge = 8;
constexpr int kSameStreamScan = 8;  // entries looked at for one on the same stream
constexpr size_t kStreamsKept = 8;  // unused stream references a cache keeps

uint64_t round_size(uint64_t size) {
  if (size <= kMinBlock) return kMinBlock;
  const uint64_t step = std::min(kLargeStep, (uint64_t{1} << (63 - __builtin_clzll(size - 1))) >> 3);
  if (size > UINT64_MAX - step)
    fail(Status::out_of_memory, "the size " + std::to_string(size) + " cannot be rounded up");
  return (size + step - 1) / step * step;
}

// Which stream a block was freed on: its CUstream, or for the per-thread
// default stream (a different stream on every thread) a number of the
// thread's own that no other thread ever has. kAnyStream: the block has no
// pending work (a synchronous upstream, or after a device-wide wait).
constexpr uintptr_t kAnyStream = 0;
bool is_per_thread_key(uintptr_t key) { return (key & 7) == 2; }  // CUstreams are aligned
uintptr_t stream_key(const Stream* stream) {
  const CUstream s = native_or_legacy(stream);
  if (s != CU_STREAM_PER_THREAD) return reinterpret_cast<uintptr_t>(s);
  static std::atomic<uintptr_t> next{1};
  static thread_local const uintptr_t mine = next.fetch_add(1, std::memory_order_relaxed) << 3 | 2;
  return mine;
}

// Memory of whole cache lines, for the containers a thread's cache writes
// on every call: allocated from the heap by whichever thread first used the
// shard, they must never share a line with another thread's.
template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}
  T* allocate(size_t n) {
    void* p = std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64);
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) noexcept { std::free(p); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const noexcept { return true; }
  template <class U>
  bool operator!=(const CacheLineAllocator<U>&) const noexcept { return false; }
};

// The streams a cache's blocks were freed on, each held once with a count
// of its blocks, so that a block can be ordered after its stream's work.
class StreamRefs {
 public:
  void add(uintptr_t key, const Stream* stream) {
    for (Entry& e : entries_)
      if (e.key == key) {
        ++e.blocks;
        return;
      }
    if (entries_.size() >= kStreamsKept)
      entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                    [](const Entry& e) { return e.blocks == 0; }),
                     entries_.end());
    entries_.push_back({key, Ref<Stream>::share(const_cast<Stream*>(stream)), 1});
  }
  void remove(uintptr_t key) {
    for (Entry& e : entries_)
      if (e.key == key) {
        --e.blocks;
        return;
      }
  }
  const Stream* stream(uintptr_t key) const {
    for (const Entry& e : entries_)
      if (e.key == key) return e.ref.get();
    return nullptr;
  }
  void clear() { entries_.clear(); }

 private:
  struct Entry {
    uintptr_t key;
    Ref<Stream> ref;  // null: the legacy default stream, or no stream
    size_t blocks;
  };
  std::vector<Entry, CacheLineAllocator<Entry>> entries_;
};

struct Block {
  void* ptr = nullptr;
  uint64_t size = 0;  // rounded
  uintptr_t key = 0;
};

// The small size classes: 512 B, then 8 steps per power of two to kSmallLimit.
constexpr size_t kSmallClasses = 1 + static_cast<size_t>(__builtin_ctzll(kSmallLimit) - 9) * 8;
size_t small_class(uint64_t rounded) {
  if (rounded <= kMinBlock) return 0;
  const int k = 63 - __builtin_clzll(rounded - 1);  // 2^k < rounded <= 2^(k+1)
  const uint64_t step = (uint64_t{1} << k) >> 3;
  return 1 + static_cast<size_t>(k - 9) * 8 + static_cast<size_t>(rounded / step - 9);
}

// Cached blocks of one size class, newest last. The storage is whole cache
// lines of its own, so that threads' caches never share one.
class Stack {
 public:
  Stack() = default;
  Stack(const Stack&) = delete;
  Stack& operator=(const Stack&) = delete;
  ~Stack() { std::free(blocks_); }
  size_t size() const { return size_; }
  Block& operator[](size_t i) { return blocks_[i]; }
  void push(const Block& b) {
    if (size_ == capacity_) grow();
    blocks_[size_++] = b;
  }
  Block pop() { return blocks_[--size_]; }
  Block take_at(size_t i) {
    const Block b = blocks_[i];
    std::memmove(blocks_ + i, blocks_ + i + 1, (size_ - i - 1) * sizeof(Block));
    --size_;
    return b;
  }
  void clear() { size_ = 0; }

 private:
  void grow() {
    const size_t capacity = capacity_ ? capacity_ * 2 : 64 / sizeof(Block) * 2;
    const size_t bytes = (capacity * sizeof(Block) + 63) / 64 * 64;
    auto* blocks = static_cast<Block*>(std::aligned_alloc(64, bytes));
    if (!blocks) throw std::bad_alloc();
    if (size_) std::memcpy(blocks, blocks_, size_ * sizeof(Block));
    std::free(blocks_);
    blocks_ = blocks;
    capacity_ = bytes / sizeof(Block);
  }
  Block* blocks_ = nullptr;
  size_t size_ = 0, capacity_ = 0;
};

// Cached small blocks by size class.
struct Bins {
  Stack classes[kSmallClasses];

  void push(const Block& b) { classes[small_class(b.size)].push(b); }
  // A block of `size`, preferably freed on `key`; false when none.
  bool take(uint64_t size, uintptr_t key, Block& out) {
    Stack& b = classes[small_class(size)];
    const size_t n = b.size();
    if (n == 0) return false;
    for (size_t i = n; i-- > 0 && i + kSameStreamScan >= n;) {
      if (b[i].key == key) {
        out = b.take_at(i);
        return true;
      }
    }
    out = b.pop();
    return true;
  }
  template <class Fn>
  void drain(Fn&& fn) {
    for (Stack& c : classes) {
      for (size_t i = 0; i < c.size(); ++i) fn(c[i]);
      c.clear();
    }
  }
};

struct Counters {
  uint64_t hits = 0, misses = 0, reuses = 0;
};

// One thread's cache (or, for the shared shard, that of the threads beyond
// kThreadShards); its lock is taken by its owner and, rarely, by readers and
// release_cached.
struct alignas(64) Shard {
  std::atomic_flag busy = ATOMIC_FLAG_INIT;
  Bins small;
  std::vector<Block, CacheLineAllocator<Block>> large;  // oldest first
  StreamRefs streams;
  uint64_t cached = 0;        // bytes, small and large
  uint64_t small_cached = 0;  // bytes in `small`
  Counters counts;

  void lock() {
    while (busy.test_and_set(std::memory_order_acquire)) std::this_thread::yield();
  }
  void unlock() { busy.clear(std::memory_order_release); }
};

// A piece of a large segment: in use, cached by a thread, or free here.
struct Piece {
  char* ptr = nullptr;
  uint64_t size = 0;
  Piece* prev = nullptr;  // neighbours in the same segment
  Piece* next = nullptr;
  bool free = false;
  uintptr_t key = 0;
};

// What every thread shares: small blocks beyond the shards' caps, and the
// large segments with their free pieces.
struct Central {
  std::mutex mutex;
  Bins small;
  uint64_t small_cached = 0;
  uint64_t large_free = 0;
  std::unordered_map<void*, Piece*> pieces;                      // every large piece
  // Free pieces by stream and size, and by size; ties go to the lowest
  // address (address-ordered best fit: used memory packs towards the start,
  // and the outcome does not depend on where the bookkeeping lives).
  std::set<std::tuple<uintptr_t, uint64_t, char*, Piece*>> by_stream;
  std::set<std::tuple<uint64_t, char*, Piece*>> by_size;
  StreamRefs streams;
  Counters counts;

  void insert_free(Piece* p) {
    p->free = true;
    by_stream.emplace(p->key, p->size, p->ptr, p);
    by_size.emplace(p->size, p->ptr, p);
    large_free += p->size;
  }
  void erase_free(Piece* p) {
    by_stream.erase({p->key, p->size, p->ptr, p});
    by_size.erase({p->size, p->ptr, p});
    large_free -= p->size;
    p->free = false;
  }
};

class CachingResource final : public Adaptor, public Caching {
 public:
  explicit CachingResource(Ref<Resource> upstream)
      : Adaptor(std::move(upstream), ResourceKind::caching),
        stream_ordered_(this->upstream().properties().stream_ordered) {}
  ~CachingResource() override {
    try {
      release_cached();
    } catch (...) {
      log::swallowed("giving the cached blocks back to the upstream resource");
    }
    for (auto& [ptr, piece] : central_.pieces) delete piece;
  }
  std::string describe() const override { return "caching over " + upstream().describe(); }

  CachingStatistics caching_statistics() const override {
    CachingStatistics c;
    auto add = [&c](const Counters& n) {
      c.hits += n.hits;
      c.misses += n.misses;
      c.stream_reuses += n.reuses;
    };
    for (size_t i = 0; i <= kThreadShards; ++i) {
      Shard& s = shards_[i];
      std::lock_guard<Shard> lock(s);
      c.bytes_cached += s.cached;
      add(s.counts);
    }
    {
      std::lock_guard<std::mutex> lock(central_.mutex);
      c.bytes_cached += central_.small_cached + central_.large_free;
      add(central_.counts);
    }
    c.bytes_reserved = reserved_.load(std::memory_order_relaxed);
    c.peak_bytes_reserved = peak_reserved_.load(std::memory_order_relaxed);
    c.oom_retries = retries_.load(std::memory_order_relaxed);
    return c;
  }

  void release_cached() override { give_back_cached(0); }

  void trim(uint64_t keep_bytes) override {
    give_back_cached(keep_bytes);
    if (auto* pool = dynamic_cast<PoolResource*>(&upstream())) {
      // The frees above are ordered on the legacy default stream: the pool
      // has the memory back only once they ran, and trims only what it has.
      if (device_) {
        ScopedContext scope(*device_);
        CUMEM_CU(cuStreamSynchronize, (CU_STREAM_LEGACY),
                 "waiting for the cache's frees before trimming " + pool->describe());
      }
      pool->pool_trim(0);
    }
  }

 private:
  // Gives cached blocks back to the upstream until at most `keep` bytes
  // stay cached: upstream allocations free whole first (largest first),
  // then small blocks (largest first). What stays is in the central cache,
  // reusable on any stream (the device was waited for).
  void give_back_cached(uint64_t keep) {
    // Every thread's blocks go to the central cache first.
    std::vector<Block> small, large;
    for (size_t i = 0; i <= kThreadShards; ++i) {
      Shard& s = shards_[i];
      std::lock_guard<Shard> lock(s);
      s.small.drain([&](const Block& b) { small.push_back(b); });
      large.insert(large.end(), s.large.begin(), s.large.end());
      s.large.clear();
      s.streams.clear();
      s.cached = 0;
      s.small_cached = 0;
    }
    std::lock_guard<std::mutex> lock(central_.mutex);
    central_.small.drain([&](const Block& b) { small.push_back(b); });
    central_.small_cached = 0;
    if (small.empty() && large.empty() && central_.by_size.empty()) return;
    // Work queued before the frees may still use the blocks; after this
    // wait, which stream freed what no longer matters.
    if (stream_ordered_ && device_) device_->synchronize();
    std::vector<Piece*> free_pieces;
    for (const auto& [size, ptr, p] : central_.by_size) free_pieces.push_back(p);
    for (Piece* p : free_pieces) central_.erase_free(p);
    for (const Block& b : large) free_pieces.push_back(central_.pieces.at(b.ptr));
    for (Piece* p : free_pieces) {
      p->key = kAnyStream;
      central_.insert_free(p);
    }
    central_.streams.clear();
    uint64_t cached = central_.large_free;
    for (const Block& b : small) cached += b.size;
    // Pieces of a segment merge; segments free whole are candidates.
    std::vector<std::pair<uint64_t, Piece*>> whole;  // size, head
    std::vector<Piece*> heads;
    for (const auto& [ptr, p] : central_.pieces)
      if (!p->prev) heads.push_back(p);
    for (Piece* head : heads) {
      for (Piece* p = head; p && p->next;) {
        Piece* n = p->next;
        if (p->free && n->free) {
          central_.erase_free(p);
          central_.erase_free(n);
          absorb(p, n);
          central_.insert_free(p);
        } else {
          p = n;
        }
      }
      if (head->free && !head->next) whole.emplace_back(head->size, head);
    }
    std::sort(whole.begin(), whole.end(), std::greater<>());
    for (const auto& [size, head] : whole) {
      if (cached <= keep) break;
      void* const segment = head->ptr;
      central_.erase_free(head);
      central_.pieces.erase(segment);
      delete head;
      give_back(segment, size);
      cached -= size;
    }
    std::sort(small.begin(), small.end(),
              [](const Block& a, const Block& b) { return a.size > b.size; });
    for (Block& b : small) {
      if (cached > keep) {
        give_back(b.ptr, b.size);
        cached -= b.size;
      } else {
        b.key = kAnyStream;
        central_.small.push(b);
        central_.small_cached += b.size;
      }
    }
  }

 protected:
  void* do_allocate(size_t size, const Stream* stream) override {
    const uint64_t rounded = round_size(size);
    const uintptr_t key = stream_ordered_ ? stream_key(stream) : 0;
    if (stream_ordered_ && is_capturing(stream))
      fail(Status::invalid_argument,
           "the caching adaptor cannot allocate on " + stream->describe() +
               ": it is capturing a CUDA graph, and a cached block could be handed out again "
               "before the graph runs; allocate captured memory from the upstream (" +
               upstream().describe() + ")");
    const ThreadShard t = thread_shard();
    Shard& s = shards_[t.index];
    Block found;
    bool hit = false;
    {
      std::lock_guard<Shard> lock(s);
      if (rounded <= kSmallLimit) {
        hit = s.small.take(rounded, key, found);
      } else {
        for (size_t i = s.large.size(); i-- > 0;)
          if (s.large[i].size == rounded && s.large[i].key == key) {
            found = s.large[i];
            s.large.erase(s.large.begin() + static_cast<ptrdiff_t>(i));
            hit = true;
            break;
          }
      }
      if (hit) {
        s.cached -= rounded;
        if (rounded <= kSmallLimit) s.small_cached -= rounded;
        hand_out(s.counts, s.streams, found.key, key, stream);
        return found.ptr;
      }
    }
    if (rounded <= kSmallLimit) {
      if (void* p = take_central_small(rounded, key, stream)) return p;
    } else {
      if (void* p = take_central_large(rounded, key, stream)) return p;
      // The large blocks threads keep (of other sizes, or freed by another
      // thread: PyTorch's backward pass frees on its own thread) may be
      // pieces to split or merge: they join the central free pieces, and
      // the search runs again. A miss costs the upstream call anyway.
      if (return_large_blocks())
        if (void* p = take_central_large(rounded, key, stream)) return p;
    }
    return allocate_upstream(size, rounded, stream);
  }

  void do_deallocate(void* ptr, size_t size, const Stream* stream) override {
    const uint64_t rounded = round_size(size);
    if (!stream_ordered_) {
      wait_before_free(device_.get(), stream);
      stream = nullptr;
    } else if (is_capturing(stream)) {
      fail(Status::invalid_argument,
           "the caching adaptor cannot free on " + stream->describe() +
               ": it is capturing a CUDA graph (the block would be reused before the graph "
               "runs); nothing was freed");
    }
    const uintptr_t key = stream_ordered_ ? stream_key(stream) : kAnyStream;
    deallocate(shards_[thread_shard().index], Block{ptr, rounded, key}, stream);
  }

 private:
  void deallocate(Shard& s, Block block, const Stream* stream) {
    std::unique_lock<Shard> lock(s);
    if (block.size <= kSmallLimit) {
      // Small blocks up to kShardCap bytes; beyond, to the central cache.
      if (s.small_cached + block.size <= kShardCap) {
        s.cached += block.size;
        s.small_cached += block.size;
        s.streams.add(block.key, stream);
        s.small.push(block);
        return;
      }
      lock.unlock();
      std::lock_guard<std::mutex> central(central_.mutex);
      central_.small.push(block);
      central_.small_cached += block.size;
      central_.streams.add(block.key, stream);
      return;
    }
    if (block.size > kShardCap) {
      lock.unlock();
      std::lock_guard<std::mutex> central(central_.mutex);
      free_piece(block, stream);
      return;
    }
    // The thread keeps its last kThreadLarge large blocks, up to kShardCap
    // bytes: the oldest make room for this one and go to the central pieces.
    s.cached += block.size;
    s.streams.add(block.key, stream);
    s.large.push_back(block);
    if (s.large.size() <= kThreadLarge && s.cached - s.small_cached <= kShardCap) return;
    std::vector<std::pair<Block, Ref<Stream>>> evicted;
    while (s.large.size() > kThreadLarge || s.cached - s.small_cached > kShardCap) {
      const Block old = s.large.front();
      s.large.erase(s.large.begin());
      s.cached -= old.size;
      evicted.emplace_back(old, Ref<Stream>::share(const_cast<Stream*>(s.streams.stream(old.key))));
      s.streams.remove(old.key);
    }
    lock.unlock();
    std::lock_guard<std::mutex> central(central_.mutex);
    for (const auto& [old, on] : evicted) free_piece(old, on.get());
  }

  // Moves every thread's large blocks to the central free pieces; false if
  // there were none.
  bool return_large_blocks() {
    std::vector<std::pair<Block, Ref<Stream>>> moved;
    for (size_t i = 0; i <= kThreadShards; ++i) {
      Shard& s = shards_[i];
      std::lock_guard<Shard> lock(s);
      for (const Block& b : s.large) {
        moved.emplace_back(b, Ref<Stream>::share(const_cast<Stream*>(s.streams.stream(b.key))));
        s.streams.remove(b.key);
        s.cached -= b.size;
      }
      s.large.clear();
    }
    if (moved.empty()) return false;
    std::lock_guard<std::mutex> lock(central_.mutex);
    for (const auto& [b, stream] : moved) free_piece(b, stream.get());
    return true;
  }

  // Under the central lock: a large piece back to the free pieces, merged
  // with free neighbours freed on the same stream.
  void free_piece(const Block& b, const Stream* stream) {
    const auto it = central_.pieces.find(b.ptr);
    if (it == central_.pieces.end())
      fail(Status::invalid_argument, "the caching adaptor did not hand out address " +
                                         std::to_string(reinterpret_cast<uintptr_t>(b.ptr)) +
                                         " as a large block");
    Piece* p = it->second;
    p->key = b.key;
    central_.streams.add(b.key, stream);
    if (p->prev && p->prev->free && p->prev->key == p->key) {
      Piece* prev = p->prev;
      central_.erase_free(prev);
      absorb(prev, p);
      central_.streams.remove(b.key);
      p = prev;
    }
    if (p->next && p->next->free && p->next->key == p->key) {
      Piece* next = p->next;
      central_.erase_free(next);
      absorb(p, next);
      central_.streams.remove(b.key);
    }
    central_.insert_free(p);
  }

  // `p` takes in its next neighbour `n`, which is deleted.
  void absorb(Piece* p, Piece* n) {
    p->size += n->size;
    p->next = n->next;
    if (n->next) n->next->prev = p;
    central_.pieces.erase(n->ptr);
    delete n;
  }

  // Under the lock of the cache that held it: a block freed on stream
  // `freed_key` is handed out on `stream` (`key`): counted, ordered after
  // the freeing stream's work when the streams differ, and its stream
  // reference dropped (the cache's reference keeps that stream alive until
  // the event is recorded).
  void hand_out(Counters& counts, StreamRefs& streams, uintptr_t freed_key, uintptr_t key,
                const Stream* stream) {
    ++counts.hits;
    if (freed_key != key && freed_key != kAnyStream) {
      ++counts.reuses;
      order_after_free(freed_key, streams.stream(freed_key), stream);
    }
    streams.remove(freed_key);
  }

  void* take_central_small(uint64_t rounded, uintptr_t key, const Stream* stream) {
    std::lock_guard<std::mutex> lock(central_.mutex);
    Block b;
    if (!central_.small.take(rounded, key, b)) return nullptr;
    central_.small_cached -= rounded;
    hand_out(central_.counts, central_.streams, b.key, key, stream);
    return b.ptr;
  }

  void* take_central_large(uint64_t rounded, uintptr_t key, const Stream* stream) {
    std::lock_guard<std::mutex> lock(central_.mutex);
    Piece* p = nullptr;
    auto same = central_.by_stream.lower_bound({key, rounded, nullptr, nullptr});
    if (same != central_.by_stream.end() && std::get<0>(*same) == key) {
      p = std::get<3>(*same);
    } else {
      auto any = central_.by_size.lower_bound({rounded, nullptr, nullptr});
      if (any == central_.by_size.end()) return nullptr;
      p = std::get<2>(*any);
    }
    central_.erase_free(p);
    if (p->size > rounded) {  // split: the rest stays free, on the same stream
      Piece* rest = new Piece;
      rest->ptr = p->ptr + rounded;
      rest->size = p->size - rounded;
      rest->key = p->key;
      rest->prev = p;
      rest->next = p->next;
      if (p->next) p->next->prev = rest;
      p->next = rest;
      p->size = rounded;
      central_.pieces.emplace(rest->ptr, rest);
      central_.streams.add(rest->key, central_.streams.stream(rest->key));
      central_.insert_free(rest);
    }
    hand_out(central_.counts, central_.streams, p->key, key, stream);
    return p->ptr;
  }

  // The upstream's memory, or nullptr when it is out of memory.
  void* try_upstream(uint64_t bytes, const Stream* stream, std::string* refusal) {
    try {
      return upstream().allocate_raw(static_cast<size_t>(bytes), stream);
    } catch (const Error& e) {
      if (e.status() != Status::out_of_memory) throw;
      if (refusal) *refusal = e.what();
      return nullptr;
    }
  }

  void* allocate_upstream(size_t size, uint64_t rounded, const Stream* stream) {
    // A large request under kMidLimit takes a kMidSegment segment, split
    // (when the upstream has room for it): several fit one allocation.
    uint64_t segment = rounded > kSmallLimit && rounded < kMidLimit ? kMidSegment : rounded;
    void* ptr = segment > rounded ? try_upstream(segment, stream, nullptr) : nullptr;
    if (!ptr) {
      segment = rounded;
      ptr = try_upstream(rounded, stream, nullptr);
    }
    if (!ptr) {
      retries_.fetch_add(1, std::memory_order_relaxed);
      const CachingStatistics before = caching_statistics();
      trim(0);
      std::string refusal;
      ptr = try_upstream(rounded, stream, &refusal);
      if (ptr && log::enabled(log::Level::info))
        log::write(log::Level::info,
                   describe() + ": the upstream refused " + describe_bytes(rounded) +
                       "; served after giving back " + describe_bytes(before.bytes_cached) +
                       " of cached blocks");
      if (!ptr)
        fail(Status::out_of_memory,
             "the cache asked its upstream for " + describe_bytes(rounded) + " (" +
                 describe_bytes(size) + " rounded up) and was refused even after giving back " +
                 describe_bytes(before.bytes_cached) + " of cached blocks; it had " +
                 describe_bytes(before.bytes_reserved - before.bytes_cached) + " in use of " +
                 describe_bytes(before.bytes_reserved) + " reserved; the upstream said: " +
                 refusal);
    }
    if (rounded > kSmallLimit) {
      std::lock_guard<std::mutex> lock(central_.mutex);
      Piece* p = new Piece;
      p->ptr = static_cast<char*>(ptr);
      p->size = rounded;
      central_.pieces.emplace(ptr, p);
      if (segment > rounded) {  // the rest is free, ordered after this stream's work
        Piece* rest = new Piece;
        rest->ptr = p->ptr + rounded;
        rest->size = segment - rounded;
        rest->key = stream_ordered_ ? stream_key(stream) : kAnyStream;
        rest->prev = p;
        p->next = rest;
        central_.pieces.emplace(rest->ptr, rest);
        central_.streams.add(rest->key, stream_ordered_ ? stream : nullptr);
        central_.insert_free(rest);
      }
      ++central_.counts.misses;
    } else {
      Shard& s = shards_[thread_shard().index];
      std::lock_guard<Shard> lock(s);
      ++s.counts.misses;
    }
    const uint64_t now = reserved_.fetch_add(segment, std::memory_order_relaxed) + segment;
    uint64_t peak = peak_reserved_.load(std::memory_order_relaxed);
    while (now > peak &&
           !peak_reserved_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
    return ptr;
  }

  void give_back(void* ptr, uint64_t size) {
    if (!ptr) return;
    upstream().deallocate_raw(ptr, static_cast<size_t>(size), nullptr);
    reserved_.fetch_sub(size, std::memory_order_relaxed);
  }

  // A block freed on stream `key` (`freed_on`; null: the legacy default
  // stream) is reused on `stream`: the work queued there so far (the
  // block's last users) comes before anything queued on `stream` now. A
  // per-thread default stream cannot be named from another thread: the
  // device is waited for instead.
  void order_after_free(uintptr_t key, const Stream* freed_on, const Stream* stream) {
    const Device& context = stream ? stream->device() : *device_;
    if (is_per_thread_key(key)) {
      ScopedContext scope(context);
      CUMEM_CU(cuCtxSynchronize, (), "ordering the reuse of a block freed on a per-thread default stream");
      return;
    }
    // Should the event fail, the whole device is waited for.
    order_or_synchronize(context, native_or_legacy(freed_on), native_or_legacy(stream),
                         "ordering a cached block's reuse");
  }

  const bool stream_ordered_;
  // Apart from the object: kThreadShards + 1 shards of a few KiB each.
  const std::unique_ptr<Shard[]> shards_{new Shard[kThreadShards + 1]};
  mutable Central central_;
  std::atomic<uint64_t> reserved_{0}, peak_reserved_{0}, retries_{0};
};

}  // namespace

Ref<Resource> create_caching_resource(Ref<Resource> upstream) {
  return Ref<Resource>::adopt(new CachingResource(std::move(upstream)));
}

}  // namespace cumem::core
