// Memory of whole cache lines, for the containers a thread's cache writes on
// every call: allocated from the heap by whichever thread first used the
// shard, they must never share a line with another thread's.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

namespace cumem::core::caching {

inline constexpr size_t kCacheLine = 64;

inline void* allocate_cache_lines(size_t bytes) {
  void* p = std::aligned_alloc(kCacheLine, (bytes + kCacheLine - 1) / kCacheLine * kCacheLine);
  if (!p) throw std::bad_alloc();
  return p;
}

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}
  T* allocate(size_t n) { return static_cast<T*>(allocate_cache_lines(n * sizeof(T))); }
  void deallocate(T* p, size_t) noexcept { std::free(p); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const noexcept { return true; }
  template <class U>
  bool operator!=(const CacheLineAllocator<U>&) const noexcept { return false; }
};

}  // namespace cumem::core::caching
