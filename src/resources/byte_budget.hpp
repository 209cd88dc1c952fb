// A cap on bytes held at once, taken before asking for memory and given back
// after freeing it, without a lock. Used by the limit adaptor and by pools
// with a max_size.
#pragma once

#include <atomic>
#include <cstdint>

namespace cumem::core {

class ByteBudget {
 public:
  explicit ByteBudget(uint64_t limit) : limit_(limit) {}
  uint64_t limit() const noexcept { return limit_; }
  uint64_t used() const noexcept { return used_.load(std::memory_order_relaxed); }
  // Takes `size` bytes; false when they would pass the limit.
  bool try_take(uint64_t size) noexcept {
    uint64_t n = used_.load(std::memory_order_relaxed);
    do {
      if (size > limit_ || n > limit_ - size) return false;
    } while (!used_.compare_exchange_weak(n, n + size, std::memory_order_relaxed));
    return true;
  }
  void give_back(uint64_t size) noexcept { used_.fetch_sub(size, std::memory_order_relaxed); }

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> used_{0};
};

}  // namespace cumem::core
