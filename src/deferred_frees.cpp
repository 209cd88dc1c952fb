#include "deferred_frees.hpp"

#include <atomic>
#include <mutex>
#include <vector>

#include "capture.hpp"
#include "log.hpp"

namespace cumem::core {
namespace {

struct Held {
  std::mutex mutex;
  std::vector<DeferredFree> frees;  // deferred_frees_held: its size
};
// Never destroyed: frameworks free memory during interpreter teardown.
Held& held() {
  static Held* h = new Held;
  return *h;
}

// Frees `f` when its stream no longer captures; false while it still does.
bool try_free(const DeferredFree& f) {
  const Stream* s = f.free_on.get();
  if (capture_status(s) != CaptureStatus::none) return false;
  const CUstream allocated_on = native_or_legacy(f.allocated_on.get());
  if (s && allocated_on != s->native()) {
    // As the framework's own free on another stream: after the allocating
    // stream's work so far (or the whole device, should the event fail).
    order_after_remembered(s->device(), f.allocated_on.get(), s->native(),
                           "ordering a deferred free after the allocating stream's work");
  }
  RememberedStreamScope remembered;  // the free was asked for earlier
  f.resource->deallocate_raw(f.ptr, f.size, s);
  return true;
}

}  // namespace

void defer_free(DeferredFree free) {
  Held& h = held();
  std::lock_guard<std::mutex> lock(h.mutex);
  h.frees.push_back(std::move(free));
  deferred_frees_held.store(h.frees.size(), std::memory_order_relaxed);
}

void run_held_frees() noexcept {
  Held& h = held();
  std::vector<DeferredFree> due;
  {
    std::lock_guard<std::mutex> lock(h.mutex);
    due.swap(h.frees);
    deferred_frees_held.store(0, std::memory_order_relaxed);
  }
  std::vector<DeferredFree> waiting;
  for (DeferredFree& f : due) {
    try {
      if (!try_free(f)) waiting.push_back(std::move(f));
    } catch (...) {
      log::swallowed("a free deferred until a capture ended");
    }
  }
  if (waiting.empty()) return;
  std::lock_guard<std::mutex> lock(h.mutex);
  for (DeferredFree& f : waiting) h.frees.push_back(std::move(f));
  deferred_frees_held.store(h.frees.size(), std::memory_order_relaxed);
}

size_t deferred_free_count() noexcept {
  return deferred_frees_held.load(std::memory_order_relaxed);
}

}  // namespace cumem::core
