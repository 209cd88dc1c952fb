#include "resource.hpp"

#include "../error.hpp"

namespace cumem::core {

// Resources hold cache-line-aligned counters; their slab slots must honour it.
static_assert(alignof(Statistics) <= slab::kAlignment, "a resource must fit a slab slot's alignment");

void* Resource::allocate_raw(size_t size, const Stream* stream) {
  if (size == 0) return nullptr;
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

}  // namespace cumem::core
