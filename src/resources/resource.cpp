#include "resource.hpp"

#include "../error.hpp"
#include "../snapshot/history.hpp"

namespace cumem::core {

// Resources hold cache-line-aligned counters; their slab slots must honour it.
static_assert(alignof(Statistics) <= slab::kAlignment, "a resource must fit a slab slot's alignment");

void* Resource::allocate_raw(size_t size, const Stream* stream) {
  if (size == 0) return nullptr;
  if (__builtin_expect(history::on(), 0)) return allocate_recorded(size, stream);
  return allocate_counted(size, stream);
}

void* Resource::allocate_counted(size_t size, const Stream* stream) {
  void* ptr = nullptr;
  try {
    ptr = do_allocate(size, stream);
  } catch (const Error& e) {
    if (e.status() != Status::out_of_memory) throw;
    const ResourceStatistics s = statistics_.snapshot();
    fail(Status::out_of_memory,
         "out of memory: cannot allocate " + describe_bytes(size) + " from " + describe() +
             " (this resource has " + describe_bytes(s.bytes_in_use) + " in use in " +
             std::to_string(s.live_allocations) + " allocations" + usage_details() + "); " +
             e.what());
  }
  statistics_.count_allocation(size);
  return ptr;
}

void Resource::deallocate_raw(void* ptr, size_t size, const Stream* stream) {
  if (!ptr) {
    if (size != 0)
      fail(Status::invalid_argument, "cannot free a NULL pointer of " + describe_bytes(size) +
                                         " (only size 0 goes with NULL)");
    return;
  }
  if (__builtin_expect(history::on(), 0)) return deallocate_recorded(ptr, size, stream);
  deallocate_counted(ptr, size, stream);
}

void Resource::deallocate_counted(void* ptr, size_t size, const Stream* stream) {
  if (!statistics_.count_deallocation(size))
    fail(Status::invalid_argument,
         "cannot free " + describe_bytes(size) + " to " + describe() +
             ": no allocation of this resource was that large (the largest was " +
             describe_bytes(statistics_.largest_allocation()) +
             "), so the size is not the allocation's (nothing was freed)");
  try {
    do_deallocate(ptr, size, stream);
  } catch (...) {
    statistics_.undo_deallocation(size);
    throw;
  }
}

void* Resource::allocate_recorded(size_t size, const Stream* stream) {
  history::CallScope scope;
  const uint64_t on = history::stream_value(stream);
  try {
    void* ptr = allocate_counted(size, stream);
    history::record_allocate(id_, ptr, size, on);
    return ptr;
  } catch (const Error& e) {
    if (e.status() == Status::out_of_memory) {
      // PyTorch's "oom" event says how much the device has free.
      uint64_t free_bytes = 0, total = 0;
      try {
        if (device_) device_->memory_info(free_bytes, total);
      } catch (...) {
      }
      history::record(history::Action::out_of_memory, id_, nullptr, size, on, free_bytes);
    }
    throw;
  }
}

void Resource::deallocate_recorded(void* ptr, size_t size, const Stream* stream) {
  history::CallScope scope;
  // Recorded before the free: once freed, another thread may be handed
  // the same address and record it before this call could.
  const history::Forgotten forgotten =
      history::record_free(id_, ptr, size, history::stream_value(stream));
  try {
    deallocate_counted(ptr, size, stream);
  } catch (...) {
    history::restore(id_, ptr, forgotten);  // refused: the allocation is still live
    throw;
  }
}

}  // namespace cumem::core
