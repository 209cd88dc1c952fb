// The counters every resource keeps: bytes in use (as requested), their
// peak, live and total allocations, without a shared atomic on the common
// path. Each thread counts in its own shard (thread_shard.hpp):
// - allocations and frees: plain counters of the shard's owner;
// - bytes in use: the shard's `pending` bytes, kept between 0 and a limit,
//   plus one shared `flushed` total that a shard adds to only when its
//   pending bytes would leave that range. The limit is kFlushAbove, or
//   twice the largest allocation the resource has made when that is more
//   (at most kFlushCap), so that a pair of large allocations does not move
//   bytes through the shared total every time. Above it, all but kKeep move
//   to `flushed`; below 0 (the thread freed memory counted elsewhere), the
//   deficit does. An allocate + free pair on one thread, with less than the
//   limit held, touches no shared cache line.
// Reading sums the shards that were ever used (a mask, so that a read costs
// a few cache lines, not all of them): exact whenever no allocation or free
// is in flight. The peak: each allocation compares `flushed` plus its own shard's
// pending bytes with the peak, and each read raises it to the bytes in use
// it finds. That is exact while every allocation and free happens on one
// thread; with several, it is never above the truth and below it by at
// most the other shards' pending bytes (under the limit each).
#pragma once

#include <algorithm>
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
  static constexpr int64_t kFlushAbove = int64_t{2} << 20;
  static constexpr int64_t kFlushCap = int64_t{256} << 20;
  static constexpr int64_t kKeep = int64_t{1} << 20;

  void count_allocation(uint64_t size) noexcept {
    const ThreadShard t = thread_shard();
    Shard& s = shards_[t.index];
    mark_used(s, t.index);
    const uint64_t largest = raise(largest_, size);
    shard_add(s.allocations, uint64_t{1}, t.exclusive);
    const int64_t pending = add_bytes(s, static_cast<int64_t>(size), t.exclusive, limit_for(largest));
    const int64_t estimate = flushed_.load(std::memory_order_relaxed) + pending;
    if (estimate > 0) raise(peak_, static_cast<uint64_t>(estimate));
  }
  // Takes back an allocation of `size`; false (and nothing changes) when
  // no allocation of this resource was ever that large: the size cannot be
  // right. (Bytes in use cannot be checked here without a shared counter.)
  bool count_deallocation(uint64_t size) noexcept {
    const uint64_t largest = largest_.load(std::memory_order_relaxed);
    if (size > largest) return false;
    const ThreadShard t = thread_shard();
    Shard& s = shards_[t.index];
    mark_used(s, t.index);
    shard_add(s.frees, uint64_t{1}, t.exclusive);
    add_bytes(s, -static_cast<int64_t>(size), t.exclusive, limit_for(largest));
    return true;
  }
  // Undoes count_deallocation when the free itself failed.
  void undo_deallocation(uint64_t size) noexcept {
    const ThreadShard t = thread_shard();
    Shard& s = shards_[t.index];
    mark_used(s, t.index);
    shard_add(s.frees, ~uint64_t{0}, t.exclusive);  // minus one, modulo 2^64
    add_bytes(s, static_cast<int64_t>(size), t.exclusive, limit_for(largest_allocation()));
  }
  // An allocation of `old_size` that now has `new_size` bytes (a virtual
  // buffer resized): bytes in use move by the difference; the allocation
  // counts stay.
  void count_resize(uint64_t old_size, uint64_t new_size) noexcept {
    const ThreadShard t = thread_shard();
    Shard& s = shards_[t.index];
    const uint64_t largest = raise(largest_, new_size);
    const int64_t delta = static_cast<int64_t>(new_size) - static_cast<int64_t>(old_size);
    const int64_t pending = add_bytes(s, delta, t.exclusive, limit_for(largest));
    const int64_t estimate = flushed_.load(std::memory_order_relaxed) + pending;
    if (delta > 0 && estimate > 0) raise(peak_, static_cast<uint64_t>(estimate));
  }
  uint64_t largest_allocation() const noexcept { return largest_.load(std::memory_order_relaxed); }
  uint64_t bytes_in_use() const noexcept { return snapshot().bytes_in_use; }

  ResourceStatistics snapshot() const noexcept {
    uint64_t allocations = 0, frees = 0;
    int64_t bytes = 0;
    auto add = [&](const Shard& shard) {
      allocations += shard.allocations.load(std::memory_order_relaxed);
      frees += shard.frees.load(std::memory_order_relaxed);
      bytes += shard.pending.load(std::memory_order_relaxed);
    };
    static_assert(kThreadShards == 64, "one bit of used_ per exclusive shard");
    for (uint64_t used = used_.load(std::memory_order_acquire); used != 0; used &= used - 1)
      add(shards_[__builtin_ctzll(used)]);
    add(shards_[kSharedShard]);
    bytes += flushed_.load(std::memory_order_relaxed);
    ResourceStatistics s;
    s.bytes_in_use = bytes > 0 ? static_cast<uint64_t>(bytes) : 0;
    s.total_allocations = allocations;
    s.live_allocations = allocations > frees ? allocations - frees : 0;
    raise(peak_, s.bytes_in_use);
    const uint64_t peak = peak_.load(std::memory_order_relaxed);
    s.peak_bytes_in_use = peak > s.bytes_in_use ? peak : s.bytes_in_use;
    return s;
  }
  void reset_peak() noexcept {
    peak_.store(bytes_in_use(), std::memory_order_relaxed);
    // Allocations that raised the peak between the read and the store.
    raise(peak_, bytes_in_use());
  }

 private:
  struct alignas(64) Shard {
    std::atomic<uint64_t> allocations{0};
    std::atomic<uint64_t> frees{0};
    std::atomic<int64_t> pending{0};  // bytes; the shared shard keeps 0
    std::atomic<bool> used{false};    // its bit of used_ is set
  };

  // The first count in an exclusive shard sets its bit in used_ (once: the
  // flag sits on the shard's own cache line, so later counts read no shared
  // line). The shared shard is always read.
  void mark_used(Shard& s, size_t index) noexcept {
    if (index == kSharedShard || s.used.load(std::memory_order_relaxed)) return;
    used_.fetch_or(uint64_t{1} << index, std::memory_order_release);
    s.used.store(true, std::memory_order_relaxed);
  }

  // The most pending bytes a shard keeps: kFlushAbove, or twice the
  // largest allocation, at most kFlushCap.
  static int64_t limit_for(uint64_t largest) noexcept {
    if (largest >= uint64_t(kFlushCap) / 2) return kFlushCap;
    return std::max(kFlushAbove, static_cast<int64_t>(2 * largest));
  }
  // Adds `delta` bytes in use, keeping the shard's pending bytes in
  // [0, limit]; returns them.
  int64_t add_bytes(Shard& s, int64_t delta, bool exclusive, int64_t limit) noexcept {
    if (!exclusive) {
      // Threads sharing a shard count straight into `flushed`.
      flushed_.fetch_add(delta, std::memory_order_relaxed);
      return 0;
    }
    int64_t pending = s.pending.load(std::memory_order_relaxed) + delta;
    if (pending > limit) {
      flushed_.fetch_add(pending - kKeep, std::memory_order_relaxed);
      pending = kKeep;
    } else if (pending < 0) {
      flushed_.fetch_add(pending, std::memory_order_relaxed);
      pending = 0;
    }
    s.pending.store(pending, std::memory_order_relaxed);
    return pending;
  }
  // Raises `value` to `now`; returns the value after (the larger).
  static uint64_t raise(std::atomic<uint64_t>& value, uint64_t now) noexcept {
    uint64_t seen = value.load(std::memory_order_relaxed);
    while (now > seen &&
           !value.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
    }
    return now > seen ? now : seen;
  }

  alignas(64) std::atomic<int64_t> flushed_{0};
  alignas(64) mutable std::atomic<uint64_t> peak_{0};
  std::atomic<uint64_t> largest_{0};
  std::atomic<uint64_t> used_{0};  // bit i: shard i has counted something
  Shard shards_[kThreadShards + 1];
};

}  // namespace cumem::core
