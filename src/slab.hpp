// Type-stable memory for the objects behind C handles. Every object lives in
// a slot of a slab that is never given back to malloc, behind a header whose
// tag says what the slot holds (or that it is free). So a handle that was
// released, or that names another kind of object, still points at readable
// memory whose tag tells the truth until the slot is reused; capi/ checks it
// on every call instead of reading freed memory.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "this_thread.hpp"  // the thread's cache of free slots

namespace cumem::core::slab {

// The slot header, just before the object. `tag` is 0 while the slot is free.
// A whole cache line, so that objects start on one (some hold per-thread
// counters aligned to cache lines).
inline constexpr size_t kAlignment = 64;
struct alignas(kAlignment) Header {
  std::atomic<uint32_t> tag{0};
  uint32_t size_class = 0;
};

inline Header* header_of(const void* object) noexcept {
  return reinterpret_cast<Header*>(const_cast<char*>(static_cast<const char*>(object)) -
                                   sizeof(Header));
}

// The size class of an object of `size` bytes: slots of 64-byte steps to
// 1 KiB (the header included), then powers of two (slab.cpp).
size_t large_class_of(size_t needed);  // throws std::bad_alloc past the largest
inline size_t class_of(size_t size) {
  const size_t needed = size + sizeof(Header);
  if (needed <= 128) return 0;
  if (needed <= 1024) return (needed + 63) / 64 - 2;
  return large_class_of(needed);
}

// The rare paths (slab.cpp): no free slot in the thread's list (or its
// cache not set up, or the thread exiting); a full list; a thread whose
// cache is not in use.
void* allocate_slow(ThreadCache& mine, size_t index);
void trim(ThreadCache& mine, size_t index) noexcept;
void deallocate_shared(void* object, size_t index) noexcept;
inline constexpr uint32_t kThreadSlots = 64;  // the most a thread keeps of a class

// Memory for an object of `size` bytes, aligned to kAlignment, with a
// free-tagged header before it, from the thread's list of free slots when
// it has one. Throws std::bad_alloc when the system has no memory.
inline void* allocate(ThisThread& t, size_t size) {
  const size_t index = class_of(size);
  ThreadCache& mine = t.slab;
  FreeSlot* s = mine.free[index];  // null until the cache is set up (state 1)
  if (__builtin_expect(!s, 0)) return allocate_slow(mine, index);
  mine.free[index] = s->next;
  --mine.count[index];
  return s;
}
inline void* allocate(size_t size) { return allocate(this_thread(), size); }

// Marks the slot free and keeps it for the next object of its size class.
inline void deallocate(ThisThread& t, void* object) noexcept {
  if (!object) return;
  Header* h = header_of(object);
  h->tag.store(0, std::memory_order_release);
  const size_t index = h->size_class;
  ThreadCache& mine = t.slab;
  if (__builtin_expect(mine.state != 1, 0)) return deallocate_shared(object, index);
  FreeSlot* s = static_cast<FreeSlot*>(object);
  s->next = mine.free[index];
  mine.free[index] = s;
  if (__builtin_expect(++mine.count[index] > kThreadSlots, 0)) trim(mine, index);
}
inline void deallocate(void* object) noexcept { deallocate(this_thread(), object); }

}  // namespace cumem::core::slab
