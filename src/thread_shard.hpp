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

#include "this_thread.hpp"  // ThreadShard, kThreadShards, the thread's state

namespace cumem::core {

namespace detail {
// Takes a free shard for the calling thread (or kSharedShard) and arranges
// for it to be given back when the thread exits (thread_shard.cpp).
ThreadShard take_thread_shard() noexcept;
}  // namespace detail

inline ThreadShard thread_shard(const ThisThread& t) noexcept {
  if (__builtin_expect(t.shard_state == 1, 1)) return t.shard;
  if (t.shard_state == 2) return ThreadShard{};
  return detail::take_thread_shard();
}
inline ThreadShard thread_shard() noexcept { return thread_shard(this_thread()); }

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
