// A lock for a few instructions of work that is almost never contended
// (a thread's own shard of a table): one atomic exchange to take, one store
// to give back, where std::mutex costs a call into the C library each way.
// A waiter yields its core rather than spin on a holder that was
// descheduled.
#pragma once

#include <atomic>
#include <thread>

namespace cumem::core {

class SpinLock {
 public:
  void lock() noexcept {
    while (busy_.test_and_set(std::memory_order_acquire)) std::this_thread::yield();
  }
  void unlock() noexcept { busy_.clear(std::memory_order_release); }

 private:
  std::atomic_flag busy_ = ATOMIC_FLAG_INIT;
};

}  // namespace cumem::core
