#include "unmap_events.hpp"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "error.hpp"
#include "log.hpp"

namespace cumem::core::unmap {
namespace detail {
std::atomic<uint32_t> subscribers{0};
}  // namespace detail

namespace {

struct Subscription {
  uint64_t id = 0;
  Callback callback;
  std::atomic<bool> removed{false};
  uint32_t running = 0;  // calls in progress (under Registry::mutex)
};

struct Registry {
  std::mutex mutex;
  std::condition_variable idle;  // a call of a removed subscription ended
  std::vector<std::shared_ptr<Subscription>> list;  // in subscription order
  uint64_t next_id = 1;
};

// Never destroyed: memory may be given back from atexit handlers and static
// destructors that run after this one would have.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// How deep this thread is inside callbacks.
thread_local int in_callback = 0;

}  // namespace

void detail::dispatch(const Event& event) noexcept {
  Registry& r = registry();
  std::vector<std::shared_ptr<Subscription>> now;
  try {
    std::lock_guard<std::mutex> lock(r.mutex);
    now.reserve(r.list.size());
    for (const auto& s : r.list) {
      ++s->running;
      now.push_back(s);
    }
  } catch (...) {
    log::swallowed("copying the unmap subscriptions (out of host memory)");
    return;
  }
  for (const auto& s : now) {
    if (!s->removed.load(std::memory_order_acquire)) {
      ++in_callback;
      try {
        s->callback(event);
      } catch (...) {
        log::swallowed("an unmap notification's callback");
      }
      --in_callback;
    }
    std::lock_guard<std::mutex> lock(r.mutex);
    if (--s->running == 0 && s->removed.load(std::memory_order_relaxed)) r.idle.notify_all();
  }
}

uint64_t subscribe(Callback callback) {
  if (in_callback)
    fail(Status::invalid_state, "cannot subscribe from inside an unmap notification's callback");
  auto s = std::make_shared<Subscription>();
  s->callback = std::move(callback);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  s->id = r.next_id++;
  r.list.push_back(s);
  detail::subscribers.fetch_add(1, std::memory_order_relaxed);
  return s->id;
}

void unsubscribe(uint64_t id) {
  Registry& r = registry();
  std::unique_lock<std::mutex> lock(r.mutex);
  std::shared_ptr<Subscription> s;
  for (auto it = r.list.begin(); it != r.list.end(); ++it)
    if ((*it)->id == id) {
      s = *it;
      r.list.erase(it);
      break;
    }
  if (!s)
    fail(Status::not_found, "no unmap subscription " + std::to_string(id) +
                                " (never made, or ended already)");
  s->removed.store(true, std::memory_order_release);
  detail::subscribers.fetch_sub(1, std::memory_order_relaxed);
  // From inside a callback, waiting could wait for this very thread.
  if (in_callback) return;
  r.idle.wait(lock, [&] { return s->running == 0; });
}

}  // namespace cumem::core::unmap
