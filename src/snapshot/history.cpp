#include "history.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <mutex>

#include "../error.hpp"
#include "../stream.hpp"
#include "stacks.hpp"

namespace cumem::core::history {
namespace detail {
std::atomic<bool> recording{false};
}

namespace {
// Whether events take stacks: read without the lock by every outermost call.
std::atomic<bool> with_stacks{false};
}  // namespace

namespace {

struct State {
  std::mutex mutex;
  bool stacks = false;
  uint64_t max_entries = 0;
  std::vector<Event> ring;  // slot i % size holds event i
  uint64_t recorded = 0;
  std::unordered_map<uint64_t, std::unordered_map<uint64_t, Live>> live;
  snapshot::StackTable table;
};

// Never destroyed: resources record until the process ends.
State& state() {
  static State* s = new State;
  return *s;
}

uint32_t thread_id() noexcept {
  static thread_local const auto id = static_cast<uint32_t>(syscall(SYS_gettid));
  return id;
}

uint64_t now_ns() noexcept {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

// The calling thread's outermost recording call: its stack, taken once.
struct ThreadScope {
  int depth = 0;
  bool captured = false;
  int frames = 0;
  void* stack[snapshot::kMaxFrames];
  uint32_t id = 0;  // interned at the first event (under the lock)
  bool interned = false;
};
thread_local ThreadScope scope;

// Under the lock: the stack id for an event of this thread.
uint32_t stack_for_event(State& s, void* const* frames, int depth) {
  if (!s.stacks || depth == 0) return 0;
  return s.table.intern(frames, depth);
}

}  // namespace

const char* action_name(Action action) noexcept {
  switch (action) {
    case Action::allocate: return "allocate";
    case Action::free: return "free";
    case Action::segment_alloc: return "segment_alloc";
    case Action::segment_free: return "segment_free";
    case Action::segment_map: return "segment_map";
    case Action::segment_unmap: return "segment_unmap";
    case Action::out_of_memory: return "out_of_memory";
    case Action::trim: return "trim";
    case Action::capture_begin: return "capture_begin";
    case Action::capture_end: return "capture_end";
  }
  return "unknown";
}

void start(const Options& options) {
  State& s = state();
  const uint64_t entries = options.max_entries ? options.max_entries : Options{}.max_entries;
  if (entries > kMaxEntries)
    fail(Status::invalid_argument, "max_entries is " + std::to_string(entries) + ", above the " +
                                       std::to_string(kMaxEntries) + " events the ring can hold");
  std::vector<Event> ring(static_cast<size_t>(entries));  // may throw: nothing changed yet
  if (options.stacks) {
    // backtrace(3) loads its unwinder on first use, which allocates: do it
    // here rather than inside an allocation.
    void* frames[4];
    snapshot::capture_stack(frames, 4);
  }
  std::lock_guard<std::mutex> lock(s.mutex);
  s.ring.swap(ring);
  s.max_entries = entries;
  s.stacks = options.stacks;
  s.recorded = 0;
  s.live.clear();
  s.table.clear();
  with_stacks.store(options.stacks, std::memory_order_relaxed);
  detail::recording.store(true, std::memory_order_relaxed);
}

void stop() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  detail::recording.store(false, std::memory_order_relaxed);
  s.live.clear();
}

uint64_t stream_value(const Stream* stream) noexcept {
  return reinterpret_cast<uintptr_t>(native_or_legacy(stream));
}

void enter_call() noexcept {
  if (scope.depth++ != 0) return;
  scope.captured = false;
  scope.interned = false;
  // Read without the lock: a start with stacks between here and the event
  // gives this call no stack.
  if (!on() || !with_stacks.load(std::memory_order_relaxed)) return;
  scope.frames = snapshot::capture_stack(scope.stack, snapshot::kMaxFrames);
  scope.captured = true;
}

void leave_call() noexcept { --scope.depth; }

namespace {

// Under the lock: the next slot, filled but for the action's own fields.
Event& next_slot(State& s, Action action, uint64_t resource, const void* address, uint64_t size,
                 uint64_t stream, uint64_t detail, uint32_t stack) {
  Event& e = s.ring[static_cast<size_t>(s.recorded % s.ring.size())];
  ++s.recorded;
  e.time_ns = now_ns();
  e.address = reinterpret_cast<uintptr_t>(address);
  e.size = size;
  e.stream = stream;
  e.resource = resource;
  e.detail = detail;
  e.thread = thread_id();
  e.stack = stack;
  e.action = action;
  return e;
}

// The stack of an event: the enclosing call's, else (an event outside any
// allocate or free: a trim, a capture) one taken now. Outside the lock.
struct EventStack {
  void* frames[snapshot::kMaxFrames];
  int depth = 0;
  bool from_scope = false;
};
void take_stack(EventStack& es, bool stacks) {
  if (!stacks) return;
  if (scope.depth > 0) {
    es.from_scope = scope.captured;
    return;
  }
  es.depth = snapshot::capture_stack(es.frames, snapshot::kMaxFrames);
}
uint32_t intern_stack(State& s, const EventStack& es) {
  if (!s.stacks) return 0;
  if (!es.from_scope) return stack_for_event(s, es.frames, es.depth);
  if (!scope.interned) {
    scope.id = stack_for_event(s, scope.stack, scope.frames);
    scope.interned = true;
  }
  return scope.id;
}

}  // namespace

void record(Action action, uint64_t resource, const void* address, uint64_t size,
            uint64_t stream, uint64_t detail) noexcept {
  if (!on()) return;
  State& s = state();
  EventStack es;
  take_stack(es, scope.depth > 0 ? scope.captured : with_stacks.load(std::memory_order_relaxed));
  try {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!on() || s.ring.empty()) return;
    next_slot(s, action, resource, address, size, stream, detail, intern_stack(s, es));
  } catch (...) {  // no memory for a stack: the event is dropped
  }
}

void record_allocate(uint64_t resource, const void* address, uint64_t size,
                     uint64_t stream) noexcept {
  if (!on()) return;
  State& s = state();
  EventStack es;
  take_stack(es, scope.depth > 0 ? scope.captured : with_stacks.load(std::memory_order_relaxed));
  try {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!on() || s.ring.empty()) return;
    const Event& e = next_slot(s, Action::allocate, resource, address, size, stream, 0,
                               intern_stack(s, es));
    s.live[resource][e.address] = Live{size, stream, e.time_ns, e.thread, e.stack};
  } catch (...) {
  }
}

namespace {
// What this thread's last record_free forgot (for restore).
struct Forgotten {
  bool found = false;
  uint64_t resource = 0, address = 0;
  Live live;
};
thread_local Forgotten forgotten;
}  // namespace

void record_free(uint64_t resource, const void* address, uint64_t size, uint64_t stream) noexcept {
  forgotten.found = false;
  if (!on()) return;
  State& s = state();
  EventStack es;
  take_stack(es, scope.depth > 0 ? scope.captured : with_stacks.load(std::memory_order_relaxed));
  try {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!on() || s.ring.empty()) return;
    next_slot(s, Action::free, resource, address, size, stream, 0, intern_stack(s, es));
    const auto it = s.live.find(resource);
    if (it == s.live.end()) return;
    const auto a = it->second.find(reinterpret_cast<uintptr_t>(address));
    if (a == it->second.end()) return;
    forgotten = Forgotten{true, resource, a->first, a->second};
    it->second.erase(a);
    if (it->second.empty()) s.live.erase(it);
  } catch (...) {
  }
}

void restore(uint64_t resource, const void* address) noexcept {
  const auto at = reinterpret_cast<uintptr_t>(address);
  if (!forgotten.found || forgotten.resource != resource || forgotten.address != at) return;
  forgotten.found = false;
  State& s = state();
  try {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (on()) s.live[resource][at] = forgotten.live;
  } catch (...) {
  }
}

Copy copy() {
  State& s = state();
  Copy c;
  std::lock_guard<std::mutex> lock(s.mutex);
  c.recording = on();
  c.with_stacks = s.stacks;
  c.max_entries = s.max_entries;
  c.recorded = s.recorded;
  const uint64_t kept = s.ring.empty() ? 0 : std::min<uint64_t>(s.recorded, s.ring.size());
  c.dropped = s.recorded - kept;
  c.stacks_refused = s.table.refused();
  c.events.reserve(static_cast<size_t>(kept));
  for (uint64_t i = s.recorded - kept; i < s.recorded; ++i)
    c.events.push_back(s.ring[static_cast<size_t>(i % s.ring.size())]);
  c.live = s.live;
  auto keep_stack = [&](uint32_t id) {
    if (id != 0 && !c.stacks.count(id)) c.stacks.emplace(id, s.table.frames(id));
  };
  for (const Event& e : c.events) keep_stack(e.stack);
  for (const auto& [resource, allocations] : c.live)
    for (const auto& [address, a] : allocations) keep_stack(a.stack);
  return c;
}

}  // namespace cumem::core::history
