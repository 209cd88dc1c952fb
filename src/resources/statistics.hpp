// The counters every resource keeps: bytes in use (as requested), their
// peak, live and total allocations. Bytes in use is one atomic counter (a
// peak must see the sum at every moment); the allocation counts are split
// into per-thread shards, each on its own cache line, so that threads
// allocating at once share one counter instead of three. Bytes in use never
// drop below zero, and the peak read is never below bytes in use.
#pragma once

#include <atomic>
#include <cstdint>

#include "../thread_shard.hpp"

namespace cumem::core {

struct ResourceStatistics {
  uint64_t bytes_in_use = 0;
  uint64_t peak_bytes_in_use = 0;
  uint64_t live_allocations = 0;
  uint64_t total_allocations = 0;
};

class Statistics {
 public:
  void count_allocation(uint64_t size) noexcept {
    const int64_t now =
        in_use_.fetch_add(static_cast<int64_t>(size), std::memory_order_relaxed) +
        static_cast<int64_t>(size);
    raise_peak(static_cast<uint64_t>(now));
    shards_[thread_shard()].allocations.fetch_add(1, std::memory_order_relaxed);
  }
  // Takes back an allocation of `size`; false (and nothing changes) when
  // fewer bytes are in use: the size cannot be right.
  bool count_deallocation(uint64_t size) noexcept {
    const int64_t s = static_cast<int64_t>(size);
    if (in_use_.fetch_sub(s, std::memory_order_relaxed) < s) {
      in_use_.fetch_add(s, std::memory_order_relaxed);
      return false;
    }
    shards_[thread_shard()].frees.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  // Undoes count_deallocation when the free itself failed.
  void undo_deallocation(uint64_t size) noexcept {
    in_use_.fetch_add(static_cast<int64_t>(size), std::memory_order_relaxed);
    shards_[thread_shard()].frees.fetch_sub(1, std::memory_order_relaxed);
  }
  uint64_t bytes_in_use() const noexcept { return clamp(in_use_.load(std::memory_order_relaxed)); }
  uint64_t live_allocations() const noexcept { return snapshot().live_allocations; }

  ResourceStatistics snapshot() const noexcept {
    ResourceStatistics s;
    uint64_t allocations = 0, frees = 0;
    for (const Shard& shard : shards_) {
      allocations += shard.allocations.load(std::memory_order_relaxed);
      frees += shard.frees.load(std::memory_order_relaxed);
    }
    s.bytes_in_use = clamp(in_use_.load(std::memory_order_relaxed));
    s.total_allocations = allocations;
    s.live_allocations = allocations > frees ? allocations - frees : 0;
    // An allocation between its add and its peak update must not show as
    // a peak below the bytes in use.
    const uint64_t peak = peak_.load(std::memory_order_relaxed);
    s.peak_bytes_in_use = peak > s.bytes_in_use ? peak : s.bytes_in_use;
    return s;
  }
  void reset_peak() noexcept {
    peak_.store(bytes_in_use(), std::memory_order_relaxed);
    // Allocations that added before the store but raised the peak before it
    // too are seen by this second read.
    raise_peak(bytes_in_use());
  }

 private:
  // A refused free adds back what it took: a reader may see the dip.
  static uint64_t clamp(int64_t v) noexcept { return v > 0 ? static_cast<uint64_t>(v) : 0; }
  void raise_peak(uint64_t now) noexcept {
    uint64_t peak = peak_.load(std::memory_order_relaxed);
    while (now > peak &&
           !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }

  struct alignas(64) Shard {
    std::atomic<uint64_t> allocations{0};
    std::atomic<uint64_t> frees{0};
  };
  alignas(64) std::atomic<int64_t> in_use_{0};
  alignas(64) std::atomic<uint64_t> peak_{0};
  Shard shards_[kThreadShards];
};

}  // namespace cumem::core
