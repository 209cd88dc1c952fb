// The counters every resource keeps: bytes in use (as requested), their
// peak, live and total allocations. Lock-free and consistent: bytes in use
// never drop below zero, and the peak read is never below bytes in use.
#pragma once

#include <atomic>
#include <cstdint>

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
    const uint64_t now = in_use_.fetch_add(size, std::memory_order_relaxed) + size;
    raise_peak(now);
    live_.fetch_add(1, std::memory_order_relaxed);
    total_.fetch_add(1, std::memory_order_relaxed);
  }
  // Takes back an allocation of `size`; false (and nothing changes) when
  // fewer bytes or no allocation are in use: the size cannot be right.
  bool count_deallocation(uint64_t size) noexcept {
    uint64_t n = in_use_.load(std::memory_order_relaxed);
    do {
      if (n < size || live_.load(std::memory_order_relaxed) == 0) return false;
    } while (!in_use_.compare_exchange_weak(n, n - size, std::memory_order_relaxed));
    live_.fetch_sub(1, std::memory_order_relaxed);
    return true;
  }
  // Undoes count_deallocation when the free itself failed.
  void undo_deallocation(uint64_t size) noexcept {
    in_use_.fetch_add(size, std::memory_order_relaxed);
    live_.fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t bytes_in_use() const noexcept { return in_use_.load(std::memory_order_relaxed); }
  uint64_t live_allocations() const noexcept { return live_.load(std::memory_order_relaxed); }

  ResourceStatistics snapshot() const noexcept {
    ResourceStatistics s;
    s.bytes_in_use = in_use_.load(std::memory_order_relaxed);
    s.live_allocations = live_.load(std::memory_order_relaxed);
    s.total_allocations = total_.load(std::memory_order_relaxed);
    // An allocation between its add and its peak update must not show as
    // a peak below the bytes in use.
    const uint64_t peak = peak_.load(std::memory_order_relaxed);
    s.peak_bytes_in_use = peak > s.bytes_in_use ? peak : s.bytes_in_use;
    return s;
  }
  void reset_peak() noexcept {
    peak_.store(in_use_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    // Allocations that added before the store but raised the peak before it
    // too are seen by this second read.
    raise_peak(in_use_.load(std::memory_order_relaxed));
  }

 private:
  void raise_peak(uint64_t now) noexcept {
    uint64_t peak = peak_.load(std::memory_order_relaxed);
    while (now > peak &&
           !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }

  std::atomic<uint64_t> in_use_{0};
  std::atomic<uint64_t> peak_{0};
  std::atomic<uint64_t> live_{0};
  std::atomic<uint64_t> total_{0};
};

}  // namespace cumem::core
