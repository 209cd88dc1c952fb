#include "resource.hpp"

#include "../error.hpp"
#include "../snapshot/history.hpp"

namespace cumem::core {

// Resources hold cache-line-aligned counters; their slab slots must honour it.
static_assert(alignof(Statistics) <= slab::kAlignment, "a resource must fit a slab slot's alignment");

// While the memory history is on (src/snapshot/history.hpp), each call is
// one of its calls (the stack, when asked, is taken once for it and its
// nested calls) and records what it did. Off, that is one relaxed load and
// a branch on a bool held in a register: one body each, laid out as it
// would be without the history.
struct Resource::Recording {
  const bool on;
  explicit Recording(bool recording) noexcept : on(recording) {
    if (__builtin_expect(on, 0)) history::enter_call();
  }
  ~Recording() {
    if (__builtin_expect(on, 0)) history::leave_call();
  }
  explicit operator bool() const noexcept { return on; }
};

void* Resource::allocate_raw(size_t size, const Stream* stream) {
  if (size == 0) return nullptr;
  const Recording recording(history::on());
  void* ptr = nullptr;
  try {
    ptr = do_allocate(size, stream);
  } catch (const Error& e) {
    if (e.status() != Status::out_of_memory) throw;
    if (recording) record_out_of_memory(size, stream);
    const ResourceStatistics s = statistics_.snapshot();
    fail(Status::out_of_memory,
         "out of memory: cannot allocate " + describe_bytes(size) + " from " + describe() +
             " (this resource has " + describe_bytes(s.bytes_in_use) + " in use in " +
             std::to_string(s.live_allocations) + " allocations" + usage_details() + "); " +
             e.what());
  }
  statistics_.count_allocation(size);
  if (recording) history::record_allocate(id_, ptr, size, history::stream_value(stream));
  return ptr;
}

void Resource::deallocate_raw(void* ptr, size_t size, const Stream* stream) {
  if (!ptr) {
    if (size != 0)
      fail(Status::invalid_argument, "cannot free a NULL pointer of " + describe_bytes(size) +
                                         " (only size 0 goes with NULL)");
    return;
  }
  const Recording recording(history::on());
  // Recorded before the free: once freed, another thread may be handed the
  // same address and record it before this call could.
  if (recording) history::record_free(id_, ptr, size, history::stream_value(stream));
  if (!statistics_.count_deallocation(size)) {
    if (recording) history::restore(id_, ptr);  // refused: the allocation is still live
    fail(Status::invalid_argument,
         "cannot free " + describe_bytes(size) + " to " + describe() +
             ": no allocation of this resource was that large (the largest was " +
             describe_bytes(statistics_.largest_allocation()) +
             "), so the size is not the allocation's (nothing was freed)");
  }
  try {
    do_deallocate(ptr, size, stream);
  } catch (...) {
    statistics_.undo_deallocation(size);
    if (recording) history::restore(id_, ptr);
    throw;
  }
}

void Resource::record_out_of_memory(size_t size, const Stream* stream) const noexcept {
  // PyTorch's "oom" event says how much the device has free.
  uint64_t free_bytes = 0, total = 0;
  try {
    if (device_) device_->memory_info(free_bytes, total);
  } catch (...) {
  }
  history::record(history::Action::out_of_memory, id_, nullptr, size, history::stream_value(stream),
                  free_bytes);
}

}  // namespace cumem::core
