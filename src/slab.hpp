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

namespace cumem::core::slab {

// The slot header, just before the object. `tag` is 0 while the slot is free.
// A whole cache line, so that objects start on one (some hold per-thread
// counters aligned to cache lines).
inline constexpr size_t kAlignment = 64;
struct alignas(kAlignment) Header {
  std::atomic<uint32_t> tag{0};
  uint32_t size_class = 0;
};

// Memory for an object of `size` bytes, aligned to kAlignment, with a
// free-tagged header before it. Throws std::bad_alloc when the system has no
// memory.
void* allocate(size_t size);
// Marks the slot free and keeps it for the next object of its size class.
void deallocate(void* object) noexcept;

inline Header* header_of(const void* object) noexcept {
  return reinterpret_cast<Header*>(const_cast<char*>(static_cast<const char*>(object)) -
                                   sizeof(Header));
}

}  // namespace cumem::core::slab
