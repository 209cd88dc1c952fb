// A small number per thread, for counters and caches split into shards so
// that threads do not write the same cache line: threads take shards in
// turn, so up to kThreadShards threads never share one.
#pragma once

#include <atomic>
#include <cstddef>

namespace cumem::core {

inline constexpr size_t kThreadShards = 64;

inline size_t thread_shard() noexcept {
  static std::atomic<size_t> next{0};
  static thread_local const size_t shard =
      next.fetch_add(1, std::memory_order_relaxed) % kThreadShards;
  return shard;
}

}  // namespace cumem::core
