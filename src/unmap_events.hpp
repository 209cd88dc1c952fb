// Notifications for registration caches (UCX, NIXL, NCCL): who subscribed,
// and the one call every place that gives device memory back makes before
// it does (notify). Subscribers are called on the notifying thread, in
// subscription order, outside this module's lock (the caller may hold its
// own). unsubscribe() waits until no call of the subscription is running,
// except from inside a callback, where it cannot.
//
// Who notifies (cumem.h, cumem_unmap_reason_t): vmm::Range and
// vmm::Mappings before cuMemUnmap (virtual resources, expandable caches),
// the caching adaptor before it gives an upstream allocation back, the
// legacy device resource before cuMemFree, pools before cuMemPoolTrimTo and
// cuMemPoolDestroy. Costs one relaxed load while nobody subscribed.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

namespace cumem::core::unmap {

enum class Reason { virtual_unmap = 1, cache_release = 2, free = 3, pool_trim = 4, pool_destroy = 5 };

struct Event {
  Reason reason = Reason::virtual_unmap;
  uintptr_t address = 0;  // 0 with size 0: the range is not known
  uint64_t size = 0;
  uint64_t resource_id = 0;
  int device_id = -1;
};

using Callback = std::function<void(const Event&)>;

namespace detail {
extern std::atomic<uint32_t> subscribers;
void dispatch(const Event& event) noexcept;
}  // namespace detail

// Whether anyone listens: one relaxed load, for the hot paths.
inline bool any() noexcept { return detail::subscribers.load(std::memory_order_relaxed) != 0; }

// Calls every subscriber with `event`; nothing when none subscribed. Never
// throws (a callback's exception is logged).
inline void notify(const Event& event) noexcept {
  if (any()) detail::dispatch(event);
}

// A new subscription (its id, never 0). invalid_state from inside a callback.
uint64_t subscribe(Callback callback);
// Ends one; not_found for an id that is not subscribed.
void unsubscribe(uint64_t id);

}  // namespace cumem::core::unmap
