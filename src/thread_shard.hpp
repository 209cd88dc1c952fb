// Per-thread shards, for counters and caches that threads must not share.
// A thread takes a shard of its own (one of kThreadShards) the first time
// it asks, and gives it back when it exits, so that no two live threads own
// the same shard: the owner updates its shard's counters with a plain load
// and store, no atomic read-modify-write and no shared cache line. Threads
// beyond kThreadShards alive at once share one extra shard, kSharedShard,
// and update it with atomic read-modify-writes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace cumem::core {

inline constexpr size_t kThreadShards = 64;
// The shard of threads that found none free; arrays hold kThreadShards + 1.
inline constexpr size_t kSharedShard = kThreadShards;

struct ThreadShard {
  size_t index = kSharedShard;
  bool exclusive = false;  // true: only this thread writes shard `index`
};

namespace detail {
struct ThreadShardState {
  ThreadShard shard;
  int state = 0;  // 0: not asked yet; 1: holds its shard; 2: exited (uses kSharedShard)
};
inline thread_local ThreadShardState current;
// Takes a free shard for the calling thread (or kSharedShard) and arranges
// for it to be given back when the thread exits (thread_shard.cpp).
ThreadShard take_thread_shard() noexcept;
}  // namespace detail

inline ThreadShard thread_shard() noexcept {
  const detail::ThreadShardState& c = detail::current;
  if (__builtin_expect(c.state == 1, 1)) return c.shard;
  if (c.state == 2) return ThreadShard{};
  return detail::take_thread_shard();
}

// Adds to a shard's counter: a plain load and store for the shard's owner,
// an atomic add for the shared shard. Readers load it (relaxed) at any time.
template <class T>
inline void shard_add(std::atomic<T>& counter, T delta, bool exclusive) noexcept {
  if (exclusive)
    counter.store(counter.load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);
  else
    counter.fetch_add(delta, std::memory_order_relaxed);
}

}  // namespace cumem::core
